"""The scripted model server speaking each CLI's tools: a scripted step as Claude Code's, Codex's,
Copilot CLI's or Gemini CLI's tool call."""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

from aam_eval_action.testing.model_base import (
    APPLY_PATCH,
    CODEX_AGENT_TOOLS,
    CODEX_SHELL_TOOLS,
    CODEX_SPAWN,
    CODEX_WAIT,
    CODEX_WAIT_MS,
    CUSTOM_INPUT,
    GEMINI_COMPLETE,
    JUDGE_TOOL,
    NAMESPACE_SEP,
    RESPONSES_SEARCH,
    TOOL_SEARCH,
    Reply,
)
from aam_eval_action.testing.model_requests import (
    _messages,
    _texts_of_messages,
    codex_sub_agents,
    gemini_tool_names,
    is_gemini,
    workspace_dir,
)


def verdict_reply(verdict: dict[str, Any]) -> Reply:
    """A judge verdict as a `record_verdict` call."""
    data = {"result": str(verdict.get("result", "PASS")), "reason": str(verdict.get("reason", ""))}
    return Reply(calls=((JUDGE_TOOL, data),))


def step_reply(step: dict[str, Any], body: dict[str, Any]) -> Reply:
    """Turn one scripted step into a reply for the requesting CLI."""
    delay = float(step.get("sleep", 0))
    if "error" in step:
        err = step["error"]
        return Reply(text=str(err.get("message", "error")), status=int(err["status"]), delay=delay)
    anthropic = "messages" in body
    steps = [dict(one) for one in step["parallel"]] if "parallel" in step else [step]
    cwd = workspace_dir(body)
    if any("mcp" in one for one in steps):
        calls = [mcp_call(one["mcp"], body) if "mcp" in one else None for one in steps]
    elif is_gemini(body):
        calls = [gemini_call(one, cwd) for one in steps]
    elif is_copilot(body):
        calls = [copilot_call(one, cwd, tool_names(body)) for one in steps]
    else:
        calls = [claude_call(one, cwd) if anthropic else codex_call(one, body) for one in steps]
    if not any(calls):
        text = str(step.get("text", "Done."))
        if is_gemini(body) and GEMINI_COMPLETE in gemini_tool_names(body):
            # A Gemini CLI sub-agent hands its answer back only through `complete_task`.
            return Reply(calls=((GEMINI_COMPLETE, {"result": text}),), delay=delay)
        return Reply(text=text, delay=delay)
    return Reply(calls=tuple(call for call in calls if call), delay=delay)


def mcp_call(step: dict[str, Any], body: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """A call of an MCP tool the request offers, by the tool's own name and its server's: each
    CLI names it its own way (`mcp__<server>__<tool>`, a plugin's server `plugin_<plugin>_
    <server>`; Copilot CLI `<server>-<tool>`; Gemini CLI `<tool>`). A tool Claude Code defers
    (named in its system prompt, its schema not offered) is loaded first with ToolSearch
    (`select:<name>`), a turn the step index does not count."""
    tool, server = str(step["tool"]), str(step.get("server", ""))

    def named(names: set[str]) -> list[str]:
        return sorted(n for n in names if n == tool or (n.endswith(tool) and server in n[: -len(tool)]))

    found = named(tool_names(body) | gemini_tool_names(body) | namespaced_tool_names(body))
    if found:
        return found[0], dict(step.get("input") or {})
    deferred = named(deferred_tool_names(body))
    if deferred and TOOL_SEARCH in tool_names(body):
        return TOOL_SEARCH, {"query": f"select:{deferred[0]}", "max_results": 5}
    if any(isinstance(t, dict) and t.get("type") == RESPONSES_SEARCH for t in body.get("tools") or []):
        return RESPONSES_SEARCH, {"query": f"{server} {tool}".strip()}  # Codex defers MCP tools too
    return None




def namespaced_tool_names(body: dict[str, Any]) -> set[str]:
    """The tools of a Responses request's namespaces, offered or found by a tool search (Codex's
    MCP tools: `tool_search_output` items of its history), as `namespace.tool`."""
    found = [t for item in body.get("input") or [] if isinstance(item, dict)
             and item.get("type") == "tool_search_output" for t in item.get("tools") or []]
    return {f"{t.get('name')}{NAMESPACE_SEP}{one.get('name')}" for t in [*(body.get("tools") or []), *found]
            if isinstance(t, dict) and t.get("type") == "namespace"
            for one in t.get("tools") or [] if isinstance(one, dict)}


def deferred_tool_names(body: dict[str, Any]) -> set[str]:
    """Tools a Claude Code request names without their schema (deferred behind ToolSearch, named
    in its system prompt): its `mcp__…` words."""
    text = json.dumps(body.get("system") or "") + json.dumps(body.get("messages") or [])
    return set(re.findall(r"mcp__[A-Za-z0-9_-]+__[A-Za-z0-9_-]+", text))


def tool_names(body: dict[str, Any]) -> set[str]:
    """The names of the tools a Messages or Responses request offers."""
    return {str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict)}


