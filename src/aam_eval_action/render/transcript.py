"""A session as a person reads it: turn by turn, for the HTML report.

Two sources, the best one that is there:

* the session's **model traffic** (cassettes that carry it): each answer of the model is a
  turn with its text and tool calls, each call's result is found in a later request by its
  id, and each sub-agent's conversation is nested under the turn of its parent that started
  it;
* otherwise the **session** alone (a `live` run without cassettes, older cassettes): its tool
  calls in order, one step each, then the final answer. Turn boundaries are not recorded
  there, and the page says so.

A **conversation** (a case of several user turns, `Session.turns`) is shown as a chat: each
user message, then the model turns of the agent's work on it, then its answer. Which model
turns belong to which message is found, the first way that holds together:

* by the **requests**: each CLI resumes the session, so a request's history holds every user
  message sent so far; a request belongs to the last message its history holds;
* by the **tool calls**: each turn's count of calls (`ConversationTurn.calls`), each turn ending
  with the first model turn without a call once its calls are made;
* else not at all: the messages and answers, then every model turn, and the page says so.

Everything here is data for the page (plain dicts and lists of JSON values); all of it is
untrusted text that the page shows as text. Long strings are cut so one case cannot blow up
the file.
"""

from __future__ import annotations

import json
import re
from typing import Any

from aam_eval_action.engines.gemini_cli import SUB_AGENT_DONE
from aam_eval_action.replay.traffic import Conversation, ModelTraffic, SseEvent, full_requests
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
    """One attempt: its numbers, files and turns (from its traffic when there is any); for a
    conversation, its user turns too, each with the model turns that answered it."""
    turns, how = _from_session(session), "steps"
    slices = _step_slices(session) if session.turns else None
    split = "steps" if slices is not None else None
    if traffic is not None:
        found, requests = _main_turns(traffic, resumed=bool(session.turns))
        if found:
            turns, how = found, "turns"
            slices, split = _split(session, traffic.provider, found, requests)
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
        "conversation": _conversation(session, slices), "split": split, "stopped": session.stopped,
    }


def clip(text: str | None) -> str:
    return cap(text, TEXT_CAP) if text else ""


# --- from the session alone ------------------------------------------------------------------


def _from_session(session: Session) -> list[Turn]:
    """One step per tool call, in order, then the final answer (a conversation: each user
    turn's calls, then its answer)."""
    steps = [_call(c.name, c.input, c.result, c.is_error) for c in session.tool_calls]
    if _step_slices(session) is None:
        turns: list[Turn] = [{"n": 0, "text": [], "calls": [step]} for step in steps]
        if session.output:
            turns.append({"n": 0, "text": [clip(session.output)], "calls": []})
    else:
        turns, at = [], 0
        for user_turn in session.turns:
            turns += [{"n": 0, "text": [], "calls": [step]} for step in steps[at:at + user_turn.calls]]
            at += user_turn.calls
            if user_turn.output:
                turns.append({"n": 0, "text": [clip(user_turn.output)], "calls": []})
    for n, turn in enumerate(turns, 1):
        turn["n"] = n
    return turns


def _step_slices(session: Session) -> list[tuple[int, int]] | None:
    """Each user turn's steps in `_from_session` (when its counts of calls add up)."""
    if not session.turns or sum(t.calls for t in session.turns) != len(session.tool_calls):
        return None
    slices, at = [], 0
    for user_turn in session.turns:
        count = user_turn.calls + (1 if user_turn.output else 0)
        slices.append((at, count))
        at += count
    return slices


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
    return _main_turns(traffic, detail)[0]


def _main_turns(
    traffic: ModelTraffic, detail: bool = False, resumed: bool = False
) -> tuple[list[Turn], list[dict[str, Any]]]:
    """`traffic_turns`, with the full request each of the main turns answered.

    With `resumed` (a conversation, which each CLI resumes once per user turn), a conversation
    that starts again from the main one's first message is the main one going on: a CLI that
    keeps the history differently when it resumes (Gemini CLI) is seen as starting a new one."""
    from aam_eval_action.replay.conversations import threads
    from aam_eval_action.replay.traffic import usage

    fulls = full_requests(traffic)
    conversations, numbers = threads(traffic, fulls)
    named = next((n for n, c in enumerate(conversations) if c.id == "main"), None)
    if resumed:
        agents = [n for e, n in zip(traffic.exchanges, numbers, strict=True) if e.stream == "agent"]
        first = named if named is not None else min(agents, default=None)
        if first is not None:
            numbers = _resumptions(traffic, fulls, conversations, numbers, first)
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
    main = named if named is not None else min(per, default=0)
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
    return per.get(main, []), requests.get(main, [])


