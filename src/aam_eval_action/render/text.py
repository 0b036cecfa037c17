"""Plain renderings of a report diff: the terminal text, JSON, and the number formats
that the text and the PR comment share."""

from __future__ import annotations

import json
import shlex
from typing import Protocol

from aam_eval_action.diff import (
    CATEGORIES,
    CaseDiff,
    Category,
    Headline,
    MatrixCell,
    MatrixRow,
    PairComparison,
    ReportDiff,
    StaleCase,
    round_value,
)
from aam_eval_action.replay.outage import NOT_RUN


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
    if d.head.api_down:
        parts.append(f"{d.head.api_down} not run: {NOT_RUN}")
    return " · ".join(parts)


def cost_line(recorded: float | None, spent: float | None) -> str:
    """`recorded $0.42 · this run $0.00`: on replay the recording's cost is not spent again."""
    if recorded is None and spent is None:
        return "n/a"
    if spent is None:
        return f"recorded {fmt_cost(recorded)}"
    return f"recorded {fmt_cost(recorded)} · this run {fmt_cost(spent)}"


def verdict_change(c: CaseDiff) -> str:
    """`PASS → FAIL`, with the pass counts and p-value when both sides were repeated."""
    if c.base_verdict and c.head_verdict:
        shown = f"{c.base_verdict} → {c.head_verdict}"
        if c.evidence is not None:
            words = c.evidence.decision.replace("-", " ")
            shown += f" ({c.base_passes} → {c.head_passes}, {words})"
        elif c.p_value is not None and c.base_passes != c.head_passes:
            shown += f" ({c.base_passes} → {c.head_passes}, p = {c.p_value:.3f})"
        return shown
    return c.head_verdict or c.base_verdict or "?"


def lift_line(d: ReportDiff) -> str:
    """`skill lift +33.3 pp (was +50.0 pp) · without the skill 33.3% → 66.7%`; '' without a baseline run."""
    h, b = d.head, d.base
    if h.lift_pp is None:
        return ""
    line = f"skill lift {fmt_pp(h.lift_pp)}"
    if b is not None and b.lift_pp is not None:
        line += f" (was {fmt_pp(b.lift_pp)})"
    line += f" · pass rate without the skill {fmt_pct(h.baseline_pass_rate)}"
    if h.skill_not_needed:
        line += f" · {h.skill_not_needed} skill not needed"
    return line


