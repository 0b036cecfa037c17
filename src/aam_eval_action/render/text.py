"""Plain renderings of a report diff: the terminal text, JSON, and the number formats
that the text and the PR comment share."""

from __future__ import annotations

import json
from typing import Protocol

from aam_eval_action.diff import CATEGORIES, CaseDiff, Category, ReportDiff, StaleCase, round_value


def fmt_pct(rate: float | None) -> str:
    """0.8 -> `80.0%`."""
    return "n/a" if rate is None else f"{rate * 100:.1f}%"


def fmt_pp(delta: float | None) -> str:
    """20.0 -> `+20.0 pp`."""
    return "n/a" if delta is None else f"{round_value(delta, 1):+.1f} pp"


def fmt_cost(usd: float | None, *, signed: bool = False) -> str:
    """0.1234 -> `$0.1234`; signed: `+$0.1234` / `-$0.1234`."""
    if usd is None:
        return "n/a"
    sign = ("-" if usd < 0 else "+") if signed else ""
    return f"{sign}${abs(usd):.4f}"


def fmt_duration(seconds: float | None, *, signed: bool = False) -> str:
    """87 -> `1m 27s`, 4.25 -> `4.2s`; signed: `+1m 27s` / `-4.2s`."""
    if seconds is None:
        return "n/a"
    sign = ("-" if seconds < 0 else "+") if signed else ""
    total = abs(seconds)
    if total < 60:
        return f"{sign}{total:.1f}s"
    minutes, rest = divmod(round(total), 60)
    return f"{sign}{minutes}m {rest}s"


def fmt_int_delta(value: int) -> str:
    """1 -> `+1`, -2 -> `-2`, 0 -> `0`."""
    return f"{value:+d}" if value else "0"


def pass_rate_line(d: ReportDiff) -> str:
    """`80.0% → 100.0% (+20.0 pp)` over the cases graded on both sides, or the head's rate alone
    without a base; `no case graded` when nothing could be."""
    if d.head.graded == 0:
        return "n/a (no case graded)"
    if d.base is None:
        return f"{fmt_pct(d.head.pass_rate)} (no baseline)"
    if d.compared == 0:
        return f"{fmt_pct(d.head.pass_rate)} (no case graded on both sides)"
    rates = f"{fmt_pct(d.base_compared_rate)} → {fmt_pct(d.head_compared_rate)}"
    return f"{rates} ({fmt_pp(d.pass_rate_delta_pp)})"


def not_graded_note(d: ReportDiff) -> str:
    """What the headline leaves out, e.g. `over 4 cases graded on both sides · 2 not replayable`."""
    parts = []
    if d.base is not None and d.compared and d.compared != d.head.total:
        parts.append(f"over {d.compared} case{'s' if d.compared != 1 else ''} graded on both sides")
    if d.head.not_replayable:
        parts.append(f"{d.head.not_replayable} not replayable")
    return " · ".join(parts)


def cost_line(recorded: float | None, spent: float | None) -> str:
    """`recorded $0.42 · this run $0.00`: on replay the recording's cost is not spent again."""
    if recorded is None and spent is None:
        return "n/a"
    if spent is None:
        return f"recorded {fmt_cost(recorded)}"
    return f"recorded {fmt_cost(recorded)} · this run {fmt_cost(spent)}"


def verdict_change(c: CaseDiff) -> str:
    """`PASS → FAIL`, or the one verdict there is."""
    if c.base_verdict and c.head_verdict:
        return f"{c.base_verdict} → {c.head_verdict}"
    return c.head_verdict or c.base_verdict or "?"


def location(c: CaseDiff | StaleCase) -> str:
    """`evals/cases/x.yaml:12`, or '' when the report does not say."""
    if not c.file:
        return ""
    return f"{c.file}:{c.line}" if c.line else c.file


# --- output formats ---


def format_json(d: ReportDiff) -> str:
    """Stable JSON: sorted keys, trailing newline."""
    return json.dumps(d.model_dump(mode="json"), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


class _Fmt(Protocol):
    """The shape of `fmt_cost` and `fmt_duration`."""

    def __call__(self, value: float | None, /, *, signed: bool = False) -> str: ...


def format_text(d: ReportDiff) -> str:
    """A plain terminal summary: totals, then one line per changed case."""
    lines = _text_totals(d)
    for cat in CATEGORIES:
        group = [c for c in d.cases if c.category == cat]
        if group and cat != "unchanged":
            lines += ["", f"{_text_heading(cat, group)}:"]
            lines += [_text_case(c) for c in group]
    if d.stale:
        lines += ["", f"Stale cassettes ({len(d.stale)}), re-record with:"]
        pkg = f" --package {d.package_path}" if d.package_path and d.package_path != "." else ""
        lines += [f"  aam-eval run {s.name} --record{pkg}" for s in d.stale]
    return "\n".join(lines) + "\n"


def _text_totals(d: ReportDiff) -> list[str]:
    h, b = d.head, d.base
    counts = ", ".join(f"{d.counts[cat]} {cat}" for cat in CATEGORIES if d.counts[cat])
    base_cost = b.cost_usd if b else None
    base_time = b.duration_seconds if b else None
    note = not_graded_note(d)
    lines = [
        f"Pass rate: {pass_rate_line(d)}" + (f" ({note})" if note else ""),
        f"Head: {h.passed} passed, {h.failed} failed, {h.errored} errored, "
        f"{h.skipped} skipped, {h.total} total",
        f"Cases: {counts or 'none'}",
        "Cost (recorded): " + _text_change(base_cost, h.cost_usd, d.cost_delta_usd, fmt_cost),
        "Cost (this run): " + fmt_cost(h.run_cost_usd),
        "Duration: " + _text_change(base_time, h.duration_seconds, d.duration_delta_seconds, fmt_duration),
    ]
    if d.interrupted:
        lines.append("The head run was interrupted: its report is partial.")
    return lines


def _text_change(base: float | None, head: float | None, delta: float | None, fmt: _Fmt) -> str:
    if base is None:
        return fmt(head)
    shown = f"{fmt(base)} → {fmt(head)}"
    return f"{shown} ({fmt(delta, signed=True)})" if delta is not None else shown


def _text_heading(cat: Category, group: list[CaseDiff]) -> str:
    if cat == "regressed":
        flaky = sum(c.flaky for c in group)
        suffix = f", {flaky} flaky on base" if flaky else ""
        return f"Regressed ({len(group)}{suffix})"
    return f"{cat.capitalize()} ({len(group)})"


def _text_case(c: CaseDiff) -> str:
    parts = [f"  {c.name}", c.target or "-", verdict_change(c)]
    if c.flaky:
        parts.append("flaky")
    if c.failed_checks:
        parts.append("checks: " + ", ".join(c.failed_checks))
    if c.judge_reason and c.head_verdict != "PASS":
        parts.append("judge: " + _one_line(c.judge_reason, 120))
    if c.error and c.head_verdict != "PASS":
        parts.append("error: " + _one_line(c.error, 120))
    if location(c):
        parts.append(location(c))
    return "  ".join(parts)


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
