"""One case through the pipeline: session (live or replayed) → checks → judge → case result."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import sys
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aam_eval_action.errors import AamEvalError
from aam_eval_action.loader import LoadedCase
from aam_eval_action.package import PackageLayout
from aam_eval_action.pipeline import sampling
from aam_eval_action.pipeline.context import CaseContext
from aam_eval_action.pipeline.forced import forced
from aam_eval_action.pipeline.grade import (
    Graded,
    JudgeCalls,
    combine,
    grade,
    grade_all,
    miss_record,
    scoring_of,
    verdicts,
)
from aam_eval_action.pipeline.judge import JudgeError
from aam_eval_action.pipeline.slots import side_by_side
from aam_eval_action.pipeline.spend_cap import OverBudget, traffic_cost
from aam_eval_action.replay.agent_cassette import CassetteError
from aam_eval_action.replay.decision import Decision, Miss, decide, diverged
from aam_eval_action.replay.divergence import Divergence
from aam_eval_action.replay.fingerprint import Fingerprint, agent_fingerprint, judge_fingerprint
from aam_eval_action.replay.outage import NOT_RUN, ApiDown
from aam_eval_action.replay.traffic_model import ModelTraffic

if TYPE_CHECKING:
    from aam_eval_action.pipeline.rerun import Rerun
from aam_eval_action.report import Attempt, BudgetSkip, CaseResult, CheckResult, ReplayDivergence, not_asked
from aam_eval_action.session import SelfCheck, Session

BASELINE = "baseline"
"""The cassette variant of the sessions run without the skill."""


@dataclass(frozen=True)
class Outcome:
    """A case's result and the session it was graded on (None when no session was had)."""

    result: CaseResult
    session: Session | None


def run_case(ctx: CaseContext, loaded: LoadedCase) -> Outcome:
    """Run one case to a result; any failure becomes ERROR on this case, never a crash of the run."""
    start = time.monotonic()
    session = None
    try:
        result, session = _run_case(ctx, loaded)
    except Miss as miss:
        result = error_result(loaded, miss.message, miss)
    except OverBudget as over:
        result = budget_result(loaded, over)
    except ApiDown as down:  # not run: never graded, never recorded, counted apart from failures
        result = error_result(loaded, str(down))
        result.api_down = True
        result.judge_verdict = not_asked(NOT_RUN)
    except (AamEvalError, CassetteError, JudgeError, OSError) as exc:
        result = error_result(loaded, str(exc))
        if scoring_of(loaded).by_score:  # a run that could not run (its scaffold failed) scores 0, as there
            result.score = result.pass_rate = 0.0
            if ctx.settings.two_arms(loaded):
                result.score_without = result.pass_rate_without = result.delta = 0.0
    except Exception as exc:  # a bug must not take the other cases down with it
        # The traceback may quote a secret or cassette text: redacted like everything printed.
        sys.stderr.write(ctx.redactor.text(traceback.format_exc()))
        bug = f"internal error (a bug, please report it): {type(exc).__name__}: {exc}"
        result = error_result(loaded, bug)
    result.duration_seconds = round(time.monotonic() - start, 3)
    if ctx.pair is not None:
        result.engine, result.model = ctx.pair
    package = ctx.settings.package
    result.name, result.plugin = package.qualified(result.name), package.plugin
    if loaded.source:
        skipped = dict(loaded.skipped) | engine_notes(loaded, ctx.settings.engine) \
            | grant_notes(loaded, ctx.settings.allow_tools)
        result.source, result.skipped_checks = loaded.source, skipped or None
    if loaded.item is not None:
        from aam_eval_action.pipeline.grade import vally_threshold
        from aam_eval_action.vally.report_model import VallyItem

        result.vally = VallyItem(eval=loaded.item[0], stimulus=loaded.item[1],
                                 threshold=vally_threshold(loaded)[1])
    _history(ctx, loaded, result, session)
    _redact_messages(ctx, result)
    return Outcome(result, session)


