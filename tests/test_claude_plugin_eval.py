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

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aam_eval_action.graders import TEMPLATE_CRITERIA, FileTarget, LlmGrader, ToolOrderGrader, from_dicts
from aam_eval_action.importers import claude_plugin_eval as cpe

from conftest import PINNED_CLAUDE, ROOT, aam_eval, installed
from support.cpe_corpus import claude_plugin_eval as run_claude_plugin_eval
from support.cpe_corpus import refusing_server
from support.repeats import repeated

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
            loaded[folder] = cpe.read_case(root, folder, evals)
        except Exception as exc:
            refused[folder] = str(exc)
    return loaded, refused


@pytest.fixture
def refusing() -> Iterator[str]:
    """A server that answers every request with a 400: the CLI ends its run at once (no model)."""
    with refusing_server() as url:
        yield url


def claude_plugin_eval(cwd: Path, tmp_path: Path, base_url: str, key: str, out: Path,
                       *flags: str) -> subprocess.CompletedProcess[str]:
    """The real `claude plugin eval` on the plugin in `cwd`, as a user runs it in CI (trusted, not
    published), against `base_url`, with a fresh HOME; its --json result goes to `out`."""
    return run_claude_plugin_eval("claude", cwd, tmp_path / f"home-{out.stem}", base_url, key, out, *flags)


