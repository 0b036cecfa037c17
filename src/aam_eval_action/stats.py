"""Small exact statistics for repeated cases: Fisher's exact test and Newcombe's interval.

No dependency: the tables are tiny (attempts of one case), so exact sums over binomial
coefficients are both fast and precise.
"""

from __future__ import annotations

import math

Z95 = 1.959963984540054
"""The 97.5th percentile of the standard normal: a two-sided 95% interval."""
ALPHA = 0.05
"""A change is significant when Fisher's p-value is below this."""


def fisher_exact(pass_a: int, fail_a: int, pass_b: int, fail_b: int) -> float:
    """Two-sided p-value of Fisher's exact test on the 2x2 table [[pass_a, fail_a], [pass_b, fail_b]].

    Sums the probabilities of every table with the same margins that is no more likely than
    the observed one (the usual two-sided definition, as in R's fisher.test).
    """
    n_a, n_b, passes = pass_a + fail_a, pass_b + fail_b, pass_a + pass_b
    if n_a == 0 or n_b == 0:
        return 1.0
    total = math.comb(n_a + n_b, passes)

    def prob(k: int) -> float:
        return math.comb(n_a, k) * math.comb(n_b, passes - k) / total

    observed = prob(pass_a)
    low, high = max(0, passes - n_b), min(n_a, passes)
    p = sum(prob(k) for k in range(low, high + 1) if prob(k) <= observed * (1 + 1e-7))
    return min(1.0, p)


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion (0..1); (0, 1) when n is 0."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe(pass_a: int, n_a: int, pass_b: int, n_b: int) -> tuple[float, float]:
    """95% interval of the difference of proportions p_b - p_a (Newcombe's hybrid score method,
    from the two Wilson intervals)."""
    p_a = pass_a / n_a if n_a else 0.0
    p_b = pass_b / n_b if n_b else 0.0
    lo_a, hi_a = wilson(pass_a, n_a)
    lo_b, hi_b = wilson(pass_b, n_b)
    d = p_b - p_a
    lower = d - math.sqrt((p_b - lo_b) ** 2 + (hi_a - p_a) ** 2)
    upper = d + math.sqrt((hi_b - p_b) ** 2 + (p_a - lo_a) ** 2)
    return max(-1.0, lower), min(1.0, upper)
