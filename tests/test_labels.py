"""Human labels: a person's verdict tied to one exact judged output, judge–human agreement, and
`judge-gate`.

The packages here hold real agent cassettes (written by the project's own cassette code) and
judge cassettes recorded through the real anthropic SDK against the scripted model server;
then `aam-eval label` and `aam-eval run --replay` run as a user runs them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from aam_eval_action.diff import diff_reports
from aam_eval_action.labels import agreement, load_labels
from aam_eval_action.render.comment import render_comment
from aam_eval_action.report import load_report
from aam_eval_action.testing.model_server import ModelServer
from aam_eval_action.testing.packages import record_sessions, simple_case, write_package

from conftest import aam_eval

KEY = "sk-ant-CANARY-labels-5d1f"


def test_kappa_and_the_rates_on_a_hand_computed_table() -> None:
    # People: 6 PASS, 4 FAIL. The judge passes 5 of their PASS and 1 of their FAIL.
    rows = [(f"p{i}", "PASS", "PASS") for i in range(5)] + [("p5", "PASS", "FAIL")]
    rows += [(f"f{i}", "FAIL", "FAIL") for i in range(3)] + [("f3", "FAIL", "PASS")]
    found = agreement("judge-x", rows)
    # observed 8/10; chance .6*.6 + .4*.4 = .52; kappa (.8-.52)/(1-.52) = .5833
    assert found.labels == 10 and found.agreement == 0.8
    assert found.kappa == pytest.approx(0.5833, abs=1e-4)
    assert found.true_pass_rate == pytest.approx(5 / 6, abs=1e-4)
    assert found.true_fail_rate == 0.75
    assert found.disagreements == ["p5 (person PASS, judge FAIL)", "f3 (person FAIL, judge PASS)"]
    # Everyone said PASS: agreement is perfect but kappa is undefined, not 1.
    same = agreement("judge-x", [("a", "PASS", "PASS"), ("b", "PASS", "PASS")])
    assert same.agreement == 1.0 and same.kappa is None and same.true_fail_rate is None
    assert agreement("judge-x", []).labels == 0


def _package(tmp_path: Path, judged: dict[str, str], config: dict[str, Any] | None = None) -> Path:
    """Recorded sessions of `judged`'s cases, and their judge cassettes (the judge says PASS or
    FAIL as given), recorded against the scripted server."""
    pkg = write_package(tmp_path / "pkg", [simple_case(name) for name in judged],
                        config={"cassettes": "cassettes", "judge": "claude-sonnet-4-6", **(config or {})})
    record_sessions(pkg, {name: f"done: finished the task for {name}." for name in judged})
    _record_judge(pkg, judged)
    return pkg


def _record_judge(pkg: Path, judged: dict[str, str]) -> None:
    scenarios = [{"match": f"task for {name}.", "judge": {"result": verdict, "reason": f"the judge says {verdict}"}}
                 for name, verdict in judged.items()]
    with pytest.MonkeyPatch.context() as mp, ModelServer(scenarios, api_key=KEY) as server:
        mp.setenv("ANTHROPIC_BASE_URL", server.url)
        mp.setenv("ANTHROPIC_API_KEY", KEY)
        result = aam_eval("run", "--package", str(pkg), "--mode", "auto")
    assert "Traceback" not in result.err, result.err


def _replay(pkg: Path) -> tuple[dict[str, Any], str]:
    out = pkg.parent / "replay.json"
    result = aam_eval("run", "--package", str(pkg), "--replay", "-o", str(out))
    return json.loads(out.read_text()), result.out + result.err


def _label(pkg: Path, case: str, verdict: str, reason: str, *extra: str) -> str:
    result = aam_eval("label", case, "--package", str(pkg), "--verdict", verdict, "--reason", reason,
                      "--by", "alice", *extra)
    assert result.code == 0, result.err
    return result.out


def test_a_label_overrules_a_judge_fail_on_replay_and_goes_stale_with_a_new_output(tmp_path: Path) -> None:
    pkg = _package(tmp_path, {"a": "FAIL", "b": "PASS"})
    before, _ = _replay(pkg)
    assert {c["name"]: c["verdict"] for c in before["cases"]} == {"a": "FAIL", "b": "PASS"}
    said = _label(pkg, "a", "PASS", "The output does finish the task; the judge misread it.")
    assert "labelled a [claude-code · claude-sonnet-4-6] PASS by alice" in said
    stored = load_labels(pkg / "evals/labels.yaml").labels
    assert [(x.case, x.verdict, x.by) for x in stored] == [("a", "PASS", "alice")]
    assert stored[0].output.startswith("sha256:") and stored[0].criteria.startswith("sha256:")

    report, log = _replay(pkg)
    case = next(c for c in report["cases"] if c["name"] == "a")
    assert case["verdict"] == "PASS" and case["judge_verdict"]["result"] == "FAIL"  # the judge's is kept
    assert case["label"]["verdict"] == "PASS" and case["label"]["by"] == "alice" and not case["label"]["stale"]
    assert "overruled by a person" in log
    comment = render_comment(diff_reports(None, load_report(pkg.parent / "replay.json")))
    assert "overruled by a person" in comment and "alice" in comment
    labels = report["labels"]
    assert labels["decided"] == 1 and labels["stale"] == []
    [found] = labels["agreement"]
    assert found["labels"] == 1 and found["agreement"] == 0.0 and found["disagreements"] == ["a (person PASS, judge FAIL)"]

    # The session is re-recorded and says something else: the label no longer decides.
    record_sessions(pkg, {"a": "done: finished the task for a, differently."})
    _record_judge(pkg, {"a": "FAIL"})
    report, _ = _replay(pkg)
    case = next(c for c in report["cases"] if c["name"] == "a")
    assert case["verdict"] == "FAIL" and case["label"]["stale"]
    assert report["labels"]["stale"] == ["a [claude-code · claude-sonnet-4-6]: its output changed"]


def test_a_label_goes_stale_when_the_criteria_change(tmp_path: Path) -> None:
    pkg = _package(tmp_path, {"a": "FAIL"})
    _label(pkg, "a", "PASS", "It is done.")
    case_file = next((pkg / "evals/cases").glob("*-a.yaml"))
    data = yaml.safe_load(case_file.read_text())
    data["judge"]["criteria"] += " It must say so in one line."
    case_file.write_text(yaml.safe_dump(data))
    _record_judge(pkg, {"a": "FAIL"})
    report, _ = _replay(pkg)
    [case] = report["cases"]
    assert case["verdict"] == "FAIL" and case["label"]["stale"]
    assert report["labels"]["stale"] == ["a [claude-code · claude-sonnet-4-6]: its criteria changed"]


def test_a_label_for_another_output_than_the_cassettes_is_refused(tmp_path: Path) -> None:
    pkg = _package(tmp_path, {"a": "FAIL"})
    result = aam_eval("label", "a", "--package", str(pkg), "--verdict", "PASS", "--reason", "x",
                      "--output", "sha256:" + "0" * 64)
    assert result.code == 2 and "not the one this label was copied for" in result.err
    assert not (pkg / "evals/labels.yaml").exists()
    (pkg / "evals/labels.yaml").write_text("version: 1\nlabels:\n  - case: a\n    verdict: MAYBE\n")
    result = aam_eval("run", "--package", str(pkg), "--replay")
    assert result.code == 2 and "labels.yaml:3" in result.err and "labels[0]" in result.err


@pytest.mark.parametrize(("min_kappa", "e_verdict"), [(0.6, "PASS"), (0.5, "FAIL")])
def test_a_calibrated_gate_trusts_a_judge_fail_only_from_its_kappa_on(
    tmp_path: Path, min_kappa: float, e_verdict: str
) -> None:
    judged = {"a": "PASS", "b": "FAIL", "c": "FAIL", "d": "PASS", "e": "FAIL"}
    config = {"judge-gate": "calibrated", "judge-calibration": {"min-kappa": min_kappa, "min-labels": 4}}
    pkg = _package(tmp_path, judged, config)
    for case, verdict in {"a": "PASS", "b": "FAIL", "c": "PASS", "d": "PASS"}.items():
        _label(pkg, case, verdict, "checked by hand")
    # Pairs (person, judge): a P/P, b F/F, c P/F, d P/P: observed .75, chance .5, kappa .5.
    report, log = _replay(pkg)
    [found] = report["labels"]["agreement"]
    assert found["kappa"] == 0.5 and found["labels"] == 4
    case = next(c for c in report["cases"] if c["name"] == "e")  # unlabelled: the judge's FAIL
    assert case["verdict"] == e_verdict, log
    assert case["judge_verdict"]["result"] == "FAIL"
    if e_verdict == "PASS":
        assert "κ is 0.50 (< 0.60)" in case["judge_advisory"]
    else:
        assert case.get("judge_advisory") is None
    assert report["labels"]["gate"] == "calibrated"


def test_a_label_line_copied_from_the_html_report_applies_with_aam_eval_label(tmp_path: Path) -> None:
    """Round trip: the HTML report offers the command for the judged output; copied out of the
    page in headless Chromium (the reason written in) and run, it overrules the judge."""
    import shlex

    from support.browser import open_case, report_page

    pkg = _package(tmp_path, {"a": "FAIL", "b": "PASS"})
    page_path = tmp_path / "report.html"
    result = aam_eval("run", "--package", str(pkg), "--replay", "--html", str(page_path))
    assert result.code == 1  # a's judge FAIL
    with report_page(page_path) as page:
        open_case(page, "a")
        line = page.js("document.getElementById('label-line').innerText")
        said = page.js("document.querySelector('#case-view .label-box').innerText")
        assert page.problems() == []
    assert "Disagree with the judge?" in said
    argv = shlex.split(line)
    assert argv[:3] == ["aam-eval", "label", "a"] and argv[argv.index("--verdict") + 1] == "PASS"
    argv[argv.index("--reason") + 1] = "Read by hand: the task is done."
    labelled = aam_eval(*argv[1:], "--by", "bob")
    assert labelled.code == 0, labelled.err
    report, log = _replay(pkg)
    case = next(c for c in report["cases"] if c["name"] == "a")
    assert case["verdict"] == "PASS" and case["label"]["by"] == "bob", log
    assert case["label"]["reason"] == "Read by hand: the task is done."
    # The same line once the output was re-recorded differently is refused, not applied to it.
    record_sessions(pkg, {"a": "done: finished the task for a, once more."})
    again = aam_eval(*argv[1:], "--by", "bob")
    assert again.code == 2 and "not the one this label was copied for" in again.err
