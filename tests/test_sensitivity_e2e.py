"""`aam-eval sensitivity` through the real Claude Code and Codex CLIs against the scripted model
server (tests/fixtures/sensitivity: a release-notes skill whose house rules sit one per section,
with a weak suite and a strong one; the scripted agent answers with the rules it has read).

The strong suite kills every rule section's mutant, the weak suite's check is weak and kills
nothing, and the History section, which no case could notice, stays uncovered in both. Neither
notices the mutant of the other direction, the description broadened to every request; the guard
against a false trigger (a request for no skill must not load release-notes) does. A
script the session never runs has its mutants graded by re-execution with no model call. A
skill whose description never fires shows, in the forced arm, what its content is worth and
what routing loses. A second run replays everything offline with the same matrix, byte for
byte; a cap stops the run and says what did not fit.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import ROOT, installed
from support.action_env import OWNER, REPO, pull_request_env
from support.browser import report_page, texts
from support.gitrepo import commit_all, init

pytestmark = pytest.mark.cli
FIXTURE = ROOT / "tests/fixtures/sensitivity/release-notes"
SCENARIOS = yaml.safe_load((ROOT / "tests/fixtures/sensitivity/scenarios.yaml").read_text())["scenarios"]
KEYS = {"ANTHROPIC_API_KEY": "sk-ant-CANARY-sensitivity-7f31", "OPENAI_API_KEY": "sk-CANARY-sensitivity-2b9e"}
RULES = ("headline", "dates")
MUTANTS = "release-notes/section/*,release-notes/script-fails/*,release-notes/broadened"
"""Each rule's section deleted and the script made to fail (they remove), and the description
broadened to every request (it over-claims)."""
SUITE = ("--tags", "!guard")
"""The suite but its guard against a false trigger, which has a run of its own (one engine, one
mutant: a few seconds)."""
ENGINES = ("--engine", "claude-code,codex")
CAPPED = "release-notes/body,release-notes/description"
"""Two mutants not recorded yet: under a cap of $0.10, the first goes live and fits (each case
is estimated at $0.06 from its recording, and costs half that from where it diverges); the
second no longer does."""


def _sensitivity(pkg: Path, *flags: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "aam_eval_action", "sensitivity", "--package", str(pkg), *flags],
                          env=env, capture_output=True, text=True, timeout=600, check=False)


def _env(url: str | None) -> dict[str, str]:
    """The runner's environment: pointed at the scripted server with canary keys, or (None)
    offline: no key, no base URL, no agent CLI on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    if url is None:
        return env | {"PATH": "/usr/bin:/bin"}
    return env | {"ANTHROPIC_BASE_URL": url, "OPENAI_BASE_URL": url + "/v1", **KEYS}


