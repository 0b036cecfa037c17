"""A conversation's user turns in a recorded session, for the exports.

A conversation case is one agent session carried on turn by turn (`Session.turns`): what the
user said each turn, who said it (the case or the simulated user), the agent's answer and how
many tool calls it made then. Its model traffic is one main conversation across all the turns.

Each turn's tool calls are the next `calls` of `Session.tool_calls`. Each turn's model answers
end with the agent's answer: the first answer that calls no tool (and starts no sub-agent),
or, when one of those carries the turn's recorded answer text, that one (a hook can make the
agent go on after an answer). The last turn takes every answer left.
"""

from __future__ import annotations

from aam_eval_action.render.transcript import Turn
from aam_eval_action.session import ConversationTurn, Session, ToolCall

COMPARED = 2000
"""How much of an answer's text (whitespace folded) tells it is the turn's recorded answer."""


def call_slices(session: Session) -> list[list[ToolCall]]:
    """Each conversation turn's tool calls (the last turn keeps any the counts leave out)."""
    slices: list[list[ToolCall]] = []
    start = 0
    for turn in session.turns:
        slices.append(session.tool_calls[start:start + max(turn.calls, 0)])
        start += max(turn.calls, 0)
    if slices and start < len(session.tool_calls):
        slices[-1] = slices[-1] + session.tool_calls[start:]
    return slices


def by_turn(answers: list[Turn], turns: list[ConversationTurn]) -> list[list[Turn]]:
    """The model answers of each conversation turn, in order (a turn may have none)."""
    groups: list[list[Turn]] = []
    at = 0
    for number, turn in enumerate(turns, 1):
        if number == len(turns):
            groups.append(answers[at:])
            break
        ends = [j for j in range(at, len(answers)) if _final(answers[j])]
        said = _folded(turn.output)
        end = next((j for j in ends if said and _folded(_text(answers[j])) == said),
                   ends[0] if ends else len(answers) - 1)
        groups.append(answers[at:end + 1])
        at = end + 1
    return groups


def _final(answer: Turn) -> bool:
    return not answer.get("calls") and not answer.get("sub")


def _text(answer: Turn) -> str:
    return "\n\n".join(answer.get("text") or [])


def _folded(text: str) -> str:
    return " ".join(text.split())[:COMPARED]
