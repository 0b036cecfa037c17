"""The suite runner: load the repository, select the cases, run (or replay) them on each engine
and model of the run, and write the report. `aam-eval run`, the action, `check`, `export` and
`tune` run suites through `execute`; what is printed goes through the `Console` given."""

from __future__ import annotations

import io
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from aam_eval_action.engines.registry import check_engine_name
from aam_eval_action.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, ConfigError, UsageError
from aam_eval_action.fsutil import atomic_write, runner_checkout
from aam_eval_action.layouts.marketplace import console_lines
from aam_eval_action.loader import LoadedCase, LoadedPackage, LoadedRepo, load_repo
from aam_eval_action.model_calls import warmed
from aam_eval_action.pipeline.select import named, recorded_durations, select
from aam_eval_action.pipeline.slots import Slots
from aam_eval_action.render.console import Console
from aam_eval_action.settings import Overrides, RunSettings, check_judge, resolve_matrix, runner_environment

if TYPE_CHECKING:
    from aam_eval_action.pipeline.case import Outcome
    from aam_eval_action.pipeline.context import CaseContext
    from aam_eval_action.pipeline.scheduler import Task
    from aam_eval_action.report import EmptyRun, Report

SDKS = {"anthropic", "openai"}
"""The judge providers whose SDK module is named after them (imported ahead in a live run)."""


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
    vally_results: Path | None = None
    """`--vally-results`: Vally's `results.jsonl` of the stimuli run."""
    html: Path | None = None
    keep_workspaces: bool = False
    shard: tuple[int, int] | None = None
    plugins: list[str] | None = None
    """`--plugin`: only these plugins of a repository of plugins."""
    tags: str | None = None
    """`--tags`: only cases whose tags satisfy this expression (`sql && !slow`)."""
    suite: str | None = None
    """`--suite`: only the stimuli this `.vally.yaml` suite selects."""
    strict: bool = False
    """`--strict`: the package's lint warnings are errors."""
    allow_empty: bool = False
    """`--allow-empty`: a run that selects no case passes (it still says so)."""
    quiet: bool = False
    """Print nothing, with no console given (a run inside another command's: sensitivity's arms
    and mutants)."""