def _history(ctx: CaseContext, loaded: LoadedCase, result: CaseResult, session: Session | None) -> None:
    """A run that records adds the attempts it ran live to the case's history; every report
    carries what the history says of the case's inputs."""
    s = ctx.settings
    if result.fingerprint is None or result.api_down:
        return
    ran = result.replay_kind == "live" or result.evidence is not None  # sampled from a re-execution too
    live = ran and result.verdict in ("PASS", "FAIL")
    name = loaded.case.name
    inputs = sampling.verdict_inputs(ctx, loaded, Fingerprint(result.fingerprint, {}))
    if live and s.mode in ("auto", "record"):
        try:
            sampling.record_run(ctx, name, inputs, result, session.served_model if session else None,
                                session.runtime_version if session else None)
        except OSError as exc:  # the recording stands; only its line in the history is lost
            ctx.warn_once(f"{name}: its history was not written: {exc}")
    extra: list[str] | None = None
    if live and s.mode == "live":
        extra = [a.verdict for a in result.attempts] if result.attempts else [result.verdict]
    result.history = sampling.case_history(ctx, name, inputs, None, extra)


def _run_case(ctx: CaseContext, loaded: LoadedCase) -> tuple[CaseResult, Session]:
    forced_how = None
    if ctx.settings.force_skill:
        loaded, forced_how = forced(loaded, ctx.settings.layout, ctx.settings.engine)
    ctx = ctx.for_case(loaded.case)
    s = ctx.settings
    layout = s.layout
    fp = agent_fingerprint(layout, loaded.case, s.config, s.engine, s.model, s.scaffold, s.allow_tools,
                           s.mocks)
    decision = decide(s, loaded.case.name, fp)
    plan = _plan(ctx, loaded, fp, decision)
    # The arm without the package runs beside this one (its sessions take slots of their own).
    with ThreadPoolExecutor(max_workers=1) as beside:
        arm = beside.submit(run_baseline, ctx, loaded) if s.two_arms(loaded) and ctx.together else None
        rerun = _rerun_case(ctx, loaded, fp, decision, sampled=plan is not None) if decision.rerun else None
        if isinstance(rerun, tuple):
            result, session = rerun
        elif plan is not None:
            result, session = _sampled_case(ctx, loaded, fp, layout, plan, decision, rerun or [])
        else:
            with spending(ctx, loaded, paid=not decision.replay):
                sessions, recorded = _sessions(ctx, loaded, fp, layout, decision)
                try:
                    graded = grade_all(ctx, loaded, fp, sessions)
                finally:
                    checks = recorded()
            result, session = combine(ctx, loaded, fp, sessions, graded, replayed=decision.replay)
            result.replay_kind = decision.kind
            result.self_check = summary(checks)
        if s.two_arms(loaded):
            add_baseline(loaded, result, arm.result() if arm is not None else run_baseline(ctx, loaded))
    result.forced = forced_how
    return result, session


def _sessions(
    ctx: CaseContext, loaded: LoadedCase, fp: Fingerprint, layout: PackageLayout, decision: Decision,
    variant: str = "",
) -> tuple[list[Session], Callable[[], list[SelfCheck]]]:
    """The case's sessions, replayed as recorded (snapshot) or live; and `recorded()`, which
    (live, recording) waits for each recording's check against itself, started now so that it
    runs while the sessions are graded, then saves the recordings: call it once grading is done,
    or failed."""
    # The live side (its proxies, HTTP and the engines) is loaded only when a session runs:
    # a snapshot replay of a thousand cases does without it.
    s = ctx.settings
    if decision.replay and decision.recorded is not None:
        # Recorded sessions were redacted when they were recorded.
        sessions = decision.recorded.attempts[: s.repeat]
        if ctx.keep_workspaces and not variant:
            from aam_eval_action.pipeline.live import restore_for_debugging

            restore_for_debugging(ctx, loaded, sessions[0])
        return sessions, list
    from aam_eval_action.pipeline.live import live_session

    # The attempts side by side, each in a slot of the run's --jobs as it comes free.
    runs = side_by_side([functools.partial(live_session, ctx, loaded, layout)] * s.repeat, ctx.together)
    sessions = [session for session, _ in runs]
    prices = ctx.estimator.prices if ctx.budget.cap is not None else {}
    for session, traffic in runs:
        ctx.budget.charge(traffic_cost(session, traffic, s.model, prices))
    return sessions, _recording(ctx, loaded, fp, layout, runs, variant)


