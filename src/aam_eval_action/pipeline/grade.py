"""Grading: one attempt graded by its case's graders into one result type (`Check`), then the
attempts of a repeated case combined into one case result.

A case is graded one of two ways, chosen once (`scoring_of`):

* `CHECKS`: the checks of its `expected:` in the seed's fast-fail order (`pipeline/checks.py`),
  then the judge of its `judge:`; it passes when every one does, and the case when `min_pass`
  attempts do;
* `SCORE`: a `claude plugin eval` case's graders (`graders.py`, graded in
  `pipeline/plugin_eval.py`), each with its weight; an attempt scores the passed share, and the
  case passes when the mean score reaches the threshold.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aam_eval_action.graders import PluginGrader
from aam_eval_action.labels import digest
from aam_eval_action.loader import LoadedCase
from aam_eval_action.pipeline import plugin_eval
from aam_eval_action.pipeline.checks import Check, CheckInputs, run_checks
from aam_eval_action.pipeline.context import CaseContext
from aam_eval_action.pipeline.finished import FinishedWorkspace
from aam_eval_action.pipeline.judge import (
    API_PATHS,
    VERDICT,
    JudgeAnswer,
    answer_from_body,
    ask_plain,
    build_prompt,
    evidence,
    plain_params,
    request_params,
    text_of,
    usage_of,
)
from aam_eval_action.pipeline.slots import side_by_side
from aam_eval_action.pipeline.spend_cap import OverBudget, answered_cost
from aam_eval_action.providers import BASE_URL_VARS, KEY_VARS, PROVIDERS
from aam_eval_action.replay.decision import JudgeReplay, Miss, judge_miss, open_judge
from aam_eval_action.replay.fingerprint import Fingerprint, judge_fingerprint
from aam_eval_action.replay.outage import ApiDown
from aam_eval_action.report import (
    NO_SKILL,
    Attempt,
    CaseResult,
    CheckResult,
    GraderOutcome,
    JudgedHashes,
    JudgeVerdict,
    JudgeVote,
    ReplayMiss,
    Verdict,
    not_asked,
    snippet,
)
from aam_eval_action.session import Session
from aam_eval_action.spec import trigger_expectation
from aam_eval_action.tools import skill_triggered, skills_fired


@dataclass(frozen=True)
class Graded:
    """One attempt's grade."""

    verdict: Verdict
    checks: list[Check]
    judge: JudgeVerdict | None
    error: str | None
    miss: Miss | None = None
    score: float | None = None
    """A case graded by score: this run's score."""


def grade_all(
    ctx: CaseContext, loaded: LoadedCase, fp: Fingerprint, sessions: list[Session], variant: str = ""
) -> list[Graded]:
    """Each attempt graded; the case's judge cassette is opened once and saved once.

    `variant` is `baseline` for the sessions run without the skill (their own judge cassette).
    """
    jfp = judge_fingerprint(loaded.case, ctx.settings.judge_model, fp)
    judge = JudgeCalls(ctx, loaded, jfp, variant)
    try:
        # Attempt after attempt: identical judge requests of two attempts play back their
        # recorded answers in the order they were recorded (a grader's votes run side by side).
        return [grade(ctx, loaded, session, judge) for session in sessions]
    finally:
        judge.close()


def check_inputs(ctx: CaseContext, loaded: LoadedCase, session: Session) -> CheckInputs:
    """What the checks read besides the session."""
    s = ctx.settings
    target = loaded.case.target or ""
    hidden = set(KEY_VARS + BASE_URL_VARS)
    env = {k: v for k, v in s.runner_env.items() if k in ("PATH", "LANG", "LC_ALL", "TZ")}
    env |= {k: v for k, v in s.agent_env.items() if k not in hidden}
    return CheckInputs(
        finished=FinishedWorkspace(s.package.layout, loaded.case, session),
        sandbox=s.config.sandbox,
        target_skill=target.removeprefix("skill:") if target.startswith("skill:") else None,
        command_env=env,
        turn_expected=tuple(t.expected for t in loaded.case.input.turns),
        simulated_user=loaded.case.input.user is not None,
    )


def grade(ctx: CaseContext, loaded: LoadedCase, session: Session, judge: JudgeCalls) -> Graded:
    """One attempt, graded as its case is graded."""
    return scoring_of(loaded).attempt(ctx, loaded, session, judge)


