"""What confines one agent session: the folders it may write, the one TCP port it may reach, and
how that is enforced here (Landlock at the kernel's ABI, else only the after-the-fact checks)."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from aam_eval_action.sandbox import landlock

Writes = str
"""`landlock` (the kernel refuses any other write) or `check` (found after the fact)."""
Network = str
"""`open` (sandbox.network: true), `port-only` (TCP to the model proxy's port alone, no
listening), or `none` (nothing enforced: only the CLI's own web tools are off)."""


@functools.cache
def probe(simulate_none: bool = False) -> tuple[int, str]:
    """The kernel's Landlock ABI (0: none) and why not, probed once per run."""
    return landlock.abi(simulate_none)


def simulated_none(runner_env: Mapping[str, str]) -> bool:
    """Whether the runner asks to be treated as a machine without Landlock."""
    return runner_env.get(landlock.SIMULATE_NONE) == "1"


@dataclass(frozen=True)
class Confinement:
    """One session's sandbox: what it may write and reach, and the ABI that enforces it."""

    writable: tuple[str, ...]
    """Folders (and files) beneath which the session may write."""
    tcp_ports: tuple[int, ...] | None
    """The only TCP ports it may connect to; None: the network is open."""
    abi: int
    """Landlock ABI that enforces it; 0: not enforced here."""
    why_not: str = ""
    """Why nothing is enforced, when `abi` is 0."""
    by: str = ""
    """The engine's own sandbox, when it confines the session instead of ours (Codex's
    bubblewrap: it cannot run inside Landlock, which forbids its user-namespace setup)."""

    @property
    def writes(self) -> Writes:
        return self.by or ("landlock" if self.abi else "check")

    @property
    def network(self) -> Network:
        if self.tcp_ports is None:
            return "open"
        return self.by or ("port-only" if self.abi >= 4 else "none")

    def describe(self) -> str:
        """`writes: landlock; network: port-only`, as the report and the console say it."""
        text = f"writes: {self.writes}; network: {self.network}"
        return text + (f" ({self.why_not})" if self.why_not else "")

    def also_writable(self, *paths: Path) -> Confinement:
        """The same sandbox with more folders writable (a CLI's shared cache)."""
        return replace(self, writable=(*self.writable, *(str(p) for p in paths)))

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """The command that runs `argv` inside this sandbox (as it is, when nothing enforces it)."""
        if not self.abi or self.by:
            return list(argv)
        spec = {"abi": self.abi, "writable": list(self.writable),
                "tcp_ports": list(self.tcp_ports) if self.tcp_ports is not None else None}
        return [sys.executable, "-I", "-m", "aam_eval_action.sandbox.enter", json.dumps(spec), "--", *argv]


@functools.cache
def hide_environment() -> None:
    """This process's environment (the runner's keys) unreadable to the sessions it starts: not
    dumpable, its /proc entries need a capability the sandboxed agent has given up."""
    import ctypes

    if sys.platform == "linux":
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0


def confine(
    writable: Sequence[Path], proxy_port: int | None, network: bool, simulate_none: bool = False
) -> Confinement:
    """The sandbox of a session that writes beneath `writable` and reaches its model through
    `proxy_port` (every session may write /dev's null and tty devices too)."""
    version, why = probe(simulate_none)
    if version:
        hide_environment()
    return Confinement(writable=(*(str(p) for p in writable), "/dev"),
                       tcp_ports=None if network else tuple(p for p in [proxy_port] if p),
                       abi=version, why_not=why)


def short_of(c: Confinement, network: bool) -> str | None:
    """How this sandbox falls short of what eval-config's `sandbox` asks, or None."""
    if c.by:
        return None
    if not c.abi:
        return f"this machine cannot confine the agent's writes ({c.why_not})"
    if not network and c.network != "port-only":
        return (f"this kernel's Landlock (ABI {c.abi}) cannot limit the agent's network to the model's "
                "port (that needs ABI 4, Linux 6.7)")
    return None
