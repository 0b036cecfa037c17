"""The finished workspace as grading sees it: the case's own files, then the agent's recorded changes.

Grading reads the workspace from the session record, live or replayed alike, so a replay
regrades exactly as the live run graded. Text files are recorded inline; a binary file or one
over 64 KiB is recorded only as sha256 + size, so its content cannot be checked or restored.
"""

from __future__ import annotations

import base64
import functools
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from aam_eval_action.engines.process import run_process
from aam_eval_action.loader import workspace_file_source
from aam_eval_action.package import PackageLayout
from aam_eval_action.pipeline import workspace
from aam_eval_action.session import TOOL_RESULT_CAP, Session, cap
from aam_eval_action.spec import Case, CommandCheck

HASH_ONLY = "stored only as sha256 + size (binary or over 64 KiB)"
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
"""Appended to the command's PATH, so the usual tools are found even on a bare replay runner."""


@dataclass(frozen=True)
class FinishedWorkspace:
    """A case's finished workspace, rebuilt from its inputs and the session's file changes."""

    layout: PackageLayout
    case: Case
    session: Session

    @functools.cached_property
    def files(self) -> dict[str, str | None]:
        """Every file at the end of the session: path → text (None when not known as text)."""
        root = self.layout.fixtures(self.case.files_root)
        found = {rel: _text(root / rel) for rel in self.case.input.files}
        for rel in self.case.input.workspace_files:
            source = workspace_file_source(self.layout, rel)
            found[rel] = _text(source) if source else ""
        for change in self.session.files:
            if change.status == "deleted":
                found.pop(change.path, None)
            else:
                found[change.path] = change.text
        return found

    @functools.cached_property
    def blobs(self) -> dict[str, bytes]:
        """The bytes the record keeps of files that are not text (those a grader looks at)."""
        return {c.path: base64.b64decode(c.data) for c in self.session.files
                if c.status != "deleted" and c.data is not None}

    def hash_only(self) -> list[str]:
        """Files the agent left whose content the record does not hold."""
        return [f.path for f in self.session.files if f.status != "deleted" and f.text is None]


def inside(path: str) -> bool:
    """A recorded path that stays inside the workspace (cassettes are untrusted input)."""
    parts = path.replace("\\", "/").split("/")
    return bool(path) and not path.startswith(("/", "\\")) and ".." not in parts and ":" not in parts[0]


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


@dataclass(frozen=True)
class CommandResult:
    """How a `command` check ended."""

    passed: bool
    detail: str


def run_command(
    finished: FinishedWorkspace, check: CommandCheck, network: bool, env: dict[str, str]
) -> CommandResult:
    """Run the command in a fresh copy of the finished workspace; passes on exit status 0."""
    ws = workspace.create(finished.layout, finished.case)
    files = [f for f in finished.session.files if inside(f.path)]
    try:
        workspace.restore(ws.root, files)
        argv = [*no_network_prefix(network), "/bin/sh", "-c", check.run]
        path = ":".join(p for p in (env.get("PATH"), SYSTEM_PATH) if p)
        done = run_process(argv, cwd=ws.root, env={**env, "HOME": str(ws.home), "PATH": path},
                           timeout=check.timeout)
    except OSError as exc:
        return CommandResult(False, f"could not run the command: {exc}")
    finally:
        ws.cleanup()
    if done.exit_code == 0:
        return CommandResult(True, "")
    why = f"timed out after {check.timeout:g}s" if done.timed_out else f"exit status {done.exit_code}"
    output = cap((done.stdout + done.stderr).strip(), TOOL_RESULT_CAP)
    detail = f"{why}" + (f"; output: {output}" if output else "")
    placeholders = finished.hash_only()
    if placeholders:
        detail += (f"; note: {', '.join(placeholders)} {'was' if len(placeholders) == 1 else 'were'} "
                   f"{HASH_ONLY} and restored as zero-filled placeholders of equal size")
    return CommandResult(False, detail)


def no_network_prefix(network: bool) -> list[str]:
    """`unshare` into a network namespace without interfaces when the sandbox has no network."""
    tool = None if network else _unshare()
    return [tool, "--user", "--map-root-user", "--net"] if tool else []


@functools.cache
def _unshare() -> str | None:
    """`unshare`, when this machine lets an unprivileged user make a network namespace."""
    tool = shutil.which("unshare", path=SYSTEM_PATH)
    if tool is None:
        return None
    try:
        probe = [tool, "--user", "--map-root-user", "--net", "/bin/true"]
        ok = subprocess.run(probe, capture_output=True, timeout=10, check=False).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return None
    return tool if ok else None
