"""Marketplaces: a list of plugins, each with a `source`.

- Claude Code: `.claude-plugin/marketplace.json`, `plugins[]` with `source` `"./path"` (under
  `metadata.pluginRoot` when set) or a remote object (`github`, `url`, `git-subdir`, `npm`).
  An entry with `strict: false` defines the plugin itself: its `skills`, `agents`, `commands`,
  `hooks` and `mcpServers` are the plugin, with no manifest needed (several such entries may
  share `source: "./"`).
- Codex: `.agents/plugins/marketplace.json`, `source: {"source": "local", "path": "./plugins/x"}`.
- Copilot: `.github/plugin/marketplace.json`, `source` a path as Claude's.

Every plugin with a local source is read, by every host whose manifest its folder has; remote
sources are listed as skipped and never fetched. The same plugin listed by several
marketplaces is one plugin.
"""

from __future__ import annotations

import dataclasses
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


def found(root: Path) -> list[str]:
    """The marketplace files at the root."""
    return [rel for rel, _, _ in MARKETPLACES if (root / rel).is_file()]


def read(root: Path, hosts: tuple[Host, ...]) -> tuple[str, str | None, list[PackageLayout], list[Finding]]:
    """(kind, marketplace name, plugins, findings) of every marketplace file at the root."""
    entries: dict[str, list[tuple[str, Json, int, Host]]] = {}
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
        for i, entry in enumerate(plugins):
            plugin, base = _entry(root, doc, i, entry, prefix, findings)
            if base is None:
                continue
            listed = entries.setdefault(plugin, [])
            if listed and listed[0][0] != base:
                raise ConfigError(f"{doc.at('plugins', i, 'source')}: plugin {plugin!r} is also listed with "
                                  f"source {listed[0][0] or './'} in {listed[0][1].rel}; list one folder")
            listed.append((base, doc, i, host))
    packages = [_plugin(root, plugin, listed, hosts) for plugin, listed in entries.items()]
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
            findings.append(Finding(doc.rel, doc.line("plugins", i, "source"), why, "skipped"))
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
