"""`aam-eval run`: run (or replay) the cases and write the report."""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import FrameType

from aam_eval_action import cassette as agent_cassettes
from aam_eval_action.console import Console
from aam_eval_action.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, UsageError
from aam_eval_action.evaluate import (
    STOP,
    Interrupted,
    build_report,
    default_report_path,
    error_results,
    now,
    run_all,
)
from aam_eval_action.fingerprint import agent_fingerprint
from aam_eval_action.fsutil import atomic_write
from aam_eval_action.loader import LoadedCase, load_package
from aam_eval_action.redact import Redactor
from aam_eval_action.report import Report, to_json
from aam_eval_action.runner import CaseContext, Miss, decide, display_path
from aam_eval_action.settings import Overrides, RunSettings, resolve


@dataclass(frozen=True)
class RunArgs:
    package: Path
    cases: list[str]
    overrides: Overrides
    target: str | None = None
    dry_run: bool = False
    report: bool = False
    output: Path | None = None
    junit: Path | None = None
    keep_workspaces: bool = False
    shard: tuple[int, int] | None = None


def run(args: RunArgs, console: Console | None = None) -> int:
    return execute(args, console)[1]


def execute(args: RunArgs, console: Console | None = None) -> tuple[Report | None, int]:
    """Run the selected cases; the report (None for a dry run) and the exit code."""
    console = console or Console()
    package = load_package(args.package)
    settings = resolve(package, args.overrides)
    _check_engine(settings)
    durations = recorded_durations(settings) if args.shard else None
    selected = select(package.cases, args.cases, args.target, args.shard, durations)
    errors = [e for e in package.errors if not args.cases or e.case_name in args.cases]
    ctx = CaseContext(settings, Redactor.from_environment(settings.secret_values),
                      keep_workspaces=args.keep_workspaces)
    if args.dry_run:
        return None, dry_run(ctx, selected, console)
    console.line(f"{len(selected)} case(s) · {settings.engine} · model {settings.model} · "
                 f"judge {settings.judge_model} · mode {settings.mode}")
    for err in errors:
        console.line(f"ERROR {err}", "yellow")
    started, t0 = now()
    with _signals():
        outcomes, interrupted = run_all(ctx, selected, console.case)
    results = [o.result for o in outcomes] + error_results(errors)
    report = build_report(settings, results, [o.session for o in outcomes], started,
                          time.monotonic() - t0, interrupted)
    report = Report.model_validate(ctx.redactor.deep(report.model_dump(mode="json")))
    _write(args, settings, report, started, console)
    console.summary(report)
    if interrupted:
        return report, EXIT_INTERRUPTED
    if errors:  # the other cases ran, but a bad case file is a usage error of the run
        return report, EXIT_USAGE
    ok = all(c.verdict in ("PASS", "SKIP") for c in report.cases)
    return report, EXIT_OK if ok else EXIT_FAILED


def _check_engine(settings: RunSettings) -> None:
    from aam_eval_action.engines import check_engine_name

    check_engine_name(settings.engine)  # reserved or unknown engines fail before any case runs


def select(
    cases: list[LoadedCase], names: list[str], target: str | None, shard: tuple[int, int] | None,
    durations: dict[str, float] | None = None,
) -> list[LoadedCase]:
    """The cases to run: by name, by target, then this shard's share."""
    known = {c.case.name for c in cases}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UsageError(
            f"no such case: {', '.join(unknown)}; known cases: {', '.join(sorted(known)) or 'none'}"
        )
    chosen = [c for c in cases if (not names or c.case.name in names)]
    if target:
        chosen = [c for c in chosen if c.case.target == target]
    if shard:
        mine = set(shard_of([c.case.name for c in chosen], shard, durations or {}))
        chosen = [c for c in chosen if c.case.name in mine]
    return chosen


def shard_of(names: list[str], shard: tuple[int, int], durations: dict[str, float]) -> list[str]:
    """Shard I of N: balanced by recorded duration (longest first into the lightest shard),
    by name when nothing is recorded. Every shard computes the same split on its own."""
    index, total = shard
    loads = [0.0] * total
    members: list[list[str]] = [[] for _ in range(total)]
    default = (sum(durations.values()) / len(durations)) if durations else 1.0
    for name in sorted(names, key=lambda n: (-durations.get(n, default), n)):
        lightest = min(range(total), key=lambda i: (loads[i], i))
        loads[lightest] += durations.get(name, default)
        members[lightest].append(name)
    return sorted(members[index - 1])


def recorded_durations(settings: RunSettings) -> dict[str, float]:
    """Seconds each case's recorded session took, from its cassette (when there is one)."""
    found: dict[str, float] = {}
    for lc in settings.package.cases:
        path = agent_cassettes.session_path(settings.cassettes, lc.case.name, settings.engine)
        try:
            recorded = agent_cassettes.load(path)
        except agent_cassettes.CassetteError:
            continue
        if recorded is not None:
            found[lc.case.name] = sum(a.duration_seconds for a in recorded.attempts)
    return found


def dry_run(ctx: CaseContext, cases: list[LoadedCase], console: Console) -> int:
    """Say what would run and whether each case would replay or go live, with no model call."""
    s = ctx.settings
    console.line(f"engine {s.engine}, model {s.model}, judge {s.judge_model} "
                 f"({s.judge_provider}), mode {s.mode}, cassettes {display_path(s.cassettes)}")
    for loaded in cases:
        fp = agent_fingerprint(s.package.layout, loaded.case, s.config, s.engine, s.model)
        try:
            d = decide(ctx, loaded, fp)
            plan = "replay" if d.replay else f"live ({d.reason})"
        except Miss as miss:
            plan = f"ERROR ({miss.message})"
        target = loaded.case.target or "-"
        console.line(f"{loaded.case.name}  target {target}  {plan}")
    for err in ctx.settings.package.errors:
        console.line(f"ERROR {err}", "yellow")
    names = {c.case.name for c in s.package.cases}
    for name, engines in agent_cassettes.list_recorded(s.cassettes).items():
        if name not in names:
            console.line(f"orphan cassette: {display_path(s.cassettes / name)} ({', '.join(engines)}): "
                         "no case has this name any more; delete it")
    return EXIT_OK


def _write(args: RunArgs, s: RunSettings, report: Report, started: datetime, console: Console) -> None:
    paths = []
    if args.output:
        paths.append(args.output)
    if args.report and not args.output:
        paths.append(default_report_path(s.package.layout.evals_dir, started))
    for path in paths:
        _write_file(path, to_json(report), "report")
        console.line(f"report written to {path}")
    if args.junit:
        from aam_eval_action.junit import to_junit

        _write_file(args.junit, to_junit(report), "JUnit XML")
        console.line(f"JUnit XML written to {args.junit}")


def _write_file(path: Path, text: str, what: str) -> None:
    try:
        atomic_write(path, text)
    except OSError as exc:
        raise UsageError(f"cannot write the {what} to {path}: {exc.strerror or exc}; "
                         "choose a writable path") from None


class _signals:
    """SIGINT and SIGTERM stop the run (GitHub cancels a job with SIGINT, then SIGTERM)."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __enter__(self) -> None:
        STOP.clear()
        self._old = {sig: signal.getsignal(sig) for sig in self.SIGNALS}
        for sig in self.SIGNALS:
            signal.signal(sig, _raise_interrupted)

    def __exit__(self, *exc: object) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)


def _raise_interrupted(signum: int, frame: FrameType | None) -> None:
    STOP.set()
    raise Interrupted(f"signal {signum}")


__all__ = ["RunArgs", "run"]
