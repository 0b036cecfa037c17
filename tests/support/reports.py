"""Small builders of Report objects for tests of the diff and the comment."""

from __future__ import annotations

from aam_eval_action.report import (
    REPORT_VERSION,
    CaseResult,
    CheckResult,
    PackageInfo,
    Report,
    RunConfig,
    Verdict,
    summarize,
)


def case(
    name: str,
    verdict: Verdict = "PASS",
    *,
    target: str | None = "skill:pdf-tools",
    checks: dict[str, CheckResult] | None = None,
    reason: str | None = None,
    error: str | None = None,
    flaky: bool | None = None,
    replay_miss: str | None = None,
    cost: float | None = None,
    line: int | None = 1,
) -> CaseResult:
    """A case result; the judge verdict follows the verdict unless it is ERROR."""
    judged = verdict in ("PASS", "FAIL")
    return CaseResult.model_validate(
        {
            "name": name,
            "target": target,
            "verdict": verdict,
            "duration_seconds": 1.5,
            "deterministic_checks": _checks(verdict) if checks is None else checks,
            "judge_verdict": {"result": verdict, "reason": reason or "", "model": "judge-1"}
            if judged
            else None,
            "error": error,
            "file": f"evals/cases/{name}.yaml",
            "line": line,
            "flaky": flaky,
            "replay_miss": replay_miss,
            "cost_usd": cost,
            "replayed": replay_miss is None,
        }
    )


def report(
    cases: list[CaseResult],
    *,
    duration: float = 60.0,
    run_id: str = "eval-run-2026-02-22T14-30-00Z",
    package: str | None = "@my-org/code-review",
    mode: str | None = "replay",
) -> Report:
    """A report over `cases`, its summary computed as a real run computes it."""
    return Report(
        version=REPORT_VERSION,
        id=run_id,
        timestamp="2026-02-22T14:30:00Z",
        duration_seconds=duration,
        config=RunConfig(engine="claude-code", judge="claude-sonnet-4", model="claude-sonnet-4", mode=mode),
        package=PackageInfo(name=package, version="1.0.0"),
        summary=summarize(cases),
        cases=cases,
    )


def _checks(verdict: Verdict) -> dict[str, CheckResult]:
    return {"contains": "PASS" if verdict == "PASS" else "FAIL"}
