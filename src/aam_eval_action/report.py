"""The eval report: how a run builds it, how shard reports merge, the sandbox it ran in, and the
pass/fail policy of a run (its models: `report_model.py`).

Reports are read back by `diff` and the PR comment, possibly from another machine or an
older version, so reading is tolerant of missing optional fields and unknown extra keys.
"""

from __future__ import annotations

import functools
import json
import platform
import shutil
import subprocess
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from aam_eval_action import __version__
from aam_eval_action.dice import estimate
from aam_eval_action.errors import ConfigError, UsageError

if TYPE_CHECKING:
    from aam_eval_action.loader import FileError, LoadedPackage, LoadedRepo
    from aam_eval_action.session import Session
    from aam_eval_action.settings import RunSettings

from aam_eval_action.report_model import (
    REPORT_VERSION,
    SNIPPET_CHARS,
    STAMP_FORMAT,
    AgentInfo,
    Agreement,
    Attempt,
    BudgetSkip,
    CaseLabel,
    CaseResult,
    CheckResult,
    EmptyRun,
    Environment,
    GraderOutcome,
    JudgedHashes,
    JudgeInfo,
    JudgeVerdict,
    JudgeVote,
    LabelsSummary,
    ListingView,
    PackageInfo,
    PairSummary,
    PluginSummary,
    ReplayDivergence,
    ReplayMiss,
    Report,
    Routing,
    RunConfig,
    SandboxInfo,
    SkillRouting,
    Summary,
    Sweep,
    SweepPoint,
    SweepSkill,
    TriggerStats,
    Verdict,
    VolatileMask,
)
from aam_eval_action.report_part import Part

__all__ = [
    "REPORT_VERSION",
    "SNIPPET_CHARS",
    "STAMP_FORMAT",
    "AgentInfo",
    "Agreement",
    "Attempt",
    "BudgetSkip",
    "CaseLabel",
    "CaseResult",
    "CheckResult",
    "EmptyRun",
    "Environment",
    "GraderOutcome",
    "JudgeInfo",
    "JudgeVerdict",
    "JudgeVote",
    "JudgedHashes",
    "LabelsSummary",
    "ListingView",
    "PackageInfo",
    "PairSummary",
    "Part",
    "PluginSummary",
    "ReplayDivergence",
    "ReplayMiss",
    "Report",
    "Routing",
    "RunConfig",
    "SandboxInfo",
    "SkillRouting",
    "Summary",
    "Sweep",
    "SweepPoint",
    "SweepSkill",
    "TriggerStats",
    "Verdict",
    "VolatileMask",
]


def was_graded(case: CaseResult) -> bool:
    """Whether the case was actually graded: not skipped, and replay did not miss its recording.

    A case that could not be replayed, or that the model API kept from running, says nothing
    about the agent: it must not count as failed.
    """
    return case.verdict != "SKIP" and case.replay_miss is None and not case.api_down


def summarize(cases: list[CaseResult]) -> Summary:
    """Counts and pass rates over case results."""
    passed = sum(c.verdict == "PASS" for c in cases)
    skipped = sum(c.verdict == "SKIP" for c in cases)
    ran = len(cases) - skipped
    graded = sum(was_graded(c) for c in cases)
    costs = [c.cost_usd for c in cases if c.cost_usd is not None]
    run_costs = [c.run_cost_usd for c in cases if c.run_cost_usd is not None]
    summary = Summary(
        total=len(cases),
        passed=passed,
        failed=sum(c.verdict == "FAIL" for c in cases),
        skipped=skipped,
        errored=sum(c.verdict == "ERROR" for c in cases),
        flaky=sum(bool(c.flaky) for c in cases),
        estimate=estimate(cases),
        pass_rate=round(passed / ran, 4) if ran else 0.0,
        cost_usd=round(sum(costs), 6) if costs else None,
        replayed=sum(bool(c.replayed) for c in cases),
        not_replayable=sum(c.replay_miss is not None for c in cases),
        api_down=sum(bool(c.api_down) for c in cases) or None,
        graded=graded,
        graded_pass_rate=round(passed / graded, 4) if graded else 0.0,
        run_cost_usd=round(sum(run_costs), 6) if run_costs else None,
        rerun=sum(c.replay_kind == "rerun" for c in cases) or None,
        diverged=sum(c.replay_miss == "diverged" for c in cases) or None,
        unstable=sum(bool(c.self_check and c.self_check.unstable) for c in cases) or None,
        over_budget=sum(c.budget is not None for c in cases) or None,
    )
    _add_lift(summary, cases)
    _add_scores(summary, cases)
    _add_triggers(summary, cases)
    summary.routing = routing(cases)
    summary.drafted_unreviewed = sum(c.draft == "unreviewed" for c in cases) or None
    return summary


