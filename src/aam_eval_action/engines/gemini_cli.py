"""Gemini CLI (`gemini -p`): install a package the way Gemini CLI reads it, run it against the
run's Gemini API endpoint, parse its stream-json events.

Gemini CLI takes its key and endpoint from `GEMINI_API_KEY` and `GOOGLE_GEMINI_BASE_URL` (the
recording or replay proxy), its auth type and privacy settings from `~/.gemini/settings.json`
(without the auth type it stops with "Invalid auth method selected", without the privacy
setting it calls home), and reads project settings (hooks, MCP servers) only in a trusted
workspace (`GEMINI_CLI_TRUST_WORKSPACE=true`).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from aam_eval_action.engines import compile_cache
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
    runner_env,
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
from aam_eval_action.hooks import TOOL_NAMES
from aam_eval_action.package import PackageLayout
from aam_eval_action.session import TOOL_RESULT_CAP, Session, ToolCall, Usage, cap

CLI = "gemini"
HOOK_BLOCKED = re.compile(r"Tool execution blocked: ")
"""How Gemini CLI words the result of a call a hook refused."""
WEB_TOOLS = ("web_fetch", "google_web_search")
CHAT_MAX_BYTES = 32 * 1024 * 1024
"""A chat file larger than this, or a link, is not read (the agent can write into its HOME too)."""
SUB_AGENT_TOOL = "invoke_agent"
SUB_AGENT_DONE = "complete_task"
"""The tool a sub-agent hands its answer back with: not one of its own calls."""


class GeminiCli(RegisteredEngine):
    """Google's Gemini CLI, driven headless with `gemini -p`."""

    name = "gemini-cli"

    def install(self, package: PackageLayout, workspace: Path, target: str | None) -> None:
        """Skills into `.agents/skills/`; context files into GEMINI.md; hooks (its own dialect, or
        converted: events, tool names, timeouts in milliseconds), MCP servers and excluded tools
        into `.gemini/settings.json`; agents (its tool names) into `.gemini/agents/`, commands
        (TOML) into `.gemini/commands/`."""
        copy_skills(package, target, workspace / ".agents" / "skills")
        root = copy_package(package, target, workspace)
        settings: dict[str, Any] = {}
        hooks = hooks_config(package, root, "gemini")
        if hooks:
            settings["hooks"] = hooks
        if package.exclude_tools:
            settings["tools"] = {"exclude": list(package.exclude_tools)}
        if settings:
            merge_json(workspace / ".gemini" / "settings.json", settings)
        append_text(workspace / "GEMINI.md", instructions(package))
        write_agents(package, workspace / ".gemini" / "agents", "gemini", keep=("gemini",))
        write_commands(package, workspace / ".gemini" / "commands", "toml")
        self.add_mcp_servers(workspace, mcp_servers(package, root))

    def add_mcp_servers(self, workspace: Path, servers: dict[str, Any]) -> None:
        """Into the workspace's `.gemini/settings.json`."""
        if servers:
            merge_json(workspace / ".gemini" / "settings.json", {"mcpServers": servers})

    def run(self, run: AgentRun) -> Session:
        """Run `gemini -p` in the workspace and parse its stream-json events."""
        write_user_settings(run)
        earlier = set(chat_files(run.home)) if run.resume else set()  # the chats of earlier turns
        argv, env = self.argv(run), self.env(run)
        done = run_process(argv, cwd=run.workspace, env=env, timeout=run.timeout, confine=run.confine)
        session = new_session(self.name, self.provider, run, done, cli_version(CLI, run))
        calls = parse_stream(done.stdout, session)
        add_sub_agents(run.home, session, calls, earlier)
        finish(session, done, run.timeout)
        session.stderr = _without_startup_metrics(session.stderr)
        return session

    def argv(self, run: AgentRun) -> list[str]:
        """Headless, every tool allowed without asking (`--yolo`), stream-json, the model always; a
        follow-up turn resumes its session by id (`--resume <uuid>`: the chat file under
        `~/.gemini/tmp/<project>/chats/`)."""
        resume = ["--resume", run.resume] if run.resume else []
        return [CLI, "-p", run.prompt, *resume, "--output-format", "stream-json", "--yolo", "--skip-trust",
                "-m", run.model]

    def env(self, run: AgentRun) -> dict[str, str]:
        """A minimal environment: fresh HOME, the run's env, the workspace trusted."""
        env = base_env(run)
        env.update(run.env)
        env["GEMINI_CLI_TRUST_WORKSPACE"] = "true"  # project settings (hooks, MCP) apply only then
        # It would start a second Node to give itself half the machine's memory: a headless
        # session does not need it, and each start costs a second of CPU.
        env["GEMINI_CLI_NO_RELAUNCH"] = "true"
        cache = compile_cache.folder(CLI, cli_version(CLI, run), runner_env(run))
        if cache is not None:  # its bundle compiled once per release, read-only to the session
            env[compile_cache.ENV] = str(cache)
        return direct_loopback(env)


