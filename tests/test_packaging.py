"""What the package imports is what it declares: a fresh `pip install` gets every module."""

from __future__ import annotations

import ast
import sys
import tomllib
from importlib.metadata import packages_distributions

from packaging.requirements import Requirement

from conftest import ROOT

SRC = ROOT / "src" / "aam_eval_action"


def _imported_top_levels() -> set[str]:
    names: set[str] = set()
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - {"aam_eval_action", "__future__"}


def _declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {Requirement(r).name.lower().replace("_", "-") for r in project["dependencies"]}


def test_every_third_party_import_is_a_declared_dependency() -> None:
    dists = packages_distributions()
    undeclared = {}
    for module in sorted(_imported_top_levels()):
        names = {d.lower().replace("_", "-") for d in dists.get(module, [module])}
        if not names & _declared():
            undeclared[module] = sorted(names)
    assert not undeclared, f"imported by src/ but not in [project] dependencies: {undeclared}"


def test_the_actions_run_the_released_images_of_this_version() -> None:
    """action.yml and live/action.yml pull what the release workflow pushes for this version."""
    import yaml

    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    images = {path: yaml.safe_load((ROOT / path).read_text())["runs"]["image"]
              for path in ("action.yml", "live/action.yml")}
    assert images == {
        "action.yml": f"docker://ghcr.io/org/aam-eval-action:v{version}",
        "live/action.yml": f"docker://ghcr.io/org/aam-eval-action-live:v{version}",
    }
    release = yaml.safe_load((ROOT / ".github/workflows/release.yml").read_text())
    builds = {step["with"]["file"] for step in release["jobs"]["images"]["steps"]
              if step.get("uses", "").startswith("docker/build-push-action")}
    assert builds == {"Dockerfile", "live/Dockerfile"}
