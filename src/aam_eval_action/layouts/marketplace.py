"""Marketplaces: a list of plugins, each with a `source`.

- Claude Code: `.claude-plugin/marketplace.json`, `plugins[]` with `source` `"./path"` (under
  `metadata.pluginRoot` when set) or a remote object (`github`, `url`, `git-subdir`, `npm`).
  An entry with `strict: false` defines the plugin itself: its `skills`, `agents`, `commands`,
  `hooks` and `mcpServers` are the plugin, with no manifest needed (several such entries may
  share `source: "./"`).
- Codex: `.agents/plugins/marketplace.json`, `source: {"source": "local", "path": "./plugins/x"}`.
- Copilot: `.github/plugin/marketplace.json`, `source` a path as Claude's.

Every plugin with a local source is read, by every host whose manifest its folder has; remote
sources are listed as skipped and never fetched (`check` names each, `run` says how many). The
same plugin listed by several marketplaces is one plugin. A plugin folder of the repository
that no entry points at (a forgotten entry) is a warning that says what to add.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aam_eval_action.errors import ConfigError
from aam_eval_action.layouts import claude_plugin, codex_plugin, copilot_plugin
from aam_eval_action.layouts.claude_plugin import PLUGIN_NAME
from aam_eval_action.layouts.common import Json, Parts, inside, load_json
from aam_eval_action.layouts.plugin import Host, manifest_of, read_host, read_plugin
from aam_eval_action.package import Finding, PackageLayout

MARKETPLACES: tuple[tuple[str, str, Host], ...] = (
    (".claude-plugin/marketplace.json", "claude-marketplace", claude_plugin.HOST),
    (".agents/plugins/marketplace.json", "codex-marketplace", codex_plugin.HOST),
    (".github/plugin/marketplace.json", "copilot-marketplace", copilot_plugin.HOST),
)
REMOTE = ("github", "url", "git", "git-subdir", "npm", "pip")
NOT_SEARCHED = frozenset({"node_modules", "evals", "fixtures", "__fixtures__", "test", "tests", "testdata",
                          "__tests__"})
"""Folders never searched for unlisted plugins (nor dot folders such as `.git`): dependencies,
our evals, test fixtures."""
COMPONENTS = ("skills", "agents", "commands", "hooks", "mcpServers")


@dataclasses.dataclass(frozen=True)
class RemoteSource(Finding):
    """A plugin skipped because its source is remote: `check` lists each, `run` counts them."""


def found(root: Path) -> list[str]:
    """The marketplace files at the root."""
    return [rel for rel, _, _ in MARKETPLACES if (root / rel).is_file()]


def read(root: Path, hosts: tuple[Host, ...]) -> tuple[str, str | None, list[PackageLayout], list[Finding]]:
    """(kind, marketplace name, plugins, findings) of every marketplace file at the root."""
    entries: dict[str, list[tuple[str, Json, int, Host]]] = {}
    named: dict[str, tuple[Json, int]] = {}
    markets: list[tuple[Json, Host, str]] = []
    findings: list[Finding] = []
    kinds, name = [], None
    for rel, kind, host in MARKETPLACES:
        if not (root / rel).is_file():
            continue
        kinds.append(kind)
        doc = load_json(root, rel)
        plugins = _plugins(doc)
        findings += lint(doc, kind)
        name = name or (doc.data.get("name") if isinstance(doc.data.get("name"), str) else None)
        prefix = _plugin_root(root, doc)
        markets.append((doc, host, prefix))
        for i, entry in enumerate(plugins):
            plugin, base = _entry(root, doc, i, entry, prefix, findings)
            named.setdefault(plugin, (doc, i))
            if base is None:
                continue
            listed = entries.setdefault(plugin, [])
            if listed and listed[0][0] != base:
                raise ConfigError(f"{doc.at('plugins', i, 'source')}: plugin {plugin!r} is also listed with "
                                  f"source {listed[0][0] or './'} in {listed[0][1].rel}; list one folder")
            listed.append((base, doc, i, host))
    packages = [_plugin(root, plugin, listed, hosts) for plugin, listed in entries.items()]
    findings += unlisted(root, {listed[0][0] for listed in entries.values()}, named, markets, hosts)
    return "+".join(kinds), name, [_without_nested(p, packages) for p in packages], findings


def _without_nested(plugin: PackageLayout, plugins: list[PackageLayout]) -> PackageLayout:
    """A plugin whose folder holds other plugins' folders (`source: "./"`) leaves them out."""
    inside = [p.base for p in plugins if p.base != plugin.base
              and (not plugin.base or p.base.startswith(plugin.base.rstrip("/") + "/"))]
    return dataclasses.replace(plugin, nested=tuple(inside)) if inside else plugin


