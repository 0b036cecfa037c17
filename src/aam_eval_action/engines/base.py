"""The interface every engine implements."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from aam_eval_action.engines.registry import engine_info
from aam_eval_action.package import PackageLayout
from aam_eval_action.sandbox.plan import Confinement
from aam_eval_action.session import Session
from aam_eval_action.spec import Execution, Sandbox


@dataclass(frozen=True)
class AgentRun:
    """Everything one agent session needs, prepared by the runner."""

    prompt: str
    """The case's prompt."""
    model: str
    """The model to pass to the CLI (always passed explicitly)."""
    workspace: Path
    """The case's fresh workspace; the CLI's working directory."""
    home: Path
    """A fresh, empty HOME for this session (outside the workspace)."""
    env: dict[str, str]
    """Extra environment: eval-config `env`, API keys and base URLs (`*_BASE_URL`)."""
    runner_env: Mapping[str, str]
    """The runner's environment as the run settings read it (the few variables a CLI needs
    come from here, never from this process's environment)."""
    timeout: float
    """Seconds before the whole process group is killed."""
    sandbox: Sandbox = field(default_factory=Sandbox)
    """Network and writable-path settings to enforce with the engine's own mechanisms."""
    confine: Confinement | None = None
    """The OS sandbox the CLI process runs in (everything it starts inherits it); None: none."""
    execution: Execution | None = None
    """A `claude plugin eval` case's execution fields (turn limit, tools, system prompt text),
    for the engines that honour them."""
    add_dirs: tuple[Path, ...] = ()
    """Folders the session may read besides its workspace (Claude Code's `--add-dir`): a
    `claude plugin eval` case's `context.add_dirs`, as copies beside the workspace."""
    keep_trace: bool = False
    """Keep every event the CLI printed in the session (`Session.trace`): a `claude plugin eval`
    grader reads it."""
    plugin_dirs: tuple[Path, ...] = ()
    """Plugins the CLI loads as plugins (Claude Code's `--plugin-dir`), read-only, outside the
    workspace."""
    resume: str | None = None
    """The session id (`Session.session_id`) of this conversation's previous turn, run in the same
    workspace and HOME: the CLI continues that session with `prompt` as the next user message
    (how is the engine's own business); None: a new session."""


class Engine(Protocol):
    """An agent CLI driven headless."""

    name: str
    """Config name (a key of `registry.ENGINES`)."""
    provider: str
    """Model provider of its default model (a key of `providers.PROVIDERS`)."""
    default_model: str
    """Model used when neither eval-config nor `--model` sets one."""

    def provider_for(self, model: str) -> str:
        """The provider that serves `model` on this engine (`provider` unless the CLI can be
        pointed at the model's own)."""
        ...

    def install(self, package: PackageLayout, workspace: Path, target: str | None) -> None:
        """Install the package's files that reach the agent into the workspace, as this CLI reads them."""
        ...

    def add_mcp_servers(self, workspace: Path, servers: dict[str, Any]) -> None:
        """Add MCP servers (name → `{command, args}`) where this CLI reads them in the workspace."""
        ...

    def run(self, run: AgentRun) -> Session:
        """Run one headless session and parse its event stream (files are diffed by the runner)."""
        ...

    def available(self) -> str | None:
        """None when the CLI can run here, else why not (for skips and clear errors)."""
        ...


def get_engine(name: str) -> Engine:
    """The adapter for a config name (imported only when a live session needs it)."""
    module, _, cls = engine_info(name).adapter.partition(":")
    engine: Engine = getattr(importlib.import_module(module), cls)()
    return engine
