"""Routing, as people read it: the confusion matrix of the trigger prompts (expected skill ×
fired skill), each skill's precision and recall with their 95% intervals, harness problems, and
the prompts a change moved from one skill to another. Plain text for the console and
`aam-eval diff`; Markdown (every skill name and prompt escaped) for the PR comment."""

from __future__ import annotations

from collections.abc import Callable

from markupsafe import Markup

from aam_eval_action.diff import MovedPrompt
from aam_eval_action.report import Routing

PROMPT_CHARS = 90
MOVED_ROWS = 30


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.0f}%"


def _ci(interval: tuple[float, float] | None) -> str:
    return "" if interval is None else f" ({interval[0] * 100:.0f}–{interval[1] * 100:.0f}%)"


def heading(r: Routing) -> str:
    """What the matrix counts."""
    runs = f"{r.runs} run(s) per prompt, " if r.runs else ""
    threshold = f"at least {r.threshold:.0%} of them" if r.threshold is not None else "the threshold"
    return (f"Routing: rows are the skill a prompt belongs to, columns the skill that fired ({runs}"
            f"a skill fires for a prompt in {threshold})")


def text_lines(r: Routing) -> list[str]:
    """The matrix as an aligned plain-text table, then one line per skill and harness problem."""
    rows = [["expected \\ fired", *r.labels]]
    rows += [[row, *(str(r.matrix[row][col]) for col in r.labels)] for row in r.labels]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [heading(r)]
    for row in rows:
        cells = [v.rjust(w) if i else v.ljust(w) for i, (v, w) in enumerate(zip(row, widths, strict=True))]
        lines.append("  " + "  ".join(cells))
    for skill, s in r.skills.items():
        lines.append(f"  {skill}: precision {_pct(s.precision)}{_ci(s.precision_ci)}, recall "
                     f"{_pct(s.recall)}{_ci(s.recall_ci)} over {s.cases} prompt(s)"
                     + (f", {s.errored} errored (not counted)" if s.errored else ""))
    lines += [f"  harness problem, {skill}: {s.harness}" for skill, s in r.skills.items() if s.harness]
    return lines


def moved_text(moved: list[MovedPrompt]) -> list[str]:
    """One line per prompt that fires another skill than on the base."""
    return [f"  {m.name}: {m.base} → {m.head} ({_one_line(m.prompt)})" for m in moved]


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= PROMPT_CHARS else text[: PROMPT_CHARS - 1] + "…"


def markdown(r: Routing, md: Callable[..., Markup]) -> Markup:
    """The matrix as a Markdown table; `md` escapes each untrusted string (skill names)."""
    columns = " | ".join(str(md(c, 40)) for c in r.labels)
    head = f"| belongs to ↓ · fired → | {columns} | recall (95% CI) |"
    lines = [head, "| --- |" + " ---: |" * (len(r.labels) + 1)]
    for row in r.labels:
        cells = [f"**{n}**" if row == col and n else str(n) for col in r.labels for n in [r.matrix[row][col]]]
        s = r.skills.get(row)
        recall = f"{_pct(s.recall)}{_ci(s.recall_ci)}" if s else ""
        lines.append(f"| {md(row, 40)} | " + " | ".join(cells) + f" | {recall} |")
    precision = [f"{_pct(r.skills[c].precision)}{_ci(r.skills[c].precision_ci)}" if c in r.skills else ""
                 for c in r.labels]
    lines.append("| precision (95% CI) | " + " | ".join(precision) + " | |")
    problems = [f"> **Harness problem, {md(skill, 40)}**: {md(s.harness, 300)}"
                for skill, s in r.skills.items() if s.harness]
    text = f"_{md(heading(r))}._\n\n" + "\n".join(lines)
    if problems:
        text += "\n\n" + "\n>\n".join(problems)
    return Markup(text)


def moved_markdown(moved: list[MovedPrompt], md: Callable[..., Markup]) -> Markup:
    """The moved prompts as a Markdown table, each prompt escaped and cut."""
    lines = ["| Prompt | Base → head | Belongs to |", "| --- | --- | --- |"]
    for m in moved[:MOVED_ROWS]:
        pair = f" <sub>{md(m.engine, 40)} · {md(m.model, 60)}</sub>" if m.engine else ""
        lines.append(f"| {md(m.prompt, PROMPT_CHARS)}<br><sub>{md(m.name, 80)}</sub>{pair} | "
                     f"{md(m.base, 40)} → **{md(m.head, 40)}**{' (a neighbour)' if m.neighbor else ''} | "
                     f"{md(m.expected or 'none', 40)} |")
    if len(moved) > MOVED_ROWS:
        lines.append(f"| … and {len(moved) - MOVED_ROWS} more | | |")
    return Markup("\n".join(lines))
