"""What both engines share: installing a package's files into a workspace.

Hooks use Claude Code's format for both CLIs; `${CLAUDE_PLUGIN_ROOT}` is rewritten to the
package copy inside the workspace, because a hook copied as-is outside a plugin does not run.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from aam_eval_action.package import PackageLayout

PACKAGE_COPY = ".aam/package"


PLUGIN_ROOT_VARS = ("${CLAUDE_PLUGIN_ROOT}", "$CLAUDE_PLUGIN_ROOT")


def copy_skills(package: PackageLayout, target: str | None, dest: Path) -> None:
    """Copy the skills this target gets into `dest/<name>/`.

    Listing the files first refuses a symlink that points outside the package.
    """
    package.files_for(target)
    for name in package.skills_for(target):
        copy_tree(package.root / "skills" / name, dest / name)


def copy_package(package: PackageLayout, target: str | None, workspace: Path) -> Path:
    """Copy the package's non-skill files into the workspace; returns that directory (absolute).

    `files_for` has refused links out of the package; links inside it are copied as files.
    """
    root = (workspace / PACKAGE_COPY).resolve()
    for rel in package.files_for(target):
        if rel.startswith("skills/"):
            continue
        dest = root / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(package.root / rel, dest)
    return root


def copy_tree(src: Path, dest: Path) -> None:
    """Copy a directory when it exists, keeping file modes."""
    if src.is_dir():
        shutil.copytree(src, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))


def hooks_config(package: PackageLayout, root: Path) -> dict[str, Any]:
    """The package's hooks by event, with plugin-root paths pointing at the copied package.

    A hook command naming `${CLAUDE_PLUGIN_ROOT}` is refused outside a plugin, so it is
    rewritten to the absolute path of the package copy.
    """
    path = package.root / "hooks" / "hooks.json"
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    events = data.get("hooks", data) if isinstance(data, dict) else None
    if not isinstance(events, dict):
        return {}
    return {k: rewrite_root(v, root) for k, v in events.items() if isinstance(v, list)}


def mcp_servers(package: PackageLayout, root: Path) -> dict[str, Any]:
    """MCP servers from `mcp/servers.json` (a `mcpServers`/`servers` mapping or a bare one)."""
    path = package.root / "mcp" / "servers.json"
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    servers = data.get("mcpServers", data.get("servers", data)) if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        return {}
    return {k: rewrite_root(v, root) for k, v in servers.items() if isinstance(v, dict)}


def rewrite_root(value: Any, root: Path) -> Any:
    """Replace the plugin-root variable in every string of a JSON value."""
    if isinstance(value, str):
        for var in PLUGIN_ROOT_VARS:
            value = value.replace(var, str(root))
        return value
    if isinstance(value, list):
        return [rewrite_root(v, root) for v in value]
    if isinstance(value, dict):
        return {k: rewrite_root(v, root) for k, v in value.items()}
    return value


def instructions(package: PackageLayout) -> str:
    """AGENTS.md followed by every `rules/<name>/RULE.md`, as one instructions text."""
    parts = []
    agents_md = package.root / "AGENTS.md"
    if agents_md.is_file():
        parts.append(agents_md.read_text(encoding="utf-8").strip())
    for rule in sorted((package.root / "rules").glob("*/RULE.md")):
        parts.append(rule.read_text(encoding="utf-8").strip())
    return "\n\n".join(p for p in parts if p)


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