def _recording(
    ctx: CaseContext, loaded: LoadedCase, fp: Fingerprint, layout: PackageLayout,
    runs: list[tuple[Session, ModelTraffic]], variant: str = "",
) -> Callable[[], list[SelfCheck]]:
    """Under auto or record: the recordings' check against themselves, started now so that it
    runs while the sessions are graded, and `recorded()`, which waits for it and saves them."""
    from aam_eval_action.pipeline.live import save_sessions
    from aam_eval_action.pipeline.self_check import check_attempts

    s = ctx.settings
    if s.mode not in ("auto", "record"):
        return list
    sessions = [session for session, _ in runs]
    checking = functools.partial(check_attempts, ctx, loaded, runs, layout)
    pool = ThreadPoolExecutor(max_workers=1) if s.self_check and ctx.together else None
    started = pool.submit(checking) if pool is not None else None

    def recorded() -> list[SelfCheck]:
        try:
            checks = started.result() if started is not None else checking() if s.self_check else []
        finally:
            if pool is not None:
                pool.shutdown()
        save_sessions(ctx, loaded.case.name, fp, sessions, [traffic for _, traffic in runs], variant,
                      checks or None)
        return checks

    return recorded


def _plan(ctx: CaseContext, loaded: LoadedCase, fp: Fingerprint, decision: Decision) -> sampling.Plan | None:
    """A case about to run live whose history holds earlier inputs is sampled until the evidence
    decides; a case with attempts of its own (`repeat`, `runs`) or graded otherwise than by its
    checks runs as it says."""
    s = ctx.settings
    if (decision.replay and not decision.rerun) or s.repeat != 1 or s.repeat_given \
            or scoring_of(loaded).by_score or loaded.case.is_trigger or loaded.item is not None:
        return None
    return sampling.plan_for(ctx, loaded.case.name, sampling.verdict_inputs(ctx, loaded, fp), None)


def _sampled_case(
    ctx: CaseContext, loaded: LoadedCase, fp: Fingerprint, layout: PackageLayout, plan: sampling.Plan,
    decision: Decision, first: list[Rerun],
) -> tuple[CaseResult, Session]:
    """A changed case's attempts, batch after batch side by side, until the rule decides; all of
    them graded, self-checked and recorded. `first`: re-executions that went on live from a
    divergence, its first attempts; the attempts after them are re-executed and go on live from
    their divergence too, so that what is spent is only from there (the turns before it are
    the recording's answers to the same requests, shared by those attempts)."""
    from aam_eval_action.pipeline.live import api_down, live_session
    from aam_eval_action.pipeline.rerun import live_cost, rerun_session

    s = ctx.settings
    runs: list[tuple[Session, ModelTraffic]] = [(r.session, r.traffic) for r in first]
    reruns = list(first)
    judge = JudgeCalls(ctx, loaded, judge_fingerprint(loaded.case, s.judge_model, fp))
    graded: list[Graded] = [grade(ctx, loaded, session, judge) for session, _ in runs]

    def again() -> tuple[Session, ModelTraffic]:
        run = rerun_session(ctx, loaded, decision.traffic[0])
        if run.live_requests:
            api_down(run.session, run.traffic)
        reruns.append(run)
        return run.session, run.traffic

    one = again if first else functools.partial(live_session, ctx, loaded, layout)

    def run_batch(n: int) -> list[str] | None:
        if runs and ctx.budget.cap is not None:
            return None  # under max-usd a case gets the attempt its estimate was admitted for
        new = side_by_side([one] * n, ctx.together)
        prices = ctx.estimator.prices if ctx.budget.cap is not None else {}
        for session, traffic in new:
            ctx.budget.charge(traffic_cost(session, traffic, s.model, prices, live_only=bool(first)))
        runs.extend(new)
        done = [grade(ctx, loaded, session, judge) for session, _ in new]
        graded.extend(done)
        return [g.verdict for g in done]

    with spending(ctx, loaded, paid=True):
        try:
            sampled = sampling.sample(plan, run_batch, lambda: _each(runs), [g.verdict for g in graded])
        finally:
            judge.close()
        checks = _recording(ctx, loaded, fp, layout, runs)() if runs else []
    sessions = [session for session, _ in runs]
    result, session = combine(ctx, loaded, fp, sessions, graded, replayed=False)
    evidence = sampled.evidence
    result.verdict = sampling.verdict_of(evidence)  # type: ignore[assignment]
    result.error = None if result.verdict == "PASS" else evidence.text
    result.evidence, result.replay_kind, result.self_check = evidence, "live", summary(checks)
    if first:  # as a re-execution that went on live says it
        result.replay_kind, result.live_from_turn = "rerun", min(r.live_from_turn or 1 for r in reruns)
        result.run_cost_usd = live_cost(reruns)
        changed = [r.divergence.user_turn for r in reruns if r.divergence and r.divergence.user_turn]
        result.changed_at_turn = min(changed) if changed else None
    return result, session