def _matrix(out: str) -> str:
    """The printed matrix: from the first `kill matrix` line to the count of kills."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("kill matrix"))
    end = next(i for i, line in enumerate(lines) if re.match(r"\d+ of \d+ measured mutant", line))
    return "\n".join(lines[start:end + 1])


def _unpriced(value: Any) -> Any:
    """The JSON without how each variant was graded and what it cost (a replay costs nothing)."""
    if isinstance(value, dict):
        return {k: _unpriced(v) for k, v in value.items() if k not in ("graded", "cost_usd")}
    if isinstance(value, list):
        return [_unpriced(v) for v in value]
    return value


def test_the_strong_suite_kills_every_rule_and_the_weak_one_is_flagged(tmp_path: Path) -> None:
    from aam_eval_action.testing.model_server import ModelServer

    installed("claude-code")
    installed("codex")
    init(tmp_path / "repo")
    pkg = Path(shutil.copytree(FIXTURE, tmp_path / "repo/release-notes"))
    with ModelServer(SCENARIOS, api_key=tuple(KEYS.values())) as server:
        live = _sensitivity(pkg, *ENGINES, *SUITE, "--mutants", MUTANTS, "-o", str(tmp_path / "live.json"),
                            "--html", str(tmp_path / "matrix.html"), env=_env(server.url))
        assert live.returncode == 0, live.stdout + live.stderr
        asked = len(server.requests)
        unread = _sensitivity(pkg, "--engine", "claude-code", *SUITE, "--mutants", "release-notes/file-removed/*",
                              "-o", str(tmp_path / "unread.json"), env=_env(server.url))
        assert unread.returncode == 0, unread.stdout + unread.stderr
        # The arms replay; the script's removal is re-executed against the recording: no request.
        assert len(server.requests) == asked, unread.stdout
        # The guard: no mutant that removes something could fail it; broadened, the skill fires.
        guarded = _sensitivity(pkg, "--engine", "claude-code", "--tags", "guard", "--mutants", "release-notes/broadened",
                               "-o", str(tmp_path / "guard.json"), env=_env(server.url))
        assert guarded.returncode == 0, guarded.stdout + guarded.stderr
        # A cap: the arms replay for $0, a mutant goes live, and what no longer fits is said.
        capped = _sensitivity(pkg, "--engine", "claude-code", *SUITE, "--mutants", CAPPED, "--max-usd", "0.1",
                              "-o", str(tmp_path / "capped.json"), env=_env(server.url))
        assert capped.returncode == 0, capped.stdout + capped.stderr
        # A cap that cannot pay for the suite itself (nothing recorded yet) stops before any session.
        fresh = Path(shutil.copytree(FIXTURE, tmp_path / "repo/fresh"))
        asked = len(server.requests)
        too_little = _sensitivity(fresh, "--engine", "claude-code", "--max-usd", "0.2", env=_env(server.url))
        assert too_little.returncode == 2 and len(server.requests) == asked, too_little.stdout + too_little.stderr
        assert "--max-usd 0.2 does not cover the suite itself on claude-code" in too_little.stderr
    result = json.loads((tmp_path / "live.json").read_text())
    said = live.stdout
    for engine, how in (("claude-code", "its slash command, /changelog-style"),
                        ("codex", "a $ mention, $changelog-style")):
        mutants = {m["id"]: m for m in result["mutants"] if m["engine"] == engine}
        for rule in RULES:
            killed = mutants[f"release-notes/section/{rule}"]
            assert (killed["status"], killed["killed_by"]) == ("killed", [{"case": "strong-notes", "check": "contains"}])
            # What it cost: as the CLI reported it, or (Codex reports none) its live turns' tokens priced.
            assert killed["graded"]["model_calls"] and killed["graded"]["cost_usd"] > 0, killed
        assert mutants["release-notes/section/history"]["status"] == "survived"  # nothing could notice it
        assert mutants["release-notes/broadened"]["status"] == "survived"  # no case it must not fire on
        assert [i for i, m in mutants.items() if m["direction"] == "over-claims"] == ["release-notes/broadened"]
        script = mutants["release-notes/script-fails/scripts-wrap-sh"]
        assert script["status"] == "survived", said
        assert (script["graded"]["re_executed"], script["graded"]["model_calls"]) == (2, False), script
        checks = {(c["case"], c["check"]): c for c in result["checks"] if c["engine"] == engine}
        weak, strong = checks["weak-notes", "contains"], checks["strong-notes", "contains"]
        assert (weak["weak"], weak["discriminates"], weak["flipped_by"]) == (True, False, [])
        assert (strong["weak"], strong["discriminates"]) == (False, True)
        assert sorted(strong["flipped_by"]) == [f"release-notes/section/{r}" for r in sorted(RULES)]
        assert (weak["file"], weak["line"]) == ("evals/cases/weak.yaml", 8)  # the check's own line
        # The forced arm: the changelog skill never fires, yet helps once loaded.
        changelog = next(c for c in result["cases"] if c["engine"] == engine and c["case"] == "changelog-entry")
        assert (changelog["without_package"], changelog["with_package"], changelog["forced"]) == ("FAIL", "FAIL", "PASS")
        assert (changelog["content"], changelog["routing"], changelog["forced_how"]) == ("helps", "loses", how)
        assert f"changelog-entry  FAIL · FAIL · PASS  content helps; routing loses  ({how})" in said
    unread_rows = json.loads((tmp_path / "unread.json").read_text())["mutants"]
    assert [(m["id"], m["status"], m["graded"]["re_executed"], m["graded"]["model_calls"]) for m in unread_rows] == [
        ("release-notes/file-removed/scripts-wrap-sh", "survived", 2, False)]
    assert "WEAK: passes with and without the package, and under every mutant of both directions" in said
    assert 'uncovered guidance: release-notes: section "History" deleted and no check noticed' in said
    assert "no guard: release-notes: description broadened to every request and no check noticed a false trigger" in said

    # The guard: it passes with and without the package, as under every mutant that removes
    # something; the description broadened to every request makes the skill fire, and kills it.
    guard = json.loads((tmp_path / "guard.json").read_text())
    assert [(m["id"], m["direction"], m["status"], m["killed_by"]) for m in guard["mutants"]] == [
        ("release-notes/broadened", "over-claims", "killed", [{"case": "unrelated-request", "check": "skill_triggered"}])]
    assert [(c["check"], c["with_package"], c["without_package"], c["flipped_by"], c["weak"]) for c in guard["checks"]] == [
        ("skill_triggered", "PASS", "PASS", ["release-notes/broadened"], False)]
    assert "killed       over-claims  release-notes/broadened  kill rate 100%  by unrelated-request/skill_triggered" \
        in guarded.stdout
    assert "unrelated-request  PASS · PASS · ERROR  (not forced: the case checks that its skill does not fire" \
        in guarded.stdout  # invoking it by name would only fail the guard
    assert all(key not in said + (tmp_path / "live.json").read_text() for key in KEYS.values())

    # Offline, the same matrix, byte for byte: no key, no network, no CLI.
    summary = tmp_path / "summary.md"
    replayed = _sensitivity(pkg, *ENGINES, *SUITE, "--mutants", MUTANTS, "--replay", "-o", str(tmp_path / "again.json"),
                            env=_env(None) | {"GITHUB_STEP_SUMMARY": str(summary)})
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    shown = summary.read_text()
    assert "4 of 10 measured mutants killed; 6 uncovered; 2 weak checks." in shown, shown
    assert "| codex | release-notes: description broadened to every request | over-claims | SURVIVED | — |" in shown
    assert '| codex | release-notes: section "History" deleted | removes | SURVIVED | — |' in shown
    assert _matrix(replayed.stdout) == _matrix(live.stdout)
    assert _unpriced(json.loads((tmp_path / "again.json").read_text())) == _unpriced(result)
    assert "re-executed" not in replayed.stdout and "model called" not in replayed.stdout

    # Each suite alone, from the recordings: the weak one notices no rule, the strong one each.
    weak_only = _sensitivity(pkg, "--engine", "codex", "--mutants", MUTANTS, "--replay", "--tags", "weak",
                             "-o", str(tmp_path / "weak.json"), env=_env(None))
    uncovered = json.loads((tmp_path / "weak.json").read_text())["uncovered"]
    assert [f"codex: release-notes/section/{r}" for r in RULES] == [u for u in uncovered if "section/" in u][:len(RULES)]
    assert "codex: release-notes/section/history" in uncovered, weak_only.stdout

    # The page: a cell opens the two sessions it compares.
    with report_page(tmp_path / "matrix.html", ready=None) as page:
        assert len(texts(page, "td.killed")) == 2 * len(RULES)
        page.click("td.killed summary")
        opened = texts(page, "td.killed details div")[0]
        assert opened.startswith("with the package: PASS\nRelease notes for Acme 2.0 drafted.\nHOUSE RULE")
        assert "release-notes/section/headline: FAIL (live)" in opened
        assert page.requests() == [(tmp_path / "matrix.html").as_uri()] and page.problems() == []

    # The cap's run: spent at most the cap, the estimate first, the rest said.
    assert "at most $" in capped.stdout.splitlines()[1]
    result = json.loads((tmp_path / "capped.json").read_text())
    assert result["cost_usd"] <= 0.1, result["cost_usd"]
    done = [m for m in result["mutants"] if m["status"] in ("killed", "survived")]
    skipped = [m for m in result["mutants"] if m["status"] == "not-run"]
    assert done and done[0]["id"] == "release-notes/body" and done[0]["graded"]["live"] == 2, capped.stdout
    assert skipped and skipped[-1]["id"] == "release-notes/description", capped.stdout
    assert all(m["note"].startswith("did not fit") for m in skipped), capped.stdout
    assert f"not run · claude-code: {skipped[-1]['id']}: did not fit" in capped.stdout


def test_an_interrupted_run_keeps_what_finished_and_says_the_rest(tmp_path: Path) -> None:
    """Ctrl-C while a mutant's session runs: the arms that finished are in the matrix, the
    mutant is said not run, the JSON is written, and the exit code is 130."""
    import signal
    import time

    from aam_eval_action.testing.model_server import ModelServer

    installed("claude-code")
    init(tmp_path / "repo")
    pkg = Path(shutil.copytree(FIXTURE, tmp_path / "repo/release-notes"))
    hang = {"match": "release notes", "agent": [{"skill": "release-notes"}, {"text": "Drafted.", "sleep": 4}]}

    def wait_for(requests: int) -> None:
        deadline = time.monotonic() + 120
        while len(server.requests) < requests:
            assert time.monotonic() < deadline and running.poll() is None, running.stdout
            time.sleep(0.1)

    with ModelServer(SCENARIOS, api_key=tuple(KEYS.values())) as server:
        running = subprocess.Popen(
            [sys.executable, "-m", "aam_eval_action", "sensitivity", "--package", str(pkg), "--engine", "claude-code",
             "--tags", "weak", "--mutants", "release-notes/section/headline", "-o", str(tmp_path / "partial.json")],
            env=_env(server.url), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(5)  # with the package 2 requests, without it 1, forced 2: the arms are done
        server.add(hang, first=True)  # the mutant's session, gone live at its second turn, waits 4 s
        wait_for(6)
        running.send_signal(signal.SIGINT)
        out, err = running.communicate(timeout=60)
    assert running.returncode == 130, out + err
    result = json.loads((tmp_path / "partial.json").read_text())
    assert result["not_run"] == ["claude-code: release-notes/section/headline: interrupted"], out
    [weak] = result["checks"]
    assert (weak["case"], weak["with_package"], weak["without_package"], weak["forced"]) == (
        "weak-notes", "PASS", "PASS", "PASS")
    assert "not run · claude-code: release-notes/section/headline: interrupted" in out


KIT = ROOT / "tests/fixtures/sensitivity/release-kit"
KIT_SCENARIOS = yaml.safe_load((ROOT / "tests/fixtures/sensitivity/scenarios.yaml").read_text())["plugin-scenarios"]
REAL_SERVERS = ("--allow-real-servers", "--allow-tools", "mcp__*")
"""The plugin's own server starts (the case mocks nothing), and its tool is granted."""


