"""Node's compile cache for a CLI written in JavaScript: its bundle compiled once per release,
not once per session.

Gemini CLI is one 20 MB JavaScript bundle that Node compiles at every start (over a second of
CPU for each session; two processes, as it relaunches itself). Node keeps compiled code in the
folder `NODE_COMPILE_CACHE` names. The runner fills one folder per CLI release, outside any
sandbox, by starting the CLI once (`--version`), then every session reads it. Inside the sandbox
the folder is not writable: a session cannot change what later sessions run, and Node goes on
without writing when it cannot (it never fails a start for it). It lives in the runner's cache
folder, beside Copilot CLI's unpacked runtime.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from aam_eval_action.engines.common import runner_cache

ENV = "NODE_COMPILE_CACHE"
TIMEOUT = 60


def folder(cli: str, version: str | None, environ: Mapping[str, str]) -> Path | None:
    """The filled compile cache of this release of `cli` (filled now, once, if it is not yet);
    None when there is no version to key it by or it could not be filled."""
    if not version:
        return None
    where = runner_cache(environ, "node-compile-cache") / f"{cli}-{version}"
    return _filled(cli, where, environ.get("PATH", ""))


@functools.cache
def _filled(cli: str, where: Path, search_path: str) -> Path | None:
    if where.is_dir():
        return where
    executable = shutil.which(cli, path=search_path)
    if executable is None:
        return None
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".filling-", dir=where.parent))
        staging.chmod(0o755)  # readable by a session run as another user
    except OSError:
        return None
    try:
        with tempfile.TemporaryDirectory(prefix="aam-eval-compile-", ignore_cleanup_errors=True) as home:
            env = {"PATH": search_path, "HOME": home, ENV: str(staging)}
            subprocess.run([executable, "--version"], capture_output=True, timeout=TIMEOUT, check=False,
                           stdin=subprocess.DEVNULL, env=env)
        os.rename(staging, where)  # whole, or not at all: another run may have filled it meanwhile
    except (OSError, subprocess.TimeoutExpired):
        pass
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return where if where.is_dir() else None
