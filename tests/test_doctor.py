"""`aam-eval doctor`: what can run here, on a machine without the agent CLIs (PATH holding only
python) and with the pinned ones; recordings of another CLI version named; keys said set, never
shown. Nothing is mocked: real packages and cassettes written with the project's own code, the
real CLI entry point, the real CLIs (`cli` tests) and the real kernel probes."""

from __future__ import annotations

import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from aam_eval_action.engines.registry import ENGINES
from aam_eval_action.replay import agent_cassette, traffic_store
from aam_eval_action.replay.traffic import ModelTraffic
from aam_eval_action.replay.volatile import Mask
from aam_eval_action.testing.packages import record_sessions, simple_case, write_package

from conftest import aam_eval
from support.agent_clis import read_pins

PINS = {pin.package: pin.version for pin in read_pins()}
OLD_CLAUDE = "2.1.300"
"""A Claude Code release other than the pin: the version a recording below was made with."""


def python_only_path(tmp_path: Path) -> Path:
    """A folder holding only python: PATH set to it finds no agent CLI, no Node, no unshare."""
    folder = tmp_path / "python-only"
    folder.mkdir()
    (folder / "python").symlink_to(sys.executable)
    return folder


def package_with_recordings(root: Path, engines: list[str]) -> Path:
    """A package whose eval-config runs `engines`, and three recordings of `claude-code`:
    `snapshot` by `record_sessions` (runtime version "test", no model traffic), `old` with
    model traffic of Claude Code 2.1.300 (its shared store learnt one volatile value), and
    `pinned` with model traffic of the pinned Claude Code."""
    write_package(root, [simple_case("snapshot"), simple_case("old"), simple_case("pinned")],
                  config={"engine": engines[0], "engines": engines})
    record_sessions(root, {"snapshot": "done", "old": "done", "pinned": "done"})
    cassettes = (root / "evals" / "cassettes").resolve()
    with_traffic(cassettes, "old", OLD_CLAUDE)
    with_traffic(cassettes, "pinned", PINS["@anthropic-ai/claude-code"])
    mask = Mask(shape="number", before="duration_ms: ", example="714 → 702", case="old")
    traffic_store.add_masks(cassettes, "claude", OLD_CLAUDE, [mask], checkout=None)
    return root


def with_traffic(cassettes: Path, case: str, version: str) -> None:
    """The case's cassette given model traffic of `claude` `version` (its shared entries in
    `_shared/claude-<version>.yaml`) and that runtime version."""
    path = agent_cassette.session_path(cassettes, case, "claude-code")
    cassette = agent_cassette.load(path, cassettes)
    assert cassette is not None
    traffic = ModelTraffic(cli="claude", cli_version=version, provider="anthropic-messages",
                           shared={f"system:{version}": "You are Claude Code."}, exchanges=[])
    stored = traffic_store.save_traffic(cassettes, [traffic], checkout=None)
    attempts = [a.model_copy(update={"runtime_version": version}) for a in cassette.attempts]
    agent_cassette.save(path, cassette.model_copy(update={"model_traffic": stored, "attempts": attempts}),
                        cassettes, checkout=None)
    assert (cassettes / "_shared" / f"claude-{version}.yaml").is_file()


def line_of(out: str, start: str) -> str:
    """The report's line that starts (after its indent) with `start`."""
    found = [line for line in out.splitlines() if line.strip().startswith(start)]
    assert found, f"no line starting {start!r} in:\n{out}"
    return found[0]


def block_of(out: str, start: str) -> str:
    """A recordings group: its line and the more-indented lines under it, joined."""
    lines = out.splitlines()
    first = next(i for i, line in enumerate(lines) if line.strip().startswith(start))
    indent = len(lines[first]) - len(lines[first].lstrip())
    block = [lines[first]]
    for line in lines[first + 1:]:
        if len(line) - len(line.lstrip()) <= indent:
            break
        block.append(line.strip())
    return " ".join(block)


