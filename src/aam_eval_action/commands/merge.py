"""`aam-eval merge`: join shard reports into one report that diff and the comment treat as one run."""

from __future__ import annotations

from pathlib import Path

from aam_eval_action.errors import EXIT_FAILED, EXIT_OK, UsageError
from aam_eval_action.fsutil import atomic_write
from aam_eval_action.report import Report, load_report, summarize, to_json


def merge_reports(reports: list[Report]) -> Report:
    """Cases of all shards (a case in two shards is an error), summary recomputed."""
    if not reports:
        raise UsageError("merge needs at least one report")
    seen: dict[str, int] = {}
    cases = []
    for i, report in enumerate(reports):
        for case in report.cases:
            if case.name in seen:
                raise UsageError(
                    f"case {case.name!r} is in shard reports {seen[case.name] + 1} and {i + 1}; "
                    "merge reports of disjoint shards of one run"
                )
            seen[case.name] = i
            cases.append(case)
    first = min(reports, key=lambda r: r.timestamp)
    merged = first.model_copy(deep=True)
    merged.cases = sorted(cases, key=lambda c: c.name)
    merged.summary = summarize(merged.cases)
    # Shards run side by side: the run took as long as its slowest shard.
    merged.duration_seconds = max(r.duration_seconds for r in reports)
    if any(r.interrupted for r in reports):
        merged.interrupted = True
    return merged


def merge(paths: list[Path], output: Path | None) -> int:
    merged = merge_reports([load_report(p) for p in paths])
    text = to_json(merged)
    if output:
        atomic_write(output, text)
        print(f"merged {len(paths)} report(s), {merged.summary.total} case(s) into {output}")
    else:
        print(text, end="")
    ok = all(c.verdict in ("PASS", "SKIP") for c in merged.cases)
    return EXIT_OK if ok else EXIT_FAILED
