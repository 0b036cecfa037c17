"""Load and validate a repository: its packages (any layout), eval-config and case files,
with file:line errors.

Evals live in one place per repository root, `evals/`: eval-config is optional outside an AAM
package; a repository of several plugins keeps each plugin's cases in `evals/cases/<plugin>/`
(and its cassettes in `<cassettes>/<plugin>/`), so two plugins' cases never collide.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from aam_eval_action.engines.registry import DEFAULT_ENGINE, engine_for_hosts
from aam_eval_action.errors import ConfigError, UsageError
from aam_eval_action.fsutil import is_inside
from aam_eval_action.graders import PluginGrader
from aam_eval_action.layouts.detect import Repo, detect
from aam_eval_action.lines import Loc, index_lines, line_map, line_of, loc_str, nearest_line
from aam_eval_action.package import Finding, PackageLayout
from aam_eval_action.spec import Case, EvalConfig, Expected, PackageManifest
from aam_eval_action.yaml_build import Loader, build

M = TypeVar("M", bound=BaseModel)
_FILE_UNSAFE = re.compile(r"[^A-Za-z0-9._-]|^\.+")
PACKAGE_JSON = ("hooks/hooks.json", "mcp/servers.json")
CONFIG_PATH = "evals/eval-config.json"
__all__ = ["CONFIG_PATH", "FileError", "LoadedCase", "LoadedPackage", "LoadedRepo", "line_of", "load_package",
           "load_repo"]
# libyaml's loader when present: it keeps node marks (lines) and parses several times faster.
_LOADER = Loader


@dataclass(frozen=True)
class LoadedCase:
    """A valid case and where it was written."""

    case: Case
    file: str
    """Case file, relative to the package root."""
    line: int
    """Line where the case starts."""
    source: str | None = None
    """The format of the other tool's eval file it was imported from (`skill-creator`…)."""
    skipped: tuple[tuple[str, str], ...] = ()
    """What that file asks that could not be honoured: (check, why)."""
    graders: tuple[PluginGrader, ...] = ()
    """A `claude plugin eval` case's graders: it is graded as that runner grades
    (`pipeline/plugin_eval.py`), by score."""
    item: tuple[str, str] | None = None
    """A Vally stimulus's (eval, stimulus) names: Vally's `<eval>::<stimulus>`."""


@dataclass(frozen=True)
class FileError:
    """A problem in one file, pointing at the line."""

    file: str
    line: int | None
    message: str
    case_name: str | None = None
    """The case's name when it could be read, so a run can still report it."""

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.message}"


@dataclass
class LoadedPackage:
    """A package ready to run: valid cases, and the case files that were not. In a repository
    of plugins, one plugin."""

    layout: PackageLayout
    manifest: PackageManifest
    config: EvalConfig
    cases: list[LoadedCase] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    config_lines: dict[Loc, int] = field(default_factory=dict)
    """Line of each eval-config field, by its path, for errors found after loading."""
    eval_files: list[Any] = field(default_factory=list)
    """Other tools' eval files found (`importers.discover.EvalFile`), read or not."""
    import_findings: list[Finding] = field(default_factory=list)
    """What the importers left out and why."""
    config_written: bool = True
    """Whether the repository has an eval-config (else the defaults)."""
    several: bool = False
    """One plugin of several: its cases and cassettes sit in a folder named after it, and its
    results are named `<plugin>/<case>`."""
    stored_split: dict[str, str] = field(default_factory=dict)
    """The cases that took their `split:` tag from tune's kept split (`splits.py`): name → set."""

    @property
    def plugin(self) -> str | None:
        return self.layout.plugin

    @property
    def key(self) -> str:
        """The plugin's folder name under `evals/cases/` and the cassettes (file-name safe)."""
        return plugin_key(self.layout.plugin or "")

    @property
    def cases_dir(self) -> Path:
        cases = self.layout.evals_dir / "cases"
        return cases / self.key if self.several else cases

    def qualified(self, name: str) -> str:
        """A case's name in a report: `<plugin>/<case>` when the repository has several plugins."""
        return f"{self.key}/{name}" if self.several else name

    def config_location(self, *loc: str | int) -> str:
        """`evals/eval-config.json:LINE: field.path`, for an error about one eval-config field."""
        line = nearest_line(self.config_lines, loc)
        return f"{CONFIG_PATH}:{line}: {loc_str(loc)}" if line else f"{CONFIG_PATH}: {loc_str(loc)}"


