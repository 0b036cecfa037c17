"""--repeat: every attempt recorded, pass fraction, flaky when attempts disagree, min-pass decides;
replay replays each attempt; the diff labels a regression on a base-flaky case as flaky."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aam_eval_action.engines.base import get_engine
from aam_eval_action.testing.model_server import ModelServer
from aam_eval_action.testing.packages import simple_case, write_package

from conftest import aam_eval

pytestmark = pytest.mark.cli


def _package(tmp_path: Path, **config: object) -> Path:
    return write_package(tmp_path / "pkg", [simple_case("wobbly"), simple_case("steady")], config=dict(config))


SCENARIOS = [
    {"match": "task for wobbly.", "agent": [{"text": "did the wobbly task"}],
     "judge": [{"result": "PASS", "reason": "good"}, {"result": "FAIL", "reason": "bad"},
               {"result": "PASS", "reason": "good again"}]},
    {"match": "task for steady.", "agent": [{"text": "did the steady task"}],
     "judge": {"result": "PASS", "reason": "always good"}},
]


@pytest.mark.parametrize(("min_pass", "verdict"), [(None, "FAIL"), (2, "PASS")])
def test_repeat_records_attempts_and_flags_flaky(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, min_pass: int | None, verdict: str
) -> None:
    reason = get_engine("claude-code").available()
    if reason:
        pytest.skip(reason)
    pkg = _package(tmp_path, **({"min-pass": min_pass} if min_pass else {}))
    with ModelServer(SCENARIOS) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", server.api_key)
        aam_eval("run", "--package", str(pkg), "--record", "--no-self-check", "--repeat", "3", "-o", str(tmp_path / "live.json"))
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    live = {c["name"]: c for c in json.loads((tmp_path / "live.json").read_text())["cases"]}
    wobbly = live["wobbly"]
    assert [a["verdict"] for a in wobbly["attempts"]] == ["PASS", "FAIL", "PASS"]
    assert wobbly["flaky"] is True and wobbly["verdict"] == verdict
    assert live["steady"]["flaky"] is False and live["steady"]["verdict"] == "PASS"
    report = json.loads((tmp_path / "live.json").read_text())
    assert report["summary"]["flaky"] == 1

    aam_eval("run", "--package", str(pkg), "--replay", "--repeat", "3", "-o", str(tmp_path / "replay.json"))
    replay = {c["name"]: c for c in json.loads((tmp_path / "replay.json").read_text())["cases"]}
    assert [a["verdict"] for a in replay["wobbly"]["attempts"]] == ["PASS", "FAIL", "PASS"]
    assert replay["wobbly"]["verdict"] == verdict and replay["wobbly"]["replayed"] is True


def test_regression_on_a_case_flaky_on_base_is_labelled_flaky(tmp_path: Path) -> None:
    from aam_eval_action.report import to_json

    from support.reports import case, report

    base = report([case("wobbly", flaky=True), case("steady")])
    head = report([case("wobbly", "FAIL"), case("steady")])
    (tmp_path / "b.json").write_text(to_json(base))
    (tmp_path / "h.json").write_text(to_json(head))
    result = aam_eval("diff", str(tmp_path / "b.json"), str(tmp_path / "h.json"), "--format", "json")
    data = json.loads(result.out)
    assert data["regressions"] == 0 and data["flaky_regressions"] == 1
