"""A session as a person reads it: turn by turn, for the HTML report.

Two sources, the best one that is there:

* the session's **model traffic** (cassettes that carry it): each answer of the model is a
  turn with its text and tool calls, each call's result is found in a later request by its
  id, and each sub-agent's conversation is nested under the turn of its parent that started
  it;
* otherwise the **session** alone (a `live` run without cassettes, older cassettes): its tool
  calls in order, one step each, then the final answer. Turn boundaries are not recorded
  there, and the page says so.

Everything here is data for the page (plain dicts and lists of JSON values); all of it is
untrusted text that the page shows as text. Long strings are cut so one case cannot blow up
the file.
"""

from __future__ import annotations

import json
import re
from typing import Any

from aam_eval_action.engines.gemini_cli import SUB_AGENT_DONE
from aam_eval_action.replay.traffic import ModelTraffic, SseEvent, full_requests
from aam_eval_action.session import Session, cap

TEXT_CAP = 16 * 1024
"""Longest string the page carries for one text, tool input or result."""
HOOK_SHAPES = re.compile(
    r"^\w+:\S* hook error|^Denied by \w+ hook: |Tool execution blocked: |Command blocked by \w+ hook: "
)
"""How each engine's hook block reads in a tool result (Claude Code, Copilot, Gemini CLI, Codex)."""
REMINDER = re.compile(r"\s*<system-reminder>.*?</system-reminder>\s*", re.S)
"""Blocks a CLI appends to what the model sees; not the tool's own output."""

RESULT_ITEMS = ("function_call_output", "custom_tool_call_output")
"""OpenAI Responses input items that carry a tool's result."""

Turn = dict[str, Any]
Json = dict[str, Any]


def session_view(session: Session, traffic: ModelTraffic | None) -> Json:
    """One attempt: its numbers, files and turns (from its traffic when there is any)."""
    turns, how = _from_session(session), "steps"
    if traffic is not None:
        found = traffic_turns(traffic)
        if found:
            turns, how = found, "turns"
    _mark_hooks(turns, session)
    return {
        "engine": session.engine, "model": session.model, "runtime_version": session.runtime_version,
        "session_id": session.session_id, "output": clip(session.output), "stderr": clip(session.stderr),
        "exit_code": session.exit_code, "is_error": session.is_error, "timed_out": session.timed_out,
        "error": session.error, "hook_blocked": session.hook_blocked,
        "hook_evidence": [clip(e) for e in session.hook_evidence],
        "unmatched_hooks": _unmatched_hooks(turns, session),
        "files": [f.model_dump(mode="json", exclude_none=True) for f in session.files],
        "usage": session.usage.model_dump() if session.usage else None,
        "cost_usd": session.cost_usd, "num_turns": session.num_turns,
        "duration_seconds": session.duration_seconds, "how": how, "turns": turns,
    }


def clip(text: str | None) -> str:
    return cap(text, TEXT_CAP) if text else ""


# --- from the session alone ------------------------------------------------------------------


def _from_session(session: Session) -> list[Turn]:
    """One step per tool call, in order, then the final answer."""
    turns: list[Turn] = [
        {"n": i + 1, "text": [], "calls": [_call(c.name, c.input, c.result, c.is_error)]}
        for i, c in enumerate(session.tool_calls)
    ]
    if session.output:
        turns.append({"n": len(turns) + 1, "text": [clip(session.output)], "calls": []})
    return turns


def _call(name: str, given: Any, result: str | None, is_error: bool) -> Json:
    return {"name": name, "input": _show_input(given), "result": clip(result) if result is not None else None,
            "is_error": is_error, "hook": False}


def _show_input(value: Any) -> str:
    if isinstance(value, str):
        return clip(value)
    return clip(json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True))


# --- from the model traffic ------------------------------------------------------------------


def traffic_turns(traffic: ModelTraffic, detail: bool = False) -> list[Turn]:
    """The main conversation's turns, each sub-agent nested under the turn that started it.

    With `detail` (for exports), each call keeps its `id` and each turn its token `usage`."""
    from aam_eval_action.replay.conversations import threads
    from aam_eval_action.replay.traffic import usage

    fulls = full_requests(traffic)
    conversations, numbers = threads(traffic, fulls)
    per: dict[int, list[Turn]] = {}
    requests: dict[int, list[dict[str, Any]]] = {}
    for exchange, full, number in zip(traffic.exchanges, fulls, numbers, strict=True):
        if exchange.stream != "agent":
            continue
        turns = per.setdefault(number, [])
        turns.append(_answer(traffic.provider, exchange.response.events, exchange.response.body,
                             len(turns) + 1, exchange.live))
        if detail:
            turns[-1]["usage"] = usage([exchange])
        requests.setdefault(number, []).append(full)
    for number, turns in per.items():
        _attach_results(traffic.provider, turns, requests[number], keep_ids=detail)
    main = next((n for n, c in enumerate(conversations) if c.id == "main"), min(per, default=0))
    for number, conversation in enumerate(conversations):
        if number == main or number not in per:
            continue
        parent = next((n for n, c in enumerate(conversations) if c.id == conversation.parent), main)
        host = per.get(parent) or per.get(main) or []
        at = (conversation.turn or len(host)) - 1
        nested = {"id": conversation.id, "agent": conversation.agent, "description": conversation.description,
                  "turns": per[number]}
        if host:
            host[max(0, min(at, len(host) - 1))].setdefault("sub", []).append(nested)
    return per.get(main, [])


