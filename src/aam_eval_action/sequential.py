"""The dice: when a case's pass rate changed, decided from counts on both sides.

An agent's verdict is a draw from a rate, so a changed case is sampled until a sequential rule
decides, and a flip of an unchanged case is weighed against the case's history.

The rule for a changed case is a **group-sequential design with a Pocock-type boundary,
calibrated exactly**, and a non-binding futility boundary:

- *regressed*: after each head attempt (a look), the one-sided Fisher exact test of "the head
  passes less often than the base" is computed on the base's history against the head's
  attempts. The case is blamed when that p-value is at most the per-look level. That level is
  the largest for which the chance of blaming an unchanged case at *any* look up to the cap is
  at most 1 - confidence, for every base rate: worked out exactly, by dynamic programming over
  every path of head attempts and every base count (`look_level`). Stopping early, at any look,
  cannot raise the error past it.
- *holds*: the head is not worse than the base by more than the tolerance: the lower bound of
  Newcombe's interval of head minus base, at `holds_confidence` (80%, 95% once the head has
  failed), is above -tolerance. Stopping for it only removes chances to blame, so the
  false-blame bound stands whatever it does (non-binding).
- *not shown*: the cap (runs per case, or the spend cap) was reached first.

Why this design: the base side is a fixed history, not a stream, and the head side is a handful
of expensive runs, so an exact small-sample test (Fisher's) fits where normal approximations do
not; an SPRT needs a point alternative and a known base rate, and a confidence sequence wastes
the few runs a case gets. The error rates of the whole rule are computed exactly here
(`error_rates`) and printed by `bench/bench_dice.py`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Literal

from aam_eval_action.stats import wilson

Outcome = Literal["regressed", "holds", "not-shown"]

CONFIDENCE = 0.95
"""The confidence a blame needs: at most 5% of unchanged cases are ever blamed."""
TOLERANCE = 0.3
"""`holds` says the head's rate is not below the base's by more than this."""
HOLDS_CONFIDENCE = 0.8
"""The confidence of `holds` while every head attempt passed (a drop of the tolerance would have
shown a failure 80% of the time); `HOLDS_AFTER_FAIL` once one failed."""
HOLDS_AFTER_FAIL = 0.95
MAX_RUNS = 12
"""Head attempts per changed case at most: with a base history of 10 runs or more, a drop from
0.9 to 0.3 is blamed at least 80% of the time within it (docs/dice.md)."""
RATES = tuple(i / 50 for i in range(1, 51))
"""The base rates the false-blame bound is held over (every rate above 0, in steps of 0.02)."""


@dataclass(frozen=True)
class Rule:
    """The decision rule's settings."""

    confidence: float = CONFIDENCE
    tolerance: float = TOLERANCE
    cap: int = MAX_RUNS
    """Head attempts at most."""

    @property
    def alpha(self) -> float:
        return round(1 - self.confidence, 6)


@dataclass(frozen=True)
class Counts:
    """Passing attempts of all attempts."""

    passes: int
    attempts: int

    def __str__(self) -> str:
        return f"{self.passes}/{self.attempts}"

    @property
    def rate(self) -> float | None:
        return self.passes / self.attempts if self.attempts else None


@dataclass(frozen=True)
class Decided:
    """What the rule says about head against base, at the counts given."""

    outcome: Outcome | None
    """None: not decided yet (more attempts would tell)."""
    p_value: float
    """The one-sided Fisher p-value of "the head passes less often"."""
    level: float
    """The per-look level the p-value was held against."""


def fisher_lower(before: Counts, now: Counts) -> float:
    """One-sided Fisher exact p-value that the head (`now`) passes less often than the base: the
    chance, given both margins, of the head passing this few times or fewer."""
    return _fisher_lower(before.passes, before.attempts, now.passes, now.attempts)


@functools.lru_cache(maxsize=65536)
def _fisher_lower(kb: int, nb: int, kh: int, nh: int) -> float:
    if nb == 0 or nh == 0:
        return 1.0
    passes = kb + kh
    total = math.comb(nb + nh, passes)
    low = max(0, passes - nb)
    return min(1.0, sum(math.comb(nh, k) * math.comb(nb, passes - k) for k in range(low, kh + 1)) / total)


def _z(confidence: float) -> float:
    """The one-sided normal quantile of a confidence (0.8 -> 0.84, 0.95 -> 1.64)."""
    from statistics import NormalDist

    return NormalDist().inv_cdf(confidence)


def newcombe_lower(before: Counts, now: Counts, confidence: float) -> float:
    """One-sided lower bound of head rate minus base rate (Newcombe's hybrid score method)."""
    z = _z(confidence)
    pb, ph = before.passes / before.attempts, now.passes / now.attempts
    lo_h, _ = wilson(now.passes, now.attempts, z)
    _, hi_b = wilson(before.passes, before.attempts, z)
    return (ph - pb) - math.sqrt((ph - lo_h) ** 2 + (hi_b - pb) ** 2)


def holds(before: Counts, now: Counts, rule: Rule) -> bool:
    """The head is not worse than the base by more than the tolerance, at the holds confidence."""
    confidence = HOLDS_CONFIDENCE if now.passes == now.attempts else HOLDS_AFTER_FAIL
    return newcombe_lower(before, now, confidence) > -rule.tolerance


def decide(before: Counts, now: Counts, rule: Rule = Rule(), level: float | None = None) -> Decided:
    """The rule at one look. `outcome` is None while neither boundary is crossed; the caller
    says `not-shown` when it cannot sample more. `level`: the per-look level, when it is known."""
    if before.attempts == 0 or now.attempts == 0:
        return Decided(None, 1.0, 0.0)
    if level is None:
        level = look_level(before.attempts, max(rule.cap, now.attempts), rule.alpha)
    p = fisher_lower(before, now)
    if p <= level:
        return Decided("regressed", p, level)
    if holds(before, now, rule):
        return Decided("holds", p, level)
    return Decided(None, p, level)


