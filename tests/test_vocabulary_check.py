"""`aam-eval check` on the issue-11 keys: each wrong type and bad value names the file, the
field and the line; the engine-neutral tool mapping and the finished-workspace view."""

from __future__ import annotations

from pathlib import Path

import pytest

from aam_eval_action.layouts.detect import read_package
from aam_eval_action.pipeline.checks import CheckInputs, run_checks
from aam_eval_action.pipeline.finished import FinishedWorkspace
from aam_eval_action.session import FileChange, Session, ToolCall
from aam_eval_action.spec import Case, Sandbox
from aam_eval_action.testing.packages import write_package
from aam_eval_action.tools import neutral_names, skill_triggered

from conftest import aam_eval

HEAD = """\
name: good
target: skill:greeter
input:
  prompt: hi
"""
JUDGE = "judge:\n  criteria: ok\n"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("expected:\n  regex: '^x'\n" + JUDGE, ":6: expected.regex: Input should be a valid list"),
        ("expected:\n  regex: ['(unclosed']\n" + JUDGE,
         ":6: expected.regex[0]: '(unclosed' is not a valid regular expression"),
        ("expected:\n  not-regex:\n    - ok\n    - '[a-'\n" + JUDGE,
         ":8: expected.not-regex[1]: '[a-' is not a valid regular expression"),
        ("expected:\n  files-absent: [../x]\n" + JUDGE, ":6: expected.files-absent[0]: '../x' escapes its root"),
        ("expected:\n  file-contains: [a.txt]\n" + JUDGE, ":6: expected.file-contains: Input should be a valid dictionary"),
        ("expected:\n  file-contains:\n    a.txt: ['/(/']\n" + JUDGE,
         ":7: expected.file-contains.a.txt[0]: '(' is not a valid regular expression"),
        ("expected:\n  tool-called:\n    - tool: browse\n" + JUDGE,
         ":7: expected.tool-called[0].tool: Input should be 'read', 'write', 'edit', 'shell', 'skill', 'search' or 'web'"),
        ("expected:\n  tool-called:\n    - {tool: shell, min: 3, max: 1}\n" + JUDGE,
         ":7: expected.tool-called[0]: min (3) is greater than max (1)"),
        ("expected:\n  tool-called:\n    - {tool: shell, min: many}\n" + JUDGE,
         ":7: expected.tool-called[0].min: Input should be a valid integer"),
        ("expected:\n  tool-order: [read, fly]\n" + JUDGE, ":6: expected.tool-order[1]: Input should be 'read'"),
        ("expected:\n  command: {run: '', timeout: 5}\n" + JUDGE, ":6: expected.command.run: String should have at least 1 character"),
        ("expected:\n  command: {run: ls, timeout: -1}\n" + JUDGE, ":6: expected.command.timeout: Input should be greater than 0"),
        ("expected:\n  output-json-schema: {type: objekt}\n" + JUDGE,
         ":6: expected.output-json-schema: schema: unknown type 'objekt'"),
        ("expected:\n  output-json-schema: {oneOf: []}\n" + JUDGE,
         ":6: expected.output-json-schema: schema: unsupported keyword 'oneOf'"),
        ("expected:\n  skill-triggered: sometimes\n" + JUDGE, ":6: expected.skill-triggered: Input should be a valid boolean"),
        ("judge:\n  criteria: ok\n  votes: 2\n", ":7: judge.votes: votes must be odd so a majority always exists; use 1 or 3"),
        ("judge:\n  criteria: ok\n  votes: three\n", ":7: judge.votes: Input should be a valid integer"),
        ("judge:\n  criteria: ok\n  votes: 11\n", ":7: judge.votes: Input should be less than or equal to 9"),
    ],
)
def test_check_points_at_the_line_of_each_bad_new_key(tmp_path: Path, body: str, expected: str) -> None:
    pkg = write_package(tmp_path / "pkg", [], files={"skills/greeter/SKILL.md": "---\nname: greeter\n---\n"})
    (pkg / "evals/cases/bad.yaml").write_text(HEAD + body)
    result = aam_eval("check", "--package", str(pkg))
    assert result.code == 2
    assert f"evals/cases/bad.yaml{expected}" in result.err, result.err


def test_skill_triggered_needs_a_skill_target(tmp_path: Path) -> None:
    pkg = write_package(tmp_path / "pkg", [])
    (pkg / "evals/cases/bad.yaml").write_text("name: x\ninput:\n  prompt: hi\nexpected:\n  skill-triggered: true\n" + JUDGE)
    result = aam_eval("check", "--package", str(pkg))
    assert "evals/cases/bad.yaml:5: expected.skill-triggered: skill-triggered needs a skill target" in result.err


def test_eval_config_baseline_must_be_a_boolean(tmp_path: Path) -> None:
    pkg = write_package(tmp_path / "pkg", [], config={"baseline": "maybe"})
    result = aam_eval("check", "--package", str(pkg))
    assert result.code == 2
    assert "evals/eval-config.json:5: baseline: Input should be a valid boolean" in result.err


