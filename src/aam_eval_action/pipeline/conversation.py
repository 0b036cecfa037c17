"""A conversation case run turn by turn in one agent session.

The first turn is the case's prompt. Each next user message is the next of `input.turns`, or
what the simulated user (`input.user`) says to the agent's last answer; the engine carries
the session on (`AgentRun.resume`: how is each engine's own business), in the same workspace
and HOME, through the same model proxy, so the session's recording holds every turn.

The turns' sessions become one `Session`: every tool call in order, the last answer as its
output, the usage added up, and `turns` saying who said what. A conversation stops when its
scripted turns are all sent, when the simulated user says its goal is reached or that the
agent finished without asking anything (eval-config `user.stop-on`), at `max-turns`, or at
the first turn that failed.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aam_eval_action.errors import AamEvalError
from aam_eval_action.loader import LoadedCase
from aam_eval_action.pipeline.context import CaseContext
from aam_eval_action.pipeline.judge import API_PATHS
from aam_eval_action.pipeline.simulated_user import (
    UserReply,
    ask,
    build_prompt,
    reply_from_body,
    request_params,
)
from aam_eval_action.pipeline.spend_cap import OverBudget, answered_cost
from aam_eval_action.providers import JUDGE_PROVIDERS, PROVIDERS, provider_for_model
from aam_eval_action.replay.outage import ApiDown
from aam_eval_action.session import STDERR_CAP, ConversationTurn, Session, Usage, cap

if TYPE_CHECKING:
    from aam_eval_action.engines.base import AgentRun, Engine
    from aam_eval_action.replay.decision import JudgeReplay


def converse(
    ctx: CaseContext, loaded: LoadedCase, engine: Engine, first: AgentRun,
    clean: Callable[[str], str] = str, after_turn: Callable[[int], None] | None = None,
    recorded: Session | None = None,
) -> Session:
    """Run the case's conversation; `clean` makes an agent's answer portable before the simulated
    user reads it (so its recorded calls match on another machine); `after_turn(k)` is told
    each turn that ended; `recorded`: the session this run re-executes, whose user answers the
    same conversation the same way (a recording's self-check, before its user cassette can play)."""
    case = loaded.case
    scripted = case.input.turns
    user = UserCalls(ctx, loaded, recorded) if case.input.user is not None else None
    limit = user.max_turns if user else len(scripted) + 1
    sessions: list[Session] = []
    turns: list[ConversationTurn] = []
    message, by, run = first.prompt, "case", first
    stopped = None
    try:
        while True:
            session = engine.run(run)
            sessions.append(session)
            turns.append(ConversationTurn(user=message, by=by, output=session.output,
                                          calls=len(session.tool_calls), is_error=session.is_error,
                                          duration_seconds=round(session.duration_seconds, 3)))
            if after_turn is not None:
                after_turn(len(turns))
            if session.is_error or session.timed_out or not session.session_id:
                stopped = "error"
                if not session.session_id and not session.is_error:
                    session.is_error = True
                    session.error = f"turn {len(turns)}: the CLI reported no session id to continue"
                break
            if user is None:
                if len(turns) > len(scripted):
                    stopped = "turns-done"
                    break
                message, by = scripted[len(turns) - 1].message, "case"
            else:
                seen = [t.model_copy(update={"output": clean(t.output), "user": clean(t.user)})
                        for t in turns]
                reply = user.reply(seen)
                if reply.stop != "continue" and reply.stop in user.stop_on:
                    stopped = reply.stop
                    break
                if len(turns) >= limit:
                    stopped = "max-turns"
                    break
                message, by = reply.message or "Go on.", "simulated-user"
            run = dataclasses.replace(run, prompt=message, resume=session.session_id)
    finally:
        if user is not None:
            user.close()
    return merged(sessions, turns, stopped)


def merged(sessions: list[Session], turns: list[ConversationTurn], stopped: str | None) -> Session:
    """The turns' sessions as one: every call in order, the last answer, the counts added up."""
    last = sessions[-1]
    usage = None
    if any(s.usage for s in sessions):
        usage = Usage(**{k: sum(getattr(s.usage, k) for s in sessions if s.usage)
                         for k in Usage.model_fields})
    costs = [s.cost_usd for s in sessions if s.cost_usd is not None]
    counted = [s.num_turns for s in sessions if s.num_turns is not None]
    stderr = "".join(f"[turn {i}]\n{s.stderr}" for i, s in enumerate(sessions, 1) if s.stderr)
    return last.model_copy(update={
        "tool_calls": [c for s in sessions for c in s.tool_calls],
        "usage": usage,
        "cost_usd": round(sum(costs), 6) if costs else None,
        "num_turns": sum(counted) if counted else None,
        "duration_seconds": round(sum(s.duration_seconds for s in sessions), 3),
        "stderr": cap(stderr, STDERR_CAP),
        "timed_out": any(s.timed_out for s in sessions),
        "hook_blocked": any(s.hook_blocked for s in sessions),
        "hook_evidence": [e for s in sessions for e in s.hook_evidence],
        "turns": turns,
        "stopped": stopped,
    })


def said_before(recorded: Session, turns: list[ConversationTurn], model: str) -> UserReply | None:
    """What the recorded session's user said after these turns, when the conversation so far is
    the recorded one (the same messages, the same answers); None when it is not."""
    k = len(turns)
    if k > len(recorded.turns) or any(
        (a.user, a.output) != (b.user, b.output) for a, b in zip(turns, recorded.turns, strict=False)
    ):
        return None
    if k < len(recorded.turns):
        return UserReply("continue", recorded.turns[k].user, model)
    if recorded.stopped in ("goal-reached", "agent-finished"):
        return UserReply(recorded.stopped, "", model)
    if recorded.stopped == "max-turns":
        return UserReply("continue", "", model)
    return None


class UserCalls:
    """The simulated user of one conversation: its model, its cassette, its budget."""

    def __init__(self, ctx: CaseContext, loaded: LoadedCase, recorded: Session | None = None) -> None:
        s = ctx.settings
        self.ctx, self.loaded, self.recorded = ctx, loaded, recorded
        case_user = loaded.case.input.user
        assert case_user is not None
        self.user = case_user
        cfg = s.config.user
        self.model = case_user.model or cfg.model or s.judge_model
        self.provider = provider_for_model(self.model, s.judge_provider)
        if self.provider not in JUDGE_PROVIDERS:
            raise AamEvalError(
                f"{loaded.file}: input.user: the simulated user's model {self.model!r} is not supported: it "
                f"runs on the {' or '.join(JUDGE_PROVIDERS)} SDK; set `user.model` in eval-config (or "
                "`input.user.model`) to a Claude or GPT model")
        self.max_turns = case_user.max_turns or cfg.max_turns
        self.stop_on = set(cfg.stop_on)
        self.replay: JudgeReplay | None = None
        self._opened = False

    def _open(self) -> JudgeReplay | None:
        if not self._opened:
            from aam_eval_action.replay.decision import open_user

            self.replay = open_user(self.ctx.settings, self.loaded.case.name, self.provider,
                                    self.ctx.redactor.text)
            self._opened = True
        return self.replay

    def reply(self, turns: list[ConversationTurn]) -> UserReply:
        """What the user says after these turns: recorded when it was, else asked (and recorded)."""
        from aam_eval_action.replay.decision import Miss, user_miss
        from aam_eval_action.replay.judge_cassette import JudgeReplayMiss

        s = self.ctx.settings
        if s.mode == "record" and self.recorded is not None:
            # Recording: the user cassette is written afresh and plays nothing back, but the
            # session just recorded says what this user said to this very conversation.
            again = said_before(self.recorded, turns, self.model)
            if again is not None:
                return again
        replay = self._open()
        uc = replay.cassette if replay else None
        text = build_prompt(self.user, turns)
        params = request_params(self.provider, self.model, text)
        recorded = uc.play_recorded(self.provider, API_PATHS[self.provider], params) if uc else None
        if recorded is not None:
            return reply_from_body(self.provider, self.model, recorded)
        budget = self.ctx.budget
        paid = s.mode != "replay" and budget.cap is not None
        estimate = self.ctx.estimator.case(self.loaded, 1, with_agent=False) if paid else None
        try:
            with budget.paid(estimate) if estimate else contextlib.nullcontext():
                answer = ask(provider=self.provider, model=self.model, text=text,
                             base_url=s.base_url(self.provider), api_key=s.api_key(self.provider),
                             http_client=uc.http_client() if uc else None)
        except JudgeReplayMiss:
            assert replay is not None
            raise user_miss(s, self.loaded.case.name, replay, len(turns)) from None
        except (Miss, OverBudget):
            raise
        except ApiDown as down:  # not run, and not recorded: neither is the agent's side of it
            raise ApiDown(f"the simulated user, after turn {len(turns)}: {down}") from None
        except Exception as exc:  # any SDK error after its retries: this case errors, the run goes on
            reason = f"the simulated user failed after turn {len(turns)}: {type(exc).__name__}: {exc}"
            if not s.api_key(self.provider):
                reason += f" (no {PROVIDERS[self.provider].key_var} is set: live calls need it)"
            raise AamEvalError(reason) from None
        if budget.cap is not None:
            budget.charge(answered_cost(answer.usage, self.model, self.provider, self.ctx.estimator.prices))
        return answer

    def close(self) -> None:
        if self.replay is not None:
            self.replay.cassette.save(self.metadata())

    def metadata(self) -> dict[str, Any]:
        return {"model": self.model, "persona": self.user.persona, "goal": self.user.goal,
                "facts": list(self.user.facts)}