def execute(
    args: RunArgs, console: Console | None = None, environ: Mapping[str, str] | None = None
) -> tuple[Report | None, int]:
    """Run the selected cases on each engine + model of the run; the report (None for a dry
    run) and the exit code."""
    environ = runner_environment() if environ is None else environ
    console = console or Console(io.StringIO() if args.quiet else None, environ=environ)
    repo = load_repo(args.package, args.plugins)
    check_strict(repo, args.strict)
    matrices = [(package, resolve_matrix(package, args.overrides, environ)) for package in repo.packages]
    runs = matrices[0][1]
    first = runs[0]
    if first.in_ci:  # untrusted text printed below must not form workflow commands
        console.workflow_commands = True
    for package, settings_list in matrices:
        for settings in settings_list:
            _check(args, package, settings)
    chosen = selection(repo, args, matrices)
    errors = [(p, e) for p in repo.packages for e in p.errors
              if not args.cases or p.qualified(e.case_name or "") in args.cases or e.case_name in args.cases]
    if args.dry_run:
        from aam_eval_action.pipeline.plan import plan_lines

        for line in console_lines([f for f in repo.findings if f.level == "skipped"]):  # said once
            console.line(line, "yellow")

        for package, settings_list in matrices:
            for settings in settings_list:
                for text, style in plan_lines(settings, chosen[id(package)]):
                    console.line(text, style)
        return None, EXIT_USAGE if errors else EXIT_OK
    total = sum(len(cases) for cases in chosen.values())
    for s in runs:
        console.line(f"{total} case(s) · {s.engine} · model {s.model} · "
                     f"judge {s.judge_model} · mode {s.mode}")
    if first.max_usd is not None and first.mode != "replay":
        console.line(f"max-usd ${first.max_usd:.4g}: a case whose estimated cost does not fit what is left "
                     "is not run (not graded: budget); cases that spend run one at a time")
    # The run's machinery is imported once the run has said what it will do (start-up stays quick).
    from aam_eval_action.pipeline.context import CaseContext
    from aam_eval_action.pipeline.scheduler import handle_signals, run_tasks
    from aam_eval_action.pipeline.spend_cap import Budget
    from aam_eval_action.replay import prefetch
    from aam_eval_action.report import (
        Report,
        all_passed,
        build_report,
        default_report_path,
        describe_plugins,
        file_error_results,
        merge_reports,
        probe_sandbox,
    )

    for s in runs:
        probe_sandbox(s)  # while the cases run
    matrix = len(runs) > 1
    budget = Budget(first.max_usd)  # one cap for every engine and model of the run
    slots = Slots(first.jobs)  # and one --jobs for all their sessions and judge votes
    contexts = [CaseContext.for_run(s, keep_workspaces=args.keep_workspaces, matrix=matrix, budget=budget,
                                    slots=slots) for _, settings_list in matrices for s in settings_list]
    for line in console_lines(repo.findings) if repo.kind != "aam" else []:  # remote sources: one line
        console.line(line, "yellow")
    for _, err in errors:
        console.line(f"ERROR {err}", "yellow")
    started, t0 = datetime.now(UTC), time.monotonic()
    tasks = [(ctx, loaded) for ctx in contexts for loaded in chosen[id(ctx.settings.package)]]
    sweep = sweep_tasks(contexts, chosen, args.keep_workspaces, budget)
    if sweep:
        sizes = ", ".join(str(n) for n in contexts[0].settings.sweep)
        console.line(f"crowding sweep: {len(sweep)} trigger session(s) with {sizes} neighbour(s) of "
                     f"{len(contexts[0].settings.pool)} installed")
    main_tasks = len(tasks)
    tasks += sweep
    live = {c.settings.judge_provider for c in contexts if c.settings.mode != "replay"}
    with handle_signals(), prefetch.ahead(cassettes_read(tasks[:main_tasks])), warmed(live & SDKS):
        # Live, as many cases again queue for the slots: their sessions take the slots that
        # would wait for the cases before them to end. Not under max-usd, whose cases spend
        # one at a time, each after the estimate of the one before was charged.
        ahead = first.jobs if live and budget.cap is None else 0
        done, interrupted = run_tasks(tasks, first.jobs, console.case, ahead)
    duration = time.monotonic() - t0
    swept = [(i, o) for i, o in done if i >= main_tasks]
    done = [(i, o) for i, o in done if i < main_tasks]
    # A run that saved sessions may have replaced shared traffic entries (a snapshot-only run did not).
    if not interrupted and any(o.result.replay_kind in ("live", "rerun") for _, o in done) \
            and first.mode in ("auto", "record"):
        for _, settings_list in matrices:
            _prune(settings_list[0], console)
    from aam_eval_action.pipeline.labelled import apply_labels

    groups = [(ctx.settings, [o.result for i, o in done if tasks[i][0] is ctx]) for ctx in contexts]
    labels = apply_labels(groups)
    for _, results in groups:
        for result in results:
            console.labelled(result)
    parts = []
    for ctx in contexts:
        outcomes = sorted((o for i, o in done if tasks[i][0] is ctx), key=lambda o: o.result.name)
        package = ctx.settings.package
        errored = file_error_results([e for p, e in errors if p is package], package)
        for result in errored:
            result.engine, result.model = ctx.pair or (None, None)
        part = build_report(ctx.settings, [o.result for o in outcomes] + errored,
                            [o.session for o in outcomes], started, duration, interrupted)
        parts.append(Report.model_validate(ctx.redactor.deep(part.model_dump(mode="json"))))
    report = merge_reports(parts) if len(parts) > 1 else parts[0]
    from aam_eval_action.pipeline.crowding import build_sweep, views

    report.listings = views(runs)
    if sweep:
        by_ctx: dict[int, list[Outcome]] = {}
        for i, o in swept:
            by_ctx.setdefault(id(tasks[i][0]), []).append(o)
        swept_contexts = list({id(t[0]): t[0] for t in sweep}.values())
        points = [(ctx.settings, [o.result for o in by_ctx.get(id(ctx), [])]) for ctx in swept_contexts]
        report.sweep = build_sweep(points)
    if budget.cap is not None or budget.spent:
        report.summary.spent_usd = budget.spent
    report.labels = labels
    if repo.kind != "aam":
        describe_plugins(report, repo, [s.engine for s in runs])
    if not errors:
        report.summary.empty = why_empty(repo, args, matrices, chosen)
    _write(args, report, default_report_path(repo.root / "evals", started), console,
           runner_checkout(environ), [(tasks[i][0], o) for i, o in done])
    console.summary(report)
    say_empty(console, report, args.allow_empty)
    if interrupted:
        return report, EXIT_INTERRUPTED
    if errors:  # the other cases ran, but a bad case file is a usage error of the run
        return report, EXIT_USAGE
    empty = report.summary.empty
    if empty is not None and empty.fails and not args.allow_empty:
        return report, EXIT_FAILED
    return report, EXIT_OK if all_passed(report) else EXIT_FAILED


