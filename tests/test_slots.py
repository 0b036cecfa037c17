"""The run's `--jobs` slots: never more holders than jobs, and a self-check (`later`) waits behind
every session or judge step that is waiting, so it takes only slots they leave idle; and the
cases under way beyond `--jobs` that give it those steps to wait behind."""

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


def test_the_next_cases_sessions_go_before_the_self_checks_of_the_cases_before_them() -> None:
    """Live, `--jobs` cases and as many again are under way (`run_tasks`' `ahead`): a case
    whose last step is its self-check does not keep the next case's session from a slot. The
    slots still hold every step to `jobs`."""
    from types import SimpleNamespace
    from typing import Any

    from aam_eval_action.pipeline.scheduler import run_tasks

    def order(ahead: int) -> list[str]:
        slots, steps, lock = Slots(2), [], threading.Lock()
        held, most = [0], [0]

        def step(name: str, later: bool = False) -> None:
            with slots.held(later=later):
                with lock:
                    steps.append(name)
                    held[0] += 1
                    most[0] = max(most[0], held[0])
                deadline = time.monotonic() + 1  # the first two sessions end once the next cases queue
                while name in ("session a", "session b") and slots._first < 2 and time.monotonic() < deadline:
                    time.sleep(0.01)
                time.sleep(0.02)
                with lock:
                    held[0] -= 1

        def case(_ctx: Any, name: Any) -> Any:
            step(f"session {name}")
            step(f"check {name}", later=True)
            return SimpleNamespace(result=name)

        tasks: Any = [(None, n) for n in "abcd"]
        run_tasks(tasks, 2, lambda result: None, ahead, work=case)
        assert most[0] == 2  # never more than --jobs at once
        return steps

    ahead = order(2)
    assert sorted(ahead[:4]) == ["session a", "session b", "session c", "session d"]
    assert sorted(ahead[4:]) == ["check a", "check b", "check c", "check d"]
    # Without it, the third case starts only when a case before it has ended, check and all.
    alone = order(0)
    assert alone.index("session c") > min(alone.index("check a"), alone.index("check b"))
