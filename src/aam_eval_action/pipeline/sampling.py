"""A changed case sampled until the evidence decides (`sequential.py`), and each case's history
read into its result and, for a run that records, added to.

A case is *changed* when its history holds runs of earlier inputs on this engine and model and
not yet a decision for the inputs it has now. Such a case, run live, gets attempts side by side
within `--jobs`, batch after batch, until the rule says `regressed` or `holds`, or the cap
(`--max-runs`, or what `--max-usd` leaves) comes first: `not shown`, with what deciding would
cost. Every attempt counts, the head's earlier recordings of the same inputs included.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from aam_eval_action.dice_model import CaseHistory, Evidence, HistorySample
from aam_eval_action.loader import LoadedCase
from aam_eval_action.pipeline.context import CaseContext
from aam_eval_action.replay import history
from aam_eval_action.replay.fingerprint import Fingerprint, judge_fingerprint
from aam_eval_action.replay.history import HistoryRun, Stretch
from aam_eval_action.report import CaseResult
from aam_eval_action.sequential import Counts, Rule, decide, more_both, more_runs

FIRST_BATCH = 2
"""Attempts a changed case starts with: a steady case that still passes holds after two."""
MIN_BEFORE = 3
"""Base attempts a changed case is sampled against at least. Below three, even a head that
fails every time takes seven attempts or more to blame (one base attempt: 1/(k+1) is the
smallest p-value k head attempts can give), so the case runs once and the diff says how many
more base runs would decide."""


@dataclass(frozen=True)
class Plan:
    """What a changed case is weighed against."""

    before: Counts
    """The base: the case's history under its earlier inputs."""
    start: Counts
    """The head's attempts already recorded under these inputs (committed recordings)."""
    local: bool
    rule: Rule
    at_once: int = 4
    """Attempts side by side at most (the run's `--jobs`)."""
    first: int = 2
    """Attempts of the first batch: two, one under `max-usd` (what a case's estimate admits)."""


def verdict_inputs(ctx: CaseContext, loaded: LoadedCase, fp: Fingerprint) -> str:
    """The inputs a case's history is kept under: what shapes the session (its fingerprint) and
    what grades it (its checks, graders, judge criteria and model), since a change of either
    changes the rate a verdict is drawn from."""
    jfp = judge_fingerprint(loaded.case, ctx.settings.judge_model, fp)
    grading = {"agent": fp.digest, "judge": jfp.digest,
               "expected": loaded.case.expected.model_dump(mode="json", by_alias=True),
               "graders": [repr(g) for g in loaded.graders]}
    return hashlib.sha256(json.dumps(grading, sort_keys=True, default=str).encode()).hexdigest()[:32]


def rule_of(ctx: CaseContext) -> Rule:
    s = ctx.settings
    return Rule(confidence=s.confidence, cap=s.max_runs)


def plan_for(ctx: CaseContext, case: str, inputs: str, recorded: str | None) -> Plan | None:
    """The plan for a case about to run live, or None when it is not a changed case: a new case,
    or one whose last recorded run had these inputs (a nightly of an unchanged case)."""
    s = ctx.settings
    runs = history.read(history.path_for(s.cassettes, case), s.cassettes).of(s.engine, s.model)
    if not runs or runs[-1].inputs == inputs:  # new, or its last recorded run had these inputs
        return None
    before = history.earlier(runs, inputs, recorded)
    if before.attempts < MIN_BEFORE:  # too thin to weigh against: one run, and the diff says so
        return None
    mine, _ = history.current(runs, inputs)
    return Plan(Counts(before.passes, before.attempts), Counts(mine.passes, mine.attempts),
                any(r.where == "local" for r in mine.runs), rule_of(ctx), max(FIRST_BATCH, s.jobs),
                1 if ctx.budget.cap is not None else FIRST_BATCH)


@dataclass
class Sampled:
    """The attempts a changed case took, and what was decided."""

    verdicts: list[str]
    evidence: Evidence


def sample(
    plan: Plan, run_batch: Callable[[int], list[str] | None], cost_each: Callable[[], float | None],
    made: list[str] | None = None,
) -> Sampled:
    """Attempts batch after batch until the rule decides. `run_batch(n)` runs n attempts side by
    side and returns their verdicts, or None when the budget cannot pay for them; `made`: the
    verdicts of attempts already made."""
    verdicts: list[str] = list(made or [])
    why: str | None = None
    while True:
        now = _now(plan, verdicts)
        found = decide(plan.before, now, plan.rule) if now.attempts else None
        if found is not None and found.outcome is not None:
            break
        room = plan.rule.cap - len(verdicts)
        if room <= 0:
            why = f"the cap of {plan.rule.cap} runs"
            break
        wanted = more_runs(plan.before, now, plan.rule, room) if verdicts else plan.first
        batch = min(room, plan.at_once, max(1, wanted or 1))
        got = run_batch(batch)
        if got is None:
            why = "what max-usd admits"
            break
        verdicts += got
    return Sampled(verdicts, evidence_of(plan, verdicts, why, cost_each()))


