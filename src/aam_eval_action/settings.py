"""Run settings: eval-config merged with command-line overrides and the runner's environment.

This is the only module that reads the process environment (`runner_environment()`), once
per run, into `RunSettings.runner_env`; everything downstream reads the settings object, or
takes the mapping or the values it needs as parameters from the command that read it.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from aam_eval_action.engines.registry import ENGINES
from aam_eval_action.loader import LoadedCase, LoadedPackage
from aam_eval_action.modes import Mode, Rerun
from aam_eval_action.package import PackageLayout
from aam_eval_action.providers import BASE_URL_VARS, JUDGE_PROVIDERS, KEY_VARS, PROVIDERS, provider_for_model
from aam_eval_action.redact import Redactor
from aam_eval_action.sequential import CONFIDENCE, MAX_RUNS
from aam_eval_action.spec import EvalConfig

if TYPE_CHECKING:
    from aam_eval_action.replay.upstream import Network

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_FILE_UNSAFE = re.compile(r"[^A-Za-z0-9._-]|^\.+")
EVAL_CONFIG = "evals/eval-config.json"
_REDIRECTS = re.compile(r"(_BASE_URL|_API_BASE|_ENDPOINT)$|PROXY", re.I)
_TRUST_VARS = frozenset({
    "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE", "NODE_TLS_REJECT_UNAUTHORIZED", "NODE_OPTIONS",
    "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX",
})
_RUNNER_TOKENS = re.compile(r"^(GITHUB_TOKEN|GH_TOKEN|GH_ENTERPRISE_TOKEN|GITHUB_ENTERPRISE_TOKEN"
                            r"|ACTIONS_\w+|INPUT_\w+)$")


def runner_environment() -> Mapping[str, str]:
    """This process's environment as a read-only snapshot: the one place the product reads it.

    The commands call it once and pass the mapping (or the values they need) down.
    """
    return MappingProxyType(dict(os.environ))


def redirects_traffic(name: str) -> bool:
    """A variable that can send the model traffic (and its API key) elsewhere, or intercept it:
    base URLs, endpoints, proxies, CA bundles and TLS switches, NODE_OPTIONS."""
    return bool(_REDIRECTS.search(name)) or name.upper() in _TRUST_VARS


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
    baseline: bool | None = None
    rerun: Rerun | None = None
    self_check: bool | None = None
    max_usd: float | None = None
    judge_gate: str | None = None
    sandbox_enforce: str | None = None
    threshold: float | None = None
    ablation: str | None = None
    scaffold: bool | None = None
    allow_real_servers: bool | None = None
    force_skill: bool = False
    """Each case's skill invoked by name in its prompt, whatever routing decides (the forced arm)."""
    mocks: str | None = None
    allow_tools: tuple[str, ...] = ()
    """`--allow-tools`: tools a `claude plugin eval` case's `allowed_tools` may use beyond the
    read-only ones (that runner's grant, the operator's: never from the repository)."""
    with_dirs: tuple[str, ...] = ()
    """`--with DIR`: neighbour skills installed beside the package for its trigger cases."""
    sweep: tuple[int, ...] | None = None
    """`--sweep 0,20,100`: a crowding sweep's sizes (None: eval-config `sweep`)."""
    max_runs: int | None = None
    """`--max-runs`: attempts a changed case may take before it is `not shown`."""
    confidence: float | None = None
    """`--confidence`: the confidence a blamed regression needs."""