def _each(runs: list[tuple[Session, ModelTraffic]]) -> float | None:
    """What one attempt cost, on average over those made (None: no cost reported)."""
    costs = [session.cost_usd for session, _ in runs if session.cost_usd]
    return sum(costs) / len(costs) if costs else None


def summary(checks: list[SelfCheck]) -> SelfCheck | None:
    """The case's self-check: the first attempt's that was not clean, else the first one's, with
    what every attempt learnt."""
    if not checks:
        return None
    worst = next((c for c in checks if not c.clean), checks[0])
    learnt = list(dict.fromkeys(m for c in checks for m in c.learnt))
    return worst.model_copy(update={"learnt": learnt, "runs": sum(c.runs for c in checks)})


def _rerun_case(
    ctx: CaseContext, loaded: LoadedCase, fp: Fingerprint, decision: Decision, *, sampled: bool = False
) -> tuple[CaseResult, Session] | list[Rerun]:
    """Re-execute each recorded attempt; a divergence is a finding, or goes on live under auto.
    `sampled`: a changed case whose re-executions went on live is sampled on from them (they
    are returned, not yet graded or saved)."""
    from aam_eval_action.pipeline.live import api_down, save_sessions
    from aam_eval_action.pipeline.rerun import live_cost

    s = ctx.settings
    assert decision.recorded is not None
    runs, over = _reexecuted(ctx, loaded, decision)
    for run in runs:
        if run.live_requests:  # went on live: the API may have been down from there
            api_down(run.session, run.traffic)
    stopped = next((r for r in runs if r.divergence and not r.live_requests), None)
    if stopped is not None and stopped.divergence is not None:
        if over is not None:
            raise over
        raise diverged(s, loaded.case.name, stopped.divergence, decision.changes)
    went_live = [r.live_from_turn for r in runs if r.live_from_turn is not None]
    if sampled and went_live and over is None:
        return runs  # the changed case is sampled on from these attempts
    sessions = [r.session for r in runs]
    if s.mode == "auto":
        # Re-verified against the changed package (or continued live): the cassette now matches
        # it, so the next run reads the snapshot back instead of re-executing again.
        save_sessions(ctx, loaded.case.name, fp, sessions, [r.traffic for r in runs])
    # Re-executed without a difference, the session is the recorded one: so is its judge call.
    recorded = decision.recorded.fingerprint
    graded_fp = fp if went_live else Fingerprint(recorded.digest, recorded.inputs)
    graded = grade_all(ctx, loaded, graded_fp, sessions)
    result, session = combine(ctx, loaded, fp, sessions, graded, replayed=not went_live)
    result.replay_kind = "rerun"
    if went_live:
        result.live_from_turn = min(went_live)
        result.run_cost_usd = live_cost(runs)
    changed = [r.divergence.user_turn for r in runs if r.divergence and r.divergence.user_turn]
    result.changed_at_turn = min(changed) if changed else None
    return result, session


