"""A model API outage during a nightly record, on all four engines: an error, never a verdict.

The scripted model server stays down for one case (every request of it, retries too, answered
529 `overloaded_error`) and, for the others, fails the first attempt of every third request (by
turns a 529, a 429, a 500 and a stream cut mid-answer), which the CLIs and the judge's SDK
retry. Recorded with the real CLIs in one run of the engine matrix: the down case is an ERROR
that names what the API said and how often, is not graded and leaves no recording; the others
pass and are recorded. The next `--mode auto` run, with the API back, records that case alone
and leaves every other cassette byte for byte. Judge calls, the simulated user, `init`'s drafts
and `tune`'s proposer are held to the same rule in tests/test_outage.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from aam_eval_action.testing.model_server import is_judge, load_scenarios

from conftest import ROOT, aam_eval, example_copy, installed, scripted_model

pytestmark = pytest.mark.cli
SCENARIOS = load_scenarios(ROOT / "examples/scripted-model/csv-tools.yaml")
KEYS = {"ANTHROPIC_API_KEY": "sk-ant-CANARY-outage-5d1e", "OPENAI_API_KEY": "sk-openai-CANARY-outage-0b7a",
        "GEMINI_API_KEY": "AIza-CANARY-outage-77c3"}
ENGINES = ("claude-code", "codex", "copilot", "gemini-cli")
MATRIX = ("--engine", ",".join(ENGINES))
DOWN = "json-row-count"
DOWN_PROMPT = "How many data rows does fixtures/sales.csv have?"
UP = ("csv-summary-e2e",)
UP_PROMPT = "Summarise fixtures/sales.csv"
SAID = re.compile(r"the model API answered 529 (\w+) (?:\d+ times|twice|once); last at turn 1")
KIND = {"claude-code": "overloaded_error", "codex": "server_error", "copilot": "overloaded_error",
        "gemini-cli": "UNAVAILABLE"}
"""What each API calls a 529, as the scripted server answers it in each wire format."""


def _cassettes(pkg: Path) -> dict[str, bytes]:
    """The cassettes (each case's history, a file of runs, is looked at apart)."""
    root = pkg / "evals/cassettes"
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name not in ("history.jsonl", ".gitattributes")}


def _history_attempts(pkg: Path, case: str) -> int:
    path = pkg / "evals/cassettes" / case / "history.jsonl"
    return sum(json.loads(line)["attempts"] for line in path.read_text().splitlines()) if path.exists() else 0


def test_an_outage_is_an_error_not_a_recording_and_the_next_run_repairs_it(tmp_path: Path) -> None:
    for engine in ENGINES:
        installed(engine)
    pkg = example_copy(tmp_path / "pkg")
    cases = [*UP, DOWN]
    down = {"match": DOWN_PROMPT, "down": {"status": 529, "message": "Overloaded"}}
    with scripted_model([down, *SCENARIOS], KEYS) as server:
        server.flaky = 3
        out = tmp_path / "record.json"
        done = aam_eval("run", *cases, "--package", str(pkg), *MATRIX, "--record", "--jobs", "4",
                        "--timeout", "20", "-o", str(out))
        assert out.is_file(), done.out + done.err
        report = json.loads(out.read_text())
        log = done.out + done.err
        failed_first = len(server.requests)
        recorded = _cassettes(pkg)
        outage_attempts = _history_attempts(pkg, DOWN)
        failed_once = server.flaky_failures
        # The API is back: only the case the outage left unrecorded goes live.
        server.flaky = 0
        server.script.remove(down)
        again_out = tmp_path / "auto.json"
        again = aam_eval("run", *cases, "--package", str(pkg), *MATRIX, "--mode", "auto", "--jobs", "4",
                         "-o", str(again_out))
        asked = server.requests[failed_first:]
    by = {(c["engine"], c["name"]): c for c in report["cases"]}
    for engine in ENGINES:
        case = by[(engine, DOWN)]
        assert case["verdict"] == "ERROR" and case.get("api_down") is True, (engine, case.get("error"), log[-3000:])
        said = SAID.search(case["error"])
        assert said and said.group(1) == KIND[engine], (engine, case["error"])
        assert not case["deterministic_checks"] and case["judge_verdict"]["result"] == "SKIP"
        assert not any(name.startswith(f"{DOWN}/") or f"/{DOWN}." in name or name.startswith(DOWN)
                       for name in recorded if engine in name), (engine, sorted(recorded))
        for name in UP:
            up = by[(engine, name)]
            # A first attempt that failed once is retried, and the session is graded; but Codex
            # 0.169 gives up at once on a 429, and then it too is an outage, never a verdict.
            assert up["verdict"] == "PASS" or (
                engine == "codex" and up.get("api_down") and "429 rate_limit_exceeded once" in up["error"]), (
                engine, name, up.get("error"))
    assert report["summary"]["api_down"] == report["summary"]["errored"] >= len(ENGINES)
    assert "1 not run: the model API was down" in log
    # The retried first attempts: every third request failed once, and the others still passed.
    assert failed_once >= 4 and all(by[(e, UP[0])]["verdict"] == "PASS" for e in ENGINES if e != "codex")
    # The next run: the down case recorded now, on every engine; every other cassette unchanged.
    assert outage_attempts == 0  # an outage is not an attempt: never in the case's history
    assert _history_attempts(pkg, DOWN) == len(ENGINES)
    repaired = json.loads(again_out.read_text())
    now = {(c["engine"], c["name"]): c for c in repaired["cases"]}
    assert {e: now[(e, DOWN)]["verdict"] for e in ENGINES} == dict.fromkeys(ENGINES, "PASS"), again.out[-3000:]
    assert all(now[(e, n)]["replayed"] for e in ENGINES for n in UP if not by[(e, n)].get("api_down"))
    after = _cassettes(pkg)
    assert {k: v for k, v in after.items() if k in recorded} == recorded
    # New: the case the outage kept from running, and any other the API kept from running (a
    # Codex session that got a 429), with the shared store of an engine that recorded nothing.
    not_run = {(e, n) for e in ENGINES for n in (*UP, DOWN) if by[(e, n)].get("api_down")}
    assert set(after) - set(recorded) and all(
        k.startswith("_shared/") or any(k.startswith(f"{n}/{e}.") for e, n in not_run)
        for k in set(after) - set(recorded)), sorted(set(after) - set(recorded))
    # The repair run asked the model only for the sessions not run (the down case, and a Codex
    # session a 429 kept from running, whose prompt is the up case's).
    prompts = [DOWN_PROMPT, *(UP_PROMPT for e, n in not_run if n in UP)]
    assert all(any(p in json.dumps(r.body) for p in prompts) or is_judge(r.body) or not r.body.get("tools")
               for r in asked if r.body)
