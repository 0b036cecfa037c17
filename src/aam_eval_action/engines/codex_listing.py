"""Codex's skill listing, as read from the pinned release and confirmed through it
(`listing`; see `catalog/`), and how it cuts a description too long for it (`description_cut`)."""

from __future__ import annotations

from aam_eval_action.catalog.listing import Entry, Listing, Shown, Skill

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


def listing(skills: list[Skill], model: str, window: int | None, env: dict[str, str]) -> Listing:
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


def description_cut(skill: Skill) -> str | None:
    """How Codex cuts a description that is too long for its listing."""
    if len(" ".join(skill.description.split())) > CODEX_DESCRIPTION_CAP:
        return f"Codex cuts it to {CODEX_DESCRIPTION_CAP - 3:,} characters and '...'"
    return None
