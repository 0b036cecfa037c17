"""Streamed answers: server-sent events parsed, their text and JSON deltas merged into one event,
written back as bytes; and the tokens a session's exchanges used."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from aam_eval_action.replay.traffic_model import (
    Exchange,
    RecordedResponse,
    SseEvent,
)

ANTHROPIC_DELTAS = {"text_delta": "text", "input_json_delta": "partial_json", "thinking_delta": "thinking"}
RESPONSES_DELTAS = (
    "response.output_text.delta",
    "response.function_call_arguments.delta",
    "response.reasoning_summary_text.delta",
    "response.reasoning_text.delta",
)


def merge_deltas(events: Sequence[SseEvent]) -> list[SseEvent]:
    """Consecutive deltas of one content block joined into one event; pings dropped."""
    merged: list[SseEvent] = []
    for event in events:
        data = event.data
        if isinstance(data, dict) and data.get("type") == "ping":
            continue
        if merged and _joinable(merged[-1].data, data):
            merged[-1] = SseEvent(event=event.event, data=_join(merged[-1].data, data))
        else:
            merged.append(event)
    return merged


def _delta_field(data: Any) -> str | None:
    if not isinstance(data, dict):
        return None
    if data.get("type") == "content_block_delta":
        return ANTHROPIC_DELTAS.get(str((data.get("delta") or {}).get("type")))
    return "delta" if data.get("type") in RESPONSES_DELTAS else None


def _joinable(a: Any, b: Any) -> bool:
    field = _delta_field(a)
    if field is None or field != _delta_field(b):
        return False
    same = ("type", "index", "item_id", "output_index", "content_index", "summary_index")
    return all(a.get(k) == b.get(k) for k in same)


def _join(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    field = _delta_field(a)
    assert field is not None
    if a.get("type") == "content_block_delta":
        delta = dict(a["delta"])
        delta[field] = str(delta.get(field, "")) + str(b["delta"].get(field, ""))
        return dict(a, delta=delta)
    return dict(a, delta=str(a.get("delta", "")) + str(b.get("delta", "")))


Live = Callable[[str, bool], str]
"""Turns a recorded string into this run's (`Normaliser.live`, or only `Paths.from_placeholders`)."""


def sse_bytes(events: Sequence[SseEvent]) -> bytes:
    """Events in the SSE wire format."""
    parts = []
    for event in events:
        data = event.data if isinstance(event.data, str) else json.dumps(event.data, ensure_ascii=False)
        name = event.event or _type(event.data)
        head = f"event: {name}\n" if name else ""
        parts.append(f"{head}data: {data}\n\n")
    return "".join(parts).encode()


def _type(data: Any) -> str | None:
    kind = data.get("type") if isinstance(data, dict) else None
    return kind if isinstance(kind, str) else None


def parse_sse(raw: bytes) -> list[SseEvent]:
    """SSE wire bytes as events (data parsed as JSON when it is)."""
    events = []
    for block in re.split(r"\r?\n\r?\n", raw.decode("utf-8", "replace")):
        name, data = None, []
        for line in block.splitlines():
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
        if name is None and not data:
            continue
        text = "\n".join(data)
        try:
            parsed: Any = json.loads(text)
        except json.JSONDecodeError:
            parsed = text
        events.append(SseEvent(event=name, data=parsed))
    return events


# --- divergence ----------------------------------------------------------------------------


def usage(exchanges: Iterable[Exchange]) -> dict[str, int]:
    """Token counts summed over exchanges (Anthropic message events, Responses `completed`)."""
    total: dict[str, int] = {}
    for exchange in exchanges:
        for counts in _usages(exchange.response):
            for key, value in counts.items():
                if isinstance(value, int):
                    total[key] = total.get(key, 0) + value
    return total


def _usages(response: RecordedResponse) -> list[dict[str, Any]]:
    if response.events is None:
        body = response.body if isinstance(response.body, dict) else {}
        return [body["usage"]] if isinstance(body.get("usage"), dict) else []
    found: dict[str, Any] = {}
    for event in response.events:
        data = event.data if isinstance(event.data, dict) else {}
        kind = data.get("type")
        if kind == "message_start":
            found.update((data.get("message") or {}).get("usage") or {})
        elif kind == "message_delta":
            found.update(data.get("usage") or {})  # final output_tokens replace the opening count
        elif kind == "response.completed":
            counts = (data.get("response") or {}).get("usage") or {}
            found.update({k: v for k, v in counts.items() if isinstance(v, int)})
        elif isinstance(data.get("usageMetadata"), dict):  # Gemini: running totals, the last wins
            meta = data["usageMetadata"]
            found.update({"input_tokens": int(meta.get("promptTokenCount") or 0),
                          "output_tokens": int(meta.get("candidatesTokenCount") or 0)})
    return [found] if found else []
