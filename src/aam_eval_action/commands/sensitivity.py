"""`aam-eval sensitivity`: would the suite notice if the package broke? (`sensitivity/`: the
mutants, the runs, the kill matrix; `render/sensitivity*.py`: the matrix drawn)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from aam_eval_action.errors import EXIT_INTERRUPTED, EXIT_OK
from aam_eval_action.fsutil import atomic_write
from aam_eval_action.render.console import Console
from aam_eval_action.render.sensitivity import console_lines, markdown
from aam_eval_action.sensitivity.run import SensitivityArgs, measure
from aam_eval_action.settings import runner_environment

__all__ = ["SensitivityArgs", "sensitivity"]


def sensitivity(args: SensitivityArgs, console: Console | None = None,
                environ: Mapping[str, str] | None = None) -> int:
    environ = runner_environment() if environ is None else environ
    console = console or Console(environ=environ)
    measured = measure(args, console, environ)
    if measured is None:
        return EXIT_OK
    result, stopped = measured
    for text, style in console_lines(result):
        console.line(text, style)
    summary = environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        from aam_eval_action.github.workflow import append

        append(Path(summary), markdown(result))
    if args.html is not None:
        from aam_eval_action.render.sensitivity_html import render_html

        atomic_write(args.html, render_html(result), None)
    return EXIT_INTERRUPTED if stopped else EXIT_OK
