"""The simulated user of a conversation case: a model given a persona, a goal and the facts it
may reveal, asked after each of the agent's turns what the user says next, or that the
conversation is over.

It is called through the official anthropic or openai SDK, as the judge is, and recorded in the
case's own cassette beside the judge's (`<case>/<stem>.user.yaml`): a re-executed conversation
gets the recorded reply for the same conversation so far, at no cost; a reply to something the
agent never said before is a miss in replay, and a live call (recorded) under `auto`.

Everything the agent said is untrusted text: it goes to the user model inside a tagged block,
and what comes back is only ever a message for the agent (never markup, a path or a command).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from aam_eval_action.model_calls import Structured
from aam_eval_action.model_calls import output_text as _output_text
from aam_eval_action.model_calls import usage_from as _usage
from aam_eval_action.session import ConversationTurn, cap
from aam_eval_action.spec import SimulatedUser

TOOL = "reply_as_user"
FORMAT = "user_reply"
TURN_CAP = 12_000
"""Longest agent message the user model is shown (its start and the cut are kept)."""
REPLY_CAP = 4_000
Stop = Literal["continue", "goal-reached", "agent-finished"]
REPLY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "stop": {"type": "string", "enum": ["continue", "goal-reached", "agent-finished"],
                 "description": "continue: answer the agent; goal-reached: what you wanted is done; "
                                "agent-finished: the agent asks you nothing and has stopped."},
        "message": {"type": "string", "description": "What you say to the agent next (empty when stopping)."},
    },
    "required": ["stop", "message"],
    "additionalProperties": False,
}
SYSTEM = (
    "You play a user talking to an AI coding agent, so that the agent can be tested. Stay in "
    "character: the persona says who you are. You want what the goal says. You know the facts "
    "listed, and reveal one only when the agent asks for it; you know nothing else, so when asked "
    "something the facts do not cover, say you have no preference. Answer the agent's last "
    "message in one short message, as this user would type it. Never do the agent's work and "
    "never mention that you are simulated. Stop instead of answering when your goal is reached "
    "(goal-reached), or when the agent's last message asks you nothing and it has stopped "
    "working (agent-finished)."
)


class UserError(Exception):
    """The user model gave no usable reply; the case becomes ERROR with this reason."""


@dataclass(frozen=True)
class UserReply:
    """What the simulated user said, or that the conversation is over."""

    stop: Stop
    message: str
    model: str
    usage: dict[str, int] = field(default_factory=dict)


def build_prompt(user: SimulatedUser, turns: list[ConversationTurn]) -> str:
    """The user model's message: persona, goal, facts and the conversation so far."""
    facts = "\n".join(f"- {f.strip()}" for f in user.facts) or "(none)"
    said = []
    for turn in turns:
        said.append("<user>\n" + turn.user.strip() + "\n</user>")
        said.append("<agent>\n" + cap(turn.output.strip(), TURN_CAP) + "\n</agent>")
    return (
        "<persona>\n" + user.persona.strip() + "\n</persona>\n\n"
        "<goal>\n" + user.goal.strip() + "\n</goal>\n\n"
        "<facts>\n" + facts + "\n</facts>\n\n"
        "<conversation>\n" + "\n".join(said) + "\n</conversation>\n\n"
        "What do you say to the agent next? Call reply_as_user."
    )


REPLY = Structured(SYSTEM, TOOL, "Say what the user says next, or stop.", FORMAT, REPLY_SCHEMA)


def request_params(provider: str, model: str, text: str) -> dict[str, Any]:
    """The request's parameters: passed to the SDK as they are, and sent as its JSON body."""
    return REPLY.params(provider, model, text)


def ask(*, provider: str, model: str, text: str, base_url: str | None, api_key: str | None,
        http_client: Any = None, max_retries: int = 4) -> UserReply:
    """Ask the user model once (the SDK retries transient errors with backoff)."""
    body = REPLY.ask(provider, model, text, base_url, api_key, http_client, max_retries)
    return reply_from_body(provider, model, body)


def reply_from_body(provider: str, model: str, body: Any) -> UserReply:
    """The reply in a response body (the SDK's parsed response, or a recorded one)."""
    if not isinstance(body, dict):
        raise UserError(f"simulated user {model} returned no JSON response")
    answered_by = str(body.get("model") or model)
    if provider == "anthropic":
        data = next((b.get("input") for b in body.get("content") or []
                     if isinstance(b, dict) and b.get("type") == "tool_use" and b.get("name") == TOOL), None)
    else:
        try:
            data = json.loads(_output_text(body))
        except json.JSONDecodeError:
            data = None
    if not isinstance(data, dict) or data.get("stop") not in ("continue", "goal-reached", "agent-finished"):
        raise UserError(f"simulated user {model} returned a malformed reply: {str(data)[:200]}")
    message = str(data.get("message") or "").strip()
    if data["stop"] == "continue" and not message:
        raise UserError(f"simulated user {model} went on with an empty message")
    return UserReply(data["stop"], message[:REPLY_CAP], answered_by, _usage(body.get("usage")))
