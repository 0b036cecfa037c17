"""Codex plugins: `.codex-plugin/plugin.json` names its `skills` folder, its `mcpServers`
file (`.mcp.json`) and its `hooks` (Claude's format, which Codex reads); `skills/` and
`.mcp.json` are read by default. Codex has no agents or commands of a plugin."""

from __future__ import annotations

from aam_eval_action.layouts.claude_plugin import lint
from aam_eval_action.layouts.plugin import Host

HOST = Host(name="codex", kind="codex-plugin", manifests=(".codex-plugin/plugin.json",),
            dialect="claude", agent_format="claude", defaults=("skills", "hooks", "mcp"), lint=lint)
