"""One case through the pipeline: session (live or replayed) → checks → judge → case result."""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from aam_eval_action import cassette as agent_cassettes
from aam_eval_action import workspace
from aam_eval_action.cassette import AgentCassette, CassetteError, FingerprintRecord
from aam_eval_action.checks import Check, run_checks
from aam_eval_action.errors import AamEvalError
from aam_eval_action.fingerprint import Fingerprint, agent_fingerprint, explain, judge_fingerprint
from aam_eval_action.judge import JudgeError, Verdict, ask, build_prompt
from aam_eval_action.loader import LoadedCase
from aam_eval_action.redact import Redactor
from aam_eval_action.report import Attempt, CaseResult, JudgeVerdict, snippet
from aam_eval_action.session import Session
from aam_eval_action.settings import RunSettings

if TYPE_CHECKING:
    from aam_eval_action.judge_cassette import JudgeCassette

KEY_NAMES = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}


@dataclass(frozen=True)
class Miss(Exception):
    """Replay could not serve a case; `kind` is no-cassette, stale or damaged."""

    kind: str
    message: str


@dataclass(frozen=True)
class Decision:
    """How a case's agent session will be obtained, and why."""

    replay: bool
    reason: str
    recorded: AgentCassette | None = None


@dataclass
class CaseContext:
    settings: RunSettings
    redactor: Redactor
    keep_workspaces: bool = False


def rerecord_command(ctx: CaseContext, name: str) -> str:
    pkg = display_path(ctx.settings.package.layout.root)
    return f"aam-eval run {name} --record --package {pkg}"


def display_path(path: Path) -> str:
    """A path relative to the current directory when it is below it, else absolute."""
    rel = os.path.relpath(path)
    return path.as_posix() if rel.startswith("..") else Path(rel).as_posix()


def decide(ctx: CaseContext, loaded: LoadedCase, fp: Fingerprint) -> Decision:
    """Replay or live for this case under the run's mode (raises Miss in replay mode)."""
    s = ctx.settings
    name = loaded.case.name
    path = agent_cassettes.session_path(s.cassettes, name, s.engine)
    if s.mode in ("record", "live"):
        return Decision(False, f"mode {s.mode}")
    try:
        recorded = agent_cassettes.load(path)
    except CassetteError as exc:
        if s.mode == "replay":
            raise Miss("damaged", f"{exc}; re-record: {rerecord_command(ctx, name)}") from None
        return Decision(False, f"cassette damaged: {exc}")
    if recorded is None:
        why = f"no cassette recorded for engine {s.engine} ({display_path(path)})"
        if s.mode == "replay":
            raise Miss("no-cassette", f"replay miss: {why}; record it: {rerecord_command(ctx, name)}")
        return Decision(False, why)
    changes = explain(recorded.fingerprint.inputs, fp.inputs)
    if changes:
        why = "; ".join(changes) + f" since recording ({recorded.recorded_at})"
        if s.mode == "replay":
            raise Miss("stale", f"replay miss: {why}; re-record: {rerecord_command(ctx, name)}")
        return Decision(False, why)
    if len(recorded.attempts) < s.repeat and s.mode == "auto":
        return Decision(False, f"{len(recorded.attempts)} attempt(s) recorded, {s.repeat} wanted")
    return Decision(True, "cassette matches", recorded)


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
        result = _error(loaded, miss.message, replay_miss=miss.kind)
    except (AamEvalError, CassetteError, JudgeError, OSError) as exc:
        result = _error(loaded, str(exc))
    except Exception as exc:  # a bug must not take the other cases down with it
        traceback.print_exc(file=sys.stderr)
        result = _error(loaded, f"internal error (a bug, please report it): {type(exc).__name__}: {exc}")
    result.duration_seconds = round(time.monotonic() - start, 3)
    return Outcome(_redacted(ctx, result), session)


def _run_case(ctx: CaseContext, loaded: LoadedCase) -> tuple[CaseResult, Session]:
    s = ctx.settings
    case = loaded.case
    fp = agent_fingerprint(s.package.layout, case, s.config, s.engine, s.model)
    decision = decide(ctx, loaded, fp)
    if decision.replay and decision.recorded is not None:
        sessions = [_scrub(ctx, x) for x in decision.recorded.attempts[: s.repeat]]
        if ctx.keep_workspaces:
            _restore_for_debugging(ctx, loaded, sessions[0])
    else:
        sessions = [_live_session(ctx, loaded) for _ in range(s.repeat)]
        if s.mode in ("auto", "record"):
            _save_agent(ctx, case.name, fp, sessions)
    graded = _grade_all(ctx, loaded, fp, sessions)
    return _combine(ctx, loaded, fp, sessions, graded, replayed=decision.replay)


