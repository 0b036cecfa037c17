"""Which cases a run takes: by name, by target, then one shard's share of them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aam_eval_action.errors import UsageError

if TYPE_CHECKING:
    from aam_eval_action.loader import LoadedCase
    from aam_eval_action.settings import RunSettings


def parse_shard(value: str) -> tuple[int, int]:
    """`I/N` → (I, N), 1-based."""
    try:
        index, total = (int(x) for x in value.split("/"))
    except ValueError:
        raise UsageError(f"shard {value!r}: use I/N, e.g. 1/4") from None
    if not 1 <= index <= total:
        raise UsageError(f"shard {value!r}: I must be between 1 and N")
    return index, total


def select(
    cases: list[LoadedCase], names: list[str], target: str | None, shard: tuple[int, int] | None,
    durations: dict[str, float] | None = None,
) -> list[LoadedCase]:
    """The cases to run: by name, by target, then this shard's share."""
    known = {c.case.name for c in cases}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UsageError(
            f"no such case: {', '.join(unknown)}; known cases: {', '.join(sorted(known)) or 'none'}"
        )
    chosen = [c for c in cases if (not names or c.case.name in names)]
    if target:
        chosen = [c for c in chosen if c.case.target == target]
    if shard:
        mine = set(shard_of([c.case.name for c in chosen], shard, durations or {}))
        chosen = [c for c in chosen if c.case.name in mine]
    return chosen


def shard_of(names: list[str], shard: tuple[int, int], durations: dict[str, float]) -> list[str]:
    """Shard I of N: balanced by recorded duration (longest first into the lightest shard),
    by name when nothing is recorded. Every shard computes the same split on its own."""
    index, total = shard
    loads = [0.0] * total
    members: list[list[str]] = [[] for _ in range(total)]
    default = (sum(durations.values()) / len(durations)) if durations else 1.0
    for name in sorted(names, key=lambda n: (-durations.get(n, default), n)):
        lightest = min(range(total), key=lambda i: (loads[i], i))
        loads[lightest] += durations.get(name, default)
        members[lightest].append(name)
    return sorted(members[index - 1])


def recorded_durations(settings: RunSettings) -> dict[str, float]:
    """Seconds each case's recorded session took, from its cassette (when there is one)."""
    from aam_eval_action.replay import agent_cassette

    found: dict[str, float] = {}
    for lc in settings.package.cases:
        path = agent_cassette.session_path(settings.cassettes, lc.case.name, settings.cassette_stem)
        try:
            recorded = agent_cassette.load(path, settings.cassettes)
        except agent_cassette.CassetteError:
            continue
        if recorded is not None:
            found[lc.case.name] = sum(a.duration_seconds for a in recorded.attempts)
    return found
