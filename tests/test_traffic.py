"""Model traffic without a CLI: normalisation, storage, SSE deltas, divergence, the proxies' wire
behaviour against small local servers, and the CLI version check."""

from __future__ import annotations

import http.client
import http.server
import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from aam_eval_action.fsutil import dump_yaml
from aam_eval_action.redact import Redactor
from aam_eval_action.replay.cli_version import CliVersionError, check_version
from aam_eval_action.replay.divergence import first_difference
from aam_eval_action.replay.proxy import (
    END_SPACING_SECONDS,
    RecordingProxy,
    ReplayProxy,
    Upstream,
    proxy_env,
    upstream_for,
)
from aam_eval_action.replay.traffic import (
    ModelTraffic,
    Normaliser,
    Paths,
    RecordedResponse,
    SseEvent,
    TrafficError,
    attach_shared,
    build,
    detach_shared,
    full_requests,
    merge_deltas,
    parse_sse,
    parse_traffic,
    served_events,
    sse_bytes,
    stored,
    usage,
)

WS = Path("/tmp/aam-eval-case-ab12/workspace")
HOME = Path("/tmp/aam-eval-case-ab12/home")
PATHS = Paths(WS, HOME, WS.parent)
NORM = Normaliser(PATHS, Redactor({"ANTHROPIC_API_KEY": "sk-ant-CANARY-000111"}))


def _tool_use(tid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "tool_use", "id": tid, "name": name, "input": args}]}


def _tool_result(tid: str, text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": text,
                                         "cache_control": {"type": "ephemeral"}}]}


