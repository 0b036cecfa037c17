"""Written files are readable by the job's later steps: the umask's mode, the workspace's owner."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from aam_eval_action.fsutil import atomic_write, runner_checkout

RUNNER_UID = 1001  # the user of GitHub-hosted runners' later steps


@pytest.fixture
def umask() -> Iterator[None]:
    old = os.umask(0o022)
    yield
    os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize(("mask", "expected"), [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_a_written_file_has_the_umasks_mode(tmp_path: Path, umask: None, mask: int, expected: int) -> None:
    os.umask(mask)
    atomic_write(tmp_path / "report.json", "{}", None)
    atomic_write(tmp_path / "report.json", "{}\n", None)  # replacing keeps it so
    assert mode(tmp_path / "report.json") == expected
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]  # no temp file left behind


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory every user can enter (pytest's own tmp_path sits in a 0700 one)."""
    path = Path(tempfile.mkdtemp(prefix="aam-eval-shared-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


def test_another_user_can_read_what_root_wrote(shared_dir: Path, umask: None) -> None:
    tmp_path = shared_dir
    if os.geteuid() != 0:
        atomic_write(tmp_path / "a.txt", "x", None)
        assert mode(tmp_path / "a.txt") == 0o644
        return
    atomic_write(tmp_path / "cassettes" / "case" / "claude-code.session.yaml", "output: hi\n", None)
    read = subprocess.run(
        ["setpriv", f"--reuid={RUNNER_UID}", f"--regid={RUNNER_UID}", "--clear-groups",
         "cat", str(tmp_path / "cassettes" / "case" / "claude-code.session.yaml")],
        capture_output=True, text=True, check=False,
    )
    assert (read.returncode, read.stdout) == (0, "output: hi\n"), read.stderr


def test_root_gives_what_it_writes_in_the_workspace_to_the_workspaces_owner(tmp_path: Path) -> None:
    workspace, elsewhere = tmp_path / "workspace", tmp_path / "elsewhere"
    workspace.mkdir()
    elsewhere.mkdir()
    checkout = runner_checkout({"GITHUB_WORKSPACE": str(workspace)})
    assert checkout == workspace and runner_checkout({}) is None
    if os.geteuid() == 0:
        os.chown(workspace, RUNNER_UID, RUNNER_UID)
    owner = (workspace.stat().st_uid, workspace.stat().st_gid)
    me = (os.geteuid(), os.getegid())

    atomic_write(workspace / "evals" / "cassettes" / "case" / "claude-code.judge.yaml", "x", checkout)
    atomic_write(elsewhere / "report.json", "{}", checkout)

    for path in (workspace / "evals", workspace / "evals" / "cassettes" / "case",
                 workspace / "evals" / "cassettes" / "case" / "claude-code.judge.yaml"):
        assert (path.stat().st_uid, path.stat().st_gid) == owner, path
    report = elsewhere / "report.json"
    assert (report.stat().st_uid, report.stat().st_gid) == me