def test_a_claude_plugin_eval_suite_recorded_by_run_is_measured_and_its_server_made_to_fail(tmp_path: Path) -> None:
    """A Claude plugin (tests/fixtures/sensitivity/release-kit: the release-notes skill, a real MCP
    server answering the version rule, a `claude plugin eval` case graded by two regexes) recorded
    by `aam-eval run`: `sensitivity` replays that recording for its arms with and without the
    plugin, forces the plugin's skill by its plugin name, and the server made to answer every
    tool call with an error is killed by the version grader, named at its line. A replay after
    it gives the same matrix offline."""
    from aam_eval_action.testing.model_server import ModelServer

    installed("claude-code")
    init(tmp_path / "repo")
    kit = Path(shutil.copytree(KIT, tmp_path / "repo/release-kit"))
    shutil.copytree(FIXTURE / "skills/release-notes", kit / "skills/release-notes")
    mutants = ("--mutants", "mcp/releases,release-notes/section/headline")
    listed = _sensitivity(kit, "--list", env=_env(None))
    assert "mcp/releases  MCP server releases (.mcp.json) answers every tool call with an error" in listed.stdout
    with ModelServer(KIT_SCENARIOS, api_key=tuple(KEYS.values())) as server:
        recorded = subprocess.run([sys.executable, "-m", "aam_eval_action", "run", "--package", str(kit), "--engine",
                                   "claude-code", "--record", "--no-self-check", *REAL_SERVERS], env=_env(server.url),
                                  capture_output=True, text=True, timeout=600, check=False)
        assert "notes │ PASS 1.00 Δ+1.00" in recorded.stdout, recorded.stdout + recorded.stderr
        live = _sensitivity(kit, "--engine", "claude-code", *REAL_SERVERS, *mutants, "-o",
                            str(tmp_path / "live.json"), env=_env(server.url))
    assert live.returncode == 0, live.stdout + live.stderr
    result = json.loads((tmp_path / "live.json").read_text())
    arms = {a["name"]: a for a in result["arms"]}
    # The arms with and without the plugin are run's recording, replayed: no model call.
    assert arms["claude-code: with and without"]["graded"] | {"cost_usd": 0} == {
        "replayed": 1, "re_executed": 0, "live": 0, "cost_usd": 0, "model_calls": False}
    assert arms["claude-code: forced"]["how"] == "its slash command, /release-kit:release-notes"
    assert [(m["id"], m["status"], m["killed_by"]) for m in result["mutants"]] == [
        ("release-notes/section/headline", "killed", [{"case": "notes", "check": "headline"}]),
        ("mcp/releases", "killed", [{"case": "notes", "check": "version"}])]
    checks = {c["check"]: c for c in result["checks"]}
    assert [(checks[n]["file"], checks[n]["line"], checks[n]["discriminates"]) for n in ("headline", "version")] == [
        ("evals/notes/case.yaml", 9, True), ("evals/notes/case.yaml", 12, True)]
    assert "notes  FAIL · PASS · PASS  content helps; routing no difference" in live.stdout
    # The real server answered the arm with the plugin; under the mutant, its relay the error.
    cassettes = kit / "evals/cassettes"
    assert "HOUSE RULE version" in (cassettes / "notes/claude-code.session.yaml").read_text()
    failed = (cassettes / "_sensitivity/mcp/releases/notes/claude-code.session.yaml").read_text()
    assert "Internal error: the server failed to answer this call." in failed and "HOUSE RULE version" not in failed

    replayed = _sensitivity(kit, "--engine", "claude-code", *REAL_SERVERS, *mutants, "--replay", env=_env(None))
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert _matrix(replayed.stdout) == _matrix(live.stdout)

    # The action on a pull request, `sensitivity: on`: the last nightly's matrix, replayed, in the
    # job summary, its JSON and page beside the report.
    from aam_eval_action.commands.action import action as action_main
    from aam_eval_action.testing.github_server import GitHubServer

    base = commit_all(tmp_path / "repo", "the nightly's recordings")
    with GitHubServer(tokens={"rw-token": "write"}) as gh:
        gh.add_pr(OWNER, REPO, 9)
        env = pull_request_env(tmp_path / "repo", tmp_path, gh.url, "rw-token", base, 9, package_path="release-kit",
                               engine="claude-code", allow_real_servers="true", allow_tools="mcp__*",
                               sensitivity="on", sensitivity_mutants="mcp/*,release-notes/section/headline")
        assert action_main(env) == 0
    summary = (tmp_path / "summary.md").read_text()
    assert "2 of 2 measured mutants killed; 0 uncovered; 0 weak checks." in summary, summary
    said = dict(line.split("=", 1) for line in (tmp_path / "output.txt").read_text().splitlines() if "=" in line)
    assert said["sensitivity-path"] == "head-report.sensitivity.json"
    shown = json.loads((tmp_path / "repo/head-report.sensitivity.json").read_text())
    assert _unpriced(shown["mutants"]) == _unpriced(result["mutants"])
    assert (tmp_path / "repo/head-report.sensitivity.html").is_file()