def fmt_score(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def fmt_signed(value: float | None) -> str:
    return "–" if value is None else f"{value:+.2f}"


def score_line(d: ReportDiff) -> str:
    """`claude plugin eval score 0.67 → 0.83 (+0.17) · mean Δ +0.17 → +0.33`; '' without such cases."""
    h, b = d.head, d.base
    if h.score is None:
        return ""
    line = "claude plugin eval score "
    if b is not None and b.score is not None:
        line += f"{fmt_score(b.score)} → {fmt_score(h.score)} ({fmt_signed(h.score - b.score)})"
    else:
        line += fmt_score(h.score)
    if h.mean_delta is not None:
        line += " · mean Δ (with the plugin − without) "
        if b is not None and b.mean_delta is not None:
            line += f"{fmt_signed(b.mean_delta)} → "
        line += fmt_signed(h.mean_delta)
    return line


def scores_changed(d: ReportDiff) -> list[CaseDiff]:
    """The `claude plugin eval` cases whose score or delta is not what it was on the base."""
    return [c for c in d.cases if c.head_score is not None
            and (c.base_score != c.head_score or c.base_delta != c.head_delta)]


def trigger_line(d: ReportDiff) -> str:
    """`trigger precision 100.0% · recall 50.0% (4 cases)`; '' without trigger cases."""
    h = d.head
    if not h.trigger_cases:
        return ""
    return (f"trigger precision {fmt_pct(h.trigger_precision)} · recall {fmt_pct(h.trigger_recall)} "
            f"({h.trigger_cases} case{'s' if h.trigger_cases != 1 else ''})")


def interval_line(d: ReportDiff) -> str:
    """`95% interval of the change: -61.2 pp to +12.4 pp`; '' without a base."""
    ci = d.pass_rate_delta_ci_pp
    if not ci:
        return ""
    return f"95% interval of the change: {fmt_pp(ci[0])} to {fmt_pp(ci[1])}"


def estimate_line(d: ReportDiff) -> str:
    """`Estimated pass rate (each case's rate over its history): 84% (71%–93%, …) → 78% (…)`;
    '' when no case has a history."""
    head = d.head.estimate
    if head is None:
        return ""
    base = d.base.estimate if d.base else None
    shown = f"{base.text} → {head.text}" if base else head.text
    return f"Estimated pass rate (each case's rate over its history): {shown}"


def not_shown_line(d: ReportDiff) -> str:
    """`2 cases not shown: the evidence did not decide (see below)`; '' when none."""
    count = d.counts.get("not-shown", 0)
    if not count:
        return ""
    return (f"{count} case{'s' if count != 1 else ''} not shown: the evidence did not decide either way "
            "(a warning, not a failure)")


def pair_label(engine: str | None, model: str | None) -> str:
    """`claude-code · claude-sonnet-4-6`; '' for an entry of a single-pair diff."""
    return f"{engine} · {model}" if engine else ""


def pair_line(p: Headline) -> str:
    """One pair's (or plugin's) headline: `57.1% → 71.4% (+14.3 pp) · 1 regression`, or the head's
    rate alone."""
    if p.head.graded == 0:
        rate = "no case graded"
    elif p.base is None or p.compared == 0:
        why = "new in this run" if p.base is None else "none graded on both sides"
        rate = f"{fmt_pct(p.head.pass_rate)} ({why})"
    else:
        rate = (f"{fmt_pct(p.base_compared_rate)} → {fmt_pct(p.head_compared_rate)} "
                f"({fmt_pp(p.pass_rate_delta_pp)})")
    regressions = (f"{p.regressions} regression{'s' if p.regressions != 1 else ''}" if p.regressions
                   else "no regressions")
    return f"{rate} · {p.head.passed}/{p.head.total} passed · {regressions}"


def cell_text(cell: MatrixCell | None) -> str:
    """A matrix cell: `PASS`, `PASS → FAIL`, `stale`, `diverged`, or `-` when the pair did not run it."""
    if cell is None:
        return "-"
    if cell.category in ("stale", "diverged"):
        return cell.category
    if cell.base_verdict is None or cell.base_verdict == cell.head_verdict or cell.head_verdict is None:
        return cell.head_verdict or f"removed ({cell.base_verdict})"
    return f"{cell.base_verdict} → {cell.head_verdict}"


def agreement_line(d: ReportDiff) -> str:
    """Whether every pair gave every case the same verdict (over the cases at least two graded:
    a partial run or a stale pair is not agreement)."""
    if not d.pairs:
        return ""
    if d.pairs_agree:
        rows = d.matrix or []
        shared = sum(1 for row in rows if _graded_by(row) >= 2)
        if shared == len(rows):
            return f"All {len(d.pairs)} engines/models agree on every case."
        if not shared:
            return "No case was graded by more than one engine/model: nothing to compare."
        return (f"The engines/models agree on all {shared} case{'s' if shared != 1 else ''} more than one "
                f"of them graded ({len(rows) - shared} graded by one or none).")
    split = [r.name for r in d.matrix or [] if not r.agree]
    return (f"The engines/models disagree on {len(split)} case{'s' if len(split) != 1 else ''}: "
            + ", ".join(split))


def _graded_by(row: MatrixRow) -> int:
    """How many pairs gave the case a verdict on the head (not stale, not diverged, not missing)."""
    return sum(1 for c in row.cells if c is not None and c.head_verdict in ("PASS", "FAIL")
               and c.category not in ("stale", "diverged"))


def comparison_line(c: PairComparison) -> str:
    """`gemini-cli · gemini-2.5-pro vs claude-code · …: 42.9% vs 57.1% (-14.3 pp, 95%: …)`."""
    line = (f"{pair_label(c.engine, c.model)} vs {pair_label(c.reference_engine, c.reference_model)}: ")
    if not c.compared:
        return line + "no case graded on both"
    line += f"{fmt_pct(c.rate)} vs {fmt_pct(c.reference_rate)} ({fmt_pp(c.delta_pp)}"
    if c.delta_ci_pp:
        line += f", 95% interval {fmt_pp(c.delta_ci_pp[0])} to {fmt_pp(c.delta_ci_pp[1])}"
    line += f") over {c.compared} case{'s' if c.compared != 1 else ''}"
    if c.p_value is not None:
        verdict = "significant" if c.significant else "within noise"
        line += f"; attempts {c.passes} vs {c.reference_passes}, Fisher p = {c.p_value:.3f} ({verdict})"
    return line


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
    lines = _text_totals(d) + _text_plugins(d) + _text_matrix(d)
    for cat in CATEGORIES:
        group = [c for c in d.cases if c.category == cat]
        if group and cat != "unchanged":
            lines += ["", f"{_text_heading(cat, group)}:"]
            lines += [_text_case(c) for c in group]
    if d.moved:
        from aam_eval_action.render.routing import moved_text

        lines += ["", f"Prompts that moved to another skill ({len(d.moved)}):", *moved_text(d.moved)]
    if d.stale:
        lines += ["", f"Stale cassettes ({len(d.stale)}), re-record with:"]
        pkg = f" --package {d.package_path}" if d.package_path and d.package_path != "." else ""
        lines += [f"  aam-eval run {s.name} --record{pair_flags(s.engine, s.model)}{pkg}" for s in d.stale]
    return "\n".join(lines) + "\n"


def pair_flags(engine: str | None, model: str | None) -> str:
    """` --engine E --model M` for an entry of a matrix diff (the re-record command of that pair)."""
    if not engine:
        return ""
    return f" --engine {shlex.quote(engine)} --model {shlex.quote(model or '')}"


def _text_plugins(d: ReportDiff) -> list[str]:
    """One headline per plugin of a repository of several."""
    if not d.plugins:
        return []
    return ["", "Plugins:"] + [f"  {p.plugin}: {pair_line(p)}" for p in d.plugins]


def _text_matrix(d: ReportDiff) -> list[str]:
    """Per-pair headlines, the case × pair table and the comparisons of a matrix diff."""
    if not d.pairs or not d.matrix:
        return []
    labels = [pair_label(p.engine, p.model) for p in d.pairs]
    lines = [""] + [f"{label}: {pair_line(p)}" for label, p in zip(labels, d.pairs, strict=True)]
    lines.append(agreement_line(d))
    rows = [["case", *labels]] + [[r.name, *(cell_text(c) for c in r.cells)] for r in d.matrix]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines.append("")
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    if d.comparisons:
        lines += ["", "Compared with the first engine/model:"]
        lines += [f"  {comparison_line(c)}" for c in d.comparisons]
    return lines


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
    lines += [line for line in (estimate_line(d), lift_line(d), trigger_line(d), interval_line(d),
                                not_shown_line(d)) if line]
    if d.noise_regressions:
        lines.append(f"{d.noise_regressions} regressed within noise (Fisher p >= 0.05), not counted")
    elif d.regressions and not d.repeated:
        lines.append("Significance needs `repeat`: one attempt per case cannot tell a change from noise.")
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
    shown = c.title or c.name
    name = f"{shown} ({pair_label(c.engine, c.model)})" if c.engine else shown
    parts = [f"  {name}", c.target or "-", verdict_change(c)]
    if c.evidence_text:
        parts.append(c.evidence_text)
    elif c.significant is False:
        parts.append("within noise")
    elif c.flaky:
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