SMALL_JUDGE = {"anthropic": "claude-haiku-4-5", "openai": "gpt-5-mini"}
"""Each judge provider's small model: `claude plugin eval` graders' default judge."""


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
    """Environment given to the agent: eval-config `env` expanded, plus keys and base URLs."""
    secret_values: dict[str, str] = field(default_factory=dict)
    """Secret values in `agent_env`, by name, for redaction."""
    runner_env: Mapping[str, str] = field(default_factory=dict)
    """The runner's own environment, as read once when the settings were made."""
    baseline: bool = False
    """Also run each case without the skill (its own cassettes) to measure the skill's lift."""
    rerun: Rerun = "auto"
    """Snapshot or re-execute replay: auto, always or never."""
    rerun_ignore: tuple[re.Pattern[str], ...] = ()
    """eval-config `rerun-ignore`, compiled."""
    self_check: bool = True
    """Re-execute each new recording once against its own traffic (`pipeline/self_check.py`)."""
    max_usd: float | None = None
    """The run's spending cap in USD (`pipeline/spend_cap.py`); None: no cap."""
    trigger_runs: int = 3
    """Sessions per trigger case: `--repeat`, else eval-config `triggers.runs`."""
    trigger_threshold: float = 0.5
    """Share of a trigger case's runs in which a skill must fire to count as fired."""
    repeat_given: bool = False
    """`--repeat` was given: every case needs that many recorded attempts to replay."""
    attempts_required: bool = True
    """Whether a recording needs `repeat` attempts to replay: not for a trigger case run as many
    times as `triggers.runs` says (how many runs were recorded is the recording's choice, and a
    suite recorded before is replayed as it is)."""
    judge_gate: str = "always"
    threshold: float = 1.0
    """The score a `claude plugin eval` case passes at (its runner's `--threshold`)."""
    scaffold: bool = False
    """Run `claude plugin eval` cases' scaffold scripts (`--scaffold`; never from the repository)."""
    mocks: str = "record"
    """`claude plugin eval` cases' mocks: `record` (their stand-ins serve them) or `off` (no
    stand-in: the plugin's real servers start, in the sandbox), as that runner's `--mocks`."""
    allow_tools: tuple[str, ...] = ()
    """Tools granted to `claude plugin eval` cases beyond the read-only ones (`--allow-tools`;
    never from the repository): any other tool a case lists is withheld, as that runner does."""
    allow_real_servers: bool = False
    """Start a plugin's MCP servers that a `claude plugin eval` case does not mock
    (`--allow-real-servers`; never from the repository); else they are not started."""
    force_skill: bool = False
    """Each case's skill invoked by name in its first prompt (`pipeline/forced.py`)."""
    judge_named: bool = False
    """`--judge` or eval-config `judge` named the judge model (else a default was taken)."""
    ablation: str = "with-without"
    """`claude plugin eval` cases: `with-without` also runs each without the plugin (its
    runner's default), `none` runs the one arm."""
    ablation_named: bool = False
    """`--ablation` or eval-config `ablation` named it (else the default)."""
    sandbox_enforce: str = "best-effort"
    """`required`: a session the OS cannot confine as the sandbox asks is refused."""
    """Whether a judge FAIL fails its case: always, calibrated or never (`labels.py`)."""
    cassette_stem: str = ""
    """The file stem of this engine + model's cassettes: the engine's name for the model it
    runs by default, `<engine>@<model>` for any other, so each pair of a matrix keeps its own."""
    neighbors: tuple[Any, ...] = ()
    """Skills installed beside the package for its trigger cases (`catalog.installed.Neighbor`)."""
    pool: tuple[Any, ...] = ()
    """Every neighbour the run could draw: `neighbors`, or the marketplace's other plugins."""
    sweep: tuple[int, ...] = ()
    """A crowding sweep's sizes: its trigger cases also run with that many neighbours."""
    crowd: int | None = None
    """The sweep size this run's settings install (None: the run itself, not a sweep point)."""
    max_runs: int = MAX_RUNS
    """Attempts a changed case may take before it is `not shown` (`sequential.py`)."""
    confidence: float = CONFIDENCE
    """The confidence a blamed regression needs."""

    @functools.cached_property
    def layout(self) -> PackageLayout:
        """The package as this run installs it: with its neighbours."""
        layout = self.package.layout
        return dataclasses.replace(layout, neighbors=self.neighbors) if self.neighbors else layout

    def plugin_eval_judge(self) -> str:
        """The model a `claude plugin eval` grader's judge is asked: the one `--judge` or
        eval-config names, else the judge provider's small model, as that runner defaults to
        its small one (`--judge-model`, default haiku)."""
        if self.judge_named:
            return self.judge_model
        return SMALL_JUDGE.get(self.judge_provider, self.judge_model)

    def two_arms(self, loaded: LoadedCase) -> bool:
        """Whether a case also runs without the package: `--baseline` for any case, and the
        ablation for a `claude plugin eval` case (one with graders), but for one that resumes a
        recorded session unless `with-without` was asked for by name, as that runner does."""
        if self.baseline:
            return True
        execution = loaded.case.execution
        resumes = execution is not None and execution.history is not None
        named = not resumes or self.ablation_named
        if loaded.item is not None:  # a Vally stimulus: one arm, as `vally eval` runs, unless
            return loaded.case.with_and_without  # an experiment runs it without its skills too
        return bool(loaded.graders) and self.ablation == "with-without" and named

    @property
    def config(self) -> EvalConfig:
        return self.package.config

    def base_url(self, provider: str) -> str | None:
        name = PROVIDERS[provider].base_url_var
        return self.agent_env.get(name) or self.runner_env.get(name) or None

    def api_key(self, provider: str) -> str | None:
        name = PROVIDERS[provider].key_var
        return self.agent_env.get(name) or self.runner_env.get(name) or None

    @property
    def network_env(self) -> dict[str, str]:
        """The environment the agent's model traffic would see: the runner's, then the agent's
        own (its proxy and CA variables decide how a recording proxy reaches the API)."""
        return {**self.runner_env, **self.agent_env}

    @functools.cached_property
    def network(self) -> Network:
        """The proxy and CA settings of `network_env`, read once per run."""
        from aam_eval_action.replay.upstream import Network

        return Network.of(self.network_env)

    @property
    def in_ci(self) -> bool:
        """Running under GitHub Actions (`GITHUB_ACTIONS=true` in the runner's environment)."""
        return self.runner_env.get("GITHUB_ACTIONS") == "true"

    def provenance(self) -> str:
        """Where a recording is made: the workflow run's URL in CI, else `recorded locally`."""
        env = self.runner_env
        server = env.get("GITHUB_SERVER_URL") or "https://github.com"
        repo, run = env.get("GITHUB_REPOSITORY"), env.get("GITHUB_RUN_ID")
        if self.in_ci and repo and run:
            return f"{server.rstrip('/')}/{repo}/actions/runs/{run}"
        return "recorded locally"

    def redactor(self) -> Redactor:
        """Every secret this run knows of: the runner's secret-looking variables and `secret_values`."""
        return Redactor.from_environment(self.secret_values, self.runner_env)


