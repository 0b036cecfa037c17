"""Terminal output: one line per finished case, a summary table at the end.

Case lines are plain writes (colour only on a terminal, never with NO_COLOR): a run prints
thousands of them. rich draws the summary table; nothing animates, so CI logs stay clean.
"""

from __future__ import annotations

import io
import os
import sys
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, TextIO

from aam_eval_action.replay.outage import NOT_RUN

if TYPE_CHECKING:
    from aam_eval_action.report import CaseResult, Report, Summary

STYLES = {"PASS": "green", "FAIL": "red", "ERROR": "yellow", "SKIP": "dim"}
ANSI = {"green": "\033[32m", "red": "\033[31m", "yellow": "\033[33m", "dim": "\033[2m"}
TABLE_ROWS = 40


class Console:
    def __init__(
        self, stream: TextIO | None = None, *, environ: Mapping[str, str], workflow_commands: bool = False
    ) -> None:
        """`environ`: the runner's environment (its NO_COLOR and FORCE_COLOR decide the colour).
        `workflow_commands`: the output is read by a GitHub Actions runner, so no printed
        line may start a workflow command (`::…`); set it from the run's settings or context."""
        self.stream = stream or sys.stdout
        self.color = _wants_color(self.stream, environ)
        self.workflow_commands = workflow_commands
        self._lock = threading.Lock()

    def line(self, text: str, style: str | None = None) -> None:
        if self.workflow_commands:
            text = neutralize_commands(text)
        if self.color and style in ANSI:
            text = f"{ANSI[style]}{text}\033[0m"
        with self._lock:
            self.stream.write(text + "\n")
            self.stream.flush()

    def case(self, r: CaseResult) -> None:
        source = _source(r)
        flaky = "  flaky" if r.flaky else ""
        pair = f"  [{r.engine} · {r.model}]" if r.engine else ""
        self.line(f"{r.verdict:<5} {r.shown}{pair}  {r.duration_seconds:.1f}s  {source}{flaky}",
                  STYLES.get(r.verdict))
        if r.verdict != "PASS" and r.error:
            self.line(f"      {r.error}", "dim")
        for check, why in (r.skipped_checks or {}).items():
            self.line(f"      not honoured: {check}: {why}", "dim")
        if r.self_check and r.self_check.unstable:
            self.line(f"      recording unstable, not to be re-executed: {r.self_check.unstable}", "yellow")
        for mask in r.self_check.learnt if r.self_check else []:
            self.line(f"      learnt a volatile value: {mask}", "dim")

    def labelled(self, r: CaseResult) -> None:
        """What human labels and the judge gate did to a finished case's verdict."""
        jv = r.judge_verdict
        if r.label is not None and not r.label.stale and jv is not None and jv.result != r.label.verdict:
            self.line(f"{r.verdict:<5} {r.shown}  overruled by a person ({r.label.by}): the judge said "
                      f"{jv.result}; {r.label.reason}", STYLES.get(r.verdict))
        elif r.label is not None and r.label.stale:
            self.line(f"      {r.shown}: the label by {r.label.by} is stale ({r.label.why_stale}): it no "
                      "longer decides", "dim")
        if r.judge_advisory:
            self.line(f"{r.verdict:<5} {r.shown}  judge FAIL advisory: {r.judge_advisory}",
                      STYLES.get(r.verdict))

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
        for line in vally_lines(report):  # Vally's numbers first, as that runner gives them
            self.line(line)
        if s.score is not None:  # a claude plugin eval suite: that runner's numbers first
            self.line(plugin_eval_line(s))
        graded = s.graded if s.graded is not None else s.total - s.skipped
        rate = f"{s.passed / graded * 100:.1f}% of {graded} graded" if graded else "none graded"
        missed = f" ({s.api_down} not run: {NOT_RUN})" if s.api_down else ""
        missed += f", {s.not_replayable} not replayable" if s.not_replayable else ""
        missed += f" ({s.diverged} diverged)" if s.diverged else ""
        missed += f", {s.rerun} re-executed" if s.rerun else ""
        self.line(
            f"{s.passed}/{s.total} passed ({rate}), {s.failed} failed, {s.errored} errored{missed}, "
            f"{s.replayed} replayed, {report.duration_seconds:.1f}s{_cost(s.cost_usd, s.run_cost_usd)}"
            + ("  [interrupted: partial report]" if report.interrupted else "")
        )
        for extra in measures(s):
            self.line(extra)
        for line in routing_lines(report):
            self.line(line)
        from aam_eval_action.render.crowding import listing_lines, sweep_lines

        for line in listing_lines(report):
            self.line(line, "yellow")
        for line in sweep_lines(report.sweep):
            self.line(line)
        confined = sorted({c.confinement for c in report.cases if c.confinement})
        if confined:
            self.line("sandbox: " + " / ".join(confined))
        if s.max_usd is not None:
            over = f"; {s.over_budget} case(s) not graded (budget)" if s.over_budget else ""
            self.line(f"spent ${s.spent_usd or 0:.4f} of max-usd ${s.max_usd:.4g}{over}")
        if report.labels is not None:
            for line in agreement_lines(report):
                self.line(line)
        if s.unstable:
            self.line(f"{s.unstable} new recording(s) unstable: not re-executed until re-recorded", "yellow")
        for pair in report.pairs or []:
            p = pair.summary
            graded = p.graded if p.graded is not None else p.total - p.skipped
            rate = f"{p.passed / graded * 100:.1f}% of {graded} graded" if graded else "none graded"
            self.line(f"  {pair.engine} · {pair.model}: {p.passed}/{p.total} passed ({rate}), "
                      f"{p.failed} failed, {p.errored} errored"
                      + (f" ({p.api_down} not run: {NOT_RUN})" if p.api_down else ""))

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
            name = f"{c.shown} ({c.engine} · {c.model})" if c.engine else c.shown
            verdict = c.verdict if c.score is None else f"{c.verdict} {c.score:.2f}" + (
                f" Δ{c.delta:+.2f}" if c.delta is not None else "")
            table.add_row(name, verdict, checks, judge, f"{c.duration_seconds:.1f}s", source,
                          style=STYLES.get(c.verdict) if self.color else None)
        buffer = io.StringIO()
        rich = RichConsole(file=buffer, highlight=False, no_color=not self.color,
                           force_terminal=self.color, width=max(100, _width()))
        rich.print(table)
        text = buffer.getvalue().rstrip("\n")
        if self.workflow_commands:
            text = neutralize_commands(text)
        with self._lock:
            self.stream.write(text + "\n")
            self.stream.flush()