def sweep_tasks(
    contexts: list[CaseContext], chosen: dict[int, list[LoadedCase]], keep: bool, budget: object,
) -> list[tuple[CaseContext, LoadedCase]]:
    """A crowding sweep's sessions: each selected trigger case at each size, per engine + model."""
    from aam_eval_action.pipeline.context import CaseContext
    from aam_eval_action.pipeline.crowding import sweep_settings, trigger_cases

    tasks = []
    for ctx in contexts:
        triggers = trigger_cases(chosen[id(ctx.settings.package)])
        if not ctx.settings.sweep or not triggers:
            continue
        for point in sweep_settings(ctx.settings):
            sweep_ctx = CaseContext.for_run(point, keep_workspaces=keep, matrix=ctx.pair is not None,
                                            budget=budget, slots=ctx.slots)  # type: ignore[arg-type]
            tasks += [(sweep_ctx, loaded) for loaded in triggers]
    return tasks


def selection(
    repo: LoadedRepo, args: RunArgs, matrices: list[tuple[LoadedPackage, list[RunSettings]]]
) -> dict[int, list[LoadedCase]]:
    """Each package's cases to run (by `id` of the package): CASE names (`<plugin>/<case>` or
    a bare name, matched in every plugin), the target, then the shard's share."""
    names = args.cases

    def wanted(package: LoadedPackage, case: LoadedCase, pattern: str) -> bool:
        return named(pattern, case, package.key if package.several else None)

    unknown = [n for n in names if not any(wanted(p, c, n) for p in repo.packages for c in p.cases)]
    if unknown:
        known = {p.qualified(c.case.title or c.case.name) for p in repo.packages for c in p.cases}
        raise UsageError(f"no such case: {', '.join(unknown)}; known cases: "
                         f"{', '.join(sorted(known)) or 'none'}")
    chosen: dict[int, list[LoadedCase]] = {}
    for package, runs in matrices:
        mine = [c.case.name for c in package.cases if any(wanted(package, c, n) for n in names)]
        if names and not mine:
            chosen[id(package)] = []
            continue
        durations = recorded_durations(runs[0]) if args.shard else None
        cases = in_suite(package, args.suite) if args.suite else package.cases
        if args.suite and not mine:
            mine = [c.case.name for c in cases]
            if not mine:
                chosen[id(package)] = []
                continue
        elif args.suite:
            mine = [n for n in mine if any(c.case.name == n for c in cases)]
        chosen[id(package)] = select(cases, mine, args.target, args.shard, durations, args.tags)
    return chosen


def in_suite(package: LoadedPackage, suite: str) -> list[LoadedCase]:
    """The cases of the stimuli `suite` (of the repository's `.vally.yaml`) selects."""
    from aam_eval_action.vally.project import read_project

    project = read_project(package.layout.root, package.layout.skill_dirs)
    picked = {(s.rel, s.line) for s in project.selected(suite)}
    return [c for c in package.cases if (c.file, c.line) in picked]


INIT_TODO = "`aam-eval init` drafts a starter suite to review"


def why_empty(
    repo: LoadedRepo, args: RunArgs, matrices: list[tuple[LoadedPackage, list[RunSettings]]],
    chosen: dict[int, list[LoadedCase]],
) -> EmptyRun | None:
    """Why the run selected no case (None when it selected some): the package has none, the
    filters matched none, or this shard's share of the selection is empty."""
    from aam_eval_action.report import EmptyRun

    if any(chosen.values()):
        return None
    defined = sum(len(p.cases) for p in repo.packages)
    if not defined:
        return EmptyRun(kind="no-cases", reason=_no_cases(repo, args.plugins), todo=INIT_TODO)
    if args.shard:
        selected = sum(len(v) for v in selection(repo, replace(args, shard=None), matrices).values())
        if selected:
            index, total = args.shard
            return EmptyRun(kind="shard", reason=f"shard {index}/{total} runs no case: the {selected} "
                            "selected case(s) all fall to the other shards",
                            todo=f"nothing to do (with at most {selected} shard(s), none is idle)")
    return EmptyRun(kind="filtered", reason=f"{_filters(args)} matched none of the {defined} case(s)",
                    todo="fix the filter (`aam-eval check` lists every case)")


def _no_cases(repo: LoadedRepo, plugins: list[str] | None) -> str:
    """Where the cases were looked for, in words."""
    if plugins:
        return f"the plugin(s) {', '.join(plugins)} have no eval cases"
    if repo.several:
        names = ", ".join(p.plugin or p.layout.name for p in repo.packages)
        return f"none of the plugins ({names}) has eval cases"
    where = repo.packages[0].cases_dir.relative_to(repo.root).as_posix()
    return f"the package has no eval cases (none in {where}/, and no other tool's eval files)"