def _add_lift(summary: Summary, cases: list[CaseResult]) -> None:
    """Baseline pass rate and lift, over the cases graded both with and without the skill."""
    both = [c for c in cases if c.baseline_verdict not in (None, "SKIP", "ERROR") and c.verdict != "ERROR"]
    if not both:
        return
    with_skill = sum(c.verdict == "PASS" for c in both) / len(both)
    without = sum(c.baseline_verdict == "PASS" for c in both) / len(both)
    summary.baseline_pass_rate = round(without, 4)
    summary.lift_pp = round((with_skill - without) * 100, 2) + 0.0
    summary.skill_not_needed = sum(bool(c.skill_not_needed) for c in both)


def _add_scores(summary: Summary, cases: list[CaseResult]) -> None:
    """`claude plugin eval` cases: the overall score and the mean delta, as that runner gives them."""
    cases = [c for c in cases if c.vally is None]  # a Vally stimulus counts in its eval (`report.vally`)
    scored = [c.score for c in cases if c.score is not None]
    if scored:
        summary.score = sum(scored) / len(scored)
        rates = [c.pass_rate for c in cases if c.score is not None and c.pass_rate is not None]
        summary.score_pass_rate = sum(rates) / len(rates) if rates else None
    deltas = [c.delta for c in cases if c.delta is not None]
    if deltas:
        summary.mean_delta = sum(deltas) / len(deltas)


def _add_triggers(summary: Summary, cases: list[CaseResult]) -> None:
    """Trigger precision and recall over the cases that say whether the skill should fire."""
    graded = [c for c in cases if c.trigger_expected is not None and c.skill_triggered is not None
              and c.verdict != "ERROR"]
    if not graded:
        return
    overall = _trigger_stats(graded)
    summary.trigger_cases = overall.cases
    summary.trigger_precision, summary.trigger_recall = overall.precision, overall.recall
    skills = sorted({c.target or "" for c in graded})
    if len(skills) > 1:
        summary.triggers_by_skill = {
            s.removeprefix("skill:"): _trigger_stats([c for c in graded if c.target == s]) for s in skills}


def _trigger_stats(graded: list[CaseResult]) -> TriggerStats:
    fired = [c for c in graded if c.skill_triggered]
    should = [c for c in graded if c.trigger_expected]
    hits = sum(bool(c.trigger_expected) for c in fired)
    return TriggerStats(cases=len(graded), precision=round(hits / len(fired), 4) if fired else None,
                        recall=round(hits / len(should), 4) if should else None)


NO_SKILL = "none"
"""The routing matrix's label for "no skill": no skill fired, or none should."""


