"""Routing between sibling skills, graded from recorded sessions: which skills each trigger prompt
fired over its runs, the near-miss rule, the confusion matrix with Wilson intervals, harness
problems (a canary that does not fire, sessions that all errored), and the prompts a change
moved from one skill to another in the diff, the comment and the console.

The sessions are recorded with the project's own cassette code (`testing.packages`) and read
back by `aam-eval run --replay`; the real CLIs route for real in `test_init_e2e.py`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aam_eval_action.commands.action import action as action_main
from aam_eval_action.stats import wilson
from aam_eval_action.testing.github_server import GitHubServer
from aam_eval_action.testing.packages import record_sessions, write_package

from conftest import aam_eval
from support.action_env import OWNER, REPO, pull_request_env
from support.gitrepo import commit_all, git, init

SKILLS = ("changelog", "notes", "commit")
A, B, C = SKILLS


def _trigger(name: str, prompt: str, target: str, fire: bool | None = None, sibling: str | None = None,
             tags: list[str] | None = None) -> dict[str, Any]:
    expected: dict[str, Any] = {}
    if fire is not None:
        expected["skill-triggered"] = fire
    if sibling is not None:
        expected["expected-skill"] = sibling
    return {"name": name, "target": f"skill:{target}", "input": {"prompt": prompt}, "expected": expected,
            "install-all-skills": True, "tags": tags or ["trigger"]}


CASES = [
    _trigger("a-fires-1", "Update the changelog for the 2.0 tag", A, fire=True),
    _trigger("a-fires-2", "What changed since v1.4? Put it in CHANGELOG.md", A, fire=True),
    _trigger("a-fires-flaky", "Log the fixes since the last tag", A, fire=True),
    _trigger("a-canary", "Use the changelog skill: log the fixes", A, fire=True, tags=["trigger", "canary"]),
    _trigger("a-near-b", "Summarise the merged PRs for the users", A, fire=False, sibling=B),
    _trigger("a-near-stolen", "Draft the release announcement from the PR list", A, fire=False, sibling=B),
    _trigger("a-out", "Resize the logo to 512px", A, fire=False, sibling="none"),
    _trigger("b-fires", "Release notes for 3.1 please, highlights first", B, fire=True),
    _trigger("c-fires", "Write the commit message for my staged diff", C, fire=True),
    _trigger("c-all-errored", "Commit message for these staged changes <b>now</b>", C, fire=True),
]
# One entry per run: the skills that run loaded, or None for a run whose session errored.
FIRED: dict[str, list[list[str] | None]] = {
    "a-fires-1": [[A], [A], [A]],
    "a-fires-2": [[A], None, [A]],           # an errored run is left out: 2 of 2 fired
    "a-fires-flaky": [[A], [], [B]],         # 1 of 3: below the threshold; no skill reaches it either
    "a-canary": [[A], [A], [A]],
    "a-near-b": [[B], [B], []],              # the sibling fires: passes
    "a-near-stolen": [[A], [A], [B]],        # the skill under test fires: fails
    "a-out": [[], [], []],
    "b-fires": [[B], [B], [B]],
    "c-fires": [[C], [C], [C]],
    "c-all-errored": [None, None, None],
}


def _package(root: Path, fired: dict[str, list[list[str] | None]]) -> Path:
    files = {f"skills/{s}/SKILL.md": f"---\nname: {s}\ndescription: The {s} skill.\n---\nDo the {s} work.\n"
             for s in SKILLS}
    pkg = write_package(root, CASES, files=files)
    record_sessions(pkg, {c["name"]: "Done." for c in CASES}, fired=fired)
    return pkg


def _replay(pkg: Path, out: Path) -> tuple[dict[str, Any], str]:
    result = aam_eval("run", "--replay", "--package", str(pkg), "-o", str(out))
    return json.loads(out.read_text()), result.out


@pytest.fixture(scope="module")
def head(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    root = tmp_path_factory.mktemp("routing")
    return _replay(_package(root / "pkg", FIRED), root / "head.json")


def _case(report: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in report["cases"] if c["name"] == name)


def test_each_trigger_case_records_which_skills_fired_and_where_it_went(head: tuple[dict[str, Any], str]) -> None:
    report, _ = head
    stolen = _case(report, "a-near-stolen")
    assert stolen["routed_to"] == A and stolen["expected_skill"] == B and stolen["verdict"] == "FAIL"
    assert [a["skills_fired"] for a in stolen["attempts"]] == [[A], [A], [B]]
    assert stolen["fire_rate"] == round(2 / 3, 4)
    assert "the prompt went to changelog (it belongs to notes)" in stolen["error"]
    assert stolen["prompt"] == "Draft the release announcement from the PR list"
    near = _case(report, "a-near-b")
    assert (near["verdict"], near["routed_to"], near["expected_skill"]) == ("PASS", B, B)
    out = _case(report, "a-out")
    assert (out["verdict"], out["routed_to"], out["expected_skill"]) == ("PASS", "none", "none")


def test_an_errored_run_is_never_counted_as_did_not_fire(head: tuple[dict[str, Any], str]) -> None:
    report, _ = head
    one_errored = _case(report, "a-fires-2")
    assert (one_errored["verdict"], one_errored["fire_rate"], one_errored["routed_to"]) == ("PASS", 1.0, A)
    every = _case(report, "c-all-errored")
    assert every["verdict"] == "ERROR" and every["routed_to"] == "none"
    assert "every run errored: nothing was measured" in every["error"]
    assert report["summary"]["routing"]["skills"][C]["errored"] == 1


def test_a_prompt_fires_a_skill_only_in_at_least_half_of_its_runs(head: tuple[dict[str, Any], str]) -> None:
    flaky = _case(head[0], "a-fires-flaky")
    assert (flaky["verdict"], flaky["fire_rate"], flaky["routed_to"]) == ("FAIL", round(1 / 3, 4), "none")
    assert head[0]["summary"]["routing"]["runs"] == 3
    assert head[0]["summary"]["routing"]["threshold"] == 0.5


def test_the_confusion_matrix_and_wilson_intervals(head: tuple[dict[str, Any], str]) -> None:
    routing = head[0]["summary"]["routing"]
    assert routing["labels"] == [A, C, B, "none"]
    m = routing["matrix"]
    # a-fires-1, a-fires-2, a-canary → changelog; a-fires-flaky → none
    assert m[A] == {A: 3, C: 0, B: 0, "none": 1}
    # a-near-b → notes, a-near-stolen → changelog, b-fires → notes
    assert m[B] == {A: 1, C: 0, B: 2, "none": 0}
    assert m["none"] == {A: 0, C: 0, B: 0, "none": 1}
    assert m[C] == {A: 0, C: 1, B: 0, "none": 0}  # the all-errored prompt is not counted
    a = routing["skills"][A]
    assert (a["cases"], a["fired"], a["precision"], a["recall"]) == (4, 4, 0.75, 0.75)
    low, high = wilson(3, 4)
    assert a["precision_ci"] == [round(low, 4), round(high, 4)] == a["recall_ci"]
    assert "harness" not in a


def test_a_canary_that_does_not_fire_is_a_harness_problem(tmp_path: Path) -> None:
    fired = {**FIRED, "a-canary": [[], [], []]}
    report, out = _replay(_package(tmp_path / "pkg", fired), tmp_path / "head.json")
    harness = report["summary"]["routing"]["skills"][A]["harness"]
    assert "canary, which names changelog outright, did not fire it" in harness
    assert "harness problem, changelog:" in out


def test_a_skill_whose_every_session_errored_says_nothing_was_measured(tmp_path: Path) -> None:
    fired = {name: ([None, None, None] if name.startswith("c-") else runs) for name, runs in FIRED.items()}
    report, _ = _replay(_package(tmp_path / "pkg", fired), tmp_path / "head.json")
    c = report["summary"]["routing"]["skills"][C]
    assert "recall" not in c and c["cases"] == 0 and c["errored"] == 2
    assert "every session of its 2 trigger prompt(s) errored" in c["harness"]


def test_the_console_prints_the_matrix(head: tuple[dict[str, Any], str]) -> None:
    out = head[1]
    assert "Routing: rows are the skill a prompt belongs to" in out
    assert "changelog: precision 75% (30–95%), recall 75% (30–95%) over 4 prompt(s)" in out


def test_the_diff_and_comment_say_which_prompts_moved(tmp_path: Path) -> None:
    """A description change that steals a sibling's prompts: they move from notes to changelog."""
    base_fired = {**FIRED, "a-near-stolen": [[B], [B], [B]], "b-fires": [[B], [B], [B]]}
    head_fired = {**FIRED, "a-near-stolen": [[A], [A], [B]], "b-fires": [[A], [A], [A]]}
    base, _ = _replay(_package(tmp_path / "base", base_fired), tmp_path / "base.json")
    head, _ = _replay(_package(tmp_path / "head", head_fired), tmp_path / "head.json")
    assert base and head
    text = aam_eval("diff", str(tmp_path / "base.json"), str(tmp_path / "head.json")).out
    assert "Prompts that moved to another skill (2):" in text
    assert "b-fires: notes → changelog (Release notes for 3.1 please, highlights first)" in text
    markdown = aam_eval("diff", str(tmp_path / "base.json"), str(tmp_path / "head.json"),
                        "--format", "markdown").out
    assert "prompts moved to another skill" in markdown.lower()
    assert "Release notes for 3.1 please, highlights first" in markdown
    assert "notes → **changelog**" in markdown
    assert "| belongs to ↓ · fired → |" in markdown
    moved = json.loads(aam_eval("diff", str(tmp_path / "base.json"), str(tmp_path / "head.json"),
                                "--format", "json").out)["moved"]
    assert {(m["name"], m["base"], m["head"]) for m in moved} == {("a-near-stolen", B, A), ("b-fires", B, A)}


