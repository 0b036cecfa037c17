"""Reading a cassette that a pull request may have written: bounded, safe, alias-free YAML.

Cassettes are committed to the repository under test, so on a pull request they are
attacker-controlled. They are read with YAML's safe loader only, after these checks:

- a size limit, so a 50 MB output cannot exhaust the runner's memory;
- no `!!python/...` (or any other non-standard) tag: refused by name, with its line;
- no aliases: this project never writes them, and an alias "bomb" expands exponentially
  when the data is later validated or dumped (an anchor no alias uses is harmless).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from aam_eval_action.yaml_build import Loader, build

MAX_CASSETTE_BYTES = 16 * 1024 * 1024
"""Largest cassette file read; recorded outputs and files are capped far below this."""
_LOADER = Loader
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
        with open(path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            if size > MAX_CASSETTE_BYTES:
                raise UntrustedFileError(
                    f"{path}: {size / 1e6:.1f} MB is over the {MAX_CASSETTE_BYTES // (1024 * 1024)} "
                    "MiB cassette limit; re-record the case (outputs this large are not replayable)"
                )
            data = file.read(MAX_CASSETTE_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UntrustedFileError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if len(data) > MAX_CASSETTE_BYTES:  # grew while it was read
        raise UntrustedFileError(
            f"{path}: over the {MAX_CASSETTE_BYTES // (1024 * 1024)} MiB cassette limit; re-record the case"
        )
    try:
        return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError as exc:
        raise UntrustedFileError(f"{path}: cannot be read ({exc})") from None


def read_now(path: Path, *, inside: Path | None = None) -> tuple[bool, Any]:
    """(whether the file exists, its parsed YAML): `read_text`, then `load_yaml`."""
    text = read_text(path, inside=inside)
    if text is None:
        return False, None
    return True, load_yaml(path, text)


def load_yaml(path: Path, text: str) -> Any:
    """Parse untrusted YAML: standard tags only, no aliases, safe constructors.

    The document is composed into nodes (by libyaml where there is one), every node is checked
    before any object is built (a refused tag is named with its line; an alias shows as a node
    met a second time, so an alias "bomb" is never expanded), then the safe constructor builds
    the objects. A text with no `&` and no `!` anywhere can hold neither an anchor (so no alias)
    nor a tag, and needs no check.
    """
    loader = _LOADER(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if "&" in text or "!" in text:  # without either, no anchor (so no alias) and no tag is written
            _check(node)
        return build(node, loader)
    except _Refused as refused:
        raise UntrustedFileError(f"{path}:{refused.line}: {refused.what}") from None
    except yaml.YAMLError as exc:
        # A refused tag or alias before the damage is what to report: found event by event.
        _check_events(path, text)
        raise UntrustedFileError(f"{path}: damaged YAML{_where(exc)}") from None
    finally:
        loader.dispose()


class _Refused(Exception):
    def __init__(self, node: yaml.Node, what: str) -> None:
        super().__init__(what)
        self.line = node.start_mark.line + 1 if node.start_mark else None
        self.what = what


def _check(root: yaml.Node) -> None:
    """Refuse a non-standard tag or an alias (a node reached twice) anywhere under `root`."""
    seen: set[int] = set()
    todo = [root]
    while todo:
        node = todo.pop()
        if id(node) in seen:
            raise _Refused(node, ALIASES_REFUSED)
        seen.add(id(node))
        if node.tag not in _ALLOWED_TAGS:
            raise _Refused(node, f"YAML tag {node.tag!r} is refused {TAG_REASON}")
        if isinstance(node, yaml.MappingNode):  # children in document order, the first on top
            todo.extend(child for pair in reversed(node.value) for child in reversed(pair))
        elif isinstance(node, yaml.SequenceNode):
            todo.extend(reversed(node.value))


def _check_events(path: Path, text: str) -> None:
    """The parser's events up to the damage, refusing a tag or an alias met on the way."""
    try:
        for event in yaml.parse(text, Loader=_LOADER):
            tag = getattr(event, "tag", None)
            line = event.start_mark.line + 1 if event.start_mark else None
            if tag and not _standard(tag):
                raise UntrustedFileError(f"{path}:{line}: YAML tag {tag!r} is refused {TAG_REASON}")
            if isinstance(event, yaml.AliasEvent):
                raise UntrustedFileError(f"{path}:{line}: {ALIASES_REFUSED}")
    except yaml.YAMLError:
        return


_ALLOWED_TAGS = frozenset({"!", *(_STANDARD_TAG + kind for kind in _STANDARD_KINDS)})
ALIASES_REFUSED = ("YAML anchors and aliases are refused in cassettes (this tool never writes them); "
                   "re-record the case")
TAG_REASON = "(cassettes hold plain data; a Python tag would run code); re-record the case"


def _standard(tag: str) -> bool:
    return tag in _ALLOWED_TAGS


def _where(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    return f" at line {mark.line + 1}" if mark else ""


def _within(path: Path, root: Path) -> bool:
    """`path` resolves inside `root`. A path below `root` with no symbolic link on the way down
    is inside without resolving every folder above `root` again (a run reads thousands)."""
    file, top = os.fspath(path), os.fspath(root).rstrip(os.sep)
    below = file.startswith(top + os.sep) and ".." not in file[len(top) + 1:].split(os.sep)
    if below and not os.path.islink(file) and _plain(os.path.dirname(file), top):
        return True
    real, base = os.path.realpath(path), os.path.realpath(root)
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


_PLAIN: set[tuple[str, str]] = set()
"""(root, folder) pairs this process has seen with no symbolic link from `root` down to
`folder`: a run reads thousands of cassettes from a few folders, each folder is looked at once."""


def _plain(folder: str, root: str) -> bool:
    if (root, folder) in _PLAIN:
        return True
    here = root
    for part in folder[len(root) + 1:].split(os.sep) if folder != root else ():
        here += os.sep + part
        if os.path.islink(here):
            return False
    _PLAIN.add((root, folder))
    return True
