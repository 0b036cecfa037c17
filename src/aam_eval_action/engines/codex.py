"""OpenAI Codex (`codex exec`): install a package the way Codex reads it, run it, parse `--json`."""

from __future__ import annotations

import json
import re
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
    new_session,
    one_line,
    runner_env,
    usage_since,
)
from aam_eval_action.engines.install import (
    append_text,
    copy_package,
    copy_skills,
    hooks_config,
    instructions,
    mcp_servers,
    merge_json,
)
from aam_eval_action.engines.process import run_process
from aam_eval_action.package import PackageLayout
from aam_eval_action.providers import PROVIDERS
from aam_eval_action.session import TOOL_RESULT_CAP, Session, ToolCall, Usage, cap
from aam_eval_action.spec import Sandbox

CLI = "codex"
PROVIDER = "aam"
"""The model provider defined on the command line, so the key and base URL are always explicit."""
DEFAULT_BASE_URL = PROVIDERS["openai"].default_base_url
PROFILE = "aam"
"""The permission profile used when only some workspace paths are writable."""
OFFLINE_CONFIG = ("analytics.enabled=false", "check_for_update_on_startup=false", "features.plugins=false")
"""No metrics at exit (ab.chatgpt.com), no update check, no curated-plugins sync at start-up
(github.com, api.github.com, chatgpt.com): Codex calls nothing but its model."""
BYPASS_WARNING = "--dangerously-bypass-hook-trust"
HOOK_BLOCK = re.compile(r"Command blocked by \w+ hook: .*")
"""A blocked call leaves no `--json` item; Codex logs it on stderr in these words."""
EXTERNALLY_SANDBOXED = "--dangerously-bypass-approvals-and-sandbox"
"""Codex's own sandbox off: "intended solely for running in environments that are externally
sandboxed", as every session is inside ours (its bubblewrap cannot set up its namespaces inside
Landlock, and its Landlock fallback refuses to confine files without bubblewrap). Its prompt
then says `danger-full-access`; where ours enforces nothing it keeps its own (`sandbox_args`)."""


class Codex(RegisteredEngine):
    """OpenAI's Codex CLI, driven headless with `codex exec --json`."""

    name = "codex"

    def install(self, package: PackageLayout, workspace: Path, target: str | None) -> None:
        """Skills into `.agents/skills/`, rules and AGENTS.md into AGENTS.md, hooks and MCP into .codex/."""
        copy_skills(package, target, workspace / ".agents" / "skills")
        root = copy_package(package, target, workspace)
        hooks = hooks_config(package, root)  # Codex reads Claude's dialect
        if hooks:
            merge_json(workspace / ".codex" / "hooks.json", {"hooks": hooks})
        self.add_mcp_servers(workspace, mcp_servers(package, root))
        append_text(workspace / "AGENTS.md", instructions(package))

    def add_mcp_servers(self, workspace: Path, servers: dict[str, Any]) -> None:
        """As `[mcp_servers.<name>]` tables of the workspace's `.codex/config.toml`."""
        if servers:
            append_text(workspace / ".codex" / "config.toml", mcp_toml(servers))

    def run(self, run: AgentRun) -> Session:
        """Run `codex exec` on the workspace and parse its JSON events."""
        (run.home / ".codex").mkdir(parents=True, exist_ok=True)  # Codex refuses a missing one
        for path in profile_dirs(run.sandbox, run.workspace) or []:
            path.mkdir(parents=True, exist_ok=True)  # a profile can only grant existing directories
        before = thread_usage(run.home, run.resume) if run.resume else Usage()
        done = run_process(self.argv(run), cwd=run.workspace, env=self.env(run), timeout=run.timeout,
                           confine=run.confine)
        session = new_session(self.name, self.provider, run, done, cli_version(CLI, run))
        parse_events(done.stdout, session)
        session.usage = usage_since(session.usage, before)  # a resumed thread reports its totals
        for found in HOOK_BLOCK.finditer(done.stderr):
            block(session, found.group(0).strip())
        finish(session, done, run.timeout)
        session.stderr = LOG_STAMP.sub("", session.stderr)
        return session

    def argv(self, run: AgentRun) -> list[str]:
        """The command line: JSON events, explicit model and provider, its own sandbox off inside
        ours (else on), hook trust;
        a follow-up turn resumes its thread (`exec … resume <thread id>`, see `session_args`)."""
        argv = [CLI, "exec", "--json", "--skip-git-repo-check"]
        argv += ["--cd", str(run.workspace), "--model", run.model]
        if run.confine is not None and not run.confine.by:
            argv.append(EXTERNALLY_SANDBOXED)  # ours confines the whole process
        else:
            argv += sandbox_args(run.sandbox.network, profile_dirs(run.sandbox, run.workspace))
        argv += config_args([*OFFLINE_CONFIG, *provider_config(base_url(run))])
        argv += trust_flags(run.workspace)
        return [*argv, *session_args(run), "--", run.prompt]

    def env(self, run: AgentRun) -> dict[str, str]:
        """A minimal environment: fresh HOME and CODEX_HOME, then the run's own env."""
        env = base_env(run)
        env["CODEX_HOME"] = str(run.home / ".codex")
        env.update(run.env)
        env["TMPDIR"] = str(private_tmp(run))
        return direct_loopback(env)