def grade_by_checks(ctx: CaseContext, loaded: LoadedCase, session: Session, judge: JudgeCalls) -> Graded:
    """Every check of `expected:`, then (all passed) the judge: PASS when all pass."""
    checks = run_checks(loaded.case.expected, session, check_inputs(ctx, loaded, session))
    if session.timed_out:
        return Graded("FAIL", checks, not_asked("the session timed out"), session.error or "timed out")
    if session.is_error:
        return Graded("ERROR", checks, not_asked("the agent session failed"),
                      session.error or "the agent session failed")
    failed = [c for c in checks if not c.passed]
    if failed:
        return Graded("FAIL", checks, not_asked(", ".join(c.name for c in failed) + " failed"),
                      "; ".join(f"{c.name}: {c.detail}" for c in failed))
    if loaded.case.judge is None:
        return Graded("PASS", checks, not_asked("the case has no judge criteria: its checks decide"), None)
    try:
        answers, replayed = judge.ask_votes(session, loaded.case.judge.votes)
    except Miss as miss:
        return Graded("ERROR", checks, not_asked("no recorded judge answer"), miss.message, miss=miss)
    except OverBudget:
        raise  # not graded (budget), never an error
    except ApiDown as down:  # not run: never a verdict
        raise ApiDown(f"the judge: {down}") from None
    except Exception as exc:  # any SDK error after its retries: this case errors, the run goes on
        reason = f"judge failed: {type(exc).__name__}: {exc}"
        s = ctx.settings
        if not s.api_key(s.judge_provider):
            reason += f" (no {PROVIDERS[s.judge_provider].key_var} is set: live judge calls need it)"
        return Graded("ERROR", checks, JudgeVerdict(result="ERROR", reason=reason), reason)
    jv = majority(answers, replayed)
    error = None if jv.result == "PASS" else f"judge: {jv.reason}"
    return Graded(jv.result, checks, jv, error)


def grade_by_score(ctx: CaseContext, loaded: LoadedCase, session: Session, judge: JudgeCalls) -> Graded:
    """A `claude plugin eval` case's run, graded as that runner grades it: its score, and PASS
    at 1. A run that ended on an API error (or did not run) scores 0 without grading, as there;
    a timed-out run is still graded."""
    if session.is_error and not session.timed_out:
        why = session.error or "the agent session failed"
        return Graded("ERROR", [], not_asked("the agent session failed"), why, score=0.0)
    from aam_eval_action import mocks

    stopped = mocks.aborted(session.mock_calls)
    if stopped is not None:  # a call broke its mock's `expect:` guard: 0, ungraded, as there
        reason = str(stopped.get("output") or "").partition(" — ")[2] or "aborted"
        why = f"aborted by mock {stopped.get('server')}/{stopped.get('tool')}: {reason}"
        return Graded("FAIL", [], not_asked("the run was aborted by a mock"), why, score=0.0)
    finished = FinishedWorkspace(ctx.settings.package.layout, loaded.case, session)

    def ask(text: str | list[dict[str, Any]]) -> str:
        return judge.ask_text(plugin_eval.JUDGE_SYSTEM, text)

    def votes(asking: list[Callable[[], str]]) -> list[str]:  # one step of --jobs: asked together
        with ctx.slots.held():
            return side_by_side(asking, ctx.together)

    s = ctx.settings
    servers = mocks.for_case(s.package.layout, loaded.case.execution, s.allow_real_servers)
    run = plugin_eval.RunInputs(session, finished.files, ask, s.engine,
                                case_dir=s.package.layout.root / Path(loaded.file).parent,
                                calls_with_only=mocks.with_only_calls(servers), blobs=finished.blobs,
                                votes=votes, finished=finished,
                                network=s.config.sandbox.network,
                                command_env=check_inputs(ctx, loaded, session).command_env)
    try:
        arm = ("without" if judge.variant else "with") if ctx.settings.two_arms(loaded) else None
        results = plugin_eval.grade_run(loaded.graders, run, arm, passthrough=(Miss, OverBudget, ApiDown),
                                        grade=_grade_one)
    except Miss as miss:
        return Graded("ERROR", [], not_asked("no recorded judge answer"), miss.message, miss=miss)
    except ApiDown as down:  # not run: never a verdict
        raise ApiDown(f"the judge: {down}") from None
    score = plugin_eval.run_score(results)
    failed = [r for r in results if r.scored and not r.passed]
    passed = run_passes(loaded, results, score)
    error = None if passed else "; ".join(f"{r.name}: {r.detail}" for r in failed) or f"score {score:.2f}"
    return Graded("PASS" if passed else "FAIL", results, not_asked("graded by its graders"), error,
                  score=score)


