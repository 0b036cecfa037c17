"""`aam-eval export` (on `conftest.example`, the shipped example with its cassettes): the shipped example's recordings as ATIF trajectories, validated by Harbor's
own models, and as OTLP JSON, loaded through OpenTelemetry's own protobuf messages.

(The sub-agent recordings of all four engines are exported in `test_subagents_e2e.py`.)
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import aam_eval
from support.harbor import trajectory_model

ENGINES = "claude-code,codex,copilot,gemini-cli"


def _export(pkg: Path, out: Path, *extra: str) -> tuple[int, str]:
    result = aam_eval("export", "--package", str(pkg), "--engine", ENGINES, "--atif", str(out / "atif"),
                      "--otlp", str(out / "traces.json"), *extra)
    return result.code, result.out + result.err


def test_the_examples_trajectories_on_all_four_engines_validate_with_harbors_models(
    example: Path, tmp_path: Path
) -> None:
    code, log = _export(example, tmp_path)
    assert code == 0, log
    files = sorted((tmp_path / "atif").glob("*.atif.json"))
    cases = {p.stem.split("@")[0] for p in files}
    assert len(files) == 28 and len(cases) == 7, [p.name for p in files]  # 7 cases x 4 engines
    Trajectory = trajectory_model()
    for path in files:
        data = json.loads(path.read_text())
        Trajectory.model_validate(data)  # raises on anything Harbor's ATIF does not accept
        assert data["schema_version"] == "ATIF-v1.7"
    doc = json.loads((tmp_path / "atif/csv-summary-e2e@claude-code@claude-sonnet-4-6.atif.json").read_text())
    steps = doc["steps"]
    assert steps[0]["source"] == "user" and "sales" in steps[0]["message"]
    calls = [c for s in steps for c in s.get("tool_calls", [])]
    assert any(c["function_name"] == "Skill" for c in calls)
    results = {r["source_call_id"]: r for s in steps for r in s.get("observation", {}).get("results", [])}
    assert all(c["tool_call_id"] in results for c in calls)  # every call's result is where ATIF wants it
    assert any(s.get("metrics", {}).get("completion_tokens") for s in steps)
    assert doc["agent"]["name"] == "claude-code" and doc["agent"]["version"]
    assert doc["extra"]["grading"]["verdict"] == "PASS"
    assert doc["final_metrics"]["total_steps"] == len(steps)


def _decoded(text: str) -> Any:
    """The OTLP file through OpenTelemetry's own protobuf message (`ExportTraceServiceRequest`).

    OTLP/JSON writes trace and span ids as hex where protobuf's JSON mapping expects base64:
    the one difference the spec names, undone here before protobuf parses the rest."""
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    data = json.loads(text)
    for resource in data["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    return json_format.ParseDict(data, ExportTraceServiceRequest())


def test_the_otlp_file_loads_through_opentelemetrys_own_messages(example: Path, tmp_path: Path) -> None:
    code, log = _export(example, tmp_path)
    assert code == 0, log
    request = _decoded((tmp_path / "traces.json").read_text())
    spans = [s for r in request.resource_spans for sc in r.scope_spans for s in sc.spans]
    by_id = {s.span_id: s for s in spans}
    roots = [s for s in spans if not s.parent_span_id]
    assert len(roots) == 28 and len({s.trace_id for s in spans}) == 28  # a trace per case and pair
    assert all(s.parent_span_id in by_id for s in spans if s.parent_span_id)

    def attrs(span: Any) -> dict[str, Any]:
        return {a.key: getattr(a.value, a.value.WhichOneof("value")) for a in span.attributes}

    operations = {attrs(s)["gen_ai.operation.name"] for s in spans}
    assert operations == {"invoke_agent", "chat", "execute_tool"}
    for span in spans:
        if attrs(span)["gen_ai.operation.name"] == "execute_tool":
            assert attrs(by_id[span.parent_span_id])["gen_ai.operation.name"] == "chat"
            assert attrs(span)["gen_ai.tool.name"]
    root = next(s for s in roots if attrs(s)["aam_eval.case"] == "no-invented-numbers@claude-code@claude-sonnet-4-6")
    assert attrs(root)["gen_ai.request.model"] == "claude-sonnet-4-6"
    events = [{a.key: getattr(a.value, a.value.WhichOneof("value")) for a in e.attributes} for e in root.events]
    assert {e["gen_ai.evaluation.name"] for e in events} >= {"judge"}
    judge = next(e for e in events if e["gen_ai.evaluation.name"] == "judge")
    assert judge["gen_ai.evaluation.score.label"] == "fail" and "west" in judge["gen_ai.evaluation.explanation"]
    # Exporting the same cassettes again gives the same file.
    again = tmp_path / "again"
    _export(example, again)
    assert (again / "traces.json").read_text() == (tmp_path / "traces.json").read_text()


def test_no_secret_reaches_an_export_and_a_damaged_cassette_stops_only_its_case(
    example: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    canary = "sk-ant-CANARY-export-7f3e2d1c0b9a8877"
    monkeypatch.setenv("ANTHROPIC_API_KEY", canary)
    cassettes = example.parent.parent / "cassettes"
    path = cassettes / "changelog-entry/claude-code.session.yaml"
    data = yaml.safe_load(path.read_text())
    data["attempts"][0]["output"] += f" (the key was {canary})"
    del data["model_traffic"]  # exported from the session alone: its output is a step
    path.write_text(yaml.safe_dump(data))
    (cassettes / "average-revenue/codex.session.yaml").write_text("attempts: !!python/object/apply:os.system ['x']\n")
    code, log = _export(example, tmp_path, "--report", str(_report(example, tmp_path)))
    assert code == 1
    assert "average-revenue [codex · gpt-5.5]: not exported" in log and "is refused" in log
    written = "".join(p.read_text() for p in (tmp_path / "atif").glob("*.json"))
    written += (tmp_path / "traces.json").read_text()
    assert canary not in written and canary not in log
    assert "[REDACTED:ANTHROPIC_API_KEY]" in written or "[REDACTED:ANTHROPIC_KEY]" in written
    assert len(list((tmp_path / "atif").glob("*.json"))) == 27  # all but the damaged one


def _report(example: Path, tmp_path: Path) -> Path:
    out = tmp_path / "report.json"
    aam_eval("run", "--package", str(example), "--replay", "--no-rerun", "--engine", ENGINES, "-o", str(out))
    return out


def test_export_needs_something_to_write(example: Path) -> None:
    result = aam_eval("export", "--package", str(example))
    assert result.code == 2 and "--atif DIR" in result.err
