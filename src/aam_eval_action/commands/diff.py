"""`aam-eval diff BASE.json HEAD.json`: what changed between two reports."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from aam_eval_action.diff import ReportDiff, diff_reports, format_json, format_markdown, format_text
from aam_eval_action.errors import EXIT_OK, UsageError
from aam_eval_action.report import load_report

FORMATS: dict[str, Callable[[ReportDiff], str]] = {
    "text": format_text,
    "markdown": format_markdown,
    "json": format_json,
}


def diff(base: Path, head: Path, fmt: str, out: TextIO) -> int:
    """Print the diff of the head report against the base report in `fmt`."""
    formatter = FORMATS.get(fmt)
    if formatter is None:
        raise UsageError(f"--format {fmt}: use one of {', '.join(FORMATS)}")
    out.write(formatter(diff_reports(load_report(base), load_report(head))))
    return EXIT_OK