def session_args(run: AgentRun) -> list[str]:
    """`resume <thread id>` for a follow-up turn, else nothing.

    Never `--ephemeral`: a session must leave its rollout (`$CODEX_HOME/sessions/…`, in the
    run's fresh HOME) for a later turn to resume it, and no turn knows whether one follows.
    """
    return ["resume", run.resume] if run.resume else []


def trust_flags(workspace: Path) -> list[str]:
    """The trust flags the installed files need.

    Codex reads a project's `.codex/config.toml` (MCP servers) only when the project is trusted,
    and runs project hooks only when their own trust check is bypassed as well.
    """
    if (workspace / ".codex" / "hooks.json").is_file():
        return ["--trust", "--dangerously-bypass-hook-trust"]
    if (workspace / ".codex" / "config.toml").is_file():
        return ["--trust"]
    return []


def mcp_toml(servers: dict[str, Any]) -> str:
    """MCP servers as Codex `[mcp_servers.<name>]` tables (Claude's `type` key dropped)."""
    tables = []
    for name, server in servers.items():
        lines = [f"[mcp_servers.{toml_str(name)}]"]
        lines += [f"{key} = {toml_value(value)}" for key, value in server.items() if key != "type"]
        tables.append("\n".join(lines))
    return "\n\n".join(tables)


def toml_value(value: Any) -> str:
    """A JSON value as TOML: strings, numbers, booleans, arrays and inline tables."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{toml_str(str(k))} = {toml_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, int | float):
        return str(value)
    return toml_str(str(value))


def base_url(run: AgentRun) -> str:
    """Where the Responses API is: OPENAI_BASE_URL from the run or the runner, else OpenAI's."""
    var = PROVIDERS["openai"].base_url_var
    return run.env.get(var) or runner_env(run).get(var) or DEFAULT_BASE_URL


def provider_config(url: str) -> list[str]:
    """A Responses-API provider at `url` whose key is the OpenAI provider's variable (Codex
    ignores OPENAI_BASE_URL)."""
    prefix = f"model_providers.{PROVIDER}"
    return [
        f"model_provider={toml_str(PROVIDER)}",
        f"{prefix}.name={toml_str(PROVIDER)}",
        f"{prefix}.base_url={toml_str(url)}",
        f"{prefix}.env_key={toml_str(PROVIDERS['openai'].key_var)}",
        f"{prefix}.wire_api={toml_str('responses')}",
    ]


def profile_dirs(sandbox: Sandbox, workspace: Path) -> list[Path] | None:
    """The writable-paths as directories for a permission profile, or None when there is none.

    Codex's profiles take directories only (a file as a writable root breaks every command), so
    when a writable path is a file (or a missing name with a suffix, like `CHANGELOG.md`) the
    whole workspace stays writable and the runner's sandbox check is what enforces the paths.
    """
    if sandbox.writable_paths is None:
        return None
    dirs = [(workspace / p).resolve() for p in sandbox.writable_paths]
    if any(d.is_file() or (not d.exists() and d.suffix) for d in dirs):
        return None
    return dirs


def sandbox_args(network: bool, dirs: list[Path] | None) -> list[str]:
    """Codex's own sandbox: the workspace writable, or only `dirs` through a permission profile."""
    net = "true" if network else "false"
    if dirs is None:
        # Not /tmp: for every writable root Codex's Linux sandbox makes an empty `<root>/.git`
        # while a command runs (to mount it read-only), and a `/tmp/.git` makes every other
        # CLI working under /tmp at that moment tell its model it is in a git repository.
        # Its temp folder is the run's own (TMPDIR, see `env`).
        return [
            "--sandbox",
            "workspace-write",
            *config_args([f"sandbox_workspace_write.network_access={net}",
                          "sandbox_workspace_write.exclude_slash_tmp=true"]),
        ]
    rules = {":root": "read"} | {str(d): "write" for d in dirs}
    table = ", ".join(f"{toml_str(k)} = {toml_str(v)}" for k, v in rules.items())
    return config_args(
        [
            f"default_permissions={toml_str(PROFILE)}",
            f"permissions.{PROFILE}.filesystem={{{table}}}",
            f"permissions.{PROFILE}.network.enabled={net}",
        ]
    )


LOG_STAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z ", re.M)
"""The clock time Codex starts its log lines with: a second recording would differ by it alone."""


def private_tmp(run: AgentRun) -> Path:
    """The run's own temp folder beside its workspace (writable in Codex's sandbox)."""
    tmp = run.workspace.parent / "tmp"
    tmp.mkdir(exist_ok=True)
    return tmp


