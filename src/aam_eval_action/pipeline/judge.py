"""The LLM judge: one structured PASS/FAIL verdict through the official anthropic or openai SDK."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from aam_eval_action.session import FileChange, Session, cap

OUTPUT_CAP = 20_000
FILES_CAP = 20_000
MAX_TOKENS = 1024
# Seconds one judge request may take before it is retried; the SDKs' own default is 10 min.
REQUEST_TIMEOUT = 120.0
PLACEHOLDER_KEY = "aam-eval-replay-placeholder"
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "result": {"type": "string", "enum": ["PASS", "FAIL"]},
        "reason": {"type": "string", "description": "One or two sentences citing the evidence."},
    },
    "required": ["result", "reason"],
    "additionalProperties": False,
}
SYSTEM = (
    "You grade the work of an AI coding agent against the author's criteria. "
    "Judge only from the evidence given: the task, the agent's final output and the files it "
    "created or changed. Return PASS only if every criterion is met, otherwise FAIL, with a "
    "short reason that cites the evidence."
)


class JudgeError(Exception):
    """The judge gave no usable verdict; the case becomes ERROR with this reason."""


@dataclass(frozen=True)
class JudgeAnswer:
    """What the judge model answered for one request."""

    result: Literal["PASS", "FAIL"]
    reason: str
    model: str
    usage: dict[str, int] = field(default_factory=dict)


def build_prompt(criteria: str, prompt: str, session: Session) -> str:
    """The judge's user message: criteria, task, output and files, each capped."""
    return "<criteria>\n" + criteria.strip() + "\n</criteria>\n\n" + evidence(prompt, session)


def evidence(prompt: str, session: Session) -> str:
    """What the judge grades besides the criteria: the task, the agent's output, a hook's
    block, the files (a human label is tied to a hash of exactly this)."""
    parts = [
        "<task>\n" + prompt.strip() + "\n</task>",
        "<agent_output>\n" + cap(session.output, OUTPUT_CAP) + "\n</agent_output>",
    ]
    if session.turns:  # a conversation: the judge reads every turn, the agent's last answer last
        share = OUTPUT_CAP // len(session.turns)
        said = [f'<turn n="{n}">\n<user>\n{t.user.strip()}\n</user>\n'
                f"<agent>\n{cap(t.output, share)}\n</agent>\n</turn>" for n, t in enumerate(session.turns, 1)]
        parts = ["<conversation>\n" + "\n".join(said) + "\n</conversation>"]
    if session.hook_blocked:
        parts.append("<hook_blocked>\n" + "\n".join(session.hook_evidence) + "\n</hook_blocked>")
    files = _files_text(session.files)
    if files:
        parts.append("<files>\n" + files + "\n</files>")
    return "\n\n".join(parts)


def _files_text(files: list[FileChange]) -> str:
    budget = FILES_CAP
    out: list[str] = []
    for f in files:
        head = f"--- {f.path} ({f.status}, {f.size} bytes)"
        body = f.text if f.text is not None else ("" if f.status == "deleted" else "[binary or large file]")
        body = cap(body, max(budget, 0))
        budget -= len(body)
        out.append(head + ("\n" + body if body else ""))
    return "\n".join(out)


API_PATHS = {"anthropic": "/v1/messages", "openai": "/v1/responses"}
"""Where each provider's judge request goes (the SDK call and the replay fast path agree)."""


@dataclass(frozen=True)
class Structured:
    """A request for one structured answer: a forced tool call (Anthropic) or a JSON schema
    format (OpenAI Responses), under a system prompt (the judge's verdict, the simulated user's
    reply)."""

    system: str
    tool: str
    """The tool's name (Anthropic); the format's name is `format`."""
    description: str
    format: str
    schema: dict[str, Any]

    def params(self, provider: str, model: str, text: str) -> dict[str, Any]:
        """The request's parameters: passed to the SDK as they are, and sent as its JSON body."""
        if provider == "anthropic":
            return {
                "model": model, "max_tokens": MAX_TOKENS, "system": self.system,
                "messages": [{"role": "user", "content": text}],
                "tools": [{"name": self.tool, "description": self.description, "input_schema": self.schema}],
                "tool_choice": {"type": "tool", "name": self.tool},
            }
        return {
            "model": model, "instructions": self.system, "input": text, "max_output_tokens": MAX_TOKENS,
            "text": {"format": {"type": "json_schema", "name": self.format, "strict": True,
                                "schema": self.schema}},
        }

    def ask(self, provider: str, model: str, text: str, base_url: str | None, api_key: str | None,
            http_client: Any = None, max_retries: int = 4) -> Any:
        """Ask the model once (the SDK retries transient errors with backoff): the response body."""
        params = self.params(provider, model, text)
        with _client(provider, base_url, api_key, http_client, max_retries) as client:
            if provider == "anthropic":
                response = client.messages.create(**params)
            else:
                response = client.responses.create(**params)
        return response.model_dump(mode="json")


VERDICT = Structured(SYSTEM, "record_verdict", "Record the verdict.", "verdict", VERDICT_SCHEMA)