def _live_session(ctx: CaseContext, loaded: LoadedCase) -> Session:
    from aam_eval_action.engines import get_engine
    from aam_eval_action.engines.base import AgentRun

    s = ctx.settings
    engine = get_engine(s.engine)
    missing = engine.available()
    if missing:
        raise AamEvalError(f"{missing}; or run with --replay to use the recorded cassettes")
    key = KEY_NAMES[engine.provider]
    if not s.agent_env.get(key):
        raise AamEvalError(
            f"{key} is not set: a live {s.engine} session needs it (set it in the environment, "
            "or run with --replay to use the recorded cassettes)"
        )
    ws = workspace.create(s.package.layout, loaded.case)
    try:
        engine.install(s.package.layout, ws.root, loaded.case.target)
        before = workspace.snapshot(ws.root)
        run = AgentRun(
            prompt=loaded.case.input.prompt, model=s.model, workspace=ws.root, home=ws.home,
            env=dict(s.agent_env), timeout=s.timeout, sandbox=s.config.sandbox,
        )
        session = engine.run(run)
        session.files = workspace.changes(ws.root, before)
    finally:
        if ctx.keep_workspaces:
            _kept(loaded, ws.root)
        else:
            ws.cleanup()
    return _scrub(ctx, _portable(session, ws))


def _restore_for_debugging(ctx: CaseContext, loaded: LoadedCase, session: Session) -> None:
    """--keep-workspaces on replay: the workspace as the recorded session left it."""
    ws = workspace.create(ctx.settings.package.layout, loaded.case)
    workspace.restore(ws.root, session.files)
    _kept(loaded, ws.root)


def _kept(loaded: LoadedCase, root: Path) -> None:
    print(f"aam-eval: kept workspace of {loaded.case.name}: {root}", file=sys.stderr, flush=True)


def _portable(session: Session, ws: workspace.Workspace) -> Session:
    """Temp paths replaced by placeholders, so recordings are byte-stable and machine-neutral."""
    data = json.dumps(session.model_dump(mode="json"))
    for path, name in ((ws.root, "$WORKSPACE"), (ws.home, "$HOME"), (ws.base, "$TMP")):
        for variant in {str(path), os.path.realpath(path)}:
            data = data.replace(json.dumps(variant)[1:-1], name)
    return Session.model_validate(json.loads(data))


def _scrub(ctx: CaseContext, session: Session) -> Session:
    """The session with every known secret value replaced, before it is graded or written."""
    return Session.model_validate(ctx.redactor.deep(session.model_dump()))


def _save_agent(ctx: CaseContext, name: str, fp: Fingerprint, sessions: list[Session]) -> None:
    s = ctx.settings
    recorded = AgentCassette(
        case=name, engine=s.engine,
        recorded_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        fingerprint=FingerprintRecord(digest=fp.digest, inputs=fp.inputs),
        attempts=sessions,
    )
    agent_cassettes.save(agent_cassettes.session_path(s.cassettes, name, s.engine), recorded)


@dataclass(frozen=True)
class Graded:
    """One attempt's grade."""

    verdict: str
    checks: list[Check]
    judge: JudgeVerdict | None
    error: str | None
    replay_miss: str | None = None


def _grade_all(
    ctx: CaseContext, loaded: LoadedCase, fp: Fingerprint, sessions: list[Session]
) -> list[Graded]:
    s = ctx.settings
    jfp = judge_fingerprint(loaded.case, s.judge_model, fp)
    judge = _JudgeCalls(ctx, loaded, jfp)
    try:
        return [_grade(ctx, loaded, session, judge) for session in sessions]
    finally:
        judge.close()


def _grade(ctx: CaseContext, loaded: LoadedCase, session: Session, judge: _JudgeCalls) -> Graded:
    checks = run_checks(loaded.case.expected, session, ctx.settings.config.sandbox)
    if session.timed_out:
        return Graded("FAIL", checks, None, session.error or "timed out")
    if session.is_error:
        return Graded("ERROR", checks, None, session.error or "the agent session failed")
    failed = [c for c in checks if not c.passed]
    if failed:
        return Graded("FAIL", checks, None, "; ".join(f"{c.name}: {c.detail}" for c in failed))
    try:
        verdict, replayed = judge.ask(session)
    except Miss as miss:
        return Graded("ERROR", checks, None, miss.message, replay_miss=miss.kind)
    except Exception as exc:  # any SDK error after its retries: this case errors, the run goes on
        reason = f"judge failed: {type(exc).__name__}: {exc}"
        key = KEY_NAMES[ctx.settings.judge_provider]
        if not ctx.settings.api_key(ctx.settings.judge_provider):
            reason += f" (no {key} is set: live judge calls need it)"
        return Graded("ERROR", checks, JudgeVerdict(result="ERROR", reason=reason), reason)
    jv = JudgeVerdict(result=verdict.result, reason=verdict.reason, model=verdict.model,
                      replayed=replayed)
    error = None if verdict.result == "PASS" else f"judge: {verdict.reason}"
    return Graded(verdict.result, checks, jv, error)