def _claude_request(*history: dict[str, Any], ws: Path = WS, day: str = "2026-11-22") -> dict[str, Any]:
    first = {"role": "user", "content": [
        {"type": "text", "text": f"<system-reminder>\n - Primary working directory: {ws}\nToday's date is {day}.\n"},
        {"type": "text", "text": "Create .env", "cache_control": {"type": "ephemeral"}},
    ]}
    return {
        "model": "claude-sonnet-4-6", "stream": True, "max_tokens": 32000,
        "metadata": {"user_id": json.dumps({"device_id": "d1", "session_id": "s1"})},
        "system": [{"type": "text", "text": f"Memory lives in {ws.parent}/home/.claude/projects/"
                                            f"{str(ws).replace('/', '-')}/memory" + " Be brief." * 120},
                   {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.330.b8b;"}],
        "tools": [{"name": "Write", "input_schema": {}}, {"name": "Bash", "input_schema": {}}],
        "messages": [first, *history],
    }


# --- normalisation -----------------------------------------------------------------------------


def test_the_machine_os_version_and_time_zone_are_normalised_but_not_the_platform() -> None:
    laptop = "# Environment\n - Platform: linux\n - OS Version: Linux 6.18.44-fc-v669\n<timezone>Europe/Paris</timezone>"
    runner = "# Environment\n - Platform: linux\n - OS Version: Linux 6.8.0-1017-azure\n<timezone>Etc/UTC</timezone>"
    assert NORM.text(laptop) == NORM.text(runner)
    assert " - OS Version: $OS" in NORM.text(laptop) and "<timezone>$TZ</timezone>" in NORM.text(laptop)
    assert NORM.text(laptop) != NORM.text(laptop.replace("Platform: linux", "Platform: darwin"))


def test_two_runs_in_different_workspaces_and_days_normalise_to_the_same_request() -> None:
    other_ws = Path("/tmp/aam-eval-case-zz99/workspace")
    other = Normaliser(Paths(other_ws, other_ws.parent / "home", other_ws.parent), NORM.redactor)
    a = NORM.request(_claude_request(_tool_use("t1", "Write", {"file_path": f"{WS}/.env"})))
    live = _claude_request(_tool_use("t1", "Write", {"file_path": f"{other_ws}/.env"}), ws=other_ws, day="2027-01-02")
    live["metadata"] = {"user_id": "someone else"}
    b = other.request(live)
    assert a == b
    assert "metadata" not in a and "cache_control" not in json.dumps(a)
    text = json.dumps(a)
    assert "$WORKSPACE/.env" in text and "Today's date is $DATE" in text
    assert "$HOME/.claude/projects/$PROJECT/memory" in text and "/tmp/" not in text


def test_codex_run_ids_chunk_ids_and_wall_times_are_normalised() -> None:
    def body(chunk: str, seconds: str, item_id: str) -> dict[str, Any]:
        return {
            "prompt_cache_key": item_id, "client_metadata": {"turn_id": item_id},
            "input": [
                {"type": "message", "id": f"msg_{item_id}", "role": "user",
                 "content": [{"type": "input_text", "text": f"<current_date>{item_id}</current_date>"}]},
                {"type": "function_call_output", "id": f"fco_{item_id}", "call_id": "call_1",
                 "output": f"Chunk ID: {chunk}\nWall time: {seconds} seconds\nProcess exited with code 0"},
            ],
        }
    assert NORM.request(body("2191d4", "0.0000", "a")) == NORM.request(body("f40c6b", "0.0312", "b"))


def test_git_shas_in_the_git_status_are_normalised_but_not_elsewhere() -> None:
    status = "gitStatus: Current branch: main\nRecent commits:\n1b81c47 Add a\na5c2903f Add b"
    assert NORM.text(status).endswith("$SHA Add a\n$SHA Add b")
    assert NORM.text("commit 1b81c47 is mentioned") == "commit 1b81c47 is mentioned"


def test_secrets_are_redacted_from_requests_and_answers() -> None:
    request = NORM.request({"messages": [{"role": "user", "content": "key sk-ant-CANARY-000111"}]})
    answer = NORM.response(RecordedResponse(status=200, body={"echo": "sk-ant-CANARY-000111"}))
    assert "CANARY" not in json.dumps(request) + json.dumps(answer.body)


def test_ids_the_api_issues_are_renamed_in_answers_and_where_requests_echo_them() -> None:
    norm = Normaliser(PATHS, NORM.redactor)
    answer = norm.response(RecordedResponse(status=200, events=[
        SseEvent(event="message_start", data={"type": "message_start", "message": {"id": "msg_01XyZabc"}}),
        SseEvent(event="content_block_start", data={"type": "content_block_start", "index": 0, "content_block":
                 {"type": "tool_use", "id": "toolu_01AbCdEf", "name": "Bash", "input": {}}}),
    ]))
    assert [e.data.get("message", e.data.get("content_block"))["id"] for e in answer.events or []] == [
        "msg_aam001", "toolu_aam002"]
    request = norm.request(_claude_request(_tool_use("toolu_01AbCdEf", "Bash", {}), _tool_result("toolu_01AbCdEf", "ok")))
    assert request["messages"][1]["content"][0]["id"] == "toolu_aam002"
    assert request["messages"][2]["content"][0]["tool_use_id"] == "toolu_aam002"
    # Served again in a replay, renamed ids keep their names and new ones follow on.
    again = Normaliser(PATHS, NORM.redactor)
    assert again.ids.issue("toolu_aam002") == "toolu_aam002" and again.ids.issue("call_9f8e7d6c") == "call_aam003"


# --- storage -----------------------------------------------------------------------------------


def _exchange(request: dict[str, Any], text: str = "ok") -> tuple[str, dict[str, Any], RecordedResponse, bool]:
    events = [SseEvent(event="message_start", data={"type": "message_start", "message": {"usage": {"input_tokens": 10}}}),
              SseEvent(event="content_block_delta", data={"type": "content_block_delta", "index": 0,
                                                          "delta": {"type": "text_delta", "text": text}}),
              SseEvent(event="message_delta", data={"type": "message_delta", "usage": {"output_tokens": 3}})]
    return "/v1/messages?beta=true", NORM.request(request), NORM.response(RecordedResponse(status=200, events=events)), False


def test_system_and_tools_are_stored_once_and_history_as_a_count() -> None:
    r1 = _claude_request()
    r2 = _claude_request(_tool_use("t1", "Write", {"file_path": f"{WS}/.env"}), _tool_result("t1", "refused"))
    traffic = build("claude", "2.1.330", [_exchange(r1), _exchange(r2)])
    text = dump_yaml(traffic.model_dump(mode="json", exclude_none=True))
    assert text.count("Memory lives in") == 1 and text.count("input_schema") == 2
    assert sorted(k.split("-")[0] for k in traffic.shared) == ["Bash", "Write", "system"]
    second = traffic.exchanges[1].request
    assert second["$history"] == 1 and len(second["messages"]) == 2
    again = ModelTraffic.model_validate(yaml.safe_load(text))
    assert full_requests(again) == [NORM.request(r1), NORM.request(r2)]
    assert usage(again.exchanges) == {"input_tokens": 20, "output_tokens": 6}


def test_the_shared_table_can_live_in_a_store_common_to_all_cases() -> None:
    first = build("claude", "2.1.330", [_exchange(_claude_request())])
    other_day = build("claude", "2.1.330", [_exchange(_claude_request(day="2026-11-23"))])
    # Long blocks are shared (the same in every case); short ones stay inline in the request.
    assert first.shared == other_day.shared
    assert "x-anthropic-billing-header" in json.dumps(first.exchanges[0].request)
    alone, store = detach_shared(first)
    assert alone.shared == {} and "Memory lives in" not in dump_yaml(alone.model_dump(mode="json"))
    assert full_requests(attach_shared(alone, store)) == full_requests(first)
    with pytest.raises(KeyError, match="shared entries missing from the store: Bash-"):
        attach_shared(alone, {})


def test_a_path_split_across_json_fragments_is_rewritten_for_the_new_workspace() -> None:
    args = json.dumps({"file_path": f"{WS}/notes/a.txt", "content": "hi"})
    cut = args.index("aam-eval-case") + 5  # the path is split in the middle
    wire = [
        SseEvent(event="content_block_start", data={"type": "content_block_start", "index": 0,
                                                    "content_block": {"type": "tool_use", "id": "t1", "name": "Write", "input": {}}}),
        SseEvent(event="ping", data={"type": "ping"}),
        *[SseEvent(event="content_block_delta", data={"type": "content_block_delta", "index": 0,
                                                      "delta": {"type": "input_json_delta", "partial_json": part}})
          for part in (args[:cut], args[cut:])],
        SseEvent(event="content_block_stop", data={"type": "content_block_stop", "index": 0}),
    ]
    recorded = NORM.response(RecordedResponse(status=200, events=parse_sse(sse_bytes(wire))))
    assert recorded.events is not None and len(recorded.events) == 3
    assert json.loads(recorded.events[1].data["delta"]["partial_json"])["file_path"] == "$WORKSPACE/notes/a.txt"

    live_ws = Path('/tmp/new "quoted" run/workspace')
    served = served_events(recorded.events, Paths(live_ws, live_ws.parent / "home"))
    assert json.loads(served[1].data["delta"]["partial_json"])["file_path"] == f"{live_ws}/notes/a.txt"


def test_responses_deltas_merge_and_sequence_numbers_are_renumbered() -> None:
    events = [SseEvent(event="response.function_call_arguments.delta",
                       data={"type": "response.function_call_arguments.delta", "item_id": "fc1",
                             "output_index": 0, "delta": part, "sequence_number": n})
              for n, part in enumerate(('{"cmd": "cat ', f'{WS}/a.txt"}}'))]
    merged = merge_deltas(NORM.response(RecordedResponse(status=200, events=events)).events or [])
    assert len(merged) == 1 and merged[0].data["delta"] == '{"cmd": "cat $WORKSPACE/a.txt"}'
    assert served_events(merged, PATHS)[0].data["sequence_number"] == 0


# --- divergence --------------------------------------------------------------------------------


def test_a_changed_tool_result_names_the_tool_call_it_answers() -> None:
    recorded = NORM.request(_claude_request(
        _tool_use("t1", "Write", {"file_path": f"{WS}/.env"}),
        _tool_result("t1", "PreToolUse:Write hook error: [hook]: Blocked: writing .env files is not allowed")))
    live = NORM.request(_claude_request(
        _tool_use("t1", "Write", {"file_path": f"{WS}/.env"}),
        _tool_result("t1", f"File created successfully at: {WS}/.env")))
    divergence = first_difference(recorded, live)
    assert divergence is not None
    assert (divergence.turn, divergence.path) == (2, "messages[2].content[0].content")
    assert (divergence.tool_name, divergence.tool_use_id, divergence.tool_input) == ("Write", "t1", "$WORKSPACE/.env")
    assert divergence.message == (
        "turn 2: the Write tool result ($WORKSPACE/.env) changed: recorded "
        "`PreToolUse:Write hook error: [hook]: Blocked: writing .env files is not allowed` "
        "→ now `File created successfully at: $WORKSPACE/.env`"
    )
    assert first_difference(recorded, recorded) is None


def test_a_changed_skill_body_beside_its_tool_result_names_the_skill_call() -> None:
    def loaded(body: str) -> dict[str, Any]:
        result = _tool_result("t1", "Launching skill: csv-summary")
        result["content"].append({"type": "text", "text": f"Base directory for this skill: x\n\n{body}"})
        return NORM.request(_claude_request(_tool_use("t1", "Skill", {"skill": "csv-summary"}), result))
    divergence = first_difference(loaded("Run the script."), loaded("Run the script. Mention the file."))
    assert divergence is not None and divergence.path == "messages[2].content[1].text"
    assert (divergence.tool_name, divergence.tool_input) == ("Skill", "csv-summary")
    assert divergence.message.startswith("turn 2: the Skill tool result (csv-summary) changed: recorded `")


def test_a_changed_function_call_output_names_the_command() -> None:
    def body(output: str) -> dict[str, Any]:
        return {"input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
            {"type": "function_call", "call_id": "c1", "name": "exec_command",
             "arguments": json.dumps({"cmd": "python3 scripts/summarize.py fixtures/sales.csv"})},
            {"type": "function_call_output", "call_id": "c1", "output": output},
        ], "tools": [{"name": "exec_command"}]}
    divergence = first_difference(body("Rows: 3\n- Total units: 35"), body("Rows: 3\n- Sum of units: 35"))
    assert divergence is not None and divergence.turn == 2 and divergence.path == "input[2].output"
    assert divergence.tool_name == "exec_command"
    assert divergence.tool_input == "python3 scripts/summarize.py fixtures/sales.csv"
    assert divergence.recorded == "Rows: 3 - Total units: 35" and divergence.live == "Rows: 3 - Sum of units: 35"


def test_a_difference_outside_tool_results_gives_the_path_and_long_values_are_cut_near_it() -> None:
    recorded = {"system": "x" * 500 + "A" + "y" * 500}
    live = {"system": "x" * 500 + "B" + "y" * 500}
    divergence = first_difference(recorded, live)
    assert divergence is not None and divergence.tool_name is None
    assert divergence.message.startswith("turn 1: the request changed at system: recorded `…xxx")
    assert len(divergence.recorded or "") < 200 and "A" in (divergence.recorded or "")


def test_rerun_ignore_patterns_apply_to_both_sides() -> None:
    recorded = {"messages": [{"role": "user", "content": "built at 10:01:02 in /tmp/tmpab12cd"}]}
    live = {"messages": [{"role": "user", "content": "built at 11:22:33 in /tmp/tmpzz99yy"}]}
    assert first_difference(recorded, live) is not None
    ignore = [re.compile(r"\d\d:\d\d:\d\d"), re.compile(r"/tmp/tmp\w+")]
    assert first_difference(recorded, live, ignore=ignore) is None


def _gemini_resumed(*results: dict[str, Any]) -> dict[str, Any]:
    call = {"functionCall": {"name": "activate_skill", "args": {"name": "project-setup"}}}
    return {"contents": [{"role": "user", "parts": [{"text": "Set up a project."}]},
                         {"role": "model", "parts": [call]},
                         *({"role": "user", "parts": [r]} for r in results),
                         {"role": "model", "parts": [{"text": "What is it called?"}]},
                         {"role": "user", "parts": [{"text": "acme"}]}]}


def test_a_gemini_tool_result_sent_twice_on_resume_or_once_is_the_same_request() -> None:
    answer = {"functionResponse": {"name": "activate_skill", "response": {"output": "# Project setup"}}}
    twice, once = _gemini_resumed(answer, answer), _gemini_resumed(answer)
    assert first_difference(twice, once) is None and first_difference(once, twice) is None
    changed = {"functionResponse": {"name": "activate_skill", "response": {"output": "# Project set-up"}}}
    divergence = first_difference(twice, _gemini_resumed(changed, changed))
    assert divergence is not None and divergence.path.startswith("contents[2].parts[0]")
    # A second, different result is not a repeat.
    assert first_difference(once, _gemini_resumed(answer, changed)) is not None


def test_damaged_or_newer_traffic_is_refused_with_the_reason() -> None:
    good = stored(build("claude", "2.1.330", [_exchange(_claude_request())]))
    assert full_requests(parse_traffic(good)) == [NORM.request(_claude_request())]
    with pytest.raises(TrafficError, match="version 9 is newer"):
        parse_traffic({**good, "version": 9})
    with pytest.raises(TrafficError, match=r"damaged model traffic: exchanges\.0\.stream"):
        parse_traffic({**good, "exchanges": [{**good["exchanges"][0], "stream": "chat"}]})
    with pytest.raises(TrafficError, match="unknown shared entry 'Bash-"):
        parse_traffic({**good, "shared": {k: v for k, v in good["shared"].items() if not k.startswith("Bash")}})


def test_each_engine_is_pointed_at_the_proxy_and_its_upstream_comes_from_the_run_env() -> None:
    assert proxy_env("claude-code", "http://127.0.0.1:5") == {"ANTHROPIC_BASE_URL": "http://127.0.0.1:5"}
    assert proxy_env("codex", "http://127.0.0.1:5") == {"OPENAI_BASE_URL": "http://127.0.0.1:5/v1"}
    assert upstream_for("claude-code", {}).url("/v1/messages?beta=true") == "https://api.anthropic.com/v1/messages?beta=true"
    assert upstream_for("codex", {}).url("/v1/responses") == "https://api.openai.com/v1/responses"
    gateway = upstream_for("codex", {"OPENAI_BASE_URL": "https://gw.example/openai/v1"}, key="k")
    assert gateway.url("/v1/responses") == "https://gw.example/openai/v1/responses" and gateway.key == "k"


# --- the proxies on the wire -------------------------------------------------------------------


class _SlowSse(http.server.BaseHTTPRequestHandler):
    """An upstream that sends one event, then waits until the test has seen it."""

    protocol_version = "HTTP/1.1"
    release = threading.Event()
    seen: list[dict[str, str]] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        self.seen.append({k.lower(): v for k, v in self.headers.items()})
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        self.wfile.write(b'event: message_start\ndata: {"type": "message_start", "message": {}}\n\n')
        self.wfile.flush()
        self.release.wait(10)
        self.wfile.write(b'event: message_stop\ndata: {"type": "message_stop"}\n\n')
        self.wfile.flush()


@pytest.fixture
def slow_upstream() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _SlowSse)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    _SlowSse.release.set()
    server.shutdown()
    server.server_close()