def resolve(package: LoadedPackage, o: Overrides, environ: Mapping[str, str] | None = None) -> RunSettings:
    """Merge flags over eval-config, the way the seed says flags override config.

    `environ` is the runner's environment (default: this process's), read here and only here.
    """
    runner_env = MappingProxyType(dict(runner_environment() if environ is None else environ))
    cfg = package.config
    engine = o.engine or cfg.engine
    info = ENGINES.get(engine)
    model = o.model or own_model(cfg, engine)
    provider = info.provider if info else "anthropic"
    judge_model = o.judge or cfg.judge or _default_judge(package, model) or PROVIDERS[provider].default_model
    mode = o.mode or cfg.mode
    if runner_env.get("GITHUB_ACTIONS") == "true":
        check_ci_env(package, mode)
    env, secrets = agent_environment(cfg, runner_env)
    repeat = o.repeat or cfg.repeat
    return RunSettings(
        package=package,
        engine=engine,
        model=model,
        judge_model=judge_model,
        judge_named=bool(o.judge or cfg.judge),
        scaffold=bool(o.scaffold),
        allow_real_servers=bool(o.allow_real_servers), force_skill=o.force_skill,
        allow_tools=o.allow_tools,
        mocks=o.mocks or "record",
        judge_provider=provider_for_model(judge_model, provider),
        mode=mode,
        jobs=o.jobs or cfg.jobs,
        repeat=repeat,
        min_pass=min(cfg.min_pass or repeat, repeat),
        timeout=o.timeout or cfg.timeout,
        cassettes=cassettes_dir(package, o.cassettes),
        agent_env=env,
        secret_values={**proxy_passwords({**runner_env, **env}), **secrets},
        runner_env=runner_env,
        baseline=cfg.baseline if o.baseline is None else o.baseline,
        rerun=o.rerun or cfg.rerun,
        rerun_ignore=tuple(re.compile(p) for p in cfg.rerun_ignore),
        self_check=cfg.self_check if o.self_check is None else o.self_check,
        max_usd=cfg.max_usd if o.max_usd is None else o.max_usd,
        judge_gate=o.judge_gate or cfg.judge_gate,
        threshold=cfg.threshold if o.threshold is None else o.threshold,
        ablation=o.ablation or cfg.ablation,
        ablation_named=o.ablation is not None or "ablation" in cfg.model_fields_set,
        sandbox_enforce=o.sandbox_enforce or cfg.sandbox.enforce,
        cassette_stem=cassette_stem(cfg, engine, model),
        trigger_runs=o.repeat or cfg.triggers.runs,
        repeat_given=o.repeat is not None,
        trigger_threshold=cfg.triggers.threshold,
        max_runs=o.max_runs or MAX_RUNS, confidence=o.confidence or CONFIDENCE,
        **crowding(package, o),
    )


