"""`claude plugin eval` suites, read as that runner reads them (Claude Code's own eval runner).

Where: the plugin's eval dir, `experimental.evals` in `.claude-plugin/plugin.json` (a relative
path), else `evals/`. A folder holding `case.yaml` or `prompt.md` is a case, its subfolders not
scanned; any other folder is a group, scanned to a depth of 16; `.git`, `node_modules`,
`.claude`, `results` and `mocks` are skipped (and this project's own `cassettes` and `reports`,
which it writes; `cases/` is walked as that runner walks it, since a suite may keep its case
folders there).

A case is `case.yaml` (`schema_version`, `name`, `execution.prompt`, `graders`, …), or
`prompt.md` (frontmatter: the top-level and execution keys; body: the prompt) with one grader
per `graders/<name>.md` (frontmatter: the grader's fields; body: its `pattern` or `criteria`), or
both (case.yaml the base, prompt.md's frontmatter over it, the `.md` graders after the yaml ones).
What that runner refuses is refused here, with the file, the line and what to write instead:
`schema_version` missing or of a major above 1; a `name` missing; a prompt missing or still the
`init --bare` template; `max_turns` over 200, `timeout_seconds` over 3600, `runs` over 50; no
grader, two of one name, a grader of an unknown type or with a key its type does not take (an
`llm` grader's `target:`, say), a `weight` of 0, a `match` other than contains, not_contains or
count:N, `flags` with a letter other than d g i m s u v y; a `prompt.md` frontmatter key it does
not allow (`context` among them). Unknown top-level keys of case.yaml are dropped, as there. A
pattern JavaScript cannot compile loads, as there (its grader throws when it runs), and is
warned of (`refused_pattern`).

The case keeps its graders, and is graded as that runner grades (`pipeline/plugin_eval.py`):
by score, each grader with its weight; its `mocks/` folders (from the eval dir down to its own)
are read and checked here and served by `aam_eval_action.mocks`. What is listed as not honoured,
with why: the execution fields this run does not pass to the CLI, and `plugins`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aam_eval_action import graders as grader_models
from aam_eval_action import jsregex
from aam_eval_action.errors import ConfigError
from aam_eval_action.graders import BODY_FIELD, CREATES_FILES, PluginGrader
from aam_eval_action.importers.common import Imported, build, case_name
from aam_eval_action.layouts.common import Json, frontmatter, load_json

FORMAT = "claude-plugin-eval"
RULES_OF = "2.1.332"
"""The Claude Code release whose runner's rules (what it finds, merges, refuses and scores) this
module applies; the public suites of the tests are read the same by it and the release before."""
SKIPPED_FOLDERS = frozenset({".git", "node_modules", ".claude", "results", "mocks"})
OUR_FOLDERS = frozenset({"cassettes", "reports"})
"""Folders of the eval dir this tool writes (recordings, reports): never cases, not walked."""
MAX_DEPTH = 16
MAX_TURNS, MAX_TIMEOUT, MAX_RUNS = 200, 3600, 50
DEFAULT_RUNS = 3
TEMPLATE_PROMPT = "TODO: describe what the agent should do"
TOP_KEYS = ("schema_version", "name", "description", "tags", "plugins", "runs", "expected_outcome")
EXECUTION_KEYS = ("prompt", "max_turns", "timeout_seconds", "model", "allowed_tools", "disallowed_tools",
                  "append_system_prompt", "env")
PROMPT_MD_KEYS = (*TOP_KEYS, "model", "max_turns", "timeout_seconds", "allowed_tools", "disallowed_tools",
                  "artifact_publish", "growthbook_overrides", "append_system_prompt", "env")
"""The frontmatter keys a prompt.md may hold, in the order that runner lists them."""
GLOB = re.compile(r"[*?\[]")


@dataclass(frozen=True)
class Suite:
    """One plugin's eval dir: the plugin's folder and the dir, both relative to the repository."""

    plugin: str
    evals: str


def eval_dir(root: Path, plugin: str) -> tuple[str, str | None]:
    """The plugin's eval dir (relative to the repository), and where it was set when the manifest
    set it. A value that is absolute or leaves the plugin is an error."""
    manifest = f"{plugin}/.claude-plugin/plugin.json" if plugin else ".claude-plugin/plugin.json"
    named = None
    if (root / manifest).is_file():
        doc = load_json(root, manifest)
        experimental = doc.data.get("experimental") if isinstance(doc.data, dict) else None
        named = experimental.get("evals") if isinstance(experimental, dict) else None
        if named is not None:
            if not isinstance(named, str) or not named.strip() or Path(named).is_absolute() \
                    or ".." in Path(named).parts:
                raise ConfigError(f"{doc.at('experimental', 'evals')}: experimental.evals: a folder "
                                  "below the plugin, such as evals")
            return _join(plugin, named.strip().strip("/")), manifest
    return _join(plugin, "evals"), None


def _join(*parts: str) -> str:
    return "/".join(p for p in parts if p)


def case_dirs(root: Path, evals: str) -> Iterator[str]:
    """Every case folder beneath the eval dir, as that runner finds them, sorted."""
    top = root / evals
    if not top.is_dir() or top.is_symlink():
        return

    def walk(folder: Path, depth: int) -> Iterator[str]:
        if (folder / "case.yaml").is_file() or (folder / "prompt.md").is_file():
            yield folder.relative_to(root).as_posix()
            return
        if depth >= MAX_DEPTH:
            return
        for child in sorted(folder.iterdir()):
            if child.is_dir() and not child.is_symlink() and child.name not in SKIPPED_FOLDERS \
                    and not (folder == top and child.name in OUR_FOLDERS):
                yield from walk(child, depth + 1)

    for child in sorted(top.iterdir()):
        if child.is_dir() and not child.is_symlink() and child.name not in SKIPPED_FOLDERS | OUR_FOLDERS:
            yield from walk(child, 1)


def outside_eval_dirs(root: Path, plugin: str) -> list[str]:
    """Eval dirs outside the plugin that may hold its cases (naming it in `plugins:`): the
    repository's own `evals/`, for a plugin in a folder of its own."""
    if not plugin or not (root / "evals").is_dir() or (root / "evals").is_symlink():
        return []
    return ["evals"]


