"""Which agent CLI processes are alive, read from /proc (zombies do not count)."""

from __future__ import annotations

import os
from pathlib import Path


def live_claude(under: Path | None = None) -> set[int]:
    """PIDs of running `claude` processes other than the test runner itself.

    With `under`, only those working in a directory below it: a test that gives its runs a
    temp directory of their own is not misled by other runs' agents on the same machine.
    """
    found = set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes()
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
            cwd = os.readlink(proc / "cwd") if under is not None else ""
        except (OSError, IndexError):
            continue
        if under is not None and not cwd.startswith(str(under.resolve())):
            continue
        if b"claude" in cmd and b"pytest" not in cmd and state != "Z":
            found.add(int(proc.name))
    return found