def _answer(provider: str, events: list[SseEvent] | None, body: Any, n: int, live: bool) -> Turn:
    """One model answer as text blocks and tool calls (ids kept to find their results)."""
    datas = [e.data for e in events] if events is not None else [body]
    if provider == "openai-responses":
        parts = _responses_items(datas)
    elif provider == "gemini-generate-content":
        parts = _gemini_parts(datas)
    else:
        parts = _anthropic_blocks(datas)
    turn: Turn = {"n": n, "text": [], "calls": []}
    if live:
        turn["live"] = True
    for kind, value in parts:
        if kind == "text" and value["text"].strip():
            turn["text"].append(clip(value["text"]))
        elif kind == "thinking" and value["text"].strip():
            turn.setdefault("thinking", []).append(clip(value["text"]))
        elif kind == "call":
            call = _call(value["name"], value["input"], None, False)
            call["id"] = value.get("id")
            turn["calls"].append(call)
    return turn


Part = tuple[str, dict[str, Any]]


def _anthropic_blocks(datas: list[Any]) -> list[Part]:
    blocks: dict[int, dict[str, Any]] = {}
    for data in datas:
        if not isinstance(data, dict):
            continue
        if isinstance(data.get("content"), list):  # a whole (non-streamed) message
            for i, block in enumerate(data["content"]):
                if isinstance(block, dict):
                    blocks[i] = dict(block)
        kind = data.get("type")
        index = data.get("index")
        started = data.get("content_block")
        if kind == "content_block_start" and isinstance(index, int) and isinstance(started, dict):
            blocks[index] = dict(started)
        elif kind == "content_block_delta" and isinstance(index, int) and index in blocks:
            delta = data.get("delta") or {}
            for field in ("text", "thinking", "partial_json"):
                if isinstance(delta, dict) and isinstance(delta.get(field), str):
                    blocks[index][field] = str(blocks[index].get(field, "")) + delta[field]
    parts: list[Part] = []
    for _, block in sorted(blocks.items()):
        kind = block.get("type")
        if kind == "text":
            parts.append(("text", {"text": str(block.get("text", ""))}))
        elif kind == "thinking":
            parts.append(("thinking", {"text": str(block.get("thinking", ""))}))
        elif kind in ("tool_use", "server_tool_use"):
            given = _json_or_text(block["partial_json"]) if "partial_json" in block else block.get("input")
            parts.append(("call", {"name": str(block.get("name", "?")), "input": given,
                                   "id": block.get("id")}))
    return parts


def _responses_items(datas: list[Any]) -> list[Part]:
    items: list[Any] = []
    for data in datas:
        if not isinstance(data, dict):
            continue
        if data.get("type") == "response.output_item.done":
            items.append(data.get("item"))
        elif not items and data.get("type") == "response.completed":
            items.extend((data.get("response") or {}).get("output") or [])
        elif isinstance(data.get("output"), list) and not items:  # a non-streamed answer
            items.extend(data["output"])
    parts: list[Part] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "message":
            text = "".join(str(c.get("text", "")) for c in item.get("content") or [] if isinstance(c, dict))
            parts.append(("text", {"text": text}))
        elif kind == "reasoning":
            text = "\n".join(str(s.get("text", "")) for s in item.get("summary") or [] if isinstance(s, dict))
            parts.append(("thinking", {"text": text}))
        elif kind in ("function_call", "custom_tool_call"):
            given = _json_or_text(item["arguments"]) if "arguments" in item else item.get("input")
            parts.append(("call", {"name": str(item.get("name", "?")), "input": given,
                                   "id": item.get("call_id")}))
        elif kind in ("local_shell_call", "web_search_call"):
            parts.append(("call", {"name": kind, "input": item.get("action"), "id": item.get("call_id")}))
    return parts


