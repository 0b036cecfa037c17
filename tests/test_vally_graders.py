"""Vally's built-in graders (`vally/grading.py`), each on real sessions: what passes, what
fails and why, in Vally's words. `run-command` and `program` run in a real finished workspace;
the LLM judge is a plain function (the judge is an input of grading)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aam_eval_action.layouts.detect import read_package
from aam_eval_action.pipeline.checks import Check
from aam_eval_action.pipeline.finished import FinishedWorkspace
from aam_eval_action.pipeline.plugin_eval import RunInputs, grade_run
from aam_eval_action.session import ConversationTurn, FileChange, Session, ToolCall, Usage
from aam_eval_action.spec import Case
from aam_eval_action.testing.packages import write_package
from aam_eval_action.vally.grader_kit import diff_text, parse_duration
from aam_eval_action.vally.grader_model import VallyGrader
from aam_eval_action.vally.grading import glob_regex, grade
from aam_eval_action.vally.judges import judge_prompt


def session(engine: str = "copilot", **fields: Any) -> Session:
    return Session(engine=engine, model_provider="anthropic", **fields)


def grader(kind: str, turn: int | None = None, rubric: tuple[str, ...] = (), **options: Any) -> VallyGrader:
    return VallyGrader.model_validate({"type": kind, "name": kind, "turn": turn, "options": options,
                                       "rubric": rubric})


def check(kind: str, s: Session, files: dict[str, str | None] | None = None, turn: int | None = None,
          **options: Any) -> Check:
    return grade(grader(kind, turn, **options), RunInputs(s, files or {}, engine=s.engine))


# --- output, transcript ---


def test_output_contains_is_case_insensitive_unless_told() -> None:
    s = session(output="All Tests PASSED")
    found = check("output-contains", s, substring="tests passed")
    assert (found.passed, found.detail, found.score) == (True, "'tests passed' found in output", 1.0)
    strict = check("output-contains", s, substring="tests passed", case_sensitive=True)
    assert (strict.passed, strict.detail, strict.score) == (False, "'tests passed' NOT found in output", 0.0)
    assert check("output-contains", s, value="passed").passed  # `value` read as `substring`
    assert not check("output-not-contains", s, substring="PASSED").passed
    assert check("output-contains", s, substring="failed", negate=True).passed


def test_output_matches_is_a_javascript_regex_with_inline_flags() -> None:
    s = session(output="Deployed to https://App.azurewebsites.net\n")
    assert not check("output-matches", s, pattern=r"https://app\.azurewebsites").passed
    hit = check("output-matches", s, pattern=r"(?i)https://app\.azurewebsites")
    assert hit.passed and hit.detail == r"Output matches pattern /(?i)https://app\.azurewebsites/"
    # JavaScript's `$` without `m` is only the very end (Python's would match before the last \n)
    assert not check("output-matches", s, pattern=r"net$").passed
    assert check("output-matches", s, pattern=r"(?m)net$").passed
    assert check("output-not-matches", s, pattern="(?i)fatal error|stack trace").passed
    bad = check("output-matches", s, pattern="(unclosed")
    assert not bad.passed and bad.detail.startswith("Invalid regex pattern: (unclosed. Error: Invalid regular")


def test_transcript_reads_every_answer_or_the_selected_turn() -> None:
    s = session(output="Done.", turns=[ConversationTurn(user="a", output="Which region?"),
                                       ConversationTurn(user="b", output="Done.")])
    asked = check("transcript-contains", s, substring="which REGION")
    assert asked.passed and asked.detail == "'which REGION' found in turn 0"
    assert not check("transcript-matches", s, turn=1, pattern="region").passed
    assert check("transcript-matches", s, turn=1, pattern="region", negate=True).passed
    late = check("transcript-matches", s, turn=2, pattern="x")
    assert not late.passed and late.detail == "turn 2 was not reached: the session had 2 turn(s)"
    assert check("output-contains", s, turn=0, substring="region").passed


# --- files ---


def test_globs_follow_node_glob_with_dotfiles() -> None:
    def matches(glob: str, path: str) -> bool:
        return glob_regex(glob).match(path) is not None

    assert matches("src/**/*.ts", "src/a.ts") and matches("src/**/*.ts", "src/x/y/a.ts")
    assert not matches("src/*.ts", "src/x/a.ts") and not matches("*.ts", "src/a.ts")
    assert matches("output/*.{json,txt}", "output/r.txt") and not matches("output/*.{json,txt}", "output/r.md")
    assert matches("*", ".env") and matches("**", "a/.hidden/b") and matches("./go.mod", "go.mod")
    assert matches("file?.[!c]s", "file1.js") and not matches("file?.[!c]s", "file1.cs")
    assert matches("v{1..3}.md", "v2.md") and not matches("v{1..3}.md", "v4.md")


def test_file_exists_names_what_it_found() -> None:
    files: dict[str, str | None] = {"src/app/main.go": "package main", "go.mod": "module x"}
    found = check("file-exists", session(), files, path="**/*.go")
    assert found.passed and found.detail == "Files matching '**/*.go' found: src/app/main.go"
    assert check("file-exists", session(), files, path="src/app").passed  # a folder matches too
    gone = check("file-not-exists", session(), files, path="function.json")
    assert gone.passed and gone.detail == "No files matching 'function.json' found"


def test_file_contains_is_case_sensitive_unlike_output_contains() -> None:
    files: dict[str, str | None] = {"a/notes.md": "Hello World", "b/notes.md": "other", "img.png": None}
    assert not check("file-contains", session(), files, path="**/notes.md", value="hello world").passed
    found = check("file-contains", session(), files, path="**/notes.md", value="Hello")
    assert found.passed and found.detail == "'Hello' found in a/notes.md"
    missing = check("file-contains", session(), files, path="*.txt", value="x")
    assert not missing.passed and missing.detail == "No files matching '*.txt' found"
    assert not check("file-not-contains", session(), files, path="*.txt", value="x").passed
    assert check("file-not-contains", session(), files, path="**/notes.md", value="TODO").passed
    assert not check("file-not-contains", session(), files, path="**/notes.md", value="other").passed
    # a file whose content the record does not hold cannot show a negated grader right
    unread = check("file-not-contains", session(), files, path="*.png", value="x")
    assert not unread.passed and "not read (stored only as sha256 + size" in unread.detail


def test_file_matches_uses_the_javascript_regex() -> None:
    files: dict[str, str | None] = {"go.mod": "module example.com/x\n\ngo 1.22\n"}
    assert check("file-matches", session(), files, path="go.mod", pattern=r"(?m)^go 1\.\d+$").passed
    assert check("file-not-matches", session(), files, path="go.mod", pattern="replace").passed
    bad = check("file-matches", session(), files, path="go.mod", pattern="[")
    assert not bad.passed and bad.detail.startswith("Invalid regex pattern: [")


def test_diff_graders_read_the_runs_changes() -> None:
    s = session(files=[FileChange(path="new.py", status="created", text="print('TODO: x')\n"),
                       FileChange(path="old.py", status="deleted")])
    text = diff_text(RunInputs(s))
    assert "+++ b/new.py\n@@ -0,0 +1 @@\n+print('TODO: x')" in text and "+++ /dev/null" in text
    assert check("diff-contains", s, substring="todo").passed
    assert not check("diff-not-contains", s, pattern=r"TODO:\s").passed
    empty = check("diff-empty", s)
    assert not empty.passed and empty.detail == "2 file(s) changed: new.py, old.py"
    assert check("diff-empty", session()).passed


# --- the session ---


def test_completed_needs_output_no_error_and_an_ended_turn() -> None:
    assert check("completed", session(output="ok")).detail == "Agent completed"
    quiet = check("completed", session(output="  "))
    assert not quiet.passed and quiet.detail == "Agent produced no output"
    failed = check("completed", session(output="x", is_error=True, error="API error 500"))
    assert not failed.passed and failed.detail == "1 error event(s) in trajectory: API error 500"
    killed = check("completed", session(output="x", timed_out=True))
    assert killed.detail.startswith("No turn_end events found — session may have crashed mid-turn")
    assert check("exit-success", session(output="x", is_error=True)).passed
    assert not check("exit-success", session()).passed


def test_metric_thresholds_pass_at_or_under_max() -> None:
    calls = [ToolCall(name="bash", input={"command": "ls"}), ToolCall(name="view", input={"path": "a"}),
             ToolCall(name="bash", input={"command": "pwd"})]
    s = session(output="x", tool_calls=calls, num_turns=4, duration_seconds=95.0,
                usage=Usage(input_tokens=900, output_tokens=100, cache_read_input_tokens=10_000))
    assert check("tool-call-count", s, max=3).passed and not check("tool-call-count", s, max=2).passed
    only = check("tool-call-count", s, max=1, tools="^bash$")
    assert not only.passed and only.detail == "2 tool call(s) (max 1)"
    assert check("turn-count", s, max=4).passed and not check("turn-count", s, max=3).passed
    assert check("token-budget", s, max=1000).passed and not check("token-budget", s, max=999).passed
    assert check("error-count", s, max=0).passed and not check("error-count", session(is_error=True), max=0).passed
    assert check("wall-time", s, max="2m").passed and not check("wall-time", s, max="90s").passed
    unknown = check("token-budget", session(), max=5)
    assert not unknown.scored and "reported no token usage" in unknown.detail


def test_durations_need_a_unit() -> None:
    assert [parse_duration(t) for t in ("500ms", "30s", "2m", "1h", "1.5s")] == [0.5, 30, 120, 3600, 1.5]
    for bad in ("30", "5 minutes", ""):
        with pytest.raises(ValueError, match="a duration needs a unit: 30s, 5m, 1h, 500ms"):
            parse_duration(bad)


# --- tool calls, skills ---

CLAUDE_CALLS = [
    ToolCall(name="Read", input={"file_path": "/w/host.json"}),
    ToolCall(name="Bash", input={"command": "func init --worker-runtime go"}, result="Writing go.mod"),
    ToolCall(name="Write", input={"file_path": "/w/main.go", "content": "package main"}),
    ToolCall(name="Bash", input={"command": "azd up --no-prompt"}),
]


def test_tool_calls_match_copilot_names_on_another_engine() -> None:
    s = session("claude-code", tool_calls=CLAUDE_CALLS)
    ok = check("tool-calls", s, required=[{"name": "^(bash|powershell)$", "command": r"\bfunc\s+init\b"},
                                          {"name": "^create$", "path": r"main\.go$"}])
    assert ok.passed, ok.detail
    assert check("tool-calls", s, required=["ash"]).passed  # unanchored, and Claude Code's own name
    assert check("tool-calls", s, required=[{"name": "Bash", "min_count": 2}]).passed
    few = check("tool-calls", s, required=[{"name": "^bash$", "min_count": 3}])
    assert not few.passed and few.detail == "required /^bash$/ called 2x (min 3)"
    assert check("tool-calls", s, required=[{"name": "bash", "result": "go\\.mod"}]).passed
    assert check("tool-calls", s, required=[{"name": "create", "args": {"content": "^package"}}]).passed
    assert check("tool-calls", s, required=[{"name": ".", "pattern": '"file_path":"/w/host'}]).passed
    assert not check("tool-calls", s, required=[{"name": "^bash$", "command": "(?i)AZD DOWN"}]).passed
    mcp = session("claude-code", tool_calls=[ToolCall(name="mcp__azure-sdk-mcp__azsdk_release_sdk")])
    assert check("tool-calls", mcp, required=["^azure-sdk-mcp-azsdk_release_sdk$"]).passed  # Copilot's name


def test_tool_calls_disallowed_and_sequence() -> None:
    s = session("claude-code", tool_calls=CLAUDE_CALLS)
    bad = check("tool-calls", s, disallowed=[{"name": "^bash$", "command": r"\bazd\s+(up|down)\b"}])
    assert not bad.passed and bad.detail == r"disallowed /^bash$/ (command /\bazd\s+(up|down)\b/) called 1x"
    assert check("tool-calls", s, sequence=["^view$", "^bash$", "^create$"]).passed
    late = check("tool-calls", s, sequence=["^create$", {"name": "^bash$", "command": "func"}])
    assert not late.passed and "no /^bash$/ (command /func/) after the earlier entries" in late.detail
    steps = check("tool-calls", s, required=[{"name": "bash", "at_step": 0}])
    assert not steps.scored and steps.detail.startswith("not graded: tool-calls at_step")


def test_skill_invocation_compares_exact_names() -> None:
    s = session("claude-code", tool_calls=[ToolCall(name="Skill", input={"skill": "azure:azure-functions-doctor"}),
                                           ToolCall(name="Read", input={"file_path": ".claude/skills/pdf/SKILL.md"})])
    assert check("skill-invocation", s, required=["azure-functions-doctor", "pdf"]).passed
    assert check("skill-invocation", s, required=["azure:azure-functions-doctor"]).passed
    assert not check("skill-invocation", s, required=["azure-functions"]).passed  # no prefix match
    found = check("skill-invocation", s, disallowed=["pdf"])
    assert not found.passed and found.detail.startswith("disallowed skill(s) activated: pdf")
    with pytest.raises(ValueError, match="A skill cannot appear in both lists: pdf"):
        check("skill-invocation", s, required=["pdf"], disallowed=["pdf"])
    run = RunInputs(s, engine="claude-code")
    both = grader("skill-invocation", required=["pdf"], disallowed=["pdf"])
    thrown = grade_run([both], run, grade=grade)[0]  # through plugin_eval, as a throwing grader fails
    assert not thrown.passed and thrown.detail.startswith("grader threw: A skill cannot appear in both lists")


# --- commands ---


BEFORE = "hello\nworld\n" + "filler\n" * 4 + "TODO old\n"


@pytest.fixture
def finished(tmp_path: Path) -> RunInputs:
    pkg = write_package(tmp_path / "pkg", [], files={"evals/data.txt": BEFORE})
    case = Case.model_validate({"name": "v", "input": {"prompt": "Fix data.txt.", "files": ["data.txt"]},
                                "judge": {"criteria": "c"}})
    s = session(output="Fixed.", tool_calls=[ToolCall(name="edit", input={"path": "data.txt"})], files=[
        FileChange(path="data.txt", status="modified", text=BEFORE.replace("world", "there")),
        FileChange(path="sub/out.txt", status="created", text="done\n")])
    return RunInputs(s, engine="copilot", finished=FinishedWorkspace(read_package(pkg), case, s),
                     command_env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})


def test_the_diff_knows_the_cases_own_files_before_the_run(finished: RunInputs) -> None:
    text = diff_text(finished)
    assert "-world\n+there" in text and "TODO" not in text  # more than 3 lines from the change
    assert grade(grader("diff-not-contains", substring="todo"), finished).passed


def test_run_command_in_a_copy_of_the_finished_workspace(finished: RunInputs) -> None:
    ok = grade(grader("run-command", command="cat data.txt sub/out.txt", stdout_contains=["there", "done"],
                      stdout_matches="(?m)^hello$", stdout_not_matches="world", env={"X": "1"}), finished)
    assert ok.passed and ok.detail == "exit code 0 (expected 0); every check held", ok.detail
    failed = grade(grader("run-command", command="ls", args=["missing"], expected_exit_code=0,
                          stderr_contains="nope", sub_path="sub"), finished)
    assert not failed.passed and failed.detail.startswith("exit code 2 (expected 0); stderr lacks 'nope'")
    out = grade(grader("run-command", command="true", sub_path="../.."), finished)
    assert not out.passed and out.detail == "sub_path '../..' leaves the workspace"
    slow = grade(grader("run-command", command="sleep 5", timeout="200ms"), finished)
    assert not slow.passed and slow.detail.startswith("timed out after 0.2s")


PROGRAM = """
import json, os, sys
given = json.load(open(os.environ["EVALUATE_GRADER_INPUT"]))
root = os.environ["EVALUATE_WORKSPACE"]
ok = open(os.path.join(root, "data.txt")).read().startswith("hello") and given["trajectory"]["output"] == "Fixed."
calls = [e for e in given["trajectory"]["events"] if e["type"] == "tool_call"]
print(json.dumps({"score": 0.8 if ok else 0.0, "evidence": f"{len(calls)} call(s); {given['config']['note']}; "
                  f"{given['stimulus']['prompt']}; cwd {os.path.relpath(os.getcwd(), root)}"}))