def test_without_the_clis_it_names_each_missing_one_with_its_install_command(tmp_path: Path) -> None:
    package = package_with_recordings(tmp_path / "pkg", ["claude-code", "codex"])
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": str(python_only_path(tmp_path)), "HOME": str(home), "NO_COLOR": "1"}
    done = subprocess.run([sys.executable, "-m", "aam_eval_action", "doctor", "--package", str(package)],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    out = done.stdout
    assert done.returncode == 1, done.stdout + done.stderr
    for engine in ENGINES.values():
        line = line_of(out, engine.name)
        pin = PINS[engine.npm_package]
        assert "missing" in line and f"pinned {pin}" in line, line
        assert f"install: npm install -g {engine.npm_package}@{pin}" in line, line
    assert "missing" in line_of(out, "node")
    assert "not set" in line_of(out, "anthropic") and "not set" in line_of(out, "openai")
    assert re.search(r"landlock\s+(ABI \d+|not available \(.+\))", out), out
    assert re.search(r"user namespaces\s+(available|not available|not checked)", out), out
    # The eval-config's engines, each missing with its install command; the recordings' needs.
    assert "claude missing: npm install -g @anthropic-ai/claude-code@" in line_of(out, "engine     claude-code")
    assert "codex missing: npm install -g @openai/codex@" in line_of(out, "engine     codex")
    old = block_of(out, f"claude {OLD_CLAUDE}")
    assert "claude is not on PATH" in old and f"needs claude {OLD_CLAUDE}" in old, old
    assert f"npm install -g @anthropic-ai/claude-code@{OLD_CLAUDE}" in old, old
    assert "1 volatile value(s) learnt" in old and "cases: old" in old, old
    assert "runs here: it needs nothing" in line_of(out, "--replay")
    record = block_of(out, "--record")
    assert "cannot run here yet" in record and "claude (missing" in record and "codex (missing" in record
    assert "ANTHROPIC_API_KEY (not set" in record and "OPENAI_API_KEY (not set" in record, record
    assert "not ready: the eval-config's engine(s) claude-code, codex cannot run here" in out
    assert list(home.iterdir()) == []  # it wrote nothing in the home


def test_a_package_that_cannot_be_loaded_is_bad_usage_after_the_machines_report(tmp_path: Path) -> None:
    result = aam_eval("doctor", "--package", str(tmp_path / "nowhere"))
    assert result.code == 2
    assert "Agent CLIs" in result.out and "not a folder" in result.err


def test_keys_are_said_set_and_never_shown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = write_package(tmp_path / "pkg", [simple_case("alpha")])
    canaries = [uuid.uuid4().hex for _ in range(3)]
    monkeypatch.setenv("PATH", str(python_only_path(tmp_path)))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", f"sk-ant-api03-{canaries[0]}")
    monkeypatch.setenv("GEMINI_API_KEY", f"AIza{canaries[1]}")
    monkeypatch.setenv("OPENAI_API_KEY", "")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"https://gwuser:{canaries[2]}@gateway.internal:8443/anthropic")
    result = aam_eval("doctor", "--package", str(package))
    said = result.out + result.err
    assert re.search(r"ANTHROPIC_API_KEY\s+set\b", result.out), result.out
    assert re.search(r"GEMINI_API_KEY\s+set\b", result.out), result.out
    assert re.search(r"OPENAI_API_KEY\s+not set\b", result.out), result.out
    assert "ANTHROPIC_BASE_URL=https://gateway.internal:8443 " in line_of(result.out, "anthropic")
    assert "ANTHROPIC_API_KEY (set; for the agent on claude-code and the judge)" in block_of(result.out, "--record")
    for canary in canaries:  # no part of a value: not even 6 characters of it in a row
        assert not [canary[i:i + 6] for i in range(len(canary) - 5) if canary[i:i + 6] in said], said
    assert "gwuser" not in said
    assert result.code == 1  # no claude here


@pytest.mark.cli
def test_with_the_pinned_clis_each_is_found_with_its_pinned_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = write_package(tmp_path / "pkg", [simple_case("alpha")],
                            config={"engines": list(ENGINES)})
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))  # Gemini CLI writes into ~/.gemini on --version
    monkeypatch.setenv("NO_COLOR", "1")
    result = aam_eval("doctor", "--package", str(package))
    assert result.code == 0, result.out + result.err
    for engine in ENGINES.values():
        pin = PINS[engine.npm_package]
        line = line_of(result.out, engine.name)
        assert re.search(rf"\s{re.escape(pin)}\s+pinned {re.escape(pin)}\s+ok\s", line), line
        found = line_of(result.out, f"engine     {engine.name}")
        assert f"{engine.cli} {pin} found" in found, found
    assert re.search(r"node\s+\d+\.\d+\.\d+\s", line_of(result.out, "node"))
    assert "ready: the eval-config's engines have their CLIs here" in result.out
    assert "\033[" not in result.out  # NO_COLOR
    assert list(home.iterdir()) == []  # each --version ran with a temporary HOME


@pytest.mark.cli
def test_recordings_of_another_cli_version_than_installed_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = package_with_recordings(tmp_path / "pkg", ["claude-code"])
    pinned = PINS["@anthropic-ai/claude-code"]
    monkeypatch.setenv("NO_COLOR", "1")
    result = aam_eval("doctor", "--package", str(package))
    assert result.code == 0, result.out + result.err
    assert "3 session(s) in" in line_of(result.out, "recordings")
    old = block_of(result.out, f"claude {OLD_CLAUDE}")
    assert f"another version than the claude {pinned} installed" in old, old
    assert f"needs claude {OLD_CLAUDE} on PATH" in old and f"re-record them with claude {pinned}" in old, old
    assert "1 volatile value(s) learnt" in old and "cases: old" in old, old
    snapshot = block_of(result.out, "claude test")
    assert f"recorded with claude test, not the claude {pinned} installed" in snapshot, snapshot
    assert "without model traffic" in snapshot and "cases: snapshot" in snapshot, snapshot
    same = line_of(result.out, f"claude {pinned}")
    assert "same version as installed, re-executable here" in same and "cases:" not in same, same


def test_the_doctor_module_is_not_imported_at_start_up() -> None:
    code = "import sys, aam_eval_action.main; print('aam_eval_action.commands.doctor' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
