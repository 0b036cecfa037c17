"""What both engines share: the session environment, JSON-lines events, outcome helpers."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from aam_eval_action.engines.base import AgentRun
from aam_eval_action.engines.process import Completed
from aam_eval_action.replay.upstream import with_loopback
from aam_eval_action.session import STDERR_CAP, TOOL_RESULT_CAP, Session, Usage, cap

BASE_ENV_KEYS = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "SHELL", "USER", "LOGNAME")
# Behind a corporate proxy or TLS-inspecting gateway the CLIs need these to reach the model API.
NETWORK_ENV_KEYS = (
    "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy",
    "ALL_PROXY", "all_proxy", "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR",
)


def runner_env(run: AgentRun) -> Mapping[str, str]:
    """The runner's environment the run was resolved with."""
    return run.runner_env


def runner_cache(environ: Mapping[str, str], name: str) -> Path:
    """`name`'s folder in the runner's cache (`$XDG_CACHE_HOME`, else `~/.cache`), shared by every
    run: what a CLI unpacks or compiles once, not once a session."""
    base = environ.get("XDG_CACHE_HOME") or str(Path(environ.get("HOME") or "/tmp") / ".cache")
    return Path(base) / "aam-eval-action" / name


PROXY_KEYS = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


def base_env(run: AgentRun) -> dict[str, str]:
    """The few runner variables an agent CLI needs, with HOME set to the run's fresh home."""
    source = runner_env(run)
    env = {key: source[key] for key in BASE_ENV_KEYS + NETWORK_ENV_KEYS if key in source}
    env["HOME"] = str(run.home)
    if run.confine is not None:  # the sandbox lets it write its own temp folder, not the runner's
        env["TMPDIR"] = str(session_tmp(run))
    # The workspace is a git repository only if it is one itself, for the git the agent runs.
    env["GIT_CEILING_DIRECTORIES"] = str(run.workspace.parent)
    return env


def session_tmp(run: AgentRun) -> Path:
    """The session's own temp folder, beside its workspace and HOME."""
    tmp = run.workspace.parent / "tmp"
    tmp.mkdir(exist_ok=True)
    return tmp


def direct_loopback(env: dict[str, str]) -> dict[str, str]:
    """The CLI's env with the loopback in NO_PROXY and no_proxy, the user's entries kept.

    Every CLI sends its model requests through the proxy variables even to 127.0.0.1 unless
    NO_PROXY covers it, and a runner's proxy cannot reach the runner's own loopback, where
    the recording or replay proxy listens.
    """
    if not any(env.get(key) for key in PROXY_KEYS):
        return env
    user = ",".join(v for v in (env.get("NO_PROXY"), env.get("no_proxy")) if v)
    value = with_loopback(user)
    return {**env, "NO_PROXY": value, "no_proxy": value}


class RegisteredEngine:
    """What every engine adapter takes from its registry entry: the subclass names itself
    (`name = "codex"`), and gets its default provider and model, the provider for a model and
    its availability check."""

    name: str
    provider: str
    default_model: str

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        from aam_eval_action.engines.registry import ENGINES

        cls.provider = ENGINES[cls.name].provider
        cls.default_model = ENGINES[cls.name].default_model

    def available(self) -> str | None:
        """None when the engine's CLI is on PATH, else how to get it."""
        return missing_cli(self.name)

    def provider_for(self, model: str) -> str:
        """The provider that serves `model` on this engine (see `EngineInfo.provider_for`)."""
        from aam_eval_action.engines.registry import ENGINES

        return ENGINES[self.name].provider_for(model)


def missing_cli(engine: str) -> str | None:
    """None when the engine's CLI is on PATH, else how to get it."""
    from aam_eval_action.engines.registry import ENGINES

    info = ENGINES[engine]
    if shutil.which(info.cli):
        return None
    return f"the `{info.cli}` CLI is not on PATH (npm install -g {info.npm_package})"


def cli_version(cli: str, run: AgentRun) -> str | None:
    """The release of `cli` on the runner's PATH (`engines.version`, asked once)."""
    from aam_eval_action.engines.version import installed_version

    return installed_version(cli, run.runner_env)


def new_session(engine: str, provider: str, run: AgentRun, done: Completed,
                runtime_version: str | None = None) -> Session:
    """A session with what every engine records of its process; the stream parser fills the rest.
    A run that keeps its trace keeps every JSON event the CLI printed."""
    return Session(
        engine=engine, model_provider=provider, model=run.model, runtime_version=runtime_version,
        stderr=cap(done.stderr, STDERR_CAP), exit_code=done.exit_code, timed_out=done.timed_out,
        duration_seconds=done.duration_seconds,
        trace=[compact(e) for e in events(done.stdout)] if run.keep_trace else None,
    )


def usage_since(total: Usage | None, before: Usage) -> Usage | None:
    """A resumed turn's own token counts, from a CLI that reports the whole conversation's
    totals: what it reports less what the conversation had used before the turn."""
    if total is None:
        return None
    return Usage(**{k: max(0, getattr(total, k) - getattr(before, k)) for k in Usage.model_fields})


def compact(value: Any) -> str:
    """A value as one compact JSON line, as JavaScript's JSON.stringify writes it."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def events(stdout: str) -> list[dict[str, Any]]:
    """The JSON objects of a JSON-lines stream; other lines are skipped."""
    found = []
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(event, dict):
            found.append(event)
    return found


def block(session: Session, evidence: str) -> None:
    """Record that a hook blocked the agent, once per distinct piece of evidence."""
    session.hook_blocked = True
    if evidence not in session.hook_evidence:
        session.hook_evidence.append(cap(evidence, TOOL_RESULT_CAP))


def finish(session: Session, done: Completed, timeout: float) -> None:
    """Settle is_error and error from the exit status, the timeout and what the stream said."""
    if done.timed_out:
        session.is_error = True
        session.error = f"timed out after {timeout:g} s"
    elif done.exit_code != 0:
        session.is_error = True
        session.error = session.error or one_line(done.stderr) or f"exited with code {done.exit_code}"


def one_line(text: str) -> str:
    """The last non-empty line of a text, cut to 300 characters (where the cause usually is)."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def mapped_tools(names: list[str], table: dict[str, tuple[str, ...]],
                 mcp: Callable[[str, str], str]) -> list[str]:
    """A `claude plugin eval` case's Claude Code tool names as another CLI names them (`table`;
    an `mcp__<server>__<tool>` by `mcp(server, tool)`); a name it has no counterpart of is left
    out. In order, without repeats."""
    out: list[str] = []
    for name in names:
        if name.startswith("mcp__") and name.count("__") >= 2:
            server, _, tool = name.removeprefix("mcp__").rpartition("__")
            own = server.rsplit("_", 1)[-1] if server.startswith("plugin_") else server  # a plugin's server
            found: tuple[str, ...] = (mcp(own, tool),)
        else:
            found = table.get(name.split("(", 1)[0], ())
        out += [f for f in found if f not in out]
    return out