def _mixed_shapes(plugin: Path) -> None:
    """The two mixed shapes public suites keep, and a case with no prompt anywhere: a case.yaml
    with no execution beside a prompt.md and graders/; one with execution but no prompt and no
    graders, beside both; one with neither prompt.md nor a prompt."""
    grader = "---\ntype: regex\n---\nminutes\n"
    shapes = {
        "evals/no-execution": {
            "case.yaml": 'schema_version: "1.0"\nname: no-execution\ncontext:\n  scaffold_script: setup.sh\n',
            "setup.sh": "#!/bin/sh\necho staged > staged.txt\n",
            "prompt.md": "---\nruns: 2\ntags: [shape]\n---\nTurn this into minutes: Ana ships the API on Friday.\n",
            "graders/said-minutes.md": grader},
        "evals/no-prompt-no-graders": {
            "case.yaml": 'schema_version: "1.0"\nname: no-prompt-no-graders\nexecution:\n  max_turns: 4\n',
            "prompt.md": "Turn this into minutes: Li reviews the schema by Monday.\n",
            "graders/said-minutes.md": grader},
        "evals/no-prompt-anywhere": {
            "case.yaml": 'schema_version: "1.0"\nname: no-prompt-anywhere\nexecution:\n  max_turns: 4\n'
                         "graders:\n  - {name: x, type: regex, pattern: minutes}\n"},
    }
    for folder, files in shapes.items():
        for rel, text in files.items():
            (plugin / folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (plugin / folder / rel).write_text(text)


@pytest.mark.cli
def test_the_suite_loads_as_claude_plugin_eval_loads_it(plugin: Path, refusing: str, tmp_path: Path) -> None:
    installed("claude-code")
    _mixed_shapes(plugin)
    done = claude_plugin_eval(plugin, tmp_path, refusing, "sk-ant-test-loading", tmp_path / "out.json",
                              "--ablation", "none")
    said = done.stdout + done.stderr
    theirs = json.loads((tmp_path / "out.json").read_text())
    their_refused = {Path(m).relative_to(plugin).parent.as_posix()
                     for m in re.findall(r"^✗ (\S+?): ", said, flags=re.M)}
    loaded, refused = _ours(plugin)
    assert set(refused) == their_refused == {"evals/refused-llm-target", "evals/no-prompt-anywhere"}, said
    assert "execution.prompt is required (a prompt.md body, or execution.prompt in case.yaml)" in said
    assert refused["evals/no-prompt-anywhere"].startswith(
        "evals/no-prompt-anywhere: execution.prompt is required (a prompt.md body, or execution.prompt in case.yaml)")
    assert {c["dir"] for c in theirs["cases"]} == set(loaded)
    assert {"evals/no-execution", "evals/no-prompt-no-graders"} <= set(loaded)
    assert loaded["evals/no-execution"].imported.case.execution.scaffold == "evals/no-execution/setup.sh"
    for case in theirs["cases"]:
        ours = loaded[case["dir"]]
        assert (ours.imported.case.name, ours.source, ours.runs) == (case["name"], case["source"], case["runsPerCase"])
        assert [(g.name, g.type, g.weight) for g in ours.graders] == [
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


def test_the_size_caps_are_that_runners(plugin: Path) -> None:
    case = plugin / "evals/files/changelog-written"
    (case / "graders/huge.md").write_text("---\ntype: regex\n---\n" + "x" * cpe.MAX_BYTES)
    said = _ours(plugin)[1]["evals/files/changelog-written"]
    assert said.startswith(f"evals/files/changelog-written/graders/huge.md:1: huge.md is {cpe.MAX_BYTES + 20} bytes "
                           f"(cap: {cpe.MAX_BYTES})")
    (case / "graders/huge.md").unlink()
    for n in range(cpe.MAX_GRADER_FILES):
        (case / f"graders/g{n:03}.md").write_text("no frontmatter: not a grader\n")
    assert "graders/ has 259 .md entries (cap: 256)" in _ours(plugin)[1]["evals/files/changelog-written"]


def test_the_blank_init_template_is_refused(plugin: Path) -> None:
    """`claude plugin eval init --bare NAME` writes this; left as it is, it is not a case."""
    blank = plugin / "evals/blank"
    (blank / "graders").mkdir(parents=True)
    (blank / "prompt.md").write_text("---\nmax_turns: 10\nallowed_tools: [Read, Glob, Grep, Skill]\n---\n\n"
                                     f"{cpe.TEMPLATE_PROMPT}\n")
    (blank / "graders/criteria.md").write_text(f"---\ntype: llm\nweight: 1\n---\n\n{TEMPLATE_CRITERIA}\n")
    assert "the prompt is still the blank `init` template" in _ours(plugin)[1]["evals/blank"]


def test_a_grader_is_validated_once_into_its_typed_model(plugin: Path) -> None:
    """Each grader is read into the model of its type where the case is read: a field of the
    wrong type is refused there with the file, the line and the field; what loads is typed."""
    case = plugin / "evals/typed"
    case.mkdir()
    (case / "case.yaml").write_text('schema_version: "1.0"\nname: typed\nexecution:\n  prompt: Hi\n'
                                    "graders:\n  - {name: many, type: tool_used, tool: Read, min: lots}\n")
    refused = _ours(plugin)[1]["evals/typed"]
    assert refused.startswith("evals/typed/case.yaml:6: invalid case.yaml: graders.0.min: Input should be a "
                              "valid integer"), refused
    (case / "case.yaml").write_text('schema_version: "1.0"\nname: typed\nexecution:\n  prompt: Hi\n'
                                    "graders:\n  - {name: order, type: tool_order, before: Write, after: Read}\n"
                                    "  - {name: file, type: llm, criteria: Good., focus: {source: file, path: a.md}}\n")
    order, file = _ours(plugin)[0]["evals/typed"].graders
    assert isinstance(order, ToolOrderGrader) and (order.before.tool, order.after.tool) == ("Write", "Read")
    assert isinstance(file, LlmGrader) and isinstance(file.focus, FileTarget) and file.focus.path == "a.md"
    assert order.config() == {"before": {"tool": "Write"}, "after": {"tool": "Read"}}  # as that runner keeps it


def test_the_graders_are_kept_and_what_is_not_honoured_is_named(plugin: Path) -> None:
    """Graded as that runner grades (by score, each grader with its weight): the graders are kept
    as merged; what this run does not pass to the CLI is named."""
    loaded, _ = _ours(plugin)
    minutes = loaded["evals/routing/minutes-from-transcript"]
    assert [(g.name, g.type, g.weight) for g in minutes.imported.graders] == [
        ("skill-fired", "tool_used", 1), ("mentions-decision", "regex", 1), ("minutes-quality", "llm", 2)]
    assert minutes.imported.case.repeat == 1 and minutes.imported.case.install_all_skills
    assert minutes.imported.case.judge is None and minutes.imported.case.expected.regex == []
    assert minutes.imported.skipped == {}
    execution = minutes.imported.case.execution
    assert execution is not None and (execution.max_turns, execution.allowed_tools) == (8, ["Skill", "Read", "Write"])
    changelog = loaded["evals/files/changelog-written"]
    assert [g.name for g in changelog.graders] == ["created", "fixed"]  # notes.md has no frontmatter
    assert changelog.graders[1].pattern == "Fixed"  # the body, as the pattern
    mixed = loaded["evals/mixed-form"]
    assert mixed.source == "mixed"
    assert mixed.imported.case.input.prompt == "Turn this into minutes: Bo owns the migration, due March 3."
    assert [g.name for g in mixed.graders] == ["answered", "owner"]  # the yaml graders first
    assert mixed.graders[1].criteria == "The minutes name Bo as the owner of the migration."
    assert mixed.imported.skipped == {}
    assert mixed.imported.case.execution is not None
    assert mixed.imported.case.execution.disallowed_tools == ["WebFetch", "WebSearch"]  # joined


def test_a_run_is_scored_as_that_runner_scores_it() -> None:
    """The pieces, on a session of ours: weights, with-only graders in a two-arm run (and all
    scored when every grader is with-only), a glob, a count, tool order, input_match, the
    judge's words and its three votes, the focus cut to its head and tail."""
    from aam_eval_action.pipeline import plugin_eval as pe
    from aam_eval_action.session import FileChange, Session, ToolCall

    session = Session(engine="claude-code", model_provider="anthropic", output="Done: minutes written. minutes!",
                      tool_calls=[ToolCall(name="Skill", input={"skill": "team-notes:meeting-notes"}),
                                  ToolCall(name="Read", input={"file_path": "a.txt"}),
                                  ToolCall(name="Write", input={"file_path": "out/minutes.md"})],
                      files=[FileChange(path="out/minutes.md", status="created", text="x"),
                             FileChange(path="notes.txt", status="modified", text="y")])
    asked: list[str] = []

    def ask(prompt: str) -> str:
        asked.append(prompt)
        return ["PASS", "Verdict: FAIL", "pass."][len(asked) % 3 - 1]

    graders = [
        {"name": "fired", "type": "tool_used", "tool": "Skill", "input_match": "meeting-notes", "weight": 1},
        {"name": "glob", "type": "file_exists", "path": "out/**/*.md", "weight": 2},
        {"name": "not-modified", "type": "file_exists", "path": "notes.txt", "exists": False, "weight": 1},
        {"name": "twice", "type": "regex", "pattern": "MINUTES", "flags": "i", "match": "count:2", "weight": 1},
        {"name": "order", "type": "tool_order", "before": "Write", "after": {"tool": "Read"}, "weight": 3},
        {"name": "judged", "type": "llm", "criteria": "Minutes were written.", "weight": 1},
    ]
    run = pe.RunInputs(session, {"out/minutes.md": "x"}, ask)
    results = pe.grade_run(from_dicts(graders), run)
    assert [(r.name, r.passed) for r in results] == [
        ("fired", True), ("glob", True), ("not-modified", True), ("twice", True), ("order", False), ("judged", True)]
    assert results[4].detail == "Write@2 does NOT precede Read@1"
    assert results[5].votes == (True, False, True) and results[5].detail == "judge votes: PASS FAIL PASS"
    assert pe.run_score(results) == 6 / 9
    assert asked[0] == ("You are grading the output of a coding agent against a criterion.\n\nCriterion:\n"
                        "Minutes were written.\n\n\nAgent output (last_message):\nDone: minutes written. "
                        "minutes!\n\n\nRespond with exactly one word: PASS or FAIL.")
    # Two arms: `tool_used: Skill` with no arm, and `arm: with-only`, are the plugin-fired
    # indicator: shown unscored with the plugin, not run without it.
    with_only = from_dicts([graders[0], {**graders[3], "arm": "with-only"}, graders[1]])
    assert [(r.name, r.scored, r.with_only) for r in pe.grade_run(with_only, run, "with")] == [
        ("fired", False, True), ("twice", False, True), ("glob", True, False)]
    assert [r.name for r in pe.grade_run(with_only, run, "without")] == ["glob"]
    assert [r.scored for r in pe.grade_run(with_only[:2], run, "with")] == [True, True]  # every one with-only
    assert [r.scored for r in pe.grade_run(with_only, run)] == [True, True, True]  # one arm: all scored
    assert pe.case_score([1.0, 0.5, 1.0]) == (2.5 / 3, 2 / 3)
    # On another engine, a Claude Code tool with no counterpart there is reported, not failed.
    other = pe.RunInputs(session, {}, ask, "codex")
    todo = {"name": "planned", "type": "tool_used", "tool": "TodoWrite", "weight": 1}
    [shown] = pe.grade_run(from_dicts([todo]), other)
    assert (shown.passed, shown.scored) == (False, False)
    assert shown.detail == "not graded on codex: it has no tool like Claude Code's TodoWrite"
    long = "a" * 80_000 + "b" * 30_000 + "c" * 20_000
    assert pe.elide(long) == "a" * 80_000 + "\n[…30000 chars elided…]\n" + "c" * 20_000


def test_the_trace_and_a_baseline_are_graded_as_there(tmp_path: Path) -> None:
    """The `trace` target is every event the CLI printed, one compact JSON line each; a judge
    sees it cut to its first and last 12 events past 24, key-sorted, without the ids and timings
    the CLI stamps afresh (a recorded verdict must replay); a `baseline` grader asks three votes on the
    run against a trajectory beside the case, in that runner's words."""
    from aam_eval_action.pipeline import plugin_eval as pe
    from aam_eval_action.session import Session

    events = [{"type": "system", "session_id": "s-1", "n": 0}] + [{"type": "assistant", "n": i} for i in range(1, 30)]
    trace = [json.dumps(e, separators=(",", ":")) for e in events]  # as a session keeps them: the lines
    session = Session(engine="claude-code", model_provider="anthropic", output="ok", trace=trace)
    asked: list[str] = []

    def ask(prompt: str) -> str:
        asked.append(prompt)
        return "PASS"

    (tmp_path / "case").mkdir()
    (tmp_path / "case/before.jsonl").write_text('{"type":"result","result":"ok"}\n')
    run = pe.RunInputs(session, {}, ask, case_dir=tmp_path / "case")
    graders = [{"name": "system-first", "type": "regex", "target": "trace", "pattern": '^\\{"type":"system","session_id"',
                "weight": 1},
               {"name": "as-before", "type": "baseline", "baseline_file": "before.jsonl", "criteria": "Says ok.",
                "weight": 1},
               {"name": "missing", "type": "baseline", "baseline_file": "gone.jsonl", "criteria": "x", "weight": 1}]
    results = pe.grade_run(from_dicts(graders), run)
    assert [(r.name, r.passed, r.detail) for r in results] == [
        ("system-first", True, 'matched ^\\{"type":"system","session_id"'),
        ("as-before", True, "judge votes: PASS PASS PASS"), ("missing", False, "baseline file gone.jsonl does not exist")]
    shown = pe.trajectory(events)
    assert shown.splitlines()[0] == '{"n":0,"type":"system"}' and "[…6 messages elided…]" in shown
    assert len(shown.splitlines()) == 25
    assert asked[0] == pe.baseline_prompt("Says ok.", '{"result":"ok","type":"result"}', shown)
    assert asked[0].startswith("You are comparing a NEW coding-agent trajectory against a BASELINE.\n\nCriterion:\n"
                               "Says ok.\n\n\nBASELINE trajectory:\n")
    # A session recorded without its trace, and another engine's events: said, not failed silently.
    untraced = pe.RunInputs(Session(engine="claude-code", model_provider="anthropic"), {}, ask)
    assert pe.grade_run(from_dicts(graders[:1]), untraced)[0].detail.startswith("the run's trace was not kept")
    [other] = pe.grade_run(from_dicts(graders[:1]), pe.RunInputs(session, {}, ask, "gemini-cli"))
    assert (other.scored, other.detail.startswith("not graded on gemini-cli")) == (False, True)


def test_check_selects_the_suites_cases_and_shows_the_refusal(plugin: Path) -> None:
    result = aam_eval("check", "--package", str(plugin))
    said = result.out + result.err
    for name in ("changelog-written", "minutes-from-transcript", "mixed-form", "no-fire-on-weather"):
        assert re.search(rf"^ok\s+{name}\s+\(evals/.*, claude-plugin-eval\)$", said, flags=re.M), said
    assert "evals/refused-llm-target/case.yaml:7: invalid case.yaml: graders.0: Unrecognized key(s)" in said
    assert "not honoured:" not in said
    rules = f"claude plugin eval suite read by the rules of Claude Code {cpe.RULES_OF}'s runner"
    assert rules in said and cpe.RULES_OF == PINNED_CLAUDE  # the rules of the release the tests pin
    assert rules in aam_eval("doctor", "--package", str(plugin)).out


SCENARIOS = [
    {"match": "transcript of today's sync", "needs-skill": "meeting-notes", "agent": [
        {"skill": "team-notes:meeting-notes"},
        {"text": "Minutes\nDecisions: drop IE11.\nAction items: Ana, the parser, due Friday."}],
     "without-skill": [{"text": "Here is a summary of the sync."}]},
    {"match": "Ana as the parser's owner", "judge": {"result": "FAIL", "reason": "scripted"}},
    {"match": "describe drizzle", "agent": [{"text": "Misty."}]},
    {"match": "Release notes please", "needs-skill": "release-notes", "agent": [
        {"skill": "team-notes:release-notes"},
        {"write": {"path": "CHANGELOG.md", "content": "## Added\n- CSV export\n\n## Fixed\n- Crash on empty input\n"}},
        {"text": "Wrote CHANGELOG.md."}],
     "without-skill": [{"write": {"path": "CHANGELOG.md", "content": "- CSV export\n- Crash fix\n"}},
                       {"text": "Wrote CHANGELOG.md."}]},
    {"match": "Bo owns the migration", "agent": [
        {"text": "Here are the minutes: Bo owns the migration, due March 3. These minutes are final."}]},
    {"match": "name Bo as the owner", "judge": {"result": "PASS", "reason": "scripted"}},
    {"match": "Summarise the staged meeting notes", "agent": [{"text": "In one line: ship on Friday."}]},
    {"match": "File a bug in the tracker", "agent": [
        {"mcp": {"server": "tracker", "tool": "create_issue",
                 "input": {"title": "Export crashes on empty input", "labels": ["bug"]}}},
        {"text": "Filed it as issue #42."}]},
    {"match": "Book a room for the sprint retro", "agent": [
        {"mcp": {"server": "calendar", "tool": "book_room", "input": {"room": "Pine"}}},
        {"text": "Booked Pine."}]},
    {"match": "already an issue about the CSV export", "agent": [
        {"mcp": {"server": "tracker", "tool": "search_issues", "input": {"query": "CSV export"}}},
        {"text": "Yes: #7, CSV export drops the header row."}]},
    {"mock-server": "tracker", "answers": [  # the model playing the tracker (search-first's agent mock)
        {"when": "search_issues", "say": '[{"id": 7, "title": "CSV export drops the header row", "label": "bug"}]'}]},
    {"match": "drizzle question in a word or two", "judge": {"result": "PASS", "reason": "scripted"}},
]
"""The suite's sessions and judge votes, with the plugin and without it. With both arms,
`tool_used: Skill` is the with-only indicator: minutes-from-transcript scores 1/3 with the
plugin (its weight-2 llm grader fails) and 0 without; changelog-written 1 and 1/2 (no Fixed
heading); file-a-bug 1 with the plugin (its mock_calls graders with-only: every mock it has
shadows the plugin's tracker) and 0 without (no tracker to call); guarded-call 0 in both arms
(the standalone calendar mock's `expect:` guard aborts the run); search-first 1 and 0 (a model
plays the tracker: its answer recorded, replayed offline); the others 1 and 1."""
SCORES = {"minutes-from-transcript": (1 / 3, 0.0), "no-fire-on-weather": (1.0, 1.0),
          "changelog-written": (1.0, 0.5), "mixed-form": (1.0, 1.0), "staged-notes": (1.0, 1.0),
          "file-a-bug": (1.0, 0.0), "guarded-call": (0.0, 0.0), "search-first": (1.0, 0.0)}
ONE_ARM = {"minutes-from-transcript": 0.5, "no-fire-on-weather": 1.0, "changelog-written": 1.0, "mixed-form": 1.0,
           "staged-notes": 1.0, "file-a-bug": 1.0, "guarded-call": 0.0, "search-first": 1.0}
"""With one arm every grader is scored: `tool_used: Skill` passes, the llm grader (weight 2) fails."""


@pytest.mark.cli
def test_the_same_scores_as_claude_plugin_eval(plugin: Path, tmp_path: Path) -> None:
    """The oracle: the real `claude plugin eval` and `aam-eval run` through the same claude CLI,
    against the same scripted model server, one run per case, with and without the plugin (both
    tools' default). Every case's score, score without the plugin, delta and pass rate, every
    grader's verdict in each arm, and the mean delta agree; re-executed (the real CLI against
    the recording, no key) and snapshot-replayed (no CLI, no model), the same numbers."""
    from aam_eval_action.testing.model_server import (
        ModelServer,
        is_mock_agent,
        is_plugin_eval_judge,
        listed_skills,
    )

    installed("claude-code")
    key = "sk-ant-test-plugin-eval"
    shutil.rmtree(plugin / "evals/refused-llm-target")
    _mixed_shapes(plugin)  # the two mixed shapes public suites keep, scored as there
    shutil.rmtree(plugin / "evals/no-prompt-anywhere")
    (plugin / "evals/no-execution/setup.sh").chmod(0o755)
    expected = {**SCORES, "no-execution": (1.0, 1.0), "no-prompt-no-graders": (0.0, 0.0)}
    scenarios = [*SCENARIOS,
                 {"match": "Ana ships the API on Friday", "agent": [{"text": "The minutes: Ana ships on Friday."}]},
                 {"match": "Li reviews the schema by Monday", "agent": [{"text": "Noted."}]}]
    with ModelServer(scenarios, api_key=key) as server:
        theirs_dir = Path(shutil.copytree(plugin, tmp_path / "theirs"))
        done = claude_plugin_eval(theirs_dir, tmp_path, server.url, key, tmp_path / "theirs.json",
                                  "--allow-tools", "Write", "--scaffold")
        their_report = json.loads((tmp_path / "theirs.json").read_text())
        theirs = {c["name"]: c for c in their_report["cases"]}
        assert {n: (c["aggregates"]["score"], c["aggregates"]["scoreWithout"]) for n, c in theirs.items()} == expected, (
            done.stdout + done.stderr)
        ours_env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
        ours_env |= {"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": key}
        theirs_asked = len(server.requests)
        ran = subprocess.run([sys.executable, "-m", "aam_eval_action", "run", "--package", str(plugin), "--allow-tools", "Write", "--record",
                              "--engine", "claude-code", "--scaffold", "--no-self-check",
                              "-o", str(tmp_path / "ours.json")],
                             env=ours_env, capture_output=True, text=True, timeout=600, check=False)
        # Loaded as Claude Code loads a plugin (`--plugin-dir`), by both: the same skill names.
        def listed(requests: list[Any]) -> set[str]:
            return set().union(*(listed_skills(r.body) for r in requests if r.body.get("tools")))

        assert "team-notes:meeting-notes" in listed(server.requests[:theirs_asked])
        assert "team-notes:meeting-notes" in listed(server.requests[theirs_asked:])
        # The judge: that runner's words, three votes, and (no --judge, no eval-config judge)
        # the small model, as its --judge-model defaults to haiku.
        votes = [r.body for r in server.requests[theirs_asked:] if is_plugin_eval_judge(r.body)]
        # 2 llm graders and a baseline grader, 2 arms, 3 votes each
        assert len(votes) == 3 * 2 * 3 and {v["model"] for v in votes} == {"claude-haiku-4-5"}
        # The agent mock: each tool asked a model to play the tracker once (the arm with the plugin).
        assert [sum(is_mock_agent(r.body) for r in asked) for asked in (
            server.requests[:theirs_asked], server.requests[theirs_asked:])] == [1, 1]
    our_report = json.loads((tmp_path / "ours.json").read_text())
    ours = {c["name"]: c for c in our_report["cases"]}
    assert set(ours) == set(theirs), ran.stdout + ran.stderr
    for name, case in theirs.items():
        mine, agg = ours[name], case["aggregates"]
        assert [round(mine[k], 6) for k in ("score", "pass_rate", "score_without", "pass_rate_without", "delta")] == [
            round(agg[k], 6) for k in ("score", "passRate", "scoreWithout", "passRateWithout", "delta")], (
            name, mine.get("graders"), ran.stdout[-3000:])
        their_graders = {g["name"]: (g["passed"], g["scored"], g["weight"]) for g in case["arms"]["with"][0]["graders"]}
        assert {g["name"]: (g["passed"], g["scored"], g["weight"]) for g in mine["graders"]} == their_graders, name
        assert mine["verdict"] == ("PASS" if agg["score"] >= 1 else "FAIL")
    assert round(our_report["summary"]["mean_delta"], 6) == round(their_report["aggregates"]["meanDelta"], 6)
    assert round(our_report["summary"]["score"], 6) == round(their_report["aggregates"]["overallScore"], 6)
    # Our report as that runner's aggregate-result.json: the same cases, graders, arms and numbers.
    exported = aam_eval("export", "--format", "claude-plugin-eval", "--package", str(plugin), "--report",
                        str(tmp_path / "ours.json"), "-o", str(tmp_path / "aggregate-result.json"))
    assert exported.code == 0, exported.err
    again = json.loads((tmp_path / "aggregate-result.json").read_text())

    def numbers(doc: dict[str, Any]) -> dict[str, Any]:
        return {
            "aggregates": {k: round(v, 6) for k, v in doc["aggregates"].items() if isinstance(v, (int, float))},
            "threshold": doc["suite"]["threshold"], "ablation": doc["suite"]["ablation"],
            "cases": {c["name"]: (c["dir"], c["source"], c["runsPerCase"], c["timeoutSeconds"],
                                  [(g["name"], g["type"], g["weight"], g["config"]) for g in c["graders"]],
                                  {k: round(v, 6) for k, v in c["aggregates"].items()},
                                  {arm: [(r["score"], r["passed"], [(g["name"], g["passed"], g["scored"], g["withOnly"],
                                                                     g.get("judgeVotes")) for g in r["graders"]])
                                         for r in runs] for arm, runs in c["arms"].items() if runs})
                      for c in doc["cases"]},
        }

    assert numbers(again) == numbers(their_report)
    # Re-executed: the real CLI against the recorded traffic, the same numbers.
    rerun = subprocess.run([sys.executable, "-m", "aam_eval_action", "run", "--package", str(plugin), "--allow-tools", "Write", "--replay",
                            "--rerun", "--scaffold", "-o", str(tmp_path / "rerun.json")],
                           env={k: v for k, v in ours_env.items() if k != "ANTHROPIC_API_KEY"},
                           capture_output=True, text=True, timeout=600, check=False)
    assert (tmp_path / "rerun.json").is_file(), rerun.stdout + rerun.stderr
    again = {c["name"]: c for c in json.loads((tmp_path / "rerun.json").read_text())["cases"]}
    assert {n: (round(c["score"], 6), round(c["score_without"], 6), c["replay_kind"]) for n, c in again.items()} == {
        n: (round(w, 6), round(wo, 6), "rerun") for n, (w, wo) in expected.items()}, rerun.stdout[-3000:]
    replayed = subprocess.run([sys.executable, "-m", "aam_eval_action", "run", "--package", str(plugin), "--allow-tools", "Write", "--replay",
                               "--no-rerun", "--scaffold", "-o", str(tmp_path / "replayed.json")],
                              env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}, capture_output=True, text=True,
                              timeout=300, check=False)
    assert (tmp_path / "replayed.json").is_file(), replayed.stdout + replayed.stderr
    again = {c["name"]: c for c in json.loads((tmp_path / "replayed.json").read_text())["cases"]}
    assert {n: (round(c["score"], 6), round(c["score_without"], 6), c["replay_kind"]) for n, c in again.items()} == {
        n: (round(w, 6), round(wo, 6), "snapshot") for n, (w, wo) in expected.items()}, replayed.stdout + replayed.stderr


@pytest.mark.cli
def test_one_run_each_with_no_baseline_arm_gives_the_same_scores(plugin: Path, tmp_path: Path) -> None:
    """The suite as a maintainer runs it by hand (one arm, `--ablation none` and `--runs 1` in
    both tools): the same cases loaded, the same refused, every case's score and every grader's
    verdict equal, every grader scored (with-only indicators too). `--runs 1` wins over a case's
    own `runs: 3` in both: the same number of agent sessions."""
    from aam_eval_action.testing.model_requests import is_agent_turn, prompt_text, turn_index
    from aam_eval_action.testing.model_server import ModelServer

    installed("claude-code")
    key = "sk-ant-test-plugin-eval-one-arm"
    case = plugin / "evals/routing/no-fire-on-weather/case.yaml"
    case.write_text(case.read_text().replace("runs: 1", "runs: 3"))
    with ModelServer(SCENARIOS, api_key=key) as server:
        theirs_dir = Path(shutil.copytree(plugin, tmp_path / "theirs"))
        done = claude_plugin_eval(theirs_dir, tmp_path, server.url, key, tmp_path / "theirs.json",
                                  "--allow-tools", "Write", "--scaffold", "--ablation", "none", "--runs", "1")
        theirs_asked = len(server.requests)
        env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
        env |= {"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": key}
        ran = subprocess.run([sys.executable, "-m", "aam_eval_action", "run", "--package", str(plugin), "--allow-tools", "Write", "--record",
                              "--ablation", "none", "--runs", "1", "--scaffold", "--no-self-check",
                              "-o", str(tmp_path / "ours.json")],
                             env=env, capture_output=True, text=True, timeout=600, check=False)

        def sessions(asked: list[Any]) -> list[str]:
            return sorted(prompt_text(r.body).strip() for r in asked if is_agent_turn(r.body) and turn_index(r.body) == 0)

        ours_sessions = sessions(server.requests[theirs_asked:])
        assert ours_sessions == sessions(server.requests[:theirs_asked])
        assert sum("drizzle" in p for p in ours_sessions) == 1  # not the case's runs: 3
    theirs = {c["name"]: c for c in json.loads((tmp_path / "theirs.json").read_text())["cases"]}
    assert "✗ evals/refused-llm-target/case.yaml" in (done.stdout + done.stderr).replace(str(theirs_dir) + "/", "")
    ours = {c["name"]: c for c in json.loads((tmp_path / "ours.json").read_text())["cases"] if "score" in c}
    assert {n: c["aggregates"]["score"] for n, c in theirs.items()} == {n: c["score"] for n, c in ours.items()}
    assert {n: c["score"] for n, c in ours.items()} == ONE_ARM, ran.stdout[-3000:]
    for name, case in theirs.items():
        verdicts = {g["name"]: (g["passed"], g["scored"]) for r in case["arms"]["with"] for g in r["graders"]}
        assert {g["name"]: (g["passed"], g["scored"]) for g in ours[name].get("graders") or []} == verdicts, name


@pytest.mark.cli
def test_a_pull_request_that_edits_the_skill_shows_the_score_and_delta_changes(plugin: Path, tmp_path: Path) -> None:
    """The base recorded; a pull request edits release-notes, and with it the notes lose their
    Fixed heading: the comment's headline gives the score and the mean delta base → head, and a
    table the one case whose score and delta moved (with its score without the plugin); the
    HTML report shows its graders with their weights."""
    from aam_eval_action.testing.model_server import ModelServer

    from support.browser import open_case, report_page

    installed("claude-code")
    key = "sk-ant-test-plugin-eval-pr"
    shutil.rmtree(plugin / "evals/refused-llm-target")
    shutil.rmtree(plugin / "evals/files/staged-notes")
    shutil.rmtree(plugin / "evals/issues")
    head_scenarios = [dict(s) for s in SCENARIOS]
    head_scenarios[3] = {**SCENARIOS[3], "agent": [
        {"skill": "team-notes:release-notes"}, {"write": {"path": "CHANGELOG.md", "content": "- CSV export\n"}},
        {"text": "Wrote CHANGELOG.md."}]}

    def run(scenarios: list[dict[str, Any]], out: str) -> subprocess.CompletedProcess[str]:
        with ModelServer(scenarios, api_key=key) as server:
            env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
            env |= {"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": key}
            return subprocess.run([sys.executable, "-m", "aam_eval_action", "run", "--package", str(plugin), "--allow-tools", "Write",
                                   "--mode", "auto", "--no-self-check", "-o", str(tmp_path / out)], env=env,
                                  capture_output=True, text=True, timeout=600, check=False)

    prose = plugin / "evals/files/changelog-written/prompt.md"  # named as people name cases
    prose.write_text(prose.read_text().replace("name: changelog-written", "name: Changelog written"))
    refused = plugin / "evals/no-prompt/case.yaml"  # refused: listed under its folder, with why
    refused.parent.mkdir()
    refused.write_text('schema_version: "1.0"\nname: no-prompt\ngraders:\n  - {name: x, type: regex, pattern: y}\n')
    base = run(SCENARIOS, "base.json")
    assert (tmp_path / "base.json").is_file(), base.stdout + base.stderr
    skill = plugin / "skills/release-notes/SKILL.md"
    skill.write_text(skill.read_text().replace("Group the titles", "List the titles, then group them"))
    head = run(head_scenarios, "head.json")
    # (0.50 + 1/3 + 1 + 1) / 4, and the deltas (0 + 1/3 + 0 + 0) / 4
    cases = json.loads((tmp_path / "head.json").read_text())["cases"]
    rate = sum(c["pass_rate"] for c in cases if c.get("score") is not None) / 4 * 100
    first = f"claude plugin eval score 0.71, pass rate {rate:.1f}%, mean Δ +0.08 (with the plugin − without)"
    assert re.search(rf"^{re.escape(first)}\n\d+/\d+ passed", head.stdout, flags=re.M), head.stdout
    comment = aam_eval("diff", str(tmp_path / "base.json"), str(tmp_path / "head.json"), "--format", "markdown").out
    first = "**claude plugin eval score 0.83 → 0.71 (-0.12) · mean Δ (with the plugin − without) +0.21 → +0.08**"
    assert comment.index(first) < comment.index("**Pass rate "), comment
    table = comment.split("| case | score | without the plugin | Δ |", 1)[1].split("\n\n", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(rows) == 1 and rows[0].startswith("| Changelog written<br>"), comment
    assert rows[0].endswith("| 1.00 → 0.50 | 0.50 | +0.50 → +0.00 |"), rows[0]
    assert re.search(r"^FAIL  Changelog written  ", head.stdout, flags=re.M), head.stdout
    [case] = [c for c in json.loads((tmp_path / "head.json").read_text())["cases"] if c.get("title")]
    assert (case["name"], case["title"]) == ("changelog-written", "Changelog written")
    exported = aam_eval("export", "--format", "claude-plugin-eval", "--package", str(plugin), "--report",
                        str(tmp_path / "head.json"), "-o", str(tmp_path / "aggregate-result.json"))
    assert exported.code == 0, exported.err
    assert "Changelog written" in [c["name"] for c in json.loads((tmp_path / "aggregate-result.json").read_text())["cases"]]
    page = tmp_path / "head.html"
    assert aam_eval("view", str(tmp_path / "head.json"), "-o", str(page)).code == 0
    with report_page(page) as shown:
        no_prompt = shown.js("[...document.querySelectorAll('#case-rows tr')].map(tr => [tr.querySelector("
                             "'td.name').innerText, tr.querySelector('td.failed').innerText]).find(r => r[0] === "
                             "'no-prompt')")
        headline = shown.js("document.getElementById('plugin-eval-headline').innerText")
        text = open_case(shown, "Changelog written")
        graders = shown.js("[...document.querySelectorAll('#graders tbody tr')].map(tr => tr.innerText.split('\\t'))")
    assert no_prompt is not None and "execution.prompt is required" in no_prompt[1], no_prompt
    assert headline.startswith(f"score 0.71\nclaude plugin eval · pass rate {rate:.1f}% · mean Δ +0.08"), headline
    assert "claude plugin eval score 0.50 · pass rate 0.0% · without the plugin 0.50 · Δ 0.00" in text
    assert [(g[0], g[2], g[3].strip()) for g in graders] == [("created", "1", "PASS"), ("fixed", "1", "FAIL")]


@pytest.mark.cli
@pytest.mark.parametrize("engine", repeated(["codex"], ["copilot", "gemini-cli"]))
def test_the_suite_runs_on_the_other_engines_with_the_names_mapped(engine: str, plugin: Path, tmp_path: Path) -> None:
    """The same suite on Codex (here; Copilot CLI and Gemini CLI in bench/bench_repeats.py), recorded and then snapshot-replayed
    with no CLI: a grader's Claude Code tool name is matched by what it does on that engine
    (`Skill` is reading a SKILL.md on Codex, `skill` on Copilot, `activate_skill` on Gemini CLI),
    so each case scores as it does on Claude Code (one arm, as `--ablation none`)."""
    from aam_eval_action.testing.model_server import ModelServer

    installed(engine)
    keys = {"ANTHROPIC_API_KEY": "sk-ant-test-plugin-eval", "OPENAI_API_KEY": "sk-test-plugin-eval",
            "GEMINI_API_KEY": "gemini-test-plugin-eval"}
    shutil.rmtree(plugin / "evals/refused-llm-target")
    flags = {"codex": ["--model", "gpt-5.5", "--judge", "claude-sonnet-4-6"],
             "gemini-cli": ["--judge", "claude-sonnet-4-6"]}.get(engine, [])
    with ModelServer(SCENARIOS, api_key=tuple(keys.values())) as server:
        env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
        env |= {"ANTHROPIC_BASE_URL": server.url, "OPENAI_BASE_URL": server.url + "/v1",
                "GOOGLE_GEMINI_BASE_URL": server.url, **keys}
        ran = subprocess.run([sys.executable, "-m", "aam_eval_action", "run", "--package", str(plugin), "--allow-tools", "Write", "--record",
                              "--engine", engine, *flags, "--ablation", "none", "--scaffold", "--no-self-check",
                              "-o", str(tmp_path / "ours.json")],
                             env=env, capture_output=True, text=True, timeout=900, check=False)
    assert (tmp_path / "ours.json").is_file(), ran.stdout + ran.stderr
    cases = json.loads((tmp_path / "ours.json").read_text())["cases"]
    ours = {c["name"]: c["score"] for c in cases}
    assert ours == ONE_ARM, ran.stdout[-4000:]
    minutes = next(c for c in cases if c["name"] == "minutes-from-transcript")
    not_passed = {"codex": ["execution.max_turns", "execution.allowed_tools"],
                  "copilot": ["execution.max_turns"], "gemini-cli": []}[engine]  # the others, by its names
    assert minutes.get("skipped_checks", {}) == {key: f"not passed to {engine}: Claude Code's own option"
                                         for key in not_passed}
    replayed = subprocess.run([sys.executable, "-m", "aam_eval_action", "run", "--package", str(plugin), "--allow-tools", "Write", "--replay",
                               "--no-rerun", "--engine", engine, *flags, "--ablation", "none", "--scaffold",
                               "-o", str(tmp_path / "replayed.json")],
                              env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}, capture_output=True, text=True,
                              timeout=300, check=False)
    assert (tmp_path / "replayed.json").is_file(), replayed.stdout + replayed.stderr
    again = {c["name"]: c["score"] for c in json.loads((tmp_path / "replayed.json").read_text())["cases"]}
    assert again == ours


def test_check_warns_of_a_grader_that_can_never_pass(plugin: Path) -> None:
    """As that runner warns before it runs: `max: 0` without `min: 0` (min is 1 unless given), a
    tool the case does not grant or withholds, a file check where no granted tool can write."""
    doomed = plugin / "evals/doomed"
    doomed.mkdir()
    (doomed / "case.yaml").write_text(
        'schema_version: "1.0"\nname: doomed\nexecution:\n  prompt: "Minutes, please."\n'
        "  allowed_tools: [Skill, Read]\n  disallowed_tools: [Bash]\nruns: 1\ngraders:\n"
        "  - {name: never-fires, type: tool_used, tool: Skill, max: 0}\n"
        "  - {name: greps, type: tool_used, tool: Grep}\n"
        "  - {name: shells, type: tool_order, before: Read, after: Bash}\n"
        "  - {name: wrote, type: file_exists, path: minutes.md}\n"
        "  - {name: quiet, type: tool_used, tool: Skill, min: 0, max: 0}\n")
    said = aam_eval("check", "--package", str(plugin))
    text = said.out + said.err
    assert 'evals/doomed/case.yaml:9: grader "never-fires" can never pass: min is 1 unless given, and max is 0; ' \
           "add min: 0" in text
    assert "evals/doomed/case.yaml:10: grader \"greps\" can never pass: it needs a Grep call, but the case's " \
           "allowed_tools does not grant Grep; add it to allowed_tools" in text
    assert "evals/doomed/case.yaml:11: grader \"shells\" can never pass: it needs a Bash call, but the case's " \
           "disallowed_tools lists Bash" in text
    assert 'evals/doomed/case.yaml:12: grader "wrote" can never pass: it checks a file the run creates' in text
    assert '"quiet"' not in text and "4 warning(s)" in text


def test_the_execution_fields_reach_claude_code_as_that_runner_passes_them(plugin: Path, tmp_path: Path) -> None:
    """`model`, `max_turns`, `allowed_tools` (what is not listed is withheld: `dontAsk`),
    `disallowed_tools` and `append_system_prompt` become the claude flags that runner passes;
    `env` sets EVAL_* variables only, and any other key is refused with the case's name."""
    from aam_eval_action.engines.base import AgentRun
    from aam_eval_action.engines.claude_code import ClaudeCode
    from aam_eval_action.errors import AamEvalError
    from aam_eval_action.pipeline.live import case_env

    case = plugin / "evals/routing/minutes-from-transcript/case.yaml"
    case.write_text(case.read_text().replace("  max_turns: 8\n", "  max_turns: 8\n  disallowed_tools: [WebFetch]\n"
                                             "  append_system_prompt: Answer in English.\n"
                                             "  model: claude-haiku-4-5\n"
                                             "  env: {EVAL_TEAM: core}\n"))
    execution = _ours(plugin)[0]["evals/routing/minutes-from-transcript"].imported.case.execution
    run = AgentRun(prompt="p", model="claude-sonnet-4-6", workspace=tmp_path, home=tmp_path, env={},
                   runner_env={}, timeout=5, execution=execution)
    argv = ClaudeCode().argv(run)
    assert argv[argv.index("--permission-mode") + 1] == "dontAsk"
    assert argv[argv.index("--max-turns") + 1] == "8"
    assert argv[argv.index("--model") + 1] == "claude-haiku-4-5"  # the case's, over the run's
    assert "--allowed-tools=Skill,Read,Write" in argv and "--disallowed-tools=WebFetch" in argv
    assert "--append-system-prompt=Answer in English." in argv
    assert execution is not None and case_env("minutes", execution.env) == {"EVAL_TEAM": "core"}
    with pytest.raises(AamEvalError, match=r"case .minutes. execution\.env key .HOME. is not allowed"):
        case_env("minutes", {"HOME": "/tmp"})
    plain = ClaudeCode().argv(AgentRun(prompt="p", model="m", workspace=tmp_path, home=tmp_path, env={},
                                       runner_env={}, timeout=5))
    assert "--max-turns" not in plain and plain[plain.index("--permission-mode") + 1] != "dontAsk"
    # Copilot CLI and Gemini CLI take the tools (and Gemini CLI the turn limit) by their own names.
    from aam_eval_action.engines.copilot import Copilot
    from aam_eval_action.engines.gemini_cli import write_user_settings

    copilot = Copilot().argv(run, tmp_path / "usage.json")
    listed = copilot[copilot.index("--available-tools") + 1:copilot.index("--excluded-tools")]
    assert listed == ["skill", "view", "create", "apply_patch"]
    assert copilot[copilot.index("--excluded-tools") + 1:] == ["web_fetch"]
    write_user_settings(run)
    settings = json.loads((tmp_path / ".gemini/settings.json").read_text())
    assert settings["model"] == {"maxSessionTurns": 8}
    assert settings["tools"]["core"] == ["activate_skill", "read_file", "read_many_files", "list_directory",
                                         "write_file"]
    assert "web_fetch" in settings["tools"]["exclude"]


@pytest.mark.cli
def test_init_drafts_a_suite_both_tools_load(tmp_path: Path, refusing: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`aam-eval init --format claude-plugin-eval` on a plugin with no evals: each drafted case
    is `evals/<case>/case.yaml` (trigger prompts as `tool_used: Skill` of that skill, near misses
    as must-not-fire), marked unreviewed; the real `claude plugin eval` loads every one of them,
    refusing none, and so do we; a task that needs input files is said not written."""
    import yaml

    from aam_eval_action.testing.model_server import ModelServer

    installed("claude-code")
    repo = Path(shutil.copytree(ROOT / "tests/fixtures/routing-skills", tmp_path / "repo"))
    (repo / ".claude-plugin").mkdir()
    (repo / ".claude-plugin/plugin.json").write_text('{"name": "release-kit", "version": "1.0.0"}\n')
    drafts = yaml.safe_load((ROOT / "tests/fixtures/routing-skills-drafts.yaml").read_text())
    with ModelServer(drafts) as server:
        for name, value in (("ANTHROPIC_BASE_URL", server.url), ("ANTHROPIC_API_KEY", server.api_key),
                            ("OPENAI_BASE_URL", server.url + "/v1"), ("OPENAI_API_KEY", server.api_key)):
            monkeypatch.setenv(name, value)
        drafted = aam_eval("init", "--package", str(repo), "--format", "claude-plugin-eval", "--positives", "4",
                           "--negatives", "4", "--tasks", "1")
    assert drafted.code == 0, drafted.out + drafted.err
    written = sorted(p.parent.name for p in (repo / "evals").glob("*/case.yaml"))
    assert len(written) == 27 and not (repo / "evals/cases").exists(), drafted.out
    positive = yaml.safe_load((repo / "evals/changelog-writer-fires-01/case.yaml").read_text())
    assert positive["graders"] == [{"name": "fires", "type": "tool_used", "tool": "Skill",
                                    "input_match": '"skill":"(?:[^":]+:)?changelog\\-writer"'}]
    assert positive["draft"]["reviewed"] is False and positive["schema_version"] == "1.0"
    near = yaml.safe_load((repo / "evals/changelog-writer-near-01/case.yaml").read_text())
    assert (near["graders"][0]["min"], near["graders"][0]["max"]) == (0, 0)
    assert "changelog-writer-task-01 not written as a claude plugin eval case: it needs input files" in drafted.out
    assert "    → evals/changelog-writer-<kind>-<n>/case.yaml, a case each" in drafted.out
    loaded, refused = _ours(repo)
    assert refused == {} and sorted(Path(f).name for f in loaded) == written
    done = claude_plugin_eval(repo, tmp_path, refusing, "sk-ant-test-init", tmp_path / "out.json",
                              "--ablation", "none", "--runs", "1")
    theirs = json.loads((tmp_path / "out.json").read_text())
    assert "✗ " not in done.stdout + done.stderr, done.stdout + done.stderr
    assert sorted(c["name"] for c in theirs["cases"]) == sorted(r.imported.case.name for r in loaded.values())


def test_add_dirs_are_read_only_folders_of_the_repository_in_the_fingerprint(plugin: Path, tmp_path: Path) -> None:
    """`context.add_dirs`: folders of the repository (relative to the case's folder), given to
    Claude Code as `--add-dir` copies beside the workspace; a path out of the repository is
    refused with its line; a change to a file there changes the session's fingerprint."""
    from aam_eval_action.engines.base import AgentRun
    from aam_eval_action.engines.claude_code import ClaudeCode
    from aam_eval_action.loader import load_repo
    from aam_eval_action.replay.fingerprint import agent_fingerprint

    (plugin / "docs/style").mkdir(parents=True)
    (plugin / "docs/style/minutes.md").write_text("Decisions first.\n")
    case = plugin / "evals/mixed-form/case.yaml"
    case.write_text(case.read_text() + "context:\n  add_dirs: [../../docs/style]\n")
    read = _ours(plugin)[0]["evals/mixed-form"].imported.case
    assert read.execution is not None and read.execution.add_dirs == ["docs/style"]
    run = AgentRun(prompt="p", model="m", workspace=tmp_path, home=tmp_path, env={}, runner_env={}, timeout=5,
                   execution=read.execution, add_dirs=(tmp_path / "add-dirs/0-style",))
    argv = ClaudeCode().argv(run)
    assert argv[argv.index("--add-dir") + 1] == str(tmp_path / "add-dirs/0-style")
    package = load_repo(plugin).packages[0]
    loaded = next(c for c in package.cases if c.case.name == "mixed-form")

    def fingerprint() -> str:
        return agent_fingerprint(package.layout, loaded.case, package.config, "claude-code", "m").digest

    before = fingerprint()
    (plugin / "docs/style/minutes.md").write_text("Owners first.\n")
    assert fingerprint() != before
    case.write_text(case.read_text().replace("../../docs/style", "../../../outside"))
    assert "context.add_dirs: '../../../outside' escapes the repository" in _ours(plugin)[1]["evals/mixed-form"]


@pytest.mark.cli
def test_a_scaffold_runs_only_with_the_flag_inside_the_sandbox(plugin: Path, tmp_path: Path) -> None:
    """`context.scaffold_script` stages the workspace before the session, only with `--scaffold`
    (a repository's script runs on the operator's say), inside the session's sandbox: what it
    writes in the workspace is there for the graders, a write beside it is refused. Without the
    flag the run says so and the case runs unstaged; a failing script fails the case with its
    exit status."""
    from aam_eval_action.testing.model_server import ModelServer

    installed("claude-code")
    for case in (plugin / "evals").iterdir():
        if case.is_dir() and case.name not in ("mocks", "results"):
            shutil.rmtree(case)
    staged = plugin / "evals/staged"
    staged.mkdir()
    (staged / "setup.sh").write_text("set -e\necho seeded > notes.txt\n"
                                     "echo escaped > ../escaped.txt 2>/dev/null || echo 'refused' >> notes.txt\n")
    (staged / "case.yaml").write_text(
        'schema_version: "1.0"\nname: staged\ncontext: {scaffold_script: setup.sh}\n'
        'execution: {prompt: "Read the staged notes."}\nruns: 1\ngraders:\n'
        "  - {name: seeded, type: regex, pattern: seeded, target: {source: file, path: notes.txt}}\n"
        "  - {name: contained, type: regex, pattern: refused, target: {source: file, path: notes.txt}}\n")
    key = "sk-ant-test-scaffold"
    scenarios = [{"match": "Read the staged notes", "agent": [{"text": "The notes are seeded."}]}]

    def run(*flags: str) -> tuple[dict[str, Any], str]:
        out = tmp_path / f"run{len(list(tmp_path.glob('run*.json')))}.json"
        with ModelServer(scenarios, api_key=key) as server:
            env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
            env |= {"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": key}
            done = subprocess.run([sys.executable, "-m", "aam_eval_action", "run", "--package", str(plugin), "--allow-tools", "Write",
                                   "--mode", "live", "--ablation", "none", *flags, "-o", str(out)], env=env,
                                  capture_output=True, text=True, timeout=300, check=False)
        return json.loads(out.read_text())["cases"][0], done.stdout + done.stderr

    case, said = run("--scaffold")
    assert (case["verdict"], case["score"]) == ("PASS", 1.0), said
    assert not (plugin.parent / "escaped.txt").exists()
    case, said = run()
    assert "its scaffold_script is not run without --scaffold" in said
    assert case["score"] == 0.0 and "grader threw: focus file notes.txt does not exist" in said
    (staged / "setup.sh").write_text("echo 'no staging today' >&2\nexit 3\n")
    case, said = run("--scaffold")
    assert case["verdict"] == "ERROR" and case["error"] == "scaffold failed (exit 3): no staging today"


@pytest.mark.cli
def test_a_case_that_resumes_a_recorded_session_scores_as_there(plugin: Path, tmp_path: Path) -> None:
    """`context.history_file`: a Claude Code transcript the case resumes (`--resume <file>`); such
    a case runs one arm by default. The transcript is made here by a real session; then the real
    `claude plugin eval` and `aam-eval` each resume it, and the follow-up's answer, which only the
    resumed history makes right, scores the same in both."""
    from aam_eval_action.testing.model_server import ModelServer

    installed("claude-code")
    for case in (plugin / "evals").iterdir():
        if case.is_dir() and case.name not in ("mocks", "results"):
            shutil.rmtree(case)
    key = "sk-ant-test-history"
    scenarios = [{"match": "remember the word", "agent": [{"text": "I will remember PLUM."}]},
                 {"reply-to": "What was the word", "agent": [{"text": "The word was PLUM."}]},
                 {"match": "What was the word", "agent": [{"text": "What word?"}]}]
    resumed = plugin / "evals/resumed"
    resumed.mkdir()
    (resumed / "case.yaml").write_text(
        'schema_version: "1.0"\nname: resumed\ncontext: {history_file: history.jsonl}\n'
        'execution: {prompt: "What was the word?"}\nruns: 1\n'
        "graders:\n  - {name: recalls, type: regex, pattern: PLUM}\n")
    with ModelServer(scenarios, api_key=key) as server:
        home, first = tmp_path / "home", tmp_path / "first"
        home.mkdir()
        first.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
        env |= {"HOME": str(home), "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": key, "IS_SANDBOX": "1"}
        subprocess.run(["claude", "-p", "Please remember the word PLUM.", "--output-format", "stream-json",
                        "--verbose", "--model", "claude-sonnet-4-6"], cwd=first, env=env, capture_output=True,
                       timeout=120, check=True)
        shutil.copyfile(next(home.glob(".claude/projects/*/*.jsonl")), resumed / "history.jsonl")
        done = claude_plugin_eval(Path(shutil.copytree(plugin, tmp_path / "theirs")), tmp_path, server.url, key,
                                  tmp_path / "theirs.json")
        theirs = json.loads((tmp_path / "theirs.json").read_text())["cases"][0]
        ours_env = {k: v for k, v in env.items() if k not in ("HOME", "IS_SANDBOX")}
        ran = subprocess.run([sys.executable, "-m", "aam_eval_action", "run", "--package", str(plugin), "--allow-tools", "Write", "--record",
                              "--no-self-check", "-o", str(tmp_path / "ours.json")], env=ours_env,
                             capture_output=True, text=True, timeout=300, check=False)
    ours = json.loads((tmp_path / "ours.json").read_text())["cases"][0]
    assert theirs["aggregates"]["score"] == 1 and "without" not in (theirs["arms"] or {}), done.stdout + done.stderr
    assert (ours["score"], ours.get("score_without")) == (1.0, None), ran.stdout + ran.stderr


def _marketplace_with_a_root_suite(repo: Path) -> None:
    """A marketplace repository whose eval dir sits at its root, outside every plugin: each case
    names the plugins it loads (`plugins:`, relative to its folder), one names two, one names a
    plugin that is not there; one is named in its frontmatter as a sentence."""
    files = {
        ".claude-plugin/marketplace.json": json.dumps({"name": "team", "owner": {"name": "t"}, "plugins": [
            {"name": "notes", "source": "./plugins/notes"}, {"name": "crm", "source": "./plugins/crm"}]}),
        "plugins/notes/.claude-plugin/plugin.json": '{"name": "notes", "version": "1.0.0"}',
        "plugins/notes/skills/minutes/SKILL.md": "---\nname: minutes\ndescription: Turn notes into minutes.\n"
                                                 "---\nWrite minutes.\n",
        "plugins/crm/.claude-plugin/plugin.json": '{"name": "crm", "version": "1.0.0"}',
        "plugins/crm/skills/enrich/SKILL.md": "---\nname: enrich\ndescription: Enrich a lead.\n---\nEnrich.\n",
        "evals/routing/enrich/prompt.md": "---\nname: Enrich skill routing\nplugins: [\"../../../plugins/crm\"]\n"
                                          "runs: 1\n---\nEnrich the lead Ana Lima at Acme.\n",
        "evals/routing/enrich/graders/fired.md": "---\ntype: tool_used\ntool: Skill\n---\n",
        "evals/both/case.yaml": 'schema_version: "1.0"\nname: both-plugins\nplugins:\n  - ../../plugins/notes\n'
                                "  - ../../plugins/crm\nexecution:\n  prompt: Minutes, then enrich Ana.\nruns: 1\n"
                                "graders:\n  - {name: said, type: regex, pattern: minutes}\n",
        "evals/gone/case.yaml": 'schema_version: "1.0"\nname: gone\nplugins: ["../../plugins/gone"]\n'
                                "execution:\n  prompt: Anything.\ngraders:\n  - {name: said, type: regex, pattern: x}\n",
    }
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)


@pytest.mark.cli
def test_a_suite_outside_its_plugins_loads_as_the_runner_loads_it(refusing: str, tmp_path: Path) -> None:
    from aam_eval_action.loader import load_repo

    installed("claude-code")
    repo = tmp_path / "team"
    _marketplace_with_a_root_suite(repo)
    done = claude_plugin_eval(repo, tmp_path, refusing, "sk-ant-test-outside", tmp_path / "out.json",
                              "--ablation", "none")
    said = done.stdout + done.stderr
    theirs = {c["dir"]: c for c in json.loads((tmp_path / "out.json").read_text())["cases"]}
    assert set(theirs) == {"evals/routing/enrich", "evals/both"}, said
    assert 'plugins entry "../../plugins/gone" does not exist' in said

    loaded = load_repo(repo)
    ours = {c.file.rsplit("/", 1)[0]: (p.plugin, c) for p in loaded.packages for c in p.cases if c.file}
    refused = {e.file: str(e) for p in loaded.packages for e in p.errors}
    assert {folder for folder in ours} == set(theirs)
    plugin, enrich = ours["evals/routing/enrich"]
    assert plugin == "crm" and enrich.case.title == theirs["evals/routing/enrich"]["name"] == "Enrich skill routing"
    assert enrich.case.name == "enrich-skill-routing"  # its id, for cassette folders
    both = ours["evals/both"][1].case
    assert both.execution is not None and both.execution.plugins == ["plugins/notes", "plugins/crm"]
    [gone] = {f: e for f, e in refused.items() if f.startswith("evals/gone")}.values()
    assert 'case "gone": plugins entry "../../plugins/gone" does not exist' in gone

    run = aam_eval("run", "--package", str(repo), "--case", "Enrich*", "--dry-run")
    assert run.code == 0 and "crm/Enrich skill routing  target" in run.out and "both-plugins  target" not in run.out, run


@pytest.mark.cli
def test_a_case_loads_every_plugin_it_lists_as_the_runner_does(tmp_path: Path) -> None:
    """A case of the repository's own eval dir that lists two plugins: the runner and we load
    both (their skills listed as `plugin:skill` to the model), and score it the same."""
    from aam_eval_action.testing.model_server import ModelServer, listed_skills

    installed("claude-code")
    key = "sk-ant-test-two-plugins"
    scenarios = [{"match": "Minutes, then enrich Ana", "agent": [{"text": "The minutes are done; Ana is enriched."}]}]
    skills = {}
    for who in ("theirs", "ours"):
        repo = tmp_path / who
        _marketplace_with_a_root_suite(repo)
        shutil.rmtree(repo / "evals/gone")
        shutil.rmtree(repo / "evals/routing")
        with ModelServer(scenarios, api_key=key) as server:
            if who == "theirs":
                done = claude_plugin_eval(repo, tmp_path, server.url, key, tmp_path / "theirs.json", "--ablation", "none")
                [case] = json.loads((tmp_path / "theirs.json").read_text())["cases"]
                score = case["aggregates"]["score"]
            else:
                env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
                env |= {"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": key}
                done = subprocess.run([sys.executable, "-m", "aam_eval_action", "run", "--package", str(repo),
                                       "--record", "--ablation", "none", "--no-self-check", "-o",
                                       str(tmp_path / "ours.json")], env=env, capture_output=True, text=True,
                                      timeout=600, check=False)
                [case] = json.loads((tmp_path / "ours.json").read_text())["cases"]
                score = case["score"]
            skills[who] = (set().union(*(listed_skills(r.body) for r in server.requests if r.body.get("tools"))),
                           score)
        assert score == 1, done.stdout + done.stderr
    assert {"notes:minutes", "crm:enrich"} <= skills["theirs"][0]
    assert skills["ours"] == skills["theirs"]


@pytest.mark.cli
def test_a_tool_beyond_the_read_only_ones_is_withheld_unless_granted_as_there(plugin: Path, tmp_path: Path) -> None:
    """changelog-written lists Write. Without `--allow-tools Write` the runner withholds it, and so
    do we, saying so on the case: the file is never written and both score 0; granted, both 1."""
    from aam_eval_action.testing.model_server import ModelServer

    installed("claude-code")
    key = "sk-ant-test-grants"
    scores = {}
    for grant in ((), ("--allow-tools", "Write")):
        with ModelServer(SCENARIOS, api_key=key) as server:
            theirs = Path(shutil.copytree(plugin, tmp_path / f"theirs{len(grant)}"))
            out = tmp_path / f"theirs{len(grant)}.json"
            claude_plugin_eval(theirs, tmp_path, server.url, key, out, "--ablation", "none", "--case",
                               "changelog-written", *grant)
            [case] = json.loads(out.read_text())["cases"]
            env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
            env |= {"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": key}
            report = tmp_path / f"ours{len(grant)}.json"
            subprocess.run([sys.executable, "-m", "aam_eval_action", "run", "changelog-written", "--package",
                            str(plugin), "--record", "--ablation", "none", "--no-self-check", *grant, "-o",
                            str(report)], env=env, capture_output=True, text=True, timeout=600, check=False)
            [mine] = json.loads(report.read_text())["cases"]
        scores[grant] = (case["aggregates"]["score"], mine["score"], (mine.get("skipped_checks") or {}).get(
            "execution.allowed_tools"))
    assert scores[()][:2] == (0, 0)
    assert scores[()][2] == ("not granted (missing --allow-tools grant, or a malformed entry): Write; grant with "
                             "--allow-tools Write")
    assert scores[("--allow-tools", "Write")] == (1, 1, None)


def test_grants_follow_that_runners_rules() -> None:
    assert cpe.granted(["Skill", "Read", "Write"], []) == (["Skill", "Read"], ["Write"])
    assert cpe.granted(["Skill", "Bash(npm test:*)"], ["Bash"]) == (["Bash", "Skill", "Bash(npm test:*)"], [])
    assert cpe.granted(["Bash(npm test:*)"], ["Bash(make:*)"])[1] == ["Bash(npm test:*)"]
    assert cpe.granted(["mcp__tracker__create_issue"], ["mcp__tracker__*"])[1] == []
    assert cpe.granted(["Read", "not a tool!"], [])[1] == ["not a tool!"]


@pytest.mark.cli
def test_mocks_off_starts_the_plugins_own_server_and_scores_as_there(plugin: Path, tmp_path: Path) -> None:
    """`--mocks off`: no stand-in answers the tracker; the plugin's own server starts (it leaves a
    marker and serves nothing), and file-a-bug scores what the runner's run with `--mocks off`
    scores; the recording is not the mocked one's."""
    from aam_eval_action.testing.model_server import ModelServer

    installed("claude-code")
    key = "sk-ant-test-mocks-off"
    with ModelServer(SCENARIOS, api_key=key) as server:
        theirs = Path(shutil.copytree(plugin, tmp_path / "theirs"))
        claude_plugin_eval(theirs, tmp_path, server.url, key, tmp_path / "theirs.json", "--ablation", "none",
                           "--case", "file-a-bug", "--mocks", "off")
        [case] = json.loads((tmp_path / "theirs.json").read_text())["cases"]
        env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
        env |= {"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": key}
        for mocks in ("off", "record"):
            subprocess.run([sys.executable, "-m", "aam_eval_action", "run", "file-a-bug", "--package", str(plugin),
                            "--record", "--ablation", "none", "--no-self-check", "--mocks", mocks,
                            "-o", str(tmp_path / f"{mocks}.json")], env=env, capture_output=True, text=True,
                           timeout=600, check=False)
    [off] = json.loads((tmp_path / "off.json").read_text())["cases"]
    [mocked] = json.loads((tmp_path / "record.json").read_text())["cases"]
    assert off["score"] == case["aggregates"]["score"] < mocked["score"] == 1
    assert {g["name"]: g["passed"] for g in off["graders"]} == {
        g["name"]: g["passed"] for g in case["arms"]["with"][0]["graders"]}
    assert off["fingerprint"] != mocked["fingerprint"]


def _png(rgb: bytes) -> bytes:
    """A 2×2 PNG of one colour."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\x00" + rgb * 2 for _ in range(2))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


@pytest.mark.cli
def test_an_image_focus_is_shown_to_the_judge_as_there(plugin: Path, tmp_path: Path) -> None:
    """An `llm` grader whose focus is an image the run made: the judge is sent the image itself
    (the same request content as the runner's), and the scripted judge, which sees which image
    it was sent, passes the red chart and fails the blue one. A PDF, a file with a NUL byte and
    a regex over an image fail with that runner's explanation; invalid UTF-8 is shown decoded.
    Snapshot-replayed offline, the image comes from the recording: the same verdicts."""
    import base64
    import hashlib

    from aam_eval_action.testing.model_server import ModelServer

    installed("claude-code")
    red, blue = _png(b"\xff\x00\x00"), _png(b"\x00\x00\xff")
    for case in (plugin / "evals").iterdir():
        shutil.rmtree(case)
    case = plugin / "evals/chart"
    case.mkdir()
    focus = {"looks-red": "chart.png", "also-red": "photo.jpg", "latin": "latin.txt", "bin": "data.bin",
             "pdf": "doc.pdf", "html": "page.html"}
    graders = "".join(f"  - {{name: {n}, type: llm, criteria: 'It is red.', focus: {{source: file, path: {p}}}}}\n"
                      for n, p in focus.items())
    (case / "case.yaml").write_text(
        'schema_version: "1.0"\nname: chart\nexecution:\n  prompt: "Draw the chart."\n'
        "context:\n  scaffold_script: setup.sh\ngraders:\n" + graders
        + "  - {name: regex-on-image, type: regex, pattern: red, target: {source: file, path: chart.png}}\n")
    made = {"chart.png": red, "photo.jpg": blue, "latin.txt": b"caf\xe9 au lait", "data.bin": bytes(range(40)),
            "doc.pdf": b"%PDF-1.4 hello", "page.html": b"<!DOCTYPE html><html>\x00junk"}
    (case / "setup.sh").write_text("#!/bin/sh\n" + "".join(
        f"echo {base64.b64encode(data).decode()} | base64 -d > {name}\n" for name, data in made.items()))
    (case / "setup.sh").chmod(0o755)
    scenarios = [{"match": "Draw the chart.", "agent": [{"text": "Drawn."}]},
                 {"match": f"sha256={hashlib.sha256(red).hexdigest()}", "judge": {"result": "PASS"}},
                 {"match": f"sha256={hashlib.sha256(blue).hexdigest()}", "judge": {"result": "FAIL"}},
                 {"match": "caf\ufffd au lait", "judge": {"result": "PASS"}}]
    key = "sk-ant-test-image-focus"
    with ModelServer(scenarios, api_key=key) as server:
        theirs = Path(shutil.copytree(plugin, tmp_path / "theirs"))
        claude_plugin_eval(theirs, tmp_path, server.url, key, tmp_path / "theirs.json", "--ablation", "none",
                           "--scaffold")
        asked = len(server.requests)
        env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
        env |= {"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": key}
        ran = subprocess.run([sys.executable, "-m", "aam_eval_action", "run", "--package", str(plugin), "--record",
                              "--ablation", "none", "--scaffold", "--no-self-check", "-o", str(tmp_path / "ours.json")],
                             env=env, capture_output=True, text=True, timeout=600, check=False)

        def shown(requests: list[Any]) -> list[Any]:
            return [r.body["messages"][0]["content"] for r in requests
                    if not r.body.get("tools") and isinstance(r.body["messages"][0]["content"], list)
                    and any(b.get("type") == "image" for b in r.body["messages"][0]["content"])]

        # The same requests (in the order each tool's votes happened to reach the server).
        def as_json(content: Any) -> str:
            return json.dumps(content, sort_keys=True)

        assert sorted(shown(server.requests[asked:]), key=as_json) == \
            sorted(shown(server.requests[:asked]), key=as_json) != []
        # An OpenAI judge is sent the same image in the Responses API's own shape.
        openai = subprocess.run([sys.executable, "-m", "aam_eval_action", "run", "--package", str(plugin), "--record", "--no-self-check",
                                 "--cassettes", str(tmp_path / "openai-cassettes"),
                                 "--ablation", "none", "--scaffold", "--judge", "gpt-5.5", "-o",
                                 str(tmp_path / "openai.json")],
                                env=env | {"OPENAI_BASE_URL": server.url + "/v1", "OPENAI_API_KEY": key},
                                capture_output=True, text=True, timeout=600, check=False)
    [their] = json.loads((tmp_path / "theirs.json").read_text())["cases"]
    verdicts = {g["name"]: (g["passed"], g["explanation"]) for g in their["arms"]["with"][0]["graders"]}
    assert verdicts["looks-red"][0] and not verdicts["also-red"][0] and verdicts["latin"][0]
    assert "it is a PDF document" in verdicts["pdf"][1] and "NUL byte at offset 21" in verdicts["html"][1]
    [ours] = json.loads((tmp_path / "ours.json").read_text())["cases"]
    assert {g["name"]: (g["passed"], g["explanation"]) for g in ours["graders"]} == verdicts, ran.stdout[-3000:]
    assert ours["score"] == their["aggregates"]["score"]
    assert (tmp_path / "openai.json").is_file(), openai.stdout + openai.stderr
    [by_openai] = json.loads((tmp_path / "openai.json").read_text())["cases"]
    assert {g["name"]: (g["passed"], g["explanation"]) for g in by_openai["graders"]} == verdicts, openai.stdout
    replayed = subprocess.run([sys.executable, "-m", "aam_eval_action", "run", "--package", str(plugin), "--replay",
                               "--no-rerun", "--ablation", "none", "--scaffold", "-o", str(tmp_path / "replayed.json")],
                              env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}, capture_output=True, text=True,
                              timeout=300, check=False)
    [again] = json.loads((tmp_path / "replayed.json").read_text())["cases"]
    assert {g["name"]: (g["passed"], g["explanation"]) for g in again["graders"]} == verdicts, replayed.stdout


@pytest.mark.cli
@pytest.mark.parametrize("engine", repeated(["codex"], ["copilot", "gemini-cli"]))
def test_a_case_loads_every_plugin_it_lists_on_the_other_engines(engine: str, tmp_path: Path) -> None:
    """On Codex (here; Copilot CLI and Gemini CLI in bench/bench_repeats.py), a case that lists two plugins gets both plugins'
    skills, installed where that CLI reads project skills: the CLI lists both to the model; a
    case that lists one gets that one's alone."""
    from aam_eval_action.testing.model_server import ModelServer, listed_skills

    installed(engine)
    keys = {"OPENAI_API_KEY": "sk-test-two-plugins", "GEMINI_API_KEY": "gemini-test-two-plugins",
            "ANTHROPIC_API_KEY": "sk-ant-test-two-plugins"}
    repo = tmp_path / "repo"
    _marketplace_with_a_root_suite(repo)
    shutil.rmtree(repo / "evals/gone")
    flags = {"codex": ["--model", "gpt-5.5"]}.get(engine, [])
    listed = {}
    for case in ("both-plugins", "Enrich skill routing"):
        scenarios = [{"match": "Minutes, then enrich Ana", "agent": [{"text": "The minutes are done."}]},
                     {"match": "Enrich the lead", "agent": [{"text": "Enriched."}]}]
        with ModelServer(scenarios, api_key=tuple(keys.values())) as server:
            env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
            env |= {"ANTHROPIC_BASE_URL": server.url, "OPENAI_BASE_URL": server.url + "/v1",
                    "GOOGLE_GEMINI_BASE_URL": server.url, **keys}
            done = subprocess.run([sys.executable, "-m", "aam_eval_action", "run", "--package", str(repo),
                                   "--case", case, "--record", "--engine", engine, *flags, "--judge",
                                   "claude-sonnet-4-6", "--ablation", "none", "--no-self-check",
                                   "-o", str(tmp_path / f"{engine}.json")],
                                  env=env, capture_output=True, text=True, timeout=600, check=False)
            listed[case] = set().union(*(listed_skills(r.body) for r in server.requests))
        assert (tmp_path / f"{engine}.json").is_file(), done.stdout + done.stderr
    assert {"minutes", "enrich"} <= listed["both-plugins"], listed
    assert "enrich" in listed["Enrich skill routing"] and "minutes" not in listed["Enrich skill routing"], listed


@pytest.mark.cli
def test_a_case_whose_scaffold_fails_scores_zero_as_there(plugin: Path, tmp_path: Path) -> None:
    """A scaffold that exits 1: the runner scores the case 0 in both arms and counts it in its
    overall score; ours shows it as ERROR with why, and scores it the same, so the headline
    numbers agree."""
    from aam_eval_action.testing.model_server import ModelServer

    installed("claude-code")
    for case in (plugin / "evals").iterdir():
        shutil.rmtree(case)
    for name, scaffold in (("bad", "context:\n  scaffold_script: setup.sh\n"), ("good", "")):
        (plugin / "evals" / name).mkdir()
        (plugin / "evals" / name / "case.yaml").write_text(
            f'schema_version: "1.0"\nname: {name}\nexecution:\n  prompt: "Draw the chart."\n{scaffold}'
            "graders:\n  - {name: said, type: regex, pattern: Drawn}\n")
    (plugin / "evals/bad/setup.sh").write_text("#!/bin/sh\necho boom >&2\nexit 3\n")
    (plugin / "evals/bad/setup.sh").chmod(0o755)
    key = "sk-ant-test-scaffold-fails"
    with ModelServer([{"match": "Draw the chart", "agent": [{"text": "Drawn."}]}], api_key=key) as server:
        theirs = Path(shutil.copytree(plugin, tmp_path / "theirs"))
        claude_plugin_eval(theirs, tmp_path, server.url, key, tmp_path / "theirs.json", "--scaffold")
        env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
        env |= {"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": key}
        ran = subprocess.run([sys.executable, "-m", "aam_eval_action", "run", "--package", str(plugin), "--record",
                              "--scaffold", "--no-self-check", "-o", str(tmp_path / "ours.json")],
                             env=env, capture_output=True, text=True, timeout=600, check=False)
    their = json.loads((tmp_path / "theirs.json").read_text())
    ours = json.loads((tmp_path / "ours.json").read_text())
    assert {c["name"]: (c["aggregates"]["score"], c["aggregates"]["scoreWithout"], c["aggregates"]["delta"])
            for c in their["cases"]} == {c["name"]: (c["score"], c["score_without"], c["delta"])
                                         for c in ours["cases"]} == {"bad": (0, 0, 0), "good": (1, 1, 0)}
    bad = next(c for c in ours["cases"] if c["name"] == "bad")
    assert bad["verdict"] == "ERROR" and bad["error"] == "scaffold failed (exit 3): boom", ran.stdout
    assert (ours["summary"]["score"], ours["summary"]["mean_delta"]) == (
        their["aggregates"]["overallScore"], their["aggregates"]["meanDelta"]) == (0.5, 0)
    assert "claude plugin eval score 0.50" in ran.stdout
