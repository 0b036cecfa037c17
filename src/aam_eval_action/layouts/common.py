"""What every layout reads the same way: JSON manifests with lines, paths that must stay
inside the repository, SKILL.md frontmatter, skill folders, and one host's share of a plugin."""

from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from aam_eval_action.errors import ConfigError
from aam_eval_action.lines import Loc, line_map, loc_str, nearest_line
from aam_eval_action.package import AgentDef, CommandDef, Finding, HookSource

MAX_MANIFEST_BYTES = 8 * 1024 * 1024
SKILL_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
SKILL_FIELDS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass
class Json:
    """A parsed JSON file and the line of each of its fields."""

    rel: str
    data: Any
    lines: dict[Loc, int]

    def at(self, *loc: str | int) -> str:
        """`file:line: field.path`, for a message about one field."""
        line = nearest_line(self.lines, loc)
        where = f"{self.rel}:{line}" if line else self.rel
        return f"{where}: {loc_str(loc)}" if loc else where

    def line(self, *loc: str | int) -> int | None:
        return nearest_line(self.lines, loc)


def read_json(root: Path, rel: str) -> tuple[Any, dict[Loc, int]]:
    """A JSON file of the repository, parsed; a clear error with its line when it is not JSON."""
    found = load_json(root, rel)
    return found.data, found.lines


def load_json(root: Path, rel: str) -> Json:
    """A JSON file (a YAML one when its name does not end in `.json`) of the repository, read
    as untrusted input: no link out, a size cap, a safe loader, an error with its line."""
    path = root / rel
    refuse_link_out(root, path)
    if path.stat().st_size > MAX_MANIFEST_BYTES:
        raise ConfigError(f"{rel}: larger than {MAX_MANIFEST_BYTES // 1024 // 1024} MiB; not read")
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix != ".json":
        try:
            return Json(rel, yaml.load(text, Loader=_LOADER), line_map(text))
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"{rel}:{mark.line + 1}" if mark is not None else rel
            problem = getattr(exc, "problem", exc)
            raise ConfigError(f"{where}: invalid YAML: {problem}; fix the file") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{rel}:{exc.lineno}: invalid JSON: {exc.msg}; fix the file") from None
    return Json(rel, data, line_map(text))


def refuse_link_out(root: Path, path: Path) -> None:
    """A file named by the repository may not be a link (itself or a folder above it) that
    leaves it."""
    real, base = os.path.realpath(path), _real(root)
    if real == base or real.startswith(base.rstrip(os.sep) + os.sep):
        return
    rel = os.path.relpath(path, root) if str(path).startswith(str(root)) else str(path)
    raise ConfigError(f"{Path(rel).as_posix()}: is a symlink that leaves the repository; it is not "
                      "followed: copy the file in instead")


@functools.lru_cache(maxsize=64)
def _real(root: Path) -> str:
    return os.path.realpath(root)


def inside(root: Path, base: str, value: Any, where: str, *, within: str | None = None) -> str:
    """A path written in a manifest (`./skills/x`), relative to `base`, as a path relative to
    the repository root. It must be relative and stay inside `within` (default: `base`; `""`:
    the repository); a link leaving the repository is refused too."""
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: {value!r} is not a path; write a relative path like ./skills")
    if value.startswith(("/", "\\", "~")) or re.match(r"^[A-Za-z]:", value):
        raise ConfigError(f"{where}: {value!r} is absolute; use a path relative to the plugin, like ./skills")
    joined = os.path.normpath(os.path.join(base or ".", value.replace("\\", "/")))
    rel = "" if joined == "." else joined.replace(os.sep, "/")
    limit = base if within is None else within
    if rel.startswith("..") or (limit and not (rel == limit or rel.startswith(limit.rstrip("/") + "/"))):
        what = "the repository" if not limit else f"{limit}/"
        raise ConfigError(f"{where}: {value!r} escapes {what}; keep it inside")
    refuse_link_out(root, root / rel if rel else root)
    return rel


# --- SKILL.md ---