def _post(url: str, path: str, body: dict[str, Any]) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection(url.removeprefix("http://"), timeout=10)
    try:
        conn.request("POST", path, body=json.dumps(body), headers={"content-type": "application/json"})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def _read_until(sock: socket.socket, marker: bytes) -> bytes:
    got = b""
    while marker not in got:
        data = sock.recv(4096)
        if not data:
            break
        got += data
    return got


def test_recording_proxy_streams_chunk_by_chunk_and_never_stores_the_key(slow_upstream: str) -> None:
    _SlowSse.release.clear()
    with RecordingProxy(Upstream(slow_upstream), NORM) as proxy:
        body = json.dumps({"stream": True, "messages": []}).encode()
        head = (
            "POST /v1/messages?beta=true HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            "x-api-key: sk-ant-CANARY-000111\r\nuser-agent: claude-cli/2.1.330 (external, sdk-cli)\r\n"
            f"content-length: {len(body)}\r\n\r\n"
        )
        host, port = proxy.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.sendall(head.encode() + body)
            # The first event arrives while the upstream still holds the rest back.
            assert b"message_start" in _read_until(sock, b"message_start")
            _SlowSse.release.set()
            assert b"message_stop" in _read_until(sock, b"0\r\n\r\n")
    traffic = proxy.traffic()
    assert _SlowSse.seen[0]["x-api-key"] == "sk-ant-CANARY-000111"
    assert (traffic.cli, traffic.cli_version, traffic.provider) == ("claude", "2.1.330", "anthropic-messages")
    events = traffic.exchanges[0].response.events or []
    assert [(e.event, e.data["type"]) for e in events] == [(None, "message_start"), (None, "message_stop")]
    assert sse_bytes(events).startswith(b"event: message_start\ndata: {")
    assert "CANARY" not in dump_yaml(traffic.model_dump(mode="json"))


