"""What one agent session produced: the record that grading needs, live or replayed."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

STDERR_CAP = 8 * 1024
BYTES_KEPT_MAX = 5 * 1024 * 1024
TOOL_RESULT_CAP = 4 * 1024


class Model(BaseModel):
    """Base for the session models: unknown keys are refused so typos in cassettes show."""

    model_config = ConfigDict(extra="forbid")


class SelfCheck(Model):
    """A recording re-executed once against its own traffic, right after it was made."""

    clean: bool
    """Every request came again as recorded (once the volatile values learnt are masked)."""
    runs: int = 0
    """Re-executions made (1, or 2 when masks were learnt and then confirmed)."""
    learnt: list[str] = Field(default_factory=list)
    """The volatile values it learnt, in words (`a number after `duration_ms: ``)."""
    unstable: str | None = None
    """When not clean: the request that still differed, in words, with both values."""
    skipped: str | None = None
    """Why it was not made (a recording that cannot be re-executed)."""
    same_as: int | None = None
    """Not re-executed itself: its recording is the same as this attempt's (1-based), request
    for request and answer for answer under the masks, so that attempt's check stands for it."""


class ToolCall(Model):
    """One tool call the agent made, in the order it made them."""

    name: str
    """Tool name as the engine reports it (`Write`, `Bash`, `Skill`, `command_execution`...)."""
    input: dict[str, Any] = Field(default_factory=dict)
    """The arguments the agent passed."""
    result: str | None = None
    """The tool's result text, capped at 4 KiB."""
    is_error: bool = False
    """Whether the tool reported an error (a hook block shows as one)."""


class FileChange(Model):
    """A file the agent created, modified or deleted in the workspace."""

    path: str
    """Workspace-relative POSIX path."""
    status: Literal["created", "modified", "deleted"]
    """What happened to it during the session."""
    sha256: str | None = None
    """Hash of the final content (None when deleted)."""
    size: int = 0
    """Final size in bytes."""
    text: str | None = None
    """Final content when it is UTF-8 text of at most 64 KiB; otherwise only hash and size."""
    data: str | None = Field(default=None, max_length=BYTES_KEPT_MAX * 4 // 3 + 4,
                             pattern=r"^[A-Za-z0-9+/]*={0,2}$")
    """Final content, base64, of a file a grader looks at that is not text (an image shown to
    the judge, or the bytes its explanation quotes), up to 5 MiB; otherwise None."""

    @field_validator("path")
    @classmethod
    def _inside_workspace(cls, value: str) -> str:
        # Cassettes come from pull requests: a path must not reach outside the workspace.
        return workspace_path(value)


class Usage(Model):
    """Token counts the engine reported for the whole session."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0


class ConversationTurn(Model):
    """One turn of a conversation: what the user said and how the agent answered."""

    user: str
    """The user's message (the case's prompt, a scripted follow-up or the simulated user's)."""
    by: Literal["case", "simulated-user"] = "case"
    """Who wrote the message: the case file, or the simulated user's model."""
    output: str = ""
    """The agent's answer: its last text of the turn."""
    calls: int = 0
    """Tool calls the agent made in this turn (they follow the earlier turns' in `tool_calls`)."""
    duration_seconds: float = 0.0
    """Wall time of this turn's CLI process."""
    is_error: bool = False
    """Whether the CLI reported this turn as failed (the conversation stops there)."""


class Session(Model):
    """Everything an agent session produced that grading needs."""

    engine: str
    """Engine name as configured (`claude-code`, `codex`)."""
    runtime_version: str | None = None
    """The CLI's own version, as it reported it."""
    model: str | None = None
    """The model the agent actually used."""
    served_model: str | None = None
    """The model the API said it served, where it differs from `model` (live sessions)."""
    model_provider: str
    """`anthropic` or `openai`."""
    session_id: str | None = None
    """The engine's session or thread id."""
    output: str = ""
    """The agent's final answer text."""
    stderr: str = ""
    """Standard error, capped at 8 KiB."""
    exit_code: int | None = None
    """The CLI's exit status (None when it was killed)."""
    is_error: bool = False
    """Whether the engine reported the session as failed (API error, crash)."""
    timed_out: bool = False
    """Whether the session was killed at the case timeout."""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """Every tool call, in order."""
    confinement: str | None = None
    """How the OS confined the session: `writes: landlock; network: port-only` (additive)."""
    hook_blocked: bool = False
    """Whether a hook blocked one of the agent's tool calls."""
    hook_evidence: list[str] = Field(default_factory=list)
    """What showed the block (the tool result or stderr line), for the report."""
    files: list[FileChange] = Field(default_factory=list)
    """Files created, modified or deleted in the workspace."""
    trace: list[str] | None = None
    """Every JSON event the CLI printed (Claude Code's stream-json), one compact JSON line each
    (kept as text: a recording keeps it byte for byte), only for a `claude plugin eval` case
    whose graders read it (the `trace` target, `baseline`) (additive)."""
    mock_calls: list[str] | None = None
    """A `claude plugin eval` case's calls to its mocked MCP tools, in order, each one compact
    JSON object `{name, server, tool, input, output, verdict}` (`ok`, `tool_error`, or `abort`:
    the run scores 0); None when no mock was active (additive)."""
    staged: list[str] = Field(default_factory=list)
    """Files a `claude plugin eval` case's scaffold script made before the session: in `files`,
    but there before the session started (additive)."""
    usage: Usage | None = None
    """Token usage, when the engine reports it."""
    cost_usd: float | None = None
    """Cost in USD, when the engine reports it."""
    num_turns: int | None = None
    """Model turns, when the engine reports it."""
    duration_seconds: float = 0.0
    """Wall time of the CLI process."""
    error: str | None = None
    """Why the session failed, in one line, when it did."""
    turns: list[ConversationTurn] = Field(default_factory=list)
    """A conversation's turns, in order (empty for a one-prompt case) (additive)."""
    stopped: Literal["turns-done", "goal-reached", "agent-finished", "max-turns", "error"] | None = None
    """Why a conversation ended: its scripted turns were all sent, the simulated user's goal was
    reached, the agent finished without asking anything, `max-turns` was hit, or a turn failed
    (additive)."""


def workspace_path(value: str) -> str:
    """A workspace-relative POSIX path, refused when absolute, with `..`, or not a plain path."""
    if not value or "\x00" in value:
        raise ValueError(f"{value!r} is not a workspace-relative POSIX path")
    if value.startswith("/"):
        raise ValueError(f"{value!r} is absolute; a recorded file must be inside the workspace")
    if ".." in value.split("/"):
        raise ValueError(f"{value!r} escapes the workspace with '..'")
    return value


def cap(text: str, limit: int) -> str:
    """Cut text to at most `limit` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} more characters cut]"
