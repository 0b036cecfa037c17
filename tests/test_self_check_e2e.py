"""Recordings that check themselves, with the real CLIs against the scripted model server.

`tests/fixtures/volatile-pkg` has two cases whose agent runs a script:
- `build-status`: its output stamps values no pattern of ours knows, in layouts no pattern of
  ours expects: a duration inline in a `<stats>` block (`checks: 42 duration_ms: 714</stats>`),
  a job id of its own shape (`job: bx…`, 16 characters), a date and time;
- `fortune`: six words picked at random, text no narrow mask may explain away.
Right after recording, each session is re-executed once against its own traffic: the first
case's values are learnt and re-execution stays clean; the second is reported unstable.

Then the releases listed as `# other:` in `requirements/agent-clis.txt` (two Claude Code and a
Gemini CLI release older than the pins) record and re-execute the sub-agent cases, with no
pattern written for them; and Claude Code 2.1.197, whose `Agent` calls return the sub-agents'
answers in the order they finished, records two counters that finish in the other order on
re-execution (`tests/fixtures/subagents-reordered-scenarios.yaml`).
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
from aam_eval_action.render.comment import render_comment
from aam_eval_action.replay.traffic_store import load_masks, store_path
from aam_eval_action.report import load_report
from aam_eval_action.testing.model_server import ModelServer, load_scenarios

from conftest import ROOT, aam_eval
from support.agent_clis import Pin, ensure_release, other_releases
from support.repeats import repeating

pytestmark = pytest.mark.cli
PACKAGE = ROOT / "tests/fixtures/volatile-pkg"
SCENARIOS = load_scenarios(ROOT / "tests/fixtures/volatile-scenarios.yaml")
SUBAGENTS = ROOT / "tests/fixtures/subagents-pkg"
SUBAGENT_SCENARIOS = load_scenarios(ROOT / "tests/fixtures/subagents-scenarios.yaml")
REORDERED_SCENARIOS = load_scenarios(ROOT / "tests/fixtures/subagents-reordered-scenarios.yaml")
KEYS = {"ANTHROPIC_API_KEY": "sk-ant-CANARY-selfcheck-9b1e", "GEMINI_API_KEY": "gemini-CANARY-selfcheck-4c2a"}
ENGINE_OF = {"claude": "claude-code", "gemini": "gemini-cli"}


def _serve(mp: pytest.MonkeyPatch, server: ModelServer) -> None:
    mp.setenv("ANTHROPIC_BASE_URL", server.url)
    mp.setenv("GOOGLE_GEMINI_BASE_URL", server.url)
    for name, value in KEYS.items():
        mp.setenv(name, value)


def _run(pkg: Path, *args: str, scenarios: Any = SCENARIOS) -> tuple[dict[str, Any], str]:
    out = pkg.parent / f"run-{len(list(pkg.parent.glob('run-*.json')))}.json"
    with pytest.MonkeyPatch.context() as mp, ModelServer(scenarios, api_key=tuple(KEYS.values())) as server:
        _serve(mp, server)
        result = aam_eval("run", "--package", str(pkg), *args, "-o", str(out))
    return json.loads(out.read_text()), result.out + result.err


def _cases(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in report["cases"]}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Any], str]]:
    reason = get_engine("claude-code").available()
    if reason:
        pytest.skip(reason)
    pkg = tmp_path_factory.mktemp("self-check") / "pkg"
    shutil.copytree(PACKAGE, pkg)
    report, log = _run(pkg, "--record", "--jobs", "2")
    yield pkg, report, log


def test_the_self_check_learns_volatile_values_no_pattern_was_written_for(recorded: tuple[Path, dict, str]) -> None:
    pkg, report, log = recorded
    case = _cases(report)["build-status"]
    assert case["verdict"] == "PASS", log
    check = case["self_check"]
    assert check["clean"] and check["runs"] == 2, check  # one run learnt, one confirmed
    learnt = " | ".join(check["learnt"])
    assert "a number after `duration_ms: `" in learnt
    assert "a 16-character alphanumeric id after `job: `" in learnt
    assert "a date and time after `at `" in learnt
    # Kept per CLI version in the shared store, named after the case that learnt them.
    cassettes = pkg / "evals/cassettes"
    [store] = (cassettes / "_shared").glob("claude-*.yaml")
    version = store.stem.removeprefix("claude-")
    masks = load_masks(cassettes, "claude", version)
    assert {(m.shape, m.before) for m in masks} == {("number", "duration_ms: "), ("id", "job: "), ("datetime", "at ")}
    assert {m.case for m in masks} == {"build-status"}
    assert "learnt a volatile value: a number after `duration_ms: `" in log
    # A reviewer sees what is ignored: in `check`, and in the report.
    listed = aam_eval("check", "--package", str(pkg)).out
    assert f"ignored on re-execution with claude {version}: a number after `duration_ms: `" in listed
    assert {m["mask"].split(" (seen")[0] for m in report["volatile"]} >= {"a number after `duration_ms: `"}
    assert not any(key in store.read_text() for key in KEYS.values())


def test_re_execution_stays_clean_with_what_was_learnt_and_diverges_without_it(
    recorded: tuple[Path, dict, str], tmp_path: Path
) -> None:
    pkg = tmp_path / "pkg"
    shutil.copytree(recorded[0], pkg)
    for attempt in range(2):
        report, log = _run(pkg, "--replay", "--rerun", "build-status")
        case = _cases(report)["build-status"]
        assert case["verdict"] == "PASS" and case["replay_kind"] == "rerun", \
            f"attempt {attempt + 1}: {(case.get('miss') or {}).get('reason') or case.get('error')}\n{log}"
    # The same recording with the learnt masks taken out of the store diverges on the first of them.
    [store] = (pkg / "evals/cassettes/_shared").glob("claude-*.yaml")
    data = yaml.safe_load(store.read_text())
    del data["volatile"]
    store.write_text(yaml.safe_dump(data))
    report, log = _run(pkg, "--replay", "--rerun", "build-status")
    case = _cases(report)["build-status"]
    assert case["miss"]["kind"] == "diverged", log
    divergence = case["miss"]["divergence"]
    assert divergence["tool"] == "Bash" and "duration_ms: " in divergence["recorded"]


def test_an_unstable_recording_is_reported_and_never_re_executed(
    recorded: tuple[Path, dict, str], tmp_path: Path
) -> None:
    pkg, report, log = recorded
    case = _cases(report)["fortune"]
    assert case["verdict"] == "PASS", log  # graded as recorded
    check = case["self_check"]
    assert not check["clean"] and check["learnt"] == []
    assert "the Bash tool result (python3 fixtures/fortune.py) changed" in check["unstable"]
    assert report["summary"]["unstable"] == 1
    assert "recording unstable, not to be re-executed" in log
    comment = render_comment(diff_reports(None, load_report(pkg.parent / "run-0.json")))
    assert "### Unstable recordings (1)" in comment and "| fortune" in comment
    assert "**1 new recording unstable**" in comment
    assert "unstable recording fortune/claude-code.session.yaml" in aam_eval("check", "--package", str(pkg)).out
    # A pull request that changes the case's script: the recording is not re-executed, and the
    # miss says why instead of showing a divergence on the random words.
    copy = tmp_path / "pkg"
    shutil.copytree(pkg, copy)
    script = copy / "evals/fixtures/fortune.py"
    script.write_text(script.read_text() + "# a comment\n")
    after, log = _run(copy, "--replay", "fortune")
    miss = _cases(after)["fortune"]["miss"]
    assert miss["kind"] == "stale", log
    assert "its recording was unstable when checked against itself" in miss["reason"]
    assert "rerun-ignore" in miss["reason"]


REPEATED_RELEASES = ("@anthropic-ai/claude-code@2.1.330",)
"""Releases that behave as another one shown does (2.1.330 runs its sub-agents in the background,
as 2.1.300 does): bench/bench_repeats.py records and re-executes with them."""


@pytest.mark.parametrize("pin", [p for p in other_releases() if repeating() or p.spec not in REPEATED_RELEASES],
                         ids=lambda p: f"{p.command}-{p.version}")
def test_another_release_records_and_re_executes_sub_agents_with_no_pattern_written_for_it(
    pin: Pin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = ENGINE_OF[pin.command]
    monkeypatch.setenv("PATH", f"{ensure_release(pin)}{os.pathsep}{os.environ['PATH']}")
    pkg = tmp_path / "pkg"
    shutil.copytree(SUBAGENTS, pkg)
    recorded, log = _run(pkg, "--record", "--jobs", "2", "--engine", engine, scenarios=SUBAGENT_SCENARIOS)
    verdicts = {name: c["verdict"] for name, c in _cases(recorded).items()}
    assert verdicts == {"parallel-count": "PASS", "one-counter": "PASS"}, log
    assert all(c["self_check"]["clean"] for c in recorded["cases"]), [c["self_check"] for c in recorded["cases"]]
    assert store_path(pkg / "evals/cassettes", pin.command, pin.version).exists()
    # Re-executed with the same release (bench/bench_versions.py repeats it five times).
    report, log = _run(pkg, "--replay", "--rerun", "--jobs", "2", "--engine", engine, scenarios=SUBAGENT_SCENARIOS)
    seen = {name: (c["verdict"], c.get("replay_kind"), (c.get("miss") or {}).get("reason") or c.get("error"))
            for name, c in _cases(report).items()}
    assert seen == {name: (verdict, "rerun", None) for name, verdict in verdicts.items()}, \
        f"with {pin.spec}: {seen}\n{log}"


def test_sub_agents_finishing_in_another_order_than_recorded_leave_the_recording_clean(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code 2.1.197 waits for its parallel sub-agents and sends their answers as the
    `Agent` results of one request, in the order they finished: two finishing within
    milliseconds of each other come back in either order, and one recording in six was
    unstable ("turn 2: the Agent tool result (…) changed: recorded `3` → now `5`"). Here the
    counters finish in one order when recorded and in the other when re-executed, every time;
    the results are stored and compared in call order, the ids the CLI makes up numbered in it."""
    [pin] = [p for p in other_releases() if p.spec == "@anthropic-ai/claude-code@2.1.197"]
    monkeypatch.setenv("PATH", f"{ensure_release(pin)}{os.pathsep}{os.environ['PATH']}")
    pkg = tmp_path / "pkg"
    shutil.copytree(SUBAGENTS, pkg)
    recorded, log = _run(pkg, "--record", "parallel-count", scenarios=REORDERED_SCENARIOS)
    case = _cases(recorded)["parallel-count"]
    assert case["verdict"] == "PASS", log
    assert case["self_check"]["clean"], case["self_check"]
    # A sub-agent's duration in its `<usage>` block is masked by a pattern: nothing left to learn.
    assert case["self_check"]["learnt"] == [], case["self_check"]
    text = (pkg / "evals/cassettes/parallel-count/claude-code.session.yaml").read_text()
    assert text.index("agentId: $AGENT1") < text.index("agentId: $AGENT2")
    report, log = _run(pkg, "--replay", "--rerun", "parallel-count", scenarios=REORDERED_SCENARIOS)
    case = _cases(report)["parallel-count"]
    assert (case["verdict"], case.get("replay_kind"), case.get("miss")) == ("PASS", "rerun", None), log
