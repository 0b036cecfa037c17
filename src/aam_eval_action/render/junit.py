"""JUnit XML: one testcase per case, so existing test reporters show evals next to unit tests."""

from __future__ import annotations

from xml.etree import ElementTree as ET

from aam_eval_action.report import CaseResult, Report


def to_junit(report: Report) -> str:
    s = report.summary
    suite = ET.Element("testsuite", {
        "name": f"aam-eval {report.package.name or ''}".strip(),
        "tests": str(s.total), "failures": str(s.failed), "errors": str(s.errored),
        "skipped": str(s.skipped), "time": f"{report.duration_seconds:.3f}",
        "timestamp": report.timestamp,
    })
    for case in report.cases:
        suite.append(_testcase(case))
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _testcase(case: CaseResult) -> ET.Element:
    el = ET.Element("testcase", {
        "name": case.shown, "classname": case.target or "eval",
        "time": f"{case.duration_seconds:.3f}",
    })
    if case.file:
        el.set("file", case.file)
    if case.line:
        el.set("line", str(case.line))
    detail = _detail(case)
    if case.verdict == "FAIL":
        ET.SubElement(el, "failure", {"message": (case.error or "failed")[:500]}).text = detail
    elif case.verdict == "ERROR":
        ET.SubElement(el, "error", {"message": (case.error or "error")[:500]}).text = detail
    elif case.verdict == "SKIP":
        ET.SubElement(el, "skipped")
    return el


def _detail(case: CaseResult) -> str:
    lines = [f"{name}: {result}" for name, result in case.deterministic_checks.items()]
    if case.judge_verdict and case.judge_verdict.result != "SKIP":
        lines.append(f"judge: {case.judge_verdict.result}: {case.judge_verdict.reason}")
    if case.error:
        lines.append(f"error: {case.error}")
    if case.agent_output_snippet:
        lines.append("output: " + case.agent_output_snippet)
    return "\n".join(lines)
