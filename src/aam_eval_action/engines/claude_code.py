"""Claude Code (`claude -p`): install a package the way Claude Code reads it, run it, parse stream-json.

"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from aam_eval_action.engines.base import AgentRun
from aam_eval_action.engines.common import (
    RegisteredEngine,
    base_env,
    block,
    direct_loopback,
    events,
    finish,
    new_session,
    one_line,
)
from aam_eval_action.engines.install import (
    append_text,
    copy_package,
    copy_skills,
    hooks_config,
    instructions,
    mcp_servers,
    merge_json,
    write_agents,
    write_commands,
)
from aam_eval_action.engines.process import run_process
from aam_eval_action.package import PackageLayout
from aam_eval_action.session import TOOL_RESULT_CAP, Session, ToolCall, Usage, cap
from aam_eval_action.spec import Sandbox

CLI = "claude"
OFFLINE_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
}
NETWORK_TOOLS = ("WebFetch", "WebSearch")
# Tools a session may use without asking when only some paths are writable (`dontAsk` mode).
ALLOWED_TOOLS = ("Bash", "Read", "Glob", "Grep", "Skill", "Task", "Agent", "TodoWrite", "ToolSearch")
HOOK_ERROR = re.compile(r"^\w+:\S* hook error")
"""How Claude Code words a tool result that a hook refused (exit 2 or a `deny` decision)."""


class ClaudeCode(RegisteredEngine):
    """Anthropic's Claude Code CLI, driven headless with `claude -p`."""

    name = "claude-code"

    def install(self, package: PackageLayout, workspace: Path, target: str | None) -> None:
        """Skills, hooks, rules, commands, agents and MCP servers, where Claude Code reads them."""
        copy_skills(package, target, workspace / ".claude" / "skills")
        root = copy_package(package, target, workspace)
        settings: dict[str, Any] = {}
        hooks = hooks_config(package, root)
        if hooks:
            settings["hooks"] = hooks
        if settings:
            merge_json(workspace / ".claude" / "settings.json", settings)
        self.add_mcp_servers(workspace, mcp_servers(package, root))
        append_text(workspace / "CLAUDE.md", instructions(package))
        write_commands(package, workspace / ".claude" / "commands", "md")
        write_agents(package, workspace / ".claude" / "agents")

    def add_mcp_servers(self, workspace: Path, servers: dict[str, Any]) -> None:
        """Into the workspace's `.mcp.json`, its project servers all enabled."""
        if servers:
            merge_json(workspace / ".mcp.json", {"mcpServers": servers})
            merge_json(workspace / ".claude" / "settings.json", {"enableAllProjectMcpServers": True})

    def run(self, run: AgentRun) -> Session:
        """Run `claude -p` in the workspace and parse its stream-json output."""
        done = run_process(self.argv(run), cwd=run.workspace, env=self.env(run), timeout=run.timeout,
                           confine=run.confine)
        session = new_session(self.name, self.provider, run, done)
        parse_stream(done.stdout, session)
        finish(session, done, run.timeout)
        return session

    def argv(self, run: AgentRun) -> list[str]:
        """The command line: headless, stream-json with hook events, permissions from the sandbox;
        a follow-up turn resumes its session (`--resume <id>`: the transcript Claude Code keeps
        under `~/.claude/projects/`, continued under the same id)."""
        mode, permissions = permission_settings(run.sandbox, mcp_names(run.workspace))
        resume = ["--resume", run.resume] if run.resume else []
        execution: list[str] = []
        ex = run.execution
        if ex is not None:  # a claude plugin eval case: its CLI options, as that runner passes them
            execution = ["--max-turns", str(ex.max_turns)]
            if ex.allowed_tools is not None:
                mode = "dontAsk"  # what is not allowed is withheld
                execution.append("--allowed-tools=" + ",".join(ex.allowed_tools))
            if ex.disallowed_tools:
                execution.append("--disallowed-tools=" + ",".join(ex.disallowed_tools))
            if ex.append_system_prompt:
                execution.append("--append-system-prompt=" + ex.append_system_prompt)
        for plugin in run.plugin_dirs:  # loaded as Claude Code loads a plugin: `plugin:skill` names
            execution += ["--plugin-dir", str(plugin)]
        for folder in run.add_dirs:  # read-only: outside the sandbox's writable folders
            execution += ["--add-dir", str(folder)]
        return [
            CLI, "-p", *resume,
            "--output-format", "stream-json", "--verbose", "--include-hook-events",
            "--model", ex.model if ex is not None and ex.model else run.model,
            "--permission-mode", mode,
            "--settings", json.dumps({"permissions": permissions}),
            *execution,
            "--", run.prompt,
        ]  # fmt: skip

    def env(self, run: AgentRun) -> dict[str, str]:
        """A minimal environment: fresh HOME, no telemetry or updates, then the run's own env."""
        env = base_env(run)
        env.update(OFFLINE_ENV)
        if os.geteuid() == 0:
            env["IS_SANDBOX"] = "1"  # Claude Code refuses bypassPermissions as root otherwise
        env.update(run.env)
        return direct_loopback(env)


