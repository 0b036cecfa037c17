"""A session's conversations without a CLI: how recorded traffic is split into the main agent's
and each sub-agent's conversation, named, replayed out of order and in the recorded order, and
how the ids a CLI makes up per run are normalised. The real CLI with parallel sub-agents is in
`test_subagents_e2e.py`."""

from __future__ import annotations

import http.client
import json
import threading
import time
from pathlib import Path
from typing import Any

from aam_eval_action.redact import Redactor
from aam_eval_action.replay.conversations import build_traffic, name_conversations, segment
from aam_eval_action.replay.proxy import ReplayProxy
from aam_eval_action.replay.traffic import (
    Normaliser,
    Paths,
    RecordedResponse,
    SseEvent,
    build,
    classify,
    full_requests,
    parse_traffic,
    stored,
)

WS = Path("/tmp/aam-eval-case-cd34/workspace")
PATHS = Paths(WS, WS.parent / "home", WS.parent)
MAIN_SYSTEM = [{"type": "text", "text": "You are the main agent."}]
SUB_SYSTEM = [{"type": "text", "text": "You count lines. COUNTER-v1"}]
TOOLS = [{"name": "Bash", "input_schema": {}}, {"name": "Agent", "input_schema": {}}]
PROMPT_A, PROMPT_B = "Count the lines of a.txt.", "Count the lines of b.txt."
AGENT_ID_A, AGENT_ID_B = "a66f3e8a7c0288ffb", "aa65fc0e9f745b357"


def _norm() -> Normaliser:
    return Normaliser(PATHS, Redactor({}))


def _request(system: list[dict[str, Any]], *messages: dict[str, Any]) -> dict[str, Any]:
    return {"model": "claude-sonnet-4-6", "stream": True, "max_tokens": 32000, "system": system,
            "tools": TOOLS, "messages": list(messages)}


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": "<system-reminder>env</system-reminder>"},
                                        {"type": "text", "text": text}]}


def _calls(*calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "tool_use", "id": i, "name": n, "input": a}
                                             for i, n, a in calls]}


def _results(*results: tuple[str, str]) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": i, "content": t}
                                        for i, t in results]}


def _launched(agent_id: str) -> str:
    return (f"Async agent launched successfully.\nagentId: {agent_id} (internal ID - Use SendMessage with "
            f"to: '{agent_id}' to continue this agent.)\noutput_file: /tmp/claude-0/x/"
            f"4f1c2a9e-1d2b-4c3d-8e9f-0a1b2c3d4e5f/tasks/{agent_id}.output")