def _finish_times(url: str, bodies: list[dict[str, Any]]) -> list[float]:
    """Post the bodies at once; when each answer had been read to its end (monotonic seconds)."""
    ends: list[float] = [0.0] * len(bodies)

    def one(i: int) -> None:
        _post(url, "/v1/messages?beta=true", bodies[i])
        ends[i] = time.monotonic()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(bodies))]
    for thread in threads:
        thread.start()
    return [ends[i] for i, thread in enumerate(threads) if thread.join() is None]


def test_answers_ending_together_reach_the_cli_spaced_recorded_and_replayed(slow_upstream: str) -> None:
    # Two sub-agents whose answers end within a millisecond of each other leave the CLI a race
    # of its own (which one it sees finish first): the recording proxy spaces the ends, the
    # pause is recorded, and replay keeps it.
    _SlowSse.release.clear()
    agent = {"stream": True, "model": "m", "max_tokens": 100, "tools": [{"name": "Bash"}]}
    bodies = [{**agent, "messages": [{"role": "user", "content": f"Count {name}.txt"}]} for name in "ab"]
    with RecordingProxy(Upstream(slow_upstream), NORM) as proxy:
        threading.Timer(0.5, _SlowSse.release.set).start()  # both upstream streams end at once
        ends = _finish_times(proxy.url, bodies)
    assert abs(ends[0] - ends[1]) >= END_SPACING_SECONDS * 0.9
    traffic = proxy.traffic()
    assert (traffic.exchanges[1].gap_ms or 0) >= END_SPACING_SECONDS * 1000 * 0.9
    with ReplayProxy(traffic, NORM) as replay:
        ends = _finish_times(replay.url, bodies)
    assert replay.divergence is None and abs(ends[0] - ends[1]) >= END_SPACING_SECONDS * 0.9