class _JudgeCalls:
    """The judge for one case: its own cassette and client, so parallel cases never mix calls."""

    def __init__(self, ctx: CaseContext, loaded: LoadedCase, jfp: Fingerprint) -> None:
        self.ctx = ctx
        self.loaded = loaded
        self.jfp = jfp
        self.cassette: JudgeCassette | None = None
        self.miss_kind = "stale"

    def _open(self) -> JudgeCassette | None:
        """This case's judge cassette, opened once; None in live mode (nothing is recorded)."""
        s = self.ctx.settings
        if self.cassette is not None or s.mode == "live":
            return self.cassette
        from aam_eval_action.judge_cassette import JudgeCassette

        path = agent_cassettes.judge_path(s.cassettes, self.loaded.case.name, s.engine)
        try:
            jc = JudgeCassette(path, s.mode, s.judge_provider, self.ctx.redactor.text)
        except Exception as exc:  # vcrpy raises yaml and value errors for a damaged file
            raise Miss("damaged", f"{path}: damaged judge cassette ({exc}); re-record: "
                       f"{rerecord_command(self.ctx, self.loaded.case.name)}") from None
        recorded = jc.metadata.get("inputs")
        changes = explain(recorded, self.jfp.inputs) if isinstance(recorded, dict) else []
        if changes:
            jc.miss_reason = "; ".join(changes)
        elif not path.exists():
            jc.miss_reason, self.miss_kind = "no judge cassette recorded", "no-cassette"
        self.cassette = jc
        return jc

    def ask(self, session: Session) -> tuple[Verdict, bool]:
        """The verdict, and whether it came from the cassette."""
        from aam_eval_action.judge_cassette import JudgeReplayMiss

        s = self.ctx.settings
        jc = self._open()
        played_before = jc.played if jc else 0
        text = build_prompt(self.loaded.case.judge.criteria, self.loaded.case.input.prompt, session)
        try:
            verdict = ask(
                provider=s.judge_provider, model=s.judge_model, text=text,
                base_url=s.base_url(s.judge_provider), api_key=s.api_key(s.judge_provider),
                http_client=jc.http_client() if jc else None,
            )
        except JudgeReplayMiss as exc:
            raise Miss(self.miss_kind, f"judge replay miss: {exc} since recording; re-record: "
                       f"{rerecord_command(self.ctx, self.loaded.case.name)}") from None
        return verdict, bool(jc and jc.played > played_before)

    def close(self) -> None:
        if self.cassette is not None:
            self.cassette.save({"digest": self.jfp.digest, "inputs": self.jfp.inputs})


def _combine(
    ctx: CaseContext, loaded: LoadedCase, fp: Fingerprint, sessions: list[Session],
    graded: list[Graded], *, replayed: bool,
) -> tuple[CaseResult, Session]:
    s = ctx.settings
    passes = sum(g.verdict == "PASS" for g in graded)
    last = graded[-1]
    first_bad = next((g for g in graded if g.verdict != "PASS"), last)
    if passes >= s.min_pass:
        verdict, shown = "PASS", next(g for g in graded if g.verdict == "PASS")
    elif any(g.verdict == "ERROR" for g in graded) and passes == 0 and all(
        g.verdict == "ERROR" for g in graded
    ):
        verdict, shown = "ERROR", first_bad
    else:
        verdict, shown = "FAIL", first_bad
    session = sessions[graded.index(shown)]
    result = CaseResult(
        name=loaded.case.name, target=loaded.case.target, verdict=verdict,
        deterministic_checks={c.name: "PASS" if c.passed else "FAIL" for c in shown.checks},
        judge_verdict=shown.judge, agent_output_snippet=snippet(session.output),
        error=None if verdict == "PASS" else shown.error, file=loaded.file, line=loaded.line,
        replayed=replayed, fingerprint=fp.digest, session_id=session.session_id,
        usage=session.usage.model_dump() if session.usage else None,
        cost_usd=_cost(sessions), replay_miss=shown.replay_miss,
    )
    if len(graded) > 1:
        result.attempts = [
            Attempt(verdict=g.verdict, error=g.error, duration_seconds=round(x.duration_seconds, 3))
            for g, x in zip(graded, sessions, strict=True)
        ]
        result.flaky = len({g.verdict for g in graded}) > 1
    return result, session


def _cost(sessions: list[Session]) -> float | None:
    costs = [x.cost_usd for x in sessions if x.cost_usd is not None]
    return round(sum(costs), 6) if costs else None


def _error(loaded: LoadedCase, message: str, replay_miss: str | None = None) -> CaseResult:
    return CaseResult(
        name=loaded.case.name, target=loaded.case.target, verdict="ERROR", error=message,
        file=loaded.file, line=loaded.line, replay_miss=replay_miss,
    )


def _redacted(ctx: CaseContext, result: CaseResult) -> CaseResult:
    return CaseResult.model_validate(ctx.redactor.deep(result.model_dump(mode="json")))
