"""The test suite's own guarantees: skips fail the run, and the CLIs used are the pinned ones."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from support.agent_clis import ensure_pinned_clis, read_pins, reported_version
from support.strict_skips import ALLOW_ENV

SKIPPING = """\
import pytest

def test_runs():
    pass

def test_needs_a_tool():
    pytest.skip("the tool is not on PATH")
"""


def _pytest(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_skipping.py").write_text(SKIPPING)
    environ = {k: v for k, v in os.environ.items() if k != ALLOW_ENV}
    environ["PYTHONPATH"] = os.pathsep.join([str(ROOT / "tests"), environ.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "support.strict_skips",
         "--rootdir", str(tmp_path), str(tmp_path)],
        capture_output=True, text=True, cwd=tmp_path, env={**environ, **env}, timeout=120,
    )


def test_a_skipped_test_fails_the_run(tmp_path: Path) -> None:
    proc = _pytest(tmp_path)
    assert proc.returncode == 1, proc.stdout
    assert "1 failed, 1 passed" in proc.stdout
    assert "skips fail the run" in proc.stdout and "the tool is not on PATH" in proc.stdout


def test_skips_can_be_allowed_explicitly(tmp_path: Path) -> None:
    proc = _pytest(tmp_path, **{ALLOW_ENV: "1"})
    assert proc.returncode == 0, proc.stdout
    assert "1 passed, 1 skipped" in proc.stdout


def test_the_pins_name_every_engines_cli() -> None:
    from aam_eval_action.engines.registry import ENGINES

    assert {p.command for p in read_pins()} == {e.cli for e in ENGINES.values()} == {"claude", "codex", "copilot", "gemini"}
    assert all(p.version[0].isdigit() for p in read_pins())


@pytest.mark.cli
def test_a_cli_of_another_version_on_path_is_not_used(tmp_path: Path) -> None:
    stubs = tmp_path / "bin"
    stubs.mkdir()
    for pin in read_pins():
        stub = stubs / pin.command
        stub.write_text("#!/bin/sh\necho '0.0.1 (stale)'\n")
        stub.chmod(0o755)
    path = ensure_pinned_clis(os.pathsep.join([str(stubs), "/usr/bin", "/bin"]))
    for pin in read_pins():
        found = shutil.which(pin.command, path=path)
        assert found and Path(found).parent != stubs
        assert pin.version in reported_version(found)
