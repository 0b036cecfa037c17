"""What every engine shares: installing a neutral package's files into a workspace.

Each engine asks for its own host's files (hooks dialect, agent and command format) and gets
them as written when the package has them, or converted from another host's. The plugin-root
variables (`${CLAUDE_PLUGIN_ROOT}`, `${extensionPath}`…) are rewritten to the package copy
inside the workspace: a hook copied as-is outside a plugin does not run.
"""

from __future__ import annotations

import json
import re
import shutil
import tomllib
from pathlib import Path
from typing import Any

import yaml

from aam_eval_action.hooks import COPILOT_TOOLS, GEMINI_TO_CLAUDE, TOOL_NAMES, convert, rewrite_root
from aam_eval_action.package import AgentDef, CommandDef, Dialect, HookSource, PackageLayout

PACKAGE_COPY = ".aam/package"
PREFERENCE: dict[Dialect, tuple[Dialect, ...]] = {
    "claude": ("claude", "gemini", "copilot"),
    "copilot": ("copilot", "claude", "gemini"),
    "gemini": ("gemini", "claude", "copilot"),
}
"""Whose hooks an engine takes: its own host's when the package has them, else the closest."""


def copy_skills(package: PackageLayout, target: str | None, dest: Path) -> None:
    """Copy the skills this target gets into `dest/<name>/`.

    Listing the files first refuses a symlink that points outside the package.
    """
    package.files_for(target)
    for name in package.skills_for(target):
        source = package.skill_dir(name)
        for rel in _files(package, source):
            _copy(package.root / rel, dest / name / (package.root / rel).relative_to(source))


def _files(package: PackageLayout, folder: Path) -> list[str]:
    from aam_eval_action.package import walk_files

    return walk_files(package.root, folder, plugin=package.kind != "aam")


def copy_package(package: PackageLayout, target: str | None, workspace: Path) -> Path:
    """Copy the package's non-skill files into the workspace; returns that directory (absolute).

    `files_for` has refused links out of the package; links inside it are copied as files.
    """
    root = (workspace / PACKAGE_COPY).resolve()
    package.files_for(target)
    for rel in package.copied_files(target):
        _copy(package.root / rel, root / package.relative(package.root / rel))
    return root


def _copy(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dest)


# --- hooks ---


def chosen_hooks(package: PackageLayout, reads: tuple[Dialect, ...]) -> tuple[HookSource, ...]:
    """The package's hooks files an engine that reads `reads` natively gets: every file of the
    first dialect (in the engine's preference) that the package has."""
    sources = package.hooks
    for dialect in PREFERENCE[reads[0]]:
        found = tuple(s for s in sources if s.dialect == dialect)
        if found:
            return found
    return ()


def hooks_config(package: PackageLayout, root: Path, dialect: Dialect = "claude",
                 reads: tuple[Dialect, ...] | None = None) -> dict[str, Any]:
    """The package's hooks by event in `dialect`, from its own host's file(s) when it has them,
    converted from another's when not; plugin-root paths point at the package copy `root`."""
    events, _ = convert(chosen_hooks(package, reads or (dialect,)), dialect)
    return {k: rewrite_root(v, root) for k, v in events.items()}


def conversion_warnings(package: PackageLayout, reads: tuple[Dialect, ...]) -> list[str]:
    """What an engine that reads the hook dialects `reads` loses of the package: its hooks
    converted from another host's dialect, Gemini CLI's excluded tools elsewhere."""
    sources = chosen_hooks(package, reads)
    _, warnings = ([], []) if sources and sources[0].dialect in reads else convert(sources, reads[-1])
    if package.exclude_tools and "gemini" not in reads:
        warnings.append(f"excludeTools ({', '.join(package.exclude_tools)}) applies to Gemini CLI only; "
                        "not converted")
    return warnings


def mcp_servers(package: PackageLayout, root: Path) -> dict[str, Any]:
    """The package's MCP servers by name, plugin-root paths pointing at the package copy."""
    return {k: rewrite_root(v, root) for k, v in package.mcp.items() if isinstance(v, dict)}


def instructions(package: PackageLayout) -> str:
    """The package's context files (AGENTS.md and rules, a Gemini CLI context file) as one text."""
    parts = [(package.root / rel).read_text(encoding="utf-8").strip() for rel in package.context]
    return "\n\n".join(p for p in parts if p)


# --- agents ---


def write_agents(
    package: PackageLayout, dest: Path, dialect: Dialect = "claude", keep: tuple[str, ...] = ("claude",),
    formats: tuple[str, ...] | None = None, suffix: str = ".md",
) -> None:
    """Each agent (of `formats`, default all) as `dest/<name><suffix>`, a Markdown file with
    frontmatter in `dialect`'s tool names (Gemini CLI's: a list and a slug name); an agent
    already in a format of `keep` is copied as written."""
    for agent in package.agents:
        if formats is not None and agent.format not in formats:
            continue
        src = package.root / agent.path
        dest.mkdir(parents=True, exist_ok=True)
        if agent.format in keep and agent.format != "aam":
            name = Path(agent.path).name if agent.format == "claude" else agent.name + suffix
            shutil.copy2(src, dest / name)
            continue
        name = agent.name if dialect != "gemini" else slug(agent.name) or agent.name
        (dest / f"{name}{suffix}").write_text(agent_file(package, agent, dialect), encoding="utf-8")


