"""Terminal output: one line per finished case, a summary table at the end.

Case lines are plain writes (colour only on a terminal, never with NO_COLOR): a run prints
thousands of them. rich draws the summary table; nothing animates, so CI logs stay clean.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import TextIO

from aam_eval_action.report import CaseResult, Report

STYLES = {"PASS": "green", "FAIL": "red", "ERROR": "yellow", "SKIP": "dim"}
ANSI = {"green": "\033[32m", "red": "\033[31m", "yellow": "\033[33m", "dim": "\033[2m"}
TABLE_ROWS = 40


class Console:
    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout
        self.color = _wants_color(self.stream)
        self._lock = threading.Lock()

    def line(self, text: str, style: str | None = None) -> None:
        if self.color and style in ANSI:
            text = f"{ANSI[style]}{text}\033[0m"
        with self._lock:
            self.stream.write(text + "\n")
            self.stream.flush()

    def case(self, r: CaseResult) -> None:
        source = _source(r)
        flaky = "  flaky" if r.flaky else ""
        self.line(f"{r.verdict:<5} {r.name}  {r.duration_seconds:.1f}s  {source}{flaky}",
                  STYLES.get(r.verdict))
        if r.verdict != "PASS" and r.error:
            self.line(f"      {r.error}", "dim")

    def summary(self, report: Report) -> None:
        shown = report.cases
        hidden = 0
        if len(shown) > TABLE_ROWS:  # a long run: the table lists what did not pass
            shown = [c for c in report.cases if c.verdict != "PASS"][:TABLE_ROWS]
            hidden = len(report.cases) - len(shown)
        if shown:
            self._table(shown)
        if hidden:
            self.line(f"({hidden} more case(s) not listed: every passing case, see the report)")
        s = report.summary
        graded = s.graded if s.graded is not None else s.total - s.skipped
        rate = f"{s.passed / graded * 100:.1f}% of {graded} graded" if graded else "none graded"
        missed = f", {s.not_replayable} not replayable" if s.not_replayable else ""
        missed += f" ({s.diverged} diverged)" if s.diverged else ""
        missed += f", {s.rerun} re-executed" if s.rerun else ""
        self.line(
            f"{s.passed}/{s.total} passed ({rate}), {s.failed} failed, {s.errored} errored{missed}, "
            f"{s.replayed} replayed, {report.duration_seconds:.1f}s{_cost(s.cost_usd, s.run_cost_usd)}"
            + ("  [interrupted: partial report]" if report.interrupted else "")
        )

    def _table(self, cases: list[CaseResult]) -> None:
        from rich.console import Console as RichConsole
        from rich.table import Table

        table = Table(show_edge=False)
        for col in ("case", "verdict", "checks", "judge", "time", "source"):
            table.add_column(col)
        for c in cases:
            checks = ", ".join(f"{k}:{v}" for k, v in c.deterministic_checks.items()) or "-"
            judge = c.judge_verdict.result if c.judge_verdict else "-"
            source = _source(c)
            table.add_row(c.name, c.verdict, checks, judge, f"{c.duration_seconds:.1f}s", source,
                          style=STYLES.get(c.verdict) if self.color else None)
        rich = RichConsole(file=self.stream, highlight=False, no_color=not self.color,
                           width=max(100, _width()))
        with self._lock:
            rich.print(table)


def _source(r: CaseResult) -> str:
    """Where the session came from: replayed (snapshot), rerun (re-executed), live."""
    if r.replay_kind == "rerun":
        return f"rerun, live from turn {r.live_from_turn}" if r.live_from_turn else "rerun"
    if r.replay_miss == "diverged":
        return "rerun, diverged"
    return "replayed" if r.replayed else ("live" if r.replayed is False else "-")


def _cost(recorded: float | None, spent: float | None) -> str:
    """`, recorded $0.4224 · this run $0.0000`: a replay spends nothing of what the recording cost."""
    if recorded is None and not spent:
        return ""
    if recorded == spent or recorded is None:
        return f", ${spent or 0:.4f}"
    return f", recorded ${recorded:.4f} · this run ${spent or 0:.4f}"


def _wants_color(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return hasattr(stream, "isatty") and stream.isatty()


def _width() -> int:
    try:
        return os.get_terminal_size().columns
    except OSError:
        return 100