@dataclass
class LoadedRepo:
    """What `--package DIR` holds: its layout, and each package (plugin) with its cases."""

    layout: Repo
    """The layout as detected, every plugin included (before `--plugin` picked some)."""
    packages: list[LoadedPackage]
    """The packages the run takes, loaded."""
    findings: list[Finding] = field(default_factory=list)
    """Skipped plugins, lint warnings and what the layout or the importers could not read."""

    @property
    def root(self) -> Path:
        return self.layout.root

    @property
    def kind(self) -> str:
        return self.layout.kind

    @property
    def source(self) -> str | None:
        return self.layout.source

    @property
    def name(self) -> str | None:
        return self.layout.name

    @property
    def several(self) -> bool:
        return self.layout.several


def plugin_key(name: str) -> str:
    return _FILE_UNSAFE.sub("-", name) or "plugin"


def load_repo(root: Path, plugins: list[str] | None = None) -> LoadedRepo:
    """Every package of the repository, or only the `plugins` named (`--plugin`)."""
    repo = detect(root)
    known = [p.plugin or "" for p in repo.packages]
    chosen = repo.packages
    if plugins:
        unknown = [p for p in plugins if p not in known]
        if unknown:
            raise UsageError(f"--plugin: no plugin {', '.join(map(repr, unknown))} here; plugins: "
                             f"{', '.join(known) or 'none'}")
        chosen = [p for p in repo.packages if p.plugin in plugins]
    if not chosen:
        raise ConfigError(f"{root}: {repo.source or 'the marketplace'} lists no plugin with a local source; "
                          "nothing to run")
    hosts = [h for p in repo.packages for h in p.hosts]
    # A Vally project runs on Copilot CLI, as Vally's default executor (copilot-sdk) does.
    vally = repo.source is not None and repo.source.endswith((".vally.yaml", "experiment.yaml"))
    engine = engine_for_hosts(["copilot"] if vally else hosts)
    config, lines = _config(repo.root, required=repo.kind == "aam", engine=engine)
    several = len(repo.packages) > 1
    loaded = [_load(layout, config, lines, several) for layout in chosen]
    for package in loaded:
        package.config_written = (repo.root / CONFIG_PATH).is_file()
    findings = list(repo.findings) + [f for layout in chosen for f in layout.findings]
    findings += _misplaced_cases(repo.root, known) if several else []
    findings += [f for package in loaded for f in package.import_findings]
    if loaded:
        loaded[0].errors += _unclaimed_cpe_cases(repo.root, [p.layout.base for p in loaded])
    return LoadedRepo(repo, loaded, findings)


def _unclaimed_cpe_cases(root: Path, bases: list[str]) -> list[FileError]:
    """`claude plugin eval` cases in an eval dir outside every plugin whose `plugins:` names none
    of the plugins run: that runner refuses those whose entries are not there (with its reason,
    given here), and no plugin of ours would list them."""
    from aam_eval_action.importers import claude_plugin_eval as cpe

    out: list[FileError] = []
    dirs = {d for base in bases for d in cpe.outside_eval_dirs(root, base)}
    for evals in sorted(dirs):
        for folder in cpe.case_dirs(root, evals):
            listed = cpe.listed_plugins(root, folder)
            if listed is not None and cpe.claimed_by(root, listed) in bases:
                continue
            rel = f"{folder}/{'case.yaml' if (root / folder / 'case.yaml').is_file() else 'prompt.md'}"
            try:
                cpe.read_case(root, folder, evals)
            except ConfigError as exc:
                out.append(FileError(rel, _line_in(str(exc)), _message_of(str(exc), rel)))
                continue
            out.append(FileError(rel, None, "plugins: names no plugin run here ("
                                 f"{', '.join(b or '.' for b in bases)}): `claude plugin eval` runs it "
                                 "with no plugin loaded, this run does not; list the plugin it tests"))
    return out


