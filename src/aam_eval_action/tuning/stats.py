"""The final gate's statistics: a paired comparison of two descriptions on the same prompts.

Each test prompt is right (it reached the skill it belongs to) or wrong under the baseline and
under the candidate. Only the prompts that changed say anything: `better` went from wrong to
right, `worse` from right to wrong. Under no real difference each changed prompt is a coin toss
(McNemar's exact test). The improvement is `(better - worse) / n`; its 95% interval comes from
the exact (Clopper-Pearson) interval of the share of changed prompts that got better, so its
lower bound is above 0 exactly when the exact test says the candidate is better at 2.5% one-sided.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

ALPHA = 0.05


def _tail_at_least(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p)."""
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))


def _tail_at_most(k: int, n: int, p: float) -> float:
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(0, k + 1))


def clopper_pearson(k: int, n: int, alpha: float = ALPHA) -> tuple[float, float]:
    """The exact two-sided interval of a binomial share (bisection on the binomial tails)."""
    if n == 0:
        return 0.0, 1.0

    def solve(f: object, target: float, rising: bool) -> float:
        lo, hi = 0.0, 1.0
        for _ in range(80):
            mid = (lo + hi) / 2
            value = f(mid)  # type: ignore[operator]
            if (value < target) == rising:
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2

    lower = 0.0 if k == 0 else solve(lambda p: _tail_at_least(k, n, p), alpha / 2, True)
    upper = 1.0 if k == n else solve(lambda p: _tail_at_most(k, n, p), alpha / 2, False)
    return lower, upper


@dataclass(frozen=True)
class Paired:
    """A candidate against the baseline on the same prompts."""

    n: int
    """Prompts compared."""
    better: int
    """Wrong with the baseline, right with the candidate."""
    worse: int
    """Right with the baseline, wrong with the candidate."""

    @property
    def improvement(self) -> float:
        return (self.better - self.worse) / self.n if self.n else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        """95% interval of the improvement (a share of the prompts)."""
        changed = self.better + self.worse
        if not self.n:
            return -1.0, 1.0
        lo, hi = clopper_pearson(self.better, changed)
        scale = changed / self.n
        return scale * (2 * lo - 1), scale * (2 * hi - 1)

    @property
    def p_value(self) -> float:
        """McNemar's exact test, two-sided."""
        changed = self.better + self.worse
        if not changed:
            return 1.0
        k = min(self.better, self.worse)
        return min(1.0, 2 * _tail_at_most(k, changed, 0.5))

    @property
    def shown(self) -> bool:
        """Whether the improvement's lower bound is above 0."""
        return self.interval[0] > 0


def least_moves() -> int:
    """The fewest prompts that must move from wrong to right (none the other way) for the lower
    bound to clear 0: the smallest k with (alpha/2)^(1/k) > 1/2."""
    k = 1
    while clopper_pearson(k, k)[0] <= 0.5:
        k += 1
    return k


def detectable(n: int) -> str:
    """The smallest improvement `n` paired prompts can show, in words."""
    k = least_moves()
    if n < k:
        return (
            f"no improvement can show on {n} test prompt(s): at least {k} must go from wrong to right "
            "with none going back; add test prompts (tag cases split:test)"
        )
    return (
        f"with {n} test prompts, the smallest improvement that can show is {k} prompts going from wrong "
        f"to right with none going back ({k / n:.0%} of them)"
    )
