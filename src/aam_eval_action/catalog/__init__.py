"""What each agent CLI shows the model of the skills installed: its skill listing.

Every CLI lists the installed skills (name and description) in every request, so that the model
can pick one; the skill's body is read only when the skill is invoked. A listing has rules of its
own per CLI: a budget (Claude Code: a share of the model's context window, in characters; Codex:
2% of it, in tokens; Copilot CLI: a fixed number of characters; Gemini CLI: none), a cap on one
description, an order, and what goes when the listing is over its budget (a description cut
short, a skill shown by its name only, a skill left out). `rules` holds each CLI's, as read from
the CLI and confirmed through it, in the engine's own listing module (`engines/<engine>_listing.py`,
named by its registry entry; docs/crowded-catalogs.md has the evidence); `predict` builds the
listing a CLI would send for a set of skills, and says of each skill how it is shown.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from aam_eval_action.catalog.listing import Entry, Listing, Origin, Shown, Skill

__all__ = ["Entry", "Listing", "Origin", "Shown", "Skill", "lint", "predict"]


def predict(engine: str, skills: list[Skill], model: str, window: int | None = None,
            env: dict[str, str] | None = None) -> Listing:
    """The listing `engine`'s CLI would send for `skills` (installed as the run installs them),
    with `model`; `window` overrides the model's context window; `env` holds the CLI's variables
    that change its budget."""
    listing: Listing = rules_of(engine).listing(skills, model, window, env or {})
    return listing


def rules_of(engine: str) -> ModuleType:
    """The engine's skill-listing rule, from the module its registry entry names."""
    from aam_eval_action.engines.registry import ENGINES

    return importlib.import_module(ENGINES[engine].listing)


def lint(skills: list[Skill]) -> list[tuple[str, int | None, str]]:
    """(file, line, message) for each description a CLI cuts or refuses, and for a package that
    alone fills more than half a CLI's listing budget (at that CLI's default model)."""
    from aam_eval_action.engines.registry import ENGINES

    found: list[tuple[str, int | None, str]] = []
    weighed = [name for name, info in ENGINES.items() if info.lists_in_check]
    for s in skills:
        if s.command or not s.file:
            continue
        listed = f"{s.description} - {s.when_to_use}" if s.when_to_use else s.description
        cuts = [cut for engine in weighed if (cut := rules_of(engine).description_cut(s))]
        if cuts:
            found.append((s.file, s.line, f"description: {len(listed):,} characters in the skill listing; "
                          + "; ".join(cuts) + "; say when to use it in fewer words"))
    mine = [s for s in skills if not s.command] or skills
    if not mine:
        return found
    for engine in weighed:
        model = ENGINES[engine].default_model
        listing = predict(engine, skills, model)
        whole = predict(engine, skills, model, window=10**9, env={"SKILL_CHAR_BUDGET": str(10**9)})
        share = sum(e.size for e in whole.of("package"))  # each entry in full
        if listing.budget and share > listing.budget / 2:
            found.append((mine[0].file or "SKILL.md", None,
                          f"the package's {len(mine)} skill(s) alone take {share:,} of {engine}'s "
                          f"{listing.budget:,}-{listing.unit} skill listing at {model} (over half): beside "
                          "other plugins' skills some of them are listed by name only; `aam-eval budget` "
                          "shows which"))
    return found
