"""JSON Schema from the models, shard merging and JUnit XML."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
import yaml

from aam_eval_action.commands.schema import FILES, render
from aam_eval_action.testing.packages import record_sessions, simple_case, write_package

from conftest import EXAMPLE, ROOT, aam_eval


@pytest.mark.parametrize("kind", list(FILES))
def test_shipped_schemas_are_up_to_date(kind: str) -> None:
    assert (ROOT / "schemas" / FILES[kind]).read_text() == render(kind), "run: aam-eval schema -o schemas"


def test_case_schema_accepts_the_example_and_knows_hyphenated_keys() -> None:
    schema = json.loads(render("case"))
    assert "not-contains" in schema["$defs"]["Expected"]["properties"]
    assert schema["$defs"]["Expected"]["properties"]["agent-blocked"]["description"]
    for path in (EXAMPLE / "evals/cases").glob("*.yaml"):
        data = yaml.safe_load(path.read_text())
        assert set(data) <= set(schema["properties"])


def _shard_reports(tmp_path: Path) -> tuple[Path, list[Path]]:
    names = [f"case-{i:02d}" for i in range(7)]
    pkg = write_package(tmp_path / "pkg", [simple_case(n, expected={"contains": ["ok"]}) for n in names])
    record_sessions(pkg, {n: ("ok" if i % 2 else "nope") + f" for {n}" for i, n in enumerate(names)})
    paths = []
    for i in (1, 2, 3):
        out = tmp_path / f"shard-{i}.json"
        aam_eval("run", "--package", str(pkg), "--replay", "--shard", f"{i}/3", "-o", str(out))
        paths.append(out)
    return pkg, paths


def test_shards_split_the_cases_and_merge_back_into_one_run(tmp_path: Path) -> None:
    pkg, paths = _shard_reports(tmp_path)
    shard_cases = [[c["name"] for c in json.loads(p.read_text())["cases"]] for p in paths]
    assert sorted(n for shard in shard_cases for n in shard) == [f"case-{i:02d}" for i in range(7)]
    assert all(len(s) in (2, 3) for s in shard_cases)
    whole = tmp_path / "whole.json"
    aam_eval("run", "--package", str(pkg), "--replay", "-o", str(whole))
    merged = tmp_path / "merged.json"
    result = aam_eval("merge", *map(str, paths), "-o", str(merged))
    assert result.code == 1  # some cases fail
    a, b = json.loads(whole.read_text()), json.loads(merged.read_text())
    assert [(c["name"], c["verdict"]) for c in a["cases"]] == [(c["name"], c["verdict"]) for c in b["cases"]]
    assert {k: a["summary"][k] for k in ("total", "passed", "failed", "pass_rate")} == {
        k: b["summary"][k] for k in ("total", "passed", "failed", "pass_rate")}
    diff = aam_eval("diff", str(whole), str(merged), "--format", "json")
    assert json.loads(diff.out)["regressions"] == 0


def test_merging_overlapping_shards_is_an_error(tmp_path: Path) -> None:
    _, paths = _shard_reports(tmp_path)
    result = aam_eval("merge", str(paths[0]), str(paths[0]))
    assert result.code == 2 and "is in shard reports 1 and 2" in result.err


def test_junit_has_one_testcase_per_case_with_failures(tmp_path: Path) -> None:
    names = ["alpha", "beta"]
    pkg = write_package(tmp_path / "pkg", [simple_case(n, expected={"contains": ["ok"]}) for n in names])
    record_sessions(pkg, {"alpha": "nope"})
    junit = tmp_path / "junit.xml"
    aam_eval("run", "--package", str(pkg), "--replay", "--junit", str(junit))
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "2"
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    failure = cases["alpha"].find("failure")
    assert failure is not None and "contains: FAIL" in (failure.text or "")
    assert cases["beta"].find("error") is not None  # no cassette: an ERROR
    assert cases["alpha"].get("file") == "evals/cases/0000-alpha.yaml"


def test_shards_balance_by_recorded_duration() -> None:
    from aam_eval_action.pipeline.select import shard_of

    durations = {"slow": 100.0, "a": 10.0, "b": 10.0, "c": 10.0, "d": 10.0}
    names = list(durations)
    shards = [shard_of(names, (i, 2), durations) for i in (1, 2)]
    assert shards == [["slow"], ["a", "b", "c", "d"]]
    by_name = [shard_of(names, (i, 2), {}) for i in (1, 2)]
    assert sorted(by_name[0] + by_name[1]) == sorted(names)
    assert abs(len(by_name[0]) - len(by_name[1])) <= 1


def test_cli_start_up_imports_no_heavy_sdk() -> None:
    import subprocess
    import sys

    code = (
        "import sys, aam_eval_action.main, aam_eval_action.commands.run, aam_eval_action.pipeline.scheduler;"
        "print(sorted(m for m in ('anthropic', 'openai', 'github', 'vcr', 'jinja2', 'rich') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