def _misplaced_cases(root: Path, plugins: list[str]) -> list[Finding]:
    """Case files a repository of several plugins would not run: outside `evals/cases/<plugin>/`."""
    cases = root / "evals" / "cases"
    if not cases.is_dir():
        return []
    keys = {plugin_key(p) for p in plugins}
    found = []
    for path in sorted(cases.iterdir()):
        if path.is_dir() and path.name not in keys:
            found.append(Finding(path.relative_to(root).as_posix() + "/", None,
                                 f"no plugin is named {path.name!r}; its cases do not run (plugins: "
                                 f"{', '.join(sorted(keys))})"))
        elif path.suffix in (".yaml", ".yml"):
            found.append(Finding(path.relative_to(root).as_posix(), None,
                                 "with several plugins, cases go in evals/cases/<plugin>/; this one does "
                                 "not run: move it into its plugin's folder"))
    return found


def load_package(root: Path) -> LoadedPackage:
    """The repository's one package (an AAM package, a plugin, a skills folder); with several
    plugins, the first (use `load_repo` for all)."""
    return load_repo(root).packages[0]


def _config(root: Path, required: bool, engine: str) -> tuple[EvalConfig, dict[Loc, int]]:
    """eval-config: required in an AAM package, else optional (then the repository's own
    host's engine runs every case: Claude Code for a Claude plugin)."""
    path = root / CONFIG_PATH
    if not path.is_file():
        if required:
            raise ConfigError(f"{path}: missing; create it with at least "
                              f'{{"version": 1, "engine": "{DEFAULT_ENGINE}"}}')
        return EvalConfig(version=1, engine=engine), {}
    config = _load_json_model(root, CONFIG_PATH, EvalConfig)
    _check_cassettes_dir(root, config, CONFIG_PATH)
    return config, line_map(path.read_text(encoding="utf-8"))


def _load(layout: PackageLayout, config: EvalConfig, lines: dict[Loc, int], several: bool) -> LoadedPackage:
    if layout.kind == "aam":
        manifest = _load_json_model(layout.root, "package.agent.json", PackageManifest)
        for rel in PACKAGE_JSON:
            if (layout.root / rel).is_file():
                _check_json_object(layout, rel)
    else:
        manifest = PackageManifest(name=layout.name or layout.root.name, version=layout.version)
    loaded = LoadedPackage(layout, manifest, config, config_lines=lines, several=several)
    _load_cases(loaded)
    _import_cases(loaded)
    _apply_stored_split(loaded)
    return loaded


def _apply_stored_split(loaded: LoadedPackage) -> None:
    """Tune's kept split: each case it names, with no `split:` tag of its own, gets one."""
    from aam_eval_action import splits

    path = splits.path_of(loaded.layout.evals_dir)
    root = loaded.layout.root
    rel = path.relative_to(root).as_posix() if is_inside(path, root) else path.name
    try:
        stored = splits.read(path, rel)
    except (ConfigError, OSError, UnicodeDecodeError) as exc:
        said = re.match(rf"{re.escape(rel)}(?::(\d+))?: (.*)", str(exc), re.S)
        line, message = (int(said[1]) if said[1] else None, said[2]) if said else (None, str(exc))
        loaded.errors.append(FileError(rel, line, message))
        return
    for lc in loaded.cases:
        name = loaded.qualified(lc.case.name)
        if name in stored and not any(t.startswith("split:") for t in lc.case.tags):
            lc.case.tags.append(f"split:{stored[name]}")
            loaded.stored_split[name] = stored[name]