COPILOT_OWN = frozenset({"bash", "view", "create", "edit", "skill", "task", "glob", "grep", "web_fetch"})


def is_copilot(body: dict[str, Any]) -> bool:
    """Copilot CLI speaks Anthropic Messages and OpenAI Responses; its tools are `bash`, `view`…
    (a sub-agent of it may have `bash` and its helpers only; a run given `--available-tools`,
    only some of them)."""
    return bool(COPILOT_OWN & tool_names(body))


def copilot_call(step: dict[str, Any], cwd: str | None, tools: set[str]) -> tuple[str, dict[str, Any]] | None:
    """The Copilot CLI tool call for a step (None for a text step). A write is a `create` call,
    or with a GPT model (which Copilot offers `apply_patch` instead) a patch adding the file."""
    if "skill" in step:  # a `plugin:skill` name is that skill where skills have no plugin prefix
        return "skill", {"skill": str(step["skill"]).rsplit(":", 1)[-1]}
    if "bash" in step:
        return "bash", {"command": step["bash"], "description": "Run a scripted command"}
    if "subagent" in step:
        agent = step["subagent"]
        kind = str(agent["type"])
        return "task", {"agent_type": kind, "name": kind,
                        "description": str(agent.get("description") or kind),
                        "prompt": str(agent["prompt"]), "mode": "background"}
    if "write" in step:
        path = str(step["write"]["path"])
        if cwd and not path.startswith("/"):
            path = f"{cwd.rstrip('/')}/{path}"
        content = str(step["write"].get("content", ""))
        if "create" not in tools and APPLY_PATCH in tools:
            return APPLY_PATCH, {CUSTOM_INPUT: add_file_patch(path, content)}
        return "create", {"path": path, "file_text": content}
    return None


def add_file_patch(path: str, content: str) -> str:
    """An `apply_patch` patch (the freeform format of Codex and Copilot) that adds one file."""
    lines = "".join(f"+{line}\n" for line in content.splitlines())
    return f"*** Begin Patch\n*** Add File: {path}\n{lines}*** End Patch\n"


def claude_call(step: dict[str, Any], cwd: str | None) -> tuple[str, dict[str, Any]] | None:
    """The Claude Code tool call for a step (None for a text step)."""
    if "skill" in step:
        return "Skill", {"skill": step["skill"]}
    if "bash" in step:
        return "Bash", {"command": step["bash"], "description": "Run a scripted command"}
    if "subagent" in step:
        agent = step["subagent"]
        return "Agent", {"description": str(agent.get("description") or agent["type"]),
                         "prompt": str(agent["prompt"]), "subagent_type": str(agent["type"])}
    if "write" in step:
        path = str(step["write"]["path"])
        if cwd and not path.startswith("/"):
            path = f"{cwd.rstrip('/')}/{path}"
        return "Write", {"file_path": path, "content": str(step["write"].get("content", ""))}
    return None