def routing(cases: list[CaseResult]) -> Routing | None:
    """The confusion matrix of the trigger cases (expected × fired) and each skill's precision
    and recall with 95% Wilson intervals; None without trigger cases."""
    from aam_eval_action.stats import wilson

    trigger = [c for c in cases if c.expected_skill is not None]
    graded = [c for c in trigger if c.verdict != "ERROR" and c.routed_to is not None]
    if not trigger:
        return None
    named = {c.expected_skill or NO_SKILL for c in trigger} | {c.routed_to or NO_SKILL for c in graded}
    skills = sorted(named - {NO_SKILL})
    labels = [*skills, NO_SKILL]
    matrix = {row: {col: 0 for col in labels} for row in labels}
    for c in graded:
        matrix[c.expected_skill or NO_SKILL][c.routed_to or NO_SKILL] += 1
    rows: dict[str, SkillRouting] = {}
    for skill in skills:
        hits = matrix[skill][skill]
        belong, fired = sum(matrix[skill].values()), sum(matrix[r][skill] for r in labels)
        row = SkillRouting(cases=belong, fired=fired,
                           errored=sum(c.expected_skill == skill and c.verdict == "ERROR" for c in trigger))
        if fired:
            row.precision, row.precision_ci = round(hits / fired, 4), _ci(wilson(hits, fired))
        if belong:
            row.recall, row.recall_ci = round(hits / belong, 4), _ci(wilson(hits, belong))
        row.harness = harness_problem(skill, trigger, row)
        if row.harness and not belong:
            row.recall = None
        rows[skill] = row
    runs = [len(c.attempts) if c.attempts else 1 for c in graded]
    return Routing(labels=labels, matrix=matrix, skills=rows,
                   runs=max(set(runs), key=runs.count) if runs else None)


def harness_problem(skill: str, trigger: list[CaseResult], row: SkillRouting) -> str | None:
    """Why a skill's routing numbers say nothing about its description: the prompt that names it
    outright did not fire it, or every session meant to fire it errored."""
    canaries = [c for c in trigger if c.canary and c.expected_skill == skill and c.verdict != "ERROR"]
    if any(c.routed_to != skill for c in canaries):
        return (f"its canary, which names {skill} outright, did not fire it: the skill is probably not "
                "installed or not visible to the engine (a harness fault, not its description)")
    if row.errored and not row.cases:
        return (f"every session of its {row.errored} trigger prompt(s) errored: nothing was measured "
                "(errored runs are never counted as \"did not fire\")")
    return None


def _ci(interval: tuple[float, float]) -> tuple[float, float]:
    return round(interval[0], 4), round(interval[1], 4)


def snippet(text: str) -> str:
    """The report's agent output snippet: the first 500 characters."""
    return text[:SNIPPET_CHARS]


def not_asked(why: str) -> JudgeVerdict:
    """The judge verdict of a case the judge was not asked about, and why not."""
    return JudgeVerdict(result="SKIP", reason=f"not asked: {why}")


def _file_case(file: str) -> str:
    """What a refused case file is listed as: its stem, or its folder's name for a case that is
    a folder (`claude plugin eval`'s `case.yaml` / `prompt.md`)."""
    path = Path(file)
    return path.parent.name if path.name in ("case.yaml", "prompt.md") and path.parent.name else path.stem


def file_error_results(errors: list[FileError], package: LoadedPackage | None = None) -> list[CaseResult]:
    """Bad case files as ERROR results, so a run reports them and goes on."""
    return [
        CaseResult(name=package.qualified(name) if package else name, verdict="ERROR", error=str(err),
                   file=err.file, line=err.line, judge_verdict=not_asked("the case file is invalid"),
                   plugin=package.plugin if package else None)
        for err in errors for name in [err.case_name or _file_case(err.file)]
    ]


