"""Model traffic's stored format: the constants of normalisation and the models a cassette's
`traffic:` holds (read and written by `replay/traffic.py`)."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

TRAFFIC_VERSION = 1
Provider = Literal["anthropic-messages", "openai-responses", "gemini-generate-content"]
Stream = Literal["agent", "side", "count_tokens", "other"]
SHARED = "$shared"
HISTORY = "$history"
VALUE_WIDTH = 160
CALL_WIDTH = 160
SHARE_MIN = 1024
"""Text blocks at least this long are stored once in the shared table."""
REMINDER_SHARE_MIN = 256
"""The CLI's own `<system-reminder>` blocks (environment, tool listings, attribution, project
instructions) are the same across cases from this length on: stored once too."""
# Keys that only identify a run (user, session, device, cache key); dropped from requests.
RUN_ID_KEYS = ("metadata", "client_metadata", "prompt_cache_key")
# Stable within one run only: the moving cache marker and the ids of Responses input items.
VOLATILE_KEYS = ("cache_control",)
VOLATILE_TEXT = (
    (re.compile(r"(Today's date is )\d{4}-\d{2}-\d{2}"), r"\1$DATE"),
    # Gemini CLI: the date in the user's locale, a shell's process group, its install prefix.
    (re.compile(r"(Today's date is ).*?( \(formatted according to the user's locale\))"), r"\1$DATE\2"),
    (re.compile(r"(Process Group PGID: )\d+"), r"\1$PGID"),
    (re.compile(r"(<location>)[^<]*/@google/gemini-cli/"), r"\1$GEMINI_CLI/"),
    (re.compile(r"(<current_date>)[^<]*(</current_date>)"), r"\1$DATE\2"),
    (re.compile(r"(<current_datetime>)[^<]*(</current_datetime>)"), r"\1$DATETIME\2"),  # Copilot
    (re.compile(r"^(Chunk ID: )\w+$", re.M), r"\1$ID"),
    (re.compile(r"^(Wall time: )[\d.]+( seconds)$", re.M), r"\1$SECONDS\2"),
    # The machine, not the package: a recording made on a laptop re-executes on a CI runner.
    (re.compile(r"^( - OS Version: ).*$", re.M), r"\1$OS"),
    (re.compile(r"(<timezone>)[^<]*(</timezone>)"), r"\1$TZ\2"),
    # Claude Code's background-task notifications: how long a sub-agent took, and its output
    # file under a temp folder named after the user id.
    (re.compile(r"(<duration_ms>)\d+(</duration_ms>)"), r"\1$MS\2"),
    (re.compile(r"^(duration_ms: )\d+$", re.M), r"\1$MS"),
    (re.compile(r"(duration_ms: )\d+(</usage>)"), r"\1$MS\2"),  # 2.1.197: `<usage>… duration_ms: 342</usage>`
    (re.compile(r"/claude-\d+/"), "/claude-$UID/"),
    # Copilot: how long a background agent has run, in `read_agent`'s status line.
    (re.compile(r"(, elapsed: )\d+s(, total_turns: )"), r"\1$SECONDS\2"),
    # Codex: the random nickname its spawn_agent result gives a sub-agent (`"nickname":"Nash"`).
    (re.compile(r'("nickname":")[^"\\]*(")'), r"\1$NICK\2"),
)
MINTED = (
    # Claude Code: a sub-agent's (background task's) id, in the Agent tool result
    # (`agentId: a66f3e8a7c0288ffb (… SendMessage with to: 'a66f…')`) and its notifications.
    ("AGENT", re.compile(r"\bagentId: (\w+)")),
    ("AGENT", re.compile(r"<task-id>(\w+)</task-id>")),
    ("AGENT", re.compile(r"\bResuming agent (\w+)")),  # SendMessage's answer: a short form
    ("REF", re.compile(r'"ref":"(\w+)"')),  # ... and the pin it returns
    # A shell command run in the background: its task id (then in its output path, and in the
    # model's later calls to read or stop it).
    ("TASK", re.compile(r"running in background with ID: (\w+)")),
    # Gemini CLI: a tool call's id made from the clock when the model gave none
    # (`run_shell_command_1763891234567_0`).
    ("CALL", re.compile(r"\b([a-z][a-z_]*_1\d{12}_\d+)\b")),
    # Session ids and other UUIDs a CLI makes up per run (in task output paths, for one).
    ("UUID", re.compile(r"\b([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b")),
)
"""Ids a CLI makes up per run and shows the model; each value is replaced everywhere by a
numbered placeholder (`$AGENT1`) in order of first sight."""
MINTED_PLACEHOLDER = re.compile(r"\$(AGENT|CALL|REF|TASK|UUID)(\d+)(?!\d)")
ID_IN_TEXT = re.compile(r"\b[A-Za-z]+_[A-Za-z0-9-]{6,}\b")
GIT_STATUS = re.compile(r"gitStatus:.*", re.S)
SKILL_LISTING = re.compile(r"(<available_skills>)(.*?)(</available_skills>)", re.S)
SKILL_ENTRY = re.compile(r"<skill>.*?</skill>", re.S)
SKILL_NAMES = re.compile(r"(\(Available: )('[^'()]*'(?:, '[^'()]*')*)(\))")
"""Gemini CLI and Copilot list skills as `<skill>` entries (and Gemini CLI's `activate_skill`
names them: `(Available: 'a', 'b')`) in an order that varies between runs (they load
concurrently): compared and stored sorted."""
SHA = re.compile(r"\b[0-9a-f]{7,40}\b")
TOOL_CALL_TYPES = ("function_call", "custom_tool_call", "local_shell_call")
TOOL_RESULT_TYPES = ("tool_result", "function_call_output", "custom_tool_call_output")
PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.M)
"""The files an `apply_patch` patch touches (Codex's and Copilot's freeform patch format)."""
ID_KEYS = ("id", "call_id", "item_id", "tool_use_id")
ID_SHAPE = re.compile(r"^([A-Za-z]+)_[\w-]{6,}$")
STABLE_ID = re.compile(r"^([A-Za-z]+)_aam(\d+)$")


# --- the stored format ---------------------------------------------------------------------


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SseEvent(_Model):
    """One server-sent event of a streamed answer."""

    event: str | None = None
    """The SSE `event:` name; None when it is the same as `data.type` (or there was none)."""
    data: Any = None
    """The `data:` payload, parsed from JSON (kept as text when it is not JSON)."""


class RecordedResponse(_Model):
    """What the model API answered to one request."""

    status: int
    """HTTP status."""
    events: list[SseEvent] | None = None
    """The SSE events of a streamed answer, deltas merged; None for a plain JSON answer."""
    body: Any = None
    """The JSON body of a non-streamed answer (or an error)."""
    cut: bool | None = None
    """True when the stream ended before the answer did (the API cut it mid-answer); None else."""


class Exchange(_Model):
    """One request and its answer, in the order the CLI sent them."""

    stream: Stream
    """Which stream the request belongs to (see the module docstring)."""
    path: str
    """The request path, e.g. `/v1/messages?beta=true` or `/v1/responses`."""
    request: dict[str, Any]
    """The normalised request body; `$shared` refs point into the shared table, `$history`
    counts the messages carried over from the previous request of the same stream."""
    response: RecordedResponse
    """The normalised answer."""
    live: bool = False
    """True when this exchange went to the upstream after a divergence (continue-live)."""
    after: int | None = None
    """How many requests had reached the model when this answer was handed to the CLI, when
    that is more than the exchanges before it (concurrent conversations: a later request of
    another conversation came first); replay hands it out only after as many. None in a
    sequential session."""
    gap_ms: int | None = None
    """Milliseconds between the answer before it and this one, when they belong to different
    conversations of a session with sub-agents (replay keeps at least that pause, up to 2 s)."""
    conversation: str | None = None
    """The conversation it belongs to (`main`, a sub-agent's, `side`…; see `conversations`);
    `$history` then counts from the previous request of that conversation. None in traffic
    recorded before conversations were kept: found again from the requests when replayed."""


class Conversation(_Model):
    """One conversation of a session: the main agent's, a sub-agent's, or side calls."""

    id: str
    """`main`; a sub-agent's type (`reviewer`, `reviewer-2` for a second one); `side`…"""
    stream: Stream = "agent"
    """The stream of its requests."""
    agent: str | None = None
    """For a sub-agent: the agent type its starting call named."""
    description: str | None = None
    """For a sub-agent: the description its starting call gave."""
    parent: str | None = None
    """For a sub-agent: the conversation whose tool call started it."""
    turn: int | None = None
    """For a sub-agent: the parent's model turn that started it."""


class ModelTraffic(_Model):
    """The model traffic of one agent session, stored in the agent cassette."""

    version: int = TRAFFIC_VERSION
    """Traffic format version."""
    cli: str
    """The CLI that sent it: `claude` or `codex`."""
    cli_version: str | None = None
    """The CLI's version; a different one on PATH cannot re-execute this recording."""
    provider: Provider
    """The wire API: Anthropic Messages or OpenAI Responses."""
    shared: dict[str, Any]
    """Tool schemas and long prompt blocks, stored once, keyed by name and a short hash
    (empty when they live in a common store: see `detach_shared`)."""
    exchanges: list[Exchange]
    """Every request and answer, in the order the answers were handed to the CLI (the order
    of the requests within each conversation)."""
    conversations: list[Conversation] = Field(default_factory=list)
    """The session's conversations, main first, then sub-agents in the order they were started
    (empty in traffic recorded before conversations were kept)."""


class TrafficError(ValueError):
    """Stored traffic that cannot be used; the message says why."""
