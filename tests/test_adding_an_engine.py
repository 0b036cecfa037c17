"""Adding an engine, as docs/architecture.md says: a fifth engine (tests/support/stub_engine: an
adapter, a listing rule and a registry entry, no line of the package changed) is registered,
`check` and `budget` list its skills by its own rule, and a scripted trigger case runs through
its CLI against the scripted model server: the skill it routes to fires, the session is
recorded, and a replay with no CLI and no key gives the same verdict."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from aam_eval_action.engines import registry

from conftest import aam_eval, scripted_model
from support.stub_engine import INFO

SKILLS = {"csv-tools": "Cleans and merges CSV files: dedupe rows, join two files on a column.",
          "pdf-tools": "Fills and splits PDF forms."}


@pytest.fixture
def stub_engine() -> Iterator[None]:
    registry.register(INFO)
    try:
        yield
    finally:
        registry.ENGINES.pop(INFO.name, None)


def _package(root: Path) -> Path:
    for name, about in SKILLS.items():
        (root / "skills" / name).mkdir(parents=True)
        (root / "skills" / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: \"{about}\"\n---\n"
                                                         f"# {name}\n\nDo it well.\n")
    (root / "evals/cases").mkdir(parents=True)
    (root / "evals/eval-config.json").write_text(json.dumps({"version": 1, "engine": "stub-cli"}))
    (root / "evals/cases/dedupe.yaml").write_text(
        "name: dedupe\ntarget: skill:csv-tools\ninput:\n  prompt: Dedupe the rows of orders.csv and join it "
        "with customers.csv on the id column\nexpected:\n  skill-triggered: true\n")
    return root


def test_an_engine_added_by_registering_it_lists_skills_and_runs_a_case(stub_engine: None, tmp_path: Path) -> None:
    pkg = _package(tmp_path / "pkg")
    listed = aam_eval("budget", "--package", str(pkg), "--engine", "stub-cli", "--json")
    assert listed.code == 0, listed.err
    [view] = json.loads(listed.out)
    assert view["engine"] == "stub-cli" and [(s["name"], s["shown"]) for s in view["skills"]] == [
        ("csv-tools", "full"), ("pdf-tools", "full")]
    checked = aam_eval("check", "--package", str(pkg))
    assert checked.code == 0, checked.out + checked.err
    route = [{"match": "*", "agent": [{"route": {}}, {"text": "Done."}]}]
    with scripted_model(route, {"ANTHROPIC_API_KEY": "sk-ant-test-stub-engine"}) as server:
        ran = aam_eval("run", "--package", str(pkg), "--record", "--no-self-check", "-o", str(tmp_path / "live.json"))
        asked = [r for r in server.requests if r.body.get("tools")]
    assert ran.code == 0, ran.out + ran.err
    report = json.loads((tmp_path / "live.json").read_text())
    [case] = report["cases"]
    assert (case["verdict"], case["routed_to"], report["agent"]["runtime"]) == ("PASS", "csv-tools", "stub-cli")
    assert asked and "- csv-tools: Cleans and merges CSV files" in json.dumps(asked[0].body)
    replayed = aam_eval("run", "--package", str(pkg), "--replay", "--no-rerun", "-o", str(tmp_path / "replay.json"))
    assert replayed.code == 0, replayed.out + replayed.err
    [again] = json.loads((tmp_path / "replay.json").read_text())["cases"]
    assert (again["verdict"], again["routed_to"], again["replay_kind"]) == ("PASS", "csv-tools", "snapshot")
