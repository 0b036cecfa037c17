"""The launcher stays as its session's parent, and the session ends with the run that started it.

A session runs in a process group of its own, which the runner kills when the session ends or
times out. A runner killed outright (SIGKILL, a cancelled job, the OOM killer) kills nothing,
and the group would live on: the CLI waiting on its model, its tools, hooks and MCP servers. So
the launcher forks the session and stays:

- it is the session's subreaper: a process that leaves its group (`setsid`) and is orphaned
  becomes its child, not init's;
- it gets a signal when the runner's thread that started it dies (`PR_SET_PDEATHSIG`); with the
  runner gone, it kills every process beneath it, then itself;
- when the CLI exits, whatever it left behind is killed, and the launcher exits with its status.

Like `landlock`, this module imports nothing of the package: the launcher loads it under `-I`.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing in the launcher
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36
FAILED = 126
"""The exit status when the CLI could not be started."""
ENDING = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def _prctl(option: int, value: int) -> None:
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)


def die_with(runner: int | None) -> None:
    """SIGTERM this process when the runner goes (set again after a change of user, which clears
    it); if it has already gone, end now."""
    if not runner:
        return
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != runner:
        end_session(FAILED)


def run(argv: Sequence[str], runner: int | None, child_setup: Callable[[], None] | None = None,
        started: Callable[[int], None] | None = None) -> int:
    """Fork a child that runs `child_setup`, then becomes `argv`; stay as its parent (see the
    module's text) and return its exit status as a shell gives it. `started` runs in this
    process once the child exists."""
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    parent = os.getpid()
    child = os.fork()
    if child == 0:
        try:
            _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != parent:
                os._exit(FAILED)
            if child_setup is not None:
                child_setup()
            os.execvp(argv[0], list(argv))
        except BaseException as exc:  # the child must never return
            with contextlib.suppress(Exception):
                print(f"aam-eval sandbox: not entered: {exc}", file=sys.stderr, flush=True)
        os._exit(FAILED)

    def on_signal(signum: int, _frame: object) -> None:
        if runner and os.getppid() != runner:  # the runner is gone: so is its session
            end_session(128 + signum)
        with contextlib.suppress(OSError):
            os.kill(child, signum)

    for sig in ENDING:
        signal.signal(sig, on_signal)
    if runner and os.getppid() != runner:
        end_session(FAILED)
    if started is not None:
        started(child)
    status = _wait(child)
    _kill_descendants()
    return status


def _wait(child: int) -> int:
    while True:
        try:
            _, status = os.waitpid(child, 0)
        except ChildProcessError:
            return FAILED
        except InterruptedError:
            continue
        return os.waitstatus_to_exitcode(status)


def end_session(status: int) -> None:
    """Kill every process beneath this one, then exit."""
    for sig in ENDING:
        signal.signal(sig, signal.SIG_IGN)
    _kill_descendants()
    os._exit(status)


def _kill_descendants(deadline: float = 5.0) -> None:
    """SIGKILL this process's children until none is left: as a subreaper, the orphans of each
    killed one become its children in turn."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        children = _children(os.getpid())
        if not children:
            return
        for pid in children:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        _reap()
        time.sleep(0.005)


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if not pid:
            return


def _children(ppid: int) -> list[int]:
    """This process's children (zombies included, until reaped), read from /proc."""
    found = []
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as f:
                    stat = f.read()
            except OSError:
                continue
            fields = stat[stat.rfind(b")") + 2:].split()
            if len(fields) > 1 and int(fields[1]) == ppid:
                found.append(int(entry.name))
    return found
