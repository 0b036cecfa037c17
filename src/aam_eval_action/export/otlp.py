"""Recorded sessions as OpenTelemetry traces: OTLP JSON with the GenAI semantic conventions.

One trace per case and pair: an `invoke_agent` span for the session, a `chat` span per model
turn, an `execute_tool` span per tool call (under the turn that made it), and each sub-agent
as an `invoke_agent` span under the turn that started it, with its own turns below. The checks
and the judge's verdict are `gen_ai.evaluation.result` events on the session's span.

A conversation (`Session.turns`) has, under the session's span, an `invoke_agent` span per user
turn: what the user said as `gen_ai.input.messages` and the agent's answer as
`gen_ai.output.messages` (the conventions' message JSON, as a string), the turn's number and
who wrote the message (`aam_eval.user.by`: `case` or `simulated-user`). The turn's `chat`
spans are below it (their tool calls below them); without traffic, its `execute_tool` spans
are. Turns take their recorded share of the session's duration.

The file is an `ExportTraceServiceRequest` in the OTLP/JSON encoding (ids as hex, 64-bit
integers as strings), what a collector's `otlpjsonfile` receiver or `curl` to `/v1/traces`
takes. Ids are derived from the case, pair and position, so exporting the same cassettes twice
gives the same file. Recordings keep when a session was recorded and how long it took, not when
each turn happened: turns are laid out evenly over the session's duration.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any

from aam_eval_action import __version__
from aam_eval_action.export.conversation import by_turn, call_slices
from aam_eval_action.render.transcript import Turn, traffic_turns
from aam_eval_action.replay.traffic import ModelTraffic
from aam_eval_action.session import ConversationTurn, Session

SCOPE = "aam-eval-action"
KIND_INTERNAL, KIND_CLIENT = 1, 3
STATUS_ERROR = 2


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": str(value)}}


def _attrs(values: dict[str, Any]) -> list[dict[str, Any]]:
    return [_attr(k, v) for k, v in values.items() if v is not None]


class _Ids:
    """Trace and span ids derived from a name, so an export is reproducible."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.trace = hashlib.sha256(f"trace:{key}".encode()).hexdigest()[:32]
        self._count = 0

    def span(self) -> str:
        self._count += 1
        return hashlib.sha256(f"span:{self.key}:{self._count}".encode()).hexdigest()[:16]


