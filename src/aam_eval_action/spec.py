"""The file formats a package author writes: package manifest, eval-config and eval cases."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from aam_eval_action.engines.registry import ENGINE_NAMES, RESERVED_NAMES
from aam_eval_action.modes import Mode, Rerun

NAME_RE = re.compile(r"^[a-z0-9-]{1,64}$")
TARGET_RE = re.compile(r"^(skill|hook|agent):[A-Za-z0-9._-]+$")


def _relative_path(value: str) -> str:
    """A path that stays inside its root: relative, no `..`, no backslashes."""
    if not value or value.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", value):
        raise ValueError(f"{value!r} must be a relative path inside its root, not absolute")
    parts = value.replace("\\", "/").split("/")
    if ".." in parts:
        raise ValueError(f"{value!r} escapes its root with '..'; use a path inside it")
    return "/".join(p for p in parts if p not in ("", "."))


RelPath = Annotated[str, AfterValidator(_relative_path)]


class Strict(BaseModel):
    """Base for author-written formats: unknown keys are errors, hyphenated keys as written."""

    model_config = ConfigDict(
        extra="forbid", populate_by_name=False, frozen=True, use_attribute_docstrings=True
    )


class PackageManifest(BaseModel):
    """`package.agent.json`: only the fields this tool reads; the rest belongs to other tools."""

    model_config = ConfigDict(extra="allow", frozen=True, use_attribute_docstrings=True)

    name: str
    """Package name, e.g. `@my-org/code-review`."""
    version: str
    """Package version, e.g. `1.0.0`."""


class Sandbox(Strict):
    """`sandbox`: what the agent may reach and write."""

    network: bool = False
    """Allow network access in the sandbox."""
    writable_paths: list[RelPath] | None = Field(default=None, alias="writable-paths")
    """Workspace directories the agent may write to; None means the whole workspace."""


class EvalConfig(Strict):
    """`evals/eval-config.json`."""

    version: Literal[1]
    """Eval config format version. Currently `1`."""
    engine: str
    """Agent runtime: `claude-code` or `codex` (`copilot`, `cursor` are reserved)."""
    timeout: float = Field(default=120, gt=0)
    """Max seconds per eval case."""
    judge: str | None = None
    """Model used for the LLM judge; defaults to the agent's model."""
    model: str | None = None
    """Model the agent runs with; defaults to the engine's default (additive field)."""
    sandbox: Sandbox = Field(default_factory=Sandbox)
    """What the agent may reach and write."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment variables injected into the sandbox; `${VAR}` takes VAR from the runner's environment."""
    secret_env: list[str] = Field(default_factory=list, alias="secret-env")
    """Names in `env` whose values are secret: never written anywhere (additive field)."""
    mode: Mode = "auto"
    """Default cassette mode: replay, auto, record or live (additive field)."""
    cassettes: str = "cassettes"
    """Cassette directory, relative to `evals/` (additive field)."""
    jobs: int = Field(default=1, ge=1, le=64)
    """Cases run concurrently (additive field)."""
    repeat: int = Field(default=1, ge=1, le=100)
    """Attempts per case in live modes (additive field)."""
    min_pass: int | None = Field(default=None, ge=1, alias="min-pass")
    """Attempts that must pass for the case to pass; default all (additive field)."""
    rerun: Rerun = "auto"
    """Replay by re-executing the real CLI against the recorded model traffic: `auto` when an
    input the agent runs or reads changed, `always`, or `never` (snapshot only) (additive field)."""
    rerun_ignore: list[str] = Field(default_factory=list, alias="rerun-ignore")
    """Regexes for honestly volatile text (timestamps, temp names) ignored when a re-executed
    request is compared with the recording (additive field)."""

    @field_validator("rerun_ignore")
    @classmethod
    def _valid_patterns(cls, value: list[str]) -> list[str]:
        for pattern in value:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"{pattern!r} is not a valid regular expression: {exc}") from None
        return value

    @field_validator("engine")
    @classmethod
    def _known_engine(cls, value: str) -> str:
        if value not in ENGINE_NAMES + RESERVED_NAMES:
            raise ValueError(
                f"unknown engine {value!r}; use one of: {', '.join(ENGINE_NAMES)}"
            )
        return value


class CaseInput(Strict):
    """`input`: what the agent is given."""

    prompt: str = Field(min_length=1)
    """Prompt sent to the agent."""
    files: list[RelPath] = Field(default_factory=list)
    """Fixture files copied into the sandbox (relative to `evals/`)."""
    workspace_files: list[RelPath] = Field(default_factory=list, alias="workspace-files")
    """Files pre-created in the workspace (content from `evals/fixtures/<path>` when it exists)."""


class Expected(Strict):
    """`expected`: the deterministic checks, run before the judge."""

    contains: list[str] = Field(default_factory=list)
    """Substrings that must appear in the agent output."""
    not_contains: list[str] = Field(default_factory=list, alias="not-contains")
    """Substrings that must not appear."""
    files_created: list[RelPath] = Field(default_factory=list, alias="files-created")
    """Files the agent must create in the workspace."""
    agent_blocked: bool | None = Field(default=None, alias="agent-blocked")
    """If set, whether a hook must (true) or must not (false) have blocked the agent."""


class JudgeSpec(Strict):
    """`judge`: the LLM judge's instructions."""

    criteria: str = Field(min_length=1)
    """Natural-language pass/fail criteria."""


def _case_name(value: str) -> str:
    if not NAME_RE.match(value):
        raise ValueError(
            f"{value!r} is not a valid case name: use 1-64 characters of a-z, 0-9 and '-'"
        )
    return value


def _target(value: str) -> str:
    if not TARGET_RE.match(value):
        raise ValueError(
            f"{value!r} is not a valid target: use skill:<name>, hook:<event> or agent:<name>"
        )
    return value


class Case(Strict):
    """One eval case, from `evals/cases/*.yaml`."""

    name: Annotated[str, AfterValidator(_case_name)]
    """Case identifier: `[a-z0-9-]`, max 64 characters."""
    description: str | None = None
    """Human-readable description."""
    target: Annotated[str, AfterValidator(_target)] | None = None
    """What is evaluated: `skill:<name>`, `hook:<event>` or `agent:<name>`."""
    input: CaseInput
    """What the agent is given."""
    expected: Expected = Field(default_factory=Expected)
    """Deterministic checks."""
    judge: JudgeSpec
    """LLM judge criteria."""