def _import_cases(loaded: LoadedPackage) -> None:
    """Cases from other tools' eval files, after ours: a name ours already has stays ours."""
    from aam_eval_action.importers.discover import discover

    files, loaded.import_findings = discover(loaded.layout, loaded.several)
    ours = {c.case.name: c for c in loaded.cases}
    seen: dict[str, LoadedCase] = {}
    for found in files:
        loaded.eval_files.append(found)
        if found.error:
            line = _line_in(found.error)
            loaded.errors.append(FileError(found.rel, line, _message_of(found.error, found.rel)))
            continue
        loaded.import_findings += [Finding(found.rel, line, why, "skipped") for line, why in found.notes]
        for item in found.cases:
            name = item.case.name
            loaded_case = LoadedCase(item.case, item.file or found.rel, item.line or 1, found.format,
                                     tuple(sorted(item.skipped.items())), item.graders, item.item)
            if name in ours:
                why = f"case {name!r} is also in {ours[name].file}: ours is run, this one is not"
                loaded.import_findings.append(Finding(found.rel, item.line, why, "skipped"))
            elif name in seen:
                first = seen[name]
                why = (f"case {name!r} is imported twice (first at {first.file}:{first.line}); give the "
                       "entries distinct ids")
                loaded.errors.append(FileError(found.rel, item.line, why))
            else:
                seen[name] = loaded_case
                loaded.cases.append(loaded_case)
    loaded.cases.sort(key=lambda c: c.case.name)


def _line_in(error: str) -> int | None:
    head = error.split(": ", 1)[0]
    number = head.rsplit(":", 1)[-1]
    return int(number) if number.isdigit() else None


def _message_of(error: str, rel: str) -> str:
    """An importer's `file:line: message` as the message alone (FileError adds the place)."""
    head, _, rest = error.partition(": ")
    return rest if head.split(":", 1)[0] == rel and rest else error


def _load_json_model(root: Path, rel: str, model: type[M]) -> M:
    text = (root / rel).read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{rel}:{exc.lineno}: invalid JSON: {exc.msg}") from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        lines = line_map(text)
        errors = [_format_error(rel, lines, err) for err in exc.errors()]
        raise ConfigError("\n".join(str(e) for e in errors)) from None


def repository_root(package_root: Path) -> Path:
    """The enclosing git work tree (a folder holding `.git`), else the package itself."""
    for folder in (package_root, *package_root.parents):
        if (folder / ".git").exists():
            return folder
    return package_root


def _check_cassettes_dir(root: Path, config: EvalConfig, rel: str) -> None:
    """eval-config `cassettes` is read from a pull request: it must stay inside the repository.

    `../../../cassettes` (a folder at the repository's top, as the shipped example keeps
    them) is fine; an absolute path, or one resolving outside the repository, is not.
    """
    value = config.cassettes
    line = line_of((root / rel).read_text(encoding="utf-8"), ("cassettes",))
    where = f"{rel}:{line}" if line else rel
    if Path(value).is_absolute() or value.startswith("~"):
        raise ConfigError(f"{where}: cassettes: {value!r} is absolute; use a path relative to "
                          "evals/ inside the repository")
    repo = repository_root(root)
    if not is_inside(root / "evals" / value, repo.resolve()):
        raise ConfigError(f"{where}: cassettes: {value!r} resolves outside the repository "
                          f"({repo}); keep the cassettes inside it")