def build_report(
    s: RunSettings, results: list[CaseResult], sessions: list[Session | None], started: datetime,
    duration: float, interrupted: bool,
) -> Report:
    """The seed's report, provenance taken from what the engine reported."""
    from aam_eval_action.engines.registry import ENGINES
    from aam_eval_action.fsutil import display_path

    first = next((x for x in sessions if x is not None), None)
    info = ENGINES.get(s.engine)
    report = Report(
        version=REPORT_VERSION,
        id="eval-run-" + started.strftime(STAMP_FORMAT),
        timestamp=started.strftime("%Y-%m-%dT%H:%M:%SZ"),
        duration_seconds=round(duration, 3),
        config=RunConfig(
            engine=s.engine, engine_version=first.runtime_version if first else None,
            judge=s.judge_model, timeout=s.timeout, model=s.model, mode=s.mode,
            package_path=display_path(s.package.layout.root),
            sandbox=sandbox_info(s),
            **({"threshold": s.threshold, "ablation": s.ablation} if any(r.score is not None for r in results)
               else {}),
        ),
        agent=AgentInfo(
            runtime=s.engine, runtime_version=first.runtime_version if first else None,
            model=(first.model if first else None) or s.model,
            model_provider=info.provider_for(s.model) if info else None,
            session_id=first.session_id if first else None,
        ),
        judge=JudgeInfo(model=s.judge_model, model_provider=s.judge_provider),
        environment=environment(),
        package=PackageInfo(name=s.package.manifest.name, version=s.package.manifest.version),
        summary=summarize(results),
        cases=sorted(results, key=lambda r: r.name),
    )
    if interrupted:
        report.interrupted = True
    report.summary.max_usd = s.max_usd
    if report.summary.routing is not None:
        report.summary.routing.threshold = s.trigger_threshold
    report.volatile = learnt_masks(s.cassettes) or None
    if any(r.vally is not None for r in results):
        from aam_eval_action.vally.results import evals

        report.vally = evals(report.cases)
    return report


def learnt_masks(cassettes: Path) -> list[VolatileMask]:
    """The volatile values learnt by the recordings of a cassettes directory, per CLI version."""
    from aam_eval_action.replay.traffic_store import every_mask

    return [VolatileMask(cli=label, mask=mask.describe(), case=mask.case or None)
            for label, mask in every_mask(cassettes)]


_PROBING: dict[int, Any] = {}
"""Sandbox probes started early (`probe_sandbox`), by the id of the run's settings."""


def probe_sandbox(s: RunSettings) -> None:
    """Start probing what this machine's sandbox enforces while the run goes on: the machine's
    probes side by side (`probe_ahead`), so a live run's first sessions find them done, and the
    report's summary of them in a thread, as the report needs it only at the end."""
    from concurrent.futures import ThreadPoolExecutor

    from aam_eval_action.sandbox.plan import probe_ahead, simulated_none

    probe_ahead(simulated_none(s.runner_env))
    pool = ThreadPoolExecutor(1, thread_name_prefix="sandbox-probe")
    _PROBING[id(s)] = (s, pool.submit(_sandbox_info, s))
    pool.shutdown(wait=False)


def sandbox_info(s: RunSettings) -> SandboxInfo:
    """What the sandbox enforces here: probed now, or taken from a probe `probe_sandbox` began."""
    started = _PROBING.pop(id(s), None)
    if started is not None and started[0] is s:
        result: SandboxInfo = started[1].result()
        return result
    return _sandbox_info(s)


def _sandbox_info(s: RunSettings) -> SandboxInfo:
    """`network_enforced` is reported whenever the network is to be off: never silently."""
    from aam_eval_action.engines.registry import ENGINES
    from aam_eval_action.sandbox.plan import (
        confine,
        probe,
        probe_namespace,
        probe_seccomp,
        simulated_no_supervisor,
        simulated_none,
        unix_layer,
    )

    network = s.config.sandbox.network
    info = ENGINES.get(s.engine)
    simulate, no_supervisor = simulated_none(s.runner_env), simulated_no_supervisor(s.runner_env)
    here = confine([], 1, network, simulate, no_supervisor=no_supervisor)
    enforced = None if network else (here.network in ("port-only", "namespace")
                                     or bool(info and info.enforces_no_network))
    version, why = probe(simulate)
    no_namespace = probe_namespace()
    first = f"landlock ABI {version}" if version else "sandbox-exec" if here.seatbelt else f"none: {why}"
    layers = first + (
        f"; no network namespace ({no_namespace})" if no_namespace else "; network namespace")
    if first.startswith("landlock"):
        no_filter = probe_seccomp()
        layers += f"; no seccomp filter ({no_filter})" if no_filter else "; seccomp"
    if not here.seatbelt:
        unix, why_not = unix_layer(no_supervisor)
        layers += "; unix supervisor" if unix == "session" else f"; {why_not}"
    return SandboxInfo(network=network, network_enforced=enforced, enforced=here.describe(),
                       layers=layers, enforce=s.sandbox_enforce)


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


