"""A recorded session as an ATIF trajectory (Harbor's Agent Trajectory Interchange Format, v1.7).

The turns come from the session's model traffic, as the HTML report reads it
(`render.transcript.traffic_turns`): the case's prompt is the first step (`user`), then every
model answer is an `agent` step with its text, its reasoning, its tool calls and, as the step's
observation, the results those calls got; its token counts are the step's metrics. Each
sub-agent's conversation is an embedded trajectory (`subagent_trajectories`, its own
`trajectory_id`), referenced from the observation of the step that started it. A cassette
without traffic gives the session's tool calls and final output, one step each.

A conversation (`Session.turns`) has a `user` step for each thing the user said, at its place:
each followed by that turn's agent steps and the agent's answer. Each user step's `extra` says
which turn it opens and who wrote it (`by`: `case`, or `simulated-user` for the simulated
user's messages); the trajectory's `extra.conversation` has the number of turns and why the
conversation stopped.

How the case was graded (verdict, checks, the judge's verdict and reason) goes in `extra`.
"""

from __future__ import annotations

import json
from typing import Any

from aam_eval_action.export.conversation import by_turn, call_slices
from aam_eval_action.render.transcript import Turn, traffic_turns
from aam_eval_action.replay.traffic import ModelTraffic
from aam_eval_action.session import ConversationTurn, Session

SCHEMA_VERSION = "ATIF-v1.7"


def trajectory(
    key: str, prompt: str, session: Session, traffic: ModelTraffic | None, *, engine: str, model: str,
    recorded_at: str | None = None, grading: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The ATIF document of one recorded attempt (`key` names it: `<case>@<engine>@<model>`)."""
    turns = traffic_turns(traffic, detail=True) if traffic is not None else []
    subs: list[dict[str, Any]] = []
    if session.turns:
        steps = _conversation_steps(key, session, turns, subs)
    else:
        steps = _steps(key, prompt, turns, subs) if turns else _session_steps(prompt, session)
    agent = {"name": engine, "version": session.runtime_version or (traffic.cli_version if traffic else None)
             or "unknown", "model_name": session.model or model}
    usage = session.usage
    final: dict[str, Any] = {"total_steps": len(steps)}
    if usage is not None:
        final |= {"total_prompt_tokens": usage.input_tokens + usage.cache_read_input_tokens
                  + usage.cache_creation_input_tokens, "total_completion_tokens": usage.output_tokens,
                  "total_cached_tokens": usage.cache_read_input_tokens}
    if session.cost_usd is not None:
        final["total_cost_usd"] = session.cost_usd
    extra: dict[str, Any] = {"engine": engine, "model": model, "duration_seconds": session.duration_seconds,
                             "exit_code": session.exit_code, "timed_out": session.timed_out,
                             "files": [f.path for f in session.files]}
    if session.turns:
        extra["conversation"] = {"turns": len(session.turns), "stopped": session.stopped}
    if recorded_at:
        extra["recorded_at"] = recorded_at
    if grading:
        extra["grading"] = grading
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION, "session_id": session.session_id or key, "trajectory_id": key,
        "agent": agent, "steps": steps, "final_metrics": final, "extra": extra,
    }
    if subs:
        doc["subagent_trajectories"] = subs
    return doc


def _steps(key: str, prompt: str, turns: list[Turn], subs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = [{"step_id": 1, "source": "user", "message": prompt}]
    _agent_steps(key, turns, subs, steps)
    return steps


def _agent_steps(
    key: str, turns: list[Turn], subs: list[dict[str, Any]], steps: list[dict[str, Any]]
) -> None:
    """An `agent` step for each model answer, appended to `steps`."""
    for turn in turns:
        step: dict[str, Any] = {"step_id": len(steps) + 1, "source": "agent",
                                "message": "\n\n".join(turn.get("text") or []), "llm_call_count": 1}
        if turn.get("thinking"):
            step["reasoning_content"] = "\n\n".join(turn["thinking"])
        calls, results = [], []
        for i, call in enumerate(turn.get("calls") or []):
            call_id = str(call.get("id") or f"{key}/step-{step['step_id']}/call-{i + 1}")
            calls.append({"tool_call_id": call_id, "function_name": call["name"],
                          "arguments": _arguments(call.get("input"))})
            result: dict[str, Any] = {"source_call_id": call_id, "content": call.get("result")}
            if call.get("is_error"):
                result["extra"] = {"is_error": True}
            results.append(result)
        for sub in turn.get("sub") or []:
            sub_id = f"{key}/{sub['id']}"
            subs.append(_sub_trajectory(sub_id, sub))
            results.append({"subagent_trajectory_ref": [{"trajectory_id": sub_id}],
                            "extra": {"agent": sub.get("agent"), "description": sub.get("description")}})
        if calls:
            step["tool_calls"] = calls
        if results:
            step["observation"] = {"results": results}
        metrics = _metrics(turn.get("usage") or {})
        if metrics:
            step["metrics"] = metrics
        if turn.get("live"):
            step["extra"] = {"live": True}
        steps.append(step)


def _conversation_steps(
    key: str, session: Session, answers: list[Turn], subs: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Each user turn, then its agent steps (from the traffic, else its tool calls) and the answer."""
    steps: list[dict[str, Any]] = []
    groups = by_turn(answers, session.turns) if answers else None
    slices = call_slices(session)
    called = 0
    for number, turn in enumerate(session.turns, 1):
        steps.append(_user_step(len(steps) + 1, number, turn))
        opened = len(steps)
        if groups is not None:
            _agent_steps(key, groups[number - 1], subs, steps)
        else:
            for call in slices[number - 1]:
                called += 1
                steps.append(_call_step(len(steps) + 1, f"call-{called}", call.name, call.input, call.result))
        if groups is None or len(steps) == opened:  # the answer, when no model answer carries it
            steps.append({"step_id": len(steps) + 1, "source": "agent", "message": turn.output})
        if turn.is_error:
            steps[-1]["extra"] = {**steps[-1].get("extra", {}), "is_error": True}
    return steps


def _user_step(step_id: int, number: int, turn: ConversationTurn) -> dict[str, Any]:
    """What the user said to open a turn, marked with who wrote it."""
    return {"step_id": step_id, "source": "user", "message": turn.user,
            "extra": {"turn": number, "by": turn.by}}


def _call_step(
    step_id: int, call_id: str, name: str, given: dict[str, Any], result: str | None
) -> dict[str, Any]:
    """One recorded tool call (without traffic) as an agent step with its result."""
    return {"step_id": step_id, "source": "agent", "message": "",
            "tool_calls": [{"tool_call_id": call_id, "function_name": name, "arguments": dict(given)}],
            "observation": {"results": [{"source_call_id": call_id, "content": result}]}}


def _sub_trajectory(sub_id: str, sub: dict[str, Any]) -> dict[str, Any]:
    """A sub-agent's conversation as an embedded trajectory (its own sub-agents nested in it)."""
    nested: list[dict[str, Any]] = []
    task = sub.get("description") or sub.get("agent") or sub["id"]
    steps = _steps(sub_id, str(task), sub.get("turns") or [], nested)
    doc: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "trajectory_id": sub_id,
                           "agent": {"name": str(sub.get("agent") or sub["id"]), "version": "sub-agent"},
                           "steps": steps}
    if nested:
        doc["subagent_trajectories"] = nested
    return doc