def _grade_one(grader: PluginGrader, run: plugin_eval.RunInputs) -> Check:
    """A Vally grader as its catalog page defines it (`vally/grading.py`); the others as
    `claude plugin eval` grades them."""
    from aam_eval_action.vally import grading
    from aam_eval_action.vally.grader_model import VallyGrader

    if isinstance(grader, VallyGrader):
        return grading.grade(grader, run)
    return plugin_eval.grade_one(grader, run)


def vally_threshold(loaded: LoadedCase) -> tuple[bool, float | None]:
    """(a Vally stimulus, its eval's `scoring.threshold`)."""
    from aam_eval_action.vally.grader_model import VallyGrader

    vally = [g for g in loaded.graders if isinstance(g, VallyGrader)]
    return bool(vally), vally[0].threshold if vally else None


def run_passes(loaded: LoadedCase, results: list[Check], score: float) -> bool:
    """A run passes at score 1 (`claude plugin eval`); a Vally stimulus's at its eval's
    threshold, or, with none, when every scored grader passed (concepts/scoring)."""
    vally, threshold = vally_threshold(loaded)
    if not vally:
        return score >= 1
    if threshold is None:
        return all(r.passed for r in results if r.scored)
    return score >= threshold


@dataclass(frozen=True)
class Scoring:
    """How a case's graders make its verdict."""

    attempt: Callable[[CaseContext, LoadedCase, Session, JudgeCalls], Graded]
    """One attempt graded."""
    decide: Callable[[list[Graded], CaseContext], tuple[Verdict, Graded]]
    """The case's verdict from its attempts, and the attempt shown."""
    by_score: bool


CHECKS = Scoring(grade_by_checks, lambda graded, ctx: _by_attempts(graded, ctx.settings.min_pass), False)
SCORE = Scoring(grade_by_score, lambda graded, ctx: _by_score(graded, ctx.settings.threshold), True)
VALLY = Scoring(grade_by_score, lambda graded, ctx: _by_vally(graded), True)


def scoring_of(loaded: LoadedCase) -> Scoring:
    """The one place that tells how a case is graded: by its `claude plugin eval` graders' score,
    or by its checks and judge."""
    if not loaded.graders:
        return CHECKS
    vally, threshold = vally_threshold(loaded)
    if vally:
        return VALLY if threshold is None else Scoring(
            grade_by_score, lambda graded, ctx: _by_score(graded, threshold), True)
    return SCORE


def majority(answers: list[JudgeAnswer], replayed: bool) -> JudgeVerdict:
    """The verdict most votes gave (votes are odd), with the first reason given for it."""
    passes = sum(a.result == "PASS" for a in answers)
    result = "PASS" if passes * 2 > len(answers) else "FAIL"
    first = next(a for a in answers if a.result == result)
    jv = JudgeVerdict(result=result, reason=first.reason, model=first.model, replayed=replayed)
    if len(answers) > 1:
        jv.votes = [JudgeVote(result=a.result, reason=a.reason) for a in answers]
    return jv


