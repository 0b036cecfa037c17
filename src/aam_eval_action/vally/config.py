"""`.vally.yaml`, and where a repository's Vally eval specs are.

From https://microsoft.github.io/vally/reference/vally-yaml/ (0.17):

* `paths.skills` (default `skills/`), `paths.evals` (folders scanned for eval files, default
  `evals/`), `paths.evalFilenames` (globs on a file's name, default `eval.yaml`, `eval.yml`);
* `environments.<name>`: setups a spec names with a string `environment:`;
* `suites.<name>`: `description`, `filter` (stimulus tags: every key must match, any value of a
  list will do) and/or `evals` (globs relative to the config; at least one of the two).
  https://microsoft.github.io/vally/guides/authoring-eval-suites/ : "File scoping narrows
  which eval files are loaded. Tag filtering narrows which stimuli within those files run."

Not in the docs, taken from public suites: a suite's globs do not enter dot-folders (a
repository keeping evals in `.agents/evals/` lists each file, mjrousos/ChessTrainer's
`.vally.yaml` says so); a folder scan through `paths.evals` does. A config may sit below the
root (Azure/azure-sdk-tools keeps three, each run from its own folder): each governs the files
below it, the nearest one winning. Without any `.vally.yaml`, Vally's defaults apply at the root.
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aam_eval_action.errors import ConfigError
from aam_eval_action.layouts.common import Json, load_json

CONFIG = ".vally.yaml"
DEFAULT_EVALS = ("evals",)
DEFAULT_SKILLS = ("skills",)
DEFAULT_NAMES = ("eval.yaml", "eval.yml")
NOT_SCANNED = frozenset({".git", "node_modules", "__pycache__", ".venv", "venv"})
CONFIG_KEYS = ("paths", "environments", "suites", "metadata")
PATHS_KEYS = ("skills", "evals", "results", "evalFilenames")
SUITE_KEYS = ("description", "filter", "evals", "metadata")
MAX_FILES = 5000


@dataclass(frozen=True)
class Suite:
    """A named selection of stimuli."""

    name: str
    description: str
    filter: dict[str, tuple[str, ...]] | None
    """Tag → accepted values (every key must match)."""
    evals: tuple[str, ...] | None
    """Globs (relative to the config's folder) of the eval files it takes."""
    line: int | None = None


@dataclass
class VallyConfig:
    """One `.vally.yaml` (or Vally's defaults at the root, `rel` None)."""

    folder: str
    """Its folder, relative to the repository ("" at the root)."""
    rel: str | None
    skills: tuple[str, ...] = DEFAULT_SKILLS
    evals: tuple[str, ...] = DEFAULT_EVALS
    names: tuple[str, ...] = DEFAULT_NAMES
    environments: dict[str, Any] = field(default_factory=dict)
    suites: dict[str, Suite] = field(default_factory=dict)
    doc: Json | None = None

    def at(self, *loc: str | int) -> str:
        return self.doc.at(*loc) if self.doc is not None else (self.rel or CONFIG)

    def under(self, rel: str) -> str:
        """`rel` (relative to this config's folder) relative to the repository."""
        return os.path.normpath(f"{self.folder}/{rel}" if self.folder else rel).replace(os.sep, "/")


def configs(root: Path) -> tuple[list[VallyConfig], list[str]]:
    """Every `.vally.yaml` of the repository, the root's first (Vally's defaults at the root when
    it has none), and the error of each one that cannot be read."""
    found = sorted(walk(root, lambda p: p.name == CONFIG), key=lambda rel: (rel.count("/"), rel))
    out: list[VallyConfig] = [] if CONFIG in found else [VallyConfig("", None)]  # defaults at the root
    problems: list[str] = []
    for rel in found:
        try:
            out.append(read(root, rel))
        except ConfigError as exc:
            problems.append(str(exc))
    return out, problems



def read(root: Path, rel: str) -> VallyConfig:
    doc = load_json(root, rel)
    folder = rel.rsplit("/", 1)[0] if "/" in rel else ""
    data = doc.data if doc.data is not None else {}
    if not isinstance(data, dict):
        raise ConfigError(f"{doc.at()}: a .vally.yaml is a mapping (paths, environments, suites)")
    _known(doc, data, CONFIG_KEYS, ())
    config = VallyConfig(folder, rel, doc=doc)
    paths = data.get("paths") or {}
    if not isinstance(paths, dict):
        raise ConfigError(f"{doc.at('paths')}: paths: a mapping (skills, evals, evalFilenames)")
    _known(doc, paths, PATHS_KEYS, ("paths",))
    config.skills = _strings(doc, paths.get("skills"), ("paths", "skills")) or DEFAULT_SKILLS
    config.evals = _strings(doc, paths.get("evals"), ("paths", "evals")) or DEFAULT_EVALS
    config.names = _strings(doc, paths.get("evalFilenames"), ("paths", "evalFilenames")) or DEFAULT_NAMES
    for value, loc in ((config.skills, "skills"), (config.evals, "evals")):
        for i, path in enumerate(value):
            _inside(doc, config.under(path), ("paths", loc, i), path)
    environments = data.get("environments") or {}
    if not isinstance(environments, dict):
        raise ConfigError(f"{doc.at('environments')}: environments: a mapping of name → environment")
    config.environments = environments
    suites = data.get("suites") or {}
    if not isinstance(suites, dict):
        raise ConfigError(f"{doc.at('suites')}: suites: a mapping of name → {{description, filter, evals}}")
    for name, body in suites.items():
        config.suites[str(name)] = _suite(doc, str(name), body)
    return config


def _suite(doc: Json, name: str, body: Any) -> Suite:
    where = ("suites", name)
    if not isinstance(body, dict):
        raise ConfigError(f"{doc.at(*where)}: suite {name!r}: a mapping (description, filter, evals)")
    _known(doc, body, SUITE_KEYS, where)
    if "filter" not in body and "evals" not in body:
        raise ConfigError(
            f"{doc.at(*where)}: suite {name!r} needs filter or evals (or both): each suite "
            "must have at least one (vally-yaml reference)"
        )
    raw = body.get("filter")
    tags: dict[str, tuple[str, ...]] | None = None
    if raw is not None:
        if not isinstance(raw, dict):
            raise ConfigError(
                f"{doc.at(*where, 'filter')}: filter: a mapping of tag → value or list of values"
            )
        tags = {}
        for key, value in raw.items():
            values = value if isinstance(value, list) else [value]
            if not values or not all(isinstance(v, str | int | float | bool) for v in values):
                raise ConfigError(
                    f"{doc.at(*where, 'filter', key)}: filter.{key}: a value or a list of values"
                )
            tags[str(key)] = tuple(_tag(v) for v in values)
    globs = _strings(doc, body.get("evals"), (*where, "evals")) if "evals" in body else None
    folder = doc.rel.rsplit("/", 1)[0] if "/" in doc.rel else ""
    for i, pattern in enumerate(globs or ()):
        _inside(doc, f"{folder}/{pattern}" if folder else pattern, (*where, "evals", i), pattern)
    description = body.get("description")
    return Suite(name, description if isinstance(description, str) else "", tags, globs, doc.line(*where))


def _tag(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _known(doc: Json, data: dict[str, Any], keys: tuple[str, ...], where: tuple[str | int, ...]) -> None:
    for key in data:
        if key not in keys:
            raise ConfigError(
                f"{doc.at(*where, key)}: unknown key {key!r}; {'.'.join(map(str, where)) or 'the top'} "
                f"takes {', '.join(keys)}"
            )


def _strings(doc: Json, value: Any, loc: tuple[str | int, ...]) -> tuple[str, ...]:
    if value is None:
        return ()
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not all(isinstance(v, str) and v.strip() for v in values):
        raise ConfigError(f"{doc.at(*loc)}: {loc[-1]}: a path or a list of paths")
    return tuple(values)


def _inside(doc: Json, path: str, loc: tuple[str | int, ...], written: str) -> None:
    """`path` (relative to the repository, normalised) must stay inside it."""
    if written.startswith("/") or re.match(r"^[A-Za-z]:", written) or path == ".." or path.startswith("../"):
        raise ConfigError(f"{doc.at(*loc)}: {written!r} leaves the repository; give a path inside it")


def walk(root: Path, wanted: Any, start: str = "") -> list[str]:
    """Files under `start` (relative to root) that `wanted(path)` takes; no link is followed."""
    found: list[str] = []
    base = root / start if start else root
    if not base.is_dir() or base.is_symlink():
        return found
    for folder, dirs, files in os.walk(base):
        dirs[:] = sorted(
            d for d in dirs if d not in NOT_SCANNED and not os.path.islink(os.path.join(folder, d))
        )
        for name in sorted(files):
            path = Path(folder, name)
            if not path.is_symlink() and wanted(path):
                found.append(path.relative_to(root).as_posix())
                if len(found) > MAX_FILES:
                    raise ConfigError(
                        f"{start or '.'}: more than {MAX_FILES} files scanned for Vally specs; "
                        "narrow paths.evals"
                    )
    return found


def eval_files(root: Path, config: VallyConfig) -> list[str]:
    """The files `config` finds: under each `paths.evals` folder, those whose name matches an
    `evalFilenames` glob (only the ones below a nested config belong to it)."""
    found: list[str] = []
    for folder in config.evals:
        start = config.under(folder.rstrip("/"))
        starts = [start]
        if any(c in start for c in "*?["):  # a glob of folders (microsoft/mcp keeps `tools/X.*/tests/`)
            starts = sorted(
                p.relative_to(root).as_posix() for p in root.glob(start) if p.is_dir() and not p.is_symlink()
            )
        for one in starts:
            found += walk(root, lambda p: any(fnmatch.fnmatchcase(p.name, n) for n in config.names), one)
    return list(dict.fromkeys(found))


def owner(configs_: list[VallyConfig], rel: str) -> VallyConfig:
    """The nearest config above `rel`."""
    best = configs_[0]
    for config in configs_:
        if (not config.folder or rel.startswith(config.folder + "/")) and len(config.folder) >= len(
            best.folder
        ):
            best = config
    return best


def glob_matches(pattern: str, rel: str) -> bool:
    """Whether a suite's `evals` glob (relative to its config) takes `rel` (relative to the
    same folder); a glob naming a folder takes what is in it."""
    regex = glob_regex(pattern.removeprefix("./").rstrip("/"))
    return regex.fullmatch(rel) is not None or re.fullmatch(regex.pattern + r"/.+", rel) is not None


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A Node glob (`glob` without `dot`): `*` and `?` within a name, `**` across folders,
    `{a,b}`, and extglob's `!(a|b)` (a name that is none of those); a wildcard never matches a
    name that starts with a dot, so a dot-folder is entered only where the pattern names it."""
    out = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("!(", i):
            end = pattern.index(")", i)
            choices = "|".join(_literal(c) for c in pattern[i + 2:end].split("|"))
            out += rf"(?!(?:{choices})(?:/|$))[^/.][^/]*"
            i = end + 1
        elif pattern.startswith("**/", i):
            out += r"(?:[^/.][^/]*/)*"
            i += 3
        elif pattern.startswith("**", i):
            out += r"(?:[^/.][^/]*(?:/[^/.][^/]*)*)?"
            i += 2
        elif pattern[i] == "*":
            out += r"(?:[^/.][^/]*)?" if i == 0 or pattern[i - 1] == "/" else r"[^/]*"
            i += 1
        elif pattern[i] == "?":
            out += r"[^/]"
            i += 1
        elif pattern[i] == "{" and "}" in pattern[i:]:
            end = pattern.index("}", i)
            out += "(?:" + "|".join(_literal(c) for c in pattern[i + 1:end].split(",")) + ")"
            i = end + 1
        else:
            out += re.escape(pattern[i])
            i += 1
    return re.compile(out)


def _literal(text: str) -> str:
    return re.escape(text).replace(r"\*", "[^/]*").replace(r"\?", "[^/]")