def flip(before: Counts, now: Counts, confidence: float = CONFIDENCE) -> Decided:
    """A case whose inputs did not change: do its new attempts pass less often than its history
    at the confidence (one look, so the level is the plain one)?"""
    alpha = round(1 - confidence, 6)
    if before.attempts == 0 or now.attempts == 0:
        return Decided(None, 1.0, alpha)
    p = fisher_lower(before, now)
    return Decided("regressed" if p <= alpha else "holds", p, alpha)


# --- the boundary, calibrated exactly -------------------------------------------------------


@functools.lru_cache(maxsize=1024)
def look_level(n_before: int, cap: int, alpha: float) -> float:
    """The per-look level: the largest Fisher p-value at which blaming at any of `cap` looks
    keeps the false-blame chance at most `alpha` for every base rate (bisection over the
    p-values that can occur)."""
    candidates = sorted({_fisher_lower(kb, n_before, k, t) for kb in range(n_before + 1)
                         for t in range(1, cap + 1) for k in range(t + 1)})
    best, low, high = alpha / cap, 0, len(candidates) - 1
    while low <= high:
        mid = (low + high) // 2
        if _worst_false_blame(n_before, cap, candidates[mid]) <= alpha:
            best, low = max(best, candidates[mid]), mid + 1
        else:
            high = mid - 1
    return best


def _worst_false_blame(n_before: int, cap: int, level: float) -> float:
    """The largest chance, over the base rates, of blaming an unchanged case at some look."""
    bounds = [_bounds(kb, n_before, cap, level) for kb in range(n_before + 1)]
    return max(sum(_binom(n_before, kb, p) * _blame_chance(bounds[kb], p) for kb in range(n_before + 1))
               for p in RATES)


def _bounds(kb: int, nb: int, cap: int, level: float) -> list[int]:
    """At each look t (1..cap): the most head passes that still blames (-1: none does)."""
    found = []
    for t in range(1, cap + 1):
        most = -1
        for k in range(t + 1):
            if _fisher_lower(kb, nb, k, t) > level:
                break
            most = k
        found.append(most)
    return found


def _blame_chance(bounds: list[int], p: float) -> float:
    """The chance of crossing the blame boundary at some look, head attempts passing at rate p."""
    alive, blamed = [1.0], 0.0
    for most in bounds:
        step = [0.0] * (len(alive) + 1)
        for k, w in enumerate(alive):
            step[k] += w * (1 - p)
            step[k + 1] += w * p
        blamed += sum(step[: most + 1])
        alive = [0.0 if k <= most else w for k, w in enumerate(step)]
    return blamed


def _binom(n: int, k: int, p: float) -> float:
    return math.comb(n, k) * p**k * (1 - p) ** (n - k)


# --- what the rule does, computed exactly ---------------------------------------------------


@dataclass(frozen=True)
class Rates:
    """The rule's behaviour for one base rate, head rate and history length."""

    blamed: float
    holds: float
    not_shown: float
    mean_runs: float


def error_rates(base_rate: float, head_rate: float, n_before: int, rule: Rule = Rule()) -> Rates:
    """Exactly, over every base count and every path of head attempts: how often the rule
    blames, holds or runs out, and the head attempts it takes on average."""
    blamed = held = runs = 0.0
    alive_total = 0.0
    for kb in range(n_before + 1):
        weight = _binom(n_before, kb, base_rate)
        if weight == 0.0:
            continue
        before = Counts(kb, n_before)
        alive = [1.0]
        for t in range(1, rule.cap + 1):
            step = [0.0] * (t + 1)
            for k, w in enumerate(alive):
                step[k] += w * (1 - head_rate)
                step[k + 1] += w * head_rate
            runs += weight * sum(alive)
            for k, w in enumerate(step):
                if w == 0.0:
                    continue
                outcome = decide(before, Counts(k, t), rule).outcome
                if outcome == "regressed":
                    blamed += weight * w
                elif outcome == "holds":
                    held += weight * w
                if outcome is not None:
                    step[k] = 0.0
            alive = step
        alive_total += weight * sum(alive)
    return Rates(blamed, held, alive_total, runs)


def more_runs(before: Counts, now: Counts, rule: Rule = Rule(), most: int = 48) -> int | None:
    """About how many more head attempts would decide, were the head to keep passing at the rate
    it has shown so far (None: none within `most`). "About": the look level is the one of the
    rule's cap, not worked out again for a larger one."""
    if before.attempts == 0 or now.attempts == 0:
        return None
    level = look_level(before.attempts, rule.cap, rule.alpha)
    rate = now.passes / now.attempts
    for extra in range(1, most + 1):
        projected = Counts(now.passes + round(rate * extra), now.attempts + extra)
        if decide(before, projected, rule, level).outcome:
            return extra
    return None


def more_both(before: Counts, now: Counts, rule: Rule = Rule()) -> int | None:
    """Where no number of head attempts alone would decide (a thin base): about how many more
    attempts of each side would, both keeping their rates (None: none up to 32 each)."""
    if before.attempts == 0 or now.attempts == 0:
        return None
    for extra in (2, 4, 8, 16, 32):
        base = Counts(before.passes + round(before.passes / before.attempts * extra), before.attempts + extra)
        head = Counts(now.passes + round(now.passes / now.attempts * extra), now.attempts + extra)
        if decide(base, head, rule, look_level(base.attempts, rule.cap, rule.alpha)).outcome:
            return extra
    return None
