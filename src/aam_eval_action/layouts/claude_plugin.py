"""Claude Code plugins: `.claude-plugin/plugin.json` (optional: without it the plugin is named
after its folder), `skills/`, `agents/*.md`, `commands/*.md`, `hooks/hooks.json` and `.mcp.json`
at the plugin's root; the manifest's `skills`, `agents`, `commands`, `hooks` and `mcpServers`
(`./` paths, or the object inline) add to those."""

from __future__ import annotations

import re

from aam_eval_action.layouts.common import Json
from aam_eval_action.layouts.plugin import Host
from aam_eval_action.package import Finding

PLUGIN_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
STRINGS = ("version", "description", "homepage", "repository", "license")
PATHS = ("skills", "agents", "commands", "hooks", "mcpServers", "outputStyles", "lspServers")


def lint(manifest: Json) -> list[Finding]:
    """The documented fields: a kebab-case `name`, strings where strings go, component paths
    that start with `./`; unknown keys are accepted."""
    data = manifest.data
    found = []
    name = data.get("name")
    if not isinstance(name, str) or not PLUGIN_NAME.match(name):
        found.append(Finding(manifest.rel, manifest.line("name"),
                             f"name: {name!r} should be a kebab-case plugin name (no spaces)"))
    for key in STRINGS:
        if key in data and not isinstance(data[key], str):
            found.append(Finding(manifest.rel, manifest.line(key), f"{key}: should be a string"))
    if "author" in data and not isinstance(data["author"], dict | str):
        found.append(Finding(manifest.rel, manifest.line("author"),
                             "author: should be an object (name, email)"))
    if "keywords" in data and not (isinstance(data["keywords"], list)
                                   and all(isinstance(k, str) for k in data["keywords"])):
        found.append(Finding(manifest.rel, manifest.line("keywords"),
                             "keywords: should be a list of strings"))
    for key in PATHS:
        values = data.get(key)
        for i, value in enumerate(values if isinstance(values, list) else [values]):
            if isinstance(value, str) and not value.startswith("./"):
                at = manifest.line(key, i) if isinstance(values, list) else manifest.line(key)
                found.append(Finding(manifest.rel, at, f"{key}: {value!r} should start with ./ "
                                     "(relative to the plugin's root)"))
    return found


HOST = Host(name="claude", kind="claude-plugin", manifests=(".claude-plugin/plugin.json",),
            dialect="claude", agent_format="claude", lint=lint)