def claimed_by(root: Path, listed: list[str]) -> str | None:
    """The plugin a case outside every plugin is run under: the first it lists that is a plugin
    folder (a manifest in it); the rest are loaded beside it."""
    return next((p for p in listed if (root / p / ".claude-plugin/plugin.json").is_file()
                 or (root / p / "plugin.json").is_file()), None)


def skill_eval_dirs(root: Path, skills: Iterable[str], evals: str) -> list[str]:
    """Eval dirs inside skill folders (`skills/<skill>/evals/`), which that runner finds too (a
    folder with a SKILL.md is a plugin to it); the plugin's own eval dir left out."""
    found = []
    for folder in sorted(set(skills)):
        rel = f"{folder}/evals" if folder else "evals"
        if rel != evals and not rel.startswith(evals.rstrip("/") + "/") and (root / rel).is_dir() \
                and not (root / rel).is_symlink():
            found.append(rel)
    return found


def listed_plugins(root: Path, folder: str) -> list[str] | None:
    """The folders a case's `plugins:` names (relative to the repository, unchecked), or None
    when it lists none or cannot be read: which package a case outside every plugin is for."""
    import os

    listed: Any = None
    try:
        if (root / folder / "prompt.md").is_file():
            listed = frontmatter(root, f"{folder}/prompt.md")[0].get("plugins")
        if listed is None and (root / folder / "case.yaml").is_file():
            data = load_json(root, f"{folder}/case.yaml").data
            listed = data.get("plugins") if isinstance(data, dict) else None
    except (ConfigError, OSError, UnicodeDecodeError):
        return None
    if not isinstance(listed, list):
        return None
    out = [os.path.normpath(os.path.join(folder, entry)).replace(os.sep, "/")
           for entry in listed if isinstance(entry, str)]
    return out or None


