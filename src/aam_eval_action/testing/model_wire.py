"""The scripted model server's wire formats (Anthropic Messages, OpenAI Responses, Gemini), their
streamed events and errors, and what the real APIs refuse."""

from __future__ import annotations

import json
import re
import urllib.parse
from typing import Any

from aam_eval_action.testing.model_base import (
    CREATED_AT,
    CUSTOM_INPUT,
    DRAFT_TOOL,
    JUDGE_TOOL,
    NAMESPACE_SEP,
    RESPONSES_SEARCH,
    USER_TOOL,
    Reply,
)
from aam_eval_action.testing.model_requests import (
    _tokens,
    all_text,
    digest,
    gemini_tool_names,
)

# --- wire formats -------------------------------------------------------------------------

ANTHROPIC_ERRORS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def _call_id(rid: str, index: int) -> str:
    """The id of the index-th call of an answer: the answer's own for the first, derived after."""
    return rid if index == 0 else digest(rid, index)


def anthropic_message(reply: Reply, body: dict[str, Any], rid: str) -> dict[str, Any]:
    """A complete Anthropic Message for a reply."""
    blocks: list[dict[str, Any]]
    if reply.calls:
        blocks = [{"type": "tool_use", "id": f"toolu_{_call_id(rid, i)}", "name": name, "input": given}
                  for i, (name, given) in enumerate(reply.calls)]
        stop, out = "tool_use", "".join(json.dumps(given) for _, given in reply.calls)
    else:
        blocks, stop, out = [{"type": "text", "text": reply.text}], "end_turn", reply.text
    return {
        "id": f"msg_{rid}",
        "type": "message",
        "role": "assistant",
        "model": str(body.get("model", "")),
        "content": blocks,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": _tokens(all_text(body)),
            "output_tokens": _tokens(out),
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }


def anthropic_events(message: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The SSE events that stream a Message."""
    start = dict(message, content=[], stop_reason=None)
    start["usage"] = dict(message["usage"], output_tokens=1)
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start}),
    ]
    for index, block in enumerate(message["content"]):
        if block["type"] == "tool_use":
            opening = dict(block, input={})
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            opening = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        events += [
            ("content_block_start",
             {"type": "content_block_start", "index": index, "content_block": opening}),
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]
    return [
        *events,
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": message["usage"]["output_tokens"]},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


def anthropic_error(reply: Reply) -> dict[str, Any]:
    kind = ANTHROPIC_ERRORS.get(reply.status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": reply.text}}


def response_items(reply: Reply, rid: str, custom: set[str] | None = None) -> list[dict[str, Any]]:
    """The output items of a Responses answer: one message, or one function call per call
    (after a message when the reply has a text too); a call to one of the `custom` tools is a
    custom tool call."""
    if reply.calls and reply.tool not in (JUDGE_TOOL, DRAFT_TOOL, USER_TOOL):
        custom = custom or set()
        calls = [tool_search_call(given, _call_id(rid, i)) if name == RESPONSES_SEARCH else
                 (custom_tool_call if name in custom else function_call)(name, given, _call_id(rid, i))
                 for i, (name, given) in enumerate(reply.calls)]
        return [message_item(reply.text, rid), *calls] if reply.text else calls
    text = json.dumps(reply.calls[0][1]) if reply.calls else reply.text
    return [message_item(text, rid)]


def message_item(text: str, rid: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": f"msg_{rid}",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def function_call(name: str, given: dict[str, Any], cid: str) -> dict[str, Any]:
    """A function_call output item; a namespaced tool's call names its namespace apart."""
    namespace, _, name = name.rpartition(NAMESPACE_SEP)
    item = {
        "type": "function_call",
        "id": f"fc_{cid}",
        "call_id": f"call_{cid}",
        "name": name,
        "arguments": json.dumps(given),
        "status": "completed",
    }
    return {**item, "namespace": namespace} if namespace else item


def tool_search_call(given: dict[str, Any], cid: str) -> dict[str, Any]:
    """A tool_search_call output item: the client (Codex) searches its deferred tools."""
    return {"type": "tool_search_call", "id": f"tsc_{cid}", "call_id": f"call_{cid}", "execution": "client",
            "arguments": given, "status": "completed"}


def custom_tool_call(name: str, given: dict[str, Any], cid: str) -> dict[str, Any]:
    """A custom_tool_call output item: a freeform tool's text input (an `apply_patch` patch)."""
    return {"type": "custom_tool_call", "id": f"ctc_{cid}", "call_id": f"call_{cid}", "name": name,
            "input": str(given.get(CUSTOM_INPUT, "")), "status": "completed"}


def custom_tools(body: dict[str, Any]) -> set[str]:
    """The names of the custom (freeform) tools a Responses request offers."""
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict)]
    return {str(t.get("name")) for t in tools if t.get("type") == "custom"}


