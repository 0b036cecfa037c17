"""Which release of an agent CLI is on PATH: asked once per executable, for every part of a run.

An npm-installed CLI says its release in the `package.json` of the package its executable
belongs to; reading that costs nothing, where `gemini --version` starts the whole CLI (over a
second). A CLI that is not such an install (a native build, a wrapper script) is asked with
`--version`, with the runner's PATH and a scratch HOME (Gemini CLI writes into `~/.gemini` when
asked its version).
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

VERSION = re.compile(r"\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]*[0-9A-Za-z])?")
"""A version in `--version` output (`2.1.330 (Claude Code)`, `codex-cli 0.169.0`, `GitHub Copilot CLI
1.0.102.`): the trailing full stop is not part of it."""
TIMEOUT = 60
PACKAGE_DEPTH = 4
"""How many folders above the executable its package.json may be (`bundle/gemini.js`,
`bin/claude.exe`, `npm-loader.js`)."""


def installed_version(cli: str, environ: Mapping[str, str]) -> str | None:
    """The release of `cli` found on the PATH of `environ` (the runner's environment); None when
    it is not there or says no version."""
    search_path = environ.get("PATH", "")
    path = shutil.which(cli, path=search_path)
    if path is None:
        return None
    try:
        stamp = os.stat(path).st_mtime_ns
    except OSError:
        return None
    return _version_of(cli, path, stamp, search_path)


@functools.cache
def _version_of(cli: str, path: str, stamp: int, search_path: str) -> str | None:
    return package_version(cli, Path(path)) or asked_version(path, search_path)


def package_version(cli: str, executable: Path) -> str | None:
    """The version in the package.json of the engine's npm package that `executable` belongs to."""
    from aam_eval_action.engines.registry import engine_of_cli

    engine = engine_of_cli(cli)
    if engine is None:
        return None
    try:
        folder = executable.resolve().parent
    except OSError:
        return None
    for candidate in [folder, *folder.parents][:PACKAGE_DEPTH]:
        manifest = candidate / "package.json"
        if not manifest.is_file():
            continue
        try:
            data = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("name") != engine.npm_package:
            return None
        version = data.get("version")
        return version if isinstance(version, str) and VERSION.fullmatch(version) else None
    return None


def asked_version(path: str, search_path: str) -> str | None:
    """`<path> --version`, run with `search_path` and a scratch HOME (deleted after)."""
    with tempfile.TemporaryDirectory(prefix="aam-eval-version-", ignore_cleanup_errors=True) as home:
        try:
            out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=TIMEOUT,
                                 check=False, stdin=subprocess.DEVNULL,
                                 env={"PATH": search_path, "HOME": home}).stdout
        except (OSError, subprocess.TimeoutExpired):
            return None
    found = VERSION.search(out)
    return found.group(0) if found else None