class _Case:
    """One case's fields as that runner merges them, each with where it was written."""

    def __init__(self, root: Path, folder: str) -> None:
        self.root, self.folder = root, folder
        self.fields: dict[str, Any] = {}
        self.where: dict[str, str] = {}
        self.graders: list[tuple[dict[str, Any], str]] = []
        """The graders as written, each with where."""
        self.parsed: list[tuple[PluginGrader, str]] = []
        """The graders, validated."""
        self.source = ""
        self.evals: str | None = None

    def at(self, key: str) -> str:
        return self.where.get(key) or self.folder


@dataclass(frozen=True)
class Read:
    """One case as that runner loads it: ours, its source, and its graders as merged."""

    imported: Imported
    source: str
    """`case_yaml`, `prose` or `mixed`."""
    graders: tuple[PluginGrader, ...]
    runs: int
    never_pass: tuple[tuple[str, int | None, str], ...] = ()
    """Graders that can never pass (or that throw once their tool is called), as (file, line, why)."""


def read_case(root: Path, folder: str, evals: str | None = None) -> Read:
    """The case in `folder` (of the eval dir `evals`, where its mocks are layered from). Raises
    ConfigError naming the file, the line and what to write instead."""
    found = _Case(root, folder)
    found.evals = evals
    has_yaml, has_md = (root / folder / "case.yaml").is_file(), (root / folder / "prompt.md").is_file()
    found.source = "mixed" if has_yaml and has_md else "case_yaml" if has_yaml else "prose"
    if has_yaml:
        _read_yaml(found)
    if has_md:
        _read_prompt_md(found)
    imported = _to_case(found)
    return Read(imported, found.source, imported.graders, int(found.fields.get("runs") or DEFAULT_RUNS),
                tuple(never_passes(found)))


def _place(doc: Json, *loc: str | int) -> str:
    """`file:line` of a field (the nearest line known)."""
    return f"{doc.rel}:{doc.line(*loc) or 1}"


MAX_BYTES, MAX_GRADER_FILES = 1_048_576, 256
"""That runner's caps: a case file or a grader file, and the `.md` files of `graders/`."""


def _capped(root: Path, rel: str) -> None:
    size = (root / rel).stat().st_size
    if size > MAX_BYTES:
        raise ConfigError(f"{rel}:1: {Path(rel).name} is {size} bytes (cap: {MAX_BYTES}); split it, or move "
                          "long text into a file the case reads")


def _read_yaml(found: _Case) -> None:
    rel = f"{found.folder}/case.yaml"
    _capped(found.root, rel)
    doc = load_json(found.root, rel)
    data = doc.data
    if not isinstance(data, dict):
        raise ConfigError(f"{rel}:1: invalid case.yaml: a mapping of schema_version, name, execution, "
                          "graders")
    for key in TOP_KEYS:
        if key in data:
            found.fields[key], found.where[key] = data[key], _place(doc, key)
    if "schema_version" not in data:
        raise ConfigError(f'{rel}:1: missing required field schema_version: add schema_version: "1.0"')
    context = data.get("context")
    if context is not None:
        if not isinstance(context, dict):
            raise ConfigError(f"{_place(doc, 'context')}: invalid case.yaml: context: a mapping "
                              "(scaffold_script, history_file, add_dirs)")
        found.fields["context"], found.where["context"] = context, _place(doc, "context")
    # Merged before it is validated, as that runner merges: a case.yaml with no execution, or
    # no prompt and no graders, is whole when prompt.md gives the prompt and graders/ the graders.
    execution = data.get("execution")
    if execution is not None and not isinstance(execution, dict):
        raise ConfigError(f"{_place(doc, 'execution')}: invalid case.yaml: execution: a mapping (prompt, "
                          "max_turns, allowed_tools, ...)")
    for key, value in (execution or {}).items():
        if key in EXECUTION_KEYS:
            found.fields[key], found.where[key] = value, _place(doc, "execution", key)
    graders = data.get("graders")
    if graders is not None and not isinstance(graders, list):
        raise ConfigError(f"{_place(doc, 'graders')}: invalid case.yaml: graders: a list of graders")
    for i, grader in enumerate(graders or []):
        found.graders.append((grader, f"{_place(doc, 'graders', i)}: invalid case.yaml: graders.{i}"))


