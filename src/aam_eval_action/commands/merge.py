"""`aam-eval merge`: join shard reports into one report that diff and the comment treat as one run."""

from __future__ import annotations

from pathlib import Path

from aam_eval_action.errors import EXIT_FAILED, EXIT_OK
from aam_eval_action.fsutil import atomic_write, runner_checkout
from aam_eval_action.report import all_passed, load_report, merge_reports, to_json
from aam_eval_action.settings import runner_environment


def merge(paths: list[Path], output: Path | None) -> int:
    merged = merge_reports([load_report(p) for p in paths])
    text = to_json(merged)
    if output:
        atomic_write(output, text, runner_checkout(runner_environment()))
        print(f"merged {len(paths)} report(s), {merged.summary.total} case(s) into {output}")
    else:
        print(text, end="")
    return EXIT_OK if all_passed(merged) else EXIT_FAILED
