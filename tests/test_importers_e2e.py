"""Imported evals run like our own cases, with the real CLIs against the scripted model server.

The skill-creator suite of tests/fixtures/imported-evals (with an input file beside it), its
trigger set, its evolve suite (with an assertion that cannot be honoured) and a waza task (run
twice, as its suite's trials_per_task says) are recorded on
Claude Code (and on Gemini CLI in bench/bench_repeats.py: importing does not depend on the
engine), then snapshot-replayed and re-executed with the same verdicts;
the trigger set gives precision and recall; editing an imported check re-grades from the
cassette with no model call.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from aam_eval_action.engines.base import get_engine
from aam_eval_action.testing.model_server import ModelServer, load_scenarios

from conftest import ROOT, aam_eval
from support.repeats import repeated

pytestmark = pytest.mark.cli
REPO = ROOT / "tests/fixtures/imported-evals"
SCENARIOS = load_scenarios(ROOT / "tests/fixtures/imported-evals-scenarios.yaml")
KEYS = {"ANTHROPIC_API_KEY": "sk-ant-CANARY-imported-7d21", "GEMINI_API_KEY": "gemini-CANARY-imported-33f0"}
ENGINES = {"claude-code": ("--engine", "claude-code"),
           "gemini-cli": ("--engine", "gemini-cli", "--judge", "claude-sonnet-4-6")}
CASES = ("csv-report-1", "csv-report-fires-f12f4ddc", "csv-report-quiet-0e0d46bc", "md-title-sentence-case",
         "csv-report-revenue-001")
Recorded = tuple[Path, dict[str, Any], str]


@pytest.fixture(scope="module", params=repeated(["claude-code"], ["gemini-cli"]))  # bench/bench_repeats.py
def recorded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorded]:
    engine = request.param
    reason = get_engine(engine).available()
    if reason:
        pytest.skip(reason)
    root = tmp_path_factory.mktemp(f"imported-{engine}")
    repo = root / "repo"
    shutil.copytree(REPO, repo)
    with pytest.MonkeyPatch.context() as mp, ModelServer(SCENARIOS, api_key=tuple(KEYS.values())) as server:
        mp.setenv("ANTHROPIC_BASE_URL", server.url)
        mp.setenv("GOOGLE_GEMINI_BASE_URL", server.url)
        for name, value in KEYS.items():
            mp.setenv(name, value)
        result = aam_eval("run", *CASES, "--package", str(repo), "--record", "--no-self-check", *ENGINES[engine],
                          "-o", str(root / "rec.json"))
    report = json.loads((root / "rec.json").read_text())
    assert result.code == 0, result.out + result.err + json.dumps(report["cases"], indent=1)
    yield repo, report, engine


def _run(repo: Path, engine: str, *args: str) -> tuple[dict[str, Any], str]:
    out = repo.parent / f"run-{len(list(repo.parent.glob('run-*.json')))}.json"
    result = aam_eval("run", *CASES, "--package", str(repo), *args, *ENGINES[engine], "-o", str(out))
    return json.loads(out.read_text()), result.out + result.err


def _verdicts(report: dict[str, Any]) -> dict[str, str]:
    return {c["name"]: c["verdict"] for c in report["cases"]}


def test_imported_cases_record_with_their_provenance_and_what_was_not_honoured(recorded: Recorded) -> None:
    repo, report, engine = recorded
    assert _verdicts(report) == dict.fromkeys(CASES, "PASS")
    cases = {c["name"]: c for c in report["cases"]}
    assert (cases["csv-report-1"]["source"], cases["csv-report-1"]["file"]) == (
        "skill-creator", "skills/csv-report/evals/evals.json")
    assert cases["csv-report-1"]["judge_verdict"]["result"] == "PASS"
    # A trigger case is graded by skill-triggered alone: no judge was asked.
    quiet = cases["csv-report-quiet-0e0d46bc"]
    assert quiet["skill_triggered"] is False and quiet["judge_verdict"]["result"] == "SKIP"
    assert not (repo / "evals/cassettes/csv-report-quiet-0e0d46bc" / f"{engine}.judge.yaml").exists()
    assert report["summary"]["trigger_precision"] == 1.0 and report["summary"]["trigger_recall"] == 1.0
    evolve = cases["md-title-sentence-case"]
    assert evolve["source"] == "evolve" and "screenshot[9]" in evolve["skipped_checks"]
    assert evolve["deterministic_checks"]["command"] == "PASS" and evolve["deterministic_checks"]["regex"] == "PASS"
    # The waza task ran as its suite asks: twice (trials_per_task), its input file from fixtures/.
    waza = cases["csv-report-revenue-001"]
    assert waza["source"] == "waza" and [a["verdict"] for a in waza["attempts"]] == ["PASS", "PASS"]
    assert waza["deterministic_checks"]["max_tool_calls"] == "PASS" and waza["judge_verdict"]["result"] == "PASS"
    assert "behavior.max_response_time_ms" in waza["skipped_checks"]
    # The input file the skill-creator case names reached the workspace at its written path.
    session = yaml.safe_load((repo / f"evals/cassettes/csv-report-1/{engine}.session.yaml").read_text())
    assert any("2" in (c.get("result") or "") for c in session["attempts"][0]["tool_calls"])
    text = "".join(p.read_text() for p in (repo / "evals/cassettes").rglob("*.yaml"))
    assert not any(key in text for key in KEYS.values())


def test_imported_cases_replay_as_snapshots_and_re_execute_with_the_same_verdicts(
    recorded: Recorded, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(recorded[0], repo)
    snapshot, log = _run(repo, recorded[2], "--replay", "--no-rerun")
    assert _verdicts(snapshot) == _verdicts(recorded[1]), log
    rerun, log = _run(repo, recorded[2], "--replay", "--rerun")
    assert _verdicts(rerun) == _verdicts(recorded[1]), json.dumps(rerun["cases"], indent=1) + log
    assert {c["replay_kind"] for c in rerun["cases"]} == {"rerun"}


def test_editing_an_imported_check_re_grades_from_the_cassette_for_free(recorded: Recorded, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(recorded[0], repo)
    suite = repo / "evals/md-title/evals.yaml"
    suite.write_text(suite.read_text().replace('pattern: "(?i)release planning"', 'pattern: "(?i)roadmap"'))
    report, log = _run(repo, recorded[2], "--replay")  # no key, no server: a model call would fail
    case = next(c for c in report["cases"] if c["name"] == "md-title-sentence-case")
    assert case["verdict"] == "FAIL" and case["deterministic_checks"]["regex"] == "FAIL", log
    assert case["replay_kind"] == "snapshot" and report["summary"]["run_cost_usd"] == 0


@pytest.mark.parametrize("recorded", ["claude-code"], indirect=True)  # the comment and page read reports
def test_what_was_not_honoured_is_in_the_comment_and_the_html_report(recorded: Recorded, tmp_path: Path) -> None:
    from support.browser import open_case, report_page

    repo = tmp_path / "repo"
    shutil.copytree(recorded[0], repo)
    page_path = tmp_path / "report.html"
    report, _ = _run(repo, "claude-code", "--replay", "--html", str(page_path))
    (tmp_path / "head.json").write_text(json.dumps(report))
    comment = aam_eval("comment", str(tmp_path / "head.json")).out
    assert "<summary>Checks not honoured (2 imported cases)</summary>" in comment
    assert "| evolve | screenshot&#91;9&#93; |" in comment or "| evolve | screenshot[9] |" in comment
    assert "needs aam-eval-no-such-binary, not on PATH here" in comment
    with report_page(page_path) as page:
        open_case(page, "md-title-sentence-case")
        text = page.js("document.getElementById('not-honoured').innerText")
        assert "Imported from evolve" in text and "screenshot[9]:" in text and "max_turns:" in text
        assert page.problems() == []
