"""Golden files for rendered output: compare, or rewrite them with UPDATE_GOLDEN=1."""

from __future__ import annotations

import os
from pathlib import Path

GOLDEN_DIR = Path(__file__).resolve().parent.parent / "golden"


def assert_golden(name: str, text: str) -> None:
    """`text` must equal tests/golden/NAME; UPDATE_GOLDEN=1 rewrites the file instead."""
    path = GOLDEN_DIR / name
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
        return
    assert path.exists(), f"{path} is missing: run the tests with UPDATE_GOLDEN=1"
    expected = path.read_bytes().decode("utf-8")
    assert text == expected, f"{path} differs: check the change, then UPDATE_GOLDEN=1"