def test_replay_proxy_answers_by_conversation_and_refuses_a_difference_with_400() -> None:
    counted = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    agent = {"model": "m", "max_tokens": 1000, "tools": [{"name": "Bash"}], "messages": [{"role": "user", "content": "hi"}]}
    traffic = build("claude", "2.1.330", [
        ("/v1/messages/count_tokens?beta=true", NORM.request(counted), RecordedResponse(status=200, body={"input_tokens": 7}), False),
        _exchange(agent, text=f"wrote {WS}/a.txt"),
    ])
    assert [e.stream for e in traffic.exchanges] == ["count_tokens", "agent"]
    live_ws = Path("/tmp/elsewhere/workspace")
    with ReplayProxy(traffic, Normaliser(Paths(live_ws, live_ws.parent / "home"), NORM.redactor)) as proxy:
        streamed = _post(proxy.url, "/v1/messages?beta=true", agent)[1].decode()
        counted_answer = json.loads(_post(proxy.url, "/v1/messages/count_tokens?beta=true", counted)[1])
        status, refused = _post(proxy.url, "/v1/messages?beta=true", agent)
        error = json.loads(refused)
    assert "event: message_start" in streamed and f"wrote {live_ws}/a.txt" in streamed
    assert counted_answer == {"input_tokens": 7}
    assert status == 400 and error["error"]["type"] == "invalid_request_error"
    assert "the CLI sent a request the recording does not have" in error["error"]["message"]
    assert proxy.served == {"main": 1, "count_tokens": 1} and proxy.requests == 3
    assert proxy.divergence is not None and proxy.divergence.turn == 1


