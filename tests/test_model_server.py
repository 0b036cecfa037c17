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

from aam_eval_action.testing.model_server import (
    DEFAULT_API_KEY,
    NO_SKILL_FITS,
    ModelServer,
    load_scenarios,
    route_skill,
    route_words,
    skill_listing,
)

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


# --- routing: a `route` step picks a skill from the listed names and descriptions ------------

FIXTURES = Path(__file__).parent / "fixtures"
ROUTING_SCENARIOS = load_scenarios(FIXTURES / "routing-skills-scenarios.yaml")


def _fixture_skills() -> list[tuple[str, str]]:
    """(name, description) of the skills of tests/fixtures/routing-skills, from their frontmatter."""
    found = []
    for path in sorted((FIXTURES / "routing-skills/skills").glob("*/SKILL.md")):
        front = yaml.safe_load(path.read_text().split("---\n")[1])
        found.append((front["name"], front["description"]))
    return found


PACKAGE_SKILLS = _fixture_skills()
# Each CLI's own skills, listed beside the package's as the real CLIs list theirs (in their order:
# Claude Code and Copilot after the package's, Codex and Gemini CLI before).
BUILTIN_SKILLS = {
    "claude-code": [
        ("update-config", "Use this skill to configure the harness via settings.json: permissions, env vars, "
                          "hooks. Examples: \"allow npm commands\", \"set DEBUG=true\"."),
        ("claude-api", "Reference for the Claude API and its SDKs: model ids, pricing, streaming, tool use.\n"
                       "TRIGGER when the prompt names Claude or Anthropic, or asks about an LLM's pricing.\n"
                       "SKIP when another provider is being worked on."),
        ("security-review", "Complete a security review of the pending changes on the current branch"),
    ],
    "codex": [
        ("imagegen", "Generate or edit raster images when the task benefits from AI-created bitmap visuals."),
        ("skill-installer", "Install Codex skills from a curated list or a GitHub repo path. Use when a user asks "
                            "to list installable skills."),
    ],
    "copilot": [
        ("github-pr-media", "Upload an image or video to GitHub's user attachments API and embed it in a pull "
                            "request description or comment."),
    ],
    "gemini-cli": [
        ("skill-creator", "Guide for creating effective skills. Use when users want to create a new skill."),
    ],
}
ROUTED = [  # prompt, the skill a route picks from the fixture's three (None: no skill fits)
    ("Update the changelog with the commits since the last tag.", "changelog-writer"),
    ("Add an Unreleased section to CHANGELOG.md for what changed since v1.3.0", "changelog-writer"),
    ("Log the fixes merged since the last release tag in our Keep a Changelog file", "changelog-writer"),
    ("Draft release notes for the 1.8 version from the merged pull requests.", "release-notes"),
    ("Prepare the notes for the 3.0 release, with upgrade steps for the breaking changes", "release-notes"),
    ("What should users read before upgrading to 2.0? Write it up with the highlights first.", "release-notes"),
    ("Write a Conventional Commits message for my staged diff.", "commit-message"),
    ("I staged my diff; give me a conventional commit subject and body", "commit-message"),
    ("Suggest a commit subject line under 72 characters for these staged files", "commit-message"),
    ("What's the weather in Paris tomorrow?", None),
    ("Summarise the git history for me", None),  # one word ("git") with two skills each
    ("Rename the variable foo to bar in utils.py", None),
]
CLIS = ("claude-code", "codex", "copilot", "gemini-cli")


def listing(cli: str, package: list[tuple[str, str]] | None = None) -> list[tuple[str, str]]:
    package = PACKAGE_SKILLS if package is None else package
    builtin = BUILTIN_SKILLS[cli]
    if cli == "gemini-cli":  # Gemini CLI lists its own first, then the workspace's in reverse
        return builtin + package[::-1]
    return builtin + package if cli == "codex" else package + builtin


def claude_request(prompt: str, skills: list[tuple[str, str]], *history: dict[str, Any]) -> dict[str, Any]:
    """A Claude Code turn: environment, skills and prompt as text blocks of the first user message."""
    entries = "\n".join(f"- {name}: {about}" for name, about in skills)
    blocks = [
        "<system-reminder>\n# Environment\nPrimary working directory: /work/ws\n</system-reminder>",
        "<system-reminder>\nThe following skills are available for use with the Skill tool:\n\n"
        f"{entries}\n</system-reminder>",
        "<system-reminder>\nToday's date is 2026-11-25.\n</system-reminder>",
        prompt,
    ]
    return {
        "model": "claude-sonnet-4-6", "max_tokens": 32000,
        "system": [{"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": t} for t in blocks]}, *history],
        "tools": [{"name": n, "input_schema": {"type": "object"}} for n in ("Agent", "Bash", "Skill", "Write")],
    }  # fmt: skip


