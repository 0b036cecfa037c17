"""AAM packages: `package.agent.json` with `skills/<name>/`, `hooks/hooks.json` (Claude's format),
`rules/<name>/RULE.md`, `commands/*.md`, `agents/<name>/` (agent.yaml + system-prompt.md) or
`agents/*.md`, `mcp/servers.json` and `AGENTS.md`, read as they always were."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aam_eval_action.errors import ConfigError
from aam_eval_action.hooks import hooks_from
from aam_eval_action.layouts.common import load_json
from aam_eval_action.package import AgentDef, CommandDef, PackageLayout

MANIFEST = "package.agent.json"


def read(root: Path) -> PackageLayout | None:
    """The package at the root, or None when it has no `package.agent.json`."""
    if not (root / MANIFEST).is_file():
        return None
    skills = root / "skills"
    agents = root / "agents"
    commands = root / "commands"
    context = ["AGENTS.md"] if (root / "AGENTS.md").is_file() else []
    context += [p.relative_to(root).as_posix() for p in sorted((root / "rules").glob("*/RULE.md"))]
    hooks = _hooks(root)
    folders = sorted(p for p in agents.iterdir() if p.is_dir()) if agents.is_dir() else []
    found = sorted(p for p in skills.iterdir() if (p / "SKILL.md").is_file()) if skills.is_dir() else []
    return PackageLayout(
        root,
        skill_dirs={p.name: f"skills/{p.name}" for p in found},
        agents=tuple([AgentDef(p.name, f"agents/{p.name}", "aam") for p in folders]
                     + [AgentDef(p.stem, f"agents/{p.name}", "claude") for p in sorted(agents.glob("*.md"))]),
        commands=tuple(CommandDef(p.stem, f"commands/{p.name}", "md") for p in sorted(commands.glob("*.md")))
        if commands.is_dir() else (),
        hooks=(hooks,) if hooks else (),
        mcp=_servers(root),
        mcp_files=("mcp/servers.json",) if (root / "mcp/servers.json").is_file() else (),
        context=tuple(context),
        hosts=("claude",),
    )


def _hooks(root: Path) -> Any:
    rel = "hooks/hooks.json"
    if not (root / rel).is_file():
        return None
    return hooks_from(load_json(root, rel).data, rel, "claude")


def _servers(root: Path) -> dict[str, Any]:
    """`mcp/servers.json`: a `mcpServers`/`servers` map, or a bare one."""
    rel = "mcp/servers.json"
    if not (root / rel).is_file():
        return {}
    data = load_json(root, rel).data
    if not isinstance(data, dict):
        raise ConfigError(f"{rel}:1: must be a JSON object")
    servers = data.get("mcpServers", data.get("servers", data))
    return {k: v for k, v in servers.items() if isinstance(v, dict)} if isinstance(servers, dict) else {}
