"""`max-usd` with the real Claude Code CLI against the scripted model server.

Five cases are recorded once (what each cost is in its cassette); then the package's skill
changes, so all five are stale, and `auto` would record them again live. A cap below one case's
estimate sends nothing; a cap for two of them runs two, and the rest are not graded (budget).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aam_eval_action.diff import diff_reports
from aam_eval_action.engines.base import get_engine
from aam_eval_action.render.comment import render_comment
from aam_eval_action.report import load_report
from aam_eval_action.testing.model_server import ModelServer
from aam_eval_action.testing.packages import simple_case, write_package

from conftest import aam_eval

pytestmark = pytest.mark.cli
KEY = "sk-ant-CANARY-budget-3e7d"
NAMES = [f"task-{i}" for i in range(5)]
SCENARIOS = [{"match": f"task for {name}.", "agent": [{"text": f"done: finished the task for {name}."}],
              "judge": {"result": "PASS", "reason": "It says it finished."}} for name in NAMES]


def _run(pkg: Path, *args: str) -> tuple[dict[str, Any], str, int, str]:
    """(report, log, model requests the server received, exit code and comment)."""
    out = pkg.parent / f"run-{len(list(pkg.parent.glob('run-*.json')))}.json"
    with pytest.MonkeyPatch.context() as mp, ModelServer(SCENARIOS, api_key=KEY) as server:
        mp.setenv("ANTHROPIC_BASE_URL", server.url)
        mp.setenv("ANTHROPIC_API_KEY", KEY)
        result = aam_eval("run", "--package", str(pkg), *args, "-o", str(out))
        requests = len(server.requests)
    comment = render_comment(diff_reports(None, load_report(out)))
    assert KEY not in out.read_text() + comment + result.out + result.err
    return json.loads(out.read_text()), result.out + result.err, requests, f"{result.code}\n{comment}"


@pytest.fixture(scope="module")
def stale(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Five recorded cases, all stale since: the skill they load changed."""
    reason = get_engine("claude-code").available()
    if reason:
        pytest.skip(reason)
    pkg = tmp_path_factory.mktemp("budget") / "pkg"
    write_package(pkg, [simple_case(n, expected={"contains": ["done"]}) for n in NAMES],
                  config={"cassettes": "cassettes", "model": "claude-sonnet-4-6"},
                  files={"skills/tasks/SKILL.md": "---\nname: tasks\ndescription: Does tasks.\n---\nDo it.\n"})
    report, log, _, _ = _run(pkg, "--record", "--no-self-check", "--jobs", "2")
    assert [c["verdict"] for c in report["cases"]] == ["PASS"] * 5, log
    assert all(c["cost_usd"] for c in report["cases"])
    skill = pkg / "skills/tasks/SKILL.md"
    skill.write_text(skill.read_text() + "Do it well.\n")
    yield pkg


def _copy(stale: Path, tmp_path: Path) -> Path:
    shutil.copytree(stale, tmp_path / "pkg")
    return tmp_path / "pkg"


def test_a_cap_below_one_cases_cost_sends_nothing_and_grades_nothing(stale: Path, tmp_path: Path) -> None:
    pkg = _copy(stale, tmp_path)
    report, log, requests, comment = _run(pkg, "--mode", "auto", "--no-rerun", "--max-usd", "0.001", "--jobs", "2")
    assert requests == 0, log  # not one paid call
    cases = report["cases"]
    assert [c["verdict"] for c in cases] == ["SKIP"] * 5
    for case in cases:
        budget = case["budget"]
        assert budget["basis"] == "recording" and budget["estimate_usd"] > budget["cap_usd"] == 0.001
        assert case["error"].startswith("not graded (budget): estimated $")
    summary = report["summary"]
    assert summary["over_budget"] == 5 and summary["max_usd"] == 0.001 and summary["spent_usd"] == 0
    assert summary["failed"] == 0 and summary["errored"] == 0
    code, body = comment.split("\n", 1)
    assert code == "0"  # nothing failed: not graded is not failed
    assert "none of the 5 cases was graded" in body and "5 not graded (budget)" in body
    assert "<summary>Not graded: budget (5 cases)</summary>" in body
    assert "spent $0.0000 of max-usd $0.001; 5 case(s) not graded (budget)" in log
    # Nothing was recorded over the stale cassettes either.
    assert not any("Do it well" in p.read_text() for p in (pkg / "evals/cassettes").rglob("*.yaml"))


def test_a_cap_for_two_of_five_stale_cases_runs_two(stale: Path, tmp_path: Path) -> None:
    pkg = _copy(stale, tmp_path)
    probe, _, _, _ = _run(pkg, "--mode", "auto", "--no-rerun", "--max-usd", "0.001")
    estimates = [c["budget"]["estimate_usd"] for c in probe["cases"]]
    cap = round(max(estimates) * 2.5, 4)
    report, log, requests, comment = _run(pkg, "--mode", "auto", "--no-rerun", "--max-usd", str(cap), "--jobs", "3")
    verdicts = [c["verdict"] for c in report["cases"]]
    assert sorted(verdicts) == ["PASS", "PASS", "SKIP", "SKIP", "SKIP"], log
    ran = [c for c in report["cases"] if c["verdict"] == "PASS"]
    assert all(c["replay_kind"] == "live" for c in ran) and requests > 0
    summary = report["summary"]
    assert summary["over_budget"] == 3 and summary["max_usd"] == cap
    assert 0 < summary["spent_usd"] <= cap
    assert summary["spent_usd"] == pytest.approx(sum(c["run_cost_usd"] for c in ran), abs=0.02)
    for case in report["cases"]:
        if case["verdict"] == "SKIP":
            assert case["budget"]["left_usd"] < case["budget"]["estimate_usd"]
    code, body = comment.split("\n", 1)
    assert code == "0"
    assert "**3 cases not graded (budget)**" in body and f"max-usd ${cap:.4f}" in body
    assert "· 2 passed · 0 failed · 0 errored · 3 skipped" in body
    assert "<summary>Not graded: budget (3 cases)</summary>" in body
