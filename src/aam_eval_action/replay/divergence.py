"""Where a re-executed session's request first differs from the recording: the JSON path, both
values shortened, and, in a tool result, the tool call it answers (`first_difference`)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from aam_eval_action.replay.traffic import (
    CALL_WIDTH,
    PATCH_FILE,
    TOOL_CALL_TYPES,
    TOOL_RESULT_TYPES,
    VALUE_WIDTH,
    Stream,
    _Model,
    comparable,
    history_key,
    tool_results,
    turn_of,
)


class Divergence(_Model):
    """The first live request that differs from the recording."""

    turn: int
    """The 1-based model turn the request asks for."""
    stream: Stream
    """The stream of the request."""
    path: str
    """The first differing JSON path in the normalised request (empty: no recorded request)."""
    recorded: str | None
    """The recorded value there, shortened (None when it was absent)."""
    live: str | None
    """The live value there, shortened (None when it is absent)."""
    tool_name: str | None = None
    """When the difference is in a tool result: the tool whose call it answers."""
    tool_use_id: str | None = None
    """The id of that tool call."""
    tool_input: str | None = None
    """That call's input, shortened (the command of a shell call)."""
    conversation: str | None = None
    """The recorded conversation the request was meant for (`main`, a sub-agent's)."""
    where: str | None = None
    """Where it happened in words: `turn 2 of sub-agent `reviewer`, started at main turn 1`."""
    user_turn: int | None = None
    """In a conversation case: the turn of the conversation (the user's message it answered)."""

    @property
    def message(self) -> str:
        """One line for a report: where, what, and both values."""
        where = self.where or f"turn {self.turn}"
        if self.user_turn is not None:
            where = f"conversation turn {self.user_turn} (model {where})"
        if self.stream != "agent":
            where += f" ({self.stream} request)"
        if not self.path:
            return f"{where}: the CLI sent a request the recording does not have"
        if self.tool_name:
            call = f" ({self.tool_input})" if self.tool_input else ""
            what = f"the {self.tool_name} tool result{call} changed"
        else:
            what = f"the request changed at {self.path}"
        return f"{where}: {what}: recorded `{self.recorded}` → now `{self.live}`"


def missing(turn: int, stream: Stream) -> Divergence:
    """A live request beyond the end of the recorded stream."""
    return Divergence(turn=turn, stream=stream, path="", recorded=None, live=None)


def first_difference(
    recorded: dict[str, Any],
    live: dict[str, Any],
    stream: Stream = "agent",
    ignore: Sequence[re.Pattern[str]] = (),
) -> Divergence | None:
    """The first difference between two normalised requests, or None when they match."""
    recorded, live = comparable(recorded, ignore), comparable(live, ignore)
    found = _first(recorded, live, ())
    if found is None:
        return None
    where, old, new = found
    divergence = Divergence(
        turn=turn_of(live), stream=stream, path=_path_text(where),
        recorded=_shorten(old, new), live=_shorten(new, old),
    )
    return _with_tool(divergence, live, where)


Path_ = tuple[str | int, ...]
_ABSENT = object()


def _first(a: Any, b: Any, where: Path_) -> tuple[Path_, Any, Any] | None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            found = _first(a.get(key, _ABSENT), b.get(key, _ABSENT), (*where, key))
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i in range(max(len(a), len(b))):
            found = _first(a[i] if i < len(a) else _ABSENT, b[i] if i < len(b) else _ABSENT, (*where, i))
            if found:
                return found
        return None
    return None if a == b else (where, a, b)


def _path_text(where: Path_) -> str:
    text = ""
    for part in where:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _shorten(value: Any, other: Any, width: int = VALUE_WIDTH) -> str | None:
    """A value as one short line, starting a little before where it differs from `other`."""
    if value is _ABSENT:
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    other_text = other if isinstance(other, str) else ""
    start = max(0, _common_prefix(text, other_text) - 40)
    cut = text[start: start + width]
    cut = ("…" if start else "") + cut + ("…" if start + width < len(text) else "")
    return " ".join(cut.split())


def _with_tool(divergence: Divergence, live: dict[str, Any], where: Path_) -> Divergence:
    """Name the tool call answered by the tool result the difference lies in, if it does."""
    key = history_key(live)
    items = live.get(key)
    if not where or where[0] != key or not isinstance(items, list):
        return divergence
    result = _enclosing_result(live, where) or _result_beside(items, where)
    if result is None:
        return divergence
    call_id = result.get("tool_use_id") or result.get("call_id")
    call = _find_call(items, str(call_id))
    if call is None:
        return divergence
    return divergence.model_copy(
        update={"tool_name": call[0], "tool_use_id": str(call_id), "tool_input": _call_summary(call[1])}
    )


def _enclosing_result(value: Any, where: Path_) -> dict[str, Any] | None:
    """The innermost tool result (one of `TOOL_RESULT_TYPES`, a `functionResponse`) on the path."""
    found = None
    for part in where:
        found = _as_result(value) or found
        try:
            value = value[part]
        except (KeyError, IndexError, TypeError):
            break
    return _as_result(value) or found


def _as_result(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, dict):
        return None
    if value.get("type") in TOOL_RESULT_TYPES:
        return value
    answer = value.get("functionResponse")  # Gemini: a part answering the call with its id
    return {"call_id": answer.get("id") or answer.get("name")} if isinstance(answer, dict) else None


def _result_beside(items: list[Any], where: Path_) -> dict[str, Any] | None:
    """The one tool result in the message a differing block belongs to: Claude Code answers a
    Skill call with the result and, beside it in the same message, the skill's body. Copilot
    sends the body as the next user message (`<skill-context>`): then the one tool result of the
    message before it."""
    if len(where) < 3 or not isinstance(where[1], int) or where[2] != "content" or where[1] >= len(items):
        return None
    for index in (where[1], where[1] - 1):
        results = tool_results(items[index]) if index >= 0 else []
        if results:
            return results[0] if len(results) == 1 else None
    return None




def _find_call(items: list[Any], call_id: str) -> tuple[str, Any] | None:
    """(tool name, input) of the call with this id, in an assistant message or a call item."""
    for item in items:
        if not isinstance(item, dict):
            continue
        if item.get("type") in TOOL_CALL_TYPES and item.get("call_id") == call_id:
            return str(item.get("name")), item.get("arguments", item.get("input"))
        content = item.get("content", item.get("parts"))
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("id") == call_id:
                return str(block.get("name")), block.get("input")
            call = block.get("functionCall") if isinstance(block, dict) else None
            if isinstance(call, dict) and call_id in (call.get("id"), call.get("name")):
                return str(call.get("name")), call.get("args")
    return None


def _common_prefix(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def _call_summary(args: Any) -> str | None:
    """The telling part of a call's input: its command or path (a patch's files), else the input itself."""
    if isinstance(args, str):
        if PATCH_FILE.search(args):
            return _shorten(" ".join(PATCH_FILE.findall(args)), "", CALL_WIDTH)
        try:
            args = json.loads(args)
        except json.JSONDecodeError:
            return _shorten(args, "", CALL_WIDTH)
    if isinstance(args, dict):
        for key in ("command", "cmd", "file_path", "path", "skill"):
            if key in args:
                value = args[key]
                return _shorten(" ".join(value) if isinstance(value, list) else value, "", CALL_WIDTH)
    return _shorten(args, "", CALL_WIDTH) if args else None


# --- usage ---------------------------------------------------------------------------------
