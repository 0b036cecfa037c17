"""The LLM judge: one structured PASS/FAIL verdict through the official anthropic or openai SDK."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from aam_eval_action.model_calls import (
    API_PATHS,
    MAX_TOKENS,
    PLACEHOLDER_KEY,
    REQUEST_TIMEOUT,
    Structured,
    ask_plain,
    output_text,
    plain_params,
    text_of,
    tool_input,
    usage_from,
    usage_of,
)
from aam_eval_action.session import FileChange, Session, cap

OUTPUT_CAP = 20_000
FILES_CAP = 20_000
# Seconds one judge request may take before it is retried; the SDKs' own default is 10 min.
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


__all__ = ["API_PATHS", "MAX_TOKENS", "PLACEHOLDER_KEY", "REQUEST_TIMEOUT", "Structured", "ask_plain",
           "plain_params", "text_of", "usage_of"]


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


def answer_from_body(provider: str, model: str, body: Any) -> JudgeAnswer:
    """The verdict in a judge response body (the SDK's parsed response, or a recorded one)."""
    if not isinstance(body, dict):
        raise JudgeError(f"judge {model} returned no JSON response")
    answered_by = str(body.get("model") or model)
    if provider == "anthropic":
        data = tool_input(body, "record_verdict")
        if data is None:
            raise JudgeError(f"judge {model} returned no record_verdict tool call")
    else:
        try:
            data = json.loads(output_text(body))
        except json.JSONDecodeError:
            raise JudgeError(f"judge {model} returned no JSON verdict") from None
    return _verdict(data, answered_by, usage_from(body.get("usage")))


def _verdict(data: Any, model: str, usage: dict[str, int]) -> JudgeAnswer:
    if not isinstance(data, dict) or data.get("result") not in ("PASS", "FAIL"):
        raise JudgeError(f"judge {model} returned a malformed verdict: {str(data)[:200]}")
    return JudgeAnswer(data["result"], str(data.get("reason", "")).strip(), model, usage)