"""


def test_program_reads_its_input_and_prints_a_grader_result(finished: RunInputs) -> None:
    result = grade(grader("program", program=sys.executable, args=["-c", PROGRAM], note="n", sub_path="sub"),
                   finished)
    assert (result.passed, result.score) == (True, 0.8)
    assert result.detail == "1 call(s); n; Fix data.txt.; cwd sub"
    quiet = grade(grader("program", program="exit 3", shell=True), finished)
    assert (quiet.passed, quiet.score, quiet.detail) == (False, 0.0, "exit code 3")
    wide = grade(grader("program", program="echo '{\"score\": 1.5}'", shell=True), finished)
    assert not wide.passed and wide.detail == "the program's score must be a number in [0, 1], not 1.5"
    with pytest.raises(ValueError, match="must not set evaluate_workspace"):
        grade(grader("program", program="true", env={"evaluate_workspace": "/"}), finished)


# --- judges ---


def judge(*replies: str) -> tuple[Callable[[Any], str], list[str]]:
    """A judge answering `replies` in turn, and the prompts it was asked."""
    asked: list[str] = []
    left = list(replies)

    def ask(prompt: Any) -> str:
        asked.append(prompt)
        return left.pop(0)

    return ask, asked


JUDGED = session(output="Deployed the app.", tool_calls=[ToolCall(name="bash", input={"command": "azd up"})])


def test_prompt_judge_on_a_scale_and_binary() -> None:
    ask, asked = judge("Good work overall.\n**SCORE:** 4")
    prompt = grader("prompt", rubric=("The app is deployed",), prompt="Be strict.", model="gpt-x")
    result = grade(prompt, RunInputs(JUDGED, ask=ask))
    assert (result.passed, result.score) == (True, 0.75)
    assert result.detail == ("judge score 4/5 (0.75 ≥ threshold 0.5) (config model gpt-x not used: graded by "
                             "this run's judge model)")
    assert "- The app is deployed" in asked[0] and "Be strict." in asked[0] and '1. bash {"command":"azd up"}' in asked[0]
    assert asked[0].endswith("SCORE: <a whole number from 1 to 5>")
    assert judge_prompt(prompt, RunInputs(JUDGED), "scale_1_5") == asked[0]  # the same text every time
    ask, _ = judge("It did not deploy.\nSCORE: FAIL")
    binary = grade(grader("prompt", scoring="binary"), RunInputs(JUDGED, ask=ask))
    assert (binary.passed, binary.score, binary.detail) == (False, 0.0, "judge score FAIL (0.00 < threshold 0.5)")
    ask, _ = judge("SCORE: 3")
    assert not grade(grader("prompt", scoring="scale_1_10", threshold=0.3), RunInputs(JUDGED, ask=ask)).passed
    ask, _ = judge("I think it is fine.")
    unread = grade(grader("prompt"), RunInputs(JUDGED, ask=ask))
    assert not unread.passed and unread.detail.startswith("the judge's reply has no 'SCORE: …' line")
    ask, _ = judge("SCORE: 7")
    assert "is not a number from 1 to 5" in grade(grader("prompt"), RunInputs(JUDGED, ask=ask)).detail


def test_panel_aggregates_its_judges() -> None:
    def panel(aggregation: str) -> Check:
        ask, _ = judge("SCORE: 5", "SCORE: 1", "SCORE: 3")
        together: list[int] = []

        def votes(asking: list[Callable[[], str]]) -> list[str]:
            together.append(len(asking))
            return [call() for call in asking]

        result = grade(grader("panel", models=["a", "b", "c"], aggregation=aggregation),
                       RunInputs(JUDGED, ask=ask, votes=votes))
        assert together == [3]
        return result

    mean = panel("mean")
    assert (mean.passed, mean.score) == (True, 0.5) and mean.votes == (True, False, True)
    assert mean.detail.startswith("panel of 3 (each asked of this run's judge model): a: 5/5; b: 1/5; c: 3/5")
    assert (panel("median").score, panel("min").passed) == (0.5, False)
    majority = panel("majority")
    assert majority.passed and majority.score == pytest.approx(2 / 3)
    ask, _ = judge("SCORE: 2", "no idea")
    one = grade(grader("panel", models=["a", "b"]), RunInputs(JUDGED, ask=ask))
    assert one.score == 0.25 and "b: the judge's reply has no 'SCORE: …' line" in one.detail


def test_pairwise_is_shown_not_graded_and_other_types_are_refused() -> None:
    shown = check("pairwise", session())
    assert (shown.passed, shown.scored) == (True, False)
    assert shown.detail == "pairwise: Vally runs it only in vally compare; not graded by vally eval"
    odd = grader("completed").model_copy(update={"type": "system-event"})  # a plugin's type
    with pytest.raises(ValueError, match="'system-event' is not a Vally grader type"):
        grade(odd, RunInputs(session()))