def _answer(text: str) -> RecordedResponse:
    return RecordedResponse(status=200, events=[
        SseEvent(data={"type": "message_start", "message": {"usage": {"input_tokens": 5}}}),
        SseEvent(data={"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
    ])


AGENTS = _calls(
    ("toolu_main1", "Agent", {"description": "Count a", "prompt": PROMPT_A, "subagent_type": "counter"}),
    ("toolu_main2", "Agent", {"description": "Count b", "prompt": PROMPT_B, "subagent_type": "counter"}),
)
MAIN_PROMPT = _user("Count both files with two counter agents in parallel.")


def _session(id_a: str = AGENT_ID_A, id_b: str = AGENT_ID_B) -> list[dict[str, Any]]:
    """A parallel session as the CLI sends it, in one arrival order: main 1, main 2, a 1, b 1, b 2, a 2."""
    main2 = _request(MAIN_SYSTEM, MAIN_PROMPT, AGENTS, _results(("toolu_main1", _launched(id_a)),
                                                                ("toolu_main2", _launched(id_b))))
    a1 = _request(SUB_SYSTEM, _user(PROMPT_A))
    b1 = _request(SUB_SYSTEM, _user(PROMPT_B))
    b2 = _request(SUB_SYSTEM, _user(PROMPT_B), _calls(("toolu_b", "Bash", {"command": "wc -l b.txt"})),
                  _results(("toolu_b", "5")))
    a2 = _request(SUB_SYSTEM, _user(PROMPT_A), _calls(("toolu_a", "Bash", {"command": "wc -l a.txt"})),
                  _results(("toolu_a", "3")))
    return [_request(MAIN_SYSTEM, MAIN_PROMPT), main2, a1, b1, b2, a2]


ANSWERS = ["main: start two agents", "main: waiting", "a: run wc", "b: run wc", "b: 5", "a: 3"]


def _recorded() -> Any:
    norm = _norm()
    raw = [("/v1/messages?beta=true", norm.request(r), norm.response(_answer(t)), False)
           for r, t in zip(_session(), ANSWERS, strict=True)]
    return build_traffic("claude", "2.1.330", raw)


def test_a_session_is_split_into_the_main_agent_and_each_sub_agent_started_by_its_call() -> None:
    requests = _session()
    streams = [classify("/v1/messages", r) for r in requests]
    numbers = segment(requests, streams, [200] * len(requests))
    assert numbers == [0, 0, 1, 2, 2, 1]
    named = name_conversations(requests, streams, numbers)
    assert [(c.id, c.agent, c.description, c.parent, c.turn) for c in named] == [
        ("main", None, None, None, None),
        ("counter", "counter", "Count a", "main", 1),
        ("counter-2", "counter", "Count b", "main", 1),
    ]


def test_a_sub_agent_prompt_after_the_clis_tagged_lines_is_still_found_by_its_call() -> None:
    """Copilot starts a sub-agent's conversation with a `<current_datetime>` line before the
    prompt that its `task` call carried."""
    tagged = {"role": "user", "content": [{"type": "text", "text": "<current_datetime>2026-11-23T15:12:02Z"
                                           f"</current_datetime>\n\n{PROMPT_A}"}]}
    requests = [_request(MAIN_SYSTEM, MAIN_PROMPT), _request(MAIN_SYSTEM, MAIN_PROMPT, AGENTS),
                _request(SUB_SYSTEM, tagged)]
    streams = [classify("/v1/messages", r) for r in requests]
    named = name_conversations(requests, streams, [0, 0, 1])
    assert [(c.id, c.description, c.parent) for c in named] == [
        ("main", None, None), ("counter", "Count a", "main")]
    # Text that merely ends like a call's input is not its prompt.
    other = {"role": "user", "content": [{"type": "text", "text": f"Something else.\n{PROMPT_A}"}]}
    named = name_conversations([*requests[:2], _request(SUB_SYSTEM, other)], streams, [0, 0, 1])
    assert named[1].parent is None


def test_a_retry_after_an_error_stays_in_its_conversation_and_an_identical_root_is_a_new_one() -> None:
    a1 = _request(SUB_SYSTEM, _user(PROMPT_A))
    requests = [a1, a1, a1]
    streams = [classify("/v1/messages", r) for r in requests]
    assert segment(requests, streams, [529, 200, 200]) == [0, 0, 1]


def test_stored_traffic_names_each_exchange_and_compacts_history_within_its_conversation() -> None:
    traffic = _recorded()
    assert [e.conversation for e in traffic.exchanges] == ["main", "main", "counter", "counter-2", "counter-2",
                                                           "counter"]
    # The sub-agent's second request carries its first one's history, not the main agent's.
    assert traffic.exchanges[5].request["$history"] == 1
    again = parse_traffic(stored(traffic))
    assert full_requests(again) == full_requests(traffic)


def test_per_run_agent_ids_uuids_and_temp_dirs_are_normalised_and_put_back_in_answers() -> None:
    first, second = _norm(), _norm()
    recorded = first.request(_session()[1])
    rerun = second.request(_session("a0123456789abcdef", "afedcba9876543210")[1])
    assert recorded == rerun
    text = json.dumps(recorded)
    assert AGENT_ID_A not in text and "$AGENT1" in text and "$AGENT2" in text
    assert "/tmp/claude-$UID/x/$UUID1/tasks/$AGENT1.output" in text
    # A recorded answer that names a sub-agent gets this run's id back.
    assert second.live("SendMessage to: '$AGENT2'") == "SendMessage to: 'afedcba9876543210'"
    assert second.live("$AGENT12 is unknown") == "$AGENT12 is unknown"
    shell = "Command running in background with ID: bq81x2. Output is being written to: /tmp/t/bq81x2.output"
    assert second.text(shell) == ("Command running in background with ID: $TASK1. Output is being written to: "
                                  "/tmp/t/$TASK1.output")
    assert second.live('{"task_id": "$TASK1"}') == '{"task_id": "bq81x2"}'


def test_issued_ids_quoted_in_a_notification_are_renamed_like_the_calls_they_name() -> None:
    norm = _norm()
    norm.response(RecordedResponse(status=200, body={"content": [{"type": "tool_use", "id": "toolu_01XyZabcdef"}]}))
    note = "<task-notification>\n<tool-use-id>toolu_01XyZabcdef</tool-use-id>\n<duration_ms>442</duration_ms>"
    assert norm.text(note) == "<task-notification>\n<tool-use-id>toolu_aam001</tool-use-id>\n<duration_ms>$MS</duration_ms>"


def _serve(proxy: ReplayProxy, request: dict[str, Any], out: dict[str, Any], key: str) -> None:
    conn = http.client.HTTPConnection(proxy.url.removeprefix("http://"), timeout=20)
    try:
        conn.request("POST", "/v1/messages?beta=true", body=json.dumps(request))
        resp = conn.getresponse()
        out[key] = (resp.status, resp.read().decode(), time.monotonic())
    finally:
        conn.close()


def test_concurrent_sub_agents_are_answered_from_their_own_recording_whatever_the_arrival_order() -> None:
    traffic = parse_traffic(stored(_recorded()))
    live = _session("a0123456789abcdef", "afedcba9876543210")
    out: dict[str, Any] = {}
    with ReplayProxy(traffic, _norm()) as proxy:
        for i in (0, 1):
            _serve(proxy, live[i], out, f"main{i + 1}")
        # Sub-agent b asks first this time; each gets its own answer, not the n-th recorded one.
        _together(proxy, out, (live[3], "b1"), (live[2], "a1"))
        _together(proxy, out, (live[5], "a2"), (live[4], "b2"))
    assert proxy.divergence is None
    assert {k: v[0] for k, v in out.items()} == dict.fromkeys(out, 200)
    assert "a: run wc" in out["a1"][1] and "b: run wc" in out["b1"][1]
    assert "b: 5" in out["b2"][1] and "a: 3" in out["a2"][1]
    # Answers go out in the recorded order: a's first answer before b's, although b asked first.
    assert [e.conversation for e in proxy.traffic().exchanges] == [e.conversation for e in traffic.exchanges]
    assert proxy.served == {"main": 2, "counter": 2, "counter-2": 2}


def test_a_changed_sub_agent_prompt_diverges_in_that_sub_agent_and_the_message_names_it() -> None:
    traffic = parse_traffic(stored(_recorded()))
    live = _session()
    live[3] = _request([{"type": "text", "text": "You count lines. COUNTER-v2"}], _user(PROMPT_B))
    out: dict[str, Any] = {}
    with ReplayProxy(traffic, _norm()) as proxy:
        for i, key in ((0, "m1"), (1, "m2"), (2, "a1"), (3, "b1")):
            _serve(proxy, live[i], out, key)
    assert out["b1"][0] == 400
    divergence = proxy.divergence
    assert divergence is not None and divergence.conversation == "counter-2"
    assert divergence.message.startswith(
        "turn 1 of sub-agent `counter-2`, started at main turn 1: the request changed at system[0].text: "
        "recorded `You count lines. COUNTER-v1` → now `You count lines. COUNTER-v2`")


def test_traffic_recorded_before_conversations_were_kept_is_split_again_when_replayed() -> None:
    norm = _norm()
    raw = [("/v1/messages?beta=true", norm.request(r), norm.response(_answer(t)), False)
           for r, t in zip(_session(), ANSWERS, strict=True)]
    old = build("claude", "2.1.330", raw)  # no labels, history counted per stream
    assert old.conversations == [] and {e.conversation for e in old.exchanges} == {None}
    live = _session("a0123456789abcdef", "afedcba9876543210")
    out: dict[str, Any] = {}
    with ReplayProxy(parse_traffic(stored(old)), _norm()) as proxy:
        _serve(proxy, live[0], out, "m1")
        _serve(proxy, live[1], out, "m2")
        _together(proxy, out, (live[3], "b1"), (live[2], "a1"))
        _together(proxy, out, (live[5], "a2"), (live[4], "b2"))
    assert proxy.divergence is None and proxy.served == {"main": 2, "counter": 2, "counter-2": 2}
    assert "a: 3" in out["a2"][1] and "b: 5" in out["b2"][1]


def _together(proxy: ReplayProxy, out: dict[str, Any], *requests: tuple[dict[str, Any], str]) -> None:
    threads = [threading.Thread(target=_serve, args=(proxy, request, out, key)) for request, key in requests]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_a_cassette_cannot_make_replay_pause_longer_than_the_cap() -> None:
    traffic = parse_traffic(stored(_recorded()))
    traffic.exchanges[1].gap_ms = 10**9  # a hostile cassette
    live = _session("a0123456789abcdef", "afedcba9876543210")
    out: dict[str, Any] = {}
    started = time.monotonic()
    with ReplayProxy(traffic, _norm()) as proxy:
        _serve(proxy, live[0], out, "m1")
        _serve(proxy, live[1], out, "m2")
    assert out["m2"][0] == 200 and time.monotonic() - started < 5


def test_skill_listings_in_either_order_normalise_alike() -> None:
    first, second = _norm(), _norm()
    a = "Activates a skill (Available: 'skill-creator', 'antigravity-support', 'csv-summary'). Returns"
    b = "Activates a skill (Available: 'antigravity-support', 'skill-creator', 'csv-summary'). Returns"
    assert first.text(a) == second.text(b)
    listing = "<available_skills>\n<skill><name>{}</name></skill>\n<skill><name>{}</name></skill>\n</available_skills>"
    assert first.text(listing.format("b", "a")) == second.text(listing.format("a", "b"))


def _returned(agent_id: str, answer: str, ms: int) -> list[dict[str, Any]]:
    """Claude Code 2.1.197's `Agent` result: the sub-agent's answer, its id and usage."""
    return [{"type": "text", "text": answer},
            {"type": "text", "text": f"agentId: {agent_id} (use SendMessage with to: '{agent_id}', summary: "
                                     f"'<5-10 word recap>' to continue this agent)\n<usage>subagent_tokens: 466\n"
                                     f"tool_uses: 1\nduration_ms: {ms}</usage>"}]


def _returned_session(id_a: str, id_b: str, b_first: bool) -> list[dict[str, Any]]:
    """Main 1, a 1, b 1, main 2: the sub-agents answer at once, and the main agent's second
    request carries both answers in the order the sub-agents finished."""
    results = [("toolu_main1", _returned(id_a, "3", 412)), ("toolu_main2", _returned(id_b, "5", 409))]
    main2 = _request(MAIN_SYSTEM, MAIN_PROMPT, AGENTS, _results(*(results[::-1] if b_first else results)))
    return [_request(MAIN_SYSTEM, MAIN_PROMPT), _request(SUB_SYSTEM, _user(PROMPT_A)),
            _request(SUB_SYSTEM, _user(PROMPT_B)), main2]


def test_results_of_parallel_calls_in_either_order_normalise_alike_with_ids_numbered_in_call_order() -> None:
    """Two sub-agents finishing within milliseconds come back in either order, run to run."""
    first, second = _norm(), _norm()
    recorded = first.request(_returned_session(AGENT_ID_A, AGENT_ID_B, b_first=True)[3])
    rerun = second.request(_returned_session("a0123456789abcdef", "afedcba9876543210", b_first=False)[3])
    assert recorded == rerun
    results = recorded["messages"][-1]["content"]
    assert [r["tool_use_id"] for r in results] == ["toolu_main1", "toolu_main2"]  # as called
    assert "agentId: $AGENT1" in results[0]["content"][1]["text"]  # a's id, the first call's
    assert second.live("to: '$AGENT1'") == "to: 'a0123456789abcdef'"


def test_traffic_recorded_with_results_in_finishing_order_still_replays_and_names_the_same_agents(
    monkeypatch: Any,
) -> None:
    """A recording made before results were stored in call order: b's answer first, b's id
    `$AGENT1`, and the main agent's recorded answer naming it. It replays a run where a's answer
    comes first, and the answer names this run's b."""
    from aam_eval_action.replay import traffic as traffic_module

    with monkeypatch.context() as mp:  # as the recording proxy stored it then
        mp.setattr(traffic_module, "results_in_call_order", lambda body: body)
        norm = _norm()
        answers = ["main: start two agents", "3", "5", f"Asking '{AGENT_ID_B}' again."]
        raw = [("/v1/messages?beta=true", norm.request(r), norm.response(_answer(t)), False)
               for r, t in zip(_returned_session(AGENT_ID_A, AGENT_ID_B, b_first=True), answers, strict=True)]
        old = parse_traffic(stored(build_traffic("claude", "2.1.197", raw)))
    assert "agentId: $AGENT1" in json.dumps(full_requests(old)[3]["messages"][-1]["content"][0])  # b's
    live = _returned_session("a0123456789abcdef", "afedcba9876543210", b_first=False)
    out: dict[str, Any] = {}
    with ReplayProxy(old, _norm()) as proxy:
        _serve(proxy, live[0], out, "main1")
        _together(proxy, out, (live[1], "a1"), (live[2], "b1"))
        _serve(proxy, live[3], out, "main2")
    assert proxy.divergence is None, proxy.divergence
    assert "Asking 'afedcba9876543210' again." in out["main2"][1]
