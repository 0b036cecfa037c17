"""When the model API, not the agent, ended a session: an outage is an error, never a verdict.

A CLI retries a 429, a 5xx, a 529 or a stream cut mid-answer, and gives up (or the case times
out) when the API keeps answering so. The session then holds no answer of the model to grade:
what it printed is the CLI's own error, and a recording of it would replay that error as the
case's result on every later pull request. The recording proxy saw every answer, so the
session's traffic says whether its last request of a conversation never got a model answer,
and what the API said instead. Errors that a retry got past (a first attempt answered 529, the
second 200) are the API's weather: the session had its answers and is graded as usual.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from aam_eval_action.errors import AamEvalError
from aam_eval_action.replay.traffic_model import ModelTraffic, RecordedResponse

NOT_RUN = "the model API was down"
"""What a case the API kept from running is counted as, apart from failures."""


class ApiDown(AamEvalError):
    """The model API kept answering errors until the caller gave up: the case is an ERROR, not
    graded and not recorded; the message says what the API said and how often."""


def api_error(response: RecordedResponse) -> str | None:
    """What the API answered instead of an answer (`529 overloaded_error`, `429
    rate_limit_error`, `503 UNAVAILABLE`, `a stream cut mid-answer`), or None for an answer.
    A 4xx other than 429 is the request's fault, not the API's weather: not an outage."""
    if response.cut:
        return "a stream cut mid-answer"
    status = response.status
    if status != 429 and status < 500:
        return None
    kind = _error_kind(response.body)
    return f"{status} {kind}" if kind else str(status)


def _error_kind(body: Any) -> str | None:
    """The error's name as each API gives it: OpenAI's `error.code` (`rate_limit_exceeded`; a
    number is no name), Gemini's `error.status` (`UNAVAILABLE`; a streamed Gemini error comes as
    a one-item list), Anthropic's `error.type` (`overloaded_error`)."""
    if isinstance(body, list) and body:
        body = body[0]
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return None
    for key in ("code", "status", "type"):
        value = error.get(key)
        if isinstance(value, str) and 0 < len(value) <= 60 and value.replace("_", "").isalnum() \
                and not value.isdigit():
            return value
    return None


def outage(traffic: ModelTraffic) -> str | None:
    """Why the model API ended this session, or None when the agent's last request had its
    answer: `the model API answered 529 overloaded_error 11 times; last at turn 1`. The last
    request decides, not its conversation's: a CLI's retry may differ from the request it
    retries (Claude Code re-sends a cut request changed), so it can be told apart from it. The
    turn counts the answered requests of the failed one's conversation (retries are not turns)."""
    agent = [e for e in traffic.exchanges if e.stream == "agent"]
    if not agent or api_error(agent[-1].response) is None:
        return None
    last = agent[-1].conversation
    turn = 1 + sum(1 for e in agent if e.conversation == last and api_error(e.response) is None)
    return describe(Counter(e for x in traffic.exchanges if (e := api_error(x.response))), turn)


def describe(errors: Counter[str], turn: int | None = None) -> str:
    """`the model API answered 529 overloaded_error 11 times and 500 api_error once; last at
    turn 1` from what it answered and how often."""
    def times(n: int) -> str:
        return "once" if n == 1 else "twice" if n == 2 else f"{n} times"

    said = [f"{kind} {times(n)}" for kind, n in errors.most_common()]
    listed = ", ".join(said[:-1]) + " and " + said[-1] if len(said) > 1 else said[0]
    return f"the model API answered {listed}" + (f"; last at turn {turn}" if turn is not None else "")