def frontmatter(root: Path, rel: str) -> tuple[dict[str, Any], int]:
    """The YAML frontmatter of a Markdown file (SKILL.md, an agent, a command) and the line
    its body starts at. None of it: `{}`. Unparsable: an error with the line."""
    path = root / rel
    refuse_link_out(root, path)
    text = path.read_text(encoding="utf-8", errors="replace")
    if not text.startswith("---"):
        return {}, 1
    lines = text.splitlines()
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        raise ConfigError(f"{rel}:1: frontmatter: no closing '---' line; close the YAML block")
    block = "\n".join(lines[1:end])
    try:
        data = yaml.load(block, Loader=_LOADER) if block.strip() else {}
    except yaml.YAMLError as exc:
        data = lenient(lines[1:end])
        if data is None:
            mark = getattr(exc, "problem_mark", None)
            line = mark.line + 2 if mark is not None else 1
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise ConfigError(f"{rel}:{line}: frontmatter: invalid YAML: {problem}; quote values "
                              "with ': ' in them") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{rel}:2: frontmatter: must be a YAML mapping of fields (name, description)")
    return data, end + 2


_TOP_KEY = re.compile(r"^([A-Za-z_][\w-]*):(?:[ \t]+(.*))?$")


def _entries(lines: list[str]) -> list[tuple[int, str, str | None, list[str]]] | None:
    """A frontmatter's top-level entries: (its line index, key, the rest of its line, the
    lines beneath it); None when a line is neither an entry nor beneath one."""
    entries: list[tuple[int, str, str | None, list[str]]] = []
    for i, line in enumerate(lines):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line[0] in " \t" or line.startswith("- "):
            if not entries:
                return None
            entries[-1][3].append(line)
            continue
        found = _TOP_KEY.match(line)
        if found is None:
            return None
        entries.append((i, found.group(1), found.group(2), []))
    return entries


def lenient(lines: list[str]) -> dict[str, Any] | None:
    """A frontmatter that is not valid YAML, read as Claude Code, Codex and Gemini CLI read it:
    each top-level entry on its own, and one whose value does not parse (an unquoted `: `
    inside it) taken as the whole rest of its line. None when it is not made of such entries."""
    entries = _entries(lines)
    if not entries:
        return None
    data: dict[str, Any] = {}
    for _, key, value, beneath in entries:
        text = f"{key}: {value or ''}\n" + "\n".join(beneath)
        try:
            one = yaml.load(text, Loader=_LOADER)
        except yaml.YAMLError:
            if beneath or value is None:
                return None
            one = {key: value.strip()}
        if not isinstance(one, dict):
            return None
        data.update(one)
    return data


def unquoted(lines: list[str]) -> list[tuple[int, str, str]]:
    """The entries of a frontmatter that only a lenient reader takes: (line index, key, the
    value quoted as YAML wants it)."""
    out = []
    for i, key, value, beneath in _entries(lines) or []:
        if value is None or beneath:
            continue
        try:
            yaml.load(f"{key}: {value}", Loader=_LOADER)
        except yaml.YAMLError:
            out.append((i, key, json.dumps(value.strip(), ensure_ascii=False)))
    return out


def lint_skill(root: Path, rel_dir: str, name: str) -> list[Finding]:
    """SKILL.md against the Agent Skills standard; unknown keys are accepted."""
    rel = f"{rel_dir}/SKILL.md" if rel_dir else "SKILL.md"
    front, _ = frontmatter(root, rel)
    text = (root / rel).read_text(encoding="utf-8", errors="replace")
    lines = line_map(text.split("\n---", 1)[0].removeprefix("---\n")) if front else {}

    def line(key: str) -> int | None:
        found = lines.get((key,))
        return found + 1 if found else (1 if not front else 2)

    found: list[Finding] = []
    if not front:
        return [Finding(rel, 1, "no YAML frontmatter: the Agent Skills standard asks for name and "
                        "description between '---' lines")]
    block = text.splitlines()[1:]
    block = block[:next((i for i, line in enumerate(block) if line.strip() == "---"), len(block))]
    for i, key, quoted in unquoted(block):
        found.append(Finding(rel, i + 2, f"frontmatter: {key}: an unquoted ': ' in the value is not "
                             "valid YAML; Claude Code, Codex and Gemini CLI read the rest of the line as it, "
                             f"Copilot CLI does not load the skill; quote it: {key}: {quoted}"))
    written = front.get("name")
    if not isinstance(written, str) or not written:
        found.append(Finding(rel, line("name"),
                             "name: missing; the standard asks for one (the folder's name)"))
    elif not SKILL_NAME.match(written) or len(written) > 64:
        found.append(Finding(rel, line("name"), f"name: {written!r} is not 1-64 lowercase letters, digits "
                             "and single hyphens"))
    elif written != name:
        found.append(Finding(rel, line("name"), f"name: {written!r} is not its folder's name {name!r}; "
                             f"installed as {name!r}"))
    description = front.get("description")
    if not isinstance(description, str) or not description.strip():
        found.append(Finding(rel, line("description"), "description: missing; the standard asks for "
                             "what the skill does and when to use it"))
    elif len(description) > 1024:
        found.append(Finding(rel, line("description"), f"description: {len(description)} characters; "
                             "the standard allows 1024"))
    checks = (("license", str), ("compatibility", str), ("metadata", dict), ("allowed-tools", str | list))
    for key, kind in checks:
        if key in front and not isinstance(front[key], kind):
            found.append(Finding(rel, line(key), f"{key}: should be a {_kind(kind)}"))
    compat = front.get("compatibility")
    if isinstance(compat, str) and len(compat) > 500:
        found.append(Finding(rel, line("compatibility"), "compatibility: over 500 characters"))
    return found


