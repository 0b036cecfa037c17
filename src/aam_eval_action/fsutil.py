"""Small filesystem helpers: atomic writes, hashes, stable YAML."""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml


def atomic_write(path: Path, data: str | bytes, checkout: Path | None) -> None:
    """Write via a temp file in the same directory and rename, so readers never see half a file.

    The file gets the mode a plain `open()` would give it (0666 less the umask; a temp file
    is 0600), and, when root writes into a `checkout` someone else owns (a docker action on
    the runner's checkout, `runner_checkout()`), that owner: the job's later steps run as
    that user and must be able to read, change and delete what was written.
    """
    owner = checkout_owner(path, checkout)
    make_dirs(path.parent, owner)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            os.fchmod(f.fileno(), 0o666 & ~current_umask())
            if owner is not None:
                os.fchown(f.fileno(), *owner)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def make_dirs(directory: Path, owner: tuple[int, int] | None) -> None:
    """`mkdir -p`, giving each directory it creates to `owner` (when not None)."""
    missing = []
    while not directory.is_dir():
        missing.append(directory)
        directory = directory.parent
    for new in reversed(missing):
        new.mkdir(exist_ok=True)
        if owner is not None:
            os.chown(new, *owner)


def runner_checkout(environ: Mapping[str, str]) -> Path | None:
    """The runner's checkout (`GITHUB_WORKSPACE` in the runner's environment), whose owner
    gets what root writes inside it; None outside GitHub Actions."""
    workspace = environ.get("GITHUB_WORKSPACE")
    return Path(workspace) if workspace else None


def checkout_owner(path: Path, checkout: Path | None) -> tuple[int, int] | None:
    """The (uid, gid) to give files written under `checkout` when root writes them into a
    checkout owned by another user; None otherwise (files keep the writer's ids)."""
    if checkout is None or os.geteuid() != 0:
        return None
    try:
        info = os.stat(checkout)
    except OSError:
        return None
    root = checkout.resolve()
    inside = path.resolve().is_relative_to(root)
    return (info.st_uid, info.st_gid) if inside and info.st_uid != 0 else None


def current_umask() -> int:
    """The process's umask, read without changing it (os.umask would, racing other threads)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    return sha256_bytes(text.encode("utf-8"))


class _StableDumper(yaml.SafeDumper):
    """Readable, diffable YAML: multi-line strings as literal blocks, no aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value and _literal_safe(value):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


def _literal_safe(value: str) -> bool:
    # Literal blocks cannot carry trailing spaces on lines or most control characters faithfully.
    if any(line.endswith((" ", "\t")) for line in value.split("\n")):
        return False
    return all(ch in "\n\t" or ch >= " " for ch in value) and "\r" not in value


def _float(dumper: yaml.SafeDumper, value: float) -> yaml.ScalarNode:
    text = f"{value:.6f}".rstrip("0")
    text = text + "0" if text.endswith(".") else text
    return dumper.represent_scalar("tag:yaml.org,2002:float", text)


_StableDumper.add_representer(str, _str)
_StableDumper.add_representer(float, _float)


def dump_yaml(data: Any, *, sort_keys: bool = True) -> str:
    """YAML with sorted keys (or in the order given, for a file people read top to bottom),
    literal multi-line strings and a fixed float format."""
    return yaml.dump(
        data, Dumper=_StableDumper, sort_keys=sort_keys, allow_unicode=True, width=100,
        default_flow_style=False,
    )


def display_path(path: Path) -> str:
    """A path relative to the current directory when it is below it, else absolute."""
    rel = os.path.relpath(path)
    return path.as_posix() if rel.startswith("..") else Path(rel).as_posix()


def is_inside(path: Path, root: Path) -> bool:
    """Whether `path`, symlinks resolved, is `root` or below it."""
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True
