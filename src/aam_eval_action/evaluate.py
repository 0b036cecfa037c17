"""A whole run: cases in parallel, interrupts honoured, results into the report."""

from __future__ import annotations

import functools
import platform
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from datetime import UTC, datetime
from pathlib import Path

from aam_eval_action import __version__
from aam_eval_action.engines import PROVIDERS
from aam_eval_action.loader import FileError, LoadedCase
from aam_eval_action.report import (
    REPORT_VERSION,
    AgentInfo,
    CaseResult,
    Environment,
    JudgeInfo,
    PackageInfo,
    Report,
    RunConfig,
    summarize,
)
from aam_eval_action.runner import CaseContext, Outcome, display_path, run_case
from aam_eval_action.session import Session
from aam_eval_action.settings import RunSettings


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
    outcomes: list[Outcome] = []
    pool = ThreadPoolExecutor(max_workers=max(1, ctx.settings.jobs))
    pending: set[Future[Outcome]] = set()
    queue = list(cases)
    interrupted = False

    def finished(outcome: Outcome) -> None:
        if STOP.is_set():  # it ran while the interrupt came in: cut off, not reported
            raise Interrupted("stop requested")
        outcomes.append(outcome)
        on_result(outcome.result)

    try:
        if ctx.settings.jobs == 1:  # no threads needed: cases run one after another
            while queue:
                finished(run_case(ctx, queue.pop(0)))
        while queue or pending:
            while queue and len(pending) < ctx.settings.jobs:
                pending.add(pool.submit(run_case, ctx, queue.pop(0)))
            done, pending = wait(pending, return_when=FIRST_COMPLETED, timeout=0.5)
            for fut in done:
                finished(fut.result())
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
    outcomes.sort(key=lambda o: o.result.name)
    return outcomes, interrupted


def error_results(errors: list[FileError]) -> list[CaseResult]:
    """Bad case files as ERROR results, so a run reports them and goes on."""
    out = []
    for err in errors:
        name = err.case_name or Path(err.file).stem
        out.append(CaseResult(name=name, verdict="ERROR", error=str(err), file=err.file,
                              line=err.line))
    return out


def build_report(
    s: RunSettings, results: list[CaseResult], sessions: list[Session | None], started: datetime,
    duration: float, interrupted: bool,
) -> Report:
    """The seed's report, provenance taken from what the engine reported."""
    first = next((x for x in sessions if x is not None), None)
    results = sorted(results, key=lambda r: r.name)
    report = Report(
        version=REPORT_VERSION,
        id="eval-run-" + started.strftime("%Y-%m-%dT%H-%M-%SZ"),
        timestamp=started.strftime("%Y-%m-%dT%H:%M:%SZ"),
        duration_seconds=round(duration, 3),
        config=RunConfig(
            engine=s.engine, engine_version=first.runtime_version if first else None,
            judge=s.judge_model, timeout=s.timeout, model=s.model, mode=s.mode,
            package_path=display_path(s.package.layout.root),
        ),
        agent=AgentInfo(
            runtime=s.engine, runtime_version=first.runtime_version if first else None,
            model=(first.model if first else None) or s.model,
            model_provider=PROVIDERS.get(s.engine), session_id=first.session_id if first else None,
        ),
        judge=JudgeInfo(model=s.judge_model, model_provider=s.judge_provider),
        environment=environment(),
        package=PackageInfo(name=s.package.manifest.name, version=s.package.manifest.version),
        summary=summarize(results),
        cases=results,
    )
    if interrupted:
        report.interrupted = True
    return report


def environment() -> Environment:
    return Environment(
        os=platform.system().lower(), arch=platform.machine(), aam_version=__version__,
        node_version=_node_version(), python_version=platform.python_version(),
    )


@functools.cache
def _node_version() -> str | None:
    """Node's version, asked once per process (the agent CLIs run on it)."""
    node = shutil.which("node")
    if not node:
        return None
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip().lstrip("v") or None


def now() -> tuple[datetime, float]:
    return datetime.now(UTC), time.monotonic()


def default_report_path(evals_dir: Path, started: datetime) -> Path:
    return evals_dir / "reports" / (started.strftime("%Y-%m-%dT%H-%M-%SZ") + ".json")


__all__ = ["Interrupted", "build_report", "default_report_path", "error_results", "run_all"]
