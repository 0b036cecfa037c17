"""`aam-eval diff [BASE.json] HEAD.json`: what changed between two reports, or one report alone."""

from __future__ import annotations

import gc
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from aam_eval_action.diff import ReportDiff, diff_reports
from aam_eval_action.errors import EXIT_OK, UsageError
from aam_eval_action.report import load_report


def _markdown(d: ReportDiff) -> str:
    from aam_eval_action.render.comment import format_markdown

    return format_markdown(d)


def _text(d: ReportDiff) -> str:
    from aam_eval_action.render.text import format_text

    return format_text(d)


def _json(d: ReportDiff) -> str:
    from aam_eval_action.render.text import format_json

    return format_json(d)


FORMATS: dict[str, Callable[[ReportDiff], str]] = {"text": _text, "markdown": _markdown, "json": _json}


def diff(base: Path | None, head: Path, fmt: str, out: TextIO) -> int:
    """Print the diff of the head report against the base report (None: the head alone) in `fmt`."""
    formatter = FORMATS.get(fmt)
    if formatter is None:
        raise UsageError(f"--format {fmt}: use one of {', '.join(FORMATS)}")
    reports = (load_report(base) if base else None, load_report(head))
    # The reports and the modules loaded so far (some 44,000 objects the garbage collector tracks
    # with two reports of 1,000 cases) live until the process ends: frozen, the collector stops
    # walking them again in each collection the renderer's imports and the render set off, and at exit.
    gc.freeze()
    out.write(formatter(diff_reports(*reports)))
    return EXIT_OK