def agent_file(package: PackageLayout, agent: AgentDef, dialect: Dialect) -> str:
    """An agent in `dialect`: frontmatter name/description/tools, then the system prompt. Other
    keys (a model, a colour) belong to the host it was written for and are left out."""
    front, prompt = _agent_parts(package, agent)
    front = {k: front[k] for k in ("name", "description", "tools") if k in front}
    tools = front.get("tools")
    listed = tools.split(",") if isinstance(tools, str) else tools or []
    names = [str(t).strip() for t in listed if str(t).strip()]
    claude = [_claude_tool(str(t), agent.format) for t in names]
    if dialect == "gemini":
        front["name"] = slug(str(front.get("name") or agent.name)) or agent.name
        if names:
            front["tools"] = list(dict.fromkeys(TOOL_NAMES.get(t, t) for t in claude))
    elif names:
        front["tools"] = ", ".join(dict.fromkeys(claude))
    return f"---\n{yaml.safe_dump(front, sort_keys=False)}---\n\n{prompt.strip()}\n"


def _agent_parts(package: PackageLayout, agent: AgentDef) -> tuple[dict[str, Any], str]:
    """(frontmatter, prompt) of an AAM agent folder (agent.yaml + system-prompt.md) or a file."""
    path = package.root / agent.path
    if agent.format == "aam":
        spec_path = path / "agent.yaml"
        spec = yaml.safe_load(spec_path.read_text(encoding="utf-8")) if spec_path.is_file() else {}
        spec = spec if isinstance(spec, dict) else {}
        front: dict[str, Any] = {"name": str(spec.get("name", agent.name)),
                                 "description": str(spec.get("description") or f"The {agent.name} agent.")}
        if isinstance(spec.get("tools"), list) and spec["tools"]:
            front["tools"] = [str(t) for t in spec["tools"]]
        prompt_path = path / "system-prompt.md"
        return front, prompt_path.read_text(encoding="utf-8") if prompt_path.is_file() else ""
    from aam_eval_action.layouts.common import frontmatter

    front, body_line = frontmatter(package.root, agent.path)
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    front = {"name": agent.name, **front} if "name" not in front else front
    front.setdefault("description", f"The {agent.name} agent.")
    return front, "\n".join(lines[body_line - 1:]) if front else "\n".join(lines)


def _claude_tool(name: str, fmt: str) -> str:
    if fmt == "gemini":
        return GEMINI_TO_CLAUDE.get(name, name)
    if fmt == "copilot":
        return COPILOT_TOOLS.get(name, name)
    return name


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9_-]+", "-", name.lower()).strip("-")


# --- commands ---


def write_commands(package: PackageLayout, dest: Path, fmt: str) -> None:
    """Each command as `dest/<name>.<fmt>`: copied when written so, else converted (a TOML
    command's `prompt` becomes a Markdown command's body, `{{args}}` ↔ `$ARGUMENTS`)."""
    for command in package.commands:
        src = package.root / command.path
        dest.mkdir(parents=True, exist_ok=True)
        target = dest / f"{command.name}.{fmt}"
        target.parent.mkdir(parents=True, exist_ok=True)
        if command.format == fmt:
            shutil.copy2(src, target)
            continue
        description, prompt = _command_parts(package, command)
        if fmt == "toml":
            prompt = prompt.replace("$ARGUMENTS", "{{args}}")
            text = f"description = {json.dumps(description)}\nprompt = {json.dumps(prompt)}\n"
        else:
            head = f"---\n{yaml.safe_dump({'description': description})}---\n\n" if description else ""
            text = head + prompt.replace("{{args}}", "$ARGUMENTS").strip() + "\n"
        target.write_text(text, encoding="utf-8")


def _command_parts(package: PackageLayout, command: CommandDef) -> tuple[str, str]:
    """(description, prompt) of a TOML or Markdown command; a file that does not parse is an
    error naming it."""
    from aam_eval_action.errors import ConfigError
    from aam_eval_action.layouts.common import frontmatter

    text = (package.root / command.path).read_text(encoding="utf-8", errors="replace")
    if command.format == "toml":
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{command.path}: invalid TOML: {exc}; fix the command file") from None
        return str(data.get("description") or ""), str(data.get("prompt") or "")
    front, body_line = frontmatter(package.root, command.path)
    body = "\n".join(text.splitlines()[body_line - 1:]) if front else text
    return str(front.get("description") or ""), body.strip() + "\n"


# --- files ---


def append_text(path: Path, text: str) -> None:
    """Append a block of text to a file (creating it), separated from what is there."""
    if not text:
        return
    old = path.read_text(encoding="utf-8").rstrip() + "\n\n" if path.is_file() else ""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(old + text + "\n", encoding="utf-8")


def merge_json(path: Path, extra: dict[str, Any]) -> None:
    """Merge keys into a JSON object file; hook lists of the same event are concatenated."""
    data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    for key, value in extra.items():
        old = data.get(key)
        if key == "hooks" and isinstance(old, dict):
            value = {e: old.get(e, []) + v for e, v in value.items()} | {
                e: v for e, v in old.items() if e not in value
            }
        elif isinstance(old, dict) and isinstance(value, dict):
            value = old | value
        data[key] = value
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