def _read_prompt_md(found: _Case) -> None:
    rel = f"{found.folder}/prompt.md"
    _capped(found.root, rel)
    front, body = _front_and_body(found.root, rel)
    for key in front:
        if key not in PROMPT_MD_KEYS:
            line = _key_line(found.root, rel, key)
            raise ConfigError(f'{rel}:{line}: prompt.md: unknown frontmatter key "{key}" '
                              f"(expected one of: {', '.join(PROMPT_MD_KEYS)})"
                              + ("; context keys go in case.yaml's context:" if key == "context" else ""))
    for key, value in front.items():
        if key == "disallowed_tools" and isinstance(found.fields.get(key), list) and isinstance(value, list):
            value = [*found.fields[key], *value]  # both forms: the lists are joined
        found.fields[key], found.where[key] = value, f"{rel}:{_key_line(found.root, rel, key)}"
    found.fields.setdefault("schema_version", "1.1")
    found.fields.setdefault("name", Path(found.folder).name)
    found.fields["prompt"], found.where["prompt"] = body.strip(), f"{rel}:1"
    graders = found.root / found.folder / "graders"
    if graders.is_dir():
        entries = sorted(graders.glob("*.md"))
        if len(entries) > MAX_GRADER_FILES:
            raise ConfigError(f"{found.folder}/graders: graders/ has {len(entries)} .md entries (cap: "
                              f"{MAX_GRADER_FILES}); keep at most {MAX_GRADER_FILES} graders")
        for path in (p for p in entries if not p.is_dir()):
            g_rel = path.relative_to(found.root).as_posix()
            _capped(found.root, g_rel)
            g_front, g_body = _front_and_body(found.root, g_rel)
            if not g_front:
                continue  # a .md file without frontmatter is not a grader
            grader = {"name": path.stem, **g_front}
            field = BODY_FIELD.get(str(g_front.get("type")))
            if field and field not in g_front:
                grader[field] = g_body.strip()
            found.graders.append((grader, f"{g_rel}:1: invalid case.yaml: graders.{len(found.graders)}"))


def _front_and_body(root: Path, rel: str) -> tuple[dict[str, Any], str]:
    front, start = frontmatter(root, rel)
    lines = (root / rel).read_text(encoding="utf-8", errors="replace").splitlines()
    return front, "\n".join(lines[start - 1:] if front or start > 1 else lines)