def lint(doc: Json, kind: str) -> list[Finding]:
    """The documented fields: a `name`, Claude's and Copilot's an `owner` with a name, each
    plugin a kebab-case `name`; unknown keys are accepted."""
    data = doc.data
    found = []
    if not isinstance(data.get("name"), str):
        found.append(Finding(doc.rel, doc.line("name"), "name: the marketplace needs a name"))
    owner = data.get("owner")
    if kind != "codex-marketplace" and not (isinstance(owner, dict) and isinstance(owner.get("name"), str)):
        found.append(Finding(doc.rel, doc.line("owner"), "owner: should be an object with a name"))
    for i, entry in enumerate(data.get("plugins") or []):
        name = entry.get("name") if isinstance(entry, dict) else None
        if isinstance(name, str) and not PLUGIN_NAME.match(name):
            found.append(Finding(doc.rel, doc.line("plugins", i, "name"),
                                 f"plugins[{i}].name: {name!r} should be a kebab-case plugin name"))
    return found


def _plugins(doc: Json) -> list[Any]:
    if not isinstance(doc.data, dict):
        raise ConfigError(f"{doc.rel}:1: a marketplace is a JSON object with `plugins`")
    plugins = doc.data.get("plugins")
    if not isinstance(plugins, list):
        raise ConfigError(f"{doc.at('plugins')}: must be a list of plugins (name, source)")
    return plugins


def _plugin_root(root: Path, doc: Json) -> str:
    meta = doc.data.get("metadata")
    value = meta.get("pluginRoot") if isinstance(meta, dict) else None
    return inside(root, "", value, doc.at("metadata", "pluginRoot"), within="") if value else ""


def _entry(root: Path, doc: Json, i: int, entry: Any, prefix: str,
           findings: list[Finding]) -> tuple[str, str | None]:
    """(plugin name, its folder relative to the root, or None when it is not local)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"].strip():
        raise ConfigError(f"{doc.at('plugins', i)}: a plugin entry needs a `name` and a `source`")
    plugin = entry["name"]
    source = entry.get("source")
    where = doc.at("plugins", i, "source")
    if isinstance(source, dict):
        kind = source.get("source")
        if kind == "url" and _relative(source.get("url")):  # `{"source": "url", "url": "./"}`
            source, kind = {"path": source["url"]}, "local"
            where = doc.at("plugins", i, "source", "url")
        if kind in REMOTE or kind not in ("local", None):
            why = f"plugin {plugin!r}: source is {kind!r} ({_remote(source)}); remote sources are not fetched"
            findings.append(RemoteSource(doc.rel, doc.line("plugins", i, "source"), why, "skipped"))
            return plugin, None
        where = where if "url" in where else doc.at("plugins", i, "source", "path")
        source = source.get("path")
    if source is None:
        raise ConfigError(f"{where}: plugin {plugin!r} has no source; write \"./plugins/{plugin}\"")
    base = inside(root, prefix, source, where, within="")
    if not (root / base).is_dir():
        raise ConfigError(f"{where}: {source!r} is not a folder of this repository; fix the source")
    return plugin, base


def _relative(url: Any) -> bool:
    return isinstance(url, str) and (url in (".", "..") or url.startswith(("./", "../")))


def _remote(source: dict[str, Any]) -> str:
    shown = source.get("repo") or source.get("url") or source.get("package") or "remote"
    return str(shown)[:120]


def _plugin(root: Path, plugin: str, listed: list[tuple[str, Json, int, Host]],
            hosts: tuple[Host, ...]) -> PackageLayout:
    """One plugin from its entries, plus the manifests of hosts its folder has that no
    marketplace of theirs listed."""
    base = listed[0][0]
    parts: list[Parts] = []
    seen: set[str] = set()
    for _, doc, i, host in listed:
        parts.append(read_host(root, base, host, doc, ("plugins", i)))
        seen.add(host.name)
    for host in hosts:
        if host.name not in seen and manifest_of(root, base, host):
            parts.append(read_host(root, base, host))
    return read_plugin(root, base, parts, plugin, name=plugin)


# --- what the marketplaces leave out ---


def console_lines(findings: Sequence[Finding]) -> list[str]:
    """The findings as `run` prints them before its cases: each one, but the plugins skipped for
    their remote sources in one line when there are several (`check` lists each)."""
    remote = [f for f in findings if isinstance(f, RemoteSource)]
    lines = []
    for finding in findings:
        if not isinstance(finding, RemoteSource) or len(remote) == 1:
            lines.append(f"{finding.level} {finding}")
        elif finding is remote[0]:
            lines.append(f"skipped {len(remote)} plugins with remote sources (not fetched); "
                         "`aam-eval check` lists them")
    return lines


def unlisted(root: Path, listed: set[str], named: dict[str, tuple[Json, int]],
             markets: list[tuple[Json, Host, str]], hosts: tuple[Host, ...]) -> list[Finding]:
    """A warning for each plugin folder of the repository (a folder with a plugin manifest of any
    host) that no marketplace entry points at, saying which entry to add. Not searched: the root,
    folders inside a listed plugin, inside an unlisted one already named, dot folders,
    `node_modules`, `evals` and test fixtures."""
    found: list[Finding] = []
    for rel, manifests in _plugin_folders(root, listed, hosts):
        takers = {h.name for _, h in manifests}
        doc, host, prefix = next((m for m in markets if m[1].name in takers), markets[0])
        plugin = _name_of(root, rel, manifests)
        source = "./" + rel
        if prefix:
            source = os.path.relpath(rel, prefix).replace(os.sep, "/")
            source = source if source.startswith("..") else "./" + source
        what = f"{rel}/ has a plugin manifest ({manifests[0][0]}) but no marketplace entry points at it"
        if plugin in named:
            other, i = named[plugin]
            found.append(Finding(other.rel, other.line("plugins", i, "source") or 1,
                                 f"{what}; plugins[{i}] ({plugin!r}) has another source: set it to "
                                 f"{source!r}, or rename one of them"))
            continue
        entry = {"name": plugin, "source": {"source": "local", "path": source}
                 if host.name == "codex" else source}
        found.append(Finding(doc.rel, doc.line("plugins") or 1,
                             f"{what}; add {json.dumps(entry)} to {doc.rel} plugins"))
    return found


Manifests = list[tuple[str, Host]]
"""A plugin folder's manifests: (path, host)."""


