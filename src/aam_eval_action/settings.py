"""Run settings: eval-config merged with command-line overrides, resolved once per run."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from aam_eval_action.config import EvalConfig, Mode
from aam_eval_action.engines import DEFAULT_MODELS, PROVIDERS
from aam_eval_action.judge import DEFAULT_JUDGE, provider_for
from aam_eval_action.loader import LoadedPackage

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class Overrides:
    """What the command line can override; None means "from eval-config"."""

    engine: str | None = None
    model: str | None = None
    judge: str | None = None
    mode: Mode | None = None
    jobs: int | None = None
    repeat: int | None = None
    cassettes: Path | None = None
    timeout: float | None = None


@dataclass(frozen=True)
class RunSettings:
    """Everything a run needs to know, resolved."""

    package: LoadedPackage
    engine: str
    model: str
    judge_model: str
    judge_provider: str
    mode: Mode
    jobs: int
    repeat: int
    min_pass: int
    timeout: float
    cassettes: Path
    agent_env: dict[str, str] = field(default_factory=dict)
    secret_values: dict[str, str] = field(default_factory=dict)

    @property
    def config(self) -> EvalConfig:
        return self.package.config

    def base_url(self, provider: str) -> str | None:
        name = "ANTHROPIC_BASE_URL" if provider == "anthropic" else "OPENAI_BASE_URL"
        return self.agent_env.get(name) or os.environ.get(name) or None

    def api_key(self, provider: str) -> str | None:
        name = "ANTHROPIC_API_KEY" if provider == "anthropic" else "OPENAI_API_KEY"
        return self.agent_env.get(name) or os.environ.get(name) or None


def resolve(package: LoadedPackage, o: Overrides) -> RunSettings:
    """Merge flags over eval-config, the way the seed says flags override config."""
    cfg = package.config
    engine = o.engine or cfg.engine
    model = o.model or cfg.model or DEFAULT_MODELS.get(engine, "")
    provider = PROVIDERS.get(engine, "anthropic")
    judge_model = o.judge or cfg.judge or model or DEFAULT_JUDGE[provider]
    env, secrets = agent_environment(cfg)
    repeat = o.repeat or cfg.repeat
    return RunSettings(
        package=package,
        engine=engine,
        model=model,
        judge_model=judge_model,
        judge_provider=provider_for(judge_model, provider),
        mode=o.mode or cfg.mode,
        jobs=o.jobs or cfg.jobs,
        repeat=repeat,
        min_pass=min(cfg.min_pass or repeat, repeat),
        timeout=o.timeout or cfg.timeout,
        cassettes=(o.cassettes or package.layout.evals_dir / cfg.cassettes).resolve(),
        agent_env=env,
        secret_values=secrets,
    )


def agent_environment(cfg: EvalConfig) -> tuple[dict[str, str], dict[str, str]]:
    """eval-config `env` with `${VAR}` expanded, plus API keys and base URLs from the environment.

    Returns the environment and the secret values in it (for redaction).
    """
    env: dict[str, str] = {}
    secrets: dict[str, str] = {}
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        if os.environ.get(name):
            env[name] = os.environ[name]
    for name, raw in cfg.env.items():
        value = _VAR.sub(lambda m: os.environ.get(m.group(1), ""), raw)
        env[name] = value
        if name in cfg.secret_env or _VAR.search(raw):
            secrets[name] = value
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        if env.get(name):
            secrets[name] = env[name]
    return env, secrets
