"""Gemini CLI's skill listing, as read from the pinned release and confirmed through it
(`listing`; see `catalog/`), and how it cuts a description too long for it (`description_cut`)."""

from __future__ import annotations

from aam_eval_action.catalog.listing import Entry, Listing, Skill

GEMINI_CLI = "0.61.0"
GEMINI_OWN = (("skill-creator", 230), ("antigravity-support", 273))
"""Its built-in skills, listed first: description lengths."""
GEMINI_LOCATION = len("/home/runner/.agents/skills//SKILL.md")
"""A typical `<location>` (the SKILL.md's absolute path) without the skill's folder name."""


def listing(skills: list[Skill], model: str, window: int | None, env: dict[str, str]) -> Listing:
    loaded = [s for s in skills if s.name and s.description]
    own = [Skill(name, "x" * size, "cli") for name, size in GEMINI_OWN]
    listed = [*own, *sorted(loaded, key=lambda s: s.name.encode(), reverse=True)]
    entries = [Entry(s, "full", 96 + len(s.name) + len(s.description) + GEMINI_LOCATION + len(s.name) + 1,
                     len(s.description)) for s in listed]
    kept = {id(s) for s in loaded}
    entries += [Entry(s, "left-out", 0, 0) for s in skills if id(s) not in kept]
    return Listing(
        engine="gemini-cli", cli=GEMINI_CLI, model=model, window=None, budget=None, unit="characters",
        used=sum(e.size for e in entries), entries=entries,
        rule="no budget and no cap: every skill that loads is listed with its whole description",
    )


def description_cut(skill: Skill) -> str | None:
    """Gemini CLI shows a description whole."""
    return None