def codex_request(prompt: str, skills: list[tuple[str, str]], *history: dict[str, Any]) -> dict[str, Any]:
    """A Codex turn: developer messages (permissions, skills instructions), then the user's."""
    roots = "- `r0` = `/home/u/.codex/skills/.system`\n- `r1` = `/work/ws/.agents/skills`"
    entries = "\n".join(f"- {name}: {about} (file: r{0 if (name, about) in BUILTIN_SKILLS['codex'] else 1}"
                        f"/{name}/SKILL.md)" for name, about in skills)
    instructions = (
        "<skills_instructions>\n## Skills\nA skill is a set of local instructions to follow that is stored in a "
        f"`SKILL.md` file.\n### Skill roots\n{roots}\n### Available skills\n{entries}\n### How to use skills\n"
        "- Discovery: The list above is the skills available in this session (name + description + short path).\n"
        "- Trigger rules: If the user names a skill, you must use that skill for that turn.\n"
        "</skills_instructions>"
    )
    def message(role: str, text: str) -> dict[str, Any]:
        return {"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]}
    return {
        "model": "gpt-5.5", "stream": False, "tools": [EXEC_TOOL],
        "instructions": "You are Codex, a coding agent.",
        "input": [message("developer", "<permissions instructions>\nworkspace-write\n</permissions instructions>"),
                  message("developer", instructions),
                  message("user", "<environment_context>\n  <cwd>/work/ws</cwd>\n</environment_context>"),
                  message("user", prompt), *history],
    }  # fmt: skip


def _xml_listing(skills: list[tuple[str, str]], indent: str, location: str) -> str:
    from html import escape

    return "<available_skills>\n" + "".join(
        f"{indent}<skill>\n{indent}  <name>{name}</name>\n{indent}  <description>{escape(about)}</description>\n"
        f"{indent}  <location>{location}</location>\n{indent}</skill>\n" for name, about in skills
    ) + "</available_skills>"


def copilot_request(prompt: str, skills: list[tuple[str, str]]) -> dict[str, Any]:
    """A Copilot CLI turn (Anthropic model): skills in the system prompt, a date before the prompt."""
    system = f"You are the GitHub Copilot CLI.\n\n{_xml_listing(skills, '', 'project')}"
    return {
        "model": "claude-sonnet-4.5", "max_tokens": 16000, "system": [{"type": "text", "text": system}],
        "messages": [{"role": "user", "content": [{"type": "text", "text":
            f"<current_datetime>2026-11-25T06:12:44.608+00:00</current_datetime>\n\n{prompt}"}]}],
        "tools": [{"name": n, "input_schema": {"type": "object"}} for n in ("bash", "view", "create", "skill")],
    }  # fmt: skip


def gemini_request(prompt: str, skills: list[tuple[str, str]]) -> dict[str, Any]:
    """A Gemini CLI turn: skills in `systemInstruction`."""
    listed = _xml_listing(skills, "  ", "/work/ws/.agents/skills/SKILL.md")
    return gemini_body(prompt, system=f"You are Gemini CLI.\n\n# Available Agent Skills\n\n{listed}")


def ask(server: ModelServer, cli: str, body: dict[str, Any]) -> tuple[str, Any]:
    """One turn over HTTP as the CLI sends it: ("text", the text) or (the tool, its input)."""
    if cli == "gemini-cli":
        status, _, raw = gemini_post(server, "generateContent", body)
        assert status == 200, raw
        [part] = model_parts(json.loads(raw))
        call = part.get("functionCall")
        return (call["name"], call["args"]) if call else ("text", part["text"])
    if cli == "codex":
        status, answer = post(server, "/v1/responses", body, {"authorization": f"Bearer {server.api_key}"})
        assert status == 200, answer
        [item] = answer["output"]
        if item["type"] == "function_call":
            return item["name"], json.loads(item["arguments"])
        return "text", item["content"][0]["text"]
    status, answer = post(server, "/v1/messages", body,
                          {"anthropic-version": "2023-06-01", "x-api-key": server.api_key})
    assert status == 200, answer
    [block] = answer["content"]
    return (block["name"], block["input"]) if block["type"] == "tool_use" else ("text", block["text"])


REQUESTS = {"claude-code": claude_request, "codex": codex_request, "copilot": copilot_request,
            "gemini-cli": gemini_request}


def loads(cli: str, skill: str) -> tuple[str, Any]:
    """What `skill: <skill>` answers for the CLI: the call that loads it."""
    return {"claude-code": ("Skill", {"skill": skill}),
            "codex": ("exec_command", {"cmd": f"cat .agents/skills/{skill}/SKILL.md"}),
            "copilot": ("skill", {"skill": skill}),
            "gemini-cli": ("activate_skill", {"name": skill})}[cli]


@pytest.mark.parametrize("cli", CLIS)
def test_the_listed_skills_and_descriptions_are_read_as_each_cli_sends_them(cli: str) -> None:
    # Claude Code's multi-line description is one; Copilot's is unescaped ("GitHub's", not
    # "GitHub&#x27;s"); Codex's "- Discovery: ..." instruction line is not a skill.
    body = REQUESTS[cli]("hello", listing(cli))
    assert skill_listing(body) == [(name, " ".join(about.split("\n"))) for name, about in listing(cli)]


def test_route_words_are_lowercase_words_less_stopwords_and_plurals() -> None:
    assert route_words("Update the CHANGELOG.md with the commits since tags; v2 class") == {
        "update", "changelog", "commit", "since", "tag", "class"}
    # the name's hyphen-separated parts are words of the skill: two words shared here
    assert route_skill("write the release notes", [("release-notes", "Drafts a document.")]) == "release-notes"


@pytest.mark.parametrize("cli", CLIS)
def test_a_route_step_loads_the_skill_whose_description_fits_the_prompt(cli: str) -> None:
    with ModelServer(ROUTING_SCENARIOS) as server:
        for prompt, expected in ROUTED:
            answer = ask(server, cli, REQUESTS[cli](prompt, listing(cli)))
            assert answer == (loads(cli, expected) if expected else ("text", NO_SKILL_FITS)), prompt


@pytest.mark.parametrize("cli", ["claude-code", "codex"])
def test_after_a_routed_skill_the_next_step_answers_and_the_same_request_gets_the_same_bytes(cli: str) -> None:
    prompt = "Draft release notes for the 1.8 version from the merged pull requests."
    with ModelServer(ROUTING_SCENARIOS) as server:
        first = REQUESTS[cli](prompt, listing(cli))
        headers = ({"authorization": f"Bearer {server.api_key}"} if cli == "codex"
                   else {"anthropic-version": "2023-06-01", "x-api-key": server.api_key})
        path = "/v1/responses" if cli == "codex" else "/v1/messages"
        status, answer = post(server, path, first, headers)
        assert status == 200 and post(server, path, first, headers)[1] == answer  # stateless, deterministic
        if cli == "codex":
            call = answer["output"][0]
            history = [call, {"type": "function_call_output", "call_id": call["call_id"], "output": "---\n"}]
        else:
            call = answer["content"][0]
            history = [{"role": "assistant", "content": [call]}, {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": call["id"], "content": "Launching skill: release-notes"}]}]
        assert ask(server, cli, REQUESTS[cli](prompt, listing(cli), *history)) == ("text", "Done.")


def test_min_overlap_and_ties_go_to_the_skill_listed_first() -> None:
    twins = [("csv-report", "Summarises a CSV file."), ("csv-chart", "Charts a CSV file.")]
    scenarios = [{"match": "strict", "agent": [{"route": {"min-overlap": 3}}]}, {"match": "*", "agent": [{"route": {}}]}]
    with ModelServer(scenarios) as server:
        prompt = "Look at this csv file"  # "csv" and "file", with both skills
        assert ask(server, "claude-code", claude_request(prompt, twins)) == ("Skill", {"skill": "csv-report"})
        assert ask(server, "claude-code", claude_request(prompt, twins[::-1])) == ("Skill", {"skill": "csv-chart"})
        assert ask(server, "gemini-cli", gemini_request(prompt, twins[::-1])) == (
            "activate_skill", {"name": "csv-chart"})
        assert ask(server, "claude-code", claude_request(f"{prompt}, strict", twins)) == ("text", NO_SKILL_FITS)
        assert ask(server, "claude-code", claude_request("Summarise the csv file", twins)) == (
            "Skill", {"skill": "csv-report"})  # three words with csv-report: the best score wins
        assert ask(server, "claude-code", claude_request(prompt, [])) == ("text", NO_SKILL_FITS)


def test_the_catch_all_answers_only_what_no_other_scenario_matches() -> None:
    catch_all = {"match": "*", "agent": [{"text": "caught"}]}
    with ModelServer([catch_all, *SCENARIOS]) as server:  # first in the list, and still the last resort
        assert ask(server, "claude-code", claude_request("Please grade the csv task.", [])) == (
            "Bash", {"command": "wc -l data.csv", "description": "Run a scripted command"})
        assert ask(server, "claude-code", claude_request("anything else", [])) == ("text", "caught")
        assert ask(server, "codex", codex_request("anything else", [])) == ("text", "caught")
        assert ask(server, "gemini-cli", gemini_request("a prompt with a * in it", [])) == ("text", "caught")
        # A judge request no scenario matches still fails loudly: this catch-all has no judge.
        with claude(server) as client:
            with pytest.raises(anthropic.BadRequestError):
                judge_claude(client, "something else entirely")
            assert judge_claude(client, "grade the csv task").content[0].input["result"] == "FAIL"
        server.add({"match": "*", "judge": {"result": "PASS", "reason": "caught"}})
        assert ask(server, "claude-code", claude_request("anything else", [])) == ("text", "caught")  # the first
        with claude(server) as client:
            assert judge_claude(client, "something else entirely").content[0].input == {
                "result": "PASS", "reason": "caught"}


@pytest.mark.cli
@pytest.mark.parametrize("name", ["claude-code", "codex"])
def test_the_real_cli_loads_the_routed_skill_of_the_fixture(name: str, tmp_path: Path) -> None:
    """tests/fixtures/routing-skills installed whole; its scenarios route each prompt, one per
    skill and one that fits none, and script its changelog task."""
    from aam_eval_action.engines.base import AgentRun, get_engine
    from aam_eval_action.layouts.detect import read_package
    from aam_eval_action.settings import runner_environment
    from aam_eval_action.spec import Sandbox

    engine = get_engine(name)
    reason = engine.available()
    if reason:
        pytest.skip(reason)
    package = read_package(FIXTURES / "routing-skills")
    task = ("Add the changes since the last tag to CHANGELOG.md", "changelog-writer")
    with ModelServer(ROUTING_SCENARIOS) as server:
        env = {"ANTHROPIC_API_KEY": server.api_key, "ANTHROPIC_BASE_URL": server.url,
               "OPENAI_API_KEY": server.api_key, "OPENAI_BASE_URL": server.url + "/v1"}
        for i, (prompt, expected) in enumerate([ROUTED[0], ROUTED[3], ROUTED[6], ROUTED[9], task]):
            run = AgentRun(prompt=prompt, model=engine.default_model, workspace=tmp_path / f"{i}/ws",
                           home=tmp_path / f"{i}/home", env=env, runner_env=runner_environment(), timeout=60,
                           sandbox=Sandbox.model_validate({}))
            run.workspace.mkdir(parents=True)
            run.home.mkdir()
            engine.install(package, run.workspace, None)
            session = engine.run(run)
            assert not session.is_error and session.error is None, (prompt, session.error)
            listed = {skill for skill, _ in skill_listing(server.requests[-1].body)}
            assert {"changelog-writer", "release-notes", "commit-message"} < listed  # beside the CLI's own
            if expected is None:
                assert session.tool_calls == [] and session.output == NO_SKILL_FITS, prompt
                continue
            first = session.tool_calls[0]
            if name == "claude-code":
                assert (first.name, first.input) == ("Skill", {"skill": expected}), prompt
            else:
                assert f".agents/skills/{expected}/SKILL.md" in first.input["command"], prompt
                assert f"name: {expected}\n" in (first.result or ""), prompt
            assert not first.is_error
        changelog = (run.workspace / "CHANGELOG.md").read_text()
        assert "## [Unreleased]" in changelog and "([#142](https://github.com/acme/reports/pull/142))" in changelog
        assert session.output.startswith("I added an Unreleased entry to CHANGELOG.md")
