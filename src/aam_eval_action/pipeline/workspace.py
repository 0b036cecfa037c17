"""A fresh workspace per case: fixtures and workspace files in, file changes out."""

from __future__ import annotations

import base64
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from aam_eval_action.errors import AamEvalError
from aam_eval_action.fsutil import sha256_bytes
from aam_eval_action.loader import workspace_file_source
from aam_eval_action.package import PackageLayout
from aam_eval_action.session import BYTES_KEPT_MAX, FileChange
from aam_eval_action.spec import Case

TEXT_INLINE_MAX = 64 * 1024
# Where engines install the package; the agent's own changes there are not its work product.
INSTALL_DIRS = (".claude", ".codex", ".agents", ".aam", ".mcp.json", "CLAUDE.md", "AGENTS.md")

Snapshot = dict[str, str]  # relative POSIX path -> sha256


@dataclass(frozen=True)
class Workspace:
    """A case's temp directory: `root` is the agent's cwd, `home` its fresh HOME."""

    base: Path
    root: Path
    home: Path

    def cleanup(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)


def workspace_parent() -> Path:
    """Where workspaces go: the temp folder, unless a `.git` above it (a temp folder inside a
    checkout) would make every workspace look like part of a git repository to the CLI, which
    tells the model so and would not replay what was recorded elsewhere; then /tmp or /var/tmp."""
    candidates = (Path(tempfile.gettempdir()), Path("/tmp"), Path("/var/tmp"))
    return next((c for c in candidates if c.is_dir() and not _in_git_tree(c)), candidates[0])


def _in_git_tree(folder: Path) -> bool:
    return any((p / ".git").exists() for p in (folder.resolve(), *folder.resolve().parents))


def create(layout: PackageLayout, case: Case) -> Workspace:
    """mkdir a temp workspace, copy fixtures byte-for-byte and create workspace files."""
    base = Path(tempfile.mkdtemp(prefix=f"aam-eval-{case.name}-", dir=workspace_parent()))
    ws = Workspace(base, base / "workspace", base / "home")
    ws.root.mkdir()
    ws.home.mkdir()
    for rel in case.input.files:
        _copy(layout.fixtures(case.files_root) / rel, ws.root / rel)
    for rel in case.input.workspace_files:
        source = workspace_file_source(layout, rel)
        if source is None:
            (ws.root / rel).parent.mkdir(parents=True, exist_ok=True)
            (ws.root / rel).touch()
        else:
            _copy(source, ws.root / rel)
    return ws


def _copy(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)


def snapshot(root: Path) -> Snapshot:
    """Hash of every regular file under root, excluding what engines installed."""
    snap: Snapshot = {}
    for path in root.rglob("*"):
        if path.is_symlink() or not path.is_file():
            continue
        rel = path.relative_to(root).as_posix()
        if rel.split("/", 1)[0] in INSTALL_DIRS:
            continue
        snap[rel] = sha256_bytes(path.read_bytes())
    return snap


def changes(root: Path, before: Snapshot, bytes_for: frozenset[str] = frozenset()) -> list[FileChange]:
    """Files created, modified or deleted since `before`, sorted by path; of those in
    `bytes_for` (the files a grader looks at) that are not text, their bytes too."""
    after = snapshot(root)
    out: list[FileChange] = []
    for rel in sorted(set(before) | set(after)):
        if rel not in after:
            out.append(FileChange(path=rel, status="deleted"))
        elif rel not in before or before[rel] != after[rel]:
            status = "created" if rel not in before else "modified"
            out.append(_entry(root / rel, rel, status, after[rel], rel in bytes_for))
    return out


def _entry(path: Path, rel: str, status: str, digest: str, keep_bytes: bool = False) -> FileChange:
    data = path.read_bytes()
    text: str | None = None
    if len(data) <= TEXT_INLINE_MAX:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None and "\x00" in text:
            text = None
    kept = None
    if keep_bytes and text is None and len(data) <= BYTES_KEPT_MAX:
        kept = base64.b64encode(data).decode("ascii")
    return FileChange(path=rel, status=status, sha256=digest, size=len(data), text=text, data=kept)


class OutsideWorkspace(AamEvalError):
    """A recorded file would land outside the workspace."""


def restore(root: Path, files: list[FileChange]) -> None:
    """Put recorded file changes back into a fresh workspace (binary ones as placeholders of equal size).

    Paths were validated when the cassette was loaded; each one is checked again here after
    symlinks are resolved, so nothing is ever written or deleted outside `root`.
    """
    real_root = root.resolve()
    for f in files:
        target = root / f.path
        if not _resolves_inside(target, real_root):
            raise OutsideWorkspace(
                f"files: {f.path!r} resolves outside the workspace (through a symlink); "
                "nothing was restored past it; re-record the case"
            )
        if f.status == "deleted":
            target.unlink(missing_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        content = (f.text.encode("utf-8") if f.text is not None
                   else base64.b64decode(f.data) if f.data is not None else b"\0" * f.size)
        target.write_bytes(content)


def _resolves_inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root)
    except ValueError:
        return False
    return True
