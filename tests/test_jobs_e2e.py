"""`--jobs` is the run's one limit: agent sessions, re-executions and judge votes together.

A case's attempts, its arm without the package and a grader's judge votes (together, as one
step) run side by side, each taking one of the run's slots, so workers never sit idle while a case waits on its last
session (bench/bench_vs_runner.py measures what that buys against `claude plugin eval`). The
scripted model server counts the requests it answers at once; a recording checks itself while
its sessions are graded, and an attempt recorded the same as an earlier one is not re-executed
again (that check stands for it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from aam_eval_action.testing.model_server import ModelServer, is_judge, load_scenarios

from conftest import ROOT, aam_eval, example_copy, installed

pytestmark = pytest.mark.cli
SCENARIOS = load_scenarios(ROOT / "examples/scripted-model/csv-tools.yaml")
CASE = "csv-summary-e2e"


def test_attempts_arms_and_votes_share_the_runs_jobs_and_never_exceed_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    installed("claude-code")
    pkg = example_copy(tmp_path / "pkg")
    case = pkg / "evals/cases/01-csv-summary-e2e.yaml"
    doc = yaml.safe_load(case.read_text())
    doc["judge"]["votes"] = 3
    case.write_text(yaml.safe_dump(doc, sort_keys=False))
    with ModelServer(SCENARIOS, latency=0.4) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", server.api_key)
        out = tmp_path / "r.json"
        done = aam_eval("run", CASE, "--package", str(pkg), "--record", "--repeat", "3", "--baseline",
                        "--jobs", "2", "-o", str(out))
        assert out.is_file(), done.out + done.err
        in_flight = server.max_in_flight
        votes = sum(is_judge(r.body) for r in server.requests)
    result = json.loads(out.read_text())["cases"][0]
    assert result["verdict"] == "PASS" and result["baseline_verdict"] == "FAIL", result.get("error")
    # Three attempts with the package and three without, three votes each graded attempt.
    assert len(result["attempts"]) == 3 and votes >= 9
    # Side by side, and never more than --jobs: two sessions at once (a session asks one thing at
    # a time); a grader's three votes are one step, asked together.
    assert in_flight["other"] == 2 and 3 <= in_flight["judge"] <= 2 * 3, in_flight
    cassette = yaml.safe_load((pkg / "evals/cassettes" / CASE / "claude-code.session.yaml").read_text())
    checks = cassette["self_check"]
    # The first recording re-executed; the others, recorded the same, stand on its check.
    assert checks[0].get("runs", 0) >= 1 and checks[0].get("clean") is True, checks
    assert [c.get("same_as") for c in checks[1:]] == [1, 1], checks
    replayed = aam_eval("run", CASE, "--package", str(pkg), "--replay", "--rerun", "--repeat", "3",
                        "-o", str(tmp_path / "again.json"))
    again = json.loads((tmp_path / "again.json").read_text())["cases"][0]
    assert again["verdict"] == "PASS" and [a["verdict"] for a in again["attempts"]] == ["PASS"] * 3, replayed.out
