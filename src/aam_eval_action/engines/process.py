"""Run an agent CLI as its own process group, with a timeout that kills the whole group."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from aam_eval_action.errors import AamEvalError
from aam_eval_action.sandbox.plan import Confinement, launched

_running: set[int] = set()
_running_lock = threading.Lock()
_stopping = False
"""Set by kill_all under the lock: after an interrupt's kill, no new session may start."""


class Stopped(AamEvalError):
    """The run is being interrupted: no new agent CLI is started."""

    exit_code = 130


@dataclass(frozen=True)
class Completed:
    """What a finished (or killed) CLI process left behind."""

    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool
    duration_seconds: float


def run_process(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout: float,
    confine: Confinement | None = None,
) -> Completed:
    """Run `argv` in a new session (inside `confine`'s sandbox); on timeout kill every process
    in its group."""
    start = time.monotonic()
    with contextlib.ExitStack() as stack:
        argv = stack.enter_context(confine.entered(argv)) if confine is not None else launched(argv)
        out, err, code, timed_out = _run(argv, cwd, env, timeout)
    return Completed(
        exit_code=code,
        stdout=out.decode("utf-8", "replace"),
        stderr=err.decode("utf-8", "replace"),
        timed_out=timed_out,
        duration_seconds=time.monotonic() - start,
    )


def _run(
    argv: list[str], cwd: Path, env: dict[str, str], timeout: float
) -> tuple[bytes, bytes, int | None, bool]:
    """Its output, exit status (None when killed) and whether it timed out."""
    # Spawned under the lock kill_all takes: a session either is registered before the
    # kill (and killed with the others) or sees the stop and never starts.
    with _running_lock:
        if _stopping:
            raise Stopped("interrupted: no new agent session is started")
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        _running.add(proc.pid)
    try:
        out, err = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        out, err = proc.communicate()
        timed_out = True
    finally:
        kill_group(proc.pid)  # children left behind by a finished CLI go too
        with _running_lock:
            _running.discard(proc.pid)
    return out, err, None if timed_out else proc.returncode, timed_out


def kill_group(pgid: int) -> None:
    """SIGTERM a process group, then SIGKILL what is left after a short grace."""
    for sig, grace in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 0.0)):
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            return
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            if not _group_alive(pgid):
                return
            time.sleep(0.05)


def kill_all() -> None:
    """Kill every agent process group still running, and start no new one (used on interrupt)."""
    global _stopping
    with _running_lock:
        _stopping = True
        pids = list(_running)
    for pid in pids:
        kill_group(pid)


def allow_spawning() -> None:
    """A new run starts: sessions may be spawned again (after a previous run's kill_all)."""
    global _stopping
    with _running_lock:
        _stopping = False


def _group_alive(pgid: int) -> bool:
    """Whether a live (non-zombie) process is left in the group.

    A zombie still answers killpg(pgid, 0) until its parent reaps it, which can take seconds
    when the parent is PID 1; waiting for it would only slow every session down.
    """
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    members = _members(pgid)
    return members is None or any(state != "Z" for state in members)


def _members(pgid: int) -> list[str] | None:
    """States of the group's processes from /proc; None where /proc cannot tell."""
    proc = Path("/proc")
    if not proc.is_dir():
        return None
    states = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # Fields after the parenthesised command: state, ppid, pgrp, ...
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 2 and int(fields[2]) == pgid:
            states.append(fields[0])
    return states
