"""Routing, as people read it: the confusion matrix of the trigger prompts (expected skill ×
fired skill), each skill's precision and recall with their 95% intervals, harness problems, and
the prompts a change moved from one skill to another. Plain text for the console and
`aam-eval diff`; Markdown (every skill name and prompt escaped) for the PR comment."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from markupsafe import Markup

from aam_eval_action.report import Routing

if TYPE_CHECKING:  # the console's matrix needs no diff: a run does not load it
    from aam_eval_action.diff import MovedPrompt

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


SHADES = ("🟩", "🟨", "🟧", "🟥", "🟥")
"""A cell's mark by its band (`band`): as it should be, up to a quarter off, up to half, more."""
LEGEND = ("🟩 as it should be · 🟨 up to 25% off · 🟧 up to 50% · 🟥 more: a diagonal cell by its "
          "recall (the share of its row that reached its skill), any other by its leak (the share of the "
          "row it took)")


def distance(r: Routing, row: str, col: str) -> float | None:
    """How far a cell is from what it should be, 0 to 1: on the diagonal, 1 - its recall over the
    row's prompts; elsewhere, its leak (its share of the row); None for a row with no prompt."""
    total = sum(r.matrix[row].values())
    if not total:
        return None
    share = r.matrix[row][col] / total
    return 1 - share if row == col else share


def band(far: float) -> int:
    """0 (as it should be) to 4 (all of the row off): the shade of a cell `far` from its ideal."""
    return 0 if far <= 0 else 1 if far <= 0.25 else 2 if far <= 0.5 else 3 if far < 1 else 4


def _cell(r: Routing, row: str, col: str) -> str:
    n = r.matrix[row][col]
    far = distance(r, row, col)
    text = f"**{n}**" if row == col and n else str(n)
    if far is None or (row != col and not n):
        return text  # no prompt in the row, or an empty cell off the diagonal: as it should be
    return f"{SHADES[band(far)]} {text}"


def markdown(r: Routing, md: Callable[..., Markup]) -> Markup:
    """The matrix as a Markdown table, each cell marked by how far it is from what it should be
    (`distance`); `md` escapes each untrusted string (skill names)."""
    columns = " | ".join(str(md(c, 40)) for c in r.labels)
    head = f"| belongs to ↓ · fired → | {columns} | recall (95% CI) |"
    lines = [head, "| --- |" + " ---: |" * (len(r.labels) + 1)]
    for row in r.labels:
        cells = [_cell(r, row, col) for col in r.labels]
        s = r.skills.get(row)
        recall = f"{_pct(s.recall)}{_ci(s.recall_ci)}" if s else ""
        lines.append(f"| {md(row, 40)} | " + " | ".join(cells) + f" | {recall} |")
    precision = [f"{_pct(r.skills[c].precision)}{_ci(r.skills[c].precision_ci)}" if c in r.skills else ""
                 for c in r.labels]
    lines.append("| precision (95% CI) | " + " | ".join(precision) + " | |")
    problems = [f"> **Harness problem, {md(skill, 40)}**: {md(s.harness, 300)}"
                for skill, s in r.skills.items() if s.harness]
    text = f"_{md(heading(r))}._\n\n" + "\n".join(lines) + f"\n\n<sub>{LEGEND}.</sub>"
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
