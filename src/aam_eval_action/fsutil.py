"""Small filesystem helpers: atomic writes, hashes, stable YAML."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

import yaml


def atomic_write(path: Path, data: str | bytes) -> None:
    """Write via a temp file in the same directory and rename, so readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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


def dump_yaml(data: Any) -> str:
    """YAML with sorted keys, literal multi-line strings and a fixed float format."""
    return yaml.dump(
        data, Dumper=_StableDumper, sort_keys=True, allow_unicode=True, width=100,
        default_flow_style=False,
    )


def display_path(path: Path) -> str:
    """A path relative to the current directory when it is below it, else absolute."""
    rel = os.path.relpath(path)
    return path.as_posix() if rel.startswith("..") else Path(rel).as_posix()
