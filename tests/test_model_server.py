"""The scripted model server, through the real anthropic and openai SDKs."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
import yaml

from aam_eval_action.testing.model_server import DEFAULT_API_KEY, ModelServer

VERDICT_SCHEMA = {
    "type": "object",
    "properties": {
        "result": {"type": "string", "enum": ["PASS", "FAIL"]},
        "reason": {"type": "string"},
    },
    "required": ["result", "reason"],
    "additionalProperties": False,
}
VERDICT_TOOL: Any = {"name": "record_verdict", "input_schema": VERDICT_SCHEMA}
BASH_TOOL: Any = {
    "name": "Bash",
    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
}
EXEC_TOOL: Any = {
    "type": "function",
    "name": "exec_command",
    "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
    "strict": False,
}
SCENARIOS = [
    {
        "match": "grade the csv task",
        "agent": [{"bash": "wc -l data.csv"}, {"text": "There are 3 rows."}],
        "judge": {"result": "FAIL", "reason": "the row count is wrong"},
    },
    {
        "match": "flaky judge",
        "judge": {"status": 529, "times": 2, "then": {"result": "PASS", "reason": "third time"}},
    },
]


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer(SCENARIOS) as running:
        yield running


def claude(server: ModelServer, retries: int = 0) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.url, api_key=server.api_key, max_retries=retries)


def gpt(server: ModelServer, retries: int = 0) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key=server.api_key, max_retries=retries)


def judge_claude(client: anthropic.Anthropic, text: str) -> anthropic.types.Message:
    return client.messages.create(
        model="claude-sonnet-4-6",
        max_tokens=1024,
        messages=[{"role": "user", "content": text}],
        tools=[VERDICT_TOOL],
        tool_choice={"type": "tool", "name": "record_verdict"},
    )


def judge_gpt(client: openai.OpenAI, text: str) -> Any:
    return client.responses.create(
        model="gpt-5.5",
        input=text,
        text={"format": {"type": "json_schema", "name": "verdict", "strict": True,
                         "schema": VERDICT_SCHEMA}},
    )  # fmt: skip


def test_anthropic_judge_gets_a_record_verdict_call(server: ModelServer) -> None:
    with claude(server) as client:
        msg = judge_claude(client, "<task>Please grade the csv task.</task>")
        again = judge_claude(client, "<task>Please grade the csv task.</task>")
    block = msg.content[0]
    assert block.type == "tool_use" and block.name == "record_verdict"
    assert block.input == {"result": "FAIL", "reason": "the row count is wrong"}
    assert msg.stop_reason == "tool_use" and msg.usage.input_tokens > 0
    assert again.model_dump() == msg.model_dump()  # same request, same bytes
    assert server.requests[0].path == "/v1/messages"
    assert server.api_key in server.requests[0].headers["authorization"]  # this SDK sends Bearer


def test_openai_judge_gets_a_json_verdict(server: ModelServer) -> None:
    with gpt(server) as client:
        resp = judge_gpt(client, "<task>grade the csv task</task>")
    assert json.loads(resp.output_text) == {"result": "FAIL", "reason": "the row count is wrong"}
    assert resp.usage is not None and resp.usage.total_tokens > 0
    assert server.requests[0].path == "/v1/responses"


def test_an_unmatched_judge_request_is_refused_not_passed(server: ModelServer) -> None:
    with claude(server) as client, pytest.raises(anthropic.BadRequestError) as refused:
        judge_claude(client, "something else entirely")
    assert "no scenario matches this judge request: something else entirely" in str(refused.value)
    with gpt(server) as client, pytest.raises(openai.BadRequestError) as refused_too:
        client.responses.create(model="gpt-5.5", input="something else entirely",
                                text={"format": {"type": "json_schema", "name": "verdict", "schema": VERDICT_SCHEMA}})
    assert "no scenario matches" in str(refused_too.value)


@pytest.mark.parametrize("key", [None, "sk-wrong"])
def test_a_missing_or_wrong_key_is_a_401(server: ModelServer, key: str | None) -> None:
    headers = {"anthropic-version": "2023-06-01", **({"x-api-key": key} if key else {})}
    body = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "grade the csv task"}]}
    status, answer = post(server, "/v1/messages", body, headers)
    assert status == 401 and answer["error"]["type"] == "authentication_error"
    status, answer = post(server, "/v1/responses", {"model": "m", "input": "hi"},
                          {"authorization": f"Bearer {key}"} if key else {})
    assert status == 401 and answer["error"]["code"] == "invalid_api_key"
    with anthropic.Anthropic(base_url=server.url, api_key=key or "-", max_retries=0) as client, \
            pytest.raises(anthropic.AuthenticationError):
        judge_claude(client, "grade the csv task")


def test_the_key_is_accepted_as_x_api_key_or_bearer(server: ModelServer) -> None:
    body = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hello"}]}
    for auth in ({"x-api-key": server.api_key}, {"authorization": f"Bearer {server.api_key}"}):
        status, answer = post(server, "/v1/messages", body, {"anthropic-version": "2023-06-01", **auth})
        assert status == 200 and answer["content"][0]["text"] == "OK.", answer


@pytest.mark.parametrize(("path", "body", "headers", "field"), [
    ("/v1/messages", {"max_tokens": 10, "messages": [{"role": "user", "content": "x"}]}, {}, "model"),
    ("/v1/messages", {"model": "m", "messages": [{"role": "user", "content": "x"}]}, {}, "max_tokens"),
    ("/v1/messages", {"model": "m", "max_tokens": 10, "messages": []}, {}, "messages"),
    ("/v1/messages", {"model": "m", "max_tokens": 10, "messages": [{"role": "bot", "content": "x"}]}, {},
     "messages.0.role"),
    ("/v1/messages", {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "x"}]},
     {"anthropic-version": ""}, "anthropic-version"),
    ("/v1/responses", {"input": "x"}, {}, "'model'"),
    ("/v1/responses", {"model": "m"}, {}, "'input'"),
])  # fmt: skip
def test_a_malformed_request_is_a_400_naming_the_field(
    server: ModelServer, path: str, body: dict[str, Any], headers: dict[str, str], field: str
) -> None:
    auth = {"anthropic-version": "2023-06-01", "x-api-key": server.api_key, **headers}
    status, answer = post(server, path, body, {k: v for k, v in auth.items() if v})
    error = answer["error"]
    assert status == 400 and error["type"] == "invalid_request_error"
    assert field in error["message"]


def post(server: ModelServer, path: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
    """A raw request, for what no SDK would send."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(server.url + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"content-type": "application/json", **headers})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        with error:
            return error.code, json.loads(error.read())