def response_object(reply: Reply, body: dict[str, Any], rid: str) -> dict[str, Any]:
    """A complete Responses API Response for a reply."""
    items = response_items(reply, rid, custom_tools(body))
    out = _tokens("".join(json.dumps(item) for item in items))
    inp = _tokens(all_text(body))
    return {
        "id": f"resp_{rid}",
        "object": "response",
        "created_at": CREATED_AT,
        "status": "completed",
        "model": str(body.get("model", "")),
        "output": items,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "usage": {
            "input_tokens": inp,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": out,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": inp + out,
        },
    }


def response_events(response: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The SSE events that stream a Response."""
    pending = dict(response, status="in_progress", output=[], usage=None)
    events: list[tuple[str, dict[str, Any]]] = [("response.created", {"response": pending})]
    for index, item in enumerate(response["output"]):
        opening = dict(item, status="in_progress")
        events.append(("response.output_item.added", {"output_index": index, "item": opening}))
        if item["type"] == "message":
            opening["content"] = []
            text = item["content"][0]["text"]
            events.append(("response.output_text.delta",
                           {"item_id": item["id"], "output_index": index, "content_index": 0, "delta": text}))
        events.append(("response.output_item.done", {"output_index": index, "item": item}))
    events.append(("response.completed", {"response": response}))
    return [(name, dict(data, type=name, sequence_number=i)) for i, (name, data) in enumerate(events)]


def openai_error(reply: Reply) -> dict[str, Any]:
    code = "invalid_api_key" if reply.status == 401 else "rate_limit_exceeded" if reply.status == 429 \
        else str(reply.status)
    kind = "server_error" if reply.status >= 500 else "requests" if reply.status == 429 \
        else "invalid_request_error"
    return {"error": {"message": reply.text, "type": kind, "param": None, "code": code}}


GEMINI_STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    529: "UNAVAILABLE",
}
GEMINI_ROUTE = re.compile(r"^/v1(?:beta)?/models/([^/:]+):(streamGenerateContent|generateContent)$")
"""`POST /v1beta/models/{model}:streamGenerateContent` (SSE with `alt=sse`) or `:generateContent`."""






def gemini_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema a Gemini request asks its answer to follow, if any."""
    config = body.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    return schema if isinstance(schema, dict) else None


def schema_example(schema: Any) -> Any:
    """A small value that satisfies a JSON schema (or a Gemini `responseSchema`, upper-case types)
    for Gemini CLI's side requests: an enum offering `user` answers `user` (its next-speaker check
    then lets the user speak, so a scripted session ends when its script does), an integer 1 (its
    router's `complexity_score` must be 1-100), a number 0 (its loop check's confidence)."""
    if not isinstance(schema, dict):
        return None
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return schema_example(schema[key][0])
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return "user" if "user" in enum else enum[0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if str(k).lower() != "null"), "null")
    kind = str(kind).lower() if kind else ("object" if "properties" in schema else "string")
    if kind == "object":
        return {k: schema_example(v) for k, v in (schema.get("properties") or {}).items()}
    if kind == "array":
        return [schema_example(schema.get("items"))] * int(schema.get("minItems") or 0)
    if kind in ("integer", "number"):  # an integer 1 (a score "from 1"), a number 0 (a confidence)
        return schema.get("minimum", 1 if kind == "integer" else 0)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return "scripted" if int(schema.get("minLength") or 0) <= 8 else "scripted" * int(schema["minLength"])


def is_gemini_judge(body: dict[str, Any]) -> bool:
    """A Gemini judge request: it offers `record_verdict` or asks for a `{result, reason}` object."""
    schema = gemini_schema(body) or {}
    asks_verdict = {"result", "reason"} <= set(schema.get("properties") or {})
    return asks_verdict or JUDGE_TOOL in gemini_tool_names(body)


