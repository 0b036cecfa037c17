"""Copilot CLI and Gemini CLI through the modes Claude Code and Codex are tested in elsewhere:
`--repeat` recorded and read back attempt by attempt, and `auto` with a key continuing live from
the turn where a pull request's edit made the re-executed session diverge.

The shipped example's `csv-summary-e2e` case, recorded with the real CLI against the scripted
model server with canary keys, on a private copy per engine.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest

from aam_eval_action.replay import agent_cassette
from aam_eval_action.testing.model_server import ModelServer, is_judge, load_scenarios

from conftest import ROOT, aam_eval, example_copy, installed, scripted_model
from support.repeats import repeated

pytestmark = pytest.mark.cli
SCENARIOS = load_scenarios(ROOT / "examples/scripted-model/csv-tools.yaml")
KEYS = {"ANTHROPIC_API_KEY": "sk-ant-CANARY-modes-3e9a", "GEMINI_API_KEY": "AIza-CANARY-modes-81f0"}
ENGINES = {"copilot": ("--engine", "copilot"), "gemini-cli": ("--engine", "gemini-cli", "--model", "gemini-2.5-pro")}
CASE = "csv-summary-e2e"


@pytest.fixture(params=list(ENGINES))
def engine(request: pytest.FixtureRequest) -> str:
    return installed(request.param).name


def serving() -> contextlib.AbstractContextManager[ModelServer]:
    """The scripted model server, the CLIs pointed at it with the canary keys."""
    return scripted_model(SCENARIOS, KEYS)


def _run(pkg: Path, engine: str, *args: str) -> tuple[dict[str, Any], str]:
    out = pkg.parent / f"run-{len(list(pkg.parent.glob('run-*.json')))}.json"
    result = aam_eval("run", CASE, "--package", str(pkg), *ENGINES[engine], *args, "-o", str(out))
    assert out.is_file(), result.out + result.err
    return json.loads(out.read_text())["cases"][0], result.out + result.err


@pytest.fixture(params=repeated(["copilot"], ["gemini-cli"]))  # bench/bench_repeats.py
def attempts_engine(request: pytest.FixtureRequest) -> str:
    """Attempts are kept one by one whatever the engine: shown on Copilot CLI, repeated on Gemini CLI."""
    return installed(request.param).name


def test_repeated_attempts_are_recorded_and_replayed_one_by_one(attempts_engine: str, tmp_path: Path) -> None:
    engine = attempts_engine
    pkg = example_copy(tmp_path / "pkg")
    with serving():
        recorded, _ = _run(pkg, engine, "--record", "--no-self-check", "--repeat", "3")
    assert [a["verdict"] for a in recorded["attempts"]] == ["PASS"] * 3 and recorded["verdict"] == "PASS"
    cassette = agent_cassette.load(agent_cassette.session_path(pkg / "evals/cassettes", CASE, engine))
    assert cassette is not None and len(cassette.attempts) == 3 and len(cassette.model_traffic or []) == 3
    for rerun in ("--no-rerun", "--rerun"):
        replayed, _ = _run(pkg, engine, "--replay", rerun, "--repeat", "3")
        assert [a["verdict"] for a in replayed.get("attempts") or []] == ["PASS"] * 3, replayed.get("error")
        assert replayed["replay_kind"] == ("rerun" if rerun == "--rerun" else "snapshot")
    every = "".join(p.read_text() for p in (pkg / "evals/cassettes").rglob("*.yaml"))
    assert not any(key in every for key in KEYS.values())


def test_auto_with_a_key_continues_live_from_the_diverging_turn(engine: str, tmp_path: Path) -> None:
    pkg = example_copy(tmp_path / "pkg")
    with serving() as server:
        _run(pkg, engine, "--record")
        script = pkg / "skills/csv-summary/scripts/summarize.py"
        script.write_text(script.read_text().replace("Rows: {len(rows)}", "Row count: {len(rows)}"))
        before = len(server.requests)
        case, log = _run(pkg, engine, "--mode", "auto")
        agent_requests = [r for r in server.requests[before:] if not is_judge(r.body)]
    assert case["replay_kind"] == "rerun" and case["live_from_turn"] is not None, case.get("error")
    assert f"rerun, live from turn {case['live_from_turn']}" in log
    # The turns before the divergence came from the recording; only the rest reached the model.
    cassette = agent_cassette.load(agent_cassette.session_path(pkg / "evals/cassettes", CASE, engine))
    assert cassette is not None and cassette.model_traffic
    exchanges = cassette.model_traffic[0]["exchanges"]
    live = [e for e in exchanges if e.get("live")]
    assert agent_requests and 0 < len(live) < len(exchanges)
    assert case["verdict"] in ("PASS", "FAIL")
