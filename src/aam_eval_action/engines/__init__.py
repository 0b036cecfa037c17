"""Agent engines: install a package into a workspace the way a CLI reads it, and run the CLI."""

from __future__ import annotations

from aam_eval_action.engines.base import Engine
from aam_eval_action.errors import ConfigError, UnsupportedEngineError

# One place for what each engine runs by default; the run settings read these without
# importing the engine modules (replay never needs them).
PROVIDERS = {"claude-code": "anthropic", "codex": "openai"}
DEFAULT_MODELS = {"claude-code": "claude-sonnet-4-6", "codex": "gpt-5.5"}

RESERVED = {
    "copilot": "GitHub Copilot has no public headless eval mode",
    "cursor": "Cursor has no headless mode",
}


def check_engine_name(name: str) -> None:
    """Reserved names fail with the seed's unsupported-engine error; unknown ones are config errors."""
    if name in RESERVED:
        raise UnsupportedEngineError(
            f"unsupported engine {name!r}: {RESERVED[name]} yet; "
            "use engine \"claude-code\" or \"codex\""
        )
    if name not in ("claude-code", "codex"):
        raise ConfigError(f"unknown engine {name!r}; use \"claude-code\" or \"codex\"")


def get_engine(name: str) -> Engine:
    """The engine for a config name (imported only when a live session needs it)."""
    check_engine_name(name)
    if name == "claude-code":
        from aam_eval_action.engines.claude_code import ClaudeCode

        return ClaudeCode()
    from aam_eval_action.engines.codex import Codex

    return Codex()
