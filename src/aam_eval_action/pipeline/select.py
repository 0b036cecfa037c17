"""Which cases a run takes: by name, by target, then one shard's share of them."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
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
    durations: dict[str, float] | None = None, tags: str | None = None,
) -> list[LoadedCase]:
    """The cases to run: by name (its id or the name it is written under; `*` and `?` match as
    in `claude plugin eval --case`), by target, by tags, then this shard's share."""
    unknown = [n for n in names if not any(named(n, c) for c in cases)]
    if unknown:
        known = sorted(c.case.title or c.case.name for c in cases)
        raise UsageError(
            f"no such case: {', '.join(unknown)}; known cases: {', '.join(known) or 'none'}"
        )
    chosen = [c for c in cases if (not names or any(named(n, c) for n in names))]
    if target:
        chosen = [c for c in chosen if c.case.target == target]
    if tags:
        wanted = parse_tags(tags)
        chosen = [c for c in chosen if wanted(set(c.case.tags))]
    if shard:
        mine = set(shard_of([c.case.name for c in chosen], shard, durations or {}))
        chosen = [c for c in chosen if c.case.name in mine]
    return chosen


def named(pattern: str, loaded: LoadedCase, plugin: str | None = None) -> bool:
    """Whether `pattern` names the case: its id or its written name (bare, or `<plugin>/…` in a
    repository of several plugins), exactly, or as a glob where `*` is any run of characters and
    `?` one (that runner's `--case`)."""
    names = [n for n in (loaded.case.name, loaded.case.title) if n]
    names += [f"{plugin}/{n}" for n in names] if plugin else []
    if pattern in names:
        return True
    if "*" not in pattern and "?" not in pattern:
        return False
    glob = re.compile("".join(".*" if ch == "*" else "." if ch == "?" else re.escape(ch) for ch in pattern),
                      re.S)
    return any(glob.fullmatch(n) for n in names)


TAG_TOKEN = re.compile(r"\s*(&&|\|\||!|\(|\)|[A-Za-z0-9][A-Za-z0-9._:/+-]*)")


def parse_tags(expr: str) -> Callable[[set[str]], bool]:
    """`sql && !slow`, `(a || b) && c`: a test of a case's tags (`!` binds tightest, then `&&`)."""
    tokens, pos = [], 0
    while pos < len(expr):
        if expr[pos:].strip() == "":
            break
        found = TAG_TOKEN.match(expr, pos)
        if not found:
            raise UsageError(f"--tags {expr!r}: cannot read {expr[pos:].strip()[:20]!r}; use tags with "
                             "&&, ||, ! and parentheses, e.g. 'sql && !slow'")
        tokens.append(found.group(1))
        pos = found.end()
    test, rest = _or(tokens, expr)
    if rest:
        raise UsageError(f"--tags {expr!r}: unexpected {rest[0]!r}")
    return test


Test = Callable[[set[str]], bool]


def _or(tokens: list[str], expr: str) -> tuple[Test, list[str]]:
    return _chain(tokens, expr, "||", _and, any)


def _and(tokens: list[str], expr: str) -> tuple[Test, list[str]]:
    return _chain(tokens, expr, "&&", _not, all)


def _chain(tokens: list[str], expr: str, op: str, inner: Callable[[list[str], str], tuple[Test, list[str]]],
           join: Callable[[Iterable[bool]], bool]) -> tuple[Test, list[str]]:
    """`a op b op c`: each side parsed by `inner`, the results joined (`any`, `all`)."""
    parts, rest = [], tokens
    while True:
        test, rest = inner(rest, expr)
        parts.append(test)
        if rest[:1] != [op]:
            return (lambda t: join(p(t) for p in parts)), rest
        rest = rest[1:]


def _not(tokens: list[str], expr: str) -> tuple[Test, list[str]]:
    if not tokens:
        raise UsageError(f"--tags {expr!r}: a tag is missing at the end")
    head, rest = tokens[0], tokens[1:]
    if head == "!":
        inner, rest = _not(rest, expr)
        return (lambda t: not inner(t)), rest
    if head == "(":
        inner, rest = _or(rest, expr)
        if rest[:1] != [")"]:
            raise UsageError(f"--tags {expr!r}: a ')' is missing")
        return inner, rest[1:]
    if head in ("&&", "||", ")"):
        raise UsageError(f"--tags {expr!r}: a tag is missing before {head!r}")
    return (lambda t: head in t), rest


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