class JudgeCalls:
    """The judge for one case: its own cassette and client, so parallel cases never mix calls."""

    def __init__(self, ctx: CaseContext, loaded: LoadedCase, jfp: Fingerprint, variant: str = "") -> None:
        self.ctx = ctx
        self.loaded = loaded
        self.jfp = jfp
        self.variant = variant
        self.replay: JudgeReplay | None = None
        self._opened = False
        self._lock = threading.Lock()

    def _open(self) -> JudgeReplay | None:
        """This case's judge cassette, opened on first use (once, whichever vote comes first);
        None in live mode."""
        with self._lock:
            if not self._opened:
                self.replay = open_judge(self.ctx.settings, self.loaded.case.name, self.jfp,
                                         self.ctx.redactor.text, self.variant)
                self._opened = True
            return self.replay

    def ask_votes(self, session: Session, votes: int) -> tuple[list[JudgeAnswer], bool]:
        """The judge asked `votes` times with the same request, side by side; the answers in a
        fixed order (passes first, then by reason), so a vote's place does not depend on which
        answer came back first, live or replayed."""
        with self.ctx.slots.held():  # one step of the run's --jobs: the votes asked together
            asked = side_by_side([functools.partial(self.ask, session)] * votes, self.ctx.together)
        answers = sorted((answer for answer, _ in asked), key=lambda a: (a.result != "PASS", a.reason))
        return answers, all(replayed for _, replayed in asked)

    def ask(self, session: Session) -> tuple[JudgeAnswer, bool]:
        """The judge's answer, and whether it came from the cassette."""
        s = self.ctx.settings
        assert self.loaded.case.judge is not None  # a case without criteria never asks
        text = build_prompt(self.loaded.case.judge.criteria, self.loaded.case.input.prompt, session)
        body, replayed = self._asked(s.judge_model, request_params(s.judge_provider, s.judge_model, text),
                                     lambda client: VERDICT.ask(s.judge_provider, s.judge_model, text,
                                                                s.base_url(s.judge_provider),
                                                                s.api_key(s.judge_provider), client))
        return answer_from_body(s.judge_provider, s.judge_model, body), replayed

    def ask_text(self, system: str, text: str | list[dict[str, Any]]) -> str:
        """A plain text answer to `text` (a `claude plugin eval` judge's vote): recorded in and
        played from the case's judge cassette like a verdict."""
        s = self.ctx.settings
        model = s.plugin_eval_judge()
        provider, url, key = s.judge_provider, s.base_url(s.judge_provider), s.api_key(s.judge_provider)
        body, _ = self._asked(model, plain_params(provider, model, system, text),
                              lambda client: ask_plain(provider, model, system, text, url, key, client))
        return text_of(s.judge_provider, body)

    def _asked(self, model: str, params: dict[str, Any], call: Callable[[Any], Any]) -> tuple[Any, bool]:
        """A judge request's response body, and whether it came from the case's judge cassette;
        not there, `call(http_client)` asks live (recorded through the cassette's client), within
        what `max-usd` leaves."""
        from aam_eval_action.replay.judge_cassette import JudgeReplayMiss

        s = self.ctx.settings
        replay = self._open()
        jc = replay.cassette if replay else None
        played_before = jc.mine() if jc else 0  # this thread's: votes are asked side by side
        recorded = jc.play_recorded(s.judge_provider, API_PATHS[s.judge_provider], params) if jc else None
        if recorded is not None:
            return recorded, True
        budget = self.ctx.budget
        # Not in the cassette: under `max-usd`, a live judge call must fit what is left.
        paid = s.mode != "replay" and budget.cap is not None
        estimate = self.ctx.estimator.case(self.loaded, 1, with_agent=False) if paid else None
        try:
            with budget.paid(estimate) if estimate else contextlib.nullcontext():
                body = call(jc.http_client() if jc else None)
        except JudgeReplayMiss:
            assert replay is not None  # only a cassette raises a replay miss
            raise judge_miss(s, self.loaded.case.name, replay, self.variant) from None
        replayed = bool(jc and jc.mine() > played_before)
        if not replayed:
            prices = self.ctx.estimator.prices if budget.cap is not None else {}
            budget.charge(answered_cost(usage_of(body), model, s.judge_provider, prices))
        return body, replayed

    def close(self) -> None:
        if self.replay is not None:
            self.replay.cassette.save({"digest": self.jfp.digest, "inputs": self.jfp.inputs})


