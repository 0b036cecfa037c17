"""One plugin folder, read by every host whose manifest is in it, merged into one package.

A host module (`claude_plugin`, `codex_plugin`, `copilot_plugin`, `gemini_extension`) says
where its manifest is, which components it reads by default and how its manifest names more;
this module reads them the same way and merges what the hosts found (one plugin with several
hosts' manifests is one package whose engines each get their own host's files).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aam_eval_action.errors import ConfigError
from aam_eval_action.hooks import hooks_from, lint
from aam_eval_action.layouts.common import (
    Json,
    Parts,
    inside,
    lint_skill,
    load_json,
    markdown_files,
    mcp_file,
    skill_folders,
)
from aam_eval_action.package import AgentDef, AgentFormat, CommandDef, Dialect, Finding, PackageLayout


@dataclass(frozen=True)
class Host:
    """How one host lays out a plugin."""

    name: str
    """`claude`, `codex`, `copilot` or `gemini` (also its hooks dialect's host)."""
    kind: str
    """The layout's name in `check` and the report."""
    manifests: tuple[str, ...]
    """Where its manifest may be, first found wins."""
    dialect: Dialect
    """Its hooks files' dialect."""
    agent_format: AgentFormat
    agent_suffixes: tuple[str, ...] = (".md",)
    command_suffix: str = ".md"
    defaults: tuple[str, ...] = ("skills", "agents", "commands", "hooks", "mcp")
    """Components read from their default places even without a manifest field."""
    hooks_file: str = "hooks/hooks.json"
    outside: bool = False
    """Its manifest may name components outside the plugin's folder (Copilot)."""
    lint: Callable[[Json], list[Finding]] | None = None
    """Checks of its manifest's documented fields (warnings)."""
    extra: Callable[[Path, str, Json | None, Parts], None] | None = None
    """What else its manifest says (Gemini CLI's context file, excluded tools, servers)."""


def manifest_of(root: Path, base: str, host: Host) -> str | None:
    return next((_join(base, m) for m in host.manifests if (root / _join(base, m)).is_file()), None)


def read_host(root: Path, base: str, host: Host, entry: Json | None = None, entry_loc: tuple[Any, ...] = (),
              *, defaults: bool = True) -> Parts:
    """One host's share of the plugin at `base`: its manifest's fields added to its defaults,
    then a marketplace entry's (with `strict: false` the entry's lists replace the defaults)."""
    rel = manifest_of(root, base, host)
    parts = Parts(host=host.name, kind=host.kind, manifest=rel)
    manifest = load_json(root, rel) if rel else None
    if manifest is not None:
        if not isinstance(manifest.data, dict):
            raise ConfigError(f"{rel}:1: a plugin manifest is a JSON object (name, version…)")
        parts.name = _str(manifest.data.get("name"))
        parts.version = _str(manifest.data.get("version"))
        if host.lint:
            parts.findings += host.lint(manifest)
    listed = _fields(entry, entry_loc)
    replaced = set(listed) if entry is not None and _entry(entry, entry_loc).get("strict") is False else set()
    if defaults:
        _add_defaults(root, base, host, parts, skip=replaced)
    if manifest is not None:
        _add_fields(root, base, host, parts, manifest, ())
    if host.extra:
        host.extra(root, base, manifest, parts)
    if entry is not None:
        _add_fields(root, base, host, parts, entry, entry_loc)
    return parts


def _entry(entry: Json, loc: tuple[Any, ...]) -> dict[str, Any]:
    data = entry.data
    for key in loc:
        data = data[key]
    return data if isinstance(data, dict) else {}


def _fields(entry: Json | None, loc: tuple[Any, ...]) -> list[str]:
    if entry is None:
        return []
    return [k for k in ("skills", "agents", "commands", "hooks", "mcpServers") if k in _entry(entry, loc)]


def _add_defaults(root: Path, base: str, host: Host, parts: Parts, skip: set[str]) -> None:
    if "skills" in host.defaults and "skills" not in skip:
        parts.skills.update(skill_folders(root, _join(base, "skills")))
        if (root / _join(base, "SKILL.md")).is_file() and not parts.skills:
            parts.skills[(root / base).resolve().name] = base  # a lone SKILL.md: one skill
    if "agents" in host.defaults and "agents" not in skip:
        parts.agents += _agents(root, _join(base, "agents"), host)
    if "commands" in host.defaults and "commands" not in skip:
        parts.commands += _commands(root, _join(base, "commands"), host)
    if "hooks" in host.defaults and "hooks" not in skip and (root / _join(base, host.hooks_file)).is_file():
        _add_hooks_file(root, _join(base, host.hooks_file), host, parts)
    if "mcp" in host.defaults and "mcpServers" not in skip and (root / _join(base, ".mcp.json")).is_file():
        _add_mcp_file(root, _join(base, ".mcp.json"), parts)


def _add_fields(root: Path, base: str, host: Host, parts: Parts, doc: Json, loc: tuple[Any, ...]) -> None:
    """A manifest's (or marketplace entry's) `skills`, `agents`, `commands`, `hooks` and
    `mcpServers`: a `./` path, a list of them, or (hooks, servers) the object inline; also
    under a vendor's `extensions` (`{"extensions": {"com.github.awesome-copilot": {"skills":
    […]}}}`, the agent-plugins.org manifest)."""
    data = _entry(doc, loc)
    extensions = data.get("extensions")
    for vendor, fields in extensions.items() if isinstance(extensions, dict) else []:
        if isinstance(fields, dict):
            _add_fields(root, base, host, parts, doc, (*loc, "extensions", vendor))
    if isinstance(extensions, list) and extensions:  # Copilot CLI's own extensions (canvases…)
        parts.findings.append(Finding(doc.rel, doc.line(*loc, "extensions"), f"extensions: {len(extensions)} "
                                      "Copilot CLI extension(s) are not installed (not agent components)",
                                      "skipped"))
    within = "" if host.outside else base
    for key in ("skills", "agents", "commands", "hooks", "mcpServers"):
        value = data.get(key)
        if value is None:
            continue
        if key in ("hooks", "mcpServers") and isinstance(value, dict):
            _add_inline(doc, (*loc, key), key, host, parts)
            continue
        items = value if isinstance(value, list) else [value]
        for i, item in enumerate(items):
            at = doc.at(*loc, key, i) if isinstance(value, list) else doc.at(*loc, key)
            if key in ("hooks", "mcpServers") and isinstance(item, dict):
                _add_inline(doc, (*loc, key, i), key, host, parts)
                continue
            rel = _resolve(root, base, item, at, within, host, key)
            if rel is None:
                parts.findings.append(Finding(doc.rel, doc.line(*loc, key), f"{key}: {item!r} not found; "
                                              "fix the path", "skipped"))
                continue
            _add_path(root, rel, key, host, parts)


def _resolve(root: Path, base: str, item: Any, at: str, within: str, host: Host, key: str) -> str | None:
    """A component path as written; Copilot's may mean the repository's `agents/x.agent.md`."""
    rel = inside(root, base, item, at, within=within)
    if (root / rel).exists():
        return rel
    if host.outside and isinstance(item, str):
        candidates = [inside(root, "", item, at, within="")]
        candidates += [c.removesuffix(".md") + ".agent.md" for c in (rel, candidates[0]) if c.endswith(".md")]
        return next((c for c in candidates if (root / c).exists()), None)
    return None


def _add_path(root: Path, rel: str, key: str, host: Host, parts: Parts) -> None:
    path = root / rel
    if key == "skills":
        parts.skills.update(skill_folders(root, rel))
    elif key == "agents":
        parts.agents += _agents(root, rel, host) if path.is_dir() else [_agent(rel, host)]
    elif key == "commands":
        parts.commands += _commands(root, rel, host) if path.is_dir() else [_command(rel)]
    elif key == "hooks":
        _add_hooks_file(root, rel, host, parts)
    else:
        _add_mcp_file(root, rel, parts)


def _add_inline(doc: Json, loc: tuple[Any, ...], key: str, host: Host, parts: Parts) -> None:
    value = _entry(doc, loc)
    if key == "hooks":
        found = hooks_from(value, doc.rel, host.dialect)
        parts.hooks += [found] if found else []
        return
    bad = [k for k, v in value.items() if not isinstance(v, dict)]
    if bad:
        raise ConfigError(f"{doc.at(*loc, bad[0])}: an MCP server is an object (command, args or url)")
    parts.mcp.update(value)
    parts.mcp_files.append(doc.rel)


def _add_hooks_file(root: Path, rel: str, host: Host, parts: Parts) -> None:
    doc = load_json(root, rel)
    found = hooks_from(doc.data, rel, host.dialect)
    if found:
        parts.hooks.append(found)
        parts.findings += lint(found, doc.lines)


def _add_mcp_file(root: Path, rel: str, parts: Parts) -> None:
    parts.mcp.update(mcp_file(root, rel))
    parts.mcp_files.append(rel)


def _agents(root: Path, folder: str, host: Host) -> list[AgentDef]:
    return [_agent(rel, host) for rel in markdown_files(root, folder)
            if rel.endswith(host.agent_suffixes)]


def _agent(rel: str, host: Host) -> AgentDef:
    name = Path(rel).name
    for suffix in sorted(host.agent_suffixes, key=len, reverse=True):
        name = name.removesuffix(suffix)
    fmt: AgentFormat = "copilot" if rel.endswith(".agent.md") else host.agent_format
    return AgentDef(name, rel, fmt)


def _commands(root: Path, folder: str, host: Host) -> list[CommandDef]:
    return [_command(rel, folder) for rel in markdown_files(root, folder, host.command_suffix)]


def _command(rel: str, folder: str | None = None) -> CommandDef:
    """A command named by its path under its folder (`deploy/rollback`: `/deploy:rollback`)."""
    path = Path(rel)
    name = path.relative_to(folder).with_suffix("").as_posix() if folder else path.stem
    return CommandDef(name, rel, "toml" if path.suffix == ".toml" else "md")


# --- several hosts, one package ---


def read_plugin(
    root: Path, base: str, hosts: list[Parts], name_hint: str, name: str | None = None
) -> PackageLayout:
    """The hosts' parts of one plugin as one package: components united (the first host's
    wins a name twice), a skill linted once."""
    first = hosts[0]
    skills: dict[str, str] = {}
    findings: list[Finding] = []
    for parts in hosts:
        findings += parts.findings
        for skill, rel in parts.skills.items():
            if skills.get(skill, rel) != rel:
                findings.append(Finding(f"{rel}/SKILL.md", None, f"a second skill named {skill!r} (the "
                                        f"first is {skills[skill]}/); this one is not installed", "skipped"))
                continue
            skills[skill] = rel
    for skill, rel in sorted(skills.items()):
        findings += lint_skill(root, rel, skill)
    name = name or next((p.name for p in hosts if p.name), None) or name_hint
    kinds = "+".join(dict.fromkeys(p.kind for p in hosts))
    return PackageLayout(
        root=root, kind=kinds, plugin=name, base=base, name=name,
        version=next((p.version for p in hosts if p.version), None) or "",
        skill_dirs=skills,
        agents=tuple(_unique((a for p in hosts for a in p.agents), lambda a: (a.name, a.format))),
        commands=tuple(_unique((c for p in hosts for c in p.commands), lambda c: (c.name, c.format))),
        hooks=tuple(_unique((h for p in hosts for h in p.hooks), lambda h: (h.path, h.dialect))),
        mcp={k: v for p in reversed(hosts) for k, v in p.mcp.items()},
        mcp_files=tuple(dict.fromkeys(f for p in hosts for f in p.mcp_files)),
        context=tuple(dict.fromkeys(f for p in hosts for f in p.context)),
        exclude_tools=tuple(dict.fromkeys(t for p in hosts for t in p.exclude_tools)),
        hosts=tuple(dict.fromkeys(p.host for p in hosts if p.manifest)) or (first.host,),
        findings=tuple(findings),
    )


def _unique(items: Any, key: Callable[[Any], Any]) -> list[Any]:
    seen: dict[Any, Any] = {}
    for item in items:
        seen.setdefault(key(item), item)
    return list(seen.values())


def _join(base: str, rel: str) -> str:
    return f"{base}/{rel}" if base else rel


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None