def default_report_path(evals_dir: Path, started: datetime) -> Path:
    """`evals/reports/<timestamp>.json`."""
    return evals_dir / "reports" / (started.strftime(STAMP_FORMAT) + ".json")


Pair = tuple[str, str]
"""(engine, model)."""


def case_pair(report: Report, case: CaseResult) -> Pair:
    """The engine and model a case result is for: its own, else its report's."""
    return (case.engine or report.config.engine,
            case.model or report.config.model or report.agent.model or "")


def report_pairs(report: Report) -> list[Pair]:
    """The engine + model pairs a report covers, in run order."""
    if report.pairs:
        return [(p.engine, p.model) for p in report.pairs]
    return [(report.config.engine, report.config.model or report.agent.model or "")]


def split_by_pair(report: Report) -> list[Report]:
    """A report of several pairs as one single-pair report each (a single-pair report: itself)."""
    if not report.pairs:
        return [report]
    parts = []
    for pair in report.pairs:
        part = report.model_copy(deep=True)
        part.pairs = None
        part.cases = [c.model_copy(update={"engine": None, "model": None}) for c in report.cases
                      if case_pair(report, c) == (pair.engine, pair.model)]
        part.config.engine, part.config.model = pair.engine, pair.model
        part.config.engine_version = part.agent.runtime_version = pair.engine_version
        part.agent.runtime, part.agent.model = pair.engine, pair.model
        part.summary = summarize(part.cases)
        parts.append(part)
    return parts


def merge_reports(reports: list[Report]) -> Report:
    """Cases of all shards and pairs in one report (a case twice for the same engine and model is
    an error), summaries recomputed.

    Shards of one engine + model give a report like the run's; reports of several pairs (a
    sharded matrix, or one report per pair) give a matrix report with `pairs`.
    """
    if not reports:
        raise UsageError("merge needs at least one report")
    seen: dict[tuple[str, str, str], int] = {}
    cells: list[tuple[Pair, CaseResult]] = []
    versions: dict[Pair, str | None] = {}
    for i, report in enumerate(reports):
        for part in split_by_pair(report):
            versions.setdefault(report_pairs(part)[0], part.config.engine_version)
        for case in report.cases:
            pair = case_pair(report, case)
            key = (case.name, *pair)
            if key in seen:
                on = f" on {pair[0]} with {pair[1]}" if len(versions) > 1 else ""
                raise UsageError(
                    f"case {case.name!r}{on} is in shard reports {seen[key] + 1} and {i + 1}; "
                    "merge reports of disjoint shards or of different engines/models"
                )
            seen[key] = i
            cells.append((pair, case))
    first = min(reports, key=lambda r: r.timestamp)
    merged = first.model_copy(deep=True)
    order = list(versions)
    if len(order) == 1:
        merged.cases = [c.model_copy(update={"engine": None, "model": None}) for _, c in cells]
        merged.pairs = None
    else:
        merged.cases = [c.model_copy(update={"engine": p[0], "model": p[1]}) for p, c in cells]
        _describe_pairs(merged, order, versions)
    merged.cases.sort(key=lambda c: (c.name, order.index(case_pair(merged, c))))
    merged.summary = summarize(merged.cases)
    merged.summary.max_usd = first.summary.max_usd
    spent = [r.summary.spent_usd for r in reports if r.summary.spent_usd is not None]
    merged.summary.spent_usd = round(sum(spent), 6) if spent else None
    masks = {(m.cli, m.mask): m for r in reports for m in r.volatile or []}
    merged.volatile = list(masks.values()) or None
    if any(c.vally is not None for c in merged.cases):
        from aam_eval_action.vally.results import evals

        merged.vally = evals(merged.cases)
    # Shards run side by side: the run took as long as its slowest shard.
    merged.duration_seconds = max(r.duration_seconds for r in reports)
    merged.summary.empty = None if merged.cases else merged_empty(reports)
    if any(r.interrupted for r in reports):
        merged.interrupted = True
    return merged


