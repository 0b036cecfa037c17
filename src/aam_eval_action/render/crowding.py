"""Crowded catalogs in words: what each listing cuts, the sweep's table, and what a change cost.

Skill names come from the repository under test: the Markdown here escapes them, and the console
neutralises workflow commands in every line it prints.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aam_eval_action.report import ListingView, Report, Sweep

WORDS = {"full": "in full", "truncated": "cut short", "name-only": "by name only", "left-out": "not listed"}
WORSE = {"full": 0, "truncated": 1, "name-only": 2, "left-out": 3}


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.0f}%"


def _ci(ci: tuple[float, float] | None) -> str:
    return f" ({ci[0] * 100:.0f}–{ci[1] * 100:.0f}%)" if ci else ""


def listing_lines(report: Report) -> list[str]:
    """One line per engine + model whose listing cuts a skill of the package."""
    out = []
    for v in report.listings or []:
        cut = {k: [n for n, s in v.skills.items() if s == k] for k in ("truncated", "name-only", "left-out")}
        if not any(cut.values()):
            continue
        size = f"{v.used:,} of {v.budget:,} {v.unit}" if v.budget else f"{v.used:,} {v.unit}"
        crowd = f" with {v.neighbors} neighbour(s)" if v.neighbors else ""
        said = "; ".join(f"{WORDS[k]}: {', '.join(sorted(names))}" for k, names in cut.items() if names)
        out.append(f"skill listing on {v.engine} ({v.model}): {size}{crowd}; {said} "
                   "(`aam-eval budget` shows each skill's share)")
    return out


def sweep_lines(sweep: Sweep | None) -> list[str]:
    """The sweep as a table per engine + model: each size, each skill's recall with its interval
    and how the listing shows it, the prompts lost."""
    if sweep is None:
        return []
    out = [f"crowding sweep: {', '.join(str(n) for n in sweep.sizes)} neighbour(s), drawn from {sweep.pool}"]
    pairs = list(dict.fromkeys((p.engine, p.model) for p in sweep.points))
    for engine, model in pairs:
        out.append(f"  {engine} · {model}")
        for p in (p for p in sweep.points if (p.engine, p.model) == (engine, model)):
            count = f"{p.size}" + (f" ({p.neighbors} in the pool)" if p.neighbors != p.size else "")
            cells = [f"{name} recall {_pct(s.recall)}{_ci(s.recall_ci)}, {WORDS[s.shown]}"
                     for name, s in p.skills.items() if s.cases]
            lost = f"; lost {len(p.lost)}: {', '.join(p.lost)}" if p.lost else ""
            taken = "".join(f" ({case} went to neighbour {to})" for case, to in p.taken.items())
            said = "; ".join(cells) or "no graded trigger prompt"
            out.append(f"    {count:>4} neighbours: {said}{lost}{taken}")
        found = sweep.name_only_from.get(f"{engine} {model}", {})
        points = [f"{name} from {n}" for name, n in sorted((kv for kv in found.items() if kv[1] is not None),
                                                            key=lambda kv: kv[1] or 0)]
        out.append(f"    by name only in the listing: {', '.join(points)} neighbour(s)" if points else
                   "    every skill keeps its description at every size of this pool")
    return out


def lost_listings(base: Report | None, head: Report) -> list[tuple[str, str, str, str, str]]:
    """(engine, model, skill, how the base showed it, how the head shows it) for each skill of the
    package that the head's listing shows worse than the base's."""
    if base is None:
        return []
    before = {(v.engine, v.model): v for v in base.listings or []}
    out: list[tuple[str, str, str, str, str]] = []
    for v in head.listings or []:
        old: ListingView | None = before.get((v.engine, v.model))
        for name, shown in sorted(v.skills.items()):
            was = old.skills.get(name, "full") if old is not None else "full"
            if WORSE[shown] > WORSE[was]:
                out.append((v.engine, v.model, name, was, shown))
    return out
