"""Gemini CLI extensions: `gemini-extension.json` (`name`, `version`, `contextFileName`,
`mcpServers`, `excludeTools`), with `commands/**/*.toml`, `skills/`, `agents/*.md` and
`hooks/hooks.json` in Gemini CLI's own events (`BeforeTool`…, timeouts in milliseconds,
`${extensionPath}` for the extension's folder)."""

from __future__ import annotations

from pathlib import Path

from aam_eval_action.layouts.common import Json, Parts, inside
from aam_eval_action.layouts.plugin import Host
from aam_eval_action.package import Finding

DEFAULT_CONTEXT = "GEMINI.md"


def extra(root: Path, base: str, manifest: Json | None, parts: Parts) -> None:
    """Its context file(s) and excluded tools (its inline `mcpServers` are read like any host's)."""
    data = manifest.data if manifest is not None else {}
    names = data.get("contextFileName") or DEFAULT_CONTEXT
    for i, name in enumerate(names if isinstance(names, list) else [names]):
        where = manifest.at("contextFileName", i) if manifest is not None else DEFAULT_CONTEXT
        rel = inside(root, base, name, where)
        if (root / rel).is_file():
            parts.context.append(rel)
    tools = data.get("excludeTools")
    if isinstance(tools, list):
        parts.exclude_tools += [str(t) for t in tools if isinstance(t, str)]


def lint(manifest: Json) -> list[Finding]:
    """`name` and `version` are required; the other documented fields have their types."""
    data = manifest.data
    found = [Finding(manifest.rel, manifest.line(key), f"{key}: required by Gemini CLI; add it")
             for key in ("name", "version") if not isinstance(data.get(key), str)]
    context = data.get("contextFileName")
    if context is not None and not isinstance(context, str | list):
        found.append(Finding(manifest.rel, manifest.line("contextFileName"),
                             "contextFileName: should be a file name or a list of them"))
    if "excludeTools" in data and not isinstance(data["excludeTools"], list):
        found.append(Finding(manifest.rel, manifest.line("excludeTools"), "excludeTools: should be a list"))
    if "mcpServers" in data and not isinstance(data["mcpServers"], dict):
        found.append(Finding(manifest.rel, manifest.line("mcpServers"),
                             "mcpServers: should be an object of servers by name"))
    return found


HOST = Host(name="gemini", kind="gemini-extension", manifests=("gemini-extension.json",),
            dialect="gemini", agent_format="gemini", command_suffix=".toml",
            defaults=("skills", "agents", "commands", "hooks"), lint=lint, extra=extra)
