"""The neutral package: what reaches the agent, whatever layout it was written in.

Every layout module (`layouts/`) turns its files into one `PackageLayout`: skills by name,
agents, commands, hook files in their dialect, MCP servers, context files and the files a
hook or server may run. The engines install from it and never learn which layout it came
from. Paths are relative to `root` (the `--package` folder, where `evals/` is) and checked
when they are walked, so a link out of the repository fails the case that would read it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from aam_eval_action.errors import ConfigError

# An AAM package: top-level entries installed into every workspace (skills filtered by target).
INSTALLED_DIRS = ("hooks", "rules", "commands", "agents", "mcp", "scripts")
INSTALLED_FILES = ("package.agent.json", "AGENTS.md")
NOT_COPIED = frozenset({".git", "evals", "node_modules", "__pycache__", ".venv", "cassettes"})
"""Folders of a plugin's root never copied into a workspace: they are not the plugin's."""

Dialect = Literal["claude", "copilot", "gemini"]
"""The three hook dialects (and agent and tool-name vocabularies) of the hosts."""
AgentFormat = Literal["aam", "claude", "copilot", "gemini"]
Level = Literal["warning", "skipped"]

SKILL_SET = "skills:"
"""What a case that installs several named skills, and nothing else, installs: `skills:a,b`."""


@dataclass(frozen=True)
class Finding:
    """Something a layout or lint found: a warning (an error with `--strict`) or a skipped part."""

    file: str
    """Relative to the package root."""
    line: int | None
    message: str
    level: Level = "warning"

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.message}"


@dataclass(frozen=True)
class AgentDef:
    """A sub-agent: `agents/<name>/` (AAM) or a Markdown file with frontmatter."""

    name: str
    path: str
    """File or folder, relative to the root."""
    format: AgentFormat


@dataclass(frozen=True)
class CommandDef:
    """A slash command: Markdown (Claude, Copilot) or TOML (Gemini CLI)."""

    name: str
    path: str
    format: Literal["md", "toml"]


@dataclass(frozen=True)
class HookSource:
    """One hooks file (or a manifest's inline hooks) in its dialect."""

    dialect: Dialect
    path: str
    """The file the hooks were read from, relative to the root."""
    events: dict[str, Any]
    """Event name → entries, as the dialect writes them."""


@dataclass(frozen=True)
class PackageLayout:
    """A package (or one plugin of a repository), ready to install into a workspace."""

    root: Path
    """The `--package` folder: where `evals/` is; every path below is relative to it."""
    baseline: bool = False
    """The no-skill baseline: nothing installed, or for a `skill:` target everything but that skill."""
    kind: str = "aam"
    """The layout it was read from: `aam`, `claude-plugin`, `gemini-extension`, `skills`…,
    several joined by `+` for one plugin with several hosts' manifests."""
    plugin: str | None = None
    """The plugin's name; None for an AAM package."""
    base: str = ""
    """The plugin's folder, relative to the root (`""`: the root itself)."""
    name: str = ""
    version: str = ""
    skill_dirs: dict[str, str] = field(default_factory=dict)
    """Skill name → its folder."""
    agents: tuple[AgentDef, ...] = ()
    commands: tuple[CommandDef, ...] = ()
    hooks: tuple[HookSource, ...] = ()
    mcp: dict[str, Any] = field(default_factory=dict)
    """MCP servers by name, as the manifests or `.mcp.json` wrote them."""
    mcp_files: tuple[str, ...] = ()
    context: tuple[str, ...] = ()
    """Files always put in the agent's context (AGENTS.md, rules, a Gemini context file)."""
    exclude_tools: tuple[str, ...] = ()
    """Gemini CLI tools the extension removes."""
    hosts: tuple[str, ...] = ()
    """The hosts whose manifests were found: `claude`, `codex`, `copilot`, `gemini`."""
    nested: tuple[str, ...] = ()
    """Other plugins' folders inside this one's: not part of it."""
    findings: tuple[Finding, ...] = ()
    neighbors: tuple[Any, ...] = ()
    """Skills installed beside the package for its trigger cases (`catalog.installed.Neighbor`):
    eval-config `neighbors:`, `--with`, or a crowding sweep's draw."""
    _files: dict[str | None, list[str]] = field(default_factory=dict, init=False, repr=False, compare=False)
    """`files_for` per target, walked once per layout (a run fingerprints every case with it)."""

    @property
    def evals_dir(self) -> Path:
        return self.root / "evals"

    @property
    def plugin_root(self) -> Path:
        """The plugin's own folder (what `${CLAUDE_PLUGIN_ROOT}` names)."""
        return self.root / self.base if self.base else self.root

    # --- skills ---

    def skills(self) -> list[str]:
        """Names of the package's skills."""
        return sorted(self.skill_dirs)

    def skill_dir(self, name: str) -> Path:
        return self.root / self.skill_dirs[name]

    def skills_for(self, target: str | None) -> list[str]:
        """The skills installed for a case: only the target's skill when it targets one."""
        if self.baseline:
            return []
        if target and target.startswith("skill:"):
            name = target.split(":", 1)[1]
            return [name] if name in self.skill_dirs else []
        if target and target.startswith(SKILL_SET):  # a Vally stimulus's skills, and only those
            return [n for n in target[len(SKILL_SET):].split(",") if n in self.skill_dirs]
        return self.skills()

    # --- what reaches the agent ---

    def files_for(self, target: str | None) -> list[str]:
        """Every package file (relative POSIX path) that reaches the agent for this target."""
        if target not in self._files:
            self._files[target] = self._walk_for(target)
        return list(self._files[target])

    def _walk_for(self, target: str | None) -> list[str]:
        if not self.installs_anything(target):
            return []
        found: list[str] = []
        for name in self.skills_for(target):
            found += walk_files(self.root, self.skill_dir(name), plugin=self.kind != "aam")
        found += self.copied_files(target)
        for rel in self._component_paths():
            found += walk_files(self.root, self.root / rel)
        return sorted(set(found))

    def copied_files(self, target: str | None) -> list[str]:
        """The files copied into the workspace's package copy (hook scripts, server code…):
        an AAM package's installed folders, or a plugin's whole folder but skill folders
        (skills are installed by target), its evals and other plugins' folders."""
        if not self.installs_anything(target):
            return []
        if self.kind == "aam":
            found: list[str] = []
            for d in INSTALLED_DIRS:
                found += walk_files(self.root, self.root / d)
            for f in INSTALLED_FILES:
                _refuse_escaping_link(self.root, self.root / f)
                if (self.root / f).is_file():
                    found.append(f)
            return sorted(found)
        nested = {(self.root / rel).resolve() for rel in self.nested}
        return walk_files(self.root, self.plugin_root, plugin=True, nested=nested)

    def _component_paths(self) -> list[str]:
        """Files named by the layout that may sit outside the plugin's folder."""
        if self.kind == "aam":
            return []
        paths = [a.path for a in self.agents] + [c.path for c in self.commands]
        paths += [h.path for h in self.hooks] + list(self.mcp_files) + list(self.context)
        return [p for p in paths if not _under(p, self.base)]

    def fixtures(self, files_root: Path | None) -> Path:
        """Where a case's `input.files` are read from: `evals/`, or an imported case's own folder."""
        return files_root or self.evals_dir

    def installs_anything(self, target: str | None) -> bool:
        """False for the baseline of a case that does not target a skill: it runs on a bare agent."""
        return not self.baseline or bool(target and target.startswith("skill:"))

    def baseline_label(self, target: str | None) -> str:
        """What the baseline leaves out, for fingerprints and messages."""
        if target and target.startswith(SKILL_SET):
            return f"without {target[len(SKILL_SET):]}"
        return f"without {target}" if target and target.startswith("skill:") else "without the package"

    def relative(self, path: Path) -> str:
        """`path` relative to the plugin's folder (the package copy's layout)."""
        return path.relative_to(self.plugin_root).as_posix()


class PackageLinkError(ConfigError):
    """A package file is a symlink pointing outside the package."""


def _under(rel: str, base: str) -> bool:
    return not base or rel == base or rel.startswith(base.rstrip("/") + "/")


def walk_files(root: Path, base: Path, plugin: bool = False, nested: set[Path] | None = None) -> list[str]:
    """Files under `base` (or `base` itself), relative to `root`; a symlink that leaves the
    package is an error. In a `plugin`'s folder, the `NOT_COPIED` folders, skill folders and
    `nested` plugins' folders are left out."""
    _refuse_escaping_link(root, base)
    if base.is_file():
        return [base.relative_to(root).as_posix()]
    if not base.is_dir():
        return []
    found = []
    for dirpath, dirnames, filenames in os.walk(base):
        here = Path(dirpath)
        keep = []
        for d in sorted(dirnames):
            sub = here / d
            _refuse_escaping_link(root, sub)
            if d == "__pycache__" or (plugin and _left_out(sub, nested or set())):
                continue
            keep.append(d)
        dirnames[:] = keep
        for name in sorted(filenames):
            p = here / name
            _refuse_escaping_link(root, p)
            if p.is_file():
                found.append(p.relative_to(root).as_posix())
    return sorted(found)


def plugin_files(root: Path, folder: str) -> list[str]:
    """Every file of a plugin folder a `claude plugin eval` case lists (relative to `root`,
    sorted), the `NOT_COPIED` folders (its evals among them) left out."""
    return [rel for rel in walk_files(root, root / folder)
            if not NOT_COPIED & set(Path(rel).relative_to(folder).parts[:-1])]


def _left_out(folder: Path, nested: set[Path]) -> bool:
    return folder.name in NOT_COPIED or (folder / "SKILL.md").is_file() or folder.resolve() in nested


def _refuse_escaping_link(root: Path, path: Path) -> None:
    """The package comes from the pull request: a link to `/etc/…` or `~/.ssh` is never followed."""
    if not path.is_symlink():
        return
    try:
        Path(os.path.realpath(path)).relative_to(os.path.realpath(root))
    except ValueError:
        rel = path.relative_to(root).as_posix()
        raise PackageLinkError(
            f"{rel}: is a symlink to {os.readlink(path)!r}, outside the package; it is not "
            "followed: copy the file into the package instead"
        ) from None