def test_transient_judge_errors_fail_the_first_calls_only(server: ModelServer) -> None:
    with claude(server) as client:
        for _ in range(2):
            with pytest.raises(anthropic.APIStatusError) as failed:
                judge_claude(client, "a flaky judge call")
            assert failed.value.status_code == 529
        msg = judge_claude(client, "a flaky judge call")
    assert msg.content[0].type == "tool_use"
    assert msg.content[0].input == {"result": "PASS", "reason": "third time"}


def test_sdk_retries_ride_over_transient_errors(server: ModelServer) -> None:
    with gpt(server, retries=2) as client:
        resp = judge_gpt(client, "a flaky judge call")
    assert json.loads(resp.output_text)["reason"] == "third time"
    assert len(server.requests) == 3


def test_anthropic_agent_turns_stream_the_script_statelessly(server: ModelServer) -> None:
    messages: list[Any] = [{"role": "user", "content": "Please grade the csv task."}]
    with claude(server) as client:
        first = stream_claude(client, messages)
        messages += [
            {"role": "assistant", "content": [b.model_dump() for b in first.content]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": first.content[0].id, "content": "3"}]},
        ]  # fmt: skip
        second = stream_claude(client, messages)
        retried = stream_claude(client, messages)
    call = first.content[0]
    assert call.type == "tool_use" and call.name == "Bash"
    assert call.input == {"command": "wc -l data.csv", "description": "Run a scripted command"}
    assert first.stop_reason == "tool_use"
    assert second.content[0].type == "text" and second.content[0].text == "There are 3 rows."
    assert retried.model_dump() == second.model_dump()


def stream_claude(client: anthropic.Anthropic, messages: list[Any]) -> anthropic.types.Message:
    with client.messages.stream(
        model="claude-sonnet-4-6", max_tokens=4096, messages=messages, tools=[BASH_TOOL]
    ) as stream:
        return stream.get_final_message()


def test_responses_agent_turn_is_an_exec_command_call(server: ModelServer) -> None:
    with gpt(server) as client:
        stream = client.responses.create(
            model="gpt-5.5", input="grade the csv task", tools=[EXEC_TOOL], stream=True
        )
        events = list(stream)
    kinds = [e.type for e in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    item = events[-1].response.output[0]
    assert item.type == "function_call" and item.name == "exec_command"
    assert json.loads(item.arguments) == {"cmd": "wc -l data.csv"}


def test_side_requests_without_tools_do_not_consume_the_script(server: ModelServer) -> None:
    with claude(server) as client:
        title = client.messages.create(
            model="claude-haiku-4-5", max_tokens=50,
            messages=[{"role": "user", "content": "Please grade the csv task."}],
        )  # fmt: skip
        turn = stream_claude(client, [{"role": "user", "content": "Please grade the csv task."}])
    assert title.content[0].type == "text" and title.content[0].text == "OK."
    assert turn.content[0].type == "tool_use"


def test_error_steps_answer_with_the_status(server: ModelServer) -> None:
    server.add({"match": "break now", "agent": [{"error": {"status": 500, "message": "boom"}}]})
    with claude(server) as client, pytest.raises(anthropic.InternalServerError) as failed:
        stream_claude(client, [{"role": "user", "content": "break now"}])
    assert "boom" in str(failed.value)


def test_standalone_server_serves_a_yaml_script(tmp_path: Path) -> None:
    script = tmp_path / "scenarios.yaml"
    script.write_text(yaml.safe_dump({"scenarios": SCENARIOS}))
    proc = subprocess.Popen(
        [sys.executable, "-m", "aam_eval_action.testing.model_server", "--scenarios", str(script)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        with anthropic.Anthropic(base_url=url, api_key=DEFAULT_API_KEY, max_retries=0) as client:
            msg = judge_claude(client, "grade the csv task")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()
    assert url.startswith("http://127.0.0.1:")
    assert msg.content[0].type == "tool_use" and msg.content[0].input["result"] == "FAIL"
    assert proc.returncode == 0


def test_latency_delays_every_answer() -> None:
    with ModelServer(SCENARIOS, latency=0.3) as slow, claude(slow) as client:
        started = time.monotonic()
        judge_claude(client, "grade the csv task")
        assert time.monotonic() - started >= 0.3


# --- Gemini API (as Gemini CLI calls it) ---------------------------------------------------

GEMINI_MODEL = "gemini-2.5-pro"
GEMINI_TOOLS: Any = [{"functionDeclarations": [
    {"name": name, "description": name, "parametersJsonSchema": {"type": "object"}}
    for name in ("run_shell_command", "write_file", "activate_skill", "read_file")
]}]  # fmt: skip
SESSION_CONTEXT = (
    "<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\n"
    "Today's date is Monday, January 5, 2026 (formatted according to the user's locale).\n"
    "My operating system is: linux\n- **Workspace Directories:**\n  - /work/ws\n"
    "- **Directory Structure:**\n\n/work/ws/\n└───data.csv\n\n</session_context>"
)
SKILLS_LISTING = (
    "# Available Agent Skills\n\n<available_skills>\n  <skill>\n    <name>csv-summary</name>\n"
    "    <description>Summarise a CSV.</description>\n  </skill>\n</available_skills>"
)


def gemini_body(prompt: str, *history: dict[str, Any], system: str = "You are Gemini CLI.") -> dict[str, Any]:
    return {
        "contents": [{"role": "user", "parts": [{"text": SESSION_CONTEXT}, {"text": prompt}]}, *history],
        "systemInstruction": {"role": "user", "parts": [{"text": system}]},
        "tools": GEMINI_TOOLS,
        "generationConfig": {"temperature": 1, "thinkingConfig": {"includeThoughts": True}},
    }


def gemini_post(server: ModelServer, method: str, body: Any, key: str | None = DEFAULT_API_KEY,
                query: str = "") -> tuple[int, str, bytes]:
    """A raw Gemini API request through http.client: (status, content type, body)."""
    import http.client

    host, port = server.url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        headers = {"content-type": "application/json", **({"x-goog-api-key": key} if key else {})}
        conn.request("POST", f"/v1beta/models/{GEMINI_MODEL}:{method}{query}", json.dumps(body), headers)
        response = conn.getresponse()
        return response.status, response.getheader("content-type") or "", response.read()
    finally:
        conn.close()


def sse_data(raw: bytes) -> list[Any]:
    events = raw.decode().split("\n\n")
    assert events[-1] == "" and all(e.startswith("data: ") for e in events[:-1]), raw
    return [json.loads(e.removeprefix("data: ")) for e in events[:-1]]


def model_parts(answer: dict[str, Any]) -> list[dict[str, Any]]:
    candidate = answer["candidates"][0]
    assert candidate["content"]["role"] == "model" and candidate["finishReason"] == "STOP"
    parts: list[dict[str, Any]] = candidate["content"]["parts"]
    return parts


def test_gemini_agent_turns_stream_the_script_statelessly(server: ModelServer) -> None:
    body = gemini_body("Please grade the csv task.")
    status, kind, raw = gemini_post(server, "streamGenerateContent", body, query="?alt=sse")
    assert status == 200 and kind == "text/event-stream"
    [first] = sse_data(raw)
    [part] = model_parts(first)
    call = part["functionCall"]
    assert call["name"] == "run_shell_command" and call["id"].startswith("call_")
    assert call["args"] == {"command": "wc -l data.csv", "description": "Run a scripted command"}
    usage = first["usageMetadata"]
    assert usage["totalTokenCount"] == usage["promptTokenCount"] + usage["candidatesTokenCount"] > 0
    assert first["modelVersion"] == GEMINI_MODEL and first["responseId"]
    assert gemini_post(server, "streamGenerateContent", body, query="?alt=sse")[2] == raw  # same bytes

    result = {"functionResponse": {"id": call["id"], "name": call["name"], "response": {"output": "3"}}}
    second_body = gemini_body("Please grade the csv task.", {"role": "model", "parts": [part]},
                              {"role": "user", "parts": [result]})
    [second] = sse_data(gemini_post(server, "streamGenerateContent", second_body, query="?alt=sse")[2])
    assert model_parts(second) == [{"text": "There are 3 rows."}]
    assert server.requests[0].path == f"/v1beta/models/{GEMINI_MODEL}:streamGenerateContent?alt=sse"


def test_gemini_non_stream_answers_and_side_requests(server: ModelServer) -> None:
    status, kind, raw = gemini_post(server, "generateContent", gemini_body("Please grade the csv task."))
    assert status == 200 and kind == "application/json"
    assert "functionCall" in model_parts(json.loads(raw))[0]
    # without alt=sse a stream is one JSON array of responses
    status, _, raw = gemini_post(server, "streamGenerateContent", gemini_body("Please grade the csv task."))
    assert status == 200 and "functionCall" in model_parts(json.loads(raw)[0])[0]

    side = {"contents": [{"role": "user", "parts": [{"text": "Please grade the csv task."}]}]}
    status, _, raw = gemini_post(server, "generateContent", side)  # no tools: not a turn of the script
    assert status == 200 and model_parts(json.loads(raw)) == [{"text": "OK."}]
    next_speaker = {"type": "object", "required": ["reasoning", "next_speaker"], "properties": {
        "reasoning": {"type": "string"}, "next_speaker": {"type": "string", "enum": ["model", "user"]}}}
    schema_side = dict(side, generationConfig={"responseMimeType": "application/json",
                                               "responseJsonSchema": next_speaker})
    [part] = model_parts(json.loads(gemini_post(server, "generateContent", schema_side)[2]))
    assert json.loads(part["text"]) == {"reasoning": "scripted", "next_speaker": "user"}


def test_gemini_judge_gets_a_json_verdict(server: ModelServer) -> None:
    body = {"contents": [{"role": "user", "parts": [{"text": "<task>grade the csv task</task>"}]}],
            "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": VERDICT_SCHEMA}}
    [part] = model_parts(json.loads(gemini_post(server, "generateContent", body)[2]))
    assert json.loads(part["text"]) == {"result": "FAIL", "reason": "the row count is wrong"}


@pytest.mark.parametrize("key", [None, "sk-wrong"])
def test_gemini_a_missing_or_wrong_key_is_refused(server: ModelServer, key: str | None) -> None:
    status, _, raw = gemini_post(server, "streamGenerateContent", gemini_body("hello"), key=key, query="?alt=sse")
    error = json.loads(raw)["error"]
    assert status == 401 and error["code"] == 401 and error["status"] == "UNAUTHENTICATED"
    assert error["message"]


def test_gemini_the_key_is_accepted_as_a_query_parameter(server: ModelServer) -> None:
    status, _, raw = gemini_post(server, "generateContent", gemini_body("hello"), key=None,
                                 query=f"?key={server.api_key}")
    assert status == 200 and model_parts(json.loads(raw)) == [{"text": "OK."}]


@pytest.mark.parametrize(("body", "field"), [
    ({"generationConfig": {}}, "contents"),
    ({"contents": []}, "contents"),
    ({"contents": [{"role": "bot", "parts": [{"text": "x"}]}]}, "contents[0].role"),
    ({"contents": [{"role": "user", "parts": []}]}, "contents[0].parts"),
])  # fmt: skip
def test_gemini_a_malformed_request_is_a_400(server: ModelServer, body: dict[str, Any], field: str) -> None:
    status, _, raw = gemini_post(server, "generateContent", body)
    error = json.loads(raw)["error"]
    assert status == 400 and error["status"] == "INVALID_ARGUMENT" and field in error["message"]


def test_gemini_parallel_calls_and_workspace_paths(server: ModelServer) -> None:
    server.add({"match": "do two things", "agent": [
        {"parallel": [{"bash": "wc -l data.csv"}, {"write": {"path": "out/a.txt", "content": "A"}}]},
        {"text": "Both done."}]})  # fmt: skip
    [answer] = sse_data(gemini_post(server, "streamGenerateContent", gemini_body("do two things"),
                                    query="?alt=sse")[2])
    calls = [part["functionCall"] for part in model_parts(answer)]
    assert [c["name"] for c in calls] == ["run_shell_command", "write_file"]
    assert calls[1]["args"] == {"file_path": "/work/ws/out/a.txt", "content": "A"}
    assert len({c["id"] for c in calls}) == 2


def test_gemini_skills_listed_in_the_system_instruction(server: ModelServer) -> None:
    server.add({"match": "summarise data.csv", "needs-skill": "csv-summary",
                "agent": [{"skill": "csv-summary"}], "without-skill": [{"text": "No skill here."}]})
    listed = gemini_body("summarise data.csv", system=f"You are Gemini CLI.\n\n{SKILLS_LISTING}")
    [part] = model_parts(json.loads(gemini_post(server, "generateContent", listed)[2]))
    assert part["functionCall"]["name"] == "activate_skill"
    assert part["functionCall"]["args"] == {"name": "csv-summary"}
    unlisted = gemini_body("summarise data.csv")
    assert model_parts(json.loads(gemini_post(server, "generateContent", unlisted)[2])) == [
        {"text": "No skill here."}]


def test_gemini_error_steps_answer_in_the_gemini_error_shape(server: ModelServer) -> None:
    server.add({"match": "break now", "agent": [{"error": {"status": 503, "message": "overloaded"}}]})
    status, _, raw = gemini_post(server, "streamGenerateContent", gemini_body("break now"), query="?alt=sse")
    assert status == 503 and json.loads(raw) == {
        "error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}