_COMMAND_START = ("::", "##[")
ZWSP = "\u200b"


def neutralize_commands(text: str) -> str:
    """Text whose lines can never be read as a workflow command by a GitHub Actions runner.

    The runner reads a line as a command when, after leading whitespace, it starts with
    `::` (or the legacy `##[`); it splits lines at CR as well as LF. Such a line gets an
    invisible zero-width space in front; line breaks of every kind become LF.
    """
    lines = text.splitlines() or [text]
    return "\n".join(ZWSP + line if line.lstrip().startswith(_COMMAND_START) else line
                     for line in lines)


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


def _wants_color(stream: TextIO, environ: Mapping[str, str]) -> bool:
    if environ.get("NO_COLOR"):
        return False
    if environ.get("FORCE_COLOR"):
        return True
    return hasattr(stream, "isatty") and stream.isatty()


def _width() -> int:
    try:
        return os.get_terminal_size().columns
    except OSError:
        return 100


def vally_lines(report: Report) -> list[str]:
    """Each Vally eval: `vally greetings: PASS · score 0.92 ≥ 0.8 · pass rate 100.0% · pass@3 1.00 ·
    pass^3 0.70`."""
    out = []
    for e in report.vally or []:
        score = "every grader must pass"
        if e.scoring_applied and e.threshold is not None:
            sign = "≥" if e.overall_score >= e.threshold else "<"
            score = f"score {e.overall_score:.2f} {sign} {e.threshold:g}"
        k = ""
        if e.k and e.pass_at_k is not None and e.pass_hat_k is not None:
            k = f" · pass@{e.k} {e.pass_at_k:.2f} · pass^{e.k} {e.pass_hat_k:.2f}"
        ran = ""
        if e.stimuli_run != e.stimuli_total:
            ran = f" · {e.stimuli_run} of {e.stimuli_total} stimuli graded"
        out.append(f"vally {e.name}: {'PASS' if e.passed else 'FAIL'} · {score} · pass rate "
                   f"{e.pass_rate * 100:.1f}%{k}{ran}")
    return out


