"""Which engines exist: name → provider, default model and adapter; reserved names.

This module is imported by the command line and the settings, so it stays free of the
adapters themselves (and of pydantic): they are imported only when a live session needs one.
Adding an engine is one entry here plus its adapter module (`engines.base.get_engine` loads it).
"""

from __future__ import annotations

from dataclasses import dataclass

from aam_eval_action.errors import ConfigError, UnsupportedEngineError
from aam_eval_action.providers import provider_for_model


@dataclass(frozen=True)
class EngineInfo:
    """What the rest of the tool needs to know about an engine without loading it."""

    name: str
    """Config name, e.g. `claude-code`."""
    provider: str
    """Model provider of the CLI (a key in `providers.PROVIDERS`)."""
    default_model: str
    """Model used when neither eval-config nor `--model` sets one."""
    adapter: str
    """`module:Class` of the adapter, imported on first use."""
    cli: str = ""
    """The executable, e.g. `claude` (also how model traffic names the CLI)."""
    npm_package: str = ""
    """Where the CLI comes from, for install hints."""
    user_agent: str = ""
    """The start of the User-Agent the CLI sends its model requests with (`claude-cli`)."""
    enforces_no_network: bool = False
    """Whether `sandbox.network: false` cuts the agent's own commands off the network, not
    only its web tools (checked: a Bash command connecting to a local listener)."""
    providers: tuple[str, ...] = ()
    """Every provider the CLI can be pointed at, when it is more than `provider` (Copilot: the
    Anthropic Messages and the OpenAI Responses API)."""
    host: str = ""
    """The plugin host whose manifests, hooks dialect and context file it reads natively
    (`claude`, `codex`, `copilot`, `gemini`: see `layouts`)."""
    hook_dialects: tuple[str, ...] = ("claude",)
    """The hook dialects it reads, its own first; hooks of another are converted into the last."""
    skills_dir: str = ".agents/skills"
    """Where in the workspace it reads project skills (the package's and its neighbours go there)."""
    claude_native: bool = False
    """Claude Code itself: a Claude plugin is loaded as a plugin (`--plugin-dir`), a `claude plugin
    eval` case's execution fields are its own options, its tool names are the ones graders name,
    and its slash commands share the skill listing."""
    execution_fields: tuple[str, ...] = ()
    """The `claude plugin eval` execution fields it takes by names of its own (beyond Claude Code)."""
    listing_unit: str = "characters"
    """What its skill listing is measured in, as `budget` says it."""
    lists_in_check: bool = False
    """Whether `check` warns of a description it cuts, and when the package alone takes half of
    its listing budget."""
    invoke_skill: str = ""
    """How a prompt invokes a skill by name whatever routing decides (`{skill}` and `{skills_dir}`
    in it, the prompt after it), as the CLI does natively: the skill's content reaches the model
    with the prompt. Empty: no such way was verified on it."""
    invoke_skill_how: str = ""
    """How the report says the skill was invoked; without `invoke_skill`, why it cannot be."""
    listing: str = ""
    """The module of its skill-listing rule (`listing(skills, model, window, env)` and
    `description_cut(skill)`), imported on first use by `catalog.predict`."""

    def provider_for(self, model: str) -> str:
        """The provider that serves `model` on this engine: the model's own when the CLI can
        use it, else the engine's `provider`."""
        wanted = provider_for_model(model, self.provider)
        return wanted if wanted in self.providers else self.provider


