"""The three hook dialects, and conversions between them that keep their meaning.

- Claude's (Claude Code, and Codex's `.codex/hooks.json`): `{"hooks": {"PreToolUse": [{"matcher":
  "Write|Edit", "hooks": [{"type": "command", "command": …, "timeout": SECONDS}]}]}}`.
- Copilot's: `{"version": 1, "hooks": {"preToolUse": [{"type": "command", "bash": …,
  "timeoutSec": SECONDS}]}}`: no matcher, every tool reaches the script.
- Gemini CLI's: `{"hooks": {"BeforeTool": [{"matcher": "write_file", "hooks": [{"type":
  "command", "command": …, "timeout": MILLISECONDS}]}]}}`.

A conversion maps the event names, the tool names in matchers and the timeout's unit; the
plugin-root variables of every dialect are replaced by the package copy's absolute path when
the hooks are installed. What has no counterpart is left out with a warning.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aam_eval_action.errors import ConfigError
from aam_eval_action.package import Dialect, Finding, HookSource

EVENTS: tuple[tuple[str | None, str | None, str | None], ...] = (
    # (Claude, Copilot, Gemini CLI)
    ("PreToolUse", "preToolUse", "BeforeTool"),
    ("PostToolUse", "postToolUse", "AfterTool"),
    ("UserPromptSubmit", "userPromptSubmitted", "BeforeAgent"),
    ("SessionStart", "sessionStart", "SessionStart"),
    ("SessionEnd", "sessionEnd", "SessionEnd"),
    ("Stop", "agentStop", "AfterAgent"),
    ("SubagentStop", "subagentStop", None),
    ("Notification", None, "Notification"),
    ("PreCompact", None, "PreCompress"),
    (None, "errorOccurred", None),
    (None, None, "BeforeModel"),
    (None, None, "AfterModel"),
    (None, None, "BeforeToolSelection"),
)
DIALECTS: tuple[Dialect, ...] = ("claude", "copilot", "gemini")
TOOL_EVENTS = (0, 1)
"""The rows of EVENTS whose matcher names tools (before and after a tool call)."""
TOOL_NAMES: dict[str, str] = {
    "Write": "write_file", "Edit": "replace", "MultiEdit": "replace", "Bash": "run_shell_command",
    "Read": "read_file", "Glob": "glob", "Grep": "grep_search", "WebFetch": "web_fetch",
    "WebSearch": "google_web_search", "Task": "invoke_agent", "Agent": "invoke_agent",
    "Skill": "activate_skill",
}
"""Claude Code's tool names → Gemini CLI's (matchers and agents' tool lists)."""
GEMINI_TO_CLAUDE = {v: k for k, v in TOOL_NAMES.items()} | {"replace": "Edit", "invoke_agent": "Agent"}
COPILOT_TOOLS: dict[str, str] = {
    "bash": "Bash", "shell": "Bash", "execute": "Bash", "view": "Read", "read": "Read",
    "create": "Write", "edit": "Edit", "grep": "Grep", "search": "Grep", "glob": "Glob",
    "task": "Agent", "agent": "Agent", "skill": "Skill", "web_fetch": "WebFetch", "fetch": "WebFetch",
}
"""Copilot's tool names and aliases → Claude Code's."""
ROOT_VARS = ("${CLAUDE_PLUGIN_ROOT}", "$CLAUDE_PLUGIN_ROOT", "${extensionPath}", "${PLUGIN_ROOT}",
             "$PLUGIN_ROOT", "${COPILOT_PLUGIN_ROOT}")
"""How each host names the plugin's folder in a hook command or server config."""
SEPARATOR_VAR = "${/}"
"""Gemini CLI's path separator variable."""


def event_names(dialect: Dialect) -> list[str]:
    i = DIALECTS.index(dialect)
    return [name for row in EVENTS if (name := row[i])]


def detect(events: dict[str, Any], wrapped: dict[str, Any]) -> Dialect | None:
    """The dialect a hooks object is written in, from its event names and entry keys."""
    if "version" in wrapped or any(
        isinstance(e, dict) and ("bash" in e or "timeoutSec" in e or "powershell" in e)
        for entries in events.values() if isinstance(entries, list) for e in entries
    ):
        return "copilot"
    votes = {d: sum(name in event_names(d) for name in events) for d in DIALECTS}
    best = max(DIALECTS, key=lambda d: votes[d])
    return best if votes[best] else None


def hooks_from(data: Any, rel: str, hint: Dialect) -> HookSource | None:
    """Hooks from a parsed object: `{"hooks": {...}}`, or the events map itself."""
    if not isinstance(data, dict):
        raise ConfigError(f"{rel}:1: hooks must be a JSON object of events; fix the file")
    events = data.get("hooks", data)
    if not isinstance(events, dict):
        raise ConfigError(f"{rel}:1: hooks: must be an object of events (e.g. PreToolUse); fix the file")
    events = {k: v for k, v in events.items() if isinstance(v, list)}
    if not events:
        return None
    return HookSource(detect(events, data) or hint, rel, events)


# --- the neutral hook ---


@dataclass(frozen=True)
class Hook:
    """One hook command, in no dialect: an event row of EVENTS, Claude's tool names."""

    event: int
    """Index into EVENTS."""
    tools: tuple[str, ...] | None
    """Claude Code's tool names the hook applies to; None: every tool (or a non-tool event)."""
    matcher: str | None
    """A matcher that is not a list of known names (a regex), kept as written."""
    command: str
    timeout_s: float | None


def neutral(source: HookSource) -> tuple[list[Hook], list[str]]:
    """The hooks of a source in no dialect, and what could not be read that way."""
    by_name = _events_of(source.dialect)
    hooks: list[Hook] = []
    lost: list[str] = []
    for name, entries in source.events.items():
        if name not in by_name:
            lost.append(f"event {name!r} is not a {_host(source.dialect)} event")
            continue
        for entry in entries:
            if not isinstance(entry, dict):
                continue
            if source.dialect == "copilot":
                hook, why = _from_copilot(by_name[name], entry)
                hooks += [hook] if hook else []
                lost += [why] if why else []
                continue
            tools, matcher = _matcher(str(entry.get("matcher") or ""), source.dialect)
            for command in entry.get("hooks") or []:
                if not isinstance(command, dict) or command.get("type", "command") != "command" \
                        or not isinstance(command.get("command"), str):
                    kind = command.get("type") if isinstance(command, dict) else command
                    lost.append(f"{name}: a {kind!r} hook runs no command and has no counterpart")
                    continue
                hooks.append(Hook(by_name[name], tools, matcher, command["command"],
                                  _seconds(command.get("timeout"), source.dialect)))
    return hooks, lost


def _events_of(dialect: Dialect) -> dict[str, int]:
    """Event name → row of EVENTS; Copilot also takes its events capitalised (`PostToolUse`)."""
    i = DIALECTS.index(dialect)
    names = {name: n for n, row in enumerate(EVENTS) if (name := row[i])}
    if dialect == "copilot":
        names |= {name[0].upper() + name[1:]: n for name, n in names.items()}
    return names


def _from_copilot(event: int, entry: dict[str, Any]) -> tuple[Hook | None, str | None]:
    command = entry.get("bash") or entry.get("command")
    if entry.get("type", "command") != "command" or not isinstance(command, str):
        return None, f"a {entry.get('type')!r} hook with no bash command has no counterpart"
    env: dict[str, Any] = entry["env"] if isinstance(entry.get("env"), dict) else {}
    prefix = " ".join(f"{k}={shlex.quote(str(v))}" for k, v in env.items() if str(k).isidentifier())
    if prefix:
        command = f"env {prefix} {command}"
    if isinstance(entry.get("cwd"), str):
        command = f"cd {shlex.quote(entry['cwd'])} && {command}"
    timeout = entry.get("timeoutSec")
    seconds = float(timeout) if isinstance(timeout, int | float) else None
    return Hook(event, None, None, command, seconds), None


def _matcher(matcher: str, dialect: Dialect) -> tuple[tuple[str, ...] | None, str | None]:
    """(Claude Code's tool names, None) for a list of known names; (None, matcher) for anything
    else (a regex is kept as written); (None, None) for every tool."""
    if matcher in ("", "*", ".*"):
        return None, None
    parts = matcher.split("|")
    names = {k: k for k in TOOL_NAMES} if dialect == "claude" else GEMINI_TO_CLAUDE
    if all(p in names for p in parts):
        return tuple(dict.fromkeys(names[p] for p in parts)), None
    return None, matcher


def _seconds(value: Any, dialect: Dialect) -> float | None:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    return value / 1000 if dialect == "gemini" else float(value)


# --- into a dialect ---


def convert(sources: tuple[HookSource, ...], dialect: Dialect) -> tuple[dict[str, Any], list[str]]:
    """Hook events in `dialect` from sources of any dialect, and warnings for what was lost."""
    out: dict[str, Any] = {}
    warnings: list[str] = []
    for source in sources:
        if source.dialect == dialect:
            for name, entries in source.events.items():
                out.setdefault(name, []).extend(entries)
            continue
        hooks, lost = neutral(source)
        warnings += [f"{source.path}: {why}" for why in lost]
        if source.dialect == "copilot" and hooks:
            warnings.append(f"{source.path}: Copilot hooks read Copilot's input (toolName, toolArgs); "
                            f"under another host the script gets that host's input")
        for hook in hooks:
            event, entry, why = _render(hook, dialect)
            if why:
                warnings.append(f"{source.path}: {why}")
            if event and entry:
                out.setdefault(event, []).append(entry)
    return out, warnings


def _render(hook: Hook, dialect: Dialect) -> tuple[str | None, dict[str, Any] | None, str | None]:
    claude = EVENTS[hook.event][0] or "?"
    name: str | None = EVENTS[hook.event][DIALECTS.index(dialect)]
    if name is None:
        return None, None, f"{_host_event(hook)} has no {_host(dialect)} counterpart; left out"
    if dialect == "copilot":
        entry: dict[str, Any] = {"type": "command", "bash": hook.command}
        if hook.timeout_s is not None:
            entry["timeoutSec"] = math.ceil(hook.timeout_s)
        why = (f"{claude} hook for {'|'.join(hook.tools or ())}: Copilot hooks have no matcher, so it "
               "runs for every tool") if hook.tools or hook.matcher else None
        return name, entry, why
    command: dict[str, Any] = {"type": "command", "command": hook.command}
    if hook.timeout_s is not None:
        seconds = hook.timeout_s
        command["timeout"] = round(seconds * 1000) if dialect == "gemini" else math.ceil(seconds)
    entry = {"hooks": [command]}
    matcher = _matcher_in(hook, dialect)
    if matcher:
        entry = {"matcher": matcher, **entry}
    why = None
    if hook.matcher is not None and hook.event in TOOL_EVENTS:
        why = f"matcher {hook.matcher!r} names tools this tool cannot map; kept as written"
    return name, entry, why


def _matcher_in(hook: Hook, dialect: Dialect) -> str | None:
    if hook.tools is None:
        return hook.matcher
    names = [TOOL_NAMES.get(t, t) for t in hook.tools] if dialect == "gemini" else list(hook.tools)
    return "|".join(dict.fromkeys(names))


def _host(dialect: Dialect) -> str:
    return {"claude": "Claude", "copilot": "Copilot", "gemini": "Gemini CLI"}[dialect]


def _host_event(hook: Hook) -> str:
    row = EVENTS[hook.event]
    return f"event {next(n for n in row if n)!r}"


def rewrite_root(value: Any, root: Path) -> Any:
    """Replace every host's plugin-root variable in every string of a JSON value."""
    if isinstance(value, str):
        for var in ROOT_VARS:
            value = value.replace(var, str(root))
        return value.replace(SEPARATOR_VAR, "/")
    if isinstance(value, list):
        return [rewrite_root(v, root) for v in value]
    if isinstance(value, dict):
        return {k: rewrite_root(v, root) for k, v in value.items()}
    return value


# --- lint ---


def lint(source: HookSource, lines: dict[tuple[str | int, ...], int]) -> list[Finding]:
    """What the dialect's documentation says a hooks file holds: known events, a command per
    hook, numeric timeouts; a Gemini timeout that reads like seconds."""
    found: list[Finding] = []
    known = list(_events_of(source.dialect))
    wrapped = ("hooks",) if ("hooks",) in lines else ()

    def at(*loc: str | int) -> int | None:
        for n in range(len(loc), -1, -1):
            if (*wrapped, *loc[:n]) in lines:
                return lines[(*wrapped, *loc[:n])]
        return None

    for name, entries in source.events.items():
        if name not in known:
            found.append(Finding(source.path, at(name),
                                 f"hooks.{name}: not a {_host(source.dialect)} hook event "
                                 f"(known: {', '.join(known)})"))
            continue
        for i, entry in enumerate(entries):
            commands = [entry] if source.dialect == "copilot" else (
                entry.get("hooks") if isinstance(entry, dict) else None) or []
            for j, command in enumerate(commands if isinstance(commands, list) else []):
                loc = (name, i) if source.dialect == "copilot" else (name, i, "hooks", j)
                found += _lint_command(source, command, at(*loc), f"hooks.{name}[{i}]")
    return found


def _lint_command(source: HookSource, command: Any, line: int | None, where: str) -> list[Finding]:
    if not isinstance(command, dict):
        return [Finding(source.path, line, f"{where}: a hook is an object with type and command")]
    key = "timeoutSec" if source.dialect == "copilot" else "timeout"
    timeout = command.get(key)
    found = []
    numeric = isinstance(timeout, int | float) and not isinstance(timeout, bool)
    if timeout is not None and (not numeric or timeout <= 0):
        found.append(Finding(source.path, line, f"{where}.{key}: must be a positive number"))
    elif source.dialect == "gemini" and isinstance(timeout, int | float) and timeout < 1000:
        found.append(Finding(source.path, line, f"{where}.timeout: {timeout} is in milliseconds in Gemini "
                             f"CLI ({timeout} ms); for {timeout} seconds write {int(timeout * 1000)}"))
    field = "bash" if source.dialect == "copilot" else "command"
    if command.get("type", "command") == "command" and not isinstance(command.get(field), str) \
            and not isinstance(command.get("command"), str):
        found.append(Finding(source.path, line, f"{where}: a command hook needs `{field}`"))
    return found
