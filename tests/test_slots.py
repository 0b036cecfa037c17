"""The run's `--jobs` slots: never more holders than jobs, and a self-check (`later`) waits behind
every session or judge step that is waiting, so it takes only slots they leave idle."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from aam_eval_action.pipeline.slots import Slots


def _holder(slots: Slots, name: str, order: list[str], later: bool = False,
            release: threading.Event | None = None) -> threading.Thread:
    def hold() -> None:
        with slots.held(later=later):
            order.append(name)
            if release is not None:
                release.wait(5)

    thread = threading.Thread(target=hold, name=name)
    thread.start()
    return thread


def _until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 5
    while not condition():
        assert time.monotonic() < deadline, "the steps never got there"
        time.sleep(0.01)


def _release(release: threading.Event, *threads: threading.Thread) -> None:
    release.set()
    for thread in threads:
        thread.join(5)


def test_a_self_check_waits_behind_a_session_that_asked_after_it() -> None:
    slots, order, release = Slots(1), [], threading.Event()
    busy = _holder(slots, "session-1", order, release=release)
    _until(lambda: order == ["session-1"])
    check = _holder(slots, "check-1", order, later=True)
    time.sleep(0.05)  # the self-check is queued first
    session = _holder(slots, "session-2", order)
    _until(lambda: slots._first == 1)
    _release(release, busy, check, session)
    assert order == ["session-1", "session-2", "check-1"]


def test_a_self_check_takes_a_free_slot_when_nothing_else_waits_and_jobs_is_never_exceeded() -> None:
    slots, order, release = Slots(2), [], threading.Event()
    busy = _holder(slots, "session-1", order, release=release)
    _until(lambda: order == ["session-1"])
    check = _holder(slots, "check-1", order, later=True, release=release)
    _until(lambda: order == ["session-1", "check-1"])  # the second slot was idle: the check took it
    third = _holder(slots, "session-2", order)
    time.sleep(0.1)
    assert order == ["session-1", "check-1"]  # two held: the third waits
    _release(release, busy, check, third)
    assert order == ["session-1", "check-1", "session-2"]


def test_a_step_nested_in_one_that_holds_a_slot_takes_no_second() -> None:
    slots, done = Slots(1), []
    with slots.held(), slots.held(later=True):
        done.append(True)
    assert done == [True]
