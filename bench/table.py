"""The plain text table the benchmark scripts print."""

from __future__ import annotations

from collections.abc import Sequence


def print_table(head: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """Columns padded to their widest cell, the head first."""
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    for row in [head, *rows]:
        print("  ".join(str(v).ljust(w) for v, w in zip(row, widths, strict=True)))
