"""Crowded catalogs in a run: what each engine's listing shows of the package, and the sweep.

A run with neighbours installs them beside the package for its trigger cases. A crowding sweep
(`--sweep 0,20,100`) runs the trigger cases again with that many neighbours, drawn from the pool
the same way every time, each size with cassettes of its own (`<engine>+crowd-<n>`), so a pull
request replays it for free. Per engine and size it reports each skill's recall and precision
with their intervals, how the listing shows it, and which prompts it lost.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from aam_eval_action.catalog import Listing, predict
from aam_eval_action.catalog.installed import draw, neighbor_skills, package_skills

if TYPE_CHECKING:
    from aam_eval_action.loader import LoadedCase
    from aam_eval_action.report import CaseResult, ListingView, Sweep
    from aam_eval_action.settings import RunSettings

SCAN_LIMIT = 400
"""Up to this many neighbours in the pool, the point where a skill goes name-only is found by
predicting every size; past it, only at the sweep's sizes."""


def listing(s: RunSettings, neighbors: tuple[object, ...] | None = None) -> Listing:
    """The listing the run's engine and model show, with its neighbours (or these)."""
    chosen = s.neighbors if neighbors is None else neighbors
    skills = package_skills(s.package.layout, s.engine) + neighbor_skills(chosen)  # type: ignore[arg-type]
    return predict(s.engine, skills, s.model, env=s.agent_env)


def view(s: RunSettings) -> ListingView:
    from aam_eval_action.report import ListingView

    found = listing(s)
    theirs = found.of("neighbor")
    return ListingView(
        engine=s.engine, model=s.model, cli=found.cli, budget=found.budget, unit=found.unit, used=found.used,
        cli_size=found.cli_used, package_size=sum(e.size for e in found.of("package")),
        neighbors_size=sum(e.size for e in theirs),
        skills={e.skill.name: e.shown for e in found.of("package") if not e.skill.command},
        neighbors=len(theirs), neighbors_name_only=sum(e.shown in ("name-only", "left-out") for e in theirs),
        neighbor_names=sorted(e.skill.name for e in theirs),
    )


def views(runs: list[RunSettings]) -> list[ListingView] | None:
    """The run's listings, kept when one cuts a skill of the package or neighbours are installed."""
    found = [view(s) for s in runs if s.package.layout.skills()]
    keep = any(v.neighbors or any(shown != "full" for shown in v.skills.values()) for v in found)
    return found if keep else None


def sweep_settings(s: RunSettings) -> list[RunSettings]:
    """One settings per size of the sweep: that many neighbours drawn from the pool, and
    cassettes of their own."""
    return [dataclasses.replace(s, neighbors=draw(s.pool, n), crowd=n,
                                cassette_stem=f"{s.cassette_stem}+crowd-{n}") for n in s.sweep]


def trigger_cases(cases: list[LoadedCase]) -> list[LoadedCase]:
    from aam_eval_action.spec import trigger_expectation

    return [c for c in cases if trigger_expectation(c.case.expected) is not None and c.case.target]


def build_sweep(points: list[tuple[RunSettings, list[CaseResult]]]) -> Sweep | None:
    """The sweep's report: per engine + model and size, each skill's recall and precision (Wilson
    intervals), how the listing shows it, the prompts lost and where they went."""
    from aam_eval_action.report import NO_SKILL, Sweep, SweepPoint, SweepSkill, routing

    if not points:
        return None
    first = points[0][0]
    out: list[SweepPoint] = []
    least: dict[tuple[str, str], dict[str, str]] = {}
    for s, results in sorted(points, key=lambda p: (p[0].engine, p[0].model, p[0].crowd or 0)):
        shown = {e.skill.name: e.shown for e in listing(s).of("package")}
        table = routing(results)
        skills: dict[str, SweepSkill] = {}
        for name in sorted(n for n in s.package.layout.skills()):
            row = table.skills.get(name) if table else None
            skills[name] = SweepSkill(
                shown=shown.get(name, "left-out"), cases=row.cases if row else 0,
                recall=row.recall if row else None, recall_ci=row.recall_ci if row else None,
                precision=row.precision if row else None, precision_ci=row.precision_ci if row else None)
        fired = {r.name: r.routed_to for r in results if r.verdict != "ERROR" and r.routed_to is not None}
        pair = (s.engine, s.model)
        if pair not in least:
            least[pair] = {n: t for n, t in fired.items()}
        reached = {r.name for r in results if r.expected_skill not in (None, NO_SKILL)
                   and least[pair].get(r.name) == r.expected_skill}
        own = set(s.package.layout.skills())
        lost = sorted(n for n in reached if n in fired and fired[n] != least[pair][n])
        taken = {n: fired[n] for n in lost if fired[n] not in own and fired[n] != NO_SKILL}
        out.append(SweepPoint(
            engine=s.engine, model=s.model, size=s.crowd or 0, neighbors=len(s.neighbors), skills=skills,
            lost=lost, taken=taken,
            graded=len(fired), replayed=sum(r.replay_kind in ("snapshot", "rerun") for r in results),
            errored=sum(r.verdict == "ERROR" for r in results)))
    bases = {(s.engine, s.model): s for s, _ in points}
    return Sweep(pool=len(first.pool), sizes=list(first.sweep), points=out,
                 name_only_from={f"{e} {m}": name_only_from(s) for (e, m), s in bases.items()})


def name_only_from(s: RunSettings) -> dict[str, int | None]:
    """Each skill's fewest neighbours (drawn as the sweep draws) with which the listing shows it
    by name only or not at all."""
    sizes = range(len(s.pool) + 1) if len(s.pool) <= SCAN_LIMIT else sorted({*s.sweep, len(s.pool)})
    found: dict[str, int | None] = {name: None for name in s.package.layout.skills()}
    for n in sizes:
        if all(v is not None for v in found.values()):
            break
        for e in listing(s, draw(s.pool, n)).of("package"):
            if e.skill.name in found and found[e.skill.name] is None and e.shown in ("name-only", "left-out"):
                found[e.skill.name] = n
    return found
