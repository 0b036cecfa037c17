"""The run's `--jobs`: how many agent sessions, re-executions and live model calls of its own
(judge votes) run at once, whichever case they belong to.

A case is more than one session (attempts, the arm without the package, the recording's
self-check, three judge votes), so scheduling whole cases `jobs` at a time leaves workers idle
while one case waits on its last session and another could start. Instead the work of a case
runs side by side, and each expensive step takes one of the run's slots: never more than
`jobs` at a time, and never idle while any case has work waiting. A recording's self-check
waits behind every session and judge step that is waiting: it costs the run only slots that
would otherwise be idle, and the run's end.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")


class Slots:
    """At most `jobs` holders at once. A step that can wait (`later`: a recording's self-check)
    takes a free slot only when no other step is waiting for one: it fills the slots sessions
    and judge votes leave idle, and never holds up a step a case's verdict waits on."""

    def __init__(self, jobs: int) -> None:
        self._jobs = max(1, jobs)
        self._used = 0
        self._first = 0
        """Steps waiting for a slot that go before any `later` one."""
        self._turn = threading.Condition()
        self._mine = threading.local()

    def held(self, later: bool = False) -> _Held:
        """One slot for the duration of a `with` (a thread already holding one takes no second:
        a step nested in another never waits on itself). A plain context manager, not a
        generator's: contextlib would assign a traceback to what passes through, and some of
        this project's exceptions are frozen dataclasses."""
        return _Held(self, later)

    def _enter(self, later: bool) -> None:
        if getattr(self._mine, "depth", 0):
            self._mine.depth += 1
            return
        with self._turn:
            if later:
                self._turn.wait_for(lambda: self._used < self._jobs and not self._first)
            else:
                self._first += 1
                try:
                    self._turn.wait_for(lambda: self._used < self._jobs)
                finally:
                    self._first -= 1
                    if not self._first:
                        self._turn.notify_all()  # a `later` step may take a slot still free
            self._used += 1
        self._mine.depth = 1

    def _exit(self) -> None:
        self._mine.depth -= 1
        if self._mine.depth:
            return
        with self._turn:
            self._used -= 1
            self._turn.notify_all()


class _Held:
    def __init__(self, slots: Slots, later: bool) -> None:
        self.slots = slots
        self.later = later

    def __enter__(self) -> None:
        self.slots._enter(self.later)

    def __exit__(self, *exc: object) -> None:
        self.slots._exit()


def side_by_side(calls: list[Callable[[], T]], together: bool = True) -> list[T]:
    """Each call in a thread of its own, results in order; the first exception is raised once
    all have ended (what each does that is expensive takes a slot itself). Not `together`, one
    after another: under `max-usd` a case holds the run's one paid slot in its own thread."""
    if len(calls) <= 1 or not together:
        return [call() for call in calls]
    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        futures = [pool.submit(call) for call in calls]
        return [future.result() for future in futures]