def _session_steps(prompt: str, session: Session) -> list[dict[str, Any]]:
    """Without traffic: the session's tool calls one step each, then its final output."""
    steps: list[dict[str, Any]] = [{"step_id": 1, "source": "user", "message": prompt}]
    for i, call in enumerate(session.tool_calls):
        steps.append(_call_step(len(steps) + 1, f"call-{i + 1}", call.name, call.input, call.result))
    steps.append({"step_id": len(steps) + 1, "source": "agent", "message": session.output})
    return steps


def _arguments(shown: Any) -> dict[str, Any]:
    """A call's input as the object ATIF wants (a freeform input is kept under `input`)."""
    if isinstance(shown, str):
        try:
            parsed = json.loads(shown)
        except ValueError:
            return {"input": shown}
        return parsed if isinstance(parsed, dict) else {"input": parsed}
    return shown if isinstance(shown, dict) else {"input": shown}


def _metrics(counts: dict[str, int]) -> dict[str, Any]:
    cached = counts.get("cache_read_input_tokens", 0)
    prompt = counts.get("input_tokens", 0) + cached + counts.get("cache_creation_input_tokens", 0)
    out: dict[str, Any] = {}
    if prompt:
        out["prompt_tokens"] = prompt
    if counts.get("output_tokens"):
        out["completion_tokens"] = counts["output_tokens"]
    if cached:
        out["cached_tokens"] = cached
    return out
