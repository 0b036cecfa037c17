"""Which layout a repository is in, and its packages."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from aam_eval_action.errors import ConfigError
from aam_eval_action.layouts import aam, claude_plugin, marketplace, skills_folder
from aam_eval_action.layouts.hosts import HOSTS
from aam_eval_action.layouts.plugin import manifest_of, read_host, read_plugin
from aam_eval_action.package import Finding, PackageLayout

PLUGIN_PARTS = ("agents", "commands", "hooks/hooks.json", ".mcp.json")
"""Besides `skills/`, what makes a folder without a manifest a Claude Code plugin."""
LOOKED_FOR = ("package.agent.json", ".claude-plugin/plugin.json or marketplace.json",
              ".agents/plugins/marketplace.json", ".codex-plugin/plugin.json", ".plugin/plugin.json",
              "plugin.json", ".github/plugin/", "gemini-extension.json", "skills/<name>/SKILL.md",
              "SKILL.md")


@dataclass(frozen=True)
class Repo:
    """What `--package DIR` holds."""

    root: Path
    kind: str
    """The layout: `aam`, `claude-marketplace`, `claude-plugin+gemini-extension`, `skills`…"""
    packages: list[PackageLayout]
    """The AAM package, or every plugin with a local source."""
    name: str | None = None
    """The marketplace's name, when it has one."""
    source: str | None = None
    """The file the layout was recognised by."""
    findings: list[Finding] = field(default_factory=list)
    """Skipped plugins (remote sources) and the marketplace's own warnings."""

    @property
    def several(self) -> bool:
        """Whether it holds several plugins: their cases and cassettes are kept apart."""
        return len(self.packages) > 1


def detect(root: Path) -> Repo:
    """The repository's layout and packages; a clear error when nothing here is a package."""

    root = root.resolve()
    if not root.is_dir():
        raise ConfigError(f"{root}: not a folder; pass --package DIR pointing at the repository or package")
    package = aam.read(root)
    if package is not None:
        return Repo(root, "aam", [package], source=aam.MANIFEST)
    if marketplace.found(root):
        kind, name, plugins, findings = marketplace.read(root, HOSTS)
        return Repo(root, kind, plugins, name, marketplace.found(root)[0], findings)
    hosts = [read_host(root, "", h) for h in HOSTS if manifest_of(root, "", h)]
    if not hosts and (root / "skills").is_dir() and any((root / p).exists() for p in PLUGIN_PARTS):
        hosts = [read_host(root, "", claude_plugin.HOST)]
    if hosts:
        plugin = read_plugin(root, "", hosts, root.name)
        return Repo(root, plugin.kind, [plugin], source=hosts[0].manifest)
    skills = skills_folder.read(root)
    if skills is not None:
        return Repo(root, "skills", [skills])
    raise ConfigError(f"{root}: no package found here; looked for {', '.join(LOOKED_FOR)}. Pass --package "
                      "DIR pointing at the repository or package root")


def is_package(folder: Path) -> bool:
    """Whether a folder holds a package of any layout."""
    try:
        detect(folder)
    except (ConfigError, OSError):
        return False
    return True


def read_package(root: Path) -> PackageLayout:
    """The package at `root` (the first plugin of a marketplace), in the neutral form."""
    return detect(root).packages[0]
