"""Where a field is written: the line of each node of a YAML or JSON text, by its path."""

from __future__ import annotations

import yaml

Loc = tuple[str | int, ...]
# libyaml's loader when present: it keeps node marks (lines) and parses several times faster.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def index_lines(node: yaml.Node, loc: Loc, out: dict[Loc, int]) -> tuple[Loc, int] | None:
    """Record the line of every node by its field path; return the first duplicate key."""
    out[loc] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        keys: set[str] = set()
        for key, value in node.value:
            k = str(key.value)
            if k in keys:
                return (*loc, k), key.start_mark.line + 1
            keys.add(k)
            dup = index_lines(value, (*loc, k), out)
            if dup:
                return dup
            out[(*loc, k)] = key.start_mark.line + 1  # the key's line, not its value's
    elif isinstance(node, yaml.SequenceNode):
        for i, child in enumerate(node.value):
            dup = index_lines(child, (*loc, i), out)
            if dup:
                return dup
    return None


def nearest_line(lines: dict[Loc, int], loc: Loc) -> int | None:
    for n in range(len(loc), -1, -1):
        if loc[:n] in lines:
            return lines[loc[:n]]
    return None


def line_map(text: str) -> dict[Loc, int]:
    """The line of every field of a YAML or JSON text; empty when it does not parse."""
    lines: dict[Loc, int] = {}
    try:
        node = yaml.compose(text, Loader=_LOADER)
    except yaml.YAMLError:
        return lines
    if node is not None:
        index_lines(node, (), lines)
    return lines


def line_of(text: str, loc: Loc) -> int | None:
    """The line of the field at `loc` in a YAML or JSON text (or its nearest parent's)."""
    return nearest_line(line_map(text), loc)


def loc_str(loc: Loc) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out