GEMINI_NAMES: dict[str, tuple[str, ...]] = {claude: (gemini,) for claude, gemini in TOOL_NAMES.items()} | {
    "Read": ("read_file", "read_many_files", "list_directory")}
"""Claude Code's tools → Gemini CLI's (Read: its file and folder readers)."""


def _mcp_name(server: str, tool: str) -> str:
    return tool


def write_user_settings(run: AgentRun) -> None:
    """`~/.gemini/settings.json` of the fresh HOME: API-key auth, no usage statistics, no web
    tools when the sandbox has no network; agents of the workspace acknowledged."""
    settings: dict[str, Any] = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
    }
    exclude = [] if run.sandbox.network else list(WEB_TOOLS)
    ex = run.execution
    if ex is not None:  # a claude plugin eval case's turn limit and tools, by Gemini CLI's names
        settings["model"] = {"maxSessionTurns": ex.max_turns}
        exclude += [t for t in mapped_tools(ex.disallowed_tools, GEMINI_NAMES, _mcp_name) if t not in exclude]
        if ex.allowed_tools is not None:
            settings["tools"] = {"core": mapped_tools(ex.allowed_tools, GEMINI_NAMES, _mcp_name)}
    if exclude:
        settings["tools"] = {**settings.get("tools", {}), "exclude": exclude}
    merge_json(run.home / ".gemini" / "settings.json", settings)
    agents = run.workspace / ".gemini" / "agents"
    if agents.is_dir():
        known = {p.stem: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(agents.glob("*.md"))}
        merge_json(run.home / ".gemini" / "acknowledgments" / "agents.json", {str(run.workspace): known})


# --- stream-json ------------------------------------------------------------------------


def parse_stream(stdout: str, session: Session) -> dict[str, ToolCall]:
    """Fill a session from Gemini CLI's stream-json events; the calls by their tool id."""
    calls: dict[str, ToolCall] = {}
    answer: list[str] = []
    for event in events(stdout):
        kind = event.get("type")
        if kind == "init":
            session.session_id = event.get("session_id")
            session.model = event.get("model") or session.model
        elif kind == "message" and event.get("role") == "assistant":
            answer.append(str(event.get("content") or ""))
        elif kind == "tool_use":
            answer = []  # the final answer is what the model said after its last tool call
            call = ToolCall(name=str(event.get("tool_name")), input=event.get("parameters") or {})
            calls[str(event.get("tool_id"))] = call
            session.tool_calls.append(call)
        elif kind == "tool_result":
            on_tool_result(event, session, calls)
        elif kind == "result":
            on_result(event, session)
    session.output = "".join(answer).strip()
    return calls


def on_tool_result(event: dict[str, Any], session: Session, calls: dict[str, ToolCall]) -> None:
    call = calls.get(str(event.get("tool_id")))
    if call is None:
        return
    error = event.get("error")
    said = error.get("message") if isinstance(error, dict) else error
    text = str(event.get("output") or said or "")
    call.result = cap(text, TOOL_RESULT_CAP)
    call.is_error = event.get("status") not in (None, "success")
    if HOOK_BLOCKED.search(text):
        block(session, text.strip())


