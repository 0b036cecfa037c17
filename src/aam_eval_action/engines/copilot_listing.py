"""Copilot CLI's skill listing, as read from the pinned release and confirmed through it
(`listing`; see `catalog/`), and how it cuts a description too long for it (`description_cut`)."""

from __future__ import annotations

import re

from aam_eval_action.catalog.listing import Entry, Listing, Skill

COPILOT_CLI = "1.0.102"
COPILOT_BUDGET = 15_000
COPILOT_DESCRIPTION_MAX = 1024
COPILOT_OVERFLOW_CAP = 5_000
COPILOT_OVERFLOW = "Additional skills available (invoke by name): "
COPILOT_OWN = (("customize-cloud-agent", 444), ("github-pr-media", 325))
"""Its built-in skills, listed last: the length of each entry."""
COPILOT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]*")


def units(text: str) -> int:
    """JavaScript string length (UTF-16 code units), what Copilot CLI's limits count."""
    return len(text.encode("utf-16-le")) // 2


def copilot_escape(text: str) -> str:
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("'", "&apos;"))


def listing(skills: list[Skill], model: str, window: int | None, env: dict[str, str]) -> Listing:
    raw = re.match(r"\s*([+-]?\d+)", env.get("SKILL_CHAR_BUDGET", ""))
    budget = int(raw.group(1)) if raw and int(raw.group(1)) > 0 else COPILOT_BUDGET
    loaded: list[Skill] = []
    refused: list[Skill] = []
    for s in skills:
        ok = (s.strict_yaml and COPILOT_NAME.fullmatch(s.name) is not None and len(s.name) <= 64
              and units(s.description) <= COPILOT_DESCRIPTION_MAX)
        (loaded if ok else refused).append(s)
    listed = [*sorted(loaded, key=lambda s: s.name.encode("utf-16-be")),
              *(Skill(name, "", "cli", fixed=size) for name, size in COPILOT_OWN)]

    def entry(s: Skill) -> int:
        return s.fixed if s.fixed is not None else \
            87 + units(s.name) + units(copilot_escape(s.description)) + len("project")

    entries, used, cut = [], 0, None
    overflow = units(COPILOT_OVERFLOW)
    for s in listed:
        size = entry(s)
        if cut is None and used + size <= budget:
            used += size
            entries.append(Entry(s, "full", size, len(s.description)))
            continue
        cut = cut or s.name
        piece = units(s.name) + (2 if overflow > units(COPILOT_OVERFLOW) else 0)
        if overflow + piece <= COPILOT_OVERFLOW_CAP:
            overflow += piece
            entries.append(Entry(s, "name-only", piece, 0))
        else:
            entries.append(Entry(s, "left-out", 0, 0))
    entries += [Entry(s, "left-out", 0, 0) for s in refused]
    return Listing(
        engine="copilot", cli=COPILOT_CLI, model=model, window=None, budget=budget, unit="UTF-16 units",
        used=sum(e.size for e in entries) + (units(COPILOT_OVERFLOW) if cut else 0), entries=entries,
        rule=(f"a fixed budget of {budget:,} characters for whole entries, whatever the model; entries go in "
              "order (project, user, plugin skills, then its own) until one does not fit: it and every skill "
              f"after it are named on one line (up to {COPILOT_OVERFLOW_CAP:,} characters); a skill whose "
              f"description is over {COPILOT_DESCRIPTION_MAX:,} characters, or whose frontmatter is not "
              "valid YAML, is not loaded at all"),
        notes=[f"{len(refused)} skill(s) not loaded: a description over {COPILOT_DESCRIPTION_MAX:,} "
               "characters, frontmatter that is not valid YAML, or a name it refuses"] if refused else [],
    )


def description_cut(skill: Skill) -> str | None:
    """Copilot CLI does not load a skill whose description is too long."""
    if units(skill.description) > COPILOT_DESCRIPTION_MAX:
        return "Copilot CLI does not load the skill at all"
    return None
