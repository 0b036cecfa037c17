"""The data of a skill listing: a skill as a CLI reads it, its entry, the listing."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Shown = Literal["full", "truncated", "name-only", "left-out"]
"""How a skill is shown in a listing: with its whole description, with its description cut short,
by its name only, or not at all."""
Origin = Literal["package", "neighbor", "cli"]
"""Where a listed skill comes from: the package under test, a neighbour installed beside it, or
the CLI itself (the skills every CLI ships)."""


@dataclass(frozen=True)
class Skill:
    """A skill (or a command, which Claude Code lists with them) as the CLI reads it."""

    name: str
    description: str
    origin: Origin = "package"
    when_to_use: str | None = None
    """Claude Code appends it to the description (` - <when_to_use>`)."""
    file: str | None = None
    """Its SKILL.md, relative to the package root (a neighbour's: as given)."""
    line: int | None = None
    """The line of its `description:`."""
    body: int = 0
    """Characters of its SKILL.md after the frontmatter: what invoking it reads."""
    strict_yaml: bool = True
    """Whether its frontmatter is valid YAML (Copilot CLI leaves out a skill whose is not)."""
    command: bool = False
    """A slash command (Claude Code lists them among the skills)."""
    fixed: int | None = None
    """A CLI's own skill: the length of its whole entry, which these rules keep as it is (its text
    is the CLI's; only its size matters here)."""


@dataclass
class Entry:
    """One skill's place in a listing."""

    skill: Skill
    shown: Shown
    size: int
    """What its entry costs against the budget, in the listing's unit."""
    description_shown: int
    """Characters of its description the model sees."""


@dataclass
class Listing:
    """The skill listing a CLI sends, predicted by its rules."""

    engine: str
    cli: str
    """The CLI release whose rules these are."""
    model: str
    window: int | None
    """The context window the budget follows from (None: the CLI's budget does not depend on it)."""
    budget: int | None
    """None: no budget."""
    unit: str
    """`characters`, `tokens` (Codex: UTF-8 bytes / 4, rounded up, per line) or `UTF-16 units`."""
    used: int
    entries: list[Entry] = field(default_factory=list)
    rule: str = ""
    """The rule in one sentence."""
    notes: list[str] = field(default_factory=list)

    def of(self, origin: Origin) -> list[Entry]:
        return [e for e in self.entries if e.skill.origin == origin]

    @property
    def cli_used(self) -> int:
        """What the CLI's own skills take of the budget."""
        return sum(e.size for e in self.of("cli"))

    @property
    def over(self) -> bool:
        return any(e.shown != "full" for e in self.entries)

    def shown(self, name: str) -> Shown | None:
        return next((e.shown for e in self.entries if e.skill.name == name), None)