def on_result(event: dict[str, Any], session: Session) -> None:
    if event.get("status") not in (None, "success"):
        session.is_error = True
        error = event.get("error")
        session.error = one_line(str(error.get("message") if isinstance(error, dict) else error or event))
    stats = event.get("stats") or {}
    session.usage = Usage(
        input_tokens=int(stats.get("input_tokens") or stats.get("prompt_tokens") or 0),
        output_tokens=int(stats.get("output_tokens") or stats.get("candidates_tokens") or 0),
        cache_read_input_tokens=int(stats.get("cached") or stats.get("cached_tokens") or 0),
    )


# --- sub-agents, from its chat files -------------------------------------------------------


def add_sub_agents(home: Path, session: Session, calls: dict[str, ToolCall],
                   earlier: set[Path] | None = None) -> None:
    """What stream-json leaves out of a sub-agent: the answer `invoke_agent` returned (its
    `tool_result` has no output) and the sub-agent's own tool calls. Gemini CLI's chat files in
    the run's HOME (`~/.gemini/tmp/<project>/chats/`: the main session's, and one per
    sub-agent) have both; each sub-agent's calls are listed after the call that started it.
    A resumed session's earlier sub-agents (the chat files in `earlier`) are not this turn's."""
    results: dict[str, tuple[str, bool]] = {}
    started: dict[str, list[list[ToolCall]]] = {}
    for path in chat_files(home):
        kind, prompt, found = _chat(path)
        if kind == "main":
            results.update({i: (c.result or "", c.is_error) for i, c in found.items()})
        elif kind == "subagent" and prompt is not None and path not in (earlier or set()):
            own = [c for c in found.values() if c.name != SUB_AGENT_DONE]
            started.setdefault(prompt, []).append(own)
    out: list[ToolCall] = []
    by_call = {id(call): tool_id for tool_id, call in calls.items()}
    for call in session.tool_calls:
        out.append(call)
        if call.name != SUB_AGENT_TOOL:
            continue
        got = results.get(by_call.get(id(call), ""))
        if got and not call.result:
            call.result, call.is_error = cap(got[0], TOOL_RESULT_CAP), got[1] or call.is_error
        queue = started.get(str(call.input.get("prompt", "")).strip())
        if queue:
            out += queue.pop(0)
    session.tool_calls = out


def chat_files(home: Path) -> list[Path]:
    """Gemini CLI's chat files in a HOME, in name order (the main session's and its sub-agents')."""
    return sorted((home / ".gemini" / "tmp").glob("*/chats/**/*.jsonl"))


def _chat(path: Path) -> tuple[str | None, str | None, dict[str, ToolCall]]:
    """(kind `main`/`subagent`, the first user text, the tool calls by id) of one chat file;
    lines that are not JSON records are skipped."""
    kind: str | None = None
    prompt: str | None = None
    found: dict[str, ToolCall] = {}
    try:
        if path.is_symlink() or path.stat().st_size > CHAT_MAX_BYTES:
            return None, None, {}
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None, None, {}
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        if kind is None and isinstance(record.get("kind"), str):
            kind = record["kind"]
        content = record.get("content")
        if prompt is None and record.get("type") == "user" and isinstance(content, list):
            texts = [str(p["text"]) for p in content
                     if isinstance(p, dict) and isinstance(p.get("text"), str)]
            prompt = texts[-1].strip() if texts else None
        for raw in record.get("toolCalls") or [] if isinstance(record.get("toolCalls"), list) else []:
            if isinstance(raw, dict) and isinstance(raw.get("id"), str):
                found[raw["id"]] = _chat_call(raw)
    return kind, prompt, found


def _chat_call(raw: dict[str, Any]) -> ToolCall:
    texts = []
    for part in raw.get("result") or [] if isinstance(raw.get("result"), list) else []:
        response = (part.get("functionResponse") or {}).get("response") if isinstance(part, dict) else None
        if isinstance(response, dict):
            texts.append(str(response.get("output") or response.get("error") or ""))
    args = raw.get("args")
    return ToolCall(name=str(raw.get("name")), input=args if isinstance(args, dict) else {},
                    result=cap("\n".join(texts), TOOL_RESULT_CAP), is_error=raw.get("status") != "success")


def _without_startup_metrics(stderr: str) -> str:
    """Its `[STARTUP] Phase … never ended` lines come and go with timing: not the session's."""
    return "".join(line for line in stderr.splitlines(keepends=True) if not line.startswith("[STARTUP] "))
