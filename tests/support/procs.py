"""Which agent CLI processes are alive, read from /proc (zombies do not count)."""

from __future__ import annotations

from pathlib import Path


def live_claude() -> set[int]:
    """PIDs of running `claude` processes other than the test runner itself."""
    found = set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes()
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if b"claude" in cmd and b"pytest" not in cmd and state != "Z":
            found.add(int(proc.name))
    return found
