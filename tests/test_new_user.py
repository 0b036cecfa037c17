"""What a new user meets: consistent exit codes, errors that name the file, report fields that
are always there, and a command line that starts without pydantic."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from aam_eval_action.testing.packages import simple_case, write_package

from conftest import aam_eval

CASE_OK = "name: good\ninput:\n  prompt: hi\njudge:\n  criteria: ok\n"

BAD_CASE_FILES = {
    "unknown-key.yaml": CASE_OK.replace("name: good", "name: k") + "bogus: 1\n",
    "no-prompt.yaml": "name: p\ninput: {}\njudge: {criteria: c}\n",
    "bad-name.yaml": CASE_OK.replace("name: good", "name: Bad_Name"),
    "escape.yaml": CASE_OK.replace("name: good", "name: e") + "expected:\n  files-created: [../x]\n",
    "empty.yaml": "",
    "strings.yaml": "- one\n- two\n",
    "wrong-type.yaml": CASE_OK.replace("name: good", "name: w") + "expected:\n  contains: yes\n",
}


@pytest.mark.parametrize("bad", sorted(BAD_CASE_FILES))
def test_dry_run_exits_2_on_a_bad_case_file_and_still_lists_the_valid_cases(tmp_path: Path, bad: str) -> None:
    pkg = write_package(tmp_path / "pkg", [simple_case("fine")])
    (pkg / "evals/cases" / bad).write_text(BAD_CASE_FILES[bad])
    dry = aam_eval("run", "--dry-run", "--package", str(pkg))
    assert dry.code == 2, dry.out + dry.err
    assert "fine  target" in dry.out
    assert f"evals/cases/{bad}" in dry.out
    assert aam_eval("check", "--package", str(pkg)).code == 2


def test_dry_run_of_valid_cases_exits_0(tmp_path: Path) -> None:
    pkg = write_package(tmp_path / "pkg", [simple_case("fine")])
    assert aam_eval("run", "--dry-run", "--package", str(pkg)).code == 0


@pytest.mark.parametrize("verb", [("run", "--replay"), ("check",), ("run", "--dry-run")])
def test_a_reserved_engine_in_eval_config_names_the_file_and_line(tmp_path: Path, verb: tuple[str, ...]) -> None:
    pkg = write_package(tmp_path / "pkg", [simple_case("a")], config={"engine": "cursor"})
    result = aam_eval(*verb, "--package", str(pkg))
    assert result.code == 2
    assert "evals/eval-config.json:3: engine: unsupported engine 'cursor'" in result.err


def test_a_reserved_engine_flag_names_the_flag(tmp_path: Path) -> None:
    pkg = write_package(tmp_path / "pkg", [simple_case("a")])
    result = aam_eval("run", "--replay", "--package", str(pkg), "--engine", "cursor")
    assert result.code == 2
    assert "--engine: unsupported engine 'cursor'" in result.err


def test_a_list_of_strings_is_a_clear_error_and_a_list_of_cases_is_fine(tmp_path: Path) -> None:
    pkg = write_package(tmp_path / "pkg", [])
    (pkg / "evals/cases/strings.yaml").write_text("- first\n- second\n")
    (pkg / "evals/cases/list.yaml").write_text(
        "- {name: a, input: {prompt: x}, judge: {criteria: y}}\n"
        "- {name: b, input: {prompt: x}, judge: {criteria: y}}\n"
    )
    result = aam_eval("check", "--package", str(pkg))
    assert "evals/cases/strings.yaml:1: [0]: this is a string 'first', but a case is a mapping" in result.err
    assert "evals/cases/strings.yaml:2: [1]: this is a string 'second'" in result.err
    assert "2 valid case(s), 2 error(s)" in result.out


def test_judge_verdict_is_always_written(example: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    aam_eval("run", "--replay", "--package", str(example), "-o", str(out))
    cases = {c["name"]: c for c in json.loads(out.read_text())["cases"]}
    assert all("judge_verdict" in c for c in cases.values())
    # A failed deterministic check keeps the fast-fail: the judge is not asked, and says why.
    assert cases["average-revenue"]["judge_verdict"] == {"result": "SKIP", "reason": "not asked: contains failed"}
    assert cases["scratch-copy-sandbox"]["judge_verdict"]["reason"] == "not asked: sandbox failed"
    assert cases["csv-summary-e2e"]["judge_verdict"]["result"] == "PASS"


def test_a_bad_case_file_still_gets_a_judge_verdict(tmp_path: Path) -> None:
    pkg = write_package(tmp_path / "pkg", [simple_case("fine")])
    (pkg / "evals/cases/zz.yaml").write_text("name: zz\n")
    out = tmp_path / "r.json"
    aam_eval("run", "--replay", "--package", str(pkg), "-o", str(out))
    bad = next(c for c in json.loads(out.read_text())["cases"] if c["name"] == "zz")
    assert bad["judge_verdict"] == {"result": "SKIP", "reason": "not asked: the case file is invalid"}


def test_help_imports_no_pydantic() -> None:
    code = (
        "import sys; from aam_eval_action.main import build_parser; build_parser().format_help();"
        "print(sorted(m for m in ('pydantic', 'yaml', 'anthropic', 'openai', 'jinja2') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_stale_cases_do_not_move_the_headline(example: Path, tmp_path: Path) -> None:
    from aam_eval_action.diff import diff_reports
    from aam_eval_action.render.comment import render_comment
    from aam_eval_action.report import load_report

    base = tmp_path / "base.json"
    aam_eval("run", "--replay", "--package", str(example), "-o", str(base))
    # The PR edits one line of the skill without re-recording: every case that installs it is stale.
    skill = example / "skills/csv-summary/SKILL.md"
    skill.write_text(skill.read_text() + "\nOne more line.\n")
    head = tmp_path / "head.json"
    # Snapshot replay: every case that installs the skill is stale (re-execute replay would
    # give most of them a verdict; that is tested with it).
    aam_eval("run", "--replay", "--no-rerun", "--package", str(example), "-o", str(head))
    summary = json.loads(head.read_text())["summary"]
    total = summary["total"]
    assert total >= 6 and summary["graded"] == 0 and summary["not_replayable"] == total
    text = render_comment(diff_reports(load_report(base), load_report(head)))
    first = text.splitlines()[1]
    assert first == "## ⚠️ Agent evals: @​aam-examples/csv-tools: no case could be graded"
    assert f"**No verdict:** none of the {total} cases could be replayed" in text
    assert "Pass rate" not in text.split("| | Base")[0]  # no number in the headline


def test_headline_compares_only_cases_graded_on_both_sides() -> None:
    from aam_eval_action.diff import diff_reports
    from aam_eval_action.render.comment import render_comment
    from aam_eval_action.render.text import format_text

    from support.reports import case, report

    base = report([case("a"), case("b"), case("c"), case("d")])
    head = report([case("a"), case("b", "FAIL"), case("c", "ERROR", replay_miss="stale"),
                   case("d", "ERROR", replay_miss="no-cassette"), case("e")])
    d = diff_reports(base, head)
    assert (d.compared, d.base_compared_rate, d.head_compared_rate, d.pass_rate_delta_pp) == (2, 1.0, 0.5, -50.0)
    assert (d.head.graded, d.head.not_replayable, d.head.pass_rate) == (3, 2, round(2 / 3, 4))
    text = render_comment(d)
    assert "**Pass rate 100.0% → 50.0% (-50.0 pp)** (over 2 cases graded on both sides · 2 not replayable)" in text
    assert "Pass rate: 100.0% → 50.0% (-50.0 pp) (over 2 cases graded on both sides · 2 not replayable)" in format_text(d)


def test_replay_cost_is_shown_as_recorded_not_spent(example: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    result = aam_eval("run", "--replay", "--package", str(example), "-o", str(out))
    summary = json.loads(out.read_text())["summary"]
    assert summary["cost_usd"] > 0 and summary["run_cost_usd"] == 0
    assert f"recorded ${summary['cost_usd']:.4f} · this run $0.0000" in result.out
    from aam_eval_action.diff import diff_reports
    from aam_eval_action.render.comment import render_comment
    from aam_eval_action.report import load_report

    text = render_comment(diff_reports(load_report(out), load_report(out)))
    assert "| Cost (this run) | $0.0000 | $0.0000 | |" in text
    assert "| Cost (recorded) |" in text


def test_action_outputs_and_min_pass_rate_count_only_graded_cases(tmp_path: Path) -> None:
    from aam_eval_action.commands.action import exit_code, outputs
    from aam_eval_action.diff import diff_reports
    from aam_eval_action.github.inputs import ActionInputs, GitHubContext

    from support.reports import case, report

    base = report([case("a"), case("b"), case("c")])
    head = report([case("a"), case("b"), case("c", "ERROR", replay_miss="stale")])
    d = diff_reports(base, head)
    gh = GitHubContext.from_env({"GITHUB_WORKSPACE": str(tmp_path)})
    out = outputs(gh, head, d, tmp_path / "r.json", None)
    assert (out["pass-rate"], out["pass-rate-delta"], out["total"]) == ("100.0", "+0.0", "3")
    at_90 = ActionInputs.from_env({"INPUT_MIN-PASS-RATE": "90", "INPUT_FAIL-ON": "never"})
    assert exit_code(at_90, d, interrupted=False) == 0  # 2 of 2 graded passed
    # The stale case was not evaluated, so `regression` still fails the step (re-record it).
    assert exit_code(ActionInputs.from_env({}), d, interrupted=False) == 1


@pytest.mark.parametrize("verb", [("run", "--replay"), ("check",)])
def test_a_gemini_judge_is_a_config_error_naming_the_line_and_what_is_supported(
    tmp_path: Path, verb: tuple[str, ...]
) -> None:
    pkg = write_package(tmp_path / "pkg", [simple_case("a")],
                        config={"version": 1, "engine": "claude-code", "judge": "gemini-2.5-pro"})
    result = aam_eval(*verb, "--package", str(pkg))
    line = next(i for i, text in enumerate((pkg / "evals/eval-config.json").read_text().splitlines(), 1)
                if '"judge"' in text)
    assert result.code == 2
    assert f"evals/eval-config.json:{line}: judge: judge 'gemini-2.5-pro' is not supported" in result.err
    assert "the judge runs on the anthropic or openai SDK" in result.err and "claude-sonnet-4-6" in result.err
    flag = aam_eval("run", "--replay", "--package", str(pkg), "--judge", "gemini-2.5-flash")
    assert flag.code == 2 and "--judge: judge 'gemini-2.5-flash' is not supported" in flag.err
