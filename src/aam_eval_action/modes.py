"""The four cassette modes, importable without pydantic (the command line needs them)."""

from __future__ import annotations

from typing import Literal

Mode = Literal["replay", "auto", "record", "live"]
"""replay: cassettes only · auto: cassette if it matches, else live and record ·
record: always live, cassettes rewritten · live: always live, nothing written."""
MODES: tuple[Mode, ...] = ("replay", "auto", "record", "live")
