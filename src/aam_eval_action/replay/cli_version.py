"""The agent CLI version on PATH against the one a traffic recording was made with.

Request shapes change between CLI versions, so a recording replays only under the version
that made it: a mismatch is a clear error, never a false divergence.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from collections.abc import Mapping

from aam_eval_action.engines.registry import engine_of_cli
from aam_eval_action.errors import AamEvalError
from aam_eval_action.replay.traffic import ModelTraffic

VERSION = re.compile(r"\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]*[0-9A-Za-z])?")
"""A version in `--version` output (`2.1.330 (Claude Code)`, `codex-cli 0.169.0`, `GitHub Copilot CLI
1.0.102.`): the trailing full stop is not part of it."""


class CliVersionError(AamEvalError):
    """The CLI on PATH cannot re-execute a recording (missing, or another version)."""


def installed_version(cli: str, environ: Mapping[str, str]) -> str | None:
    """`<cli> --version` as a bare version number; None when the CLI is not on PATH.

    The CLI runs with PATH and HOME of `environ`, the runner's environment. Asked once per
    executable (by path and modification time), not once per case.
    """
    path = shutil.which(cli)
    if path is None:
        return None
    try:
        stamp = os.stat(path).st_mtime_ns
    except OSError:
        return None
    return _version_of(path, stamp, environ.get("PATH", ""), environ.get("HOME", "/tmp"))


@functools.cache
def _version_of(path: str, stamp: int, search_path: str, home: str) -> str | None:
    try:
        out = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=30, check=False,
            env={"PATH": search_path, "HOME": home},
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = VERSION.search(out)
    return found.group(0) if found else None


def check_version(cli: str, recorded: str | None, installed: str | None) -> None:
    """Raise CliVersionError unless the installed CLI is the recorded version."""
    engine = engine_of_cli(cli)
    package = engine.npm_package if engine else cli
    if installed is None:
        raise CliVersionError(
            f"cannot re-execute: `{cli}` is not on PATH; install the recorded version "
            f"(npm install -g {package}@{recorded}) or use snapshot replay (--no-rerun)"
        )
    if recorded is not None and recorded != installed:
        raise CliVersionError(
            f"cannot re-execute: the traffic was recorded with {cli} {recorded} but {cli} {installed} "
            f"is on PATH; install {package}@{recorded}, re-record the case with {cli} {installed}, "
            "or use snapshot replay (--no-rerun)"
        )


def check_installed(traffic: ModelTraffic, environ: Mapping[str, str]) -> None:
    """Raise CliVersionError unless the CLI on PATH is the one the traffic was recorded with
    (`environ`: the runner's environment, as for `installed_version`)."""
    check_version(traffic.cli, traffic.cli_version, installed_version(traffic.cli, environ))