def _reexecuted(
    ctx: CaseContext, loaded: LoadedCase, decision: Decision
) -> tuple[list[Rerun], OverBudget | None]:
    """Each recorded attempt re-executed, going on live from a divergence where it may (under
    auto, with a key, within max-usd)."""
    from aam_eval_action.pipeline.rerun import continue_upstream, rerun_session

    s = ctx.settings
    over: OverBudget | None = None
    try:
        # Re-execution is free; a divergence may go on live (under auto, with a key): paid.
        with spending(ctx, loaded, paid=continue_upstream(ctx) is not None):
            runs = side_by_side([functools.partial(rerun_session, ctx, loaded, traffic)
                                 for traffic in decision.traffic[: s.repeat]], ctx.together)
            prices = ctx.estimator.prices if ctx.budget.cap is not None else {}
            for run in runs:
                ctx.budget.charge(traffic_cost(run.session, run.traffic, s.model, prices, live_only=True))
    except OverBudget as exc:  # then it may not go on live, and is graded only if it need not
        over = exc
        runs = side_by_side([functools.partial(rerun_session, ctx, loaded, traffic, live=False)
                             for traffic in decision.traffic[: s.repeat]], ctx.together)
    return runs, over


@dataclass(frozen=True)
class Baseline:
    """The case's arm without the package (or without its target skill)."""

    verdict: str
    error: str | None
    attempts: list[Attempt] | None = None
    checks: dict[str, CheckResult] | None = None
    graded: CaseResult | None = None
    """The arm's own result, when it was graded."""


def run_baseline(ctx: CaseContext, loaded: LoadedCase) -> Baseline:
    """Run the case again without the package (or without its target skill).

    The baseline has its own agent and judge cassettes (`<engine>.baseline.*.yaml`); a miss or
    failure there is the baseline's ERROR, never the case's.
    """
    s = ctx.settings
    layout = dataclasses.replace(s.layout, baseline=True)
    fp = agent_fingerprint(layout, loaded.case, s.config, s.engine, s.model, s.scaffold, s.allow_tools,
                           s.mocks)
    try:
        decision = decide(s, loaded.case.name, fp, BASELINE)
        with spending(ctx, loaded, paid=not decision.replay):
            sessions, recorded = _sessions(ctx, loaded, fp, layout, decision, BASELINE)
            try:
                graded = grade_all(ctx, loaded, fp, sessions, BASELINE)
            finally:
                recorded()
        base, shown = combine(ctx, loaded, fp, sessions, graded, replayed=True)
        checks = verdicts(graded[next(i for i, x in enumerate(sessions) if x is shown)])
        return Baseline(base.verdict, base.error, base.attempts, checks, base)
    except OverBudget as over:
        return Baseline("SKIP", over.message)
    except (Miss, AamEvalError, CassetteError, JudgeError, OSError) as exc:
        return Baseline("ERROR", str(exc))


def add_baseline(loaded: LoadedCase, result: CaseResult, baseline: Baseline) -> None:
    """The case's result with its arm without the package: the verdict, and for a case graded by
    score its score without and the delta."""
    base = baseline.graded
    result.baseline_verdict = baseline.verdict  # type: ignore[assignment]
    result.baseline_error = baseline.error
    result.baseline_attempts = baseline.attempts
    if baseline.checks is not None:
        result.baseline_checks = baseline.checks
    if scoring_of(loaded).by_score and base is not None and baseline.verdict in ("PASS", "FAIL") \
            and result.score is not None:
        result.score_without, result.pass_rate_without = base.score, base.pass_rate
        result.graders_without = base.graders
        result.delta = result.score - (base.score or 0.0)
    result.skill_not_needed = result.verdict == "PASS" and baseline.verdict == "PASS"


def spending(ctx: CaseContext, loaded: LoadedCase, *, paid: bool) -> contextlib.AbstractContextManager[None]:
    """Under `max-usd`, a case about to spend holds the run's paid slot for its estimate
    (OverBudget when it does not fit); anything else runs as it is."""
    if not paid or ctx.budget.cap is None:
        return contextlib.nullcontext()
    return ctx.budget.paid(ctx.estimator.case(loaded, ctx.settings.repeat))