def test_gemini_cli_forces_a_skill_by_its_file_reference(tmp_path: Path) -> None:
    """Gemini CLI lists its skills' slash commands only when interactive; under `-p` the forced
    arm puts the installed SKILL.md into the prompt with an `@` reference, and the changelog
    skill, which never fires, shows what its content is worth there too."""
    from aam_eval_action.testing.model_server import ModelServer

    installed("gemini-cli")
    init(tmp_path / "repo")
    pkg = Path(shutil.copytree(FIXTURE, tmp_path / "repo/release-notes"))
    with ModelServer(SCENARIOS, api_key=tuple(KEYS.values())) as server:
        env = _env(server.url) | {"GEMINI_API_KEY": KEYS["ANTHROPIC_API_KEY"], "GOOGLE_GEMINI_BASE_URL": server.url}
        done = _sensitivity(pkg, "--engine", "gemini-cli", "--judge", "claude-sonnet-4-6", "--tags", "changelog",
                            "--mutants", "changelog-style/body", "-o", str(tmp_path / "gemini.json"), env=env)
        forced = next(r for r in server.requests if "Add the changelog entry" in json.dumps(r.body)
                      and "@.agents/skills" in json.dumps(r.body))
    assert done.returncode == 0, done.stdout + done.stderr
    how = "its file reference, @.agents/skills/changelog-style/SKILL.md"
    assert f"changelog-entry  FAIL · FAIL · PASS  content helps; routing loses  ({how})" in done.stdout
    assert "HOUSE RULE changelog" in json.dumps(forced.body)  # the SKILL.md, in the first request