def crowding(package: LoadedPackage, o: Overrides) -> dict[str, Any]:
    """The neighbours (eval-config `neighbors`, then `--with`) and the sweep's sizes: a sweep
    without neighbours named draws from the marketplace's other plugins."""
    from aam_eval_action.catalog.installed import MARKETPLACE, resolve

    named = list(package.config.neighbors)
    sweep = tuple(o.sweep if o.sweep is not None else package.config.sweep)
    if not named and not o.with_dirs and not sweep:
        return {}
    layout = package.layout
    given = resolve(layout, named, package.config_location("neighbors")) if named else ()
    given += resolve(layout, list(o.with_dirs), "--with", outside=True) if o.with_dirs else ()
    given = distinct(given)
    pool = given
    if sweep and not pool:
        pool = resolve(layout, [MARKETPLACE], "--sweep (no `neighbors`: the marketplace's other plugins)")
    return {"neighbors": given, "pool": pool, "sweep": sweep}


def distinct(given: tuple[Any, ...]) -> tuple[Any, ...]:
    """Neighbours named twice (eval-config and `--with`) once; two folders of one name refused."""
    from aam_eval_action.errors import ConfigError

    seen: dict[str, Any] = {}
    for n in given:
        if n.name in seen and seen[n.name].folder != n.folder:
            raise ConfigError(f"neighbours: two skills are named {n.name!r} ({seen[n.name].label} and "
                              f"{n.label}); a CLI lists one of them; name one folder only")
        seen[n.name] = n
    return tuple(sorted(seen.values(), key=lambda n: n.name))


def cassettes_dir(package: LoadedPackage, flag: Path | None) -> Path:
    """`--cassettes`, else eval-config `cassettes` under `evals/`; one folder per plugin in a
    repository of several."""
    base = (flag or package.layout.evals_dir / package.config.cassettes).resolve()
    return base / package.key if package.several else base


def _default_judge(package: LoadedPackage, model: str) -> str:
    """The agent's model; in a repository without eval-config, when no SDK of ours serves that
    model (Gemini), the first judge provider's default instead of a config error."""
    if package.config_written or provider_for_model(model, JUDGE_PROVIDERS[0]) in JUDGE_PROVIDERS:
        return model
    return PROVIDERS[JUDGE_PROVIDERS[0]].default_model


# --- a matrix of engines and models ---


def own_model(cfg: EvalConfig, engine: str) -> str:
    """The model an engine runs when none is asked for: eval-config `model` when the engine
    serves it, else the engine's default (a Gemini CLI pair of a Claude package runs Gemini)."""
    info = ENGINES.get(engine)
    if info is None:
        return cfg.model or ""
    return cfg.model if cfg.model and serves(engine, cfg.model) else info.default_model


def serves(engine: str, model: str) -> bool:
    """Whether the engine can run the model (a model of no known provider: assumed yes)."""
    info = ENGINES[engine]
    return provider_for_model(model, info.provider) in (info.provider, *info.providers)


def cassette_stem(cfg: EvalConfig, engine: str, model: str) -> str:
    """`<engine>` for the engine's own model, `<engine>@<model>` (file-name safe) for another."""
    if model == own_model(cfg, engine):
        return engine
    return f"{engine}@{_FILE_UNSAFE.sub('-', model)}"


def _split(value: str | None) -> list[str]:
    return [part.strip() for part in (value or "").split(",") if part.strip()]


def run_pairs(package: LoadedPackage, o: Overrides) -> list[tuple[str, str]]:
    """The (engine, model) pairs a run covers, in order: `--engine`/`--model` lists (commas),
    else eval-config `pairs`, else its `engines` × `models`; a cross product keeps the pairs
    whose engine serves the model."""
    from aam_eval_action.engines.registry import check_engine_name
    from aam_eval_action.errors import ConfigError

    cfg = package.config
    flags = bool(o.engine or o.model)
    if not flags and cfg.pairs:
        return [(p.engine, p.model) for p in cfg.pairs]
    engines = _split(o.engine) or list(cfg.engines) or [cfg.engine]
    where = "--engine" if o.engine else package.config_location("engines" if cfg.engines else "engine")
    for engine in engines:
        check_engine_name(engine, where)
    models = _split(o.model) or list(cfg.models)
    for model in _split(o.model):
        _check_model_flag(model)
    if not models:
        return [(e, own_model(cfg, e)) for e in engines]
    if len(engines) * len(models) == 1:
        return [(engines[0], models[0])]
    pairs = [(e, m) for e in engines for m in models if serves(e, m)]
    said = "--model" if o.model else package.config_location("models")
    for engine in engines:
        if not any(e == engine for e, _ in pairs):
            raise ConfigError(f"{said}: {engine} runs none of the models {', '.join(models)}; add one "
                              f"of its models (e.g. {ENGINES[engine].default_model}) or list `pairs` "
                              "in eval-config")
    for model in models:
        if not any(m == model for _, m in pairs):
            raise ConfigError(f"{said}: {model!r} runs on none of the engines {', '.join(engines)}; "
                              "remove it or add an engine that serves it")
    return pairs


