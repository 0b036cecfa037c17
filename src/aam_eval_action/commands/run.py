"""`aam-eval run`: run (or replay) the cases and write the report (`pipeline/suite.py`)."""

from __future__ import annotations

from aam_eval_action.pipeline.suite import RunArgs, execute
from aam_eval_action.render.console import Console

__all__ = ["RunArgs", "run"]


def run(args: RunArgs, console: Console | None = None) -> int:
    return execute(args, console)[1]