def _key_line(root: Path, rel: str, key: str) -> int:
    for n, line in enumerate((root / rel).read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith(f"{key}:"):
            return n
    return 1


def _to_case(found: _Case) -> Imported:
    f = found.fields
    version = str(f.get("schema_version", ""))
    major = version.split(".", 1)[0]
    if not major.isdigit():
        raise ConfigError(f'{found.at("schema_version")}: schema_version: a version such as "1.0"')
    if int(major) > 1:
        raise ConfigError(f'{found.at("schema_version")}: schema_version "{version}" is newer than this '
                          'reader (it reads up to 1.x): write "1.0"')
    name = f.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"{found.at('name')}: invalid case.yaml: name: Required; add name: <case>")
    prompt = f.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise ConfigError(f"{found.at('prompt')}: execution.prompt is required (a prompt.md body, or "
                          "execution.prompt in case.yaml); write the user prompt to test")
    if TEMPLATE_PROMPT in prompt:
        raise ConfigError(f'{found.at("prompt")}: the prompt is still the blank `init` template: replace the '
                          f'"{TEMPLATE_PROMPT}" line with the user prompt to test')
    for key, most in (("max_turns", MAX_TURNS), ("timeout_seconds", MAX_TIMEOUT), ("runs", MAX_RUNS)):
        _bounded(found, key, most)
    if not found.graders:
        where = found.at("graders") if "graders" in found.where else found.folder
        raise ConfigError(f"{where}: invalid case.yaml: graders: Required; add at least one grader "
                          "(case.yaml's graders:, or graders/<name>.md with frontmatter)")
    skipped: dict[str, str] = {}
    names: set[str] = set()
    found.parsed = [(grader_models.parse(grader, where, names), where) for grader, where in found.graders]
    add_dirs = _add_dirs(found)
    scaffold = _context_file(found, "scaffold_script", required=False)
    history = _context_file(found, "history_file")
    plugins = _plugins(found, name)
    mocks = _mocks(found)
    fields: dict[str, Any] = {
        "name": case_name(name), "title": name.strip() if case_name(name) != name.strip() else None,
        "description": f.get("description"), "input": {"prompt": prompt.strip()},
        "repeat": int(f.get("runs") or DEFAULT_RUNS), "install-all-skills": True,
        "tags": [t for t in f.get("tags") or [] if isinstance(t, str)],
    }
    if f.get("timeout_seconds"):
        fields["timeout"] = float(f["timeout_seconds"])
    env: dict[Any, Any] = f["env"] if isinstance(f.get("env"), dict) else {}
    fields["execution"] = {
        "model": str(f["model"]) if f.get("model") else None, "max-turns": f.get("max_turns") or 10,
        "allowed-tools": _names(f.get("allowed_tools")),
        "disallowed-tools": _names(f.get("disallowed_tools")) or [],
        "append-system-prompt": f.get("append_system_prompt") or None,
        "env": {str(k): str(v) for k, v in env.items()},
        "add-dirs": add_dirs, "scaffold": scaffold, "history": history, "mocks": mocks,
        "plugins": plugins,
    }
    case = build(Json(found.where.get("prompt", found.folder).partition(":")[0], {}, {}), (), fields)
    file, _, line = found.where.get("prompt", found.folder).partition(":")
    graders = tuple(grader for grader, _ in found.parsed)
    return Imported(case, int(line) if line.isdigit() else None, skipped, file=file, graders=graders)


def _bounded(found: _Case, key: str, most: int) -> None:
    value = found.fields.get(key)
    if value is None:
        return
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"{found.at(key)}: {key}: a whole number of at least 1")
    if value > most:
        raise ConfigError(f"{found.at(key)}: {key}: Number must be less than or equal to {most}; write "
                          f"{most} or less")


def _context_file(found: _Case, key: str, *, required: bool = True) -> str | None:
    """`context.<key>` (`scaffold_script`, `history_file`), relative to the case's folder, as a
    file of the repository (a scaffold script may be missing: that runner loads the case, and a
    run given `--scaffold` fails its scaffold)."""
    from aam_eval_action.layouts.common import inside

    value = (found.fields.get("context") or {}).get(key)
    if value is None:
        return None
    where = found.at("context")
    rel = inside(found.root, found.folder, value, f"{where}: context.{key}", within="")
    if required and not (found.root / rel).is_file():
        raise ConfigError(f"{where}: context.{key}: {value!r} is not a file of the repository; fix the path "
                          "(relative to the case's folder)")
    return rel


