"""The scripted model server's constants and its request and reply records."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DEFAULT_API_KEY = "sk-scripted-model-server"
"""The key the server accepts unless it is given another one."""
JUDGE_TOOL = "record_verdict"
JUDGE_FORMAT = "verdict"
DRAFT_TOOL = "draft_cases"
DRAFT_FORMAT = "drafted_cases"
PROPOSE_TOOL = "propose_descriptions"
PROPOSE_FORMAT = "proposed_descriptions"
"""`aam-eval tune`'s proposer request: the tool (Anthropic) or JSON format (OpenAI) it asks for."""
USER_TOOL = "reply_as_user"
USER_FORMAT = "user_reply"
"""`aam-eval init`'s drafting request: the tool (Anthropic) or JSON format (OpenAI) it asks for."""
CREATED_AT = 1_700_000_000
# Text blocks the CLIs add to the user's turn; the prompt is what is left.
INJECTED_PREFIXES = (
    "<system-reminder>",
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<skills_instructions>",
    "<permissions instructions>",
)
GEMINI_INJECTED_PREFIXES = ("<session_context>", "<hook_context>")
"""Gemini CLI's own text parts in the user's turn (its environment: date, OS, the workspace tree)."""
GEMINI_COMPLETE = "complete_task"
"""The tool a Gemini CLI sub-agent must call to hand its answer back (a text answer is an error)."""
CODEX_SHELL_TOOLS = ("exec_command", "shell_command", "shell")
APPLY_PATCH = "apply_patch"
CUSTOM_INPUT = "input"
"""A call to a custom (freeform) Responses tool, such as `apply_patch`, carries its text under this key."""
CODEX_AGENT_TOOLS = "multi_agent_v1"
"""The namespace tool through which Codex starts sub-agents (its `spawn_agent` takes a `message`)."""
CODEX_SPAWN = "spawn_agent"
CODEX_WAIT = "wait_agent"
CODEX_WAIT_MS = 300_000
"""How long one `wait_agent` call waits (it returns as soon as one of its targets finishes)."""
HOLD_MAX_SECONDS = 60.0
HOLD_AFTER_SECONDS = 0.3
"""How long an answer waits at most for the sub-agents it waits on, then after their last answer."""
NAMESPACE_SEP = "."
"""Between a namespace and a tool name in a call's name (`multi_agent_v1.spawn_agent`): function
names cannot contain it, and a Responses answer sends the two apart (`namespace`, `name`)."""


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received, for assertions."""

    path: str
    headers: dict[str, str]
    """Header names in lower case."""
    body: dict[str, Any]


Call = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class Reply:
    """What to answer, independent of the wire format."""

    text: str = ""
    calls: tuple[Call, ...] = ()
    """Tool calls (name, input), all in one answer."""
    status: int = 200
    delay: float = 0.0
    hold: tuple[str, ...] = ()
    """Codex sub-agents (thread ids) that must have had their last answer before this one."""

    @property
    def tool(self) -> str | None:
        return self.calls[0][0] if self.calls else None


TOOL_SEARCH = "ToolSearch"


RESPONSES_SEARCH = "tool_search"
