"""Re-execute replay through the product, with the real CLIs against the scripted model server.

The shipped example is recorded once per module (`aam-eval run --record`, every case with
claude, csv-summary-e2e with codex, canary API keys); each test edits a private copy the way
a pull request would and runs `aam-eval run --replay` (or `auto`) on it.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from aam_eval_action.diff import diff_reports
from aam_eval_action.engines.base import get_engine
from aam_eval_action.loader import load_package
from aam_eval_action.pipeline.context import CaseContext
from aam_eval_action.pipeline.scheduler import run_all
from aam_eval_action.render.comment import render_comment
from aam_eval_action.replay import agent_cassette
from aam_eval_action.replay.cli_version import installed_version
from aam_eval_action.report import load_report
from aam_eval_action.settings import Overrides, resolve, runner_environment
from aam_eval_action.testing.model_server import ModelServer, is_judge, load_scenarios

from conftest import EXAMPLE, PINNED_CLAUDE, ROOT, Result, aam_eval

pytestmark = pytest.mark.cli
SCENARIOS = load_scenarios(ROOT / "examples/scripted-model/csv-tools.yaml")
CANARIES = {"ANTHROPIC_API_KEY": "sk-ant-CANARY-rerun-51d0", "OPENAI_API_KEY": "sk-openai-CANARY-rerun-77c2"}
CODEX = ("--engine", "codex", "--model", "gpt-5.5")
# Cases that never load the csv-summary skill (its body reaches the model only when loaded).
NOT_LOADING_SKILL = ("changelog-entry", "hook-blocks-env-write", "no-invented-numbers", "scratch-copy-sandbox")


def _need(engine: str) -> None:
    reason = get_engine(engine).available()
    if reason:
        pytest.skip(reason)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Any], str]]:
    """(pristine package, the recording run's report, its log), recorded once per module."""
    _need("claude-code")
    _need("codex")
    pkg = tmp_path_factory.mktemp("rerun") / "pkg"
    shutil.copytree(EXAMPLE, pkg)
    config = pkg / "evals/eval-config.json"
    # The six cases these tests follow, without the no-skill baseline (tested on its own).
    (pkg / "evals/cases/07-json-row-count.yaml").unlink()
    settings = {**json.loads(config.read_text()), "cassettes": "cassettes", "baseline": False}
    config.write_text(json.dumps(settings, indent=2))
    with pytest.MonkeyPatch.context() as mp, ModelServer(SCENARIOS, api_key=tuple(CANARIES.values())) as server:
        _point_at(mp, server)
        first = aam_eval("run", "--package", str(pkg), "--record", "--jobs", "3", "-o", str(pkg.parent / "rec.json"))
        codex = aam_eval("run", "csv-summary-e2e", "--package", str(pkg), "--record", *CODEX,
                         "-o", str(pkg.parent / "rec-codex.json"))
    report = json.loads((pkg.parent / "rec.json").read_text())
    report["codex"] = json.loads((pkg.parent / "rec-codex.json").read_text())
    yield pkg, report, _log(first, codex)


def _point_at(mp: pytest.MonkeyPatch, server: ModelServer) -> None:
    mp.setenv("ANTHROPIC_BASE_URL", server.url)
    mp.setenv("OPENAI_BASE_URL", server.url + "/v1")
    for name, value in CANARIES.items():
        mp.setenv(name, value)


def _log(*results: Result) -> str:
    return "".join(r.out + r.err for r in results)


@pytest.fixture
def pkg(recorded: tuple[Path, dict[str, Any], str], tmp_path: Path) -> Path:
    """A private copy of the recorded package, for a test to edit like a pull request."""
    shutil.copytree(recorded[0], tmp_path / "pkg")
    return tmp_path / "pkg"


def _run(pkg: Path, *args: str) -> tuple[dict[str, Any], str]:
    out = pkg.parent / f"run-{len(list(pkg.parent.glob('run-*.json')))}.json"
    result = aam_eval("run", "--package", str(pkg), *args, "-o", str(out))
    return json.loads(out.read_text()), _log(result)


def _cases(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in report["cases"]}


def _verdicts(report: dict[str, Any]) -> dict[str, tuple[str, dict[str, str], str]]:
    return {c["name"]: (c["verdict"], c["deterministic_checks"], c["judge_verdict"]["result"])
            for c in report["cases"]}


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


# --- identity ----------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ["claude-code", "codex"])
def test_rerun_of_the_recorded_example_is_identical_and_talks_only_to_the_replay_proxy(
    recorded: tuple[Path, dict[str, Any], str], pkg: Path, engine: str
) -> None:
    record = recorded[1] if engine == "claude-code" else recorded[1]["codex"]
    overrides = Overrides(mode="replay", rerun="always", jobs=2, engine=engine,
                          model="gpt-5.5" if engine == "codex" else None)
    package = load_package(pkg)
    selected = [c for c in package.cases if c.case.name in _cases(record)]
    # A tripwire as the configured upstream: nothing may reach it, nor anything else.
    with ModelServer() as tripwire:
        environ = {"PATH": os.environ["PATH"], "ANTHROPIC_BASE_URL": tripwire.url,
                   "OPENAI_BASE_URL": tripwire.url + "/v1"}
        settings = resolve(package, overrides, environ)
        outcomes, _ = run_all(CaseContext.for_run(settings), selected, lambda r: None)
    assert tripwire.requests == [] and tripwire.connections == set()

    same = 0
    for outcome in outcomes:
        name, result, session = outcome.result.name, outcome.result, outcome.session
        cassette = agent_cassette.load(agent_cassette.session_path(pkg / "evals/cassettes", name, engine))
        assert cassette is not None and session is not None, result.error
        old = cassette.attempts[0]
        want = _cases(record)[name]
        assert result.replay_kind == "rerun" and result.replay_miss is None, result.error
        assert (result.verdict, result.deterministic_checks) == (want["verdict"], want["deterministic_checks"])
        assert result.judge_verdict and result.judge_verdict.result == want["judge_verdict"]["result"]
        assert session.output == old.output
        assert [(f.path, f.status, f.sha256) for f in session.files] == [(f.path, f.status, f.sha256) for f in old.files]
        assert [c.name for c in session.tool_calls] == [c.name for c in old.tool_calls]
        same += 1
    assert same == len(selected) == (6 if engine == "claude-code" else 1)


# --- what a pull request changes ---------------------------------------------------------------


def test_unloaded_skill_edit_is_stale_as_a_snapshot_and_keeps_its_verdict_when_rerun(
    recorded: tuple[Path, dict[str, Any], str], pkg: Path
) -> None:
    skill = pkg / "skills/csv-summary/SKILL.md"
    skill.write_text(skill.read_text() + "\nMention the file name in the first line of the summary.\n")
    snapshot, _ = _run(pkg, "--replay", "--no-rerun")
    assert {c["replay_miss"] for c in snapshot["cases"]} == {"stale"}

    rerun, log = _run(pkg, "--replay")
    cases, before = _cases(rerun), _verdicts(recorded[1])
    for name in NOT_LOADING_SKILL:
        assert cases[name]["replay_kind"] == "rerun" and "replay_miss" not in cases[name], cases[name]
        assert _verdicts(rerun)[name] == before[name]
    for name in ("csv-summary-e2e", "average-revenue"):  # these load the skill: its body changed
        miss = cases[name]["miss"]
        assert miss["kind"] == "diverged" and miss["divergence"]["turn"] == 2
        assert (miss["divergence"]["tool"], miss["divergence"]["tool_input"]) == ("Skill", "csv-summary")
        assert "Mention the file name" in miss["divergence"]["live"]
        assert miss["changes"] == ["skill file skills/csv-summary/SKILL.md changed"]
    assert rerun["summary"]["graded"] == 4 and rerun["summary"]["diverged"] == 2
    assert "rerun, diverged" in log and "4 re-executed" in log

    # The PR comment: verdicts for every case that did not load the skill, diverged ones apart.
    head_path = pkg.parent / "head.json"
    head_path.write_text(json.dumps(rerun))
    base_path = pkg.parent / "base.json"
    base_path.write_text(json.dumps({k: v for k, v in recorded[1].items() if k != "codex"}))
    base = load_report(base_path)
    diff = diff_reports(base, load_report(head_path))
    comment = render_comment(diff)
    assert diff.counts["diverged"] == 2 and diff.counts["stale"] == 0 and diff.regressions == 0
    assert "Pass rate 50.0% → 50.0% (+0.0 pp)" in comment
    assert "**2 cases diverged on re-execution**" in comment
    section = comment.split("### Diverged on re-execution (2)", 1)[1].split("###", 1)[0]
    assert "| average-revenue" in section and "| csv-summary-e2e" in section
    assert "| 2 | Skill tool result: csv-summary |" in section and "Mention the file name" in section
    assert "skill file skills/csv-summary/SKILL.md changed" in section
    assert "aam-eval run csv-summary-e2e --record" in section
    graded = comment.split("<summary>Still failing (2)</summary>", 1)[1]
    assert "Unchanged (2)" in graded
    for name in NOT_LOADING_SKILL:
        verdict = _cases(rerun)[name]["verdict"]
        assert f"| {name}<br>" in graded and f"{verdict} → {verdict}" in graded.split(f"| {name}<br>", 1)[1]


def test_a_hook_that_no_longer_blocks_diverges_at_the_write(pkg: Path) -> None:
    _edit(pkg / "hooks/protect_secrets.py", "    sys.exit(2)", "    sys.exit(0)")
    report, log = _run(pkg, "--replay", "hook-blocks-env-write", "changelog-entry")
    cases = _cases(report)
    assert cases["changelog-entry"]["verdict"] == "PASS" and cases["changelog-entry"]["replay_kind"] == "rerun"
    hook = cases["hook-blocks-env-write"]
    found = hook["miss"]["divergence"]
    assert (hook["verdict"], hook["replay_miss"], found["turn"], found["tool"]) == ("ERROR", "diverged", 2, "Write")
    assert found["tool_input"] == "$WORKSPACE/.env"
    assert found["recorded"].startswith("PreToolUse:Write hook error")
    assert "hook error" not in found["live"]
    assert "since recording: package file hooks/protect_secrets.py changed" in hook["error"]
    assert "turn 2: the Write tool result ($WORKSPACE/.env) changed" in log
    comment = render_comment(diff_reports(None, load_report(_write(pkg, report))))
    assert "| 2 | Write tool result: &#36;WORKSPACE/.env | PreToolUse:Write hook error" in comment


def _write(pkg: Path, report: dict[str, Any]) -> Path:
    path = pkg.parent / "report.json"
    path.write_text(json.dumps(report))
    return path


@pytest.mark.parametrize("engine", ["claude-code", "codex"])
def test_a_changed_script_diverges_naming_its_tool_call(pkg: Path, engine: str) -> None:
    _edit(pkg / "skills/csv-summary/scripts/summarize.py", "Rows: {len(rows)}", "Row count: {len(rows)}")
    extra = CODEX if engine == "codex" else ()
    report, _ = _run(pkg, "--replay", "csv-summary-e2e", *extra)
    case = _cases(report)["csv-summary-e2e"]
    found = case["miss"]["divergence"]
    assert case["replay_miss"] == "diverged", case.get("error")
    assert "summarize.py" in found["tool_input"]
    assert "Rows: 3" in found["recorded"] and "Row count: 3" in found["live"]
    assert "since recording: skill file skills/csv-summary/scripts/summarize.py changed" in case["error"]


# --- continue-live -----------------------------------------------------------------------------


def test_auto_with_a_key_continues_live_from_the_diverging_turn(pkg: Path) -> None:
    _edit(pkg / "hooks/protect_secrets.py", "    sys.exit(2)", "    sys.exit(0)")
    path = agent_cassette.session_path(pkg / "evals/cassettes", "hook-blocks-env-write", "claude-code")
    before = agent_cassette.load(path)
    assert before is not None and before.model_traffic
    recorded_turns = sum(e["stream"] == "agent" for e in before.model_traffic[0]["exchanges"])
    with pytest.MonkeyPatch.context() as mp, ModelServer(SCENARIOS, api_key=tuple(CANARIES.values())) as server:
        _point_at(mp, server)
        report, log = _run(pkg, "hook-blocks-env-write")
        agent_requests = [r for r in server.requests if "tools" in r.body and not is_judge(r.body)]
    case = _cases(report)["hook-blocks-env-write"]
    assert case["replay_kind"] == "rerun" and case["live_from_turn"] == 2
    # Turn 1 came from the recording; exactly the remaining turns went to the model.
    assert len(agent_requests) == recorded_turns - 1 == 1
    assert 0 < case["run_cost_usd"] < case["cost_usd"]
    assert case["deterministic_checks"]["agent_blocked"] == "FAIL"  # the real, new outcome
    assert "rerun, live from turn 2" in log
    after = agent_cassette.load(path)
    assert after is not None and after.model_traffic and after.fingerprint != before.fingerprint
    assert [e.get("live", False) for e in after.model_traffic[0]["exchanges"]] == [False, True]
    assert _cases(_run(pkg, "--replay", "hook-blocks-env-write")[0])["hook-blocks-env-write"]["replay_kind"] == "snapshot"


def test_codex_continues_live_from_the_diverging_turn_too(pkg: Path) -> None:
    _edit(pkg / "skills/csv-summary/scripts/summarize.py", "Rows: {len(rows)}", "Row count: {len(rows)}")
    with pytest.MonkeyPatch.context() as mp, ModelServer(SCENARIOS, api_key=tuple(CANARIES.values())) as server:
        _point_at(mp, server)
        report, log = _run(pkg, "csv-summary-e2e", *CODEX)
        agent_requests = [r for r in server.requests if "tools" in r.body and not is_judge(r.body)]
    case = _cases(report)["csv-summary-e2e"]
    assert case["replay_kind"] == "rerun" and case["live_from_turn"] == 3, case.get("error")
    assert len(agent_requests) == 1  # turns 1 and 2 from the recording, turn 3 live
    # Graded on the new, live outcome (the case's checks look for the old "Rows:" wording).
    assert case["verdict"] in ("PASS", "FAIL") and "rerun, live from turn 3" in log


def test_auto_saves_a_reverified_cassette_so_the_next_run_reads_the_snapshot(pkg: Path) -> None:
    _edit(pkg / "hooks/protect_secrets.py", "    sys.exit(2)", "    sys.exit(0)")
    store = pkg / "evals/cassettes/_shared" / f"claude-{PINNED_CLAUDE}.yaml"
    before = store.read_bytes()
    first, _ = _run(pkg, "changelog-entry")  # auto, no key: nothing may go live
    assert _cases(first)["changelog-entry"]["replay_kind"] == "rerun"
    assert _cases(first)["changelog-entry"]["verdict"] == "PASS"
    again, _ = _run(pkg, "--replay", "changelog-entry")
    case = _cases(again)["changelog-entry"]
    assert case["replay_kind"] == "snapshot" and case["verdict"] == "PASS", case.get("error")
    assert case["judge_verdict"]["replayed"] is True
    assert store.read_bytes() == before  # the same traffic: the shared store is untouched


# --- version pinning ---------------------------------------------------------------------------


def test_a_recording_of_another_cli_version_is_a_clear_error(pkg: Path) -> None:
    for store in (pkg / "evals/cassettes/_shared").glob("claude-*.yaml"):
        store.rename(store.with_name("claude-0.0.1.yaml"))
    for path in (pkg / "evals/cassettes").glob("*/claude-code.session.yaml"):
        data = yaml.safe_load(path.read_text())
        data["model_traffic"][0]["cli_version"] = "0.0.1"
        path.write_text(yaml.safe_dump(data))
    installed = installed_version("claude", runner_environment())
    forced, _ = _run(pkg, "--replay", "--rerun", "changelog-entry")
    error = _cases(forced)["changelog-entry"]["error"]
    assert f"recorded with claude 0.0.1 but claude {installed} is on PATH" in error
    assert "@anthropic-ai/claude-code@0.0.1" in error and "--no-rerun" in error

    _edit(pkg / "hooks/protect_secrets.py", "    sys.exit(2)", "    sys.exit(0)")
    auto, _ = _run(pkg, "--replay", "changelog-entry")
    case = _cases(auto)["changelog-entry"]
    assert case["replay_miss"] == "stale"
    assert f"re-execute needs claude 0.0.1 on PATH, claude {installed} is" in case["error"]


# --- secrets -----------------------------------------------------------------------------------


def test_canary_keys_are_in_no_cassette_report_or_log(recorded: tuple[Path, dict[str, Any], str], pkg: Path) -> None:
    _edit(pkg / "hooks/protect_secrets.py", "    sys.exit(2)", "    sys.exit(0)")
    with pytest.MonkeyPatch.context() as mp, ModelServer(SCENARIOS, api_key=tuple(CANARIES.values())) as server:
        _point_at(mp, server)
        report, log = _run(pkg, "hook-blocks-env-write")  # continue-live with the canary key
        assert any(CANARIES["ANTHROPIC_API_KEY"] in str(r.headers) for r in server.requests)
    written = [p for p in pkg.parent.rglob("*") if p.is_file() and p.suffix in (".yaml", ".json")]
    assert any("_shared" in p.parts for p in written) and report
    text = "\n".join(p.read_text() for p in written) + log + recorded[2]
    for canary in CANARIES.values():
        assert canary not in text


# --- tolerated differences ---------------------------------------------------------------------


def test_rerun_ignore_tolerates_a_difference_the_author_declares_volatile(pkg: Path) -> None:
    _edit(pkg / "evals/fixtures/sales.csv", "east,15,402.25", "east,15,402.30")
    report, _ = _run(pkg, "--replay", "no-invented-numbers")
    found = _cases(report)["no-invented-numbers"]["miss"]["divergence"]
    assert (found["turn"], found["tool"], found["tool_input"]) == (2, "Bash", "cat fixtures/sales.csv")

    config = pkg / "evals/eval-config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "rerun-ignore": [r"east,15,[\d.]+"]}))
    report, _ = _run(pkg, "--replay", "no-invented-numbers")
    case = _cases(report)["no-invented-numbers"]
    assert case["replay_kind"] == "rerun" and case["verdict"] == "FAIL", case.get("error")
    assert case["judge_verdict"]["result"] == "FAIL" and case["judge_verdict"]["replayed"] is True



def test_a_git_repository_above_the_workspaces_changes_nothing(
    pkg: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Workspaces in a temp folder inside a checkout (a `.git` above them): the CLIs still see a
    workspace that is no git repository, as when the cassettes were recorded."""
    import subprocess
    import tempfile

    above = tmp_path / "checkout"
    (above / "tmp").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(above)], check=True)
    monkeypatch.setattr(tempfile, "tempdir", str(above / "tmp"))
    report, _ = _run(pkg, "--replay", "--rerun", "changelog-entry", "scratch-copy-sandbox")
    for case in report["cases"]:
        assert case.get("replay_kind") == "rerun" and not case.get("miss"), case.get("error")
    assert not any(above.joinpath("tmp").iterdir())  # the workspaces went elsewhere
