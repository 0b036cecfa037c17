"""The `copilot` engine with the real GitHub Copilot CLI against the scripted model server.

The shipped example is recorded once with `--engine copilot` (offline, an Anthropic provider of
ours, canary keys); each test replays, re-executes or edits a private copy the way a pull
request would. The verdicts must be those the example gives with Claude Code: the scripted
server plays the same scenarios to every CLI, through Copilot's own tools (`bash`, `create`,
`skill`). Recorded again with a GPT model, Copilot runs on an OpenAI provider of ours (the
Responses API), where it writes files through `apply_patch`.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aam_eval_action.engines.base import AgentRun, get_engine
from aam_eval_action.engines.copilot import Copilot
from aam_eval_action.engines.registry import ENGINES
from aam_eval_action.errors import ConfigError
from aam_eval_action.loader import load_package
from aam_eval_action.settings import Overrides, resolve
from aam_eval_action.testing.model_server import ModelServer, load_scenarios

from conftest import EXAMPLE, ROOT, aam_eval, example_copy

pytestmark = pytest.mark.cli
SCENARIOS = load_scenarios(ROOT / "examples/scripted-model/csv-tools.yaml")
KEY = "sk-ant-CANARY-copilot-61c3"
COPILOT = ("--engine", "copilot")
# Cases that never load the csv-summary skill (its body reaches the model only when loaded).
NOT_LOADING_SKILL = ("changelog-entry", "hook-blocks-env-write", "no-invented-numbers", "scratch-copy-sandbox")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Any]]]:
    """(the package recorded with copilot, the recording run's report)."""
    reason = get_engine("copilot").available()
    if reason:
        pytest.skip(reason)
    pkg = tmp_path_factory.mktemp("copilot") / "pkg"
    example_copy(pkg)
    with pytest.MonkeyPatch.context() as mp, ModelServer(SCENARIOS, api_key=KEY) as server:
        mp.setenv("ANTHROPIC_BASE_URL", server.url)
        mp.setenv("ANTHROPIC_API_KEY", KEY)
        result = aam_eval("run", "--package", str(pkg), "--record", "--no-self-check", "--jobs", "3", *COPILOT,
                          "-o", str(pkg.parent / "rec.json"))
        assert (pkg.parent / "rec.json").is_file(), result.out + result.err
        baseline = aam_eval("run", "csv-summary-e2e", "--package", str(pkg), "--record", "--no-self-check", "--baseline", *COPILOT,
                            "-o", str(pkg.parent / "baseline.json"))
        assert (pkg.parent / "baseline.json").is_file(), baseline.out + baseline.err
    yield pkg, json.loads((pkg.parent / "rec.json").read_text())


def _copy(recorded: tuple[Path, dict[str, Any]], tmp_path: Path) -> Path:
    shutil.copytree(recorded[0], tmp_path / "pkg")
    return tmp_path / "pkg"


def _run(pkg: Path, *args: str) -> dict[str, Any]:
    out = pkg.parent / f"run-{len(list(pkg.parent.glob('run-*.json')))}.json"
    aam_eval("run", "--package", str(pkg), *args, *COPILOT, "-o", str(out))
    return json.loads(out.read_text())


def _verdicts(report: dict[str, Any]) -> dict[str, tuple[str, dict[str, str], str]]:
    return {c["name"]: (c["verdict"], c["deterministic_checks"], c["judge_verdict"]["result"])
            for c in report["cases"]}


def _shipped(example: Path) -> dict[str, Any]:
    out = example.parent / "shipped.json"
    aam_eval("run", "--package", str(example), "--replay", "--no-rerun", "-o", str(out))
    return json.loads(out.read_text())


def test_copilot_gives_the_examples_verdicts_with_its_own_tools(
    recorded: tuple[Path, dict[str, Any]], example: Path
) -> None:
    pkg, report = recorded
    assert _verdicts(report) == _verdicts(_shipped(example))
    cases = {c["name"]: c for c in report["cases"]}
    # The skill loads through Copilot's `skill` tool, and the trigger is detected.
    assert cases["csv-summary-e2e"]["skill_triggered"] is True
    assert report["summary"]["trigger_recall"] == 1.0
    cassette = (pkg / "evals/cassettes/hook-blocks-env-write/copilot.session.yaml").read_text()
    assert "name: create" in cassette and "Denied by preToolUse hook" in cassette
    assert "hook_blocked: true" in cassette
    shell = (pkg / "evals/cassettes/changelog-entry/copilot.session.yaml").read_text()
    assert "name: bash" in shell
    every = "".join(p.read_text() for p in (pkg / "evals/cassettes").rglob("*.yaml"))
    assert KEY not in every and "$DATETIME" in every and "copilot-1.0.102.yaml" in str(
        sorted((pkg / "evals/cassettes/_shared").iterdir()))


def test_the_baseline_runs_without_the_skill(recorded: tuple[Path, dict[str, Any]]) -> None:
    report = json.loads((recorded[0].parent / "baseline.json").read_text())
    case = report["cases"][0]
    assert case["verdict"] == "PASS" and case["baseline_verdict"] == "FAIL"
    assert report["summary"]["lift_pp"] == 100.0


def test_a_snapshot_replay_gives_the_recorded_verdicts(
    recorded: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    """(Re-execution of these recordings: each recording's self-check, the skill edit below and
    the shipped cassettes' test in test_record_replay_e2e.py.)"""
    report = _run(_copy(recorded, tmp_path), "--replay", "--no-rerun", "--jobs", "2")
    assert _verdicts(report) == _verdicts(recorded[1])
    assert {c["replay_kind"] for c in report["cases"]} == {"snapshot"}
    assert not any(c.get("miss") for c in report["cases"])


def test_a_skill_edit_keeps_the_verdicts_of_cases_that_never_load_it(
    recorded: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    pkg = _copy(recorded, tmp_path)
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
        assert found.get("tool") == "skill" and "Mention the file name" in found["live"], found


def test_a_hook_that_no_longer_blocks_diverges_at_the_write(
    recorded: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    pkg = _copy(recorded, tmp_path)
    (pkg / "hooks/protect_secrets.py").write_text("import sys\nsys.exit(0)\n")
    report = _run(pkg, "--replay", "hook-blocks-env-write")
    miss = report["cases"][0]["miss"]
    assert miss["kind"] == "diverged" and miss["divergence"]["turn"] == 2
    assert miss["divergence"]["tool"] == "create" and miss["divergence"]["tool_input"] == "$WORKSPACE/.env"
    assert "Denied by preToolUse hook" in miss["divergence"]["recorded"]
    assert miss["changes"] == ["package file hooks/protect_secrets.py changed"]


# --- a GPT model: Copilot on the OpenAI Responses API ------------------------------------

OPENAI_KEY = "sk-openai-CANARY-copilot-gpt-4d2c"
JUDGE_KEY = "sk-ant-CANARY-copilot-judge-8e0b"
GPT = ("--model", "gpt-5.5")


def test_copilot_serves_a_gpt_model_on_openai_and_every_other_on_anthropic() -> None:
    copilot, codex = ENGINES["copilot"], ENGINES["codex"]
    assert [copilot.provider_for(m) for m in ("gpt-5.5", "claude-opus-4-1", "gemini-2.5-pro", "")] == [
        "openai", "anthropic", "anthropic", "anthropic"]
    assert codex.provider_for("claude-opus-4-1") == "openai"  # an engine with one provider keeps it


@pytest.fixture(scope="module")
def recorded_gpt(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Any], list[str]]]:
    """(the example recorded with copilot on gpt-5.5, its report, the paths the server was asked).

    Copilot gets only the OpenAI key; the judge stays the example's Claude model."""
    reason = get_engine("copilot").available()
    if reason:
        pytest.skip(reason)
    pkg = tmp_path_factory.mktemp("copilot-gpt") / "pkg"
    example_copy(pkg)
    with pytest.MonkeyPatch.context() as mp, ModelServer(SCENARIOS, api_key=(OPENAI_KEY, JUDGE_KEY)) as server:
        mp.setenv("OPENAI_BASE_URL", server.url + "/v1")
        mp.setenv("OPENAI_API_KEY", OPENAI_KEY)
        mp.setenv("ANTHROPIC_BASE_URL", server.url)
        mp.setenv("ANTHROPIC_API_KEY", JUDGE_KEY)
        result = aam_eval("run", "--package", str(pkg), "--record", "--no-self-check", "--jobs", "3", *COPILOT, *GPT,
                          "-o", str(pkg.parent / "rec.json"))
        assert (pkg.parent / "rec.json").is_file(), result.out + result.err
        agent = [r for r in server.requests if r.headers.get("authorization") == f"Bearer {OPENAI_KEY}"]
    yield pkg, json.loads((pkg.parent / "rec.json").read_text()), [r.path for r in agent]


def test_a_gpt_model_runs_copilot_on_the_openai_responses_api(
    recorded_gpt: tuple[Path, dict[str, Any], list[str]], example: Path
) -> None:
    pkg, report, paths = recorded_gpt
    assert _verdicts(report) == _verdicts(_shipped(example))
    assert paths and set(paths) == {"/v1/responses"}
    sessions = {p.parent.name: p.read_text() for p in (pkg / "evals/cassettes").rglob("copilot*.session.yaml")}
    assert len(sessions) == 7 and all("model_provider: openai" in s for s in sessions.values())
    assert all("path: /v1/responses" in s and "model: gpt-5.5" in s for s in sessions.values())
    # With a GPT model Copilot writes through `apply_patch`; a Claude-format hook sees it as `Edit`
    # with the patch as its input (the example's hook fails on that, and Copilot refuses the call).
    hook = sessions["hook-blocks-env-write"]
    assert "name: apply_patch" in hook and "hook_blocked: true" in hook and "Denied by preToolUse hook" in hook
    assert report["summary"]["trigger_recall"] == 1.0
    every = "".join(p.read_text() for p in (pkg / "evals/cassettes").rglob("*.yaml"))
    assert OPENAI_KEY not in every and JUDGE_KEY not in every and "$DATETIME" in every


@pytest.mark.parametrize("rerun", ["--no-rerun", "--rerun"])
def test_a_gpt_recording_replays_and_re_executes_with_its_verdicts(
    recorded_gpt: tuple[Path, dict[str, Any], list[str]], tmp_path: Path, rerun: str
) -> None:
    report = _run(_copy(recorded_gpt[:2], tmp_path), "--replay", rerun, "--jobs", "2", *GPT)
    assert _verdicts(report) == _verdicts(recorded_gpt[1])
    kind = "rerun" if rerun == "--rerun" else "snapshot"
    assert {c["replay_kind"] for c in report["cases"]} == {kind}
    assert not any(c.get("miss") for c in report["cases"])


def test_a_gpt_session_whose_hook_no_longer_blocks_diverges_at_the_patch(
    recorded_gpt: tuple[Path, dict[str, Any], list[str]], tmp_path: Path
) -> None:
    pkg = _copy(recorded_gpt[:2], tmp_path)
    (pkg / "hooks/protect_secrets.py").write_text("import sys\nsys.exit(0)\n")
    report = _run(pkg, "--replay", "hook-blocks-env-write", *GPT)
    miss = report["cases"][0]["miss"]
    assert miss["kind"] == "diverged" and miss["divergence"]["turn"] == 2, miss
    assert miss["divergence"]["tool"] == "apply_patch" and miss["divergence"]["tool_input"] == "$WORKSPACE/.env"
    assert "Denied by preToolUse hook" in miss["divergence"]["recorded"]
    assert miss["changes"] == ["package file hooks/protect_secrets.py changed"]


def test_in_ci_a_pull_request_cannot_point_copilot_at_its_own_host(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    shutil.copytree(EXAMPLE, pkg)
    config = pkg / "evals/eval-config.json"
    data = {**json.loads(config.read_text()), "cassettes": "cassettes", "engine": "copilot"}
    for name in ("COPILOT_PROVIDER_BASE_URL", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"):
        config.write_text(json.dumps({**data, "env": {name: "https://attacker.example"}}, indent=2))
        with pytest.raises(ConfigError, match=rf"evals/eval-config.json:\d+: env.{name}"):
            resolve(load_package(pkg), Overrides(mode="record"), {"GITHUB_ACTIONS": "true"})
    # Outside CI eval-config `env` may set it, but Copilot's provider URL is always the run's own.
    config.write_text(json.dumps({**data, "env": {"COPILOT_PROVIDER_BASE_URL": "https://attacker.example"}}))
    settings = resolve(load_package(pkg), Overrides(mode="record"),
                       {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "PATH": "/usr/bin"})
    run = AgentRun(prompt="p", model=settings.model, workspace=tmp_path / "ws", home=tmp_path / "home",
                   env=settings.agent_env, timeout=5, runner_env=settings.runner_env)
    env = Copilot().env(run)
    assert env["COPILOT_PROVIDER_BASE_URL"] == "http://127.0.0.1:9"
