"""One layer for every model request the tool makes itself (not the agent's): the judge's verdict,
the simulated user's reply, an agent mock's answer, `init`'s drafts, `tune`'s proposals and a
`claude plugin eval` judge's one word. A structured request is a `Structured` (a forced tool call
on the Anthropic Messages API, a JSON schema format on the OpenAI Responses API); a plain one is
`plain_params`. The providers' official SDKs are called here and nowhere else (`client`), each
call recorded in (and played from) a cassette of `replay/judge_cassette.py` by its caller.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from aam_eval_action.replay.outage import ApiDown, api_error, describe
from aam_eval_action.replay.traffic_model import RecordedResponse

MAX_TOKENS = 1024
REQUEST_TIMEOUT = 120.0
"""Seconds the SDK waits for one answer."""
PLACEHOLDER_KEY = "aam-eval-replay-placeholder"
"""The key an SDK client is made with when none is needed (a replay: nothing is sent)."""
API_PATHS = {"anthropic": "/v1/messages", "openai": "/v1/responses"}
"""Where each provider's request goes (the SDK call and the replay fast path agree)."""


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
    max_tokens: int = MAX_TOKENS

    def params(self, provider: str, model: str, text: str) -> dict[str, Any]:
        """The request's parameters: passed to the SDK as they are, and sent as its JSON body."""
        if provider == "anthropic":
            return {
                "model": model, "max_tokens": self.max_tokens, "system": self.system,
                "messages": [{"role": "user", "content": text}],
                "tools": [{"name": self.tool, "description": self.description, "input_schema": self.schema}],
                "tool_choice": {"type": "tool", "name": self.tool},
            }
        return {
            "model": model, "instructions": self.system, "input": text, "max_output_tokens": self.max_tokens,
            "text": {"format": {"type": "json_schema", "name": self.format, "strict": True,
                                "schema": self.schema}},
        }

    def ask(self, provider: str, model: str, text: str, base_url: str | None, api_key: str | None,
            http_client: Any = None, max_retries: int = 4) -> Any:
        """Ask the model once (the SDK retries transient errors with backoff): the response body."""
        params = self.params(provider, model, text)
        with (client(provider, base_url, api_key, http_client, max_retries) as sdk,
              api_down(provider, max_retries)):
            if provider == "anthropic":
                response = sdk.messages.create(**params)
            else:
                response = sdk.responses.create(**params)
        return response.model_dump(mode="json")

    def answer(self, provider: str, body: Any) -> Any:
        """The structured answer in a response body: the forced tool call's input (Anthropic) or
        the JSON of the output text (Responses); None when there is none."""
        if not isinstance(body, dict):
            return None
        if provider == "anthropic":
            return tool_input(body, self.tool)
        try:
            return json.loads(output_text(body))
        except json.JSONDecodeError:
            return None


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
    with client(provider, base_url, api_key, http_client, max_retries) as sdk, \
            api_down(provider, max_retries):
        create = sdk.messages.create if provider == "anthropic" else sdk.responses.create
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
    return output_text(body)


def client(
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





@contextlib.contextmanager
def api_down(provider: str, max_retries: int) -> Iterator[None]:
    """The SDK's error after its retries, when the API kept answering 429, 5xx or 529 or kept
    cutting its answer (or could not be reached), as `ApiDown`: `the model API answered 529
    overloaded_error 5 times`. Its answers were never recorded (see `replay/judge_cassette.py`),
    so the next run asks again. Any other error goes through as it is."""
    try:
        yield
    except Exception as exc:
        sdk = _sdk(provider)
        attempts = max_retries + 1
        if isinstance(exc, sdk.APIStatusError) and (exc.status_code == 429 or exc.status_code >= 500):
            body = exc.body if isinstance(exc.body, dict) and "error" in exc.body else {"error": exc.body}
            said = api_error(RecordedResponse(status=exc.status_code, body=body))
            raise ApiDown(describe(Counter({said or str(exc.status_code): attempts}))) from None
        if isinstance(exc, sdk.APIConnectionError):  # refused, reset, cut mid-answer, or timed out
            raise ApiDown(f"the model API could not be reached or cut its answer {attempts} times "
                          f"({type(exc).__name__})") from None
        raise


@contextlib.contextmanager
def warmed(providers: set[str]) -> Iterator[None]:
    """The providers' SDKs (and the judge cassettes' vcrpy) imported on another thread while the
    first sessions run, so the first judge vote does not wait for an import of a second or more
    (the SDKs are imported where used, to keep start-up and replay light). Nothing for none."""
    if not providers:
        yield
        return
    loading = threading.Thread(target=_import_sdks, args=(sorted(providers),), name="aam-eval-warm-up")
    loading.start()
    try:
        yield
    finally:
        loading.join()


def _import_sdks(providers: list[str]) -> None:
    for module in [*providers, "vcr"]:
        with contextlib.suppress(ImportError):
            importlib.import_module(module)


def _sdk(provider: str) -> Any:
    if provider == "anthropic":
        import anthropic

        return anthropic
    import openai

    return openai


def tool_input(body: dict[str, Any], tool: str) -> Any:
    """The input of the first call of `tool` in an Anthropic response body; None without one."""
    for block in body.get("content") or []:
        if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("name") == tool:
            return block.get("input")
    return None


def output_text(body: dict[str, Any]) -> str:
    """What the OpenAI SDK's `output_text` is: every output_text part of every message, joined."""
    parts = []
    for item in body.get("output") or []:
        if isinstance(item, dict) and item.get("type") == "message":
            parts += [c.get("text", "") for c in item.get("content") or []
                      if isinstance(c, dict) and c.get("type") == "output_text"]
    return "".join(parts)


def usage_of(body: Any) -> dict[str, int]:
    """The token usage a response body reports."""
    return usage_from(body.get("usage") if isinstance(body, dict) else None)


def usage_from(usage: Any) -> dict[str, int]:
    if not isinstance(usage, dict):
        return {}
    return {k: usage[k] for k in ("input_tokens", "output_tokens") if isinstance(usage.get(k), int)}
