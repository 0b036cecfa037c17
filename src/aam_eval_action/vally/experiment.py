"""A Vally experiment file whose variants differ only in `environment/skills`, one of them with
none: a without/with pair, run as this project's two arms (with the skills, and without), whose
difference is the skills' lift.

From https://microsoft.github.io/vally/reference/experiment-file/ (0.17): `name`, `evals`
(globs relative to the experiment file; a pattern matching nothing is skipped), `overrides`
(merged over each eval's defaults), `vary` (JSON pointers such as `/environment/skills`),
`baseline` (a variant's name), `variants` (at least two). dotnet/skills keeps one such file,
`${eval.parent}` and `${eval.grandparent}` in its skill paths naming the eval file's folder and
the one above it, and a `!(agent.*)` pattern (Node's extglob) in its `evals`.

Another kind of experiment (a model matrix, two skill versions) compares runs this project
does not make from one file: it is named, with why, and its evals are read only as their
`.vally.yaml` finds them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aam_eval_action.errors import ConfigError
from aam_eval_action.layouts.common import load_json
from aam_eval_action.vally import config as vally_config

NAMES = re.compile(r"(.+\.)?experiment\.ya?ml")
KEYS = (
    "name",
    "description",
    "evals",
    "overrides",
    "vary",
    "baseline",
    "variants",
    "matrix",
    "execution",
    "metadata",
)


@dataclass
class Experiment:
    """An experiment file read: the eval files it takes and, for a without/with pair, the
    skills of the variant with them (paths relative to the repository, templates unfilled)."""

    rel: str
    name: str
    evals: list[str] = field(default_factory=list)
    skills: list[str] | None = None
    """The skilled variant's `environment.skills` (relative to the experiment's folder); None
    when the experiment is no without/with pair."""
    overrides: dict[str, Any] = field(default_factory=dict)
    why_not: str | None = None
    """Why it is no without/with pair (it is then only listed)."""


def find(root: Path) -> list[str]:
    return vally_config.walk(root, lambda p: NAMES.fullmatch(p.name) is not None)


def read(root: Path, rel: str) -> Experiment:
    doc = load_json(root, rel)
    data = doc.data
    if not isinstance(data, dict):
        raise ConfigError(f"{doc.at()}: an experiment is a mapping (name, evals, variants)")
    for key in data:
        if key not in KEYS:
            raise ConfigError(
                f"{doc.at(key)}: unknown experiment key {key!r}; an experiment takes {', '.join(KEYS)}"
            )
    name = str(data.get("name") or Path(rel).stem)
    globs = data.get("evals")
    if not isinstance(globs, list) or not globs or not all(isinstance(g, str) for g in globs):
        raise ConfigError(f"{doc.at('evals')}: evals: a list of eval file globs (relative to this file)")
    folder = rel.rsplit("/", 1)[0] if "/" in rel else ""
    found: list[str] = []
    for pattern in globs:
        found += _glob(root, folder, pattern)
    overrides = data.get("overrides") or {}
    if not isinstance(overrides, dict):
        raise ConfigError(f"{doc.at('overrides')}: overrides: a mapping (runs, timeout, model)")
    experiment = Experiment(rel, name, list(dict.fromkeys(found)), overrides=dict(overrides))
    experiment.skills, experiment.why_not = _pair(data)
    return experiment


def _pair(data: dict[str, Any]) -> tuple[list[str] | None, str | None]:
    """(the skilled variant's skills, None) for a without/with pair; else (None, why not)."""
    if "matrix" in data:
        return None, "a matrix experiment (several axes) is not a without/with pair"
    variants = data.get("variants")
    if not isinstance(variants, dict) or len(variants) != 2:
        return None, "a without/with pair has two variants"
    if data.get("vary") not in (["/environment/skills"], "/environment/skills"):
        return None, f"it varies {data.get('vary')!r}, not only /environment/skills"
    skills: dict[str, Any] = {}
    for name, body in variants.items():
        environment = body.get("environment") if isinstance(body, dict) else None
        value = environment.get("skills") if isinstance(environment, dict) else None
        if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
            return None, f"variant {name!r} sets no list of environment.skills"
        skills[str(name)] = value
    empty = [n for n, s in skills.items() if not s]
    if len(empty) != 1:
        return None, "neither variant runs without skills: two versions of a skill are compared, not its lift"
    return next(s for n, s in skills.items() if n not in empty), None


def skills_for(experiment: Experiment, eval_rel: str) -> list[str]:
    """The skilled variant's skills for one eval file, relative to that file (as an eval's own
    `environment.skills` are): `${eval.parent}` and `${eval.grandparent}` filled in, each path
    taken from the experiment's folder."""
    parts = eval_rel.split("/")
    parent = parts[-2] if len(parts) > 1 else ""
    grandparent = parts[-3] if len(parts) > 2 else ""
    folder = experiment.rel.rsplit("/", 1)[0] if "/" in experiment.rel else ""
    out = []
    eval_folder = eval_rel.rsplit("/", 1)[0] if "/" in eval_rel else ""
    depth = len([p for p in eval_folder.split("/") if p])
    for skill in experiment.skills or []:
        filled = skill.replace("${eval.parent}", parent).replace("${eval.grandparent}", grandparent)
        from_root = f"{folder}/{filled}" if folder else filled
        out.append("/".join([".."] * depth + [from_root]) if depth else from_root)
    return out


def _glob(root: Path, folder: str, pattern: str) -> list[str]:
    """Files a pattern takes (relative to the experiment's folder), as Node's glob takes them."""
    base = root / folder if folder else root
    regex = vally_config.glob_regex(pattern.removeprefix("./"))
    found = []
    for rel in vally_config.walk(root, lambda p: p.name.endswith((".yaml", ".yml")), folder):
        inner = rel[len(folder) + 1:] if folder else rel
        if regex.fullmatch(inner) and (base / inner).is_file():
            found.append(rel)
    return found
