"""A repository with a `.vally.yaml` is one package of skills: those in `paths.skills`, in the
usual skill folders, and every folder a stimulus's `environment.skills` names."""

from __future__ import annotations

from pathlib import Path

from aam_eval_action.layouts import skills_folder
from aam_eval_action.layouts.common import lint_skill, skill_folders
from aam_eval_action.package import Finding, PackageLayout
from aam_eval_action.vally import config as vally_config
from aam_eval_action.vally import experiment


def skills(root: Path) -> dict[str, str]:
    """Skill name → folder, the first place a name is found winning."""
    from aam_eval_action.vally.project import read_project

    found: dict[str, str] = {}
    configs, _ = vally_config.configs(root)
    for config in configs:
        for folder in config.skills:
            for name, rel in skill_folders(root, config.under(folder.rstrip("/"))).items():
                found.setdefault(name, rel)
    for name, rel in skills_folder.find(root).items():
        if rel:
            found.setdefault(name, rel)
    for stimulus in read_project(root, found).stimuli():
        for name, rel in stimulus.skills.items():
            found.setdefault(name, rel)
    return found


def is_project(root: Path) -> str | None:
    """The file that makes `root` a Vally project: its `.vally.yaml`, or an experiment file at
    its top (dotnet/skills keeps no `.vally.yaml`); None when there is neither."""
    if (root / vally_config.CONFIG).is_file():
        return vally_config.CONFIG
    try:
        found = sorted(p.name for p in root.iterdir() if p.is_file() and experiment.NAMES.fullmatch(p.name))
    except OSError:
        return None
    return found[0] if found else None


def read(root: Path) -> PackageLayout:
    named = skills(root)
    findings: list[Finding] = []
    for name, rel in sorted(named.items()):
        findings += lint_skill(root, rel, name)
    return PackageLayout(
        root=root,
        kind="skills",
        plugin=root.name,
        name=root.name,
        skill_dirs=named,
        agents=(),
        commands=(),
        hooks=(),
        mcp={},
        context=(),
        findings=tuple(findings),
    )
