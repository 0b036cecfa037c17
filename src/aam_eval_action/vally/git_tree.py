"""A Vally stimulus's `environment.git`: the workspace starts from a git repository's tree at
a ref (https://microsoft.github.io/vally/reference/eval-spec/, `git {type: worktree, source,
ref}`; release notes 0.9 for `clone`)."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

from aam_eval_action.errors import AamEvalError
from aam_eval_action.layouts.common import refuse_link_out

SAFE = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "protocol.allow=never")
"""No command a repository's own git config names is run, and nothing is fetched."""
GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0", "PATH": "/usr/bin:/bin",
           "HOME": "/nonexistent"}


def _git(path: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", *SAFE, "-C", str(path), *args], capture_output=True, timeout=120,
                          env=GIT_ENV, check=False, stdin=subprocess.DEVNULL)


def repository(root: Path, source: str) -> Path:
    """The repository `source` names: a git repository of its own, inside `root`."""
    path = root / source
    refuse_link_out(root, path)
    top = _git(path, "rev-parse", "--show-toplevel") if path.is_dir() else None
    if top is None or top.returncode != 0 or Path(top.stdout.decode().strip()).resolve() != path.resolve():
        raise AamEvalError(f"environment.git: {source} is not a git repository (make it before the run)")
    return path


def tree(root: Path, source: str, ref: str) -> str:
    """The tree id of `ref` there (for the recording's fingerprint), or `missing`."""
    try:
        path = repository(root, source)
    except AamEvalError:
        return "missing"
    done = _git(path, "rev-parse", "--verify", "--quiet", f"{ref}^{{tree}}")
    return done.stdout.decode().strip() if done.returncode == 0 else "missing"


def export(root: Path, source: str, ref: str, dest: Path) -> None:
    """`source`'s files at `ref`, written into `dest` (nothing outside it, no link out)."""
    path = repository(root, source)
    done = _git(path, "archive", "--format=tar", ref)
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip()[-300:]
        raise AamEvalError(f"environment.git: {source} at {ref}: {why or 'git archive failed'}")
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as archive:
        archive.extractall(dest, filter="data")