def test_neutral_names_of_each_cli() -> None:
    def names(name: str, **inp: object) -> list[str]:
        return list(neutral_names(ToolCall(name=name, input=dict(inp))))

    assert names("Read", file_path="/w/src/a.py") == ["read"]
    assert names("Read", file_path="/w/.claude/skills/pdf/SKILL.md") == ["read", "skill"]
    assert names("Skill", skill="pdf") == ["skill"]
    assert names("MultiEdit") == ["edit"] and names("Write") == ["write"] and names("Grep") == ["search"]
    assert names("WebFetch") == ["web"] and names("Bash", command="ls") == ["shell"]
    assert names("mcp__srv__tool") == [] and names("TodoWrite") == []
    assert names("command_execution", command="cat .agents/skills/pdf/SKILL.md") == ["shell", "skill"]
    assert names("file_change", changes=[{"path": "a", "kind": "add"}]) == ["write"]
    assert names("file_change", changes=[{"path": "a", "kind": "update"}]) == ["edit"]
    assert names("web_search") == ["web"]
    # Copilot with a GPT model: `apply_patch` writes or edits by its patch, `rg` searches.
    assert names("apply_patch", input="*** Begin Patch\n*** Add File: out/a.md\n+x\n*** End Patch") == ["write"]
    assert names("apply_patch", input="*** Begin Patch\n*** Update File: a.md\n@@\n-x\n+y\n") == ["edit"]
    assert names("rg", pattern="x") == ["search"] and names("view", path="a") == ["read"]
    calls = [ToolCall(name="Skill", input={"skill": "my-plugin:pdf"})]
    assert skill_triggered(calls, "pdf") and not skill_triggered(calls, "docx")


def test_a_hash_only_file_is_named_when_content_checks_and_commands_need_it(tmp_path: Path) -> None:
    pkg = write_package(tmp_path / "pkg", [])
    case = Case.model_validate({
        "name": "bin", "input": {"prompt": "p"}, "judge": {"criteria": "c"},
        "expected": {"file-contains": {"out/img.png": ["PNG"]},
                     "command": "test \"$(head -c 4 out/img.png)\" = PNG1"},
    })
    session = Session(engine="claude-code", model_provider="anthropic", files=[
        FileChange(path="out/img.png", status="created", sha256="0" * 64, size=4)])
    inputs = CheckInputs(FinishedWorkspace(read_package(pkg), case, session), Sandbox(),
                         command_env={"PATH": "/usr/bin:/bin"})
    checks = {c.name: c for c in run_checks(case.expected, session, inputs)}
    assert checks["file_contains"].detail == (
        "out/img.png: stored only as sha256 + size (binary or over 64 KiB), so its content cannot be checked")
    assert not checks["command"].passed
    assert "note: out/img.png was stored only as sha256 + size" in checks["command"].detail
    assert "restored as zero-filled placeholders" in checks["command"].detail


def test_the_command_runs_without_network_when_the_sandbox_has_none(tmp_path: Path) -> None:
    pkg = write_package(tmp_path / "pkg", [])
    case = Case.model_validate({
        "name": "net", "input": {"prompt": "p"}, "judge": {"criteria": "c"},
        "expected": {"command": {"run": "test $(grep -c : /proc/net/dev) -eq 1", "timeout": 10}}})
    session = Session(engine="claude-code", model_provider="anthropic")
    inputs = CheckInputs(FinishedWorkspace(read_package(pkg), case, session), Sandbox(network=False),
                         command_env={"PATH": "/usr/bin:/bin"})
    from aam_eval_action.pipeline.finished import no_network_prefix

    if not no_network_prefix(False):
        pytest.skip("unshare into a network namespace is not permitted here")
    checks = run_checks(case.expected, session, inputs)
    assert checks[0].passed  # only the loopback interface is left


def test_a_recorded_path_escaping_the_workspace_is_never_written(tmp_path: Path) -> None:
    pkg = write_package(tmp_path / "pkg", [])
    case = Case.model_validate({"name": "esc", "input": {"prompt": "p"}, "judge": {"criteria": "c"},
                                "expected": {"command": "test -f ok.txt"}})
    target = tmp_path / "escaped.txt"
    # Built without validation: a cassette refuses such paths when it loads; this is the check's
    # own line of defence behind that.
    hostile = [FileChange(path="ok.txt", status="created", text="x", size=1),
               FileChange.model_construct(path=f"../../../../../../..{target}", status="created",
                                          text="pwned", size=5, sha256=None),
               FileChange.model_construct(path=str(target), status="created", text="pwned", size=5,
                                          sha256=None)]
    session = Session(engine="claude-code", model_provider="anthropic", files=hostile)
    inputs = CheckInputs(FinishedWorkspace(read_package(pkg), case, session), Sandbox(),
                         command_env={"PATH": "/usr/bin:/bin"})
    assert run_checks(case.expected, session, inputs)[0].passed
    assert not target.exists()


def test_baseline_action_input_reaches_the_run() -> None:
    from aam_eval_action.commands.action import _run_args
    from aam_eval_action.github.inputs import ActionInputs

    inputs = ActionInputs.from_env({"INPUT_BASELINE": "true"})
    assert _run_args(inputs, Path("."), "replay", None).overrides.baseline is True
    assert ActionInputs.from_env({}).baseline is None  # empty: eval-config decides
