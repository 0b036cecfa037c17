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


# --- conversations (a Session with `turns`, built here as data) ---------------------------------

SETUP = "Set up a project config for my new service."
ASKED = "What is the project called?"
DONE = "Done: project.toml holds name acme."
CONVERSATION_TURNS = [
    {"user": SETUP, "by": "case", "output": ASKED, "calls": 1, "duration_seconds": 3.0},
    {"user": "It is called acme.", "by": "simulated-user", "output": DONE, "calls": 1, "duration_seconds": 1.0},
]


def _conversation(**changes: Any) -> Any:
    from aam_eval_action.session import Session

    data: dict[str, Any] = {
        "engine": "claude-code", "model_provider": "anthropic", "session_id": "s-1", "output": DONE,
        "duration_seconds": 4.0, "stopped": "goal-reached", "turns": CONVERSATION_TURNS,
        "tool_calls": [{"name": "Read", "input": {"file_path": "SKILL.md"}, "result": "asks for the name"},
                       {"name": "Write", "input": {"file_path": "project.toml"}, "result": "written"}],
    }
    return Session.model_validate(data | changes)


def _sse(*blocks: dict[str, Any]) -> Any:
    """A streamed Anthropic answer made of these content blocks (a tool call's input as a delta)."""
    from aam_eval_action.replay.traffic import RecordedResponse, SseEvent

    events = [SseEvent(data={"type": "message_start", "message": {"usage": {"input_tokens": 10}}})]
    for i, block in enumerate(blocks):
        if block["type"] == "text":
            events += [SseEvent(data={"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}}),
                       SseEvent(data={"type": "content_block_delta", "index": i,
                                      "delta": {"type": "text_delta", "text": block["text"]}})]
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            events += [SseEvent(data={"type": "content_block_start", "index": i, "content_block": start}),
                       SseEvent(data={"type": "content_block_delta", "index": i,
                                      "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}})]
    events.append(SseEvent(data={"type": "message_delta", "usage": {"output_tokens": 5}}))
    return RecordedResponse(status=200, events=events)


def _conversation_traffic() -> Any:
    """The model traffic of the two-turn conversation: one main conversation across both turns."""
    from aam_eval_action.redact import Redactor
    from aam_eval_action.replay.conversations import build_traffic
    from aam_eval_action.replay.traffic import Normaliser, Paths

    ws = Path("/tmp/aam-eval-case-ab12/workspace")
    norm = Normaliser(Paths(ws, ws.parent / "home", ws.parent), Redactor({}))
    read = {"type": "tool_use", "id": "toolu_read", "name": "Read", "input": {"file_path": "SKILL.md"}}
    write = {"type": "tool_use", "id": "toolu_write", "name": "Write", "input": {"file_path": "project.toml"}}
    answers = [_sse({"type": "text", "text": "Let me read the skill."}, read), _sse({"type": "text", "text": ASKED}),
               _sse(write), _sse({"type": "text", "text": DONE})]
    history: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": SETUP}]}]
    said = [[{"type": "text", "text": "Let me read the skill."}, read], [{"type": "text", "text": ASKED}], [write]]
    then = [[{"type": "tool_result", "tool_use_id": "toolu_read", "content": "asks for the name"}],
            [{"type": "text", "text": "It is called acme."}],
            [{"type": "tool_result", "tool_use_id": "toolu_write", "content": "written"}]]
    requests = [list(history)]
    for assistant, user in zip(said, then, strict=True):
        history += [{"role": "assistant", "content": assistant}, {"role": "user", "content": user}]
        requests.append(list(history))
    tools = [{"name": "Read", "input_schema": {}}, {"name": "Write", "input_schema": {}}]
    raw = [("/v1/messages", norm.request({"model": "claude-sonnet-4-6", "stream": True, "system": "You are an agent.",
                                          "tools": tools, "messages": messages}), norm.response(answer), False)
           for messages, answer in zip(requests, answers, strict=True)]
    return build_traffic("claude", "2.1.200", raw)


def _user_steps(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in doc["steps"] if s["source"] == "user"]


@pytest.mark.parametrize("with_traffic", [True, False])
def test_a_conversations_trajectory_has_each_user_turn_at_its_place(with_traffic: bool) -> None:
    from aam_eval_action.export.atif import trajectory

    traffic = _conversation_traffic() if with_traffic else None
    doc = trajectory("setup@claude-code@claude-sonnet-4-6", SETUP, _conversation(), traffic,
                     engine="claude-code", model="claude-sonnet-4-6")
    trajectory_model().model_validate(doc)  # Harbor's ATIF takes it
    steps = doc["steps"]
    assert [s["message"] for s in _user_steps(doc)] == [SETUP, "It is called acme."]
    assert [s["extra"] for s in _user_steps(doc)] == [{"turn": 1, "by": "case"}, {"turn": 2, "by": "simulated-user"}]
    second = steps.index(_user_steps(doc)[1])
    # Each user turn is followed by that turn's tool calls, then the agent's answer to it.
    first_turn, second_turn = steps[1:second], steps[second + 1:]
    assert [c["function_name"] for s in first_turn for c in s.get("tool_calls", [])] == ["Read"]
    assert [c["function_name"] for s in second_turn for c in s.get("tool_calls", [])] == ["Write"]
    assert first_turn[-1]["source"] == "agent" and first_turn[-1]["message"] == ASKED
    assert second_turn[-1]["message"] == DONE and steps[-1] is second_turn[-1]
    results = {r["source_call_id"]: r["content"] for s in steps for r in s.get("observation", {}).get("results", [])}
    assert sorted(results.values()) == ["asks for the name", "written"]
    assert doc["extra"]["conversation"] == {"turns": 2, "stopped": "goal-reached"}
    assert doc["final_metrics"]["total_steps"] == len(steps)
    if with_traffic:  # the model's own answers: the first turn's two model calls, the second's two
        assert [s["message"] for s in first_turn] == ["Let me read the skill.", ASKED]
        assert all(s.get("llm_call_count") == 1 for s in first_turn + second_turn)


def test_a_failed_turn_is_marked_and_a_one_prompt_session_exports_as_before() -> None:
    from aam_eval_action.export.atif import trajectory

    turns = [CONVERSATION_TURNS[0], CONVERSATION_TURNS[1] | {"is_error": True, "output": ""}]
    doc = trajectory("k", SETUP, _conversation(turns=turns, stopped="error"), None, engine="claude-code",
                     model="m")
    trajectory_model().model_validate(doc)
    assert doc["steps"][-1]["extra"] == {"is_error": True} and doc["steps"][-1]["source"] == "agent"
    one = trajectory("k", SETUP, _conversation(turns=[], stopped=None), None, engine="claude-code", model="m")
    assert [(s["source"], s["message"], "extra" in s) for s in one["steps"]] == [
        ("user", SETUP, False), ("agent", "", False), ("agent", "", False), ("agent", DONE, False)]
    assert "conversation" not in one["extra"]


def _attrs(span: dict[str, Any]) -> dict[str, Any]:
    return {a["key"]: next(iter(a["value"].values())) for a in span["attributes"]}


@pytest.mark.parametrize("with_traffic", [True, False])
def test_a_conversations_trace_has_a_span_per_user_turn_with_its_calls_below(with_traffic: bool) -> None:
    from aam_eval_action.export.otlp import case_spans, document

    traffic = _conversation_traffic() if with_traffic else None
    spans = case_spans("setup@claude-code@claude-sonnet-4-6", _conversation(), traffic, engine="claude-code",
                       model="claude-sonnet-4-6", provider="anthropic", recorded_at="2026-01-02T03:04:05Z",
                       evaluations=[])
    request = _decoded(document(spans))  # OpenTelemetry's own messages take it
    assert len(request.resource_spans[0].scope_spans[0].spans) == len(spans)
    root = spans[0]
    assert _attrs(root)["aam_eval.conversation.turns"] == "2"
    assert _attrs(root)["aam_eval.conversation.stopped"] == "goal-reached"
    turns = [s for s in spans if s.get("parentSpanId") == root["spanId"]]
    assert [_attrs(t)["aam_eval.conversation.turn"] for t in turns] == ["1", "2"]
    assert [_attrs(t)["gen_ai.operation.name"] for t in turns] == ["invoke_agent", "invoke_agent"]
    assert [_attrs(t)["aam_eval.user.by"] for t in turns] == ["case", "simulated-user"]
    said = [json.loads(_attrs(t)["gen_ai.input.messages"]) for t in turns]
    assert said[1] == [{"role": "user", "parts": [{"type": "text", "content": "It is called acme."}]}]
    answered = json.loads(_attrs(turns[0])["gen_ai.output.messages"])
    assert answered == [{"role": "assistant", "parts": [{"type": "text", "content": ASKED}], "finish_reason": "stop"}]
    assert all(_attrs(t)["gen_ai.conversation.id"] == "s-1" for t in turns)
    # Turns share the session's time by their recorded durations (3 s, then 1 s).
    assert [int(t["endTimeUnixNano"]) - int(t["startTimeUnixNano"]) for t in turns] == [3_000_000_000, 1_000_000_000]
    by_id = {s["spanId"]: s for s in spans}

    def turn_of(span: dict[str, Any]) -> int:
        while span["parentSpanId"] != root["spanId"]:
            span = by_id[span["parentSpanId"]]
        return int(_attrs(span)["aam_eval.conversation.turn"])

    tools = {_attrs(s)["gen_ai.tool.name"]: turn_of(s) for s in spans if s["name"].startswith("execute_tool")}
    assert tools == {"Read": 1, "Write": 2}
    chats = [s for s in spans if s["name"].startswith("chat ")]
    if with_traffic:
        assert [turn_of(c) for c in chats] == [1, 1, 2, 2]
        assert all(by_id[s["parentSpanId"]]["name"].startswith("chat ") for s in spans
                   if s["name"].startswith("execute_tool"))
    else:
        assert chats == []


def test_a_one_prompt_sessions_trace_has_no_turn_spans() -> None:
    from aam_eval_action.export.otlp import case_spans

    spans = case_spans("k", _conversation(turns=[], stopped=None), None, engine="claude-code", model="m",
                       provider="anthropic", recorded_at=None, evaluations=[])
    assert len(spans) == 1 and not any(k.startswith("aam_eval.conversation") for k in _attrs(spans[0]))


def test_a_turn_ends_at_the_answer_it_recorded_when_the_agent_went_on_after_another() -> None:
    from aam_eval_action.export.conversation import by_turn
    from aam_eval_action.session import ConversationTurn

    def answer(text: str, *calls: str) -> dict[str, Any]:
        return {"n": 0, "text": [text], "calls": [{"name": c} for c in calls]}

    turns = [ConversationTurn(user="go", output="Which  port?\n", calls=1), ConversationTurn(user="8080", calls=0)]
    # A Stop hook made the agent go on after "I am done." (no call): the turn ends at its recorded answer.
    answers = [answer("", "Read"), answer("I am done."), answer("Which port?"), answer("Written.")]
    assert [[a["text"][0] for a in group] for group in by_turn(answers, turns)] == [
        ["", "I am done.", "Which port?"], ["Written."]]
    # Without a match, the first answer that calls nothing ends the turn; a turn may get none.
    other = [turns[0].model_copy(update={"output": "something else"}), turns[1], turns[1]]
    assert [len(group) for group in by_turn(answers, other)] == [2, 1, 1]
    assert [len(group) for group in by_turn(answers[:1], other)] == [1, 0, 0]
