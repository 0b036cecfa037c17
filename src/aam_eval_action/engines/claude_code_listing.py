"""Claude Code's skill listing, as read from the pinned release and confirmed through it
(`listing`; see `catalog/`), and how it cuts a description too long for it (`description_cut`)."""

from __future__ import annotations

import math
import re
import unicodedata

from aam_eval_action.catalog.listing import Entry, Listing, Shown, Skill

CLAUDE_CLI = "2.1.330"
CLAUDE_DESCRIPTION_CAP = 1536
"""`skillListingMaxDescChars`: a longer description is cut to 1,535 characters and `…`."""
CLAUDE_FRACTION = 0.01
"""`skillListingBudgetFraction`: the listing's share of the context window."""
CLAUDE_FOUR_CHARS = ("claude-3-", "claude-opus-4-0", "claude-opus-4-1", "claude-opus-4-5", "claude-opus-4-6",
                     "claude-sonnet-4-0", "claude-sonnet-4-5", "claude-sonnet-4-6", "claude-haiku-4-5")
"""Models the CLI counts at 4 characters a token; every other (a newer or unknown one) at 3."""
CLAUDE_200K = ("claude-3-", "claude-sonnet-4-0", "claude-sonnet-4-5", "claude-sonnet-4-6", "claude-opus-4-0",
               "claude-opus-4-1", "claude-opus-4-5", "claude-opus-4-6", "claude-haiku-4-5")
"""Models with a 200k window (unless named with `[1m]`); every other model, an unknown one
included, is sized at 1M."""
CLAUDE_ALIASES = {"sonnet": "claude-sonnet-5-5", "opus": "claude-opus-5-5", "haiku": "claude-haiku-5-5"}
CLAUDE_OWN = (("dataviz", 1447), ("update-config", 707), ("keybindings-help", 248), ("code-review", 850),
              ("simplify", 188), ("fewer-permission-prompts", 191), ("loop", 344), ("claude-api", 1169),
              ("workflow-authoring", 252), ("run", 368), ("plugin-authoring", 275))
"""The skills Claude Code ships, listed after the installed ones and always in full: the width of
each entry (6,039 characters, with the newlines between them 6,050)."""
CLAUDE_BUILTIN_COMMANDS = (("init", 59), ("security-review", 71))
"""Its built-in prompt commands, listed last and cut like installed skills: description lengths."""


def claude_model(model: str) -> str:
    """The model id as the CLI compares it: no `[1m]`, no date suffix, an alias resolved."""
    m = re.sub(r"\[1m\]$", "", model.strip(), flags=re.I).lower().replace(".", "-")
    m = re.sub(r"-\d{8}$", "", m)
    return CLAUDE_ALIASES.get(m, m)


def claude_window(model: str) -> int:
    canonical = claude_model(model)
    if re.search(r"\[1m\]$", model.strip(), re.I):
        return 1_000_000
    return 200_000 if canonical.startswith(CLAUDE_200K) else 1_000_000


def claude_budget(model: str, window: int | None, env: dict[str, str]) -> tuple[int, int, str]:
    """(budget, window, how) for Claude Code: `SLASH_COMMAND_TOOL_CHAR_BUDGET` when it is a
    number other than 0, else window × characters a token × 1%."""
    raw = env.get("SLASH_COMMAND_TOOL_CHAR_BUDGET", "").strip().replace(",", "").replace("_", "")
    window = window or claude_window(model)
    try:
        fixed = float(raw) if raw else 0.0
    except ValueError:
        fixed = 0.0
    if fixed and math.isfinite(fixed):
        return int(fixed), window, "SLASH_COMMAND_TOOL_CHAR_BUDGET"
    per_token = 4 if claude_model(model).startswith(CLAUDE_FOUR_CHARS) else 3
    return (max(1, math.floor(window * per_token * CLAUDE_FRACTION)), window,
            f"1% of {window:,} tokens at {per_token} characters a token")