def combine(
    ctx: CaseContext, loaded: LoadedCase, fp: Fingerprint, sessions: list[Session],
    graded: list[Graded], *, replayed: bool,
) -> tuple[CaseResult, Session]:
    """One case result from its attempts: PASS when at least `min_pass` attempts passed."""
    s = ctx.settings
    scoring = scoring_of(loaded)
    routed = route(loaded, sessions, graded, s.trigger_threshold) if loaded.case.is_trigger else None
    if routed is not None:
        verdict, shown = routed.verdict, graded[routed.shown]
    else:
        verdict, shown = scoring.decide(graded, ctx)
    session = sessions[graded.index(shown)]
    expected = loaded.case.expected
    target = loaded.case.target or ""
    result = CaseResult(
        name=loaded.case.name, title=loaded.case.title, target=loaded.case.target, verdict=verdict,
        deterministic_checks={c.name: "PASS" if c.passed else "FAIL" for c in shown.checks if c.scored},
        judge_verdict=shown.judge, agent_output_snippet=snippet(session.output),
        error=None if verdict == "PASS" else shown.error, file=loaded.file, line=loaded.line,
        replayed=replayed, fingerprint=fp.digest, session_id=session.session_id,
        usage=session.usage.model_dump() if session.usage else None,
        cost_usd=_cost(sessions), run_cost_usd=0.0 if replayed else _cost(sessions),
        replay_miss=shown.miss.kind if shown.miss else None,
        miss=miss_record(shown.miss) if shown.miss else None,
        check_details={c.name: c.detail for c in shown.checks if c.scored and not c.passed and c.detail}
        or None,
        confinement=session.confinement,
        turns=len(session.turns) or None, stopped=session.stopped,
    )
    if loaded.case.judge is not None and shown.judge is not None and shown.judge.result in ("PASS", "FAIL"):
        result.judged = JudgedHashes(output=digest(evidence(loaded.case.input.prompt, session)),
                                     criteria=digest(loaded.case.judge.criteria.strip()))
    if expected.skill_triggered is not None and target.startswith("skill:"):
        result.trigger_expected = expected.skill_triggered
        result.skill_triggered = skill_triggered(session.tool_calls, target.removeprefix("skill:"))
    if routed is not None:
        _add_route(result, loaded, routed, session)
    if scoring.by_score:
        scores = [g.score or 0.0 for g in graded]
        result.score, result.pass_rate = plugin_eval.case_score(scores)
        result.run_scores = scores
        result.graders = outcomes(shown)
    if len(graded) > 1:
        result.attempts = [
            Attempt(verdict=g.verdict, error=g.error, duration_seconds=round(x.duration_seconds, 3),
                    skills_fired=skills_fired(x.tool_calls) if routed is not None else None,
                    score=g.score,
                    graders=outcomes(g) if scoring.by_score else None, checks=verdicts(g))
            for g, x in zip(graded, sessions, strict=True)
        ]
        result.flaky = len({g.verdict for g in graded}) > 1
    return result, session


def verdicts(graded: Graded) -> dict[str, CheckResult]:
    """An attempt's counted checks by name, and `judge` when the judge gave a verdict."""
    found: dict[str, CheckResult] = {c.name: "PASS" if c.passed else "FAIL"
                                     for c in graded.checks if c.scored}
    if graded.judge is not None and graded.judge.result in ("PASS", "FAIL"):
        found["judge"] = "PASS" if graded.judge.result == "PASS" else "FAIL"
    return found


def outcomes(graded: Graded) -> list[GraderOutcome]:
    """An attempt's graders as the report keeps them (a case graded by score)."""
    return [GraderOutcome(name=c.name, type=c.type, weight=c.weight, passed=c.passed, scored=c.scored,
                          with_only=c.with_only, explanation=c.detail,
                          votes=list(c.votes) if c.votes is not None else None) for c in graded.checks]


def _by_score(graded: list[Graded], threshold: float) -> tuple[Verdict, Graded]:
    """A `claude plugin eval` case: PASS when the mean of its runs' scores reaches the threshold
    (ERROR when every run errored); the run shown is the lowest-scoring one."""
    scores = [g.score or 0.0 for g in graded]
    shown = graded[scores.index(min(scores))]
    if plugin_eval.case_score(scores)[0] >= threshold:
        return "PASS", shown
    if all(g.verdict == "ERROR" for g in graded):
        return "ERROR", shown
    return "FAIL", shown


def _by_vally(graded: list[Graded]) -> tuple[Verdict, Graded]:
    """A Vally stimulus with no threshold: PASS when every run passed (each run's verdict is
    binary then); the run shown is the lowest-scoring one."""
    scores = [g.score or 0.0 for g in graded]
    shown = graded[scores.index(min(scores))]
    if all(g.verdict == "PASS" for g in graded):
        return "PASS", shown
    if all(g.verdict == "ERROR" for g in graded):
        return "ERROR", shown
    return "FAIL", shown


