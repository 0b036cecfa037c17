"""`claude plugin eval` suites (Claude Code's own eval runner), read natively.

The fixture plugin (tests/fixtures/cpe-plugin) is shaped like the public Claude plugin repos
that keep such suites: routing indicators (`tool_used: Skill`), a must-not-fire case, file
checks in the prose form (`prompt.md` + `graders/*.md`), the mixed form, a group folder, an
`llm` grader with a `target:` key (which that runner refuses), mocks and results folders. The
oracle is the runner itself: the pinned `claude` loads the suite (its runs end at once on an API
error from a server of the test's) and we must load and refuse exactly the same cases, with the
same graders and weights.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aam_eval_action.importers import claude_plugin_eval as cpe

from conftest import ROOT, aam_eval, installed

FIXTURE = ROOT / "tests/fixtures/cpe-plugin"


@pytest.fixture
def plugin(tmp_path: Path) -> Path:
    return Path(shutil.copytree(FIXTURE, tmp_path / "team-notes"))


def _ours(root: Path) -> tuple[dict[str, cpe.Read], dict[str, str]]:
    """What we load: case folder → case, and case folder → refusal."""
    evals, _ = cpe.eval_dir(root, "")
    loaded, refused = {}, {}
    for folder in cpe.case_dirs(root, evals):
        try:
            loaded[folder] = cpe.read_case(root, folder)
        except Exception as exc:
            refused[folder] = str(exc)
    return loaded, refused


class _Refusing(http.server.BaseHTTPRequestHandler):
    """Answers every request with a 400: the CLI ends its run at once (no model here)."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        body = json.dumps({"type": "error", "error": {"type": "invalid_request_error",
                                                      "message": "refused by the test"}}).encode()
        self.send_response(400)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def refusing() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.cli
def test_the_suite_loads_as_claude_plugin_eval_loads_it(plugin: Path, refusing: str, tmp_path: Path) -> None:
    installed("claude-code")
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env |= {"HOME": str(home), "ANTHROPIC_BASE_URL": refusing, "ANTHROPIC_API_KEY": "sk-ant-test-loading",
            "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    done = subprocess.run(["claude", "plugin", "eval", ".", "--trust-plugin", "--no-publish", "--ablation", "none",
                           "--json", str(tmp_path / "out.json")], cwd=plugin, env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    said = done.stdout + done.stderr
    theirs = json.loads((tmp_path / "out.json").read_text())
    their_refused = {Path(m).relative_to(plugin).parent.as_posix()
                     for m in re.findall(r"^✗ (\S+?): ", said, flags=re.M)}
    loaded, refused = _ours(plugin)
    assert set(refused) == their_refused == {"evals/refused-llm-target"}, said
    assert {c["dir"] for c in theirs["cases"]} == set(loaded)
    for case in theirs["cases"]:
        ours = loaded[case["dir"]]
        assert (ours.imported.case.name, ours.source, ours.runs) == (case["name"], case["source"], case["runsPerCase"])
        assert [(g["name"], g["type"], g.get("weight", 1)) for g in ours.graders] == [
            (g["name"], g["type"], g["weight"]) for g in case["graders"]], case["dir"]
        if case.get("timeoutSeconds") != 300:  # the runner's default, which ours leaves to eval-config
            assert ours.imported.case.timeout == case["timeoutSeconds"]
        assert ours.imported.case.input.prompt == case["promptMarkdown"].strip()


