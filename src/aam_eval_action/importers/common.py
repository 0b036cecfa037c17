"""What every importer shares: the file read with its lines, stable case names, the case
built through the same validation as an authored one, and the checks it could not honour."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from aam_eval_action.errors import ConfigError
from aam_eval_action.graders import PluginGrader
from aam_eval_action.layouts.common import Json, inside, load_json
from aam_eval_action.spec import Case


@dataclass
class Imported:
    """One case read from another tool's file."""

    case: Case
    line: int | None
    skipped: dict[str, str] = field(default_factory=dict)
    """Checks of the file that could not be honoured, each with its reason."""
    file: str | None = None
    """The file the case is written in when it is not the one found (a waza suite's task)."""
    graders: tuple[PluginGrader, ...] = ()
    """A `claude plugin eval` case's graders, graded as that runner grades them."""
    item: tuple[str, str] | None = None
    """A Vally stimulus's (eval, stimulus) names."""


@dataclass(frozen=True)
class Place:
    """Where an eval file sits: the repository, the file, and the skill its place names."""

    root: Path
    rel: str
    skill: str | None
    """The skill whose folder (`<skill>/evals/`, `evals/<skill>/`) holds the file."""
    skills: dict[str, str]
    """Every skill of the package: name → folder."""

    @property
    def folder(self) -> str:
        return self.rel.rsplit("/", 1)[0] if "/" in self.rel else ""


def load(root: Path, rel: str) -> Json:
    """A JSON or YAML eval file with its lines; a clear error with the line when it does not parse."""
    return load_json(root, rel)


def case_name(*parts: object) -> str:
    """A case name from the parts that identify it (`<skill>-<id>`): `[a-z0-9-]`, at most 64."""
    text = "-".join(str(p) for p in parts if p is not None and str(p) != "")
    name = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    if len(name) <= 64:
        return name or "case"
    return f"{name[:55].rstrip('-')}-{digest(text)}"


def digest(text: str) -> str:
    """Eight hex digits of a text: names a case by its prompt when the file gives no id."""
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def skill_of(place: Place, doc: Json, named: Any, *loc: str | int) -> str:
    """The skill a case targets: the one the file names (by folder, or by its SKILL.md name),
    else the one its place names, else the package's only skill. A name that is neither, in a
    file inside a skill's folder, is taken as that skill (files keep old names)."""
    if isinstance(named, str) and named.strip() and named not in place.skills:
        named = _by_declared_name(place, named) or (None if place.skill else named)
    if isinstance(named, str) and named.strip():
        if named not in place.skills:
            have = ", ".join(sorted(place.skills)) or "none"
            raise ConfigError(f"{doc.at(*loc)}: skill {named!r} is not in the package (skills: {have}); "
                              "fix the name")
        return named
    if place.skill:
        return place.skill
    if len(place.skills) == 1:
        return next(iter(place.skills))
    raise ConfigError(f"{doc.rel}: cannot tell which skill these cases are for: name it in the file, or "
                      "put the file in <skill>/evals/ or evals/<skill>/")


def _by_declared_name(place: Place, named: str) -> str | None:
    """The skill whose SKILL.md says `name: <named>`."""
    from aam_eval_action.layouts.common import frontmatter

    for skill, folder in place.skills.items():
        try:
            front, _ = frontmatter(place.root, f"{folder}/SKILL.md" if folder else "SKILL.md")
        except (ConfigError, OSError):
            continue
        if front.get("name") == named:
            return skill
    return None


def build(doc: Json, loc: tuple[str | int, ...], fields: dict[str, Any]) -> Case:
    """A case from our fields, validated as an authored case is; an error names the file,
    the entry and its line."""
    try:
        return Case.model_validate(fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(f"{doc.at(*loc)}: {'.'.join(map(str, err['loc']))}: "
                          f"{str(err['msg']).removeprefix('Value error, ')}") from None


def files_root(place: Place, doc: Json, files: Any, loc: tuple[str | int, ...]) -> tuple[list[str], str]:
    """A case's input files as written, and the folder they are read from: the file's own
    folder, else its skill's (skill-creator writes them relative to the skill). Every file must
    exist and stay inside the repository."""
    if files is None:
        return [], place.folder
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise ConfigError(f"{doc.at(*loc)}: a list of file paths")
    roots = [place.folder] + ([place.skills[place.skill]] if place.skill in place.skills else [])
    problems: list[ConfigError] = []
    for root in dict.fromkeys(roots):
        try:
            rels = [inside(place.root, root, f, doc.at(*loc, i), within=root) for i, f in enumerate(files)]
        except ConfigError as exc:
            problems.append(exc)
            continue
        if all((place.root / r).is_file() for r in rels):
            return [str(Path(r).relative_to(root)) if root else r for r in rels], root
    if problems:
        raise problems[0]
    missing = next(f for f in files if not (place.root / place.folder / f).is_file())
    raise ConfigError(f"{doc.at(*loc)}: input file {missing!r} not found beside {doc.rel} nor in its "
                      "skill's folder; add it or fix the path")


def criteria(*groups: tuple[str, Any]) -> str | None:
    """Judge criteria from what only a judge can grade: headed lists of statements."""
    parts = []
    for heading, items in groups:
        listed = [items] if isinstance(items, str) else [i for i in items or [] if isinstance(i, str)]
        listed = [i.strip() for i in listed if i.strip()]
        if listed:
            parts.append(heading + "\n" + "\n".join(f"- {i}" for i in listed))
    return "\n\n".join(parts) or None