def _by_attempts(graded: list[Graded], min_pass: int) -> tuple[Verdict, Graded]:
    """PASS when at least `min_pass` attempts passed; ERROR when every attempt errored."""
    passes = sum(g.verdict == "PASS" for g in graded)
    first_bad = next((g for g in graded if g.verdict != "PASS"), graded[-1])
    if passes >= min_pass:
        return "PASS", next(g for g in graded if g.verdict == "PASS")
    if all(g.verdict == "ERROR" for g in graded):
        return "ERROR", first_bad
    return "FAIL", first_bad


@dataclass(frozen=True)
class Routed:
    """A trigger case's runs decided: which skill its prompt went to."""

    verdict: Verdict
    shown: int
    """The attempt shown: the first that agrees with the decision."""
    expected: str
    """The skill the prompt belongs to, or `none`."""
    routed_to: str
    """The skill that fired in at least the threshold share of the runs, or `none`."""
    fire_rate: float | None
    """Share of the runs that did not error in which the target fired; None when all errored."""


def route(loaded: LoadedCase, sessions: list[Session], graded: list[Graded], threshold: float) -> Routed:
    """Which skill the prompt fired over its runs. An errored run is left out, never counted as
    "did not fire"; when every run errored the case is ERROR."""
    case = loaded.case
    target = (case.target or "").removeprefix("skill:")
    should_fire = trigger_expectation(case.expected)
    expected = target if should_fire else (case.expected.expected_skill or NO_SKILL)
    runs = [i for i, g in enumerate(graded) if g.verdict != "ERROR" and not sessions[i].timed_out]
    if not runs:
        return Routed("ERROR", 0, expected, NO_SKILL, None)
    fired = [skills_fired(sessions[i].tool_calls) for i in runs]
    rate = sum(target in f for f in fired) / len(runs)
    if rate >= threshold:
        routed_to = target
    else:
        firsts = Counter(f[0] if f else NO_SKILL for f in fired)
        best, count = max(firsts.items(), key=lambda kv: (kv[1], kv[0] == NO_SKILL))
        routed_to = best if count / len(runs) >= threshold else NO_SKILL
    fires = rate >= threshold
    agrees = [i for i, f in zip(runs, fired, strict=True) if (target in f) == fires]
    shown = agrees[0] if agrees else runs[0]
    others_ok = all(c.passed for c in graded[shown].checks if c.name != "skill_triggered")
    verdict: Verdict = "PASS" if fires == should_fire and others_ok else "FAIL"
    return Routed(verdict, shown, expected, routed_to, round(rate, 4))


def _add_route(result: CaseResult, loaded: LoadedCase, routed: Routed, session: Session) -> None:
    case = loaded.case
    result.expected_skill, result.routed_to = routed.expected, routed.routed_to
    result.fire_rate, result.skills_fired = routed.fire_rate, skills_fired(session.tool_calls)
    result.prompt = snippet(case.input.prompt)
    result.canary = "canary" in case.tags or None
    if case.draft is not None:
        result.draft = "reviewed" if case.draft.reviewed else "unreviewed"
    if routed.verdict == "FAIL" and routed.fire_rate is not None:
        target = (case.target or "").removeprefix("skill:")
        result.error = (f"{result.error or 'routed wrong'}; over its runs {target} fired in "
                        f"{routed.fire_rate:.0%}, the prompt went to {routed.routed_to} (it belongs to "
                        f"{routed.expected})")
    elif routed.verdict == "ERROR":
        result.error = "every run errored: nothing was measured (" + (result.error or "no session") + ")"


def miss_record(miss: Miss) -> ReplayMiss:
    """The report's record of a miss."""
    return ReplayMiss(kind=miss.kind, subject=miss.subject, reason=miss.reason,
                      changes=list(miss.changes), rerecord=miss.rerecord)


def _cost(sessions: list[Session]) -> float | None:
    costs = [x.cost_usd for x in sessions if x.cost_usd is not None]
    return round(sum(costs), 6) if costs else None