# --- permissions ----------------------------------------------------------------------


def permission_settings(sandbox: Sandbox, mcp: list[str] | None = None) -> tuple[str, dict[str, list[str]]]:
    """The permission mode and rules that enforce the sandbox with Claude Code's own checks.

    With no writable-paths every tool runs unprompted (`bypassPermissions`). With writable-paths,
    `dontAsk` refuses whatever is not allowed, and file edits are allowed only under those paths;
    the package's MCP servers stay allowed. Bash is not confined to the paths: that would need
    Claude Code's bubblewrap sandbox.
    """
    deny = [] if sandbox.network else list(NETWORK_TOOLS)
    if sandbox.writable_paths is None:
        return "bypassPermissions", {"deny": deny}
    allow = list(ALLOWED_TOOLS) + (list(NETWORK_TOOLS) if sandbox.network else [])
    allow += [f"mcp__{name}" for name in mcp or []]
    # A writable path may be a file or a directory; Edit rules cover Write too.
    allow += [rule for p in sandbox.writable_paths for rule in (f"Edit(./{p})", f"Edit(./{p}/**)")]
    return "dontAsk", {"allow": allow, "deny": deny}


def mcp_names(workspace: Path) -> list[str]:
    """Names of the MCP servers installed in the workspace's `.mcp.json`."""
    path = workspace / ".mcp.json"
    if not path.is_file():
        return []
    servers = json.loads(path.read_text(encoding="utf-8")).get("mcpServers") or {}
    return sorted(servers)


# --- stream-json ------------------------------------------------------------------------


def parse_stream(stdout: str, session: Session) -> None:
    """Fill a session from Claude Code's stream-json events."""
    calls: dict[str, ToolCall] = {}
    for event in events(stdout):
        kind = event.get("type")
        if kind == "system":
            on_system(event, session)
        elif kind == "assistant":
            on_assistant(event, session, calls)
        elif kind == "user":
            on_user(event, session, calls)
        elif kind == "result":
            on_result(event, session)


def on_system(event: dict[str, Any], session: Session) -> None:
    if event.get("subtype") == "init":
        session.model = event.get("model") or session.model
        session.session_id = event.get("session_id")
        session.runtime_version = event.get("claude_code_version")
    elif event.get("subtype") == "hook_response" and event.get("exit_code") == 2:
        said = str(event.get("stderr") or event.get("output") or "").strip()
        block(session, f"{event.get('hook_name')} hook exited with code 2: {said}")


def on_assistant(event: dict[str, Any], session: Session, calls: dict[str, ToolCall]) -> None:
    for item in content_blocks(event):
        if item.get("type") == "tool_use":
            call = ToolCall(name=str(item.get("name")), input=item.get("input") or {})
            calls[str(item.get("id"))] = call
            session.tool_calls.append(call)


def on_user(event: dict[str, Any], session: Session, calls: dict[str, ToolCall]) -> None:
    for item in content_blocks(event):
        call = calls.get(str(item.get("tool_use_id")))
        if item.get("type") != "tool_result" or call is None:
            continue
        text = result_text(item.get("content"))
        call.result = cap(text, TOOL_RESULT_CAP)
        call.is_error = bool(item.get("is_error"))
        if call.is_error and HOOK_ERROR.match(text):
            block(session, text.strip())


def on_result(event: dict[str, Any], session: Session) -> None:
    session.output = str(event.get("result") or "")
    session.is_error = bool(event.get("is_error"))
    session.num_turns = event.get("num_turns")
    session.cost_usd = event.get("total_cost_usd")
    session.session_id = event.get("session_id") or session.session_id
    usage = event.get("usage") or {}
    session.usage = Usage(**{k: int(usage.get(k) or 0) for k in Usage.model_fields})
    if session.is_error:
        errors = event.get("errors") or []
        session.error = one_line(session.output or "; ".join(map(str, errors)))


def content_blocks(event: dict[str, Any]) -> list[dict[str, Any]]:
    content = (event.get("message") or {}).get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def result_text(content: Any) -> str:
    """A tool result's content as text (a string or a list of text blocks)."""
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return "" if content is None else str(content)


