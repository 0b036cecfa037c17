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
