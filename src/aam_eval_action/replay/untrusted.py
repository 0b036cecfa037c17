"""Reading a cassette that a pull request may have written: bounded, safe, alias-free YAML.

Cassettes are committed to the repository under test, so on a pull request they are
attacker-controlled. They are read with YAML's safe loader only, after these checks:

- a size limit, so a 50 MB output cannot exhaust the runner's memory;
- no `!!python/...` (or any other non-standard) tag: refused by name, with its line;
- no aliases: this project never writes them, and an alias "bomb" expands exponentially
  when the data is later validated or dumped.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

MAX_CASSETTE_BYTES = 16 * 1024 * 1024
"""Largest cassette file read; recorded outputs and files are capped far below this."""
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_STANDARD_TAG = "tag:yaml.org,2002:"
_STANDARD_KINDS = ("str", "int", "float", "bool", "null", "map", "seq", "binary", "timestamp")


class UntrustedFileError(ValueError):
    """A cassette file refused before (or while) parsing; the message says what and where."""


def read_text(path: Path, *, inside: Path | None = None) -> str | None:
    """The file's text, None when there is none; refused when too large or a link out of `inside`."""
    if inside is not None and not _within(path, inside):
        raise UntrustedFileError(
            f"{path}: is a symlink that points outside {inside}; replace it with the file itself"
        )
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UntrustedFileError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if size > MAX_CASSETTE_BYTES:
        raise UntrustedFileError(
            f"{path}: {size / 1e6:.1f} MB is over the {MAX_CASSETTE_BYTES // (1024 * 1024)} MiB "
            "cassette limit; re-record the case (outputs this large are not replayable)"
        )
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise UntrustedFileError(f"{path}: cannot be read ({exc})") from None


def load_yaml(path: Path, text: str) -> Any:
    """Parse untrusted YAML: standard tags only, no anchors or aliases, safe constructors."""
    _check_events(path, text)
    try:
        return yaml.load(text, Loader=_LOADER)
    except yaml.YAMLError as exc:
        raise UntrustedFileError(f"{path}: damaged YAML{_where(exc)}") from None


def _check_events(path: Path, text: str) -> None:
    """One pass over the parser's events (no objects built) refusing tags and aliases."""
    try:
        for event in yaml.parse(text, Loader=_LOADER):
            tag = getattr(event, "tag", None)
            line = event.start_mark.line + 1 if event.start_mark else None
            if tag and not _standard(tag):
                raise UntrustedFileError(
                    f"{path}:{line}: YAML tag {tag!r} is refused (cassettes hold plain data; "
                    "a Python tag would run code); re-record the case"
                )
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise UntrustedFileError(
                    f"{path}:{line}: YAML anchors and aliases are refused in cassettes "
                    "(this tool never writes them); re-record the case"
                )
    except yaml.YAMLError as exc:
        raise UntrustedFileError(f"{path}: damaged YAML{_where(exc)}") from None


def _standard(tag: str) -> bool:
    if tag == "!":  # the non-specific tag of a quoted scalar
        return True
    return tag.startswith(_STANDARD_TAG) and tag[len(_STANDARD_TAG):] in _STANDARD_KINDS


def _where(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    return f" at line {mark.line + 1}" if mark else ""


def _within(path: Path, root: Path) -> bool:
    try:
        Path(os.path.realpath(path)).relative_to(os.path.realpath(root))
    except ValueError:
        return False
    return True
