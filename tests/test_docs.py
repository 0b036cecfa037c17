"""The README stays short and right, and the documentation site builds with no broken link."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from conftest import ROOT

README = (ROOT / "README.md").read_text()
REPLAY = ("pip install . && aam-eval run --replay --package examples/csv-tools "
          "--engine claude-code,codex,copilot,gemini-cli")
TESTS = 'pip install -e ".[dev]" && python -m pytest -q'


def test_the_readme_keeps_what_a_newcomer_needs_in_at_most_250_lines() -> None:
    assert len(README.splitlines()) <= 250
    assert f"```bash\n{REPLAY}\n```" in README and f"```bash\n{TESTS}\n```" in README
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    for name in [*action["inputs"], *action["outputs"]]:
        assert f"`{name}`" in README, f"action {name!r} is not in the README"


def test_every_relative_link_of_the_readme_points_to_a_file() -> None:
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README)
    local = [link for link in links if not link.startswith(("http://", "https://"))]
    assert local and all((ROOT / link).exists() for link in local), local


def test_the_docs_site_builds_strict(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
                            cwd=ROOT, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "labels" / "index.html").exists() and (tmp_path / "export" / "index.html").exists()
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
    pages = {next(iter(item.values())) for item in nav}
    assert pages == {p.name for p in (ROOT / "docs").glob("*.md")}  # no page left out of the nav
