"""Engine-neutral tool names, mapped from each CLI's own tool names, and skill-trigger detection.

| neutral | Claude Code                    | Codex                        | Copilot                    |
| ------- | ------------------------------ | ---------------------------- | -------------------------- |
| read    | Read, NotebookRead             | -                            | view                       |
| write   | Write                          | file_change adding a file    | create                     |
| edit    | Edit, MultiEdit, NotebookEdit  | file_change updating/deleting| edit                       |
| shell   | Bash, BashOutput               | command_execution            | bash, read_bash, write_bash|
| skill   | Skill, or a Read of a SKILL.md | a command reading a SKILL.md | skill, or a view of one    |
| search  | Glob, Grep                     | -                            | glob, grep                 |
| web     | WebFetch, WebSearch            | web_search                   | web_fetch                  |

Gemini CLI: read_file → read, write_file → write, replace → edit, run_shell_command → shell,
activate_skill → skill, glob / grep_search / list_directory → search, web_fetch /
google_web_search → web.

Codex has no read, search or skill tool: it reads, greps and loads skills through its shell.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from aam_eval_action.session import ToolCall

NeutralTool = Literal["read", "write", "edit", "shell", "skill", "search", "web"]
NEUTRAL_TOOLS: tuple[NeutralTool, ...] = ("read", "write", "edit", "shell", "skill", "search", "web")

CLAUDE_TOOLS: dict[str, NeutralTool] = {
    "Read": "read", "NotebookRead": "read",
    "Write": "write",
    "Edit": "edit", "MultiEdit": "edit", "NotebookEdit": "edit",
    "Bash": "shell", "BashOutput": "shell",
    "Skill": "skill",
    "Glob": "search", "Grep": "search",
    "WebFetch": "web", "WebSearch": "web",
}
CODEX_TOOLS: dict[str, NeutralTool] = {"command_execution": "shell", "web_search": "web"}
GEMINI_TOOLS: dict[str, NeutralTool] = {
    "read_file": "read", "read_many_files": "read", "write_file": "write", "replace": "edit",
    "run_shell_command": "shell", "activate_skill": "skill",
    "glob": "search", "grep_search": "search", "list_directory": "search",
    "web_fetch": "web", "google_web_search": "web",
}
COPILOT_TOOLS: dict[str, NeutralTool] = {
    "view": "read", "create": "write", "edit": "edit",
    "bash": "shell", "read_bash": "shell", "write_bash": "shell",
    "skill": "skill", "glob": "search", "grep": "search", "rg": "search", "web_fetch": "web",
}
"""Copilot's tools; with a GPT model it offers `apply_patch` (write or edit, by its patch) and `rg`."""
_SKILL_FILE = re.compile(r"skills/([A-Za-z0-9._-]+)/SKILL\.md")


def neutral_names(call: ToolCall) -> list[NeutralTool]:
    """The engine-neutral names one recorded call counts as (none for unmapped tools, e.g. MCP)."""
    names: list[NeutralTool] = []
    mapped = (CLAUDE_TOOLS.get(call.name) or CODEX_TOOLS.get(call.name) or COPILOT_TOOLS.get(call.name)
              or GEMINI_TOOLS.get(call.name))
    if mapped:
        names.append(mapped)
    elif call.name == "file_change":
        names.append(_file_change_kind(call))
    elif call.name == "apply_patch":
        names.append(_patch_kind(call))
    if mapped != "skill" and skills_loaded(call):
        names.append("skill")
    return names


def _patch_kind(call: ToolCall) -> NeutralTool:
    """An `apply_patch` that only adds files writes; one that updates or deletes one edits."""
    text = "\n".join(str(v) for v in call.input.values())
    if "*** Add File:" in text and "*** Update File:" not in text and "*** Delete File:" not in text:
        return "write"
    return "edit"


def _file_change_kind(call: ToolCall) -> NeutralTool:
    kinds = {str(c.get("kind")) for c in call.input.get("changes") or [] if isinstance(c, dict)}
    return "write" if kinds <= {"add"} and kinds else "edit"


def skills_loaded(call: ToolCall) -> list[str]:
    """Names of the skills this call loaded: the Skill tool, or a Read or command of a SKILL.md."""
    if call.name in ("Skill", "skill", "activate_skill"):
        name = str(call.input.get("skill") or call.input.get("name") or call.input.get("command") or "")
        return [name.rsplit(":", 1)[-1]] if name else []
    if call.name in ("Read", "view", "read_file"):
        return _SKILL_FILE.findall(str(call.input.get("file_path") or call.input.get("path") or ""))
    if call.name in ("Bash", "command_execution", "bash", "run_shell_command"):
        return _SKILL_FILE.findall(str(call.input.get("command") or ""))
    return []


def skill_triggered(calls: list[ToolCall], skill: str) -> bool:
    """Whether any call loaded the named skill."""
    return skill in skills_fired(calls)


def skills_fired(calls: list[ToolCall]) -> list[str]:
    """Every skill the session loaded, each once, in the order it was first loaded."""
    return list(dict.fromkeys(name for call in calls for name in skills_loaded(call)))


def neutral_sequence(calls: list[ToolCall]) -> list[NeutralTool]:
    """Every call's neutral names, in call order."""
    return [name for call in calls for name in neutral_names(call)]