def test_hostile_prompts_and_skill_names_are_inert_in_the_comment(tmp_path: Path) -> None:
    _replay(_package(tmp_path / "base", {**FIRED, "c-all-errored": [[C]] * 3}), tmp_path / "b.json")
    _replay(_package(tmp_path / "head", {**FIRED, "c-all-errored": [[A]] * 3}), tmp_path / "h.json")
    markdown = aam_eval("diff", str(tmp_path / "b.json"), str(tmp_path / "h.json"), "--format", "markdown").out
    assert "<b>now</b>" not in markdown and "&lt;b&gt;now&lt;/b&gt;" in markdown


def test_the_action_posts_the_moved_prompts_and_the_matrix_in_the_comment_and_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pull request whose recordings route a sibling's prompt to another skill: the sticky
    comment and the job summary say which prompt moved, and show the matrix."""
    repo = tmp_path / "repo"
    init(repo)
    _package(repo / "pkg", FIRED)
    base = commit_all(repo, "base")
    git(repo, "checkout", "-q", "-b", "pr")
    _package(repo / "pkg", {**FIRED, "b-fires": [[A], [A], [A]]})
    commit_all(repo, "pr")
    with GitHubServer(tokens={"rw-token": "write"}) as gh:
        gh.add_pr(OWNER, REPO, 11)
        env = pull_request_env(repo, tmp_path, gh.url, "rw-token", base, 11)
        action_main(env)
        comments = gh.comments(OWNER, REPO, 11)
    assert len(comments) == 1
    summary = (tmp_path / "summary.md").read_text()
    for body in (comments[0]["body"], summary):
        assert "### 🔀 1 prompt moved to another skill" in body
        assert "Release notes for 3.1 please, highlights first" in body and "notes → **changelog**" in body
        assert "Routing: which skill each trigger prompt fired" in body


def test_a_trigger_suite_recorded_with_one_run_replays_as_it_is(tmp_path: Path) -> None:
    """How many runs a trigger case has is the recording's choice: a suite recorded with one run
    (before `triggers.runs`, or with --repeat 1) replays, and is decided over the run it has;
    asking for more runs explicitly is a miss that says how to re-record."""
    pkg = _package(tmp_path / "pkg", {name: runs[:1] for name, runs in FIRED.items()})
    report, _ = _replay(pkg, tmp_path / "one.json")
    assert report["summary"]["not_replayable"] == 0
    assert _case(report, "a-near-stolen")["routed_to"] == A and "attempts" not in _case(report, "a-near-stolen")
    asked = aam_eval("run", "--replay", "--package", str(pkg), "--repeat", "3", "-o", str(tmp_path / "three.json"))
    three = json.loads((tmp_path / "three.json").read_text())
    assert asked.code == 1 and three["summary"]["not_replayable"] == len(CASES)
    assert "1 attempt(s) recorded, 3 wanted" in _case(three, "a-fires-1")["error"]