def request_params(provider: str, model: str, text: str) -> dict[str, Any]:
    """The judge request's parameters: passed to the SDK as they are, and sent as its JSON body."""
    return VERDICT.params(provider, model, text)


def ask(
    *,
    provider: str,
    model: str,
    text: str,
    base_url: str | None,
    api_key: str | None,
    http_client: Any = None,
    max_retries: int = 4,
) -> JudgeAnswer:
    """Ask the judge model once (the SDK retries transient errors with backoff)."""
    body = VERDICT.ask(provider, model, text, base_url, api_key, http_client, max_retries)
    return answer_from_body(provider, model, body)


def plain_params(provider: str, model: str, system: str, text: str | list[dict[str, Any]]) -> dict[str, Any]:
    """A request for a plain text answer (a `claude plugin eval` judge's one word); `text` may be
    Messages content blocks (text and an image), sent to the Responses API in its own shapes."""
    if provider == "anthropic":
        return {"model": model, "max_tokens": MAX_TOKENS, "system": system,
                "messages": [{"role": "user", "content": text}]}
    content: Any = text
    if not isinstance(text, str):
        content = [{"role": "user", "content": [_responses_block(b) for b in text]}]
    return {"model": model, "instructions": system, "input": content, "max_output_tokens": MAX_TOKENS}


def _responses_block(block: dict[str, Any]) -> dict[str, Any]:
    if block.get("type") == "image":
        source = block["source"]
        return {"type": "input_image", "image_url": f"data:{source['media_type']};base64,{source['data']}"}
    return {"type": "input_text", "text": block.get("text", "")}


def ask_plain(provider: str, model: str, system: str, text: str | list[dict[str, Any]], base_url: str | None,
              api_key: str | None, http_client: Any = None, max_retries: int = 4) -> dict[str, Any]:
    """Ask for a plain text answer once: the response body."""
    params = plain_params(provider, model, system, text)
    with _client(provider, base_url, api_key, http_client, max_retries) as client:
        create = client.messages.create if provider == "anthropic" else client.responses.create
        response = create(**params)
    body: dict[str, Any] = response.model_dump(mode="json")
    return body


def text_of(provider: str, body: Any) -> str:
    """The answer's text in a response body (every text block, joined)."""
    if not isinstance(body, dict):
        return ""
    if provider == "anthropic":
        return "\n".join(str(b.get("text", "")) for b in body.get("content") or []
                         if isinstance(b, dict) and b.get("type") == "text")
    return _output_text(body)


def _client(
    provider: str, base_url: str | None, api_key: str | None, http_client: Any, max_retries: int
) -> Any:
    """The provider's official SDK client (imported here: replay never needs it)."""
    options = {"api_key": api_key or PLACEHOLDER_KEY, "base_url": base_url, "http_client": http_client,
               "max_retries": max_retries, "timeout": REQUEST_TIMEOUT}
    if provider == "anthropic":
        import anthropic

        return anthropic.Anthropic(**options)
    import openai

    return openai.OpenAI(**options)


def answer_from_body(provider: str, model: str, body: Any) -> JudgeAnswer:
    """The verdict in a judge response body (the SDK's parsed response, or a recorded one)."""
    if not isinstance(body, dict):
        raise JudgeError(f"judge {model} returned no JSON response")
    answered_by = str(body.get("model") or model)
    if provider == "anthropic":
        data = _tool_input(body)
        if data is None:
            raise JudgeError(f"judge {model} returned no record_verdict tool call")
    else:
        try:
            data = json.loads(_output_text(body))
        except json.JSONDecodeError:
            raise JudgeError(f"judge {model} returned no JSON verdict") from None
    return _verdict(data, answered_by, _usage(body.get("usage")))


def _tool_input(body: dict[str, Any]) -> Any:
    for block in body.get("content") or []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_use" and block.get("name") == "record_verdict":
            return block.get("input")
    return None


def _output_text(body: dict[str, Any]) -> str:
    """What the OpenAI SDK's `output_text` is: every output_text part of every message, joined."""
    parts = []
    for item in body.get("output") or []:
        if isinstance(item, dict) and item.get("type") == "message":
            parts += [c.get("text", "") for c in item.get("content") or []
                      if isinstance(c, dict) and c.get("type") == "output_text"]
    return "".join(parts)


def usage_of(body: Any) -> dict[str, int]:
    """The token usage a response body reports."""
    return _usage(body.get("usage") if isinstance(body, dict) else None)


def _usage(usage: Any) -> dict[str, int]:
    if not isinstance(usage, dict):
        return {}
    return {k: usage[k] for k in ("input_tokens", "output_tokens") if isinstance(usage.get(k), int)}


def _verdict(data: Any, model: str, usage: dict[str, int]) -> JudgeAnswer:
    if not isinstance(data, dict) or data.get("result") not in ("PASS", "FAIL"):
        raise JudgeError(f"judge {model} returned a malformed verdict: {str(data)[:200]}")
    return JudgeAnswer(data["result"], str(data.get("reason", "")).strip(), model, usage)
