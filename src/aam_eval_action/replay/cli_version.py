"""The agent CLI version on PATH against the one a traffic recording was made with.

Request shapes change between CLI versions, so a recording replays only under the version
that made it: a mismatch is a clear error, never a false divergence.
"""

from __future__ import annotations

from collections.abc import Mapping

from aam_eval_action.engines.registry import engine_of_cli
from aam_eval_action.engines.version import installed_version
from aam_eval_action.errors import AamEvalError
from aam_eval_action.replay.traffic import ModelTraffic


class CliVersionError(AamEvalError):
    """The CLI on PATH cannot re-execute a recording (missing, or another version)."""


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
    (`environ`: the runner's environment, whose PATH finds it)."""
    check_version(traffic.cli, traffic.cli_version, installed_version(traffic.cli, environ))
