"""GitHub Copilot CLI plugins: `.plugin/plugin.json`, `plugin.json`, `.github/plugin/plugin.json`
(or Claude's `.claude-plugin/plugin.json`), with `agents/*.agent.md`, `skills/`, `commands/`,
`hooks.json` in Copilot's own dialect (`{"version": 1, "hooks": {"preToolUse": […]}}`) and
`.mcp.json`. Its manifest may name components outside its folder: `./agents/x.md` there means
the repository's `agents/x.agent.md`."""

from __future__ import annotations

from aam_eval_action.layouts.claude_plugin import lint
from aam_eval_action.layouts.plugin import Host

HOST = Host(name="copilot", kind="copilot-plugin",
            manifests=(".plugin/plugin.json", "plugin.json", ".github/plugin/plugin.json"),
            dialect="copilot", agent_format="copilot", agent_suffixes=(".agent.md", ".md"),
            hooks_file="hooks.json", outside=True, lint=lint)