def _gemini_parts(datas: list[Any]) -> list[Part]:
    parts: list[Part] = []
    for data in datas:
        candidates = data.get("candidates") if isinstance(data, dict) else None
        first = candidates[0] if isinstance(candidates, list) and candidates else None
        content = first.get("content") if isinstance(first, dict) else None
        for part in (content or {}).get("parts") or [] if isinstance(content, dict) else []:
            if not isinstance(part, dict):
                continue
            if isinstance(part.get("text"), str):
                kind = "thinking" if part.get("thought") else "text"
                if parts and parts[-1][0] == kind:  # a streamed text arrives in pieces
                    parts[-1][1]["text"] += part["text"]
                else:
                    parts.append((kind, {"text": part["text"]}))
            elif isinstance(part.get("functionCall"), dict):
                call = part["functionCall"]
                args = call.get("args") if isinstance(call.get("args"), dict) else {}
                if call.get("name") == SUB_AGENT_DONE and isinstance(args.get("result"), str):
                    parts.append(("text", {"text": args["result"]}))  # a sub-agent's answer, handed back
                    continue
                parts.append(("call", {"name": str(call.get("name", "?")), "input": call.get("args"),
                                       "id": call.get("id")}))
    return parts


def _json_or_text(raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def _attach_results(
    provider: str, turns: list[Turn], requests: list[dict[str, Any]], keep_ids: bool = False
) -> None:
    """Each call's result, found in the conversation's later requests by the call's id."""
    results: dict[str, tuple[str, bool]] = {}
    by_name: dict[str, list[tuple[str, bool]]] = {}
    for request in requests:
        for call_id, name, text, is_error in _results_in(provider, request):
            if call_id:
                results[call_id] = (text, is_error)
            elif name:
                by_name.setdefault(name, []).append((text, is_error))
    for turn in turns:
        for call in turn["calls"]:
            found = results.get(str(call.get("id"))) if call.get("id") else None
            if found is None and by_name.get(call["name"]):
                found = by_name[call["name"]].pop(0)
            if found is not None:
                call["result"], call["is_error"] = clip(REMINDER.sub("\n", found[0]).strip()), found[1]
            if not keep_ids:
                call.pop("id", None)


def _results_in(provider: str, request: dict[str, Any]) -> list[tuple[str | None, str | None, str, bool]]:
    """(call id, tool name, result text, is_error) of every tool result a request carries."""
    found: list[tuple[str | None, str | None, str, bool]] = []
    if provider == "openai-responses":
        for item in request.get("input") or []:
            if isinstance(item, dict) and item.get("type") in RESULT_ITEMS:
                found.append((item.get("call_id"), None, _as_text(item.get("output")), False))
        return found
    if provider == "gemini-generate-content":
        for content in request.get("contents") or []:
            for part in (content or {}).get("parts") or [] if isinstance(content, dict) else []:
                response = part.get("functionResponse") if isinstance(part, dict) else None
                if isinstance(response, dict):
                    body = response.get("response")
                    error = isinstance(body, dict) and "error" in body
                    found.append((response.get("id"), response.get("name"), _as_text(body), error))
        return found
    for message in request.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                found.append((block.get("tool_use_id"), None, _as_text(block.get("content")),
                               bool(block.get("is_error"))))
    return found


def _as_text(value: Any) -> str:
    """A result's text: a string, text blocks joined, or the JSON of anything else."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, dict) for v in value):
        texts = [str(v.get("text", "")) for v in value if "text" in v]
        if texts:
            return "\n".join(texts)
    if isinstance(value, dict) and set(value) <= {"output", "error"}:
        return "\n".join(_as_text(v) for v in value.values())
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


# --- hook blocks -------------------------------------------------------------------------------


def _mark_hooks(turns: list[Turn], session: Session) -> None:
    """A tool result that is a hook's refusal is shown as a block with its reason."""
    evidence = [e.strip() for e in session.hook_evidence if e.strip()]
    for turn in turns:
        for call in turn["calls"]:
            result = (call.get("result") or "").strip()
            if result and (HOOK_SHAPES.search(result) or any(e in result or result in e for e in evidence)):
                call["hook"] = True
        for sub in turn.get("sub", []):
            _mark_hooks(sub["turns"], session)


def _unmatched_hooks(turns: list[Turn], session: Session) -> list[str]:
    """The hook evidence, when no tool result shows the block (Codex reports it on stderr only)."""
    if not session.hook_blocked or any(c.get("hook") for c in _all_calls(turns)):
        return []
    return [clip(e) for e in session.hook_evidence]


def _all_calls(turns: list[Turn]) -> list[Json]:
    out: list[Json] = []
    for turn in turns:
        out += turn["calls"]
        for sub in turn.get("sub", []):
            out += _all_calls(sub["turns"])
    return out


# --- base beside head --------------------------------------------------------------------------


def first_difference(head: list[Turn], base: list[Turn]) -> int | None:
    """The 1-based turn where two transcripts part (None when they are the same)."""
    for i in range(max(len(head), len(base))):
        if i >= len(head) or i >= len(base) or _signature(head[i]) != _signature(base[i]):
            return i + 1
    return None


def _signature(turn: Turn) -> str:
    calls = [(c["name"], c["input"], c.get("result"), c.get("is_error")) for c in turn["calls"]]
    subs = [[_signature(t) for t in s["turns"]] for s in turn.get("sub", [])]
    return json.dumps([turn["text"], calls, subs], sort_keys=True)