def _plugins(found: _Case, name: str) -> list[str]:
    """`plugins:`, relative to the case's folder, as plugin folders of the repository (each must
    exist and stay inside it), in the order written; refused as that runner refuses an entry."""
    from aam_eval_action.layouts.common import inside

    listed = found.fields.get("plugins")
    if listed is None:
        return []
    where = found.at("plugins")
    if not isinstance(listed, list) or not all(isinstance(p, str) and p.strip() for p in listed):
        raise ConfigError(f"{where}: plugins: a list of plugin folders, relative to the case's folder")
    out = []
    for entry in listed:
        rel = inside(found.root, found.folder, entry, f'{where}: case "{name}": plugins entry', within="")
        if not (found.root / rel).exists():
            raise ConfigError(f'{where}: case "{name}": plugins entry "{entry}" does not exist; fix the '
                              "path (relative to the case's folder)")
        if not (found.root / rel).is_dir():
            raise ConfigError(f'{where}: case "{name}": plugins entry "{entry}" is not a plugin folder')
        out.append(rel)
    return list(dict.fromkeys(out))


def _add_dirs(found: _Case) -> list[str]:
    """`context.add_dirs`, relative to the case's folder, as folders of the repository: each
    must stay inside it (a link out of it is refused too) and be a folder."""
    from aam_eval_action.layouts.common import inside

    dirs = (found.fields.get("context") or {}).get("add_dirs") or []
    where = found.at("context")
    if not isinstance(dirs, list):
        raise ConfigError(f"{where}: context.add_dirs: a list of folders, relative to the case's folder")
    out = []
    for value in dirs:
        rel = inside(found.root, found.folder, value, f"{where}: context.add_dirs", within="")
        if not (found.root / rel).is_dir():
            raise ConfigError(f"{where}: context.add_dirs: {value!r} is not a folder of the repository; fix "
                              "the path (relative to the case's folder)")
        out.append(rel)
    return out


def _mocks(found: _Case) -> list[str]:
    """The case's `mocks/` layers, read and checked now: a refusal names the file."""
    from aam_eval_action import mocks

    layers = mocks.layers(found.root, found.evals, found.folder)
    if layers:
        mocks.load(found.root, layers)
    return layers


READ_ONLY = frozenset({"Read", "Glob", "Grep", "NotebookRead", "Skill", "AskUserQuestion", "TaskCreate",
                       "TaskGet", "TaskList", "TaskUpdate", "TaskStop", "Agent", "TodoWrite"})
"""The tools a case's `allowed_tools` gets without a grant; any other needs `--allow-tools`."""
_RULE = re.compile(r"^([A-Za-z0-9_*-]+)(?:\((.*)\))?$", re.S)


def granted(allowed: list[str], grants: Iterable[str]) -> tuple[list[str], list[str]]:
    """(the tools the run may use, the ones withheld) of a case's `allowed_tools`, as that
    runner grants them: the read-only tools as listed; any other (Bash, Write, Edit, WebFetch,
    an MCP tool) only when `--allow-tools` grants it (the same tool, with the same rule or none
    on either side, or a `mcp__…*` pattern); a malformed entry withheld. The grants themselves
    are allowed too."""
    given = [_RULE.match(g.strip()) for g in grants if g.strip()]
    rules = [(m.group(1), m.group(2)) for m in given if m]
    out, withheld = [f"{n}({c})" if c is not None else n for n, c in rules], []
    for entry in allowed:
        found = _RULE.match(entry.strip())
        if not found:
            withheld.append(entry)
            continue
        name, content = found.group(1), found.group(2)
        covered = name in READ_ONLY or any(
            (g == name and (gc is None or content is None or gc == content))
            or (g.endswith("*") and g.startswith("mcp__") and name.startswith(g[:-1]))
            for g, gc in rules)
        (out if covered else withheld).append(entry)
    return list(dict.fromkeys(out)), withheld