def test_a_recorded_overload_is_served_again_for_an_immediate_retry() -> None:
    agent = {"model": "m", "max_tokens": 1000, "tools": [{"name": "Bash"}], "messages": [{"role": "user", "content": "hi"}]}
    overloaded = RecordedResponse(status=529, body={"type": "error", "error": {"type": "overloaded_error"}})
    traffic = build("claude", "2.1.330", [
        ("/v1/messages?beta=true", NORM.request(agent), overloaded, False), _exchange(agent),
    ])
    with ReplayProxy(traffic, Normaliser(PATHS, NORM.redactor)) as proxy:
        conn = http.client.HTTPConnection(proxy.url.removeprefix("http://"), timeout=10)
        try:
            conn.request("POST", "/v1/messages?beta=true", body=json.dumps(agent))
            first = conn.getresponse()
            assert (first.status, first.getheader("retry-after")) == (529, "0")
            first.read()
            conn.request("POST", "/v1/messages?beta=true", body=json.dumps(agent))
            second = conn.getresponse()
            assert second.status == 200 and b"message_start" in second.read()
        finally:
            conn.close()
    assert proxy.divergence is None and proxy.served == {"main": 2}


# --- CLI version -------------------------------------------------------------------------------


def test_a_different_cli_version_is_a_clear_error_naming_both() -> None:
    check_version("claude", "2.1.330", "2.1.330")
    with pytest.raises(CliVersionError) as found:
        check_version("claude", "2.1.197", "2.1.330")
    message = str(found.value)
    assert "recorded with claude 2.1.197 but claude 2.1.330 is on PATH" in message
    assert "@anthropic-ai/claude-code@2.1.197" in message and "--no-rerun" in message
    with pytest.raises(CliVersionError, match="`codex` is not on PATH"):
        check_version("codex", "0.169.0", None)