def gemini_response(reply: Reply, body: dict[str, Any], rid: str, model: str) -> dict[str, Any]:
    """A complete GenerateContentResponse for a reply: a text part and/or one `functionCall` part
    per call (a judge's verdict is a JSON text unless the request offers `record_verdict`)."""
    parts: list[dict[str, Any]] = []
    calls = list(reply.calls)
    if calls and calls[0][0] == JUDGE_TOOL and JUDGE_TOOL not in gemini_tool_names(body):
        parts, calls = [{"text": json.dumps(calls[0][1])}], []
    elif reply.text or not calls:
        parts.append({"text": reply.text})
    parts += [{"functionCall": {"id": f"call_{_call_id(rid, i)}", "name": name, "args": given}}
              for i, (name, given) in enumerate(calls)]
    inp = _tokens(all_text(body))
    out = _tokens("".join(json.dumps(part) for part in parts))
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": inp, "candidatesTokenCount": out, "totalTokenCount": inp + out},
        "modelVersion": model,
        "responseId": rid,
    }


def gemini_error(reply: Reply) -> dict[str, Any]:
    status = GEMINI_STATUSES.get(reply.status, "INTERNAL" if reply.status >= 500 else "UNKNOWN")
    return {"error": {"code": reply.status, "message": reply.text, "status": status}}


def sse(events: list[tuple[str, dict[str, Any]]]) -> bytes:
    return "".join(f"event: {n}\ndata: {json.dumps(d)}\n\n" for n, d in events).encode()


# --- what the real APIs refuse ----------------------------------------------------------


def presented_key(headers: dict[str, str]) -> str | None:
    """The API key of a request: `x-api-key` (Anthropic) or `Authorization: Bearer` (both)."""
    if headers.get("x-api-key"):
        return headers["x-api-key"]
    scheme, _, value = headers.get("authorization", "").partition(" ")
    return (value.strip() or None) if scheme.lower() == "bearer" else None


def auth_error(headers: dict[str, str], api_keys: frozenset[str], path: str = "") -> Reply | None:
    """A 401 unless the request carries one of the server's keys (a Gemini request: in its
    `x-goog-api-key` header or its `key` query parameter)."""
    if GEMINI_ROUTE.match(path.split("?", 1)[0]):
        params = urllib.parse.parse_qs(path.partition("?")[2])
        key = headers.get("x-goog-api-key") or next(iter(params.get("key") or []), None)
        if key in api_keys:
            return None
        return Reply(text="API key not valid. Please pass a valid API key." if key else
                     "Method doesn't allow unregistered callers. Please use an API key.", status=401)
    key = presented_key(headers)
    if key in api_keys:
        return None
    why = "no API key was given" if key is None else "invalid x-api-key"
    return Reply(text=why, status=401)


def shape_error(route: str, headers: dict[str, str], body: Any) -> Reply | None:
    """A 400 for a request the real API would refuse: what a client must always send."""
    if route == "/v1/messages":
        problem = _messages_problem(headers, body)
    elif GEMINI_ROUTE.match(route):
        problem = _gemini_problem(body)
    else:
        problem = _responses_problem(body)
    return Reply(text=problem, status=400) if problem else None


def _gemini_problem(body: Any) -> str | None:
    if not isinstance(body, dict):
        return "Invalid JSON payload received."
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        return "* GenerateContentRequest.contents: contents is not specified"
    for i, content in enumerate(contents):
        if not isinstance(content, dict) or content.get("role", "user") not in ("user", "model"):
            return f"* GenerateContentRequest.contents[{i}].role: Please use a valid role: user, model."
        if not isinstance(content.get("parts"), list) or not content["parts"]:
            return f"* GenerateContentRequest.contents[{i}].parts: contents.parts must not be empty."
    return None


def _messages_problem(headers: dict[str, str], body: Any) -> str | None:
    if not headers.get("anthropic-version"):
        return "anthropic-version: header is required"
    if not isinstance(body, dict):
        return "the request body must be a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model: Field required"
    if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
        return "max_tokens: Field required (a positive integer)"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: Field required (a non-empty list)"
    for i, message in enumerate(messages):
        # Claude Code 2.1.332 sends its context (git status, date) as a `system` message after
        # the user's: the API takes it there.
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant", "system"):
            return f"messages.{i}.role: Input should be 'user', 'assistant' or 'system'"
        if not isinstance(message.get("content"), str | list):
            return f"messages.{i}.content: Field required"
    return None


def _responses_problem(body: Any) -> str | None:
    if not isinstance(body, dict):
        return "the request body must be a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "Missing required parameter: 'model'."
    if not isinstance(body.get("input"), str | list):
        return "Missing required parameter: 'input'."
    return None