def _now(plan: Plan, verdicts: list[str]) -> Counts:
    graded = [v for v in verdicts if v in ("PASS", "FAIL")]
    return Counts(plan.start.passes + graded.count("PASS"), plan.start.attempts + len(graded))


def evidence_of(plan: Plan, verdicts: list[str], why: str | None, cost_each: float | None) -> Evidence:
    now = _now(plan, verdicts)
    found = decide(plan.before, now, plan.rule)
    common = dict(now_passes=now.passes, now_attempts=now.attempts, before_passes=plan.before.passes,
                  before_attempts=plan.before.attempts, p_value=round(found.p_value, 6),
                  level=round(found.level, 6), confidence=plan.rule.confidence,
                  tolerance=plan.rule.tolerance, cap=plan.rule.cap, local=plan.local)
    if found.outcome is not None:
        return Evidence(decision=found.outcome, **common)
    more, both = more_runs(plan.before, now, plan.rule), None
    if more is None:
        more = both = more_both(plan.before, now, plan.rule)
    runs = (more or 0) + (both or 0)
    return Evidence(decision="not-shown", why=why or _thin(plan), more_runs=more, more_base_runs=both,
                    more_usd=round(runs * cost_each, 2) if runs and cost_each else None, **common)


def _thin(plan: Plan) -> str:
    return f"the base's {plan.before.attempts} attempts"


def verdict_of(evidence: Evidence) -> str:
    """The case's verdict from the decision: a blamed regression fails, a case that holds passes,
    and one not shown passes when at least half its attempts did."""
    if evidence.decision == "regressed":
        return "FAIL"
    if evidence.decision == "holds":
        return "PASS"
    return "PASS" if 2 * evidence.now_passes >= evidence.now_attempts else "FAIL"


# --- history into the result ---------------------------------------------------------------


def record_run(ctx: CaseContext, case: str, inputs: str, result: CaseResult, served: str | None,
               cli: str | None) -> None:
    """Add this run's attempts to the case's history (a run that records, when it ran live)."""
    s = ctx.settings
    verdicts = [a.verdict for a in result.attempts] if result.attempts else [result.verdict]
    graded = [v for v in verdicts if v in ("PASS", "FAIL")]
    if not graded:
        return
    run = HistoryRun(at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), engine=s.engine, model=s.model,
                     inputs=inputs, passes=graded.count("PASS"), attempts=len(graded),
                     cli=cli, served=served, where="ci" if s.in_ci else "local", run=secrets.token_hex(4))
    history.add(s.cassettes, case, run, None)


def case_history(ctx: CaseContext, case: str, inputs: str, recorded: str | None,
                 extra: list[str] | None = None) -> CaseHistory | None:
    """What the case's history says of these inputs; `extra` adds verdicts of this run that are
    not written (`--mode live`). None when it has no history (nor a file that could not be read)."""
    s = ctx.settings
    read = history.read(history.path_for(s.cassettes, case), s.cassettes)
    for warning in read.warnings:
        ctx.warn_once(warning)
    runs = read.of(s.engine, s.model)
    mine, changes = history.current(runs, inputs)
    samples = [HistorySample(at=r.at, passes=r.passes, attempts=r.attempts, where=r.where) for r in mine.runs]
    graded = [v for v in extra or [] if v in ("PASS", "FAIL")]
    if graded:
        samples.append(HistorySample(at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                                     passes=graded.count("PASS"), attempts=len(graded)))
    before = history.earlier(runs, inputs, recorded)
    if not runs and not read.warnings:
        return None
    last = mine.runs[-1] if mine.runs else None
    return CaseHistory(
        inputs=inputs, passes=sum(x.passes for x in samples), attempts=sum(x.attempts for x in samples),
        runs=len(samples), since=samples[0].at if samples else None,
        cli=last.cli if last else None, served=last.served if last else None, changes=changes,
        samples=samples, earlier_inputs=_inputs(before), earlier_passes=before.passes,
        earlier_attempts=before.attempts, warnings=read.warnings,
    )


def _inputs(stretch: Stretch) -> str | None:
    return stretch.runs[0].inputs if stretch.runs else None
