"""The plugin hosts, in the order their manifests are read."""

from __future__ import annotations

from aam_eval_action.layouts import claude_plugin, codex_plugin, copilot_plugin, gemini_extension
from aam_eval_action.layouts.plugin import Host

HOSTS: tuple[Host, ...] = (claude_plugin.HOST, codex_plugin.HOST, copilot_plugin.HOST, gemini_extension.HOST)
