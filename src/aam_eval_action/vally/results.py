"""Vally's numbers from a report, and `results.jsonl` in Vally's shape.

Scoring (https://microsoft.github.io/vally/concepts/scoring/ and reference/scoring-functions/,
0.17): with n trials of a stimulus and c of them passing, pass@k = 1 − C(n−c, k) / C(n, k)
(the unbiased estimator; k = n) and pass^k = (c / n)^k; an eval's multi-trial numbers are the
mean of its stimuli's, "not a pool of raw trial outcomes". An eval passes when the mean of its
stimuli's scores reaches its threshold, or, with none (`scoringApplied: false`), when every
stimulus passed.

`results.jsonl` (no page documents it; the shape public CI scripts read, such as
Azure/azure-sdk-tools' run-summary gate): one `trial-result` line per trial, `itemId`
`<eval>::<stimulus>`, `gradeResult` null for a trial that errored (an infrastructure error, not
a failure); then one `run-summary` line: `passed`, `hadExecutionErrors`, and per eval `name`,
`passed`, `scoringApplied`, `overallScore`, `threshold`, `stimuliRun`, `stimuliTotal`.
"""

from __future__ import annotations

import json
from collections import defaultdict
from math import comb

from aam_eval_action.report_model import CaseResult, Report
from aam_eval_action.vally.report_model import VallyEval


def pass_at_k(n: int, c: int, k: int) -> float:
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    return (c / n) ** k if n else 0.0


def _trials(case: CaseResult) -> list[tuple[str, float | None]]:
    """(verdict, score) of each trial."""
    if case.attempts:
        return [(a.verdict, a.score) for a in case.attempts]
    return [(case.verdict, case.score)]


def evals(results: list[CaseResult]) -> list[VallyEval]:
    grouped: dict[tuple[str, str | None, str | None, str | None], list[CaseResult]] = defaultdict(list)
    for case in results:
        if case.vally is not None:
            grouped[(case.vally.eval, case.file, case.engine, case.model)].append(case)
    out: list[VallyEval] = []
    for (name, file, _, _), cases in grouped.items():
        graded = [c for c in cases if c.verdict != "ERROR"]
        threshold = cases[0].vally.threshold if cases[0].vally else None
        scores = [c.score or 0.0 for c in graded]
        overall = sum(scores) / len(scores) if scores else 0.0
        passed = (
            bool(graded)
            and len(graded) == len(cases)
            and (overall >= threshold if threshold is not None else all(c.verdict == "PASS" for c in graded))
        )
        counts = [(len(t), sum(v == "PASS" for v, _ in t)) for t in (_trials(c) for c in graded)]
        rates = [c / n for n, c in counts if n]
        k = counts[0][0] if counts and len({n for n, _ in counts}) == 1 and counts[0][0] >= 2 else None
        out.append(
            VallyEval(
                name=name,
                file=file or "",
                passed=passed,
                scoring_applied=threshold is not None,
                overall_score=round(overall, 6),
                threshold=threshold,
                stimuli_run=len(graded),
                stimuli_total=len(cases),
                pass_rate=round(sum(rates) / len(rates), 6) if rates else 0.0,
                k=k,
                pass_at_k=round(sum(pass_at_k(n, c, n) for n, c in counts) / len(counts), 6) if k else None,
                pass_hat_k=round(sum(pass_hat_k(n, c, n) for n, c in counts) / len(counts), 6) if k else None,
            )
        )
    return sorted(out, key=lambda e: (e.file, e.name))


def jsonl(report: Report) -> str:
    """`results.jsonl`: a trial-result line per trial of every stimulus, then the run summary."""
    lines: list[dict[str, object]] = []
    errors = False
    for case in report.cases:
        if case.vally is None:
            continue
        for i, (verdict, score) in enumerate(_trials(case)):
            graders = (case.attempts[i].graders if case.attempts else case.graders) or []
            error = verdict == "ERROR"
            errors |= error
            grade = (
                None
                if error
                else {
                    "stimulusName": case.vally.stimulus,
                    "passed": verdict == "PASS",
                    "score": score,
                    "details": [
                        {
                            "name": g.name,
                            "graderType": g.type,
                            "kind": "llm" if g.votes is not None else "code",
                            "passed": g.passed,
                            "evidence": g.explanation,
                        }
                        for g in graders
                        if g.scored
                    ],
                }
            )
            lines.append(
                {
                    "type": "trial-result",
                    "itemId": case.vally.item_id,
                    "evalName": case.vally.eval,
                    "stimulus": case.vally.stimulus,
                    "model": case.model or report.config.model,
                    "trial": i + 1,
                    "status": "error" if error else "success",
                    "durationMs": round((case.duration_seconds or 0) * 1000),
                    "gradeResult": grade,
                    **({"error": case.error} if error and case.error else {}),
                }
            )
    evals_ = report.vally or []
    lines.append(
        {
            "type": "run-summary",
            "passed": bool(evals_) and all(e.passed for e in evals_),
            "hadExecutionErrors": errors,
            "evals": [
                {
                    "name": e.name,
                    "passed": e.passed,
                    "scoringApplied": e.scoring_applied,
                    **(
                        {"overallScore": e.overall_score, "threshold": e.threshold}
                        if e.scoring_applied
                        else {}
                    ),
                    "stimuliRun": e.stimuli_run,
                    "stimuliTotal": e.stimuli_total,
                    "passRate": e.pass_rate,
                    **({"passAtK": e.pass_at_k, "passToTheK": e.pass_hat_k, "k": e.k} if e.k else {}),
                }
                for e in evals_
            ],
        }
    )
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
