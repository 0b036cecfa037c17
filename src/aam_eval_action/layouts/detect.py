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


BELOW = 2
"""How many folders down a repository's only package is looked for (`plugin/`, `src/plugin/`)."""
NOT_SEARCHED = frozenset({"node_modules", "__pycache__", "venv", "dist", "build", "target", "tests", "test",
                          "fixtures", "examples", "evals"})


def detect(root: Path) -> Repo:
    """The repository's layout and packages; a clear error when nothing here is a package. A
    repository whose only package sits one or two folders down (`plugin/`) gets that one, said
    on stderr; with several there, the error lists each with the `--package` to pass."""
    root = root.resolve()
    if not root.is_dir():
        raise ConfigError(f"{root}: not a folder; pass --package DIR pointing at the repository or package")
    found = _here(root)
    if found is not None:
        return found
    below = sorted(_below(root, BELOW))
    if len(below) == 1:
        import sys

        rel = below[0].relative_to(root).as_posix()
        said = f"aam-eval: no package at {root}; using the one in {rel}/ (--package {below[0]} says so)"
        print(said, file=sys.stderr, flush=True)
        repo = _here(below[0])
        assert repo is not None
        return repo
    if below:
        listed = "; ".join(f"--package {p}" for p in below)
        raise ConfigError(f"{root}: no package found here, but {len(below)} below it; pass one: {listed}")
    raise ConfigError(f"{root}: no package found here; looked for {', '.join(LOOKED_FOR)}. Pass --package "
                      "DIR pointing at the repository or package root")


def _below(root: Path, depth: int) -> list[Path]:
    """The package folders one to `depth` folders beneath `root` (not inside another package,
    nor in hidden, vendored, build or test folders)."""
    out: list[Path] = []
    try:
        children = sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink())
    except OSError:
        return out
    for child in children:
        if child.name.startswith(".") or child.name in NOT_SEARCHED:
            continue
        try:
            found = _here(child) is not None
        except (ConfigError, OSError):
            found = True  # a package with a broken manifest: its error is said when it is the one taken
        if found:
            out.append(child)
        elif depth > 1:
            out += _below(child, depth - 1)
    return out


def _here(root: Path) -> Repo | None:
    """The layout of `root` itself, or None when it holds no package."""
    package = aam.read(root)
    if package is not None:
        return Repo(root, "aam", [package], source=aam.MANIFEST)
    from aam_eval_action.vally.layout import is_project

    vally = is_project(root) if (root / ".vally.yaml").is_file() else None
    if marketplace.found(root) and vally is None:
        kind, name, plugins, findings = marketplace.read(root, HOSTS)
        return Repo(root, kind, plugins, name, marketplace.found(root)[0], findings)
    hosts = [read_host(root, "", h) for h in HOSTS if manifest_of(root, "", h)]
    if not hosts and (root / "skills").is_dir() and any((root / p).exists() for p in PLUGIN_PARTS):
        hosts = [read_host(root, "", claude_plugin.HOST)]
    if hosts and vally is None:
        plugin = read_plugin(root, "", hosts, root.name)
        return Repo(root, plugin.kind, [plugin], source=hosts[0].manifest)
    source = vally or is_project(root)
    if source is not None:  # a Vally project: its skills where its config, specs and experiments say
        from aam_eval_action.vally.layout import read as read_vally

        return Repo(root, "skills", [read_vally(root)], source=source)
    skills = skills_folder.read(root)
    if skills is not None:
        return Repo(root, "skills", [skills])
    return None


def is_package(folder: Path) -> bool:
    """Whether a folder holds a package of any layout (itself, not one below it)."""
    try:
        return folder.is_dir() and _here(folder.resolve()) is not None
    except (ConfigError, OSError):
        return False


def read_package(root: Path) -> PackageLayout:
    """The package at `root` (the first plugin of a marketplace), in the neutral form."""
    return detect(root).packages[0]
