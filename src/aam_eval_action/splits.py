"""A suite's tuning split kept beside its cases: `<evals>/tune-split.yaml`.

`aam-eval tune` needs each trigger prompt in one of three sets (train, selection, test). A case
says which with a `split:` tag; a suite with no tags gets a split made by tune, and tune keeps it
in this one small file (never editing the case files, which may hold several cases, or be
another tool's), so that every later run, and a replay, uses the same split. The loader reads
it: a case named in it gets its `split:` tag, unless the case has one of its own.

    # Made by `aam-eval tune`: which set each trigger prompt is in. Review and commit it.
    version: 1
    seed: aam-eval-tune-1
    split:
      rename-customer-column: test
      drop-audit-table: select

The file is the repository's, so it is untrusted input: read with the safe loader, every name
and set checked, a problem named with its line.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from aam_eval_action.errors import ConfigError

FILE = "tune-split.yaml"
SETS = ("train", "select", "test")
HEAD = ("# Made by `aam-eval tune`: which set each trigger prompt is in (train, select, test).\n"
        "# Review and commit it; a case's own split: tag wins over it. Delete it for a new split.\n")


def path_of(evals_dir: Path) -> Path:
    return evals_dir / FILE


def read(path: Path, rel: str) -> dict[str, str]:
    """Case name → set, from the file at `path` (`rel` names it in errors); {} when absent."""
    if not path.is_file():
        return {}
    text = path.read_text(encoding="utf-8")
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{rel}{line}: not YAML ({getattr(exc, 'problem', exc)}); delete it and run tune "
                          "again for a new split") from None
    lines = _lines(node)
    if not isinstance(data, dict) or data.get("version") != 1 or not isinstance(data.get("split"), dict):
        raise ConfigError(f"{rel}:1: a mapping of version: 1 and split: (case name → train, select or "
                          "test); delete it and run tune again for a new split")
    out = {}
    for name, which in data["split"].items():
        if not isinstance(name, str) or which not in SETS:
            raise ConfigError(f"{rel}:{lines.get(str(name), 1)}: split.{name}: {which!r} is not one of "
                              f"{', '.join(SETS)}")
        out[name] = which
    return out


def _lines(node: yaml.Node | None) -> dict[str, int]:
    """The line of each name under `split:`."""
    if not isinstance(node, yaml.MappingNode):
        return {}
    for key, value in node.value:
        if key.value == "split" and isinstance(value, yaml.MappingNode):
            return {k.value: k.start_mark.line + 1 for k, _ in value.value}
    return {}


def text_of(split: dict[str, str], seed: str) -> str:
    body = yaml.safe_dump({"version": 1, "seed": seed, "split": dict(sorted(split.items()))}, sort_keys=False,
                          allow_unicode=True)
    return HEAD + body
