"""One run over a matrix of engines and models: the shipped example replayed on all four engines,
two models of one engine recorded and compared, per-pair reports merged, bad lists refused.

The four-engine run replays the shipped cassettes (no key, no CLI); the two-model run records
with the real Claude Code against the scripted model server.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aam_eval_action.diff import compare_pairs, diff_reports
from aam_eval_action.engines.base import get_engine
from aam_eval_action.render.comment import render_comment
from aam_eval_action.report import Attempt, load_report, merge_reports, split_by_pair
from aam_eval_action.testing.model_server import ModelServer, load_scenarios

from conftest import ROOT, aam_eval
from support.golden import assert_golden
from support.reports import case, report

FOUR = "claude-code,codex,copilot,gemini-cli"
PAIRS = [("claude-code", "claude-sonnet-4-6"), ("codex", "gpt-5.5"), ("copilot", "claude-sonnet-4-6"),
         ("gemini-cli", "gemini-2.5-pro")]


def _run(pkg: Path, out: Path, *args: str) -> dict[str, Any]:
    result = aam_eval("run", "--package", str(pkg), *args, "-o", str(out))
    assert out.is_file(), result.out + result.err
    return json.loads(out.read_text())


def _steady(path: Path) -> Path:
    """The report with its wall times fixed, for a golden comment."""
    data = json.loads(path.read_text())
    data["duration_seconds"] = 42.0
    for c in data["cases"]:
        c["duration_seconds"] = 1.0
    path.write_text(json.dumps(data))
    return path


def test_the_example_on_four_engines_gives_one_report_and_a_matrix_comment(example: Path) -> None:
    base = _run(example, example.parent / "base.json", "--replay")
    head = _run(example, example.parent / "head.json", "--replay", "--engine", FOUR)
    assert "pairs" not in base and not any("engine" in c for c in base["cases"])  # reads as before
    assert [(p["engine"], p["model"]) for p in head["pairs"]] == PAIRS
    assert len(head["cases"]) == 4 * len(base["cases"]) and head["summary"]["total"] == 28
    assert all(p["summary"]["total"] == 7 and p["summary"]["replayed"] == 7 for p in head["pairs"])
    # Each pair replays its own cassettes: gemini-cli refuses `.env` before the hook runs.
    cells = {(c["name"], c["engine"]): c["verdict"] for c in head["cases"]}
    assert cells[("hook-blocks-env-write", "gemini-cli")] == "FAIL"
    assert {cells[("hook-blocks-env-write", e)] for e, _ in PAIRS[:3]} == {"PASS"}
    diff = diff_reports(load_report(_steady(example.parent / "base.json")),
                        load_report(_steady(example.parent / "head.json")))
    assert diff.regressions == 0 and diff.pairs_agree is False and diff.pairs is not None
    assert [p.base is not None for p in diff.pairs] == [True, False, False, False]
    assert_golden("comment_four_engines.md", render_comment(diff))
    text = aam_eval("diff", str(example.parent / "base.json"), str(example.parent / "head.json"))
    assert "disagree on 1 case: hook-blocks-env-write" in text.out
    assert "gemini-cli · gemini-2.5-pro vs claude-code · claude-sonnet-4-6: 42.9% vs 57.1%" in text.out
    alone = aam_eval("diff", str(example.parent / "head.json"))  # one report: its engines side by side
    assert alone.code == 0 and "codex · gpt-5.5: 57.1% (new in this run)" in alone.out
    assert "hook-blocks-env-write  PASS" in alone.out


def test_pair_reports_merge_into_the_same_matrix(example: Path) -> None:
    whole = _run(example, example.parent / "whole.json", "--replay", "--engine", FOUR)
    parts = []
    for engine, model in PAIRS:
        out = example.parent / f"{engine}.json"
        _run(example, out, "--replay", "--engine", engine, "--model", model)
        parts.append(str(out))
    merged = example.parent / "merged.json"
    result = aam_eval("merge", *parts, "-o", str(merged))
    assert result.code == 1 and "merged 4 report(s), 28 case(s)" in result.out, result.err  # some fail
    data = json.loads(merged.read_text())
    assert [(p["engine"], p["model"]) for p in data["pairs"]] == PAIRS
    key = [(c["name"], c["engine"], c["model"], c["verdict"]) for c in data["cases"]]
    assert key == [(c["name"], c["engine"], c["model"], c["verdict"]) for c in whole["cases"]]
    diff = diff_reports(load_report(example.parent / "whole.json"), load_report(merged))
    assert diff.regressions == 0 and diff.counts["unchanged"] + diff.counts["still-failing"] == 28
    again = aam_eval("merge", parts[0], parts[0], "-o", str(example.parent / "twice.json"))
    assert again.code == 2 and "is in shard reports 1 and 2" in again.err


def test_a_changed_case_is_stale_on_every_pair_with_a_re_record_command_each(example: Path) -> None:
    case_file = next((example / "evals/cases").glob("*average-revenue*"))
    case_file.write_text(case_file.read_text().replace("average revenue", "mean revenue"))
    _run(example, example.parent / "head.json", "--replay", "--no-rerun", "--engine", FOUR)
    head = load_report(example.parent / "head.json")
    comment = render_comment(diff_reports(None, head))
    for engine, model in PAIRS:
        assert f"aam-eval run average-revenue --record --engine {engine} --model {model}" in comment
    assert comment.count("| ⚠️ stale |") == 0  # no base: the cells show the head alone
    assert "average-revenue" in comment
    # Agreement is over the cases more than one pair graded: a stale case is not agreement.
    two = _run(example, example.parent / "two.json", "--replay", "--no-rerun", "--engine", "claude-code,codex")
    assert {c["verdict"] for c in two["cases"] if c["name"] == "average-revenue"} == {"ERROR"}
    said = aam_eval("diff", str(example.parent / "two.json")).out
    assert ("The engines/models agree on all 6 cases more than one of them graded (1 graded by one or none)."
            in said), said


def _config(pkg: Path, **fields: Any) -> None:
    path = pkg / "evals/eval-config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **fields}, indent=2) + "\n")


@pytest.mark.parametrize(("fields", "message", "at"), [
    ({"engines": ["claude-code", "cursr"]}, "engines[1]: unknown engine 'cursr'", '"cursr"'),
    ({"engines": ["codex", "codex"]}, "engines: engines lists codex twice", '"engines"'),
    ({"engines": ["claude-code", "codex"], "models": ["claude-opus-4-5"]},
     "models: codex runs none of the models claude-opus-4-5; add one of its models (e.g. gpt-5.5)", '"models"'),
    ({"engines": ["claude-code"], "pairs": [{"engine": "codex", "model": "gpt-5.5"}]},
     "pairs: set either `pairs` or `engines`/`models`, not both", '"pairs"'),
    ({"pairs": [{"engine": "codex"}]}, "pairs[0].model: required field is missing; add it", "{"),
])
def test_check_refuses_a_bad_engine_or_model_list_with_file_and_line(
    example: Path, fields: dict[str, Any], message: str, at: str
) -> None:
    _config(example, **fields)
    text = (example / "evals/eval-config.json").read_text().splitlines()
    result = aam_eval("check", "--package", str(example))
    assert result.code == 2 and message in result.err, result.err
    line = int(result.err.split("eval-config.json:", 1)[1].split(":", 1)[0])
    assert at in text[line - 1], (line, text)


def test_eval_config_pairs_run_without_flags_and_flags_override_them(example: Path) -> None:
    _config(example, pairs=[{"engine": "gemini-cli", "model": "gemini-2.5-pro"},
                            {"engine": "claude-code", "model": "claude-sonnet-4-6"}])
    data = _run(example, example.parent / "pairs.json", "--replay", "average-revenue")
    assert [(p["engine"], p["model"]) for p in data["pairs"]] == [PAIRS[3], PAIRS[0]]
    alone = _run(example, example.parent / "alone.json", "--replay", "--engine", "codex", "average-revenue")
    assert "pairs" not in alone and alone["config"]["engine"] == "codex" and alone["config"]["model"] == "gpt-5.5"


def test_comparing_two_models_tests_their_attempts_for_significance() -> None:
    def attempts(passes: int, n: int) -> list[Attempt]:
        return [Attempt(verdict="PASS" if i < passes else "FAIL") for i in range(n)]

    sonnet = report([case(f"c{i}", "PASS" if i < 2 else "FAIL") for i in range(4)])
    opus = report([case(f"c{i}") for i in range(4)])
    for c in sonnet.cases:
        c.attempts = attempts(5 if c.verdict == "PASS" else 0, 5)
    for c in opus.cases:
        c.attempts = attempts(5, 5)
    sonnet.config.engine = opus.config.engine = "claude-code"
    sonnet.config.model, opus.config.model = "claude-sonnet-4-6", "claude-opus-4-5"
    [found] = compare_pairs([sonnet, opus])
    assert (found.reference_rate, found.rate, found.delta_pp) == (0.5, 1.0, 50.0)
    assert (found.reference_passes, found.passes) == ("10/20", "20/20")
    assert found.p_value is not None and found.p_value < 0.001 and found.significant
    assert found.better == ["c2", "c3"] and found.worse == []


@pytest.mark.cli
def test_two_models_of_one_engine_keep_their_own_cassettes_and_are_compared(
    example: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if reason := get_engine("claude-code").available():
        pytest.skip(reason)
    models = "claude-sonnet-4-6,claude-opus-4-5"
    cases = ("csv-summary-e2e", "changelog-entry")
    scenarios = load_scenarios(ROOT / "examples/scripted-model/csv-tools.yaml")
    _config(example, baseline=False)
    key = "sk-ant-CANARY-matrix-7c1f"
    with ModelServer(scenarios, api_key=key) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", key)
        recorded = _run(example, example.parent / "rec.json", "--record", "--no-self-check", "--model", models,
                        "--repeat", "2", "--jobs", "2", *cases)
        asked = {r.body.get("model") for r in server.requests}
    assert [(p["engine"], p["model"]) for p in recorded["pairs"]] == [
        ("claude-code", "claude-sonnet-4-6"), ("claude-code", "claude-opus-4-5")]
    assert {"claude-sonnet-4-6", "claude-opus-4-5"} <= asked
    cassettes = example.parent.parent / "cassettes" / "csv-summary-e2e"
    assert (cassettes / "claude-code@claude-opus-4-5.session.yaml").is_file()
    assert "claude-opus-4-5" in (cassettes / "claude-code@claude-opus-4-5.session.yaml").read_text()
    assert key not in "".join(p.read_text() for p in cassettes.parent.rglob("*.yaml"))
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    replayed = _run(example, example.parent / "rep.json", "--replay", "--repeat", "2", "--model", models, *cases)
    assert [(c["name"], c["model"], c["verdict"]) for c in replayed["cases"]] == [
        (c["name"], c["model"], c["verdict"]) for c in recorded["cases"]]
    assert replayed["summary"]["replayed"] == 4
    diff = diff_reports(None, load_report(example.parent / "rep.json"))
    [comparison] = diff.comparisons or []
    assert comparison.model == "claude-opus-4-5" and comparison.reference_model == "claude-sonnet-4-6"
    assert comparison.passes == comparison.reference_passes == "4/4" and comparison.p_value == 1.0
    comment = render_comment(diff)
    assert "claude-code · claude-opus-4-5 vs claude-code · claude-sonnet-4-6: 100.0% vs 100.0%" in comment
    assert "Fisher p = 1.000 (within noise)" in comment
    assert len(split_by_pair(load_report(example.parent / "rep.json"))) == 2


def test_a_hostile_model_name_is_refused_and_a_hostile_report_stays_text(example: Path) -> None:
    _config(example, pairs=[{"engine": "claude-code", "model": "--dangerously-skip-permissions"}])
    result = aam_eval("run", "--replay", "--package", str(example))
    assert result.code == 2 and "pairs[0].model: '--dangerously-skip-permissions' is not a model name" in result.err
    _config(example, pairs=[{"engine": "claude-code", "model": "claude-sonnet-4-6"}])
    flag = aam_eval("run", "--replay", "--package", str(example), "--model", "../../etc/x,claude-sonnet-4-6")
    assert flag.code == 2 and "--model: '../../etc/x' is not a model name" in flag.err
    # A model name with a slash gets a file-safe cassette stem inside the cassettes folder.
    aam_eval("run", "--replay", "--package", str(example), "--model", "org/model:v1", "average-revenue",
             "-o", str(example.parent / "org.json"))
    miss = json.loads((example.parent / "org.json").read_text())["cases"][0]["error"]
    assert "cassettes/average-revenue/claude-code@org-model-v1.session.yaml" in miss
    evil = "<img src=x onerror=alert(1)>@octocat"
    first = report([case("x"), case("y", "FAIL")])
    second = report([case("x", "FAIL"), case("y")])
    first.config.engine, first.config.model = "claude-code", "m1"
    second.config.engine, second.config.model = "codex", evil
    for c in second.cases:
        c.error = evil
    comment = render_comment(diff_reports(None, merge_reports([first, second])))
    assert "<img" not in comment and "@octocat" not in comment
    assert "codex · &lt;img src=x onerror=alert(1)&gt;@\u200boctocat vs claude-code · m1" in comment
