"""The package under evaluation on disk: which of its files reach the agent."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from aam_eval_action.errors import ConfigError

# Top-level entries installed into every workspace (skills are filtered by target).
INSTALLED_DIRS = ("hooks", "rules", "commands", "agents", "mcp", "scripts")
INSTALLED_FILES = ("package.agent.json", "AGENTS.md")


@dataclass(frozen=True)
class PackageLayout:
    """A package directory (the one holding `package.agent.json`)."""

    root: Path
    baseline: bool = False
    """The no-skill baseline: nothing installed, or for a `skill:` target everything but that skill."""

    @property
    def evals_dir(self) -> Path:
        return self.root / "evals"

    def skills(self) -> list[str]:
        """Names of the package's skills (directories holding SKILL.md)."""
        base = self.root / "skills"
        if not base.is_dir():
            return []
        return sorted(p.name for p in base.iterdir() if (p / "SKILL.md").is_file())

    def skills_for(self, target: str | None) -> list[str]:
        """The skills installed for a case: only the target's skill when it targets one."""
        if self.baseline:
            return []
        if target and target.startswith("skill:"):
            name = target.split(":", 1)[1]
            return [name] if name in self.skills() else []
        return self.skills()

    def files_for(self, target: str | None) -> list[str]:
        """Every package file (relative POSIX path) that reaches the agent for this target."""
        found: list[str] = []
        if not self.installs_anything(target):
            return found
        for name in self.skills_for(target):
            found += _walk(self.root, self.root / "skills" / name)
        for d in INSTALLED_DIRS:
            found += _walk(self.root, self.root / d)
        for f in INSTALLED_FILES:
            _refuse_escaping_link(self.root, self.root / f)
            if (self.root / f).is_file():
                found.append(f)
        return sorted(found)

    def installs_anything(self, target: str | None) -> bool:
        """False for the baseline of a case that does not target a skill: it runs on a bare agent."""
        return not self.baseline or bool(target and target.startswith("skill:"))

    def baseline_label(self, target: str | None) -> str:
        """What the baseline leaves out, for fingerprints and messages."""
        return f"without {target}" if target and target.startswith("skill:") else "without the package"


class PackageLinkError(ConfigError):
    """A package file is a symlink pointing outside the package."""


def _walk(root: Path, base: Path) -> list[str]:
    """Files under `base`, relative to `root`; a symlink that leaves the package is an error."""
    _refuse_escaping_link(root, base)
    if not base.is_dir():
        return []
    found = []
    for p in sorted(base.rglob("*")):
        if "__pycache__" in p.parts:
            continue
        _refuse_escaping_link(root, p)
        if p.is_file():
            found.append(p.relative_to(root).as_posix())
    return found


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
