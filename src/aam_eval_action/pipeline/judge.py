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
    parts = [
        "<criteria>\n" + criteria.strip() + "\n</criteria>",
        "<task>\n" + prompt.strip() + "\n</task>",
        "<agent_output>\n" + cap(session.output, OUTPUT_CAP) + "\n</agent_output>",
    ]
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
    if provider == "anthropic":
        return _ask_anthropic(model, text, base_url, api_key, http_client, max_retries)
    return _ask_openai(model, text, base_url, api_key, http_client, max_retries)


def _ask_anthropic(
    model: str, text: str, base_url: str | None, api_key: str | None, http_client: Any,
    max_retries: int,
) -> JudgeAnswer:
    import anthropic

    with anthropic.Anthropic(
        api_key=api_key or PLACEHOLDER_KEY, base_url=base_url, http_client=http_client,
        max_retries=max_retries, timeout=REQUEST_TIMEOUT,
    ) as client:
        msg = client.messages.create(
            model=model, max_tokens=MAX_TOKENS, system=SYSTEM,
            messages=[{"role": "user", "content": text}],
            tools=[{"name": "record_verdict", "description": "Record the verdict.",
                    "input_schema": VERDICT_SCHEMA}],
            tool_choice={"type": "tool", "name": "record_verdict"},
        )
    for block in msg.content:
        if block.type == "tool_use" and block.name == "record_verdict":
            usage = {"input_tokens": msg.usage.input_tokens, "output_tokens": msg.usage.output_tokens}
            return _verdict(block.input, msg.model or model, usage)
    raise JudgeError(f"judge {model} returned no record_verdict tool call")


def _ask_openai(
    model: str, text: str, base_url: str | None, api_key: str | None, http_client: Any,
    max_retries: int,
) -> JudgeAnswer:
    import openai

    with openai.OpenAI(
        api_key=api_key or PLACEHOLDER_KEY, base_url=base_url, http_client=http_client,
        max_retries=max_retries, timeout=REQUEST_TIMEOUT,
    ) as client:
        resp = client.responses.create(
            model=model, instructions=SYSTEM, input=text, max_output_tokens=MAX_TOKENS,
            text={"format": {"type": "json_schema", "name": "verdict", "strict": True,
                             "schema": VERDICT_SCHEMA}},
        )
    try:
        data = json.loads(resp.output_text)
    except json.JSONDecodeError:
        raise JudgeError(f"judge {model} returned no JSON verdict") from None
    usage = {}
    if resp.usage is not None:
        usage = {"input_tokens": resp.usage.input_tokens, "output_tokens": resp.usage.output_tokens}
    return _verdict(data, resp.model or model, usage)


def _verdict(data: Any, model: str, usage: dict[str, int]) -> JudgeAnswer:
    if not isinstance(data, dict) or data.get("result") not in ("PASS", "FAIL"):
        raise JudgeError(f"judge {model} returned a malformed verdict: {str(data)[:200]}")
    return JudgeAnswer(data["result"], str(data.get("reason", "")).strip(), model, usage)
