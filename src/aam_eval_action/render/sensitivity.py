"""The kill matrix for a person: console lines and the job summary's Markdown.

The matrix itself (statuses, the checks that killed each mutant, each check's verdicts) comes
first and is the same, byte for byte, for a run and its replay; how each variant was graded and
what it cost follow it. Every name and heading is the repository's text: escaped for Markdown.
"""

from __future__ import annotations

from aam_eval_action.render.comment import md
from aam_eval_action.sensitivity_model import (
    ADJECTIVE,
    CheckRow,
    Cost,
    MutantRow,
    Sensitivity,
    flip_directions,
    measured_mutants,
    unmoved,
)

STATUS = {"killed": "killed", "survived": "SURVIVED", "not-measured": "not measured", "not-run": "not run"}
STYLE = {"killed": "green", "survived": "red", "not-measured": "yellow", "not-run": "yellow"}
WEAK = "WEAK: passes with and without the package, and under every mutant of both directions"


def _killers(row: MutantRow) -> str:
    return ", ".join(f"{k.case}/{k.check}" for k in row.killed_by)


def _where(row: CheckRow) -> str:
    return f"{row.file}:{row.line}" if row.line else row.file


def _verdicts(row: CheckRow) -> str:
    forced = f"  forced {row.forced}" if row.forced else ""
    return f"with {row.with_package or '-'}  without {row.without_package or '-'}{forced}"


def matrix_lines(result: Sensitivity) -> list[tuple[str, str | None]]:
    """The matrix: per engine, each mutant and what killed it, then each check."""
    out: list[tuple[str, str | None]] = []
    for engine in result.engines:
        out.append((f"kill matrix · {engine}", "bold"))
        for m in (m for m in result.mutants if m.engine == engine):
            rate = f"  kill rate {m.kill_rate:.0%}" if m.kill_rate is not None else ""
            by = f"  by {_killers(m)}" if m.killed_by else ""
            out.append((f"  {STATUS[m.status]:<12} {m.direction:<11}  {m.id}{rate}{by}", STYLE[m.status]))
            if m.status == "survived" and m.direction == "over-claims":
                out.append((f"               no guard: {m.what} and no check noticed a false trigger (a case "
                            "the skill must not fire on would)", "dim"))
            elif m.status == "survived":
                out.append((f"               uncovered guidance: {m.what} and no check noticed", "dim"))
            elif m.note and m.status != "killed":
                out.append((f"               {m.note}", "dim"))
        rows = [r for r in result.cases if r.engine == engine]
        if any(r.forced for r in rows):
            out.append((f"arms · {engine}: without · with · forced (the skill invoked by name)", "bold"))
        for r in rows:
            if r.forced:
                said = "; ".join(s for s in (f"content {r.content}" if r.content else "",
                                             f"routing {r.routing}" if r.routing else "") if s)
                verdicts = f"{r.without_package or '-'} · {r.with_package or '-'} · {r.forced}"
                parts = (r.case, verdicts, said, f"({r.forced_how})")
                out.append(("  " + "  ".join(s for s in parts if s), None))
        out.append((f"checks · {engine}", "bold"))
        for c in (c for c in result.checks if c.engine == engine):
            flags = []
            if c.weak:
                flags.append(WEAK)
            elif unmoved(c):
                flags.append(_untried(c))
            if c.backwards:
                flags.append("BACKWARDS: passes only without the package")
            if c.with_package == "FAIL":
                flags.append("fails with the package")
            flipped = (f"  flipped by {len(c.flipped_by)} ({', '.join(flip_directions(result, c))})"
                       if c.flipped_by else "")
            style = "yellow" if c.weak or c.backwards else None
            out.append((f"  {c.case} / {c.check}  {_verdicts(c)}{flipped}  ({_where(c)})"
                        + (f"  {'; '.join(flags)}" if flags else ""), style))
    return out


def _missing(row: CheckRow) -> str:
    return " or ".join(ADJECTIVE[d] for d in row.untried)


def _untried(row: CheckRow) -> str:
    return (f"not weak yet: unmoved, but no {_missing(row)} mutant was measured on its case "
            f"(--mutants {','.join(row.untried)})")


def console_lines(result: Sensitivity) -> list[tuple[str, str | None]]:
    out = matrix_lines(result)
    uncovered, weak = len(result.uncovered), len(result.weak)
    measured = measured_mutants(result)
    killed = sum(m.status == "killed" for m in measured)
    out.append((f"{killed} of {len(measured)} measured mutant(s) killed; {uncovered} uncovered; "
                f"{weak} weak check(s)", "bold"))
    for arm in result.arms:
        out.append((f"graded · {arm.name}: {_graded(arm.graded)}", "dim"))
    for m in result.mutants:
        if m.status != "not-run":
            out.append((f"graded · {m.engine}: {m.id}: {_graded(m.graded)}", "dim"))
    for line in result.not_run:
        out.append((f"not run · {line}", "yellow"))
    out.append((f"spent ${result.cost_usd:.4f}", "dim"))
    return out


def _graded(cost: Cost) -> str:
    parts = [f"{n} {what}" for n, what in ((cost.replayed, "replayed"), (cost.re_executed, "re-executed"),
                                            (cost.live, "live")) if n]
    calls = "model called" if cost.model_calls else "no model call"
    return f"{', '.join(parts) or 'nothing'} ({calls}, ${cost.cost_usd:.4f})"


def markdown(result: Sensitivity) -> str:
    """The job summary: what was not noticed first, then the whole matrix."""
    lines = [f"## Would the suite notice? · {md(result.package)}", ""]
    measured = measured_mutants(result)
    killed = sum(m.status == "killed" for m in measured)
    lines.append(f"{killed} of {len(measured)} measured mutants killed; {len(result.uncovered)} uncovered; "
                 f"{len(result.weak)} weak checks.")
    lines += ["", "A mutant that **removes** takes away or breaks what the package gives; one that "
              "**over-claims** makes a skill claim requests it should not, the only kind a guard against a "
              "false trigger can notice."]
    lines += ["", "| engine | mutant | direction | status | killed by |", "| --- | --- | --- | --- | --- |"]
    for m in result.mutants:
        lines.append(f"| {md(m.engine)} | {md(m.what)} | {m.direction} | {STATUS[m.status]} "
                     f"| {md(_killers(m)) or '—'} |")
    lines += ["", "| engine | case / check | with | without | flipped by | |",
              "| --- | --- | --- | --- | --- | --- |"]
    for c in result.checks:
        flag = "weak" if c.weak else f"not weak yet: no {_missing(c)} mutant" if unmoved(c) else (
            "backwards" if c.backwards else "")
        flipped = f"{len(c.flipped_by)} ({', '.join(flip_directions(result, c))})" if c.flipped_by else "0"
        lines.append(f"| {md(c.engine)} | {md(c.case)} / {md(c.check)} ({md(_where(c))}) "
                     f"| {c.with_package or '—'} | {c.without_package or '—'} | {flipped} | {flag} |")
    for line in result.not_run:
        lines.append(f"\n- not run: {md(line)}")
    return "\n".join(lines) + "\n"
