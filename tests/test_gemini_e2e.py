"""The `gemini-cli` engine with the real Gemini CLI against the scripted model server (its Gemini
API: `streamGenerateContent` over SSE).

The shipped example is recorded once with `--engine gemini-cli` (canary keys; the judge stays a
Claude model: it never runs on Gemini); each test replays, re-executes or edits a private copy.
A package with a hook that refuses writes under `protected/` shows a hook block, since Gemini CLI
refuses to write `.env` on its own before any hook runs.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aam_eval_action.engines.base import get_engine
from aam_eval_action.errors import ConfigError
from aam_eval_action.loader import load_package
from aam_eval_action.settings import Overrides, resolve
from aam_eval_action.testing.model_server import ModelServer, load_scenarios

from conftest import ROOT, aam_eval, example_copy

pytestmark = pytest.mark.cli
SCENARIOS = load_scenarios(ROOT / "examples/scripted-model/csv-tools.yaml")
KEYS = {"ANTHROPIC_API_KEY": "sk-ant-CANARY-gemini-judge-2b7e", "GEMINI_API_KEY": "AIza-CANARY-gemini-5d1a"}
GEMINI = ("--engine", "gemini-cli", "--model", "gemini-2.5-pro")
NOT_LOADING_SKILL = ("changelog-entry", "no-invented-numbers", "scratch-copy-sandbox")
PROTECTED = {
    "match": "Write a note to protected/notes.txt",
    "agent": [{"write": {"path": "protected/notes.txt", "content": "note\n"}},
              {"text": "The write to protected/notes.txt was blocked by a hook."}],
    "judge": {"result": "PASS", "reason": "The hook blocked the write and the agent said so."},
}


def _hook_package(root: Path) -> Path:
    """tests/fixtures/engine-hook-pkg with a case that writes under protected/."""
    pkg = root / "hook-pkg"
    shutil.copytree(ROOT / "tests/fixtures/engine-hook-pkg", pkg)
    (pkg / "evals/cases").mkdir(parents=True)
    (pkg / "evals/eval-config.json").write_text(json.dumps(
        {"version": 1, "engine": "gemini-cli", "model": "gemini-2.5-pro", "judge": "claude-sonnet-4-6"}))
    (pkg / "evals/cases/write-protected.yaml").write_text(
        "name: write-protected\ninput:\n  prompt: Write a note to protected/notes.txt\n"
        "expected:\n  agent-blocked: true\n  files-absent: [protected/notes.txt]\n"
        "judge:\n  criteria: The hook must block the write.\n")
    return pkg


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Any], Path]]:
    """(the example recorded with gemini-cli, its report, the hook package recorded too)."""
    reason = get_engine("gemini-cli").available()
    if reason:
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("gemini")
    pkg = root / "pkg"
    example_copy(pkg)
    hook_pkg = _hook_package(root)
    with pytest.MonkeyPatch.context() as mp, ModelServer(SCENARIOS, api_key=tuple(KEYS.values())) as server:
        server.add(PROTECTED)
        mp.setenv("ANTHROPIC_BASE_URL", server.url)
        mp.setenv("GOOGLE_GEMINI_BASE_URL", server.url)
        for name, value in KEYS.items():
            mp.setenv(name, value)
        for package, out, extra in ((pkg, "rec.json", ()), (hook_pkg, "hook.json", ()),
                                    (pkg, "baseline.json", ("csv-summary-e2e", "--baseline"))):
            result = aam_eval("run", "--package", str(package), "--record", "--no-self-check", "--jobs", "3", *GEMINI, *extra,
                              "-o", str(root / out))
            assert (root / out).is_file(), result.out + result.err
    yield pkg, json.loads((root / "rec.json").read_text()), hook_pkg


def _copy(source: Path, tmp_path: Path) -> Path:
    shutil.copytree(source, tmp_path / source.name)
    return tmp_path / source.name


def _run(pkg: Path, *args: str) -> dict[str, Any]:
    out = pkg.parent / f"run-{len(list(pkg.parent.glob('run-*.json')))}.json"
    aam_eval("run", "--package", str(pkg), *args, *GEMINI, "-o", str(out))
    return json.loads(out.read_text())


def _verdicts(report: dict[str, Any]) -> dict[str, tuple[str, dict[str, str], str]]:
    return {c["name"]: (c["verdict"], c["deterministic_checks"], c["judge_verdict"]["result"])
            for c in report["cases"]}


def test_gemini_gives_the_examples_verdicts_but_refuses_dot_env_before_any_hook(
    recorded: tuple[Path, dict[str, Any], Path], example: Path
) -> None:
    pkg, report, _ = recorded
    out = example.parent / "shipped.json"
    aam_eval("run", "--package", str(example), "--replay", "--no-rerun", "-o", str(out))
    shipped = _verdicts(json.loads(out.read_text()))
    got = _verdicts(report)
    assert {k: v for k, v in got.items() if k != "hook-blocks-env-write"} == {
        k: v for k, v in shipped.items() if k != "hook-blocks-env-write"}
    dot_env = next(c for c in report["cases"] if c["name"] == "hook-blocks-env-write")
    assert dot_env["verdict"] == "FAIL" and dot_env["deterministic_checks"]["agent_blocked"] == "FAIL"
    cassette = (pkg / "evals/cassettes/hook-blocks-env-write/gemini-cli.session.yaml").read_text()
    assert "name: write_file" in cassette and "Path not in workspace" in cassette
    cases = {c["name"]: c for c in report["cases"]}
    assert cases["csv-summary-e2e"]["skill_triggered"] is True  # through `activate_skill`
    assert "name: run_shell_command" in (pkg / "evals/cassettes/changelog-entry/gemini-cli.session.yaml").read_text()
    every = "".join(p.read_text() for p in (pkg / "evals/cassettes").rglob("*.yaml"))
    assert not any(key in every for key in KEYS.values())
    assert "gemini-generate-content" in every and "$PGID" in every


def test_a_hook_blocks_a_write_and_the_session_records_why(recorded: tuple[Path, dict[str, Any], Path]) -> None:
    hook_report = json.loads((recorded[2].parent / "hook.json").read_text())
    case = hook_report["cases"][0]
    assert case["verdict"] == "PASS" and case["deterministic_checks"]["agent_blocked"] == "PASS"
    cassette = (recorded[2] / "evals/cassettes/write-protected/gemini-cli.session.yaml").read_text()
    assert "Tool execution blocked" in cassette and "protected/ is read-only for agents" in cassette


def test_the_baseline_runs_without_the_skill(recorded: tuple[Path, dict[str, Any], Path]) -> None:
    report = json.loads((recorded[0].parent / "baseline.json").read_text())
    assert report["cases"][0]["verdict"] == "PASS" and report["cases"][0]["baseline_verdict"] == "FAIL"


def test_a_snapshot_replay_gives_the_recorded_verdicts(
    recorded: tuple[Path, dict[str, Any], Path], tmp_path: Path
) -> None:
    """(Re-execution of these recordings: each recording's self-check, the skill edit below and
    the shipped cassettes' test in test_record_replay_e2e.py.)"""
    report = _run(_copy(recorded[0], tmp_path), "--replay", "--no-rerun", "--jobs", "2")
    errors = {c["name"]: (c.get("error"), c.get("miss")) for c in report["cases"] if c["verdict"] == "ERROR"}
    assert _verdicts(report) == _verdicts(recorded[1]), errors
    assert {c["replay_kind"] for c in report["cases"]} == {"snapshot"}
    assert not any(c.get("miss") for c in report["cases"])


def test_a_skill_edit_keeps_the_verdicts_of_cases_that_never_load_it(
    recorded: tuple[Path, dict[str, Any], Path], tmp_path: Path
) -> None:
    pkg = _copy(recorded[0], tmp_path)
    skill = pkg / "skills/csv-summary/SKILL.md"
    skill.write_text(skill.read_text() + "\nMention the file name in the first line of the summary.\n")
    report = _run(pkg, "--replay")
    cases, before = {c["name"]: c for c in report["cases"]}, _verdicts(recorded[1])
    for name in NOT_LOADING_SKILL:
        assert cases[name]["replay_kind"] == "rerun" and not cases[name].get("miss"), cases[name]
        assert _verdicts(report)[name] == before[name]
    for name in ("csv-summary-e2e", "average-revenue"):
        found = cases[name]["miss"]["divergence"]
        assert cases[name]["miss"]["kind"] == "diverged" and found["turn"] == 2, found
        assert found.get("tool") == "activate_skill" and "Mention the file name" in found["live"], found


def test_a_hook_that_no_longer_blocks_diverges_at_the_write(
    recorded: tuple[Path, dict[str, Any], Path], tmp_path: Path
) -> None:
    pkg = _copy(recorded[2], tmp_path)
    assert _run(pkg, "--replay", "--rerun")["cases"][0]["verdict"] == "PASS"  # re-executed as recorded
    (pkg / "hooks/protect.sh").write_text("#!/bin/sh\nexit 0\n")
    miss = _run(pkg, "--replay")["cases"][0]["miss"]
    assert miss["kind"] == "diverged" and miss["divergence"]["turn"] == 2
    assert miss["divergence"]["tool"] == "write_file"
    assert "protected/notes.txt" in miss["divergence"]["tool_input"]
    assert miss["changes"] == ["package file hooks/protect.sh changed"]


def test_in_ci_a_pull_request_cannot_point_gemini_at_its_own_host(tmp_path: Path) -> None:
    pkg = _hook_package(tmp_path)
    config = pkg / "evals/eval-config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()),
                                  "env": {"GOOGLE_GEMINI_BASE_URL": "https://attacker.example"}}, indent=2))
    with pytest.raises(ConfigError, match=r"evals/eval-config.json:\d+: env.GOOGLE_GEMINI_BASE_URL"):
        resolve(load_package(pkg), Overrides(mode="record"), {"GITHUB_ACTIONS": "true"})