ENGINES: dict[str, EngineInfo] = {
    # Claude Code: `network: false` denies WebFetch/WebSearch; Bash keeps the network.
    "claude-code": EngineInfo("claude-code", "anthropic", "claude-sonnet-4-6",
                              "aam_eval_action.engines.claude_code:ClaudeCode", cli="claude",
                              listing="aam_eval_action.engines.claude_code_listing",
                              npm_package="@anthropic-ai/claude-code", user_agent="claude-cli",
                              host="claude", skills_dir=".claude/skills", claude_native=True,
                              listing_unit="characters (Claude Code measures its listing in characters; no "
                                           "maintained tokenizer for Claude models runs offline, so tokens "
                                           "are not counted)", lists_in_check=True,
                              # verified: the first request holds the skill's SKILL.md body
                              invoke_skill="/{skill} ", invoke_skill_how="its slash command, /{skill}"),
    # Codex: its workspace-write sandbox (seccomp) refuses sockets to every command it runs;
    # it is used where ours has no Landlock (inside ours, Codex's own is off).
    "codex": EngineInfo("codex", "openai", "gpt-5.5", "aam_eval_action.engines.codex:Codex",
                        listing="aam_eval_action.engines.codex_listing",
                        cli="codex", npm_package="@openai/codex", user_agent="codex_",
                        enforces_no_network=True, host="codex",
                        listing_unit="tokens as Codex counts them (a line's UTF-8 bytes / 4); a body in "
                                     "characters", lists_in_check=True,
                        # verified: the first request holds the skill's SKILL.md body
                        invoke_skill="${skill} ", invoke_skill_how="a $ mention, ${skill}"),
    # Copilot, offline with a provider of ours (Anthropic, or OpenAI for a GPT model): no web
    # tool; its bash keeps the network.
    "copilot": EngineInfo("copilot", "anthropic", "claude-sonnet-4-6",
                          "aam_eval_action.engines.copilot:Copilot", cli="copilot",
                          listing="aam_eval_action.engines.copilot_listing",
                          npm_package="@github/copilot", providers=("anthropic", "openai"),
                          host="copilot", hook_dialects=("copilot", "claude"),
                          # its `--available-tools` and `--excluded-tools`
                          execution_fields=("execution.allowed_tools", "execution.disallowed_tools"),
                          listing_unit="characters (UTF-16 units, as Copilot CLI counts; no maintained "
                                       "tokenizer runs offline for its models, so tokens are not counted)",
                          lists_in_check=True,
                          # checked: under `-p` neither the skill's `/name` nor an `@file` reference
                          # reaches the first request
                          invoke_skill_how="under -p, Copilot CLI expands neither a skill's /name nor an "
                                           "@file reference"),
    # Gemini CLI: `network: false` removes its web tools; its shell keeps the network.
    "gemini-cli": EngineInfo("gemini-cli", "gemini", "gemini-2.5-pro",
                             "aam_eval_action.engines.gemini_cli:GeminiCli", cli="gemini",
                             listing="aam_eval_action.engines.gemini_cli_listing",
                             npm_package="@google/gemini-cli", user_agent="GeminiCLI", host="gemini",
                             hook_dialects=("gemini",),
                             # its `model.maxSessionTurns`, `tools.core` and `tools.exclude`
                             execution_fields=("execution.max_turns", "execution.allowed_tools",
                                               "execution.disallowed_tools"),
                             listing_unit="characters (Gemini CLI puts no budget on its listing; no "
                                          "maintained tokenizer for Gemini models runs offline, so tokens "
                                          "are not counted)",
                             # verified: under `-p` its `@file` reference puts the SKILL.md into the
                             # first request (its skills' slash commands exist only interactively)
                             invoke_skill="@{skills_dir}/{skill}/SKILL.md ",
                             invoke_skill_how="its file reference, @{skills_dir}/{skill}/SKILL.md"),
}


def register(info: EngineInfo) -> None:
    """Add an engine (or replace one of the same name): its adapter and listing modules are
    imported on first use, as the built-in ones are."""
    if info.name in RESERVED_NAMES:
        raise ConfigError(f"{info.name!r} is a reserved engine name")
    ENGINES[info.name] = info


def engine_names() -> tuple[str, ...]:
    """Every registered engine's name, in registration order."""
    return tuple(ENGINES)


ENGINE_NAMES = engine_names()
"""The built-in engines (an engine registered later is in `engine_names()`)."""
DEFAULT_ENGINE = "claude-code"
"""The engine of a repository that names none (no eval-config) and whose hosts include Claude."""


def engine_for_hosts(hosts: list[str]) -> str:
    """The engine a repository without eval-config runs on: Claude Code when it is a Claude
    plugin (or names no host), else the engine of its first host."""
    if not hosts or ENGINES[DEFAULT_ENGINE].host in hosts:
        return DEFAULT_ENGINE
    return next((e.name for e in ENGINES.values() if e.host == hosts[0]), DEFAULT_ENGINE)

RESERVED: dict[str, str] = {
    "cursor": ("Cursor's agent CLI is not on a package registry and talks only to Cursor's own "
               "service, so it can neither be installed here nor pointed at your own endpoint"),
}
"""Names the AAM spec reserves: valid in a config, refused with an unsupported-engine error."""
RESERVED_NAMES = tuple(RESERVED)


def engine_of_cli(cli: str) -> EngineInfo | None:
    """The engine whose executable is `cli`."""
    return next((e for e in ENGINES.values() if e.cli == cli), None)


def engine_of_user_agent(agent: str) -> EngineInfo | None:
    """The engine whose CLI sends this User-Agent."""
    return next((e for e in ENGINES.values() if e.user_agent and agent.startswith(e.user_agent)), None)


def check_engine_name(name: str, where: str = "") -> None:
    """Reserved names fail with the seed's unsupported-engine error; unknown ones are config errors.

    `where` says where the name was written (`evals/eval-config.json:3: engine`, `--engine`).
    """
    prefix = f"{where}: " if where else ""
    if name in RESERVED:
        raise UnsupportedEngineError(
            f"{prefix}unsupported engine {name!r}: {RESERVED[name]}; use engine {_choices()}"
        )
    if name not in ENGINES:
        raise ConfigError(f"{prefix}unknown engine {name!r}; use {_choices()}")


def engine_info(name: str) -> EngineInfo:
    """The registry entry for a config name (errors for reserved and unknown names)."""
    check_engine_name(name)
    return ENGINES[name]


def _choices() -> str:
    return " or ".join(f'"{n}"' for n in engine_names())