def _check_json_object(layout: PackageLayout, rel: str) -> None:
    """A package file the engines read as JSON must be a JSON object."""
    try:
        data = json.loads((layout.root / rel).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{rel}:{exc.lineno}: invalid JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{rel}:1: must be a JSON object")


def case_files(loaded: LoadedPackage) -> list[Path]:
    """Case files in a stable order."""
    base = loaded.cases_dir
    if not base.is_dir():
        return []
    return sorted(p for p in base.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())


def _load_cases(loaded: LoadedPackage) -> None:
    seen: dict[str, LoadedCase] = {}
    for path in case_files(loaded):
        rel = path.relative_to(loaded.layout.root).as_posix()
        for item in _parse_case_file(loaded.layout, path, rel):
            if isinstance(item, FileError):
                loaded.errors.append(item)
            elif item.case.name in seen:
                first = seen[item.case.name]
                loaded.errors.append(FileError(
                    rel, item.line,
                    f"name: duplicate case name {item.case.name!r} (first defined at "
                    f"{first.file}:{first.line}); rename one of them",
                ))
            else:
                seen[item.case.name] = item
                loaded.cases.append(item)
    loaded.cases.sort(key=lambda c: c.case.name)


def _parse_case_file(
    layout: PackageLayout, path: Path, rel: str
) -> list[LoadedCase | FileError]:
    try:
        text = path.read_text(encoding="utf-8")
        nodes = list(yaml.compose_all(text, Loader=_LOADER))
    except UnicodeDecodeError:
        return [FileError(rel, None, "not UTF-8 text; save the case file as UTF-8")]
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else None
        return [FileError(rel, line, f"invalid YAML: {exc.problem}")]
    docs: list[tuple[yaml.Node, Loc]] = []
    for node in nodes:
        if node is None:
            continue
        if isinstance(node, yaml.SequenceNode):
            docs += [(child, (i,)) for i, child in enumerate(node.value)]
        else:
            docs.append((node, ()))
    if not docs:
        return [FileError(rel, 1, "empty case file; write one case (name, input, judge)")]
    return [_validate_case(layout, rel, node, prefix) for node, prefix in docs]


def _validate_case(
    layout: PackageLayout, rel: str, node: yaml.Node, prefix: Loc
) -> LoadedCase | FileError:
    lines: dict[Loc, int] = {}
    dup = index_lines(node, (), lines)
    start = node.start_mark.line + 1
    if dup:
        return FileError(rel, dup[1], f"{loc_str(prefix + dup[0])}: duplicate key; keep one")
    data = build(node, yaml.constructor.SafeConstructor())
    name = data.get("name") if isinstance(data, dict) else None
    name = name if isinstance(name, str) else None
    if not isinstance(data, dict):
        kinds = {"str": "string", "list": "list", "int": "number", "float": "number", "bool": "boolean"}
        kind = kinds.get(type(data).__name__, type(data).__name__)
        what = f"{kind} {str(data)[:40]!r}" if data is not None else "empty entry"
        return FileError(rel, start, f"{loc_str(prefix) or 'case'}: this is a {what}, but a case is "
                         "a mapping with name, input and judge; a file holds one case or a list "
                         "of case mappings", name)
    try:
        case = Case.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(err["loc"])
        line = nearest_line(lines, loc) or start
        msg = _message(err)
        more = f" (and {len(exc.errors()) - 1} more problem(s))" if len(exc.errors()) > 1 else ""
        return FileError(rel, line, f"{loc_str(prefix + loc)}: {msg}{more}", name)
    if case.judge is None and case.expected == Expected():
        return FileError(rel, start,
                         f"{loc_str(prefix + ('judge',))}: required field is missing; add it (only a case "
                         "with `expected` checks, which then decide alone, may go without)", name)
    problem = check_paths(layout, case)
    if problem:
        loc, msg = problem
        return FileError(rel, nearest_line(lines, loc) or start, f"{loc_str(prefix + loc)}: {msg}",
                         case.name)
    return LoadedCase(case, rel, start)


def check_target(layout: PackageLayout, case: Case) -> tuple[Loc, str] | None:
    """A skill or agent target must exist in the package, or nothing would be evaluated."""
    if case.expected.skill_triggered is not None and not (case.target or "").startswith("skill:"):
        return ("expected", "skill-triggered"), (
            "skill-triggered needs a skill target; add `target: skill:<name>` naming the skill that "
            "should (or should not) fire")
    routed = _check_expected_skill(layout, case)
    if routed:
        return routed
    if not case.target:
        return None
    kind, _, name = case.target.partition(":")
    if kind == "skill" and name not in layout.skills():
        have = ", ".join(layout.skills()) or "none"
        return ("target",), f"skill {name!r} not found in skills/ (skills: {have}); fix the target"
    if kind == "agent" and name not in [a.name for a in layout.agents]:
        have = ", ".join(a.name for a in layout.agents) or "none"
        return ("target",), f"agent {name!r} not found in agents/ (agents: {have}); fix the target"
    return None


def _check_expected_skill(layout: PackageLayout, case: Case) -> tuple[Loc, str] | None:
    """A near miss names a skill of the package (or `none`) and is a trigger case of its target."""
    sibling = case.expected.expected_skill
    if sibling is None:
        return None
    loc = ("expected", "expected-skill")
    target = case.target or ""
    if not target.startswith("skill:"):
        return loc, ("expected-skill needs a skill target: add `target: skill:<name>` naming the skill "
                     "under test")
    if case.expected.skill_triggered and sibling != target.removeprefix("skill:"):
        return loc, (f"expected-skill {sibling!r} says another skill should fire, but skill-triggered is "
                     "true; remove one of them")
    if sibling != "none" and sibling not in layout.skills():
        have = ", ".join(layout.skills()) or "none"
        return loc, f"skill {sibling!r} not found in the package (skills: {have}); fix expected-skill"
    return None


def check_paths(layout: PackageLayout, case: Case) -> tuple[Loc, str] | None:
    """Fixtures must exist inside `evals/`; nothing may resolve (via symlinks) outside it."""
    problem = check_target(layout, case)
    if problem:
        return problem
    if not case.input.files and not case.input.workspace_files:
        return None
    evals = layout.evals_dir.resolve()
    for i, rel in enumerate(case.input.files):
        loc: Loc = ("input", "files", i)
        path = layout.evals_dir / rel
        if not path.exists() and not path.is_symlink():
            where = _show(layout, layout.evals_dir)
            return loc, f"fixture {rel!r} not found in {where}; add it or fix the path"
        if not is_inside(path, evals):
            return loc, f"{rel!r} is a symlink that escapes evals/; copy the file in instead"
        if path.is_dir():
            return loc, f"{rel!r} is a directory; list the files in it one by one"
    for i, rel in enumerate(case.input.workspace_files):
        source = workspace_file_source(layout, rel)
        if source is not None and not is_inside(source, evals):
            return ("input", "workspace-files", i), (
                f"{rel!r}: its content file is a symlink that escapes evals/; copy the file in instead"
            )
    return None


def workspace_file_source(layout: PackageLayout, rel: str) -> Path | None:
    """Where a workspace file's content comes from.

    `evals/fixtures/<path>`, else `evals/<path>`; None means the file is created empty.
    """
    for base in (layout.evals_dir / "fixtures", layout.evals_dir):
        candidate = base / rel
        if candidate.is_file() or candidate.is_symlink():
            return candidate
    return None


def _show(layout: PackageLayout, path: Path) -> str:
    return path.relative_to(layout.root).as_posix() + "/"


def _format_error(rel: str, lines: dict[Loc, int], err: Any) -> FileError:
    loc = tuple(err["loc"])
    return FileError(rel, nearest_line(lines, loc), f"{loc_str(loc)}: {_message(err)}")


def _message(err: Any) -> str:
    kind = err["type"]
    if kind == "extra_forbidden":
        return "unknown key; remove it or fix its spelling (keys use hyphens, e.g. not-contains)"
    if kind == "missing":
        return "required field is missing; add it"
    msg = str(err["msg"])
    return msg.removeprefix("Value error, ")
