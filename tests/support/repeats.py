"""Repeats: a behaviour shown once in the test suite, run again on more engines in `bench/`.

The README's test command keeps one end-to-end test per behaviour. Where a behaviour does not
depend on the engine (an imported case's provenance, say), the test runs on one engine, and
`bench/bench_repeats.py` runs it on the others with `AAM_EVAL_REPEATS=1`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

REPEATS_ENV = "AAM_EVAL_REPEATS"


def repeated(shown: Sequence[str], repeats: Sequence[str]) -> list[str]:
    """`shown`, and with `AAM_EVAL_REPEATS=1` the `repeats` too."""
    return [*shown, *repeats] if repeating() else list(shown)


def repeating() -> bool:
    """Whether the repeats run too (`AAM_EVAL_REPEATS=1`, as bench/bench_repeats.py sets it)."""
    return os.environ.get(REPEATS_ENV, "") not in ("", "0")