def test_copilot_cli_expands_neither_a_skills_name_nor_a_file_reference_under_p(tmp_path: Path) -> None:
    """Why the forced arm says "not forced" on Copilot CLI: a prompt that starts with the skill's
    `/name`, or with an `@` reference to its SKILL.md, reaches the model as it was written,
    without the skill's content."""
    from aam_eval_action.testing.model_server import ModelServer

    installed("copilot")
    for n, invoked in enumerate(("/changelog-style ", "@.agents/skills/changelog-style/SKILL.md ")):
        pkg = Path(shutil.copytree(FIXTURE, tmp_path / f"pkg-{n}"))
        case = pkg / "evals/cases/changelog.yaml"
        case.write_text(case.read_text().replace('prompt: "Add', f'prompt: "{invoked}Add'))
        with ModelServer(SCENARIOS, api_key=tuple(KEYS.values())) as server:
            subprocess.run([sys.executable, "-m", "aam_eval_action", "run", "changelog-entry", "--package", str(pkg),
                            "--engine", "copilot", "--record", "--no-self-check"], env=_env(server.url),
                           capture_output=True, text=True, timeout=300, check=False)
            first = json.dumps(server.requests[0].body)
        assert invoked + "Add the changelog entry" in first and "HOUSE RULE changelog" not in first, invoked
