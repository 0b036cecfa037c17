"""Other tools' eval files read as they are: what each format's fields become, field by field;
stable names; discovery in `check` and `run --dry-run`; broken and hostile files refused with
file, field and line. The real CLIs run them in test_importers_e2e.py.

tests/fixtures/imported-evals is a skills repository (a Claude Code plugin without a manifest)
keeping the eval files of other tools: skill-creator's `evals/evals.json` in both spellings
(`expectations`, `assertions`), the three trigger-set shapes, an evolve suite with typed
assertions, openai/skills `evaluations/`, and a question set.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from aam_eval_action.loader import LoadedCase, load_repo
from aam_eval_action.pipeline.select import parse_tags

from conftest import ROOT, aam_eval

REPO = ROOT / "tests/fixtures/imported-evals"


def _cases(root: Path = REPO) -> dict[str, LoadedCase]:
    return {c.case.name: c for c in load_repo(root).packages[0].cases}


def _fields(loaded: LoadedCase) -> dict[str, Any]:
    return loaded.case.model_dump(mode="json", by_alias=True, exclude_defaults=True)


def test_skill_creator_maps_prompt_files_and_expectations() -> None:
    found = _cases()["csv-report-1"]
    assert (found.file, found.line, found.source, found.skipped) == (
        "skills/csv-report/evals/evals.json", 4, "skill-creator", ())
    assert _fields(found) == {
        "name": "csv-report-1", "target": "skill:csv-report",
        "input": {"prompt": "How many data rows does evals/files/sales.csv have?",
                  "files": ["evals/files/sales.csv"]},
        "judge": {"criteria": "Each of these must hold:\n- Says the file has 2 data rows\n"
                              "- Does not count the header as a row\n\nThe expected output:\n- 2 data rows"},
    }
    # skill-creator writes files relative to the skill: that is where they are read from.
    assert found.case.files_root == REPO / "skills/csv-report"
    assert _fields(_cases()["md-title-release"])["judge"] == {
        "criteria": "Each of these must hold:\n- The title is in sentence case"}  # `assertions`


def test_evolve_typed_assertions_become_checks_and_the_rest_is_listed() -> None:
    found = _cases()["md-title-sentence-case"]
    assert found.source == "evolve"
    fields = _fields(found)
    assert fields["description"] == "A title in sentence case"
    assert fields["expected"] == {
        "regex": ["(?i)release planning"], "not-regex": ["Release Planning"],
        "files-absent": ["draft.md"], "tool-called": [{"tool": "write"}],
        "command": {"run": "(test -e title.md) && (grep -q '^# ' title.md)"},
    }
    assert fields["judge"]["criteria"] == (
        "Each of these must hold:\n- The title is one line starting with '# '\n- The title is short")
    assert dict(found.skipped) == {
        "command[6]": "needs aam-eval-no-such-binary, not on PATH here",
        "max_turns": "a per-case turn limit is not enforced (the engines take none from a case)",
        "screenshot[9]": "not mapped (evals/md-title/evals.yaml:18: evals[0].assertions[9]): an assertion of "
                         "type 'screenshot' with these fields has no counterpart here",
    }
    assert found.case.timeout == 120  # timeout_seconds


def test_the_three_trigger_set_shapes_run_with_every_skill_installed() -> None:
    cases = _cases()
    triggers = {n: c for n, c in cases.items() if c.source in ("trigger-set", "waza-triggers")}
    assert {n: (c.file, c.case.expected.skill_triggered, c.case.input.prompt) for n, c in triggers.items()} == {
        "csv-report-fires-f12f4ddc": ("skills/csv-report/evals/trigger_eval.json", True,
                                      "Summarise the sales in this CSV file for me"),
        "csv-report-quiet-0e0d46bc": ("skills/csv-report/evals/trigger_eval.json", False, "Write a haiku about autumn"),
        "md-title-fires-3b1a542b": ("skills/md-title/trigger_tests.yaml", True,
                                    "Write a title for my blog post about caching"),
        "md-title-quiet-115049a2": ("skills/md-title/trigger_tests.yaml", False, "What is the capital of France?"),
        "md-title-fires-7b81010f": ("evals/md-title/triggers.yaml", True, "Suggest a heading for this section"),
        "md-title-quiet-ce27e8ad": ("evals/md-title/triggers.yaml", False, "Convert 3 miles to kilometres"),
    }
    for loaded in triggers.values():
        assert loaded.case.judge is None and loaded.case.installs is None  # every skill, no judge
        assert loaded.case.target is not None and loaded.case.target.startswith("skill:")
    assert triggers["md-title-fires-3b1a542b"].case.description == "asks for a title"


def test_openai_evaluations_and_question_sets_are_judged_on_what_they_list() -> None:
    cases = _cases()
    assert _fields(cases["csv-report-basic-summary"]) == {
        "name": "csv-report-basic-summary", "target": "skill:csv-report",
        "input": {"prompt": "The user has a CSV export of sales.\n\nGive me the revenue of sales.csv"},
        "judge": {"criteria": "Expected behaviour:\n- Reads the CSV\n- Reports the revenue\n\n"
                              "Success criteria:\n- A number is given"},
    }
    route = cases["csv-report-route-1"]
    assert route.source == "question-set" and route.case.input.prompt == "Which region sold most in sales.csv?"
    assert route.case.judge is not None and "- north or south, by units" in route.case.judge.criteria


def test_names_stay_when_an_entry_is_added(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(REPO, repo)
    before = set(_cases(repo))
    sets = repo / "skills/csv-report/evals/trigger_eval.json"
    sets.write_text(json.dumps([{"query": "Plot this CSV", "should_trigger": True}] + json.loads(sets.read_text())))
    evals = repo / "skills/csv-report/evals/evals.json"
    data = json.loads(evals.read_text())
    data["evals"].insert(0, {"id": 0, "prompt": "Describe the columns.", "expectations": ["Names region and units"]})
    evals.write_text(json.dumps(data))
    after = set(_cases(repo))
    assert before < after and len(after - before) == 2


def test_check_and_dry_run_list_each_eval_file_its_format_and_cases() -> None:
    out = aam_eval("check", "--package", str(REPO)).out
    assert ("eval file skills/csv-report/evals/evals.json (skill-creator): 2 case(s): csv-report-1, "
            "csv-report-units") in out
    assert "eval file evals/md-title/evals.yaml (evolve): 1 case(s): md-title-sentence-case" in out
    assert "ok  md-title-sentence-case  (evals/md-title/evals.yaml:3, evolve)" in out
    assert "    not honoured: screenshot[9]: not mapped" in out
    dry = aam_eval("run", "--package", str(REPO), "--dry-run").out
    assert "eval file skills/md-title/trigger_tests.yaml (waza-triggers): 2 case(s)" in dry
    assert "md-title-sentence-case  target skill:md-title  live (no cassette" in dry
    assert "    not honoured: max_turns: a per-case turn limit is not enforced" in dry


def test_our_own_case_of_the_same_name_keeps_priority(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(REPO, repo)
    (repo / "evals/cases").mkdir(parents=True)
    (repo / "evals/cases/own.yaml").write_text(
        "name: csv-report-1\ninput: {prompt: ours}\njudge: {criteria: ours}\n")
    found = _cases(repo)["csv-report-1"]
    assert (found.file, found.case.input.prompt) == ("evals/cases/own.yaml", "ours")
    out = aam_eval("check", "--package", str(repo)).out
    assert "case 'csv-report-1' is also in evals/cases/own.yaml: ours is run, this one is not" in out


# --- broken and hostile files ---


BROKEN = {
    "skills/csv-report/evals/evals.json": ('{"skill_name": "csv-report", "evals": [\n  {"id": 1,}\n]}',
                                           "skills/csv-report/evals/evals.json:2: invalid JSON"),
    "skills/md-title/trigger_tests.yaml": ("skill: md-title\nshould_trigger_prompts:\n  - prompt: [unclosed\n",
                                           "skills/md-title/trigger_tests.yaml:4: invalid YAML"),
    "evals/md-title/triggers.yaml": ("triggers:\n  - query: Suggest a heading\n    should_trigger: maybe\n",
                                     "evals/md-title/triggers.yaml:3: triggers[0].should_trigger: "
                                     "should_trigger: true or false"),
    "skills/csv-report/evaluations/basic-summary.json": (
        '{"skills": ["csv-report"],\n "query": "q",\n "expected_behavior": []}',
        "skills/csv-report/evaluations/basic-summary.json:3: expected_behavior: expected_behavior or "
        "success_criteria must list what to judge"),
    "evals/routing.json": ('{"cases": [\n {"question": "", "ground_truth": "x"}]}',
                           "evals/routing.json:2: cases[0].question: question: a non-empty text is required"),
    "evals/md-title/evals.yaml": ("evals:\n  - id: x\n    prompt: p\n    assertions: {type: regex}\n",
                                  "evals/md-title/evals.yaml:4: evals[0].assertions: assertions: a list"),
    "evals/csv-report/eval.yaml": ("skill: csv-report\nconfig:\n  trials_per_task: 0\ntasks: [\"tasks/*.yaml\"]\n",
                                   "evals/csv-report/eval.yaml:3: config.trials_per_task: trials_per_task: a "
                                   "whole number of at least 1"),
    "evals/csv-report/tasks/columns.yaml": ("id: columns-001\ninputs:\n  prompt: p\n  files:\n    - path: ../../../x\n",
                                            "evals/csv-report/tasks/columns.yaml:5: inputs.files[0]: '../../../x' "
                                            "escapes evals/csv-report/"),
}


@pytest.mark.parametrize("rel", list(BROKEN))
def test_a_broken_file_of_each_format_names_its_file_field_and_line(rel: str, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(REPO, repo)
    text, expected = BROKEN[rel]
    (repo / rel).write_text(text)
    result = aam_eval("check", "--package", str(repo))
    assert result.code == 2 and expected in result.err, result.err
    assert "valid case(s)" in result.out  # the other files' cases are still listed


def test_an_input_file_that_escapes_its_root_is_refused(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(REPO, repo)
    (tmp_path / "secret.txt").write_text("the runner's data")
    evals = repo / "skills/csv-report/evals/evals.json"
    data = json.loads(evals.read_text())
    data["evals"][1]["files"] = ["../../../../secret.txt"]
    evals.write_text(json.dumps(data, indent=2))
    result = aam_eval("run", "--package", str(repo), "--replay", "-o", str(tmp_path / "r.json"))
    assert result.code == 2
    assert "skills/csv-report/evals/evals.json:" in result.err or "escapes" in result.out
    report = json.loads((tmp_path / "r.json").read_text())
    errored = {c["name"]: c for c in report["cases"] if c["verdict"] == "ERROR" and "escapes" in (c["error"] or "")}
    assert errored, report["cases"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "repo", "secret.txt"]


def test_an_unknown_shape_names_the_file_and_the_shapes_expected(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(REPO, repo)
    (repo / "skills/md-title/evals/notes.json").write_text('{"hello": "world"}')
    result = aam_eval("check", "--package", str(repo))
    assert result.code == 2
    assert ("skills/md-title/evals/notes.json:1: not an eval file of a known shape; expected skill-creator's "
            "{skill_name, evals: [{id, prompt, expectations}]}") in result.err


def test_a_waza_suite_maps_config_tasks_expected_and_graders() -> None:
    cases = _cases()
    revenue = cases["csv-report-revenue-001"]
    assert (revenue.file, revenue.source) == ("evals/csv-report/tasks/revenue.yaml", "waza")
    assert _fields(revenue) == {
        "name": "csv-report-revenue-001", "description": "Total revenue of an orders file",
        "target": "skill:csv-report", "tags": ["csv", "revenue"], "repeat": 2, "timeout": 90.0,
        "input": {"prompt": "What is the total revenue in orders.csv (units times price)?", "files": ["orders.csv"]},
        "expected": {"contains": ["92.5"], "regex": ["revenue|Revenue"], "max-tool-calls": 4,
                     "not-regex": ["(?i)traceback|error:"]},
        "judge": {"criteria": "Each of these must hold:\n- The answer shows how the total was computed."},
    }
    assert revenue.case.files_root == REPO / "evals/csv-report/fixtures"
    assert dict(revenue.skipped) == {
        "behavior.max_response_time_ms": "wall time is not graded: a replayed session takes none, and it "
                                         "varies with the machine",
        "suite grader long_enough": "a code grader runs Python assertions on the output: not run here",
    }
    columns = cases["csv-report-columns-001"]
    assert columns.case.judge is None  # no llm grader: its checks decide
    assert columns.case.expected.not_contains == ["revenue"] and columns.case.tags == ["csv", "slow"]


@pytest.mark.parametrize(("expr", "names"), [
    ("csv", ["csv-report-columns-001", "csv-report-revenue-001"]),
    ("csv && !slow", ["csv-report-revenue-001"]),
    ("slow || revenue", ["csv-report-columns-001", "csv-report-revenue-001"]),
    ("!slow && csv", ["csv-report-revenue-001"]),
])
def test_tags_select_cases_by_an_expression(expr: str, names: list[str]) -> None:
    wanted = parse_tags(expr)
    tagged = sorted(n for n, c in _cases().items() if c.case.tags and wanted(set(c.case.tags)))
    assert tagged == names
    dry = aam_eval("run", "--package", str(REPO), "--dry-run", "--tags", expr).out
    listed = sorted(line.split()[0] for line in dry.splitlines() if line.startswith("csv-report-")
                    and "  target " in line)
    assert listed == names


def test_a_bad_tags_expression_says_where(tmp_path: Path) -> None:
    result = aam_eval("run", "--package", str(REPO), "--dry-run", "--tags", "csv && (slow")
    assert result.code == 2 and "--tags 'csv && (slow': a ')' is missing" in result.err


def test_import_writes_our_case_yaml_that_loads_to_the_same_cases(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(REPO, repo)
    before = {n: (_fields(c), c.case.installs) for n, c in _cases(repo).items()}
    result = aam_eval("import", "--package", str(repo))
    assert result.code == 0 and "14 case(s) written" in result.out, result.out + result.err
    text = (repo / "evals/cases/md-title-sentence-case.yaml").read_text()
    assert text.startswith("# Imported from evals/md-title/evals.yaml:3 (evolve) by aam-eval import.\n"
                           "# Not honoured: command[6]: needs aam-eval-no-such-binary")
    assert (repo / "evals/evals/files/sales.csv").read_bytes() == (
        REPO / "skills/csv-report/evals/files/sales.csv").read_bytes()
    # The other tools' files can go: our own cases alone give the same cases.
    for folder in ("skills/csv-report/evals", "skills/csv-report/evaluations", "skills/md-title/evals",
                   "evals/md-title", "evals/csv-report/tasks"):
        shutil.rmtree(repo / folder)
    for rel in ("skills/md-title/trigger_tests.yaml", "evals/routing.json", "evals/csv-report/eval.yaml"):
        (repo / rel).unlink()
    after = {n: (_fields(c), c.case.installs) for n, c in _cases(repo).items()}
    assert after == before
    assert all(c.source is None for c in _cases(repo).values())
    again = aam_eval("import", "--package", str(repo))
    assert "0 case(s) written" in again.out


def test_a_report_of_ours_beside_the_evals_is_not_an_eval_file(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(REPO, repo)
    (repo / "evals/base-report.json").write_text(json.dumps({"config": {}, "summary": {}, "cases": []}))
    result = aam_eval("check", "--package", str(repo))
    assert result.code == 0 and "base-report" not in result.out + result.err


def test_a_skill_named_like_one_of_our_folders_does_not_read_them(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(REPO, repo)
    (repo / "skills/fixtures").mkdir()
    (repo / "skills/fixtures/SKILL.md").write_text("---\nname: fixtures\ndescription: d\n---\n")
    (repo / "evals/fixtures").mkdir(parents=True)
    (repo / "evals/fixtures/data.json").write_text('{"rows": 3}')
    result = aam_eval("check", "--package", str(repo))
    assert result.code == 0, result.err
    assert "evals/fixtures/data.json" not in result.out + result.err


# --- tasks of several turns (tests/fixtures/imported-evals/conversations: a repository of its own) ---

CONVERSATIONS = REPO / "conversations"


def test_a_waza_task_with_follow_up_prompts_is_a_case_with_turns_and_a_one_prompt_task_is_unchanged() -> None:
    cases = _cases(CONVERSATIONS)
    scripted = cases["project-setup-scripted-001"]
    assert (scripted.file, scripted.source) == ("evals/project-setup/tasks/scripted.yaml", "waza")
    assert _fields(scripted)["input"] == {
        "prompt": "Set up a project config for my new service.",
        "turns": [{"message": "It is called acme."}, {"message": "8080, please."}]}
    assert scripted.case.input.conversation and scripted.case.input.user is None
    assert dict(scripted.skipped) == {
        "checkpoints": "per-turn graders are not mapped: write them as the turns' own checks "
                       "(input.turns[].expected)"}
    one = cases["project-setup-one-prompt-001"]
    assert _fields(one) == {
        "name": "project-setup-one-prompt-001", "description": "Everything in the first message",
        "target": "skill:project-setup", "repeat": 1, "timeout": 120.0,
        "input": {"prompt": "Set up a project config: the project is acme and its server listens on port 8080."},
        "expected": {"contains": ["project.toml"]},
    }
    assert not one.case.input.conversation and one.skipped == ()


def test_a_waza_responder_is_a_simulated_user_with_one_more_turn_than_its_follow_ups() -> None:
    found = _cases(CONVERSATIONS)["project-setup-responder-001"]
    user = found.case.input.user
    assert user is not None and not found.case.input.turns
    assert user.persona == ("You are a backend developer starting a small HTTP service called acme.\n"
                            "Its server listens on port 8080. Answer the agent's questions in a few words.")
    assert user.goal and user.max_turns == 4 and user.model is None  # max_followups: 3, plus the first prompt
    assert dict(found.skipped) == {
        "inputs.responder.model": "the simulated user's model is eval-config `user.model` (a Claude or GPT model)"}


@pytest.mark.parametrize(("task", "expected"), [
    ("inputs:\n  prompt: p\n  follow_up_prompts: [a]\n  responder: {instructions: i, max_followups: 1}\n",
     "evals/project-setup/tasks/scripted.yaml:3: inputs: follow_up_prompts and responder exclude each other"),
    ("inputs:\n  prompt: p\n  follow_up_prompts: [a, '']\n",
     "evals/project-setup/tasks/scripted.yaml:5: inputs.follow_up_prompts: follow_up_prompts: a list of "
     "non-empty messages"),
    ("inputs:\n  prompt: p\n  responder: {instructions: i, max_followups: 0}\n",
     "evals/project-setup/tasks/scripted.yaml:5: inputs.responder.max_followups: max_followups: a whole "
     "number of at least 1"),
])
def test_a_broken_turn_of_a_waza_task_names_its_file_field_and_line(task: str, expected: str, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(CONVERSATIONS, repo)
    (repo / "evals/project-setup/tasks/scripted.yaml").write_text("id: scripted-001\nname: n\n" + task)
    result = aam_eval("check", "--package", str(repo))
    assert result.code == 2 and expected in result.err, result.err


def test_imported_turns_and_users_are_written_as_our_case_yaml(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(CONVERSATIONS, repo)
    before = {n: _fields(c) for n, c in _cases(repo).items()}
    result = aam_eval("import", "--package", str(repo))
    assert result.code == 0 and "3 case(s) written" in result.out, result.out + result.err
    shutil.rmtree(repo / "evals/project-setup")
    assert {n: _fields(c) for n, c in _cases(repo).items()} == before