def never_passes(found: _Case) -> list[tuple[str, int | None, str]]:
    """Graders that can never pass, as that runner warns of them: `max: 0` without `min: 0`; a
    tool the case's `allowed_tools` does not list, or its `disallowed_tools` does; a file check
    in a case whose tools cannot write a file."""
    allowed = found.fields.get("allowed_tools")
    allowed = [str(t) for t in allowed] if isinstance(allowed, list) else None
    withheld = {str(t) for t in found.fields.get("disallowed_tools") or []}
    scaffolded = bool((found.fields.get("context") or {}).get("scaffold_script"))
    out = []
    for grader, where in found.parsed:
        file, _, rest = where.partition(":")
        line = int(rest.split(":", 1)[0]) if rest.split(":", 1)[0].isdigit() else None
        name = grader.name
        if grader.type == "tool_used" and grader.max == 0 and grader.min is None:
            out.append((file, line, f'grader "{name}" can never pass: min is 1 unless given, and max is 0; '
                                    "add min: 0 (the tool must not be called)"))
            continue
        refused = refused_pattern(grader)
        if refused:
            out.append((file, line, f'grader "{name}" {refused}'))
            continue
        for tool in grader.tools():
            if tool in withheld:
                why = f"the case's disallowed_tools lists {tool}; take it off, or drop the grader"
                out.append((file, line, f'grader "{name}" can never pass: it needs a {tool} call, but {why}'))
            elif allowed is not None and tool not in allowed and not tool.startswith("mcp__"):
                why = f"the case's allowed_tools does not grant {tool}; add it to allowed_tools"
                out.append((file, line, f'grader "{name}" can never pass: it needs a {tool} call, but {why}'))
        can_write = allowed is None or any(t in allowed and t not in withheld for t in CREATES_FILES)
        if grader.checks_a_file(scaffolded) and not can_write:
            why = ("it checks a file the run creates, but no tool the case grants can create one; add "
                   "Write (or Edit, Bash) to allowed_tools")
            out.append((file, line, f'grader "{name}" can never pass: {why}'))
    return out


def refused_pattern(grader: PluginGrader) -> str | None:
    """What becomes of a grader whose pattern that runner's JavaScript cannot compile (a regex
    grader's `pattern` with its `flags`, an `input_match`), with its words and what to write."""
    if isinstance(grader, grader_models.RegexGrader):
        said = jsregex.error(grader.pattern, grader.flags)
        if said:
            return (f"can never pass: that runner compiles its pattern as JavaScript, which refuses it "
                    f"(grader threw: {said}){_rewrite(grader.pattern, grader.flags)}")
        return None
    if isinstance(grader, grader_models.ToolUsedGrader):
        sides = [(grader.tool, grader.input_match)]
    elif isinstance(grader, grader_models.ToolOrderGrader):
        sides = [(side.tool, side.input_match) for side in (grader.before, grader.after)]
    else:
        return None
    for tool, pattern in sides:
        said = jsregex.error(pattern) if pattern else None
        if pattern and said:
            fate = "can never pass" if not isinstance(grader, grader_models.ToolUsedGrader) or grader.least \
                else f"fails whenever {tool} is called"
            return (f"{fate}: its input_match is compiled as JavaScript (no flags), which refuses it (grader "
                    f"threw: {said}){_rewrite(pattern, '', 'input_match')}")
    return None


def _rewrite(pattern: str, flags: str, key: str = "pattern") -> str:
    """What to write instead of a Python-style pattern that has a JavaScript reading: leading
    `(?i)`-style groups as `flags`, `(?P<name>…)` and `(?P=name)` as `(?<name>…)` and `\\k<name>`."""
    text = re.sub(r"\(\?P=(\w+)\)", r"\\k<\1>", pattern.replace("(?P<", "(?<"))
    text, added = jsregex.vally(text)
    if added and key == "input_match":
        return "; input_match takes no flags: spell the cases out ([Aa] for a)"
    flags = "".join(f for f in "dgimsuvy" if f in flags + added)
    if text == pattern or jsregex.error(text, flags):
        return ""
    quoted = "'" + text.replace("'", "''") + "'"
    return f"; write {key}: {quoted}" + (f" with flags: {flags}" if added else "")


def _names(value: Any) -> list[str] | None:
    """A tools list as written (a list, or one comma- or space-separated string)."""
    if value is None:
        return None
    if isinstance(value, str):
        return [v for v in re.split(r"[,\s]+", value) if v]
    return [str(v) for v in value] if isinstance(value, list) else None