def case_spans(
    key: str, session: Session, traffic: ModelTraffic | None, *, engine: str, model: str, provider: str,
    recorded_at: str | None, evaluations: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """Every span of one recorded attempt (the session's first)."""
    ids = _Ids(key)
    start = _nanos(recorded_at)
    end = start + int(max(session.duration_seconds, 0.001) * 1e9)
    root_id = ids.span()
    usage = session.usage
    root = {
        "traceId": ids.trace, "spanId": root_id, "name": f"invoke_agent {engine}", "kind": KIND_INTERNAL,
        "startTimeUnixNano": str(start), "endTimeUnixNano": str(end),
        "attributes": _attrs({
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": engine,
            "gen_ai.provider.name": provider, "gen_ai.request.model": model,
            "gen_ai.response.model": session.model, "gen_ai.conversation.id": session.session_id or key,
            "gen_ai.usage.input_tokens": usage.input_tokens if usage else None,
            "gen_ai.usage.output_tokens": usage.output_tokens if usage else None,
            "aam_eval.case": key, "aam_eval.cost_usd": session.cost_usd,
            "aam_eval.conversation.turns": len(session.turns) or None,
            "aam_eval.conversation.stopped": session.stopped,
        }),
        "events": [{"timeUnixNano": str(end), "name": "gen_ai.evaluation.result", "attributes": _attrs(e)}
                   for e in evaluations],
    }
    if session.is_error or session.timed_out:
        root["status"] = {"code": STATUS_ERROR, "message": session.error or "the session failed"}
    spans = [root]
    turns = traffic_turns(traffic, detail=True) if traffic is not None else []
    if session.turns:
        conversation = _Conversation(ids, engine, model, provider, session.session_id or key)
        conversation.spans(spans, root_id, session, turns, start, end)
    else:
        _turn_spans(spans, ids, root_id, turns, start, end, model, provider)
    return spans


class _Conversation:
    """The spans of a conversation's user turns (see the module's docstring)."""

    def __init__(self, ids: _Ids, engine: str, model: str, provider: str, conversation_id: str) -> None:
        self.ids, self.engine, self.model, self.provider = ids, engine, model, provider
        self.conversation_id = conversation_id

    def spans(
        self, spans: list[dict[str, Any]], parent: str, session: Session, answers: list[Turn], start: int,
        end: int,
    ) -> None:
        groups = by_turn(answers, session.turns) if answers else None
        slices = call_slices(session)
        weights = [max(t.duration_seconds, 0.0) for t in session.turns]
        total = sum(weights)
        t0 = start
        for number, turn in enumerate(session.turns, 1):
            share = weights[number - 1] / total if total > 0 else 1 / len(session.turns)
            t1 = end if number == len(session.turns) else min(end, t0 + int((end - start) * share))
            span_id = self.ids.span()
            span = self._turn(span_id, parent, number, turn, t0, t1)
            spans.append(span)
            if groups is not None:
                _turn_spans(spans, self.ids, span_id, groups[number - 1], t0, t1, self.model, self.provider)
            else:
                calls = slices[number - 1]
                width = (t1 - t0) // max(len(calls), 1)
                for j, call in enumerate(calls):
                    spans.append(_tool_span(self.ids, span_id, call.name, None, call.is_error,
                                            t0 + j * width, t0 + (j + 1) * width))
            t0 = t1

    def _turn(self, span_id: str, parent: str, number: int, turn: ConversationTurn, t0: int, t1: int
              ) -> dict[str, Any]:
        said = [{"role": "user", "parts": [{"type": "text", "content": turn.user}]}]
        answered = [{"role": "assistant", "parts": [{"type": "text", "content": turn.output}],
                     "finish_reason": "error" if turn.is_error else "stop"}]
        span: dict[str, Any] = {
            "traceId": self.ids.trace, "spanId": span_id, "parentSpanId": parent,
            "name": f"invoke_agent {self.engine}", "kind": KIND_INTERNAL,
            "startTimeUnixNano": str(t0), "endTimeUnixNano": str(t1),
            "attributes": _attrs({
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": self.engine,
                "gen_ai.provider.name": self.provider, "gen_ai.request.model": self.model,
                "gen_ai.conversation.id": self.conversation_id,
                "gen_ai.input.messages": json.dumps(said, ensure_ascii=False),
                "gen_ai.output.messages": json.dumps(answered, ensure_ascii=False),
                "aam_eval.conversation.turn": number, "aam_eval.user.by": turn.by,
            }),
        }
        if turn.is_error:
            span["status"] = {"code": STATUS_ERROR, "message": f"turn {number} failed"}
        return span


def _tool_span(
    ids: _Ids, parent: str, name: str, call_id: Any, is_error: bool, t0: int, t1: int
) -> dict[str, Any]:
    tool: dict[str, Any] = {
        "traceId": ids.trace, "spanId": ids.span(), "parentSpanId": parent,
        "name": f"execute_tool {name}", "kind": KIND_INTERNAL,
        "startTimeUnixNano": str(t0), "endTimeUnixNano": str(t1),
        "attributes": _attrs({
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": call_id,
        }),
    }
    if is_error:
        tool["status"] = {"code": STATUS_ERROR, "message": "the tool reported an error"}
    return tool


def _turn_spans(
    spans: list[dict[str, Any]], ids: _Ids, parent: str, turns: list[Turn], start: int, end: int,
    model: str, provider: str,
) -> None:
    step = (end - start) // max(len(turns), 1)
    for i, turn in enumerate(turns):
        t0, t1 = start + i * step, start + (i + 1) * step
        span_id = ids.span()
        counts = turn.get("usage") or {}
        spans.append({
            "traceId": ids.trace, "spanId": span_id, "parentSpanId": parent, "name": f"chat {model}",
            "kind": KIND_CLIENT, "startTimeUnixNano": str(t0), "endTimeUnixNano": str(t1),
            "attributes": _attrs({
                "gen_ai.operation.name": "chat", "gen_ai.provider.name": provider,
                "gen_ai.request.model": model,
                "gen_ai.usage.input_tokens": counts.get("input_tokens"),
                "gen_ai.usage.output_tokens": counts.get("output_tokens"),
                "aam_eval.turn": turn["n"], "aam_eval.live": bool(turn.get("live")) or None,
            }),
        })
        calls = turn.get("calls") or []
        width = (t1 - t0) // max(len(calls), 1)
        for j, call in enumerate(calls):
            spans.append(_tool_span(ids, span_id, call["name"], call.get("id"), bool(call.get("is_error")),
                                    t0 + j * width, t0 + (j + 1) * width))
        for sub in turn.get("sub") or []:
            sub_id = ids.span()
            spans.append({
                "traceId": ids.trace, "spanId": sub_id, "parentSpanId": span_id,
                "name": f"invoke_agent {sub.get('agent') or sub['id']}", "kind": KIND_INTERNAL,
                "startTimeUnixNano": str(t0), "endTimeUnixNano": str(t1),
                "attributes": _attrs({"gen_ai.operation.name": "invoke_agent",
                                      "gen_ai.agent.name": sub.get("agent") or sub["id"],
                                      "gen_ai.agent.description": sub.get("description"),
                                      "gen_ai.conversation.id": f"{ids.key}/{sub['id']}"}),
            })
            _turn_spans(spans, ids, sub_id, sub.get("turns") or [], t0, t1, model, provider)


def evaluations(grading: dict[str, Any] | None) -> list[dict[str, Any]]:
    """`gen_ai.evaluation.result` attributes for each check and the judge, from a graded case."""
    if not grading:
        return []
    found = []
    for name, result in (grading.get("checks") or {}).items():
        found.append({"gen_ai.evaluation.name": name, "gen_ai.evaluation.score.label": result.lower(),
                      "gen_ai.evaluation.score.value": 1.0 if result == "PASS" else 0.0,
                      "gen_ai.evaluation.explanation": (grading.get("check_details") or {}).get(name)})
    judge = grading.get("judge")
    if judge and judge.get("result") in ("PASS", "FAIL"):
        found.append({"gen_ai.evaluation.name": "judge",
                      "gen_ai.evaluation.score.label": judge["result"].lower(),
                      "gen_ai.evaluation.score.value": 1.0 if judge["result"] == "PASS" else 0.0,
                      "gen_ai.evaluation.explanation": judge.get("reason"),
                      "gen_ai.request.model": judge.get("model")})
    return found


def document(spans: list[dict[str, Any]]) -> str:
    """The OTLP/JSON `ExportTraceServiceRequest` holding the spans."""
    data = {"resourceSpans": [{
        "resource": {"attributes": _attrs({"service.name": SCOPE, "service.version": __version__})},
        "scopeSpans": [{"scope": {"name": SCOPE, "version": __version__}, "spans": spans}],
    }]}
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def _nanos(stamp: str | None) -> int:
    try:
        moment = datetime.fromisoformat((stamp or "").replace("Z", "+00:00"))
    except ValueError:
        return 0
    return int(moment.timestamp() * 1e9)
