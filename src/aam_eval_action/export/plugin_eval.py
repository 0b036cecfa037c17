"""A report of ours as `claude plugin eval`'s `aggregate-result.json` (its `--json` output), for
the tools that read that file: its `claude plugin eval` cases, each run with its score and its
graders, in each arm, and the suite's aggregates.

What a report of ours does not hold is written as that runner writes it when it has nothing:
`turns` 0, `tracePath` "", `judgeCostUsd` 0. The cases' own fields (prompt, graders, runs,
timeout, turn limit) are read from the package the report ran on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aam_eval_action.report import Attempt, CaseResult, GraderOutcome, Report

SCHEMA_VERSION = 1
DEFAULT_TIMEOUT, DEFAULT_TURNS = 300, 10


def aggregate(report: Report, root: Path | None) -> dict[str, Any]:
    """The aggregate result of the report's `claude plugin eval` cases."""
    from aam_eval_action.importers import claude_plugin_eval as cpe

    threshold = report.config.threshold if report.config.threshold is not None else 1.0
    cases = []
    for case in report.cases:
        if case.score is None:
            continue
        folder = (case.file or "").rsplit("/", 1)[0]
        read = None
        if root is not None and folder:
            try:
                read = cpe.read_case(root, folder)
            except Exception:
                read = None
        cases.append(_case(case, folder, read, report))
    deltas = [c["aggregates"]["delta"] for c in cases if "delta" in c["aggregates"]]
    scores = [c["aggregates"]["score"] for c in cases]
    out: dict[str, Any] = {
        "schemaVersion": SCHEMA_VERSION,
        "claudeVersion": report.config.engine_version or "",
        "startedAt": report.timestamp,
        "durationSeconds": round(report.duration_seconds),
        "costUsd": report.summary.cost_usd or 0.0,
        "partial": bool(report.interrupted),
        "suite": {
            "root": str(root) if root else report.config.package_path or "",
            "ablation": report.config.ablation or "none",
            "threshold": threshold,
            "plugins": [{"name": report.package.name, "version": report.package.version,
                         "path": report.config.package_path or ""}],
        },
        "cases": cases,
        "aggregates": {
            "casesTotal": len(cases),
            "casesPassed": sum(1 for s in scores if s >= threshold),
            "overallScore": sum(scores) / len(scores) if scores else 0,
            "overallPassRate": sum(c["aggregates"]["passRate"] for c in cases) / len(cases) if cases else 0,
        },
    }
    if deltas:
        out["aggregates"]["meanDelta"] = sum(deltas) / len(deltas)
    return out


def _case(case: CaseResult, folder: str, read: Any, report: Report) -> dict[str, Any]:
    graders = list(read.graders) if read is not None else []
    fields = read.imported.case if read is not None else None
    written = "prose" if (case.file or "").endswith(".md") else "case_yaml"
    out: dict[str, Any] = {
        "name": case.shown,
        "dir": folder,
        "source": read.source if read is not None else written,
        "promptMarkdown": fields.input.prompt if fields else "",
        "runsPerCase": len(case.run_scores or [case.score]),
        "timeoutSeconds": int(fields.timeout) if fields and fields.timeout else DEFAULT_TIMEOUT,
        "maxTurns": DEFAULT_TURNS,
        "graders": [{"name": g.name, "type": g.type, "weight": g.weight, "config": g.config()}
                    for g in graders],
        "arms": {"with": _runs(case.attempts, case.score, case.graders, case)},
        "aggregates": {"score": case.score, "passRate": case.pass_rate},
    }
    if case.score_without is not None:
        out["arms"]["without"] = _runs(case.baseline_attempts, case.score_without, case.graders_without, case)
        out["aggregates"] |= {"scoreWithout": case.score_without, "passRateWithout": case.pass_rate_without}
        if case.delta is not None:
            out["aggregates"]["delta"] = case.delta
    return out


def _runs(attempts: list[Attempt] | None, score: float | None, graders: list[GraderOutcome] | None,
          case: CaseResult) -> list[dict[str, Any]]:
    if attempts:
        return [_run(a.score or 0.0, a.graders or [], a.error, case) for a in attempts]
    return [_run(score or 0.0, graders or [], case.error if (score or 0) < 1 else None, case)]


def _run(score: float, graders: list[GraderOutcome], error: str | None, case: CaseResult) -> dict[str, Any]:
    graded_error = error if not graders else None  # a run that was not graded says why
    return {
        "score": score, "passed": score >= 1, "turns": 0, "costUsd": 0.0, "judgeCostUsd": 0,
        "error": graded_error, "tracePath": "", "skippedPaidGraders": False,
        "graders": [{"name": g.name, "passed": g.passed, "weight": g.weight, "explanation": g.explanation,
                     "withOnly": g.with_only, "scored": g.scored,
                     **({"judgeVotes": g.votes} if g.votes is not None else {})} for g in graders],
    }