def width(text: str) -> int:
    """Terminal cells, as Claude Code measures its listing: wide (CJK, emoji) characters count 2,
    combining marks and format characters 0."""
    if text.isascii() and text.isprintable():
        return len(text)
    cells = 0
    for ch in text:
        if unicodedata.category(ch) in ("Mn", "Me", "Cf", "Cc"):
            continue
        cells += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return cells


def locale_key(name: str) -> tuple[tuple[tuple[int, int], ...], tuple[bool, ...]]:
    """JavaScript's `localeCompare` (the root collation) for the names skills have: punctuation
    before digits before letters, letters without regard to case first."""
    punctuation = "_-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$"

    def primary(ch: str) -> tuple[int, int]:
        if ch in punctuation:
            return 0, punctuation.index(ch)
        if ch.isdigit():
            return 1, ord(ch)
        return (2, ord(ch.lower())) if ch.isalpha() else (3, ord(ch))

    return tuple(primary(c) for c in name), tuple(c.isupper() for c in name)


def listing(skills: list[Skill], model: str, window: int | None, env: dict[str, str]) -> Listing:
    budget, window, how = claude_budget(model, window, env)
    installed = sorted((s for s in skills if not s.command), key=lambda s: locale_key(s.name))
    commands = sorted((s for s in skills if s.command), key=lambda s: locale_key(s.name))
    own = [Skill(name, "", "cli", fixed=size) for name, size in CLAUDE_OWN]
    builtin = [Skill(name, "x" * size, "cli") for name, size in CLAUDE_BUILTIN_COMMANDS]
    listed = [*installed, *commands, *own, *builtin]
    rows: list[tuple[str, str, bool]] = []  # (name only, whole entry, cut at the cap)
    for s in listed:
        text = f"{s.description} - {s.when_to_use}" if s.when_to_use else s.description
        capped = len(text) > CLAUDE_DESCRIPTION_CAP
        if capped:
            text = text[:CLAUDE_DESCRIPTION_CAP - 1] + "…"
        rows.append((f"- {s.name}", f"- {s.name}: {text}", capped))

    def size(i: int, full: bool) -> int:
        fixed = listed[i].fixed
        return fixed if fixed is not None else width(rows[i][1] if full else rows[i][0])

    n = len(listed)
    keep = set(range(n))
    if sum(size(i, True) for i in range(n)) + n - 1 > budget:
        keep = {i for i in range(n) if listed[i].fixed is not None}
        left = budget - sum(size(i, i in keep) for i in range(n)) - (n - 1)
        for i in range(n):  # no usage history in a fresh HOME: the listing's order
            if i in keep:
                continue
            extra = size(i, True) - size(i, False)
            if extra <= left:
                keep.add(i)
                left -= extra
    entries = []
    for i, s in enumerate(listed):
        shown: Shown = ("truncated" if rows[i][2] else "full") if i in keep else "name-only"
        described = len(rows[i][1]) - len(rows[i][0]) - 2 if i in keep else 0
        entries.append(Entry(s, shown, size(i, i in keep) + (1 if i < n - 1 else 0), max(0, described)))
    return Listing(
        engine="claude-code", cli=CLAUDE_CLI, model=model, window=window, budget=budget, unit="characters",
        used=sum(e.size for e in entries), entries=entries,
        rule=(f"budget {how}; a description over {CLAUDE_DESCRIPTION_CAP:,} characters is cut; over budget, "
              "the installed skills lose their description in listing order (user, project, commands, "
              "plugins) until the rest fits, and are listed by name only; its own skills keep theirs"),
    )


def description_cut(skill: Skill) -> str | None:
    """How Claude Code cuts a description (with `when_to_use`) that is too long for its listing."""
    listed = f"{skill.description} - {skill.when_to_use}" if skill.when_to_use else skill.description
    if len(listed) > CLAUDE_DESCRIPTION_CAP:
        return f"Claude Code cuts it (with when_to_use) to {CLAUDE_DESCRIPTION_CAP - 1:,} characters"
    return None