def test_a_refusal_names_the_file_the_line_and_what_to_write(plugin: Path) -> None:
    _, refused = _ours(plugin)
    said = refused["evals/refused-llm-target"]
    assert said.startswith("evals/refused-llm-target/case.yaml:7: invalid case.yaml: graders.0: ")
    assert "Unrecognized key(s) in object: 'target'; remove it: an llm grader takes" in said
    case = plugin / "evals/routing/minutes-from-transcript/case.yaml"
    for old, new, expected in (
        ('schema_version: "1.0"', 'schema_version: "2.0"', 'case.yaml:1: schema_version "2.0" is newer than this'),
        ("runs: 1", "runs: 99", "case.yaml:10: runs: Number must be less than or equal to 50; write 50"),
        ("    pattern: \"IE11\"", "    pattern: \"IE11\"\n    match: sometimes", "match: must be contains | "
         "not_contains | count:N"),
        ("name: mentions-decision", "name: skill-fired", 'duplicate grader name "skill-fired"'),
        ("    weight: 2", "    weight: 0", "weight: Number must be greater than 0"),
    ):
        text = case.read_text()
        case.write_text(text.replace(old, new))
        assert expected in _ours(plugin)[1]["evals/routing/minutes-from-transcript"], expected
        case.write_text(text)
    prose = plugin / "evals/files/changelog-written/prompt.md"
    prose.write_text(prose.read_text().replace("tags: [files]", "tags: [files]\ncontext:\n  add_dirs: [docs]"))
    said = _ours(plugin)[1]["evals/files/changelog-written"]
    assert said.startswith('evals/files/changelog-written/prompt.md:4: prompt.md: unknown frontmatter key "context"')
    assert "context keys go in case.yaml's context:" in said


def test_the_blank_init_template_is_refused(plugin: Path) -> None:
    """`claude plugin eval init --bare NAME` writes this; left as it is, it is not a case."""
    blank = plugin / "evals/blank"
    (blank / "graders").mkdir(parents=True)
    (blank / "prompt.md").write_text("---\nmax_turns: 10\nallowed_tools: [Read, Glob, Grep, Skill]\n---\n\n"
                                     f"{cpe.TEMPLATE_PROMPT}\n")
    (blank / "graders/criteria.md").write_text(f"---\ntype: llm\nweight: 1\n---\n\n{cpe.TEMPLATE_CRITERIA}\n")
    assert "the prompt is still the blank `init` template" in _ours(plugin)[1]["evals/blank"]


def test_each_grader_becomes_our_check_or_is_named_not_honoured(plugin: Path) -> None:
    loaded, _ = _ours(plugin)
    minutes = loaded["evals/routing/minutes-from-transcript"].imported
    expected = minutes.case.expected
    assert (expected.skill_triggered, expected.regex) == (True, ["(?i)IE11"])
    assert minutes.case.judge is not None and minutes.case.judge.votes == 3
    assert "Ana as the parser's owner" in minutes.case.judge.criteria
    assert minutes.case.repeat == 1 and minutes.case.install_all_skills
    assert minutes.skipped["graders.minutes-quality.weight"].startswith("every check here weighs the same")
    assert minutes.skipped["max_turns"] == "the CLI is not given a turn limit"
    quiet = loaded["evals/routing/no-fire-on-weather"].imported.case.expected
    assert (quiet.skill_triggered, quiet.not_regex) == (False, ["Action items"])
    changelog = loaded["evals/files/changelog-written"]
    assert [g["name"] for g in changelog.graders] == ["created", "fixed"]  # notes.md has no frontmatter
    assert changelog.imported.case.expected.files_created == ["CHANGELOG.md"]
    assert changelog.imported.skipped["graders.fixed"] == "a regex on a file with match contains"
    mixed = loaded["evals/mixed-form"]
    assert mixed.source == "mixed"
    assert mixed.imported.case.input.prompt == "Turn this into minutes: Bo owns the migration, due March 3."
    assert [g["name"] for g in mixed.graders] == ["answered", "owner"]  # the yaml graders first
    assert mixed.imported.skipped["graders.answered"] == "a regex on last_message with match count:2"


def test_check_selects_the_suites_cases_and_shows_the_refusal(plugin: Path) -> None:
    result = aam_eval("check", "--package", str(plugin))
    said = result.out + result.err
    for name in ("changelog-written", "minutes-from-transcript", "mixed-form", "no-fire-on-weather"):
        assert re.search(rf"^ok\s+{name}\s+\(evals/.*, claude-plugin-eval\)$", said, flags=re.M), said
    assert "evals/refused-llm-target/case.yaml:7: invalid case.yaml: graders.0: Unrecognized key(s)" in said
    assert "not honoured: graders.fixed: a regex on a file with match contains" in said