def _check_model_flag(model: str) -> None:
    from aam_eval_action.errors import UsageError
    from aam_eval_action.spec import model_name

    try:
        model_name(model)
    except ValueError as exc:
        raise UsageError(f"--model: {exc}") from None


def resolve_matrix(
    package: LoadedPackage, o: Overrides, environ: Mapping[str, str] | None = None
) -> list[RunSettings]:
    """One settings per (engine, model) pair of the run; a single pair reads as `resolve`."""
    import dataclasses

    return [resolve(package, dataclasses.replace(o, engine=engine, model=model), environ)
            for engine, model in run_pairs(package, o)]


def check_judge(settings: RunSettings, where: str | None) -> None:
    """The judge runs on the anthropic or openai SDK: a judge model of another provider (Gemini)
    is a config error naming where it was set, or that it was the agent's model by default."""
    from aam_eval_action.errors import ConfigError

    if settings.judge_provider in JUDGE_PROVIDERS:
        return
    models = " or ".join(PROVIDERS[p].default_model for p in JUDGE_PROVIDERS)
    said = f"{where}: judge" if where else f"judge (the agent's model, {settings.model}, by default)"
    raise ConfigError(
        f"{said} {settings.judge_model!r} is not supported: the judge runs on the "
        f"{' or '.join(JUDGE_PROVIDERS)} SDK; set `judge` in eval-config (or --judge) to a Claude "
        f"or GPT model, e.g. {models}"
    )


def proxy_passwords(env: Mapping[str, str]) -> dict[str, str]:
    """The passwords in proxy URLs (`http://user:pass@proxy:3128`), as secrets: a CLI or a proxy
    error may print the URL."""
    import urllib.parse

    found = {}
    for name, value in env.items():
        if "PROXY" in name.upper() and "@" in value:
            try:
                password = urllib.parse.urlsplit(value if "://" in value else f"http://{value}").password
            except ValueError:
                continue
            if password:
                found[f"{name.upper()}_PASSWORD"] = urllib.parse.unquote(password)
    return found


def check_ci_env(package: LoadedPackage, mode: Mode) -> None:
    """In CI, eval-config `env` is the pull request's: it may not choose where the API key goes.

    Live modes refuse a base URL, proxy or CA setting there (those come only from the
    action's inputs or the runner's environment); every mode refuses `${VAR}` references
    to the runner's tokens (GITHUB_TOKEN, ACTIONS_*, INPUT_*), which no agent may see.
    """
    from aam_eval_action.errors import ConfigError
    from aam_eval_action.loader import line_of

    cfg = package.config
    path = package.layout.root / EVAL_CONFIG
    for name, raw in cfg.env.items():
        problem = None
        if mode != "replay" and redirects_traffic(name):
            problem = (
                f"sets {name}, which decides where the agent's and judge's traffic (and API "
                "key) go; in CI that comes only from the action's inputs or the runner's "
                f"environment: remove it from eval-config and set {name} in the workflow's env"
            )
        tokens = [m.group(1) for m in _VAR.finditer(raw) if _RUNNER_TOKENS.match(m.group(1))]
        if tokens:
            problem = (f"takes ${{{tokens[0]}}} from the runner: the runner's tokens are never "
                       "given to the agent, its hooks or scripts; remove it")
        if problem:
            line = line_of(path.read_text(encoding="utf-8"), ("env", name))
            where = f"{EVAL_CONFIG}:{line}" if line else EVAL_CONFIG
            raise ConfigError(f"{where}: env.{name}: {problem}")


def agent_environment(
    cfg: EvalConfig, runner_env: Mapping[str, str]
) -> tuple[dict[str, str], dict[str, str]]:
    """eval-config `env` with `${VAR}` expanded, plus API keys and base URLs from the runner.

    Returns the environment and the secret values in it (for redaction).
    """
    env: dict[str, str] = {}
    secrets: dict[str, str] = {}
    for name in KEY_VARS + BASE_URL_VARS:
        if runner_env.get(name):
            env[name] = runner_env[name]
    for name, raw in cfg.env.items():
        value = _VAR.sub(lambda m: runner_env.get(m.group(1), ""), raw)
        env[name] = value
        if name in cfg.secret_env or _VAR.search(raw):
            secrets[name] = value
    for name in KEY_VARS:
        if env.get(name):
            secrets[name] = env[name]
    return env, secrets
