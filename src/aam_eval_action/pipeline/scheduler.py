"""A whole run's cases: `jobs` at a time, interrupts honoured (SIGINT/SIGTERM stop the run)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from types import FrameType

from aam_eval_action.loader import LoadedCase
from aam_eval_action.pipeline.case import Outcome, run_case
from aam_eval_action.pipeline.context import CaseContext
from aam_eval_action.report import CaseResult


class Interrupted(BaseException):
    """Raised by the signal handlers: stop starting cases, kill running ones, write what is done.

    A BaseException, like KeyboardInterrupt, so no `except Exception` inside a case eats it.
    """


STOP = threading.Event()
"""Set by the signal handlers; checked between cases, in case a library swallowed the raise."""


def run_all(
    ctx: CaseContext,
    cases: list[LoadedCase],
    on_result: Callable[[CaseResult], None],
) -> tuple[list[Outcome], bool]:
    """Run cases with `jobs` workers; returns outcomes sorted by name and whether interrupted."""
    done, interrupted = run_tasks([(ctx, c) for c in cases], ctx.settings.jobs, on_result)
    outcomes = [outcome for _, outcome in done]
    outcomes.sort(key=lambda o: o.result.name)
    return outcomes, interrupted


Task = tuple[CaseContext, LoadedCase]
"""One case of one engine + model (each pair of a matrix has its own context)."""


def run_tasks(
    tasks: list[Task], jobs: int, on_result: Callable[[CaseResult], None], ahead: int = 0,
    work: Callable[[CaseContext, LoadedCase], Outcome] = run_case,
) -> tuple[list[tuple[int, Outcome]], bool]:
    """Run tasks with `jobs` workers (above one job, `ahead` more under way); (task index,
    outcome) of each finished task, in the order they finished, and whether the run was
    interrupted.

    The expensive steps of every case take the run's slots (`slots.py`), so the tasks under
    way beyond `jobs` add no session: they let the next cases' sessions queue for a slot while
    the cases before them wait on a last step (a recording's self-check goes after every other
    step), rather than start only when those have ended. `work` runs one task (a case)."""
    outcomes: list[tuple[int, Outcome]] = []
    workers = jobs + max(0, ahead) if jobs > 1 else 1
    pool = ThreadPoolExecutor(max_workers=workers)
    pending: dict[Future[Outcome], int] = {}
    queue = list(enumerate(tasks))
    interrupted = False

    def finished(index: int, outcome: Outcome) -> None:
        if STOP.is_set():  # it ran while the interrupt came in: cut off, not reported
            raise Interrupted("stop requested")
        outcomes.append((index, outcome))
        on_result(outcome.result)

    try:
        if workers == 1:  # no threads needed: cases run one after another
            while queue:
                index, (ctx, case) = queue.pop(0)
                finished(index, work(ctx, case))
        while queue or pending:
            while queue and len(pending) < workers:
                index, (ctx, case) = queue.pop(0)
                pending[pool.submit(work, ctx, case)] = index
            done, _ = wait(pending, return_when=FIRST_COMPLETED, timeout=0.5)
            for fut in done:
                finished(pending.pop(fut), fut.result())
            if STOP.is_set():
                raise Interrupted("stop requested")
    except (KeyboardInterrupt, Interrupted):
        # Stop starting cases, kill running agent process groups; the partial report holds
        # the cases that finished. Cases cut off mid-way are left out, not reported as failed.
        interrupted = True
        STOP.set()
        from aam_eval_action.engines.process import kill_all

        kill_all()
        for fut in pending:
            fut.cancel()
    finally:
        pool.shutdown(wait=not interrupted, cancel_futures=True)
    return outcomes, interrupted


class handle_signals:
    """SIGINT and SIGTERM stop the run (GitHub cancels a job with SIGINT, then SIGTERM)."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __enter__(self) -> None:
        from aam_eval_action.engines.process import allow_spawning

        STOP.clear()
        allow_spawning()
        self._old = {sig: signal.getsignal(sig) for sig in self.SIGNALS}
        for sig in self.SIGNALS:
            signal.signal(sig, _raise_interrupted)

    def __exit__(self, *exc: object) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)


def _raise_interrupted(signum: int, frame: FrameType | None) -> None:
    STOP.set()
    raise Interrupted(f"signal {signum}")