def _describe_pairs(report: Report, order: list[Pair], versions: dict[Pair, str | None]) -> None:
    """`pairs` with a summary each; config and agent name every engine and model, comma-separated."""
    report.pairs = [
        PairSummary(engine=e, model=m, engine_version=versions.get((e, m)),
                    summary=summarize([c for c in report.cases if (c.engine, c.model) == (e, m)]))
        for e, m in order
    ]
    engines = ",".join(dict.fromkeys(e for e, _ in order))
    models = ",".join(dict.fromkeys(m for _, m in order))
    report.config.engine = report.agent.runtime = engines
    report.config.model = report.agent.model = models
    report.config.engine_version = report.agent.runtime_version = None
    report.agent.model_provider = None


def describe_plugins(report: Report, repo: LoadedRepo, engines: list[str]) -> None:
    """The layout and each plugin's summary and warnings (lint, and what could not be
    converted for the run's engines); several plugins: the report is the repository's."""
    from aam_eval_action.engines.install import conversion_warnings
    from aam_eval_action.engines.registry import ENGINES

    report.layout = repo.kind
    report.plugins = []
    for package in repo.packages:
        layout = package.layout
        warnings = [str(f) for f in layout.findings]
        for engine in dict.fromkeys(engines):
            reads = tuple(ENGINES[engine].hook_dialects)
            warnings += [f"{engine}: {w}" for w in conversion_warnings(layout, reads)]  # type: ignore[arg-type]
        report.plugins.append(PluginSummary(
            name=package.plugin or layout.name, layout=layout.kind, path=layout.base or ".",
            summary=summarize([c for c in report.cases if c.plugin == package.plugin]), warnings=warnings,
            no_cases=(not package.cases and not package.errors) or None))
    if repo.several:
        report.package = PackageInfo(name=repo.name or repo.root.name, version=None)


# --- policy ---


def merged_empty(reports: list[Report]) -> EmptyRun | None:
    """Why reports merged into none ran a case: the first that is not an idle shard's."""
    found = [r.summary.empty for r in reports if r.summary.empty is not None]
    return next((e for e in found if e.fails), found[0] if found else None)


def plugins_without_cases(report: Report) -> list[str]:
    """The plugins of a repository of plugins that have no eval cases at all."""
    return [p.name for p in report.plugins or [] if p.no_cases]


def all_passed(report: Report) -> bool:
    """The run passed: every case passed or was skipped."""
    return all(c.verdict in ("PASS", "SKIP") for c in report.cases)


# --- files ---


def to_json(report: Report) -> str:
    """Stable JSON: seed field order, no nulls for absent additive fields, trailing newline."""
    return report.model_dump_json(indent=2, exclude_none=True) + "\n"  # as json.dumps(indent=2) writes it


def load_report(path: Path) -> Report:
    """Read a report written by any version; a broken one is a clear error."""
    try:
        raw: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such report file") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: not a JSON report ({exc})") from None
    try:
        return Report.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise ConfigError(
            f"{path}: {where}: {first['msg']} — is this an aam-eval report?"
        ) from None
