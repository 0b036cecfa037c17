"""Terminal output: one line per finished case, a summary table at the end.

rich honours NO_COLOR and prints no live widgets here, so output stays plain in CI logs.
"""

from __future__ import annotations

import sys
from typing import TextIO

from aam_eval_action.report import CaseResult, Report

STYLES = {"PASS": "green", "FAIL": "red", "ERROR": "yellow", "SKIP": "dim"}


class Console:
    def __init__(self, stream: TextIO | None = None) -> None:
        from rich.console import Console as RichConsole

        self._rich = RichConsole(file=stream or sys.stdout, highlight=False, soft_wrap=True)

    def line(self, text: str, style: str | None = None) -> None:
        self._rich.print(text, style=style, markup=False)

    def case(self, r: CaseResult) -> None:
        source = "replayed" if r.replayed else ("live" if r.replayed is False else "-")
        text = f"{r.verdict:<5} {r.name}  {r.duration_seconds:.1f}s  {source}"
        self.line(text, STYLES.get(r.verdict))
        if r.verdict != "PASS" and r.error:
            self.line(f"      {r.error}", "dim")

    def summary(self, report: Report) -> None:
        from rich.table import Table

        table = Table(title=None, show_edge=False)
        for col in ("case", "verdict", "checks", "judge", "time", "source"):
            table.add_column(col)
        for c in report.cases:
            checks = ", ".join(f"{k}:{v}" for k, v in c.deterministic_checks.items()) or "-"
            judge = c.judge_verdict.result if c.judge_verdict else "-"
            source = "replayed" if c.replayed else ("live" if c.replayed is False else "-")
            table.add_row(c.name, c.verdict, checks, judge, f"{c.duration_seconds:.1f}s", source,
                          style=STYLES.get(c.verdict))
        self._rich.print(table)
        s = report.summary
        cost = f", ${s.cost_usd:.4f}" if s.cost_usd is not None else ""
        self.line(
            f"{s.passed}/{s.total} passed ({s.pass_rate * 100:.1f}%), {s.failed} failed, "
            f"{s.errored} errored, {s.replayed} replayed, {report.duration_seconds:.1f}s{cost}"
            + ("  [interrupted: partial report]" if report.interrupted else "")
        )
