"""One case through the pipeline: session (live or replayed) → checks → judge → case result."""

from __future__ import annotations

import sys
import time
import traceback
from dataclasses import dataclass

from aam_eval_action.errors import AamEvalError
from aam_eval_action.loader import LoadedCase
from aam_eval_action.pipeline.context import CaseContext
from aam_eval_action.pipeline.grade import combine, grade_all, miss_record
from aam_eval_action.pipeline.judge import JudgeError
from aam_eval_action.pipeline.live import live_session, restore_for_debugging, save_sessions
from aam_eval_action.replay.agent_cassette import CassetteError
from aam_eval_action.replay.decision import Miss, decide
from aam_eval_action.replay.fingerprint import agent_fingerprint
from aam_eval_action.report import CaseResult, not_asked
from aam_eval_action.session import Session


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
    except (AamEvalError, CassetteError, JudgeError, OSError) as exc:
        result = error_result(loaded, str(exc))
    except Exception as exc:  # a bug must not take the other cases down with it
        # The traceback may quote a secret or cassette text: redacted like everything printed.
        sys.stderr.write(ctx.redactor.text(traceback.format_exc()))
        bug = f"internal error (a bug, please report it): {type(exc).__name__}: {exc}"
        result = error_result(loaded, bug)
    result.duration_seconds = round(time.monotonic() - start, 3)
    _redact_messages(ctx, result)
    return Outcome(result, session)


def _run_case(ctx: CaseContext, loaded: LoadedCase) -> tuple[CaseResult, Session]:
    s = ctx.settings
    case = loaded.case
    fp = agent_fingerprint(s.package.layout, case, s.config, s.engine, s.model)
    decision = decide(s, case.name, fp)
    if decision.replay and decision.recorded is not None:
        # Recorded sessions were redacted when they were recorded.
        sessions = decision.recorded.attempts[: s.repeat]
        if ctx.keep_workspaces:
            restore_for_debugging(ctx, loaded, sessions[0])
    else:
        sessions = [live_session(ctx, loaded) for _ in range(s.repeat)]
        if s.mode in ("auto", "record"):
            save_sessions(ctx, case.name, fp, sessions)
    graded = grade_all(ctx, loaded, fp, sessions)
    return combine(ctx, loaded, fp, sessions, graded, replayed=decision.replay)


def error_result(loaded: LoadedCase, message: str, miss: Miss | None = None) -> CaseResult:
    return CaseResult(
        name=loaded.case.name, target=loaded.case.target, verdict="ERROR", error=message,
        file=loaded.file, line=loaded.line, replay_miss=miss.kind if miss else None,
        miss=miss_record(miss) if miss else None,
        judge_verdict=not_asked("no recorded session" if miss else "the case errored"),
    )


def _redact_messages(ctx: CaseContext, result: CaseResult) -> None:
    """The case line is printed before the report is written: its free text is redacted now."""
    if result.error:
        result.error = ctx.redactor.text(result.error)
    if result.judge_verdict and result.judge_verdict.reason:
        result.judge_verdict.reason = ctx.redactor.text(result.judge_verdict.reason)
