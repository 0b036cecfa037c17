"""The stub engine's skill listing: every skill, in full, in name order; no budget."""

from __future__ import annotations

from aam_eval_action.catalog.listing import Entry, Listing, Skill


def listing(skills: list[Skill], model: str, window: int | None, env: dict[str, str]) -> Listing:
    shown = sorted((s for s in skills if s.name), key=lambda s: s.name)
    entries = [Entry(s, "full", len(f"- {s.name}: {s.description}"), len(s.description)) for s in shown]
    return Listing(engine="stub-cli", cli="1.0.0", model=model, window=None, budget=None, unit="characters",
                   used=sum(e.size for e in entries), entries=entries,
                   rule="every skill listed with its whole description, in name order; no budget")


def description_cut(skill: Skill) -> str | None:
    return None