def config_args(settings: list[str]) -> list[str]:
    return [arg for setting in settings for arg in ("-c", setting)]


def toml_str(value: str) -> str:
    """A TOML basic string (JSON's string escaping is valid TOML)."""
    return json.dumps(value)



# --- --json events ------------------------------------------------------------------------


def parse_events(stdout: str, session: Session) -> None:
    """Fill a session from `codex exec --json` events."""
    warnings: list[str] = []
    for event in events(stdout):
        kind = event.get("type")
        if kind == "thread.started":
            session.session_id = event.get("thread_id")
        elif kind == "item.completed":
            on_item(event.get("item") or {}, session, warnings)
        elif kind == "turn.completed":
            add_usage(session, event.get("usage") or {})
        elif kind == "turn.failed":
            session.is_error = True
            session.error = one_line(str((event.get("error") or {}).get("message", "turn failed")))
    if session.is_error and not session.error and warnings:
        session.error = one_line(warnings[-1])


def on_item(item: dict[str, Any], session: Session, warnings: list[str]) -> None:
    kind = item.get("type")
    if kind == "agent_message":
        session.output = str(item.get("text") or "")
    elif kind == "error":
        if BYPASS_WARNING not in str(item.get("message")):
            warnings.append(str(item.get("message")))
    else:
        call = tool_call(item)
        if call is not None:
            session.tool_calls.append(call)


def tool_call(item: dict[str, Any]) -> ToolCall | None:
    """A tool call from a completed item (None for items that are not tool calls)."""
    kind = item.get("type")
    failed = item.get("status") == "failed"
    if kind == "command_execution":
        exit_code = item.get("exit_code")
        return ToolCall(
            name="command_execution",
            input={"command": item.get("command")},
            result=cap(str(item.get("aggregated_output") or ""), TOOL_RESULT_CAP),
            is_error=failed or exit_code not in (0, None),
        )
    if kind == "file_change":
        return ToolCall(name="file_change", input={"changes": item.get("changes") or []}, is_error=failed)
    if kind == "mcp_tool_call":
        name = f"mcp__{item.get('server')}__{item.get('tool')}"
        args = item.get("arguments")
        return ToolCall(
            name=name,
            input=args if isinstance(args, dict) else {},
            is_error=failed,
            result=cap(json.dumps(item.get("result")), TOOL_RESULT_CAP),
        )
    if kind == "web_search":
        return ToolCall(name="web_search", input={"query": item.get("query")})
    if kind == "collab_tool_call":
        return sub_agent_call(item, failed)
    return None


def sub_agent_call(item: dict[str, Any], failed: bool) -> ToolCall:
    """A sub-agent tool call (`spawn_agent`, `wait`, …): its prompt, and each agent's status and
    answer in the result. Agent ids are left out: they are new every run. The sub-agents' own
    commands are not in `codex exec --json`."""
    states = item.get("agents_states")
    lines = []
    for state in states.values() if isinstance(states, dict) else []:
        if isinstance(state, dict):
            status, message = state.get("status"), state.get("message")
            lines.append(f"{status}: {message}" if message is not None else str(status))
    given = {"prompt": item["prompt"]} if isinstance(item.get("prompt"), str) else {}
    return ToolCall(name=str(item.get("tool") or "collab_tool_call"), input=given,
                    result=cap("\n".join(lines), TOOL_RESULT_CAP), is_error=failed)


def add_usage(session: Session, usage: dict[str, Any]) -> None:
    """Add one turn's token counts to the session's usage."""
    total, more = session.usage or Usage(), usage_of(usage)
    session.usage = Usage(**{k: getattr(total, k) + getattr(more, k) for k in Usage.model_fields})


def usage_of(usage: dict[str, Any]) -> Usage:
    """Codex's token counts (`turn.completed` usage, or a rollout's `total_token_usage`)."""
    return Usage(
        input_tokens=int(usage.get("input_tokens") or 0),
        output_tokens=int(usage.get("output_tokens") or 0),
        cache_read_input_tokens=int(usage.get("cached_input_tokens") or 0),
        cache_creation_input_tokens=int(usage.get("cache_write_input_tokens") or 0),
    )


def thread_usage(home: Path, thread: str) -> Usage:
    """What a thread had used before it is resumed: the last `total_token_usage` in its rollout
    (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl`). A resumed `codex exec`
    reports the thread's totals in `turn.completed`, earlier turns included."""
    found = Usage()
    for path in sorted((home / ".codex" / "sessions").rglob("rollout-*.jsonl")):
        if not path.name.endswith(f"-{thread}.jsonl") or path.is_symlink():
            continue
        for event in events(path.read_text(encoding="utf-8", errors="replace")):
            total = _dig(event, "payload", "info", "total_token_usage")
            if isinstance(total, dict) and _dig(event, "payload", "type") == "token_count":
                found = usage_of(total)
    return found


def _dig(value: Any, *keys: str) -> Any:
    """`value[k1][k2]…`, or None where a level is not an object."""
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value
