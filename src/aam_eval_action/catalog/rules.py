"""Each CLI's skill-listing rule, as read from the pinned release and confirmed through it.

A rule takes the skills a run installs (the package's and its neighbours', as project skills,
with the names the CLI gives them), adds the CLI's own skills (only their sizes are kept here),
and returns the listing: its budget, what each entry costs, and how each skill is shown. The
numbers come from the CLIs themselves (docs/crowded-catalogs.md; tests/test_catalog_e2e.py reads
the listings back from the requests each real CLI sends).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable

from aam_eval_action.catalog.listing import Entry, Listing, Shown, Skill

# --- Claude Code 2.1.330 ---

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


def claude_code(skills: list[Skill], model: str, window: int | None, env: dict[str, str]) -> Listing:
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


# --- Codex 0.169.0 ---

CODEX_CLI = "0.169.0"
CODEX_DESCRIPTION_CAP = 1024
CODEX_SHARE = 2
"""Percent of the context window, in tokens."""
CODEX_WINDOWS = {"gpt-5.5": 272_000, "gpt-6.1-terra": 500_000, "gpt-daybreak-red-latest": 372_000}
CODEX_DEFAULT_WINDOW = 272_000
CODEX_OWN = (("imagegen", 570), ("openai-docs", 624), ("skill-creator", 106), ("skill-installer", 225))
"""The system skills Codex installs in its home, listed first: description lengths (ASCII)."""


def codex_cost(line: str) -> int:
    """A listing line's cost: its UTF-8 bytes with the newline, a token per 4, rounded up."""
    return (len(line.encode()) + 1 + 3) // 4


def codex(skills: list[Skill], model: str, window: int | None, env: dict[str, str]) -> Listing:
    window = window or CODEX_WINDOWS.get(model.strip().lower(), CODEX_DEFAULT_WINDOW)
    budget = max(1, window * CODEX_SHARE // 100)
    own = [Skill(name, "x" * size, "cli") for name, size in CODEX_OWN]
    loaded: list[Skill] = []
    refused: list[Skill] = []
    for s in skills:
        (loaded if len(s.name) <= 64 and s.description.strip() else refused).append(s)
    listed = [*own, *sorted(loaded, key=lambda s: s.name)]
    paths = [f"r{0 if s.origin == 'cli' else 1}/{s.name}/SKILL.md" for s in listed]
    texts, capped = [], []
    for s in listed:
        text = " ".join(s.description.split())
        capped.append(len(text) > CODEX_DESCRIPTION_CAP)
        texts.append(text[:CODEX_DESCRIPTION_CAP - 3] + "..." if capped[-1] else text)

    def line(i: int, chars: int) -> str:
        shown = texts[i][:chars]
        return f"- {listed[i].name}: {shown} (file: {paths[i]})" if shown else \
            f"- {listed[i].name}: (file: {paths[i]})"

    n = len(listed)
    alloc: list[int | None] = [len(t) for t in texts]
    if sum(codex_cost(line(i, len(texts[i]))) for i in range(n)) > budget:
        bare = [codex_cost(line(i, 0)) for i in range(n)]
        if sum(bare) <= budget:
            left, alloc = budget - sum(bare), [0] * n
            cost = bare[:]
            grew = True
            while grew:  # a character at a time, round robin in listing order
                grew = False
                for i in range(n):
                    have = alloc[i] or 0
                    if have >= len(texts[i]):
                        continue
                    more = codex_cost(line(i, have + 1)) - cost[i]
                    if more <= left:
                        alloc[i], left, cost[i], grew = have + 1, left - more, cost[i] + more, True
        else:
            used, alloc = 0, [None] * n
            for i in range(n):  # name-only lines in order, each that still fits
                if used + bare[i] <= budget:
                    used, alloc[i] = used + bare[i], 0
    entries = []
    for i, s in enumerate(listed):
        chars = alloc[i]
        if chars is None:
            entries.append(Entry(s, "left-out", 0, 0))
            continue
        shown: Shown = "name-only" if chars == 0 and texts[i] else \
            "truncated" if chars < len(texts[i]) or capped[i] else "full"
        entries.append(Entry(s, shown, codex_cost(line(i, chars)), chars))
    entries += [Entry(s, "left-out", 0, 0) for s in refused]
    return Listing(
        engine="codex", cli=CODEX_CLI, model=model, window=window, budget=budget, unit="tokens",
        used=sum(e.size for e in entries), entries=entries,
        rule=(f"budget {CODEX_SHARE}% of {window:,} tokens (a line's UTF-8 bytes / 4); a description over "
              f"{CODEX_DESCRIPTION_CAP:,} characters is cut; over budget every description is shortened a "
              "character at a time, round robin, to fit; when even names alone do not fit, skills are left "
              "out from the end (its own system skills come first)"),
        notes=[f"{len(refused)} skill(s) not loaded: a name over 64 characters or no description"]
        if refused else [],
    )


# --- Copilot CLI 1.0.102 ---

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


def copilot(skills: list[Skill], model: str, window: int | None, env: dict[str, str]) -> Listing:
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


# --- Gemini CLI 0.61.0 ---

GEMINI_CLI = "0.61.0"
GEMINI_OWN = (("skill-creator", 230), ("antigravity-support", 273))
"""Its built-in skills, listed first: description lengths."""
GEMINI_LOCATION = len("/home/runner/.agents/skills//SKILL.md")
"""A typical `<location>` (the SKILL.md's absolute path) without the skill's folder name."""


def gemini_cli(skills: list[Skill], model: str, window: int | None, env: dict[str, str]) -> Listing:
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


RULES: dict[str, Callable[[list[Skill], str, int | None, dict[str, str]], Listing]] = {
    "claude-code": claude_code, "codex": codex, "copilot": copilot, "gemini-cli": gemini_cli,
}
