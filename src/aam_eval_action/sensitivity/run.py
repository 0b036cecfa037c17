"""`aam-eval sensitivity`: the suite run as it is, with and without the package, then once per
mutant; the kill matrix from their reports.

Each arm and mutant is a run of the suite (`pipeline/suite.execute`), so every format the suite
runner reads is measured the same way. The arm with the package and the one without it are one
run with `--baseline`, recorded in the package's cassettes as any run. A mutant is a copy of the
repository with its one change, run against its own cassettes folder,
`<cassettes>/_sensitivity/<mutant id>/`, seeded with the package's recordings: each case is
first re-executed against the recording (its CLI runs again, its model calls answered from the
recording), so a mutant whose change the session never reads is graded for $0 with no model
call; only the turns after a divergence go live, and what they record stays the mutant's, so a
second run replays offline. The package's own recordings are checked against themselves as any
run's are; the mutants' and the forced arm's, replayed as they were recorded, are not.

It says what it does through the lines it is given, and returns the matrix: the command prints
it and writes its page and summary (`render/sensitivity*.py`), so nothing here draws.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from aam_eval_action.errors import EXIT_INTERRUPTED, UsageError
from aam_eval_action.fsutil import atomic_write
from aam_eval_action.loader import LoadedCase, load_repo
from aam_eval_action.modes import Mode, Rerun
from aam_eval_action.pipeline.suite import RunArgs, execute
from aam_eval_action.report_model import Report
from aam_eval_action.sensitivity import matrix
from aam_eval_action.sensitivity.mutants import Mutant, make, mutants_of, own_mutants, select
from aam_eval_action.sensitivity_model import Arm, Sensitivity
from aam_eval_action.settings import Overrides, RunSettings, resolve_matrix

FOLDER = "_sensitivity"
"""The mutants' cassettes, under the package's cassettes folder (`_` starts no case name)."""
FORCED = "_forced"
"""The forced arm's cassettes, beside the mutants' (`_` starts no mutant id)."""


class Lines(Protocol):
    """Where the run says what it does (the command's console)."""

    def line(self, text: str, style: str | None = None) -> None: ...


@dataclass(frozen=True)
class SensitivityArgs:
    package: Path
    engines: list[str] | None = None
    mutants: str | None = None
    """`--mutants`: kinds, directions or id patterns (None: all)."""
    max_usd: float | None = None
    replay: bool = False
    output: Path | None = None
    """`-o`: the matrix's JSON, written by the run."""
    html: Path | None = None
    """`--html`: the matrix's page, written by the command from the matrix the run returns."""
    list_only: bool = False
    cassettes: Path | None = None
    tags: str | None = None
    jobs: int | None = None
    plugins: list[str] | None = None
    model: str | None = None
    judge: str | None = None
    repeat: int | None = None
    timeout: float | None = None
    scaffold: bool | None = None
    allow_tools: tuple[str, ...] = ()
    """`--allow-tools`, as `run` takes it (the operator's grant, never the repository's)."""
    mocks: str | None = None
    allow_real_servers: bool | None = None
    """`--mocks` and `--allow-real-servers`, as `run` takes them."""
    rerun: Rerun | None = None
    """Re-execution, as `run --rerun`/`--no-rerun` (the action's `rerun`; never on
    `pull_request_target`): without it, a mutant is graded from its snapshot or live."""


def measure(args: SensitivityArgs, console: Lines,
            environ: Mapping[str, str]) -> tuple[Sensitivity, bool] | None:
    """The kill matrix of the package's suite (its JSON written to `args.output`), and whether
    the run was interrupted; None for `--list` (the mutants said, nothing run)."""
    repo = load_repo(args.package, args.plugins)
    if len(repo.packages) != 1:
        names = ", ".join(p.layout.plugin or p.layout.name or "?" for p in repo.packages)
        raise UsageError(f"sensitivity measures one package at a time, and {args.package} holds "
                         f"{len(repo.packages)} ({names}): pick one with --plugin NAME")
    package = repo.packages[0]
    made = mutants_of(package.layout) + own_mutants(package.layout.root, package.config.mutants,
                                                    package.config_location)
    chosen = select(made, args.mutants)
    if args.list_only:
        if not chosen:
            console.line(f"{args.package}: no mutants: the package has no skill with a SKILL.md and no hook")
        for m in chosen:
            console.line(f"{m.id}  {m.what}  ({m.file}{f':{m.line}' if m.line else ''})")
        return None
    if not chosen:
        raise UsageError(f"{args.package}: the package has nothing to mutate (no skill with a SKILL.md, "
                         "no hook)")
    engines = args.engines or [s.engine for s in resolve_matrix(package, Overrides(), environ)]
    mode: Mode = "replay" if args.replay else "auto"
    base = Overrides(mode=mode, cassettes=args.cassettes, jobs=args.jobs, model=args.model, judge=args.judge,
                     repeat=args.repeat, timeout=args.timeout, scaffold=args.scaffold,
                     allow_tools=args.allow_tools, mocks=args.mocks,
                     allow_real_servers=args.allow_real_servers, rerun=args.rerun)
    settings = {e: resolve_matrix(package, _with(base, engine=e), environ)[0] for e in engines}
    cassettes = next(iter(settings.values())).cassettes
    selected = list(package.cases)
    sessions = len(selected) * len(engines) * (3 + len(chosen))
    console.line(f"sensitivity: {len(chosen)} mutant(s) × {len(selected)} case(s) × {len(engines)} "
                 f"engine(s), without and with the package, and forced: at most {sessions} sessions", "bold")
    if not args.replay:
        console.line(estimate_line(settings, selected, len(chosen)), "dim")
    result = Sensitivity(package=package.layout.name or package.layout.root.name, engines=engines)
    spent = 0.0

    def left() -> float | None:
        return None if args.max_usd is None else max(args.max_usd - spent, 0.0)

    stopped = False
    """Interrupted (Ctrl-C, SIGTERM): what finished is kept, the rest said, the outputs written."""
    with tempfile.TemporaryDirectory(prefix="aam-sensitivity-") as tmp:
        for engine in engines:
            arms = _with(base, engine=engine, baseline=True, max_usd=left())
            with_report, stopped = _suite(args, args.package, arms)
            if stopped:
                result.not_run.append(f"{engine}: interrupted while the suite ran with and without it")
                break
            if with_report is None:
                raise UsageError(f"{args.package}: no case ran on {engine}")
            if all(c.verdict == "SKIP" for c in with_report.cases):
                first = with_report.cases[0]
                raise UsageError(f"--max-usd {args.max_usd:g} does not cover the suite itself on {engine} "
                                 f"({first.error}): nothing can be measured; raise the cap")
            arm = matrix.cost_of(with_report)
            spent += arm.cost_usd
            result.arms.append(Arm(name=f"{engine}: with and without", how="the suite as it is, then "
                                          "each case again without the package (--baseline)", graded=arm))
            forced = None
            folder = cassettes / FOLDER / FORCED
            if args.replay and not folder.is_dir():
                result.not_run.append(f"{engine}: the forced arm: not recorded ({FOLDER}/{FORCED} is missing "
                                      "from the cassettes): run `aam-eval sensitivity` without --replay once")
            elif args.max_usd is not None and spent >= args.max_usd:
                result.not_run.append(f"{engine}: the forced arm: did not fit: --max-usd {args.max_usd:g} "
                                      f"was spent (${spent:.4f})")
            else:
                forcing = _with(base, engine=engine, cassettes=folder, force_skill=True, max_usd=left(),
                                self_check=False)
                forced, stopped = _suite(args, args.package, forcing)
                if stopped:
                    result.not_run.append(f"{engine}: the forced arm: interrupted")
                    forced = None
                cost = matrix.cost_of(forced)
                spent += cost.cost_usd
                how = next((c.forced for c in forced.cases if c.forced), None) if forced else None
                over = [c for c in forced.cases if c.budget is not None] if forced else []
                if over:
                    result.not_run.append(f"{engine}: the forced arm: {len(over)} case(s) did not fit: "
                                          f"{over[0].error}")
                if forced is not None:
                    result.arms.append(Arm(name=f"{engine}: forced", how=how or "not forced",
                                                  graded=cost))
            result.cases += matrix.case_rows(engine, with_report, forced)
            result.sessions += matrix.sessions_of(engine, "with", with_report)
            result.sessions += matrix.sessions_of(engine, "without", with_report, without=True)
            result.sessions += matrix.sessions_of(engine, "forced", forced)
            _said_arms(console, engine, with_report, forced)
            runs: list[tuple[Mutant, Report | None, str | None]] = []
            for mutant in chosen:
                folder = cassettes / FOLDER / mutant.id
                if stopped:
                    runs.append((mutant, None, "interrupted"))
                    result.not_run.append(f"{engine}: {mutant.id}: interrupted")
                    continue
                if args.max_usd is not None and spent >= args.max_usd:
                    why = f"did not fit: --max-usd {args.max_usd:g} was spent (${spent:.4f})"
                    runs.append((mutant, None, why))
                    result.not_run.append(f"{engine}: {mutant.id}: {why}")
                    continue
                if args.replay and not folder.is_dir():
                    why = (f"not recorded ({FOLDER}/{mutant.id} is missing from the cassettes): run "
                           "`aam-eval sensitivity` without --replay once (nightly)")
                    runs.append((mutant, None, why))
                    result.not_run.append(f"{engine}: {mutant.id}: {why}")
                    continue
                if not args.replay:
                    seed(cassettes, folder)
                copy = make(mutant, args.package, Path(tmp) / engine / mutant.id, skip=[cassettes])
                mutated = _with(base, engine=engine, cassettes=folder, max_usd=left(), self_check=False)
                report, stopped = _suite(args, copy, mutated)
                shutil.rmtree(copy, ignore_errors=True)
                cost = matrix.cost_of(report)
                spent += cost.cost_usd
                if stopped:
                    runs.append((mutant, None, "interrupted"))
                    result.not_run.append(f"{engine}: {mutant.id}: interrupted")
                    continue
                runs.append((mutant, report, None if report is not None else "no case ran"))
                result.sessions += matrix.sessions_of(engine, mutant.id, report)
            rows, checks = matrix.build(result.package, engine, with_report, runs, forced,
                                        {m.direction for m in made})
            for line in (f"{engine}: {r.id}: {r.note}" for r in rows if r.status == "not-run" and r.note):
                if line not in result.not_run:
                    result.not_run.append(line)
            for row in checks:
                row.file, row.line = check_line(package.layout.root, row.file, row.line, row.check)
            result.mutants += rows
            result.checks += checks
            if stopped:
                break
    matrix.finish(result)
    if args.output is not None:
        atomic_write(args.output, result.model_dump_json(indent=2) + "\n", None)
    return result, stopped


def _with(o: Overrides, **changes: object) -> Overrides:
    import dataclasses

    return dataclasses.replace(o, **changes)  # type: ignore[arg-type]


def _suite(args: SensitivityArgs, package: Path, overrides: Overrides) -> tuple[Report | None, bool]:
    """One run of the suite, printing nothing: its report (None when no case ran), and whether
    it was interrupted."""
    report, code = execute(RunArgs(package=package, cases=[], overrides=overrides, tags=args.tags,
                                   plugins=args.plugins, allow_empty=True, quiet=True))
    return (report if report is not None and report.cases else None), code == EXIT_INTERRUPTED


def _said_arms(console: Lines, engine: str, report: Report, forced: Report | None) -> None:
    n = len(report.cases)
    with_passed = sum(c.verdict == "PASS" for c in report.cases)
    without = sum(c.baseline_verdict == "PASS" for c in report.cases)
    more = f", forced {sum(c.verdict == 'PASS' for c in forced.cases)}/{len(forced.cases)}" if forced else ""
    console.line(f"{engine}: with the package {with_passed}/{n} pass, without it {without}/{n}{more}")


def seed(cassettes: Path, folder: Path) -> None:
    """A mutant's cassettes folder given the package's recordings it lacks: each case's cassette
    of each engine it has none of (its own, once recorded, are kept), and the shared traffic
    entries (merged)."""
    from aam_eval_action.replay.traffic_store import STORE_DIR, merge_store

    folder.mkdir(parents=True, exist_ok=True)
    if not cassettes.is_dir():
        return
    for case in sorted(cassettes.iterdir()):
        if case.name.startswith("_") or not case.is_dir() or case.is_symlink():
            continue
        for path in sorted(case.iterdir()):  # each engine's recordings of the case
            if path.is_file() and not path.is_symlink() and not (folder / case.name / path.name).exists():
                (folder / case.name).mkdir(exist_ok=True)
                shutil.copyfile(path, folder / case.name / path.name)
    for store in sorted((cassettes / STORE_DIR).glob("*.yaml")):
        merge_store(store, folder / STORE_DIR / store.name)


def check_line(root: Path, file: str, start: int | None, check: str) -> tuple[str, int | None]:
    """Where a check is written: its key under the case in its file (`contains:` for `contains`,
    `judge:`), a grader's `name:`, or a `claude plugin eval` grader's own `graders/<name>.md`;
    the case's file and line when it cannot be found."""
    import re

    path = (root / file).resolve()
    if start is None or not file or not path.is_relative_to(root.resolve()) or not path.is_file():
        return file, start
    own = path.parent / "graders" / f"{check}.md"
    if own.is_file() and own.resolve().is_relative_to(root.resolve()):
        return own.resolve().relative_to(root.resolve()).as_posix(), 1
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return file, start
    key = re.escape(check.replace("_", "-"))
    name = re.escape(check)
    wanted = re.compile(rf"^\s*(?:-\s*)?(?:{key}|{name})\s*:|^\s*(?:-\s*)?name:\s*['\"]?{name}['\"]?\s*$")
    for n in range(start, len(lines) + 1):
        line = lines[n - 1]
        if n > start and re.match(r"^(---|- name:|name:)", line):
            break
        if wanted.match(line):
            return file, n
    return file, start


def estimate_line(settings: Mapping[str, RunSettings], cases: Sequence[LoadedCase], mutants: int) -> str:
    """What the run could spend at most: every session of every arm and mutant live."""
    from aam_eval_action.pipeline.spend_cap import Estimator

    total, unknown = 0.0, 0
    for s in settings.values():
        estimator = Estimator(s)
        for loaded in cases:
            found = estimator.case(loaded, s.repeat)
            if found.usd is None:
                unknown += 1
            else:
                total += found.usd * (3 + mutants)
    more = f" ({unknown} case(s) with no estimate)" if unknown else ""
    return (f"at most ${total:.2f} if every session went live{more}; a mutant whose change a session "
            "never reads is re-executed against the recording for $0")