def _filters(args: RunArgs) -> str:
    """The filters a run was given, in words: `target skill:x and tags 'sql'`."""
    given = [f"case names {', '.join(args.cases)}" if args.cases else "",
             f"target {args.target}" if args.target else "",
             f"tags {args.tags!r}" if args.tags else "",
             f"plugin(s) {', '.join(args.plugins)}" if args.plugins else ""]
    return " and ".join(g for g in given if g) or "the selection"


def say_empty(console: Console, report: Report, allowed: bool) -> None:
    """The plugins without eval cases, and, for a run that selected none, why and what to do."""
    from aam_eval_action.report import plugins_without_cases

    without = plugins_without_cases(report)
    if without and len(without) < len(report.plugins or []):
        console.line(f"plugins without eval cases: {', '.join(without)} ({INIT_TODO})", "yellow")
    empty = report.summary.empty
    if empty is None:
        return
    said = f"{empty.reason}; {empty.todo}"
    if not empty.fails:
        console.line(said)
    elif allowed:
        console.line(f"no eval case ran: {said} (passing: --allow-empty)", "yellow")
    else:
        console.line(f"FAILED: no eval case ran: {said} (--allow-empty lets an empty run pass)", "red")


def check_strict(repo: LoadedRepo, strict: bool) -> None:
    """With `--strict`, the package's lint warnings fail the run before any case runs."""
    warnings = [f for f in repo.findings if f.level == "warning"]
    if strict and warnings:
        listed = "\n".join(str(f) for f in warnings)
        raise ConfigError(f"{len(warnings)} warning(s) about the package, errors with --strict:\n{listed}")


def _prune(settings: RunSettings, console: Console) -> None:
    """Drop the shared traffic entries no cassette uses any more."""
    from aam_eval_action.replay.traffic_store import prune_stores

    dropped = prune_stores(settings.cassettes, runner_checkout(settings.runner_env))
    if dropped:
        console.line(f"{dropped} shared traffic entr{'y' if dropped == 1 else 'ies'} no cassette "
                     "uses any more: removed")


def _check(args: RunArgs, package: LoadedPackage, settings: RunSettings) -> None:
    """Reserved or unknown engines, and a judge no SDK of ours serves, fail before any case
    runs, pointing at where the name was set."""
    cfg = package.config
    key = "pairs" if cfg.pairs else "engines" if cfg.engines else "engine"
    check_engine_name(settings.engine, "--engine" if args.overrides.engine else package.config_location(key))
    check_judge(settings, "--judge" if args.overrides.judge else package.config_location("judge")
                if cfg.judge else None)


def _write(
    args: RunArgs, report: Report, default_path: Path, console: Console, checkout: Path | None,
    ran: Sequence[tuple[CaseContext, Outcome]] = (),
) -> None:
    from aam_eval_action.report import to_json

    paths = []
    if args.output:
        paths.append(args.output)
    if args.report and not args.output:
        paths.append(default_path)
    for path in paths:
        write_file(path, to_json(report), "report", checkout)
        console.line(f"report written to {path}")
    if args.vally_results and report.vally:
        from aam_eval_action.vally.results import jsonl

        write_file(args.vally_results, jsonl(report), "Vally results", checkout)
        console.line(f"Vally results.jsonl written to {args.vally_results}")
    if args.junit:
        from aam_eval_action.render.junit import to_junit

        write_file(args.junit, to_junit(report), "JUnit XML", checkout)
        console.line(f"JUnit XML written to {args.junit}")
    if args.html:
        from aam_eval_action.render.html import run_html

        write_file(args.html, run_html(report, ran), "HTML report", checkout)
        console.line(f"HTML report written to {args.html}")


def write_file(path: Path, text: str, what: str, checkout: Path | None) -> None:
    """Write atomically; an unwritable path is a usage error that says what to do."""
    try:
        atomic_write(path, text, checkout)
    except OSError as exc:
        raise UsageError(f"cannot write the {what} to {path}: {exc.strerror or exc}; "
                         "choose a writable path") from None


def cassettes_read(tasks: list[Task]) -> list[tuple[Path, Path | None]]:
    """The cassettes a replay of these tasks reads, in the order it reads them (with the folder
    each must stay inside); none for a run that records or goes live."""
    from aam_eval_action.replay import agent_cassette

    files: list[tuple[Path, Path | None]] = []
    for ctx, loaded in tasks:
        s = ctx.settings
        if s.mode not in ("replay", "auto"):
            continue
        for where in (agent_cassette.session_path, agent_cassette.judge_path):
            files.append((where(s.cassettes, loaded.case.name, s.cassette_stem), s.cassettes))
    return files
