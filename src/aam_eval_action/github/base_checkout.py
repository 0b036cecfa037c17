"""The base report: the base commit's own cases replayed from its own cassettes, offline.

The base commit is checked out in a temporary `git worktree`, so no artifact storage is
needed and the PR checkout is never touched. A shallow clone gets the commit fetched.
"""

from __future__ import annotations

import contextlib
import subprocess
import tempfile
from pathlib import Path

from aam_eval_action.errors import AamEvalError

NO_HOOKS = ("-c", "core.hooksPath=/dev/null")
"""git options that keep every hook from running."""


class GitError(AamEvalError):
    """git could not provide the base commit."""

    exit_code = 1


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=False,
    )
    if proc.returncode != 0:
        raise GitError(f"git {' '.join(args)} failed: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout.strip()


def resolve_commit(repo: Path, ref: str) -> str:
    """The commit for `ref`, fetching it from origin when a shallow checkout lacks it."""
    for candidate in (ref, f"origin/{ref}"):
        try:
            return git(repo, "rev-parse", "--verify", "--quiet", f"{candidate}^{{commit}}")
        except GitError:
            continue
    try:
        git(repo, "fetch", "--no-tags", "--depth=1", "origin", ref)
    except GitError as exc:
        raise GitError(
            f"base ref {ref!r} is not in this checkout and could not be fetched ({exc}); "
            "use actions/checkout with fetch-depth: 0, or pass base-report"
        ) from None
    return git(repo, "rev-parse", "--verify", "FETCH_HEAD^{commit}")


class BaseCheckout:
    """A detached worktree of the base commit, removed on exit."""

    def __init__(self, repo: Path, commit: str) -> None:
        self.repo = repo
        self.commit = commit
        self._tmp = tempfile.TemporaryDirectory(prefix="aam-eval-base-")
        self.path = Path(self._tmp.name) / "base"

    def __enter__(self) -> Path:
        # The repository is the pull request's: its configured hooks (post-checkout...) must
        # not run. Hooks under .git/hooks are not versioned, but a workflow step or a
        # `core.hooksPath` pointing into the checkout could have installed some.
        git(self.repo, *NO_HOOKS, "worktree", "add", "--detach", "--force", str(self.path),
            self.commit)
        return self.path

    def changed_files(self, under: str) -> set[str]:
        """Paths (relative to the repository) under `under` that differ between base and HEAD."""
        out = git(self.repo, "diff", "--name-only", "--no-renames", self.commit, "--", under)
        return {line for line in out.splitlines() if line}

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(GitError):
            git(self.repo, *NO_HOOKS, "worktree", "remove", "--force", str(self.path))
        self._tmp.cleanup()
        with contextlib.suppress(GitError):
            git(self.repo, "worktree", "prune")


def changed_cassettes(head: Path, base: Path | None) -> dict[str, list[str]]:
    """Case name (`<plugin>/<case>` in a repository of several plugins) → the cassette files
    (`<engine>.session.yaml`...) the head added or changed compared with the base's cassettes
    folder (None: the base had none)."""
    changed: dict[str, list[str]] = {}
    if not head.is_dir():
        return changed
    for path in sorted([*head.glob("*/*.yaml"), *head.glob("*/*/*.yaml")]):
        rel = path.relative_to(head)
        before = base / rel if base is not None else None
        if before is None or not before.is_file() or _bytes(before) != _bytes(path):
            changed.setdefault(rel.parent.as_posix(), []).append(rel.name)
    return changed


def _bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None
