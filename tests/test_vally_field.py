"""Vally suites as they are on the field (tests/fixtures/vally-field): what Vally accepts with
its plugins is listed here and runs as far as it can, saying per stimulus what is not honoured;
a stimulus nothing here can grade is said once and never passes; then a few of them recorded
through the real Copilot CLI, replayed offline and one re-executed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from aam_eval_action.loader import load_repo

from conftest import ROOT, aam_eval, installed

FIELD = ROOT / "tests/fixtures/vally-field"
KEY = "sk-ant-CANARY-vally-field-2c7d"


def _cases(root: Path) -> dict[str, object]:
    repo = load_repo(root)
    assert not [str(e) for p in repo.packages for e in p.errors]
    return {c.case.title or c.case.name: c for p in repo.packages for c in p.cases}


def test_a_plugin_executor_and_plugin_graders_refuse_nothing_vally_accepts() -> None:
    cases = _cases(FIELD)
    assert sorted(cases) == ["deploy-basic", "plain", "research-docs"]
    skipped = {name: dict(c.skipped) for name, c in cases.items()}  # type: ignore[attr-defined]
    executor = skipped["deploy-basic"]["defaults.executor"]
    assert "'integration-test-agent-runner' comes from an --executor-plugin: not run here" in executor
    assert "shell-command-invoked: from a grader plugin, not run here" in skipped["deploy-basic"]["graders"]
    assert "(partial)" in skipped["deploy-basic"]["graders"] and "graders" not in skipped["plain"]
    # The score is over the graders that run here: the plugin's is not one of them.
    assert [g.type for g in cases["deploy-basic"].graders] == ["output-contains"]  # type: ignore[attr-defined]
    assert "not followed" in skipped["research-docs"]["defaults.executor.config.provider"]


def test_max_agent_duration_is_the_session_s_time_and_a_typo_is_still_refused(tmp_path: Path) -> None:
    research = _cases(FIELD)["research-docs"]
    assert research.case.timeout == 60.0  # type: ignore[attr-defined]
    pkg = shutil.copytree(FIELD, tmp_path / "field")
    spec = pkg / "evals/research/eval.yaml"
    spec.write_text(spec.read_text().replace("type: output-contains", "type: output-contain"))
    repo = load_repo(pkg)
    errors = [str(e) for p in repo.packages for e in p.errors]
    assert len(errors) == 1 and "evals/research/eval.yaml:21" in errors[0], errors
    assert "unknown-grader-type: 'output-contain'; did you mean output-contains?" in errors[0]


def test_check_and_the_dry_run_list_everything_and_say_once_what_is_not_run() -> None:
    for argv in (("check",), ("run", "--dry-run")):
        done = aam_eval(*argv, "--package", str(FIELD))
        said = done.out + done.err
        assert done.code == 0, said
        assert said.count("stimulus 'prereq-json': every grader comes from a grader plugin") == 1, said
        assert "evals/deploy-things/eval.yaml:24" in said
        for name in ("deploy-basic", "plain", "research-docs"):
            assert name in said


@pytest.mark.cli
def test_the_newly_read_stimuli_record_on_copilot_replay_offline_and_one_reexecutes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aam_eval_action.testing.model_server import ModelServer, load_scenarios

    installed("copilot")
    pkg = shutil.copytree(FIELD, tmp_path / "field")
    out = tmp_path / "record.json"
    scenarios = load_scenarios(ROOT / "tests/fixtures/vally-field-scenarios.yaml")
    with ModelServer(scenarios, api_key=KEY) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        recorded = aam_eval("run", "--package", str(pkg), "--record", "--no-self-check", "--jobs", "3",
                            "-o", str(out))
    report = json.loads(out.read_text())
    by = {c["title"]: c for c in report["cases"]}
    assert report["config"]["engine"] == "copilot", recorded.out + recorded.err  # Vally's default executor
    assert {t: c["verdict"] for t, c in by.items()} == {
        "deploy-basic": "PASS", "plain": "PASS", "research-docs": "PASS"}, recorded.out + recorded.err
    # The plugin's grader is not among those graded, and the stimulus says so.
    assert [g["type"] for g in by["deploy-basic"]["graders"]] == ["output-contains"]
    assert "partial" in by["deploy-basic"]["skipped_checks"]["graders"]
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    replay = tmp_path / "replay.json"
    done = aam_eval("run", "--package", str(pkg), "--replay", "-o", str(replay))
    replayed = {c["title"]: c for c in json.loads(replay.read_text())["cases"]}
    assert done.code == 0 and all(c["replayed"] for c in replayed.values()), done.out + done.err
    assert {t: c["verdict"] for t, c in replayed.items()} == {t: c["verdict"] for t, c in by.items()}
    rerun = tmp_path / "rerun.json"
    done = aam_eval("run", "deploy-basic", "--package", str(pkg), "--replay", "--rerun", "-o", str(rerun))
    again = json.loads(rerun.read_text())["cases"][0]
    assert again["replay_kind"] == "rerun" and again["verdict"] == "PASS", done.out + done.err
    assert all(KEY not in p.read_text() for p in pkg.rglob("*.yaml"))


def test_a_vally_project_at_a_marketplace_s_root_runs_each_stimulus_once() -> None:
    """heaths/plugins (vendored with its marketplace.json and plugins' plugin.json): one
    `.vally.yaml` at the root of a marketplace of two plugins. Vally runs each of its 4 stimuli
    once, with the skills its environment names; counted as runs, not names."""
    heaths = ROOT / "tests/fixtures/vally-corpus/heaths__plugins"
    assert (heaths / ".claude-plugin/marketplace.json").is_file()
    repo = load_repo(heaths)
    runs = [c.case.name for p in repo.packages for c in p.cases]
    assert len(runs) == len(set(runs)) == 4, runs
    done = aam_eval("run", "--package", str(heaths), "--dry-run")
    assert done.code == 0 and done.out.count("target skill:") == 4, done.out
    assert "engine copilot" in done.out  # Vally's executor, not the marketplace's default engine
