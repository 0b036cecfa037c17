"""The drafting model's request and answer: one structured call per skill, through the official
anthropic or openai SDK like the judge's (and recorded the same way).

The skill under test is `A`, its siblings `B`, `C`…: no skill is named, and no description is
shown, so the prompts are drafted from what each skill's body says it does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aam_eval_action.drafting.skills import SkillDoc, mask
from aam_eval_action.model_calls import Structured

MAX_TOKENS = 16_000
TOOL = "draft_cases"
FORMAT = "drafted_cases"
BODY_CAP = 12_000
"""Characters of a skill's body shown (a sibling's: half of it)."""

_PROMPT = {"type": "string", "description": "What the user sends, in their words."}
_CITES = {
    "type": "string",
    "description": "A passage of 5 to 40 words copied verbatim from the skill's body.",
}


def _items(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "array",
        "items": {
            "type": "object",
            "properties": properties,
            "required": list(properties),
            "additionalProperties": False,
        },
    }


DRAFT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "positives": _items({"prompt": _PROMPT, "cites": _CITES}),
        "near_misses": _items(
            {"sibling": {"type": "string", "description": "B, C…"}, "prompt": _PROMPT, "cites": _CITES}
        ),
        "out_of_scope": _items({"prompt": _PROMPT}),
        "tasks": _items(
            {
                "prompt": _PROMPT,
                "cites": _CITES,
                "files": _items({"path": {"type": "string"}, "content": {"type": "string"}}),
                "expected": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["contains", "files_created", "file_contains", "command"],
                    "properties": {
                        "contains": {"type": "array", "items": {"type": "string"}},
                        "files_created": {"type": "array", "items": {"type": "string"}},
                        "file_contains": _items({"path": {"type": "string"}, "text": {"type": "string"}}),
                        "command": {"type": "string", "description": "A shell check; empty for none."},
                    },
                },
                "criteria": {"type": "string", "description": "What a judge checks that the checks cannot."},
            }
        ),
    },
    "required": ["positives", "near_misses", "out_of_scope", "tasks"],
    "additionalProperties": False,
}

SYSTEM = (
    "You draft evaluation cases for an agent skill: prompts that should make an AI coding agent "
    "load the skill, near misses that belong to a neighbouring skill, and realistic tasks. You "
    "are shown the skills' instructions only: describe the situation of a user who needs what "
    "the instructions do, never the instructions themselves."
)


@dataclass(frozen=True)
class Counts:
    """How many of each kind to ask for."""

    positives: int
    near_misses: int
    """Per sibling."""
    out_of_scope: int
    tasks: int


def letters(siblings: list[SkillDoc]) -> dict[str, SkillDoc]:
    """The siblings by the letter the model knows them by: B, C, …"""
    return {chr(ord("B") + i): doc for i, doc in enumerate(siblings)}


def build_text(skill: SkillDoc, siblings: list[SkillDoc], counts: Counts) -> str:
    """The drafting request's user message."""
    named = letters(siblings)
    every = (skill, *siblings)
    parts = ['<skill id="A" role="under test">\n' + _shown(skill, every, BODY_CAP) + "\n</skill>"]
    parts += [
        f'<skill id="{letter}" role="sibling">\n' + _shown(doc, every, BODY_CAP // 2) + "\n</skill>"
        for letter, doc in named.items()
    ]
    asks = [
        f"- positives: {counts.positives} requests a user would send that skill A should handle. Make "
        "them realistic: concrete file names and paths, some backstory, a mix of short and long. Make "
        "them substantive: a one-step request does not need a skill.",
        f"- near_misses: {counts.near_misses} per sibling ({', '.join(named) or 'none'}): requests that "
        "share words with skill A but belong to that sibling; `sibling` is its letter."
        if named
        else "- near_misses: none (skill A has no sibling).",
        f"- out_of_scope: {counts.out_of_scope} requests a user of this repository might send that no "
        "skill shown handles.",
        f"- tasks: {counts.tasks} realistic tasks for skill A, each with the input files it needs "
        "(`path` relative to the workspace, `content` in full), 2 to 4 deterministic checks of its "
        "result (`contains`: text the final answer includes; `files_created`; `file_contains`: text a "
        "file must hold; `command`: a shell command that exits 0 on success, or empty) and `criteria` "
        "for a judge, for what the checks cannot see.",
        "Each positive, near miss and task cites, in `cites`, the passage of its skill's body it was "
        "drafted from, copied verbatim. Do not reuse a skill's own wording for what it is for, and "
        "do not name skill A.",
    ]
    return "\n\n".join(parts) + "\n\nDraft:\n" + "\n".join(asks)


def _shown(doc: SkillDoc, every: tuple[SkillDoc, ...], cap: int) -> str:
    """A skill's body as the model sees it: every skill's name masked, capped."""
    body = doc.body
    for other in every:
        if other is not doc:
            body = mask(body, other.masks, "another skill")
    return body[:cap]


DRAFT = Structured(SYSTEM, TOOL, "Record the drafted cases.", FORMAT, DRAFT_SCHEMA, max_tokens=MAX_TOKENS)
"""The drafting request (`model_calls.py`)."""


def request_params(provider: str, model: str, text: str) -> dict[str, Any]:
    """The drafting request's parameters: passed to the SDK as they are, and sent as its body."""
    return DRAFT.params(provider, model, text)


class DraftRefused(Exception):
    """The model's answer cannot be used at all; nothing is written for that skill."""


def answer_from_body(provider: str, body: Any) -> dict[str, Any]:
    """The drafted object in a response body (the SDK's parsed response, or a recorded one)."""
    if not isinstance(body, dict):
        raise DraftRefused("the response is not a JSON object")
    data = DRAFT.answer(provider, body)
    if data is None:
        raise DraftRefused(f"the model did not call {TOOL}" if provider == "anthropic"
                           else "the answer is not JSON")
    if not isinstance(data, dict):
        raise DraftRefused("the answer is not a JSON object")
    missing = [k for k in DRAFT_SCHEMA["required"] if not isinstance(data.get(k), list)]
    if missing:
        raise DraftRefused(f"the answer has no list {', '.join(missing)}")
    return data
