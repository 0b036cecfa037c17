"""The four cassette modes, importable without pydantic (the command line needs them)."""

from __future__ import annotations

from typing import Literal

Mode = Literal["replay", "auto", "record", "live"]
"""replay: cassettes only · auto: cassette if it matches, else live and record ·
record: always live, cassettes rewritten · live: always live, nothing written."""
MODES: tuple[Mode, ...] = ("replay", "auto", "record", "live")
Rerun = Literal["auto", "always", "never"]
"""How replay gets a session: auto (re-execute the real CLI when an input it runs or reads
changed, else read the snapshot back), always (re-execute) or never (snapshot only)."""