def _plugin_folders(root: Path, listed: set[str], hosts: tuple[Host, ...]) -> list[tuple[str, Manifests]]:
    """(folder, its manifests) of every plugin folder under the root, the listed ones left out
    with everything inside them; symlinked folders are not followed."""
    found = []
    for path, folders, _ in os.walk(root):
        rel = Path(path).relative_to(root).as_posix()
        rel = "" if rel == "." else rel
        if rel and rel in listed:
            folders[:] = []
            continue
        manifests = _manifests(root, rel, hosts) if rel else []
        if manifests:
            found.append((rel, manifests))
            folders[:] = []
            continue
        folders[:] = sorted(f for f in folders if not f.startswith(".") and f not in NOT_SEARCHED)
    return found


def _manifests(root: Path, rel: str, hosts: tuple[Host, ...]) -> Manifests:
    """The plugin manifests in a folder; a bare `plugin.json` (Copilot's) counts when it names a
    plugin with agent components (not another tool's `plugin.json`)."""
    found = []
    for host in hosts:
        for manifest in host.manifests:
            path = f"{rel}/{manifest}"
            if (root / path).is_file() and (manifest != "plugin.json" or _agent_plugin(root, rel, path)):
                found.append((path, host))
                break
    return found


def _agent_plugin(root: Path, rel: str, path: str) -> bool:
    try:
        data = load_json(root, path).data
    except (ConfigError, OSError):
        return False
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        return False
    return any(k in data for k in COMPONENTS) or any(
        (root / rel / part).exists() for part in ("skills", "agents", "commands", "hooks.json", ".mcp.json"))


def _name_of(root: Path, rel: str, manifests: Manifests) -> str:
    """The plugin's name in its manifests, else its folder's."""
    for path, _ in manifests:
        try:
            name = load_json(root, path).data.get("name")
        except (ConfigError, OSError, AttributeError):
            continue
        if isinstance(name, str) and PLUGIN_NAME.match(name):
            return name
    return rel.rsplit("/", 1)[-1]