def plugin_eval_line(s: Summary) -> str:
    """That runner's numbers: `claude plugin eval score 0.71, pass rate 25.0%, mean Δ +0.08 (…)`."""
    rate = "" if s.score_pass_rate is None else f", pass rate {s.score_pass_rate * 100:.1f}%"
    delta = "" if s.mean_delta is None else f", mean Δ {s.mean_delta:+.2f} (with the plugin − without)"
    return f"claude plugin eval score {s.score or 0:.2f}{rate}{delta}"


def measures(s: Summary) -> list[str]:
    """The skill's lift and trigger accuracy, when the run measured them."""
    lines = []
    if s.lift_pp is not None and s.baseline_pass_rate is not None:
        lines.append(f"skill lift {s.lift_pp:+.1f} pp (without the skill {s.baseline_pass_rate * 100:.1f}%), "
                     f"{s.skill_not_needed or 0} case(s) pass as well without it")
    if s.trigger_cases:
        def pct(v: float | None) -> str:
            return "n/a" if v is None else f"{v * 100:.1f}%"

        lines.append(f"trigger precision {pct(s.trigger_precision)}, recall {pct(s.trigger_recall)} "
                     f"over {s.trigger_cases} case(s)")
    return lines


def routing_lines(report: Report) -> list[str]:
    """The routing matrix of the trigger cases: one per engine and model in a matrix run."""
    from aam_eval_action.render.routing import text_lines

    if report.pairs:
        parts = [(f"{p.engine} · {p.model}: ", p.summary.routing) for p in report.pairs]
    else:
        parts = [("", report.summary.routing)]
    lines = []
    for label, routing in parts:
        if routing is not None:
            first, *rest = text_lines(routing)
            lines += [label + first, *rest]
    if report.summary.drafted_unreviewed:
        lines.append(f"{report.summary.drafted_unreviewed} drafted case(s) not reviewed yet (aam-eval init "
                     "drafts; set `reviewed: true` in a case's draft once read)")
    return lines


def agreement_lines(report: Report) -> list[str]:
    """One line per judge model on how far it agrees with people, and the labels' effect."""
    labels = report.labels
    if labels is None:
        return []
    lines = []
    for a in labels.agreement:
        kappa = "undefined" if a.kappa is None else f"{a.kappa:.2f}"
        rates = ", ".join(part for part in (
            f"true-pass {a.true_pass_rate:.0%}" if a.true_pass_rate is not None else "",
            f"true-fail {a.true_fail_rate:.0%}" if a.true_fail_rate is not None else "") if part)
        lines.append(f"judge {a.judge_model} agrees with people on {a.agreement:.0%} of {a.labels} labelled "
                     f"output(s), κ {kappa}" + (f" ({rates})" if rates else ""))
    said = f"{labels.decided} verdict(s) decided by people"
    if labels.stale:
        said += f", {len(labels.stale)} stale label(s)"
    return [*lines, f"{said}; judge-gate {labels.gate}"]
