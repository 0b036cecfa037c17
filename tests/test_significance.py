"""Significance of a base → head change: Fisher's exact test on repeated cases' pass counts,
Newcombe's interval on the pass-rate change, and what the diff and the comment make of them."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from aam_eval_action.diff import diff_reports
from aam_eval_action.engines.base import get_engine
from aam_eval_action.render.comment import render_comment
from aam_eval_action.render.text import format_text
from aam_eval_action.report import Attempt, Report, load_report
from aam_eval_action.stats import fisher_exact, newcombe, wilson
from aam_eval_action.testing.model_server import ModelServer
from aam_eval_action.testing.packages import simple_case, write_package

from conftest import aam_eval


def test_fisher_exact_matches_known_values() -> None:
    assert fisher_exact(5, 0, 1, 4) == pytest.approx(0.047619, abs=1e-6)  # 2 * 6/252
    assert fisher_exact(5, 0, 4, 1) == 1.0
    assert fisher_exact(3, 1, 1, 3) == pytest.approx(0.485714, abs=1e-6)  # the lady tasting tea
    assert fisher_exact(1, 9, 11, 3) == pytest.approx(0.002759, abs=1e-6)  # R's fisher.test
    assert fisher_exact(0, 0, 3, 2) == 1.0


def test_newcombe_interval_matches_the_paper() -> None:
    # Newcombe (1998), example (a): 56/70 vs 48/80, difference 0.2, interval 0.0524 to 0.3339.
    low, high = newcombe(48, 80, 56, 70)
    assert (round(low, 4), round(high, 4)) == (0.0524, 0.3339)
    assert wilson(0, 0) == (0.0, 1.0)


SCENARIO_MATCH = {"solid": "Do the task for solid.", "wobbly": "Do the task for wobbly."}


def _scenarios(judges: dict[str, list[str]]) -> list[dict[str, Any]]:
    return [
        {"match": SCENARIO_MATCH[name], "agent": [{"text": f"done {name}"}],
         "judge": [{"result": r, "reason": f"{name} vote {i}"} for i, r in enumerate(results)]}
        for name, results in judges.items()
    ]


def _run(pkg: Path, out: Path, server: ModelServer, *args: str) -> Report:
    saved = dict(os.environ)
    os.environ.update({"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": server.api_key})
    try:
        result = aam_eval("run", "--package", str(pkg), "-o", str(out), "--repeat", "5", *args)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert out.is_file(), result.out + result.err
    return load_report(out)


@pytest.mark.cli
def test_five_of_five_to_one_is_flagged_and_to_four_is_within_noise(tmp_path: Path) -> None:
    if get_engine("claude-code").available():
        pytest.skip(str(get_engine("claude-code").available()))
    pkg = write_package(tmp_path / "pkg", [simple_case("solid"), simple_case("wobbly")])
    with ModelServer(_scenarios({"solid": ["PASS"], "wobbly": ["PASS"]})) as server:
        base = _run(pkg, tmp_path / "base.json", server, "--record", "--no-self-check", "--jobs", "2")
        sessions = len(server.requests)
    # The head keeps the recorded agent sessions (5 per case) and asks a judge that now wavers.
    for judge in (pkg / "evals/cassettes").glob("*/claude-code.judge.yaml"):
        judge.unlink()
    wavering = {"solid": ["PASS", "FAIL", "FAIL", "FAIL", "FAIL"], "wobbly": ["PASS"] * 4 + ["FAIL"]}
    with ModelServer(_scenarios(wavering)) as server:
        head = _run(pkg, tmp_path / "head.json", server, "--mode", "auto")
        assert all("record_verdict" in json.dumps(r.body) for r in server.requests)  # judge calls only
    assert sessions >= 10
    assert [c.attempts and sum(a.verdict == "PASS" for a in c.attempts) for c in head.cases] == [1, 4]
    diff = diff_reports(base, head)
    by_name = {c.name: c for c in diff.cases}
    # Both sides' counts weighed against the case's history (5/5 when recorded), one-sided.
    assert (by_name["solid"].significant, by_name["solid"].p_value) == (True, 0.0238)
    assert (by_name["wobbly"].significant, by_name["wobbly"].p_value) == (False, 0.5)
    assert by_name["solid"].evidence_text == "regressed: 1/5 now, 5/5 before (p = 0.0238)"
    assert by_name["wobbly"].evidence_text == "flaky: 9/10 over 2 runs; within noise: 4/5 now, 5/5 before"
    assert (diff.regressions, diff.noise_regressions, diff.flaky_regressions) == (1, 1, 0)
    comment = render_comment(diff)
    regressions = comment.split("### Regressions (1)")[1].split("###")[0]
    noise = comment.split("### Within noise (1)")[1].split("###")[0]
    assert "solid" in regressions and "wobbly" not in regressions
    assert "wobbly" in noise and "5/5 → 4/5, within noise" in noise
    assert "5/5 → 1/5, regressed" in regressions and "(p = 0.0238)" in regressions
    assert "Significance needs `repeat`" not in comment
    assert "95% interval of the change" in comment
    assert "1 regressed within noise" in format_text(diff)


def _attempts(passes: int, n: int = 5) -> list[Attempt]:
    return [Attempt(verdict="PASS" if i < passes else "FAIL") for i in range(n)]


def test_without_repeats_significance_is_unknown_and_the_comment_says_so() -> None:
    from support.reports import case, report

    diff = diff_reports(report([case("a"), case("b")]), report([case("a", "FAIL"), case("b")]))
    assert diff.cases[0].significant is None and not diff.repeated
    assert diff.regressions == 1
    comment = render_comment(diff)
    assert "*Significance needs `repeat`: with one attempt per case" in comment
    assert "95% interval" not in comment
    assert diff.pass_rate_delta_ci_pp is not None and diff.pass_rate_delta_ci_pp[0] < 0 < diff.pass_rate_delta_ci_pp[1]


def test_flaky_regression_without_repeats_on_the_base_is_still_flaky() -> None:
    from support.reports import case, report

    base_case = case("a")
    head_case = case("a", "FAIL", flaky=True)
    head_case.attempts = _attempts(1)
    diff = diff_reports(report([base_case]), report([head_case]))
    assert diff.cases[0].significant is None and diff.cases[0].head_passes == "1/5"
    assert (diff.regressions, diff.flaky_regressions) == (0, 1)


def test_reports_without_the_new_fields_still_diff(tmp_path: Path) -> None:
    from support.reports import case, report

    old = report([case("a")]).model_dump(mode="json", exclude_none=True)
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    diff = diff_reports(load_report(path), load_report(path))
    assert diff.head.lift_pp is None and diff.head.trigger_cases is None and not diff.repeated
