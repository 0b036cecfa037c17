"""GitHub Copilot CLI (`copilot -p`): install a package the way Copilot reads it, run it offline
against a model provider of our own, parse its JSONL events.

Copilot runs with `COPILOT_OFFLINE=true` (no GitHub sign-in, no calls home) and a bring-your-own-
key provider: Anthropic Messages at the run's `ANTHROPIC_BASE_URL` (the recording or replay
proxy) for a Claude model, the OpenAI Responses API at its `OPENAI_BASE_URL` for a GPT model.
Its first start unpacks about 235 MB into `$XDG_CACHE_HOME`, which is shared between runs
(under the runner's own cache folder).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aam_eval_action.engines.base import AgentRun
from aam_eval_action.engines.common import (
    RegisteredEngine,
    base_env,
    block,
    cli_version,
    direct_loopback,
    events,
    finish,
    mapped_tools,
    new_session,
    one_line,
    runner_cache,
    runner_env,
    usage_since,
)
from aam_eval_action.engines.install import (
    append_text,
    chosen_hooks,
    copy_package,
    copy_skills,
    hooks_config,
    instructions,
    mcp_servers,
    merge_json,
    write_agents,
)
from aam_eval_action.engines.process import run_process
from aam_eval_action.hooks import rewrite_root
from aam_eval_action.package import PackageLayout
from aam_eval_action.providers import PROVIDERS
from aam_eval_action.session import TOOL_RESULT_CAP, Session, ToolCall, Usage, cap

CLI = "copilot"
HOOK_DENIED = re.compile(r"^Denied by \w+ hook(: | from )")
"""How Copilot words the tool result of a call a hook refused: `Denied by preToolUse hook: R`, or
`Denied by preToolUse hook from "repo settings" (hook errored)` when the hook failed (Copilot
refuses the call then too; a Claude-format hook gets an `apply_patch` call's patch as a string
`tool_input`, which a hook expecting an object may fail on)."""


COPILOT_NAMES: dict[str, tuple[str, ...]] = {
    "Bash": ("bash", "read_bash", "write_bash", "stop_bash", "list_bash"), "Read": ("view",),
    "Write": ("create", "apply_patch"), "Edit": ("edit", "apply_patch"), "MultiEdit": ("edit", "apply_patch"),
    "Grep": ("grep",), "Glob": ("glob",), "Skill": ("skill",), "WebFetch": ("web_fetch",),
    "Agent": ("task", "read_agent", "write_agent", "list_agents"),
    "Task": ("task", "read_agent", "write_agent", "list_agents"),
}
"""Claude Code's tools → Copilot CLI's (a tool and its helpers: `bash` and `read_bash`…; a GPT
model's `apply_patch` for Write and Edit)."""


def _mcp_name(server: str, tool: str) -> str:
    return f"{server}-{tool}"


class Copilot(RegisteredEngine):
    """GitHub's Copilot CLI, driven headless with `copilot -p`."""

    name = "copilot"

    def install(self, package: PackageLayout, workspace: Path, target: str | None) -> None:
        """Skills into `.agents/skills/`; its own `.agent.md` agents into `.github/agents/`, others
        into `.claude/agents/` (Copilot reads both); rules and AGENTS.md into AGENTS.md; hooks in
        its own dialect into `.github/hooks/`, else in Claude's (which it reads too) into
        `.claude/settings.json`; MCP servers into `.mcp.json`."""
        copy_skills(package, target, workspace / ".agents" / "skills")
        root = copy_package(package, target, workspace)
        own = [s for s in chosen_hooks(package, ("copilot", "claude")) if s.dialect == "copilot"]
        for i, source in enumerate(own):
            hooks = {"version": 1, "hooks": rewrite_root(source.events, root)}
            merge_json(workspace / ".github" / "hooks" / f"aam-{i}.json", hooks)
        hooks = {} if own else hooks_config(package, root, "claude", reads=("copilot", "claude"))
        if hooks:
            merge_json(workspace / ".claude" / "settings.json", {"hooks": hooks})
        self.add_mcp_servers(workspace, mcp_servers(package, root))
        append_text(workspace / "AGENTS.md", instructions(package))
        write_agents(package, workspace / ".github" / "agents", keep=("copilot",), formats=("copilot",),
                     suffix=".agent.md")
        write_agents(package, workspace / ".claude" / "agents", formats=("aam", "claude", "gemini"))

    def add_mcp_servers(self, workspace: Path, servers: dict[str, Any]) -> None:
        """Into the workspace's `.mcp.json`."""
        if servers:
            merge_json(workspace / ".mcp.json", {"mcpServers": servers})

    def run(self, run: AgentRun) -> Session:
        """Run `copilot -p` in the workspace and parse its JSONL events."""
        usage_file = run.home / "copilot-usage.json"
        # A resumed session's usage file counts the whole conversation: its earlier turns are
        # in the file the previous turn left.
        before = read_usage(usage_file) if run.resume else Usage()
        argv, env = self.argv(run, usage_file), self.env(run)
        # Its unpacked runtime is a cache shared between sessions, written on first use: made
        # first, as the sandbox can only open a folder that exists (the first run on a machine).
        cache = shared_cache(runner_env(run))
        if run.confine:
            cache.mkdir(parents=True, exist_ok=True)
        confine = run.confine.also_writable(cache) if run.confine else None
        done = run_process(argv, cwd=run.workspace, env=env, timeout=run.timeout, confine=confine)
        session = new_session(self.name, self.provider_for(run.model), run, done, cli_version(CLI, run))
        parse_events(done.stdout, session)
        session.usage = usage_since(read_usage(usage_file), before)
        finish(session, done, run.timeout)
        return session

    def argv(self, run: AgentRun, usage_file: Path) -> list[str]:
        """Headless, every tool allowed (the sandbox is the workspace), JSONL out, hooks trusted."""
        argv = [CLI, "-p", run.prompt, "--allow-all-tools", "--output-format", "json", "--no-color",
                "--disable-client-telemetry", "--usage-output-file", str(usage_file),
                "--log-dir", str(run.home / "copilot-logs")]
        if any((run.workspace / p).exists() for p in (".claude/settings.json", ".mcp.json", ".github/hooks")):
            argv.append("--trust-folder")  # project hooks and MCP servers load only when trusted
        if run.resume:
            argv.append(f"--resume={run.resume}")  # `=`: its value is optional (a bare flag opens a picker)
        ex = run.execution
        if ex is not None:  # a claude plugin eval case's tools, by Copilot CLI's names
            if ex.allowed_tools is not None:
                argv += ["--available-tools", *mapped_tools(ex.allowed_tools, COPILOT_NAMES, _mcp_name)]
            if ex.disallowed_tools:
                argv += ["--excluded-tools", *mapped_tools(ex.disallowed_tools, COPILOT_NAMES, _mcp_name)]
        return argv  # offline, Copilot has no web tool: `sandbox.network` false needs nothing more

    def env(self, run: AgentRun) -> dict[str, str]:
        """Offline, with our provider: the run's base URL and key of the model's provider (Anthropic,
        or OpenAI for a GPT model: its Responses API, as the recording proxy and Codex speak it)
        become Copilot's."""
        env = base_env(run)
        env.update(run.env)
        provider = PROVIDERS[self.provider_for(run.model)]
        if provider.name == "openai":
            env["COPILOT_PROVIDER_WIRE_API"] = "responses"
        env.update({
            "COPILOT_OFFLINE": "true",
            "COPILOT_PROVIDER_TYPE": provider.name,
            "COPILOT_PROVIDER_BASE_URL": run.env.get(provider.base_url_var) or provider.default_base_url,
            "COPILOT_PROVIDER_API_KEY": run.env.get(provider.key_var, ""),
            "COPILOT_MODEL": run.model,
            "XDG_CONFIG_HOME": str(run.home / ".config"),
            "XDG_STATE_HOME": str(run.home / ".local" / "state"),
            "XDG_CACHE_HOME": str(shared_cache(runner_env(run))),
        })
        return direct_loopback(env)


def shared_cache(environ: Mapping[str, str]) -> Path:
    """Where Copilot unpacks itself: the runner's cache folder, shared by every run."""
    return runner_cache(environ, "copilot")



# --- JSONL events ---------------------------------------------------------------------


def parse_events(stdout: str, session: Session) -> None:
    """Fill a session from Copilot's `--output-format json` events."""
    calls: dict[str, ToolCall] = {}
    texts: list[str] = []
    for event in events(stdout):
        kind, data = event.get("type"), event.get("data") or {}
        if kind == "assistant.message":
            if str(data.get("content") or "").strip():
                texts.append(str(data["content"]))
            for request in data.get("toolRequests") or []:
                call = ToolCall(name=str(request.get("name")), input=_arguments(request.get("arguments")))
                calls[str(request.get("toolCallId"))] = call
                session.tool_calls.append(call)
        elif kind == "tool.execution_complete":
            on_tool_done(data, session, calls)
        elif kind == "session.error":
            session.is_error = True
            session.error = one_line(str(data.get("message") or data))
        elif kind == "result":
            session.session_id = event.get("sessionId")
            if event.get("exitCode") not in (0, None):
                session.is_error = True
    session.output = texts[-1] if texts else ""


def _arguments(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return {"arguments": value}
    return value if isinstance(value, dict) else {}


def on_tool_done(data: dict[str, Any], session: Session, calls: dict[str, ToolCall]) -> None:
    call = calls.get(str(data.get("toolCallId")))
    if call is None:
        return
    result = data.get("result") or {}
    error = data.get("error") or {}
    text = str(result.get("content") or error.get("message") or "")
    call.result = cap(text, TOOL_RESULT_CAP)
    call.is_error = not data.get("success", True)
    if HOOK_DENIED.match(text):
        block(session, text.strip())


def read_usage(path: Path) -> Usage:
    """Token counts from `--usage-output-file` (summed over the models used)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return Usage()
    totals = {"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 0,
              "cache_creation_input_tokens": 0}
    for metrics in (data.get("modelMetrics") or {}).values():
        usage = (metrics or {}).get("usage") or {}
        totals["input_tokens"] += int(usage.get("inputTokens") or 0)
        totals["output_tokens"] += int(usage.get("outputTokens") or 0)
        totals["cache_read_input_tokens"] += int(usage.get("cacheReadTokens") or 0)
        totals["cache_creation_input_tokens"] += int(usage.get("cacheWriteTokens") or 0)
    return Usage(**{k: v for k, v in totals.items() if k in Usage.model_fields})