def budget_result(loaded: LoadedCase, over: OverBudget) -> CaseResult:
    """A case not run for the budget: not graded, never failed, with the estimate and the cap."""
    return CaseResult(
        name=loaded.case.name, title=loaded.case.title, target=loaded.case.target, verdict="SKIP",
        error=over.message,
        file=loaded.file, line=loaded.line, judge_verdict=not_asked("not graded (budget)"),
        budget=BudgetSkip(estimate_usd=over.estimate, basis=over.basis, cap_usd=over.cap,
                          left_usd=round(max(over.left, 0.0), 6)),
    )


def error_result(loaded: LoadedCase, message: str, miss: Miss | None = None) -> CaseResult:
    result = CaseResult(
        name=loaded.case.name, title=loaded.case.title, target=loaded.case.target, verdict="ERROR",
        error=message,
        file=loaded.file, line=loaded.line, replay_miss=miss.kind if miss else None,
        miss=miss_record(miss) if miss else None,
        judge_verdict=not_asked("no recorded session" if miss else "the case errored"),
    )
    if miss is not None and miss.divergence is not None and result.miss is not None:
        result.judge_verdict = not_asked("the re-executed session diverged from the recording")
        result.miss.divergence = divergence_record(miss.divergence)
        result.changed_at_turn = miss.divergence.user_turn
    return result


def divergence_record(d: Divergence) -> ReplayDivergence:
    """The report's record of a divergence."""
    return ReplayDivergence(turn=d.turn, stream=d.stream, path=d.path, recorded=d.recorded,
                            live=d.live, tool=d.tool_name, tool_input=d.tool_input,
                            conversation=d.conversation, user_turn=d.user_turn, message=d.message)


def _redact_messages(ctx: CaseContext, result: CaseResult) -> None:
    """The case line is printed before the report is written: its free text is redacted now."""
    if result.error:
        result.error = ctx.redactor.text(result.error)
    if result.judge_verdict and result.judge_verdict.reason:
        result.judge_verdict.reason = ctx.redactor.text(result.judge_verdict.reason)



def grant_notes(loaded: LoadedCase, allow_tools: tuple[str, ...]) -> dict[str, str]:
    """The tools a `claude plugin eval` case lists that no `--allow-tools` grant covers: withheld
    from its run, as that runner withholds them."""
    from aam_eval_action.importers.claude_plugin_eval import granted

    execution = loaded.case.execution
    if execution is None or execution.allowed_tools is None:
        return {}
    withheld = granted(execution.allowed_tools, allow_tools)[1]
    if not withheld:
        return {}
    said = f"{', '.join(withheld)}; grant with --allow-tools {','.join(withheld)}"
    return {"execution.allowed_tools": "not granted (missing --allow-tools grant, or a malformed entry): "
                                       + said}


def engine_notes(loaded: LoadedCase, engine: str) -> dict[str, str]:
    """What a `claude plugin eval` case asks that this engine does not do: its execution fields
    and plugin loading are Claude Code's (they are passed to it as that runner passes them)."""
    from aam_eval_action.engines.registry import ENGINES

    execution = loaded.case.execution
    info = ENGINES[engine]
    if execution is None or info.claude_native:
        return {}
    asked = {"execution.model": execution.model, "execution.max_turns": execution.max_turns != 10,
             "execution.allowed_tools": execution.allowed_tools,
             "execution.disallowed_tools": execution.disallowed_tools,
             "execution.append_system_prompt": execution.append_system_prompt,
             "context.add_dirs": execution.add_dirs, "context.history_file": execution.history}
    passed = info.execution_fields
    notes = {key: f"not passed to {engine}: Claude Code's own option" for key, value in asked.items()
             if value and key not in passed}
    if len(execution.plugins) > 1:
        notes["plugins"] = (f"on {engine}, the other plugins' skills only: their hooks, agents and MCP "
                            "servers are Claude Code plugin parts")
    return notes