def gemini_call(step: dict[str, Any], cwd: str | None) -> tuple[str, dict[str, Any]] | None:
    """The Gemini CLI tool call for a step (None for a text step)."""
    if "skill" in step:
        return "activate_skill", {"name": str(step["skill"]).rsplit(":", 1)[-1]}
    if "bash" in step:
        return "run_shell_command", {"command": str(step["bash"]), "description": "Run a scripted command"}
    if "subagent" in step:
        agent = step["subagent"]
        return "invoke_agent", {"agent_name": str(agent["type"]), "prompt": str(agent["prompt"])}
    if "write" in step:
        path = str(step["write"]["path"])
        if cwd and not path.startswith("/"):
            path = f"{cwd.rstrip('/')}/{path}"
        return "write_file", {"file_path": path, "content": str(step["write"].get("content", ""))}
    return None


def codex_command(step: dict[str, Any]) -> str | None:
    """The shell command Codex runs for a step (None for a text step)."""
    if "skill" in step:
        return f"cat .agents/skills/{shlex.quote(str(step['skill']).rsplit(':', 1)[-1])}/SKILL.md"
    if "bash" in step:
        return str(step["bash"])
    if "write" in step:
        path = str(step["write"]["path"])
        parent = path.rsplit("/", 1)[0] if "/" in path else "."
        content = shlex.quote(str(step["write"].get("content", "")))
        return f"mkdir -p {shlex.quote(parent)} && printf '%s' {content} > {shlex.quote(path)}"
    return None


def codex_call(step: dict[str, Any], body: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """A call to whichever shell tool the Codex request offers (for a sub-agent, `spawn_agent`)."""
    names = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
    if "subagent" in step:
        if not offers_spawn(body):
            return None
        return codex_agent_tool(CODEX_SPAWN), {"message": str(step["subagent"]["prompt"])}
    command = codex_command(step)
    if command is None:
        return None
    tool = next((n for n in CODEX_SHELL_TOOLS if n in names), "exec_command")
    if tool == "exec_command":
        return tool, {"cmd": command}
    if tool == "shell":
        return tool, {"command": ["bash", "-lc", command]}
    return tool, {"command": command}


DEFERRED_AGENT_TOOLS = re.compile(
    rf"^<tools>\nDeferred tool namespaces:\n(?:- .*\n)*?- {CODEX_AGENT_TOOLS}:", re.M)
"""How Codex lists the namespace when it defers it behind `tool_search` (for models such as
gpt-5.5); a call to `spawn_agent` with the namespace is accepted then too."""


def offers_spawn(body: dict[str, Any]) -> bool:
    """Whether a Codex request offers `spawn_agent`: in its sub-agent namespace tool, or that
    namespace listed as deferred (a sub-agent's own requests offer neither: it cannot start
    further sub-agents)."""
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict)]
    for tool in tools:
        if tool.get("type") == "namespace" and tool.get("name") == CODEX_AGENT_TOOLS:
            return any(isinstance(t, dict) and t.get("name") == CODEX_SPAWN for t in tool.get("tools") or [])
    return any(DEFERRED_AGENT_TOOLS.search(text) for text in _texts_of_messages(body))


def codex_agent_tool(name: str) -> str:
    """The name of a call to one of Codex's sub-agent tools (`multi_agent_v1.spawn_agent`)."""
    return f"{CODEX_AGENT_TOOLS}{NAMESPACE_SEP}{name}"


def codex_wait(reply: Reply, body: dict[str, Any]) -> Reply:
    """A text answer of a Codex conversation whose sub-agents have not all reported: the text
    and a `wait_agent` call, or once it has said the text, the call alone. It waits on the
    first of them only: Codex lists the statuses of several in no fixed order."""
    if reply.calls or reply.status != 200:
        return reply
    pending, waited = codex_sub_agents(_messages(body))
    if not pending:
        return reply
    wait = (codex_agent_tool(CODEX_WAIT), {"targets": pending[:1], "timeout_ms": CODEX_WAIT_MS})
    return Reply(text="" if waited else reply.text, calls=(wait,), delay=reply.delay, hold=tuple(pending))
