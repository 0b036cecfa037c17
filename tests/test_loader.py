"""The formats: valid packages load; every bad input names the file, the field and the line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from aam_eval_action.errors import ConfigError, UnsupportedEngineError
from aam_eval_action.loader import load_package
from aam_eval_action.testing.packages import simple_case, write_package

from conftest import EXAMPLE, aam_eval


def test_example_package_loads() -> None:
    loaded = load_package(EXAMPLE)
    assert [c.case.name for c in loaded.cases] == sorted(c.case.name for c in loaded.cases)
    assert not loaded.errors
    hook = next(c for c in loaded.cases if c.case.name == "hook-blocks-env-write")
    assert hook.case.expected.agent_blocked is True
    assert hook.case.input.workspace_files == ["src/app.py"]


def _bad(tmp_path: Path, text: str) -> str:
    pkg = write_package(tmp_path / "pkg", [], files={"evals/fixtures/a.txt": "a"})
    (pkg / "evals/cases/bad.yaml").write_text(text)
    loaded = load_package(pkg)
    assert not loaded.cases
    assert len(loaded.errors) == 1
    return str(loaded.errors[0])


CASE_OK = """\
name: good
input:
  prompt: hi
judge:
  criteria: ok
"""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (CASE_OK.replace("name: good", "name: Bad_Name"), "evals/cases/bad.yaml:1: name: 'Bad_Name' is not a valid case name"),
        (CASE_OK + "extra-key: 1\n", "evals/cases/bad.yaml:6: extra-key: unknown key"),
        (CASE_OK.replace("  prompt: hi", "  prompt: hi\n  not_contains: [x]"), "evals/cases/bad.yaml:4: input.not_contains: unknown key"),
        (CASE_OK + "expected:\n  contains: yes\n", "evals/cases/bad.yaml:7: expected.contains: Input should be a valid list"),
        (CASE_OK + "expected:\n  files-created:\n    - ../escape.txt\n", "evals/cases/bad.yaml:8: expected.files-created[0]: '../escape.txt' escapes its root"),
        (CASE_OK + "expected:\n  files-created:\n    - /etc/passwd\n", "evals/cases/bad.yaml:8: expected.files-created[0]: '/etc/passwd' must be a relative path"),
        (CASE_OK.replace("  prompt: hi", "  prompt: hi\n  files: [fixtures/missing.txt]"), "evals/cases/bad.yaml:4: input.files[0]: fixture 'fixtures/missing.txt' not found in evals/"),
        (CASE_OK.replace("  prompt: hi", "  prompt: hi\n  workspace-files: ['../../x']"), "input.workspace-files[0]: '../../x' escapes its root"),
        (CASE_OK.replace("judge:\n  criteria: ok\n", ""), "evals/cases/bad.yaml:1: judge: required field is missing"),
        (CASE_OK + "target: plugin:x\n", "evals/cases/bad.yaml:6: target: 'plugin:x' is not a valid target"),
        (CASE_OK + "name: again\n", "evals/cases/bad.yaml:6: name: duplicate key"),
        ("name: [unclosed\n", "evals/cases/bad.yaml:2: invalid YAML"),
        ("", "evals/cases/bad.yaml:1: empty case file"),
        ("- just a string\n", "evals/cases/bad.yaml:1: [0]: this is a string 'just a string', but a case is a mapping"),
    ],
)
def test_bad_case_files_name_file_field_and_line(tmp_path: Path, text: str, expected: str) -> None:
    assert expected in _bad(tmp_path, text)


def test_symlinked_fixture_escaping_the_package_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "outside.txt"
    secret.write_text("secret")
    pkg = write_package(tmp_path / "pkg", [simple_case("c", input={"prompt": "p", "files": ["fixtures/link.txt"]})])
    (pkg / "evals/fixtures").mkdir()
    os.symlink(secret, pkg / "evals/fixtures/link.txt")
    loaded = load_package(pkg)
    assert "input.files[0]: 'fixtures/link.txt' is a symlink that escapes evals/" in str(loaded.errors[0])


def test_duplicate_names_across_files(tmp_path: Path) -> None:
    pkg = write_package(tmp_path / "pkg", [simple_case("same"), simple_case("same")])
    loaded = load_package(pkg)
    assert [c.case.name for c in loaded.cases] == ["same"]
    assert "duplicate case name 'same' (first defined at evals/cases/0000-same.yaml:1)" in str(loaded.errors[0])


def test_several_cases_in_one_file_as_a_list(tmp_path: Path) -> None:
    pkg = write_package(tmp_path / "pkg", [])
    (pkg / "evals/cases/many.yaml").write_text(f"- {json.dumps(simple_case('a'))}\n- {json.dumps(simple_case('b'))}\n")
    assert [c.case.name for c in load_package(pkg).cases] == ["a", "b"]


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"version": 2, "engine": "codex"}, "evals/eval-config.json:2: version: Input should be 1"),
        ({"version": 1, "engine": "gemini"}, "evals/eval-config.json:3: engine: unknown engine 'gemini'"),
        ({"version": 1, "engine": "codex", "timout": 3}, "evals/eval-config.json:4: timout: unknown key"),
        ({"version": 1, "engine": "codex", "sandbox": {"writable-paths": ["../up"]}}, "sandbox.writable-paths[0]: '../up' escapes its root"),
    ],
)
def test_bad_eval_config(tmp_path: Path, config: dict[str, object], expected: str) -> None:
    pkg = write_package(tmp_path / "pkg", [simple_case("a")])
    (pkg / "evals/eval-config.json").write_text(json.dumps(config, indent=2))
    with pytest.raises(ConfigError) as info:
        load_package(pkg)
    assert expected in str(info.value)


def test_invalid_json_config_names_the_line(tmp_path: Path) -> None:
    pkg = write_package(tmp_path / "pkg", [simple_case("a")])
    (pkg / "evals/eval-config.json").write_text('{\n  "version": 1,\n  "engine": "codex",\n}\n')
    with pytest.raises(ConfigError, match=r"evals/eval-config.json:4: invalid JSON"):
        load_package(pkg)


def test_check_command_exit_codes(tmp_path: Path) -> None:
    ok = aam_eval("check", "--package", str(EXAMPLE))
    assert ok.code == 0, ok.err
    assert "7 valid case(s), 0 error(s)" in ok.out
    pkg = write_package(tmp_path / "pkg", [simple_case("good")])
    (pkg / "evals/cases/bad.yaml").write_text("name: x\n")
    bad = aam_eval("check", "--package", str(pkg))
    assert bad.code == 2
    assert "evals/cases/bad.yaml:1: input: required field is missing" in bad.err
    missing = aam_eval("check", "--package", str(tmp_path / "nowhere"))
    assert missing.code == 2 and "not a folder" in missing.err


def test_the_reserved_cursor_engine_fails_clearly_saying_why(tmp_path: Path) -> None:
    pkg = write_package(tmp_path / "pkg", [simple_case("a")], config={"engine": "cursor"})
    result = aam_eval("run", "--package", str(pkg), "--replay")
    assert result.code == 2
    assert "unsupported engine 'cursor'" in result.err
    assert "not on a package registry" in result.err and "your own endpoint" in result.err
    assert issubclass(UnsupportedEngineError, ConfigError)


def test_bad_case_in_run_is_reported_and_others_still_run(tmp_path: Path) -> None:
    pkg = write_package(tmp_path / "pkg", [simple_case("good")])
    (pkg / "evals/cases/zz-bad.yaml").write_text("name: broken\ninput: {prompt: x}\njudge: {criteria: y}\nbogus: 1\n")
    out = tmp_path / "r.json"
    result = aam_eval("run", "--package", str(pkg), "--replay", "-o", str(out))
    assert result.code == 2  # a bad case file is a usage error, after the other cases ran
    report = json.loads(out.read_text())
    by_name = {c["name"]: c for c in report["cases"]}
    assert "bogus: unknown key" in by_name["broken"]["error"]
    assert "replay miss: no cassette" in by_name["good"]["error"]


def test_target_must_exist_in_the_package(tmp_path: Path) -> None:
    pkg = write_package(tmp_path / "pkg", [simple_case("a", target="skill:missing"), simple_case("b", target="agent:ghost")],
                        files={"skills/real/SKILL.md": "---\nname: real\n---\n"})
    errors = sorted(str(e) for e in load_package(pkg).errors)
    assert errors[0].endswith("target: skill 'missing' not found in skills/ (skills: real); fix the target")
    assert "target: agent 'ghost' not found in agents/" in errors[1]


def test_broken_hooks_json_is_a_config_error(tmp_path: Path) -> None:
    pkg = write_package(tmp_path / "pkg", [simple_case("a")], files={"hooks/hooks.json": '{\n  "hooks": [\n}'})
    with pytest.raises(ConfigError, match=r"hooks/hooks.json:3: invalid JSON"):
        load_package(pkg)


def test_unwritable_report_path_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    result = aam_eval("run", "--package", str(EXAMPLE), "--replay", "-o", str(blocker / "r.json"))
    assert result.code == 2
    assert f"cannot write the report to {blocker / 'r.json'}" in result.err
