"""Where other tools' eval files are, and which format each is, told by its content.

A `claude plugin eval` suite is read from the plugin's eval dir (`experimental.evals` in its
manifest, else `evals/`): every folder holding `case.yaml` or `prompt.md` is a case.

Looked at, for every skill of a package: `<skill>/evals/*.{json,yaml,yml}`,
`<skill>/evaluations/*.json`, `<skill>/trigger_tests.yaml`, and in the repository's `evals/`:
`evals/<skill>/*.{json,yaml,yml}` and the files at the top of `evals/` (but eval-config and
tune-split.yaml), and waza's `<skill>/eval.yaml`. A file there whose shape is none of the
formats read is an error naming it and the shapes expected.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aam_eval_action.errors import ConfigError
from aam_eval_action.importers import (
    claude_plugin_eval,
    openai_skills,
    questions,
    skill_creator,
    triggers,
    waza,
)
from aam_eval_action.importers.common import Imported, Place, load
from aam_eval_action.layouts.common import Json
from aam_eval_action.package import Finding, PackageLayout
from aam_eval_action.vally import spec as vally_spec

FORMATS: tuple[tuple[Callable[[Any], str | None], Callable[[Place, Json], list[Imported]]], ...] = (
    (skill_creator.detect, skill_creator.read),
    (triggers.detect, triggers.read),
    (openai_skills.detect, openai_skills.read),
    (questions.detect, questions.read),
    (waza.detect, waza.read),
)
SUFFIXES = (".json", ".yaml", ".yml")
OURS = ("eval-config.json", "tune-split.yaml")
OUR_FOLDERS = ("cases", "fixtures", "cassettes", "reports")
"""Folders of `evals/` that are ours whatever the skills are called: never read as `evals/<skill>/`."""
EXPECTED = ("skill-creator's {skill_name, evals: [{id, prompt, expectations}]}, a trigger set "
            "[{query, should_trigger}] or {triggers: [...]}, waza's {skill, should_trigger_prompts, "
            "should_not_trigger_prompts}, openai/skills' {query, expected_behavior}, a question set "
            "[{question, expected_skill, ground_truth}], or a waza suite {skill, config, graders, tasks}")


@dataclass
class EvalFile:
    """One eval file found, its format and the cases it gave (or why it gave none)."""

    rel: str
    format: str
    cases: list[Imported] = field(default_factory=list)
    error: str | None = None
    notes: list[tuple[int | None, str]] = field(default_factory=list)
    """What of the file is not run, each at its line (said once, never an error)."""


def candidates(layout: PackageLayout, several: bool = False) -> list[tuple[str, str | None]]:
    """(file, the skill its place names) for every file that may be an eval file (the top of
    `evals/` only in a repository of one package: it names no plugin)."""
    root = layout.root
    found: list[tuple[str, str | None]] = []
    for skill, folder in sorted(layout.skill_dirs.items()):
        base = root / folder if folder else root
        found += [(_rel(p, root), skill) for p in _files(base / "evals")]
        found += [(_rel(p, root), skill) for p in _files(base / "evaluations", (".json",))]
        for name in ("eval.yaml", "eval.yml", "trigger_tests.yaml"):  # waza's, beside the skill
            if (base / name).is_file():
                found.append((_rel(base / name, root), skill))
        if skill not in OUR_FOLDERS:
            found += [(_rel(p, root), skill) for p in _files(layout.evals_dir / skill)]
    if not several and layout.kind != "aam":  # an AAM package's evals/ is ours alone
        found += [(_rel(p, root), None) for p in _files(layout.evals_dir) if p.name not in OURS]
    return list(dict.fromkeys(found))


def _files(folder: Path, suffixes: tuple[str, ...] = SUFFIXES) -> list[Path]:
    if not folder.is_dir() or folder.is_symlink():
        return []
    return sorted(p for p in folder.iterdir() if p.suffix in suffixes and p.is_file())


def _rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def discover(layout: PackageLayout, several: bool = False) -> tuple[list[EvalFile], list[Finding]]:
    """Every eval file of the package, read; a file that cannot be read is kept with its error."""
    files: list[EvalFile] = []
    findings: list[Finding] = []
    for rel, skill in candidates(layout, several):
        place = Place(layout.root, rel, skill, layout.skill_dirs)
        try:
            doc = load(layout.root, rel)
        except ConfigError as exc:
            files.append(EvalFile(rel, "unreadable", error=str(exc)))
            continue
        if not _ours(doc.data) and not vally_spec.is_spec(doc.data):  # a Vally spec is read below
            files.append(_read(place, doc))
    found, warned = claude_plugin_eval_files(layout)
    return files + found + vally_files(layout), findings + warned


def vally_files(layout: PackageLayout) -> list[EvalFile]:
    """The Vally eval specs of the repository (`vally/`): one EvalFile per spec, its stimuli as
    cases graded by their graders, or the file's error; a `.vally.yaml` that cannot be read is
    an error of its own."""
    from aam_eval_action.vally.project import read_project

    project = read_project(layout.root, layout.skill_dirs)
    out = [EvalFile(problem.split(":", 1)[0], vally_spec.FORMAT, error=problem)
           for problem in project.problems]
    for spec in project.files:
        if spec.error is not None:
            out.append(EvalFile(spec.rel, vally_spec.FORMAT, error=spec.error))
            continue
        cases = [Imported(s.case, s.line, s.skipped, file=spec.rel, graders=s.graders,
                          item=(s.eval_name, s.name)) for s in spec.stimuli if s.case is not None]
        out.append(EvalFile(spec.rel, vally_spec.FORMAT, cases, notes=spec.notes))
    return out


def claude_plugin_eval_files(layout: PackageLayout) -> tuple[list[EvalFile], list[Finding]]:
    """The cases of a `claude plugin eval` suite in the plugin's eval dir: one EvalFile per case
    folder (its case.yaml or prompt.md), read or refused; and a warning for each grader that can
    never pass."""
    try:
        evals, _ = claude_plugin_eval.eval_dir(layout.root, layout.base)
    except ConfigError as exc:
        return [EvalFile(".claude-plugin/plugin.json", claude_plugin_eval.FORMAT, error=str(exc))], []
    found: list[EvalFile] = []
    warned: list[Finding] = []
    folders = [(folder, evals) for folder in claude_plugin_eval.case_dirs(layout.root, evals)]
    for inner in claude_plugin_eval.skill_eval_dirs(layout.root, layout.skill_dirs.values(), evals):
        folders += [(folder, inner) for folder in claude_plugin_eval.case_dirs(layout.root, inner)]
    for outside in claude_plugin_eval.outside_eval_dirs(layout.root, layout.base):
        for folder in claude_plugin_eval.case_dirs(layout.root, outside):  # the cases naming this plugin
            listed = claude_plugin_eval.listed_plugins(layout.root, folder)
            if listed is not None and claude_plugin_eval.claimed_by(layout.root, listed) == layout.base:
                folders.append((folder, outside))
    for folder, evals in folders:
        name = "case.yaml" if (layout.root / folder / "case.yaml").is_file() else "prompt.md"
        rel = f"{folder}/{name}"
        try:
            read = claude_plugin_eval.read_case(layout.root, folder, evals)
        except ConfigError as exc:
            found.append(EvalFile(rel, claude_plugin_eval.FORMAT, error=str(exc)))
            continue
        cases: list[Imported] = [read.imported]
        found.append(EvalFile(rel, claude_plugin_eval.FORMAT, cases))
        warned += [Finding(file, line, why) for file, line, why in read.never_pass]
    return found, warned


def _ours(data: Any) -> bool:
    """A report of ours (a base report kept beside the evals) is not an eval file."""
    return isinstance(data, dict) and {"cases", "summary", "config"} <= data.keys()


def _read(place: Place, doc: Json) -> EvalFile:
    for detect, read in FORMATS:
        kind = detect(doc.data)
        if kind is None:
            continue
        try:
            return EvalFile(doc.rel, kind, read(place, doc))
        except ConfigError as exc:
            return EvalFile(doc.rel, kind, error=str(exc))
    return EvalFile(doc.rel, "unknown",
                    error=f"{doc.rel}:1: not an eval file of a known shape; expected {EXPECTED}")
