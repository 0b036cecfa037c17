"""Bare Agent Skills: folders of `<name>/SKILL.md` and nothing of ours.

Read from `skills/` (with dot-named category folders such as `skills/.curated/`), the hosts'
own skill folders (`.agents/skills/`, `.claude/skills/`, `.github/skills/`, `.gemini/skills/`),
the root's own sub-folders, or the root itself when it is one skill. Each skill is installed
under its folder's name.
"""

from __future__ import annotations

from pathlib import Path

from aam_eval_action.layouts.common import lint_skill, skill_folders
from aam_eval_action.package import Finding, PackageLayout

FOLDERS = ("skills", ".agents/skills", ".claude/skills", ".github/skills", ".gemini/skills")


def find(root: Path) -> dict[str, str]:
    """Skill name → folder; the first folder wins a name found twice."""
    if (root / "SKILL.md").is_file():
        return {root.name: ""}
    found: dict[str, str] = {}
    for folder in FOLDERS:
        for name, rel in skill_folders(root, folder).items():
            found.setdefault(name, rel)
    if not found:
        found = {n: r for n, r in skill_folders(root, "").items() if not n.startswith(".")}
    return found


def read(root: Path) -> PackageLayout | None:
    """The skills as one package named after the folder; None when there is none."""
    skills = find(root)
    if not skills:
        return None
    findings: list[Finding] = []
    for name, rel in sorted(skills.items()):
        findings += lint_skill(root, rel, name)
    return PackageLayout(root=root, kind="skills", plugin=root.name, name=root.name, skill_dirs=skills,
                         agents=(), commands=(), hooks=(), mcp={}, context=(), findings=tuple(findings))