def _resumptions(
    traffic: ModelTraffic, fulls: list[dict[str, Any]], conversations: list[Conversation], numbers: list[int],
    main: int,
) -> list[int]:
    """Each exchange's conversation, a root one that opens with the main one's first user
    message counted as the main one."""
    first = next((f for f, n in zip(fulls, numbers, strict=True) if n == main), None)
    opening = _first_user(traffic.provider, first) if first is not None else None
    if opening is None:
        return numbers
    same = {n for n, c in enumerate(conversations) if n != main and c.parent is None and c.stream == "agent"
            and any(m == n and _first_user(traffic.provider, f) == opening
                    for f, m in zip(fulls, numbers, strict=True))}
    return [main if n in same else n for n in numbers]


def _first_user(provider: str, request: dict[str, Any]) -> Any:
    """The first user message of a request's history, as it was sent."""
    return next((item for item in _history(provider, request) if _is_user(item)), None)


def _is_user(item: Any) -> bool:
    """A user message of a history (not a tool's result, which some APIs send as one)."""
    return isinstance(item, dict) and item.get("role") == "user" and item.get("type") in (None, "message")


def _history(provider: str, request: dict[str, Any]) -> list[Any]:
    key = {"openai-responses": "input", "gemini-generate-content": "contents"}.get(provider, "messages")
    found = request.get(key)
    return found if isinstance(found, list) else []


# --- a conversation's user turns ----------------------------------------------------------------


Slices = list[tuple[int, int]]
"""Each user turn's model turns: (index of its first, how many)."""


def _conversation(session: Session, slices: Slices | None) -> list[Json]:
    """Each user turn: the message, who wrote it, the answer, and its model turns (`first`,
    `count` into the session's turns; None when they could not be told apart)."""
    out = []
    for k, user_turn in enumerate(session.turns):
        first, count = slices[k] if slices is not None else (None, None)
        out.append({"user": clip(user_turn.user), "by": user_turn.by, "output": clip(user_turn.output),
                    "is_error": user_turn.is_error, "duration_seconds": user_turn.duration_seconds,
                    "calls": user_turn.calls, "first": first, "count": count})
    return out


def _split(
    session: Session, provider: str, turns: list[Turn], requests: list[dict[str, Any]]
) -> tuple[Slices | None, str | None]:
    """The model turns of each user turn, and how they were found (see the module's doc)."""
    if not session.turns:
        return None, None
    owners = _by_requests(session, provider, requests)
    if owners is not None:
        return _slices(owners, len(session.turns)), "messages"
    owners = _by_calls(session, turns)
    if owners is not None:
        return _slices(owners, len(session.turns)), "calls"
    return None, None


def _slices(owners: list[int], count: int) -> Slices:
    return [(owners.index(k) if k in owners else len(owners), owners.count(k)) for k in range(count)]


def _by_requests(session: Session, provider: str, requests: list[dict[str, Any]]) -> list[int] | None:
    """Each model turn's user turn: the last user message its request's history holds."""
    messages = [_plain(t.user) for t in session.turns]
    owners = []
    for request in requests:
        seen = 0
        for text in _user_texts(provider, request):
            if seen < len(messages) and _says(text, messages[seen]):
                seen += 1
        owners.append(seen - 1)
    return owners if _holds(session, owners) else None


def _by_calls(session: Session, turns: list[Turn]) -> list[int] | None:
    """Each model turn's user turn, from each user turn's count of tool calls: a user turn ends
    with the first model turn without a call once its calls are made."""
    owners, k, made = [], 0, 0
    for turn in turns:
        if k >= len(session.turns):
            return None
        owners.append(k)
        made += len(turn["calls"])
        if not turn["calls"] and made >= session.turns[k].calls:
            if made > session.turns[k].calls:
                return None
            k, made = k + 1, 0
    if made or sum(t.calls for t in session.turns[k:]):
        return None
    return owners if _holds(session, owners) else None


def _holds(session: Session, owners: list[int]) -> bool:
    """In order, and every user turn the agent answered has a model turn."""
    if any(k < 0 for k in owners) or owners != sorted(owners):
        return False
    answered = [k for k, t in enumerate(session.turns) if not t.is_error and (t.calls or t.output.strip())]
    return all(k in owners for k in answered)


def _plain(text: str) -> str:
    return " ".join(REMINDER.sub(" ", text).split())


def _says(text: str, message: str) -> bool:
    """A user text of a request is the message: it, or it after a CLI's own tagged lines
    (`<current_datetime>…</current_datetime>`), or it before a note the CLI adds."""
    if not message:
        return False
    return text == message or text.endswith((" " + message, ">" + message)) or text.startswith(message + " ")


def _user_texts(provider: str, request: dict[str, Any]) -> list[str]:
    """What the user side of a request's history says, text by text (not tool results)."""
    found: list[str] = []
    for item in _history(provider, request):
        if not _is_user(item):
            continue
        content = item.get("parts") if provider == "gemini-generate-content" else item.get("content")
        if isinstance(content, str):
            found.append(content)
            continue
        for part in content if isinstance(content, list) else []:
            if isinstance(part, dict) and isinstance(part.get("text"), str) and part.get("type") in (
                None, "text", "input_text"
            ) and not part.get("thought"):
                found.append(part["text"])
    return [plain for plain in map(_plain, found) if plain]


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