def _kind(kind: Any) -> str:
    return {"str": "string", "dict": "mapping"}.get(getattr(kind, "__name__", ""), "string or list")


def skill_folders(root: Path, folder: str) -> dict[str, str]:
    """Skills under a folder: `<folder>/<name>/SKILL.md`, and one level of category folders
    (`skills/.curated/<name>/`); a folder that is itself a skill is one skill."""
    base = root / folder if folder else root
    if not base.is_dir():
        return {}
    if (base / "SKILL.md").is_file():
        return {base.name if folder else root.name: folder}
    found: dict[str, str] = {}
    for sub in sorted(base.iterdir(), key=lambda p: p.name):
        if not sub.is_dir() or (sub.is_symlink() and not _inside_link(root, sub)):
            continue
        rel = f"{folder}/{sub.name}" if folder else sub.name
        if (sub / "SKILL.md").is_file():
            found.setdefault(sub.name, rel)
        elif sub.name not in ("node_modules", ".git", "evals"):
            for inner in sorted(sub.iterdir(), key=lambda p: p.name):
                if inner.is_dir() and (inner / "SKILL.md").is_file():
                    found.setdefault(inner.name, f"{rel}/{inner.name}")
    return found


def _inside_link(root: Path, path: Path) -> bool:
    try:
        Path(os.path.realpath(path)).relative_to(os.path.realpath(root))
    except ValueError:
        return False
    return True


# --- one host's share of a plugin ---


@dataclass
class Parts:
    """What one host's manifest (or its defaults) says a plugin holds."""

    host: str
    """`claude`, `codex`, `copilot` or `gemini`."""
    kind: str
    """The layout's name, e.g. `claude-plugin`."""
    manifest: str | None = None
    name: str | None = None
    version: str | None = None
    skills: dict[str, str] = field(default_factory=dict)
    agents: list[AgentDef] = field(default_factory=list)
    commands: list[CommandDef] = field(default_factory=list)
    hooks: list[HookSource] = field(default_factory=list)
    mcp: dict[str, Any] = field(default_factory=dict)
    mcp_files: list[str] = field(default_factory=list)
    context: list[str] = field(default_factory=list)
    exclude_tools: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


def mcp_file(root: Path, rel: str) -> dict[str, Any]:
    """`.mcp.json`, wrapped (`{"mcpServers": {…}}`) or bare (the server map itself)."""
    found = load_json(root, rel)
    data = found.data
    if not isinstance(data, dict):
        raise ConfigError(f"{rel}:1: must be a JSON object of MCP servers")
    servers = data.get("mcpServers", data) if isinstance(data.get("mcpServers"), dict) else data
    bad = [k for k, v in servers.items() if not isinstance(v, dict)]
    if bad:
        raise ConfigError(f"{found.at(bad[0])}: an MCP server is an object (command, args or url); fix it")
    return dict(servers)


def markdown_files(root: Path, folder: str, suffix: str = ".md") -> list[str]:
    """`<folder>/**/*<suffix>`, relative to the root, sorted; README files left out."""
    base = root / folder
    if not base.is_dir():
        return []
    return sorted(p.relative_to(root).as_posix() for p in base.rglob(f"*{suffix}")
                  if p.is_file() and p.name.lower() != "readme.md")
