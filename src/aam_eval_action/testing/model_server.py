"""A scripted model server on 127.0.0.1 for the real agent CLIs and the judge SDKs.

It speaks the Anthropic Messages API (`POST /v1/messages`, SSE when `stream` is set),
the OpenAI Responses API (`POST /v1/responses`, SSE when `stream` is set) and the Gemini API
as Gemini CLI calls it (`POST /v1beta/models/{model}:streamGenerateContent?alt=sse`, one
`data:` event; `:generateContent`, one JSON object). What it answers comes from scenarios,
each chosen by a substring of the request:

    match: "substring of the user's prompt"    # or "*": see the catch-all below
    agent:                      # one step per model turn
      - skill: "pdf-tools"      # Claude: the Skill tool; Codex: a command reading SKILL.md;
                                # Copilot: its `skill` tool; Gemini: activate_skill (a plugin's
                                # `plugin:pdf-tools` is `pdf-tools` on the CLIs without plugins)
      - route: {}               # pick a skill as a model routes (see below); or
                                # `route: {min-overlap: 3}` (default 2); not inside `parallel`
      - bash: "cat notes.txt"   # Claude: Bash; Codex: its shell tool; Gemini: run_shell_command
                                # (which refuses `$(...)`, backticks, `<(...)`)
      - write: {path: "output/hello.txt", content: "Hello"}   # Gemini: write_file
      - subagent: {type: "reviewer", prompt: "Review a.txt", description: "Review a"}
                                # Claude: the Agent tool; Codex: `spawn_agent` (namespace
                                # `multi_agent_v1`) with the prompt as its message; Copilot:
                                # `task` {agent_type, name, description, prompt, mode:
                                # background}; Gemini: `invoke_agent` {agent_name, prompt}.
                                # Either way a sub-agent, which its own scenario answers (by
                                # its prompt); a Gemini sub-agent's text step is its
                                # `complete_task` call (its only way to hand an answer back)
      - parallel:               # several tool calls in one answer (sub-agents run concurrently)
          - subagent: {type: "reviewer", prompt: "Review a.txt"}
          - bash: "wc -l b.txt"
      - {text: "Waiting for the reviewer.", background: true}
                                # said while sub-agents run in the background: Gemini CLI
                                # and Claude Code 2.1.197, whose sub-agent call returns the
                                # answer, skip this step
      - text: "Final answer"    # ends the session
      - sleep: 30               # wait before answering (combines with another key)
      - error: {status: 500, message: "overloaded"}
      - coin: {p: 0.7, heads: {text: "PASS"}, tails: {text: "FAIL"}}   # a seeded die roll: heads
                                # with probability p (see model_script); `ModelServer(seed=N)`,
                                # `--seed N` or the file's top-level `seed`; `coin_draws` counts
    down: {status: 529}         # optional: every request of this case (its agent, judge,
                                # simulated user, drafts, proposals: any request holding its
                                # `match`, `draft-for`, `propose-for` or `mock-server` text) is
                                # answered with this error, retries too; `{cut: true}`: its
                                # answers are cut half-way. `ModelServer(flaky=N)`: every Nth
                                # request fails once (529, 429, 500, a cut, by turns).
    judge: {result: "PASS", reason: "why"}     # or {status: 529, times: 2, then: {...}}
                                               # or a list: successive calls, cycling
                                               # (a `claude plugin eval` judge, whose prompt
                                               # holds the criterion, not the task: a scenario
                                               # matching the criterion answers it in one word)
    needs-skill: "pdf-tools"    # optional: when the request does not list this skill (a
                                # plugin's `<plugin>:pdf-tools` counts) ...
    without-skill:              # ... these steps answer instead of `agent` (a no-skill baseline)
      - text: "I can't read PDFs."
    if-listed: "cracked edition"   # optional: matched only when a listed skill's name or
                                # description holds this (a SKILL.md edited: see model_script)

Which skills are listed, with their descriptions, is read from the request as each CLI sends
it: Claude Code lists skills in a `<system-reminder>` user block ("The following skills are
available for use with the Skill tool:" then `- name: description` lines, a description going
on over the lines up to the next entry); Codex lists them in its `<skills_instructions>` block
(a developer message) as `- name: description (file: .../name/SKILL.md)` lines (the path may
start with a root alias such as `r1/`); Copilot and Gemini CLI in their system prompt as
`<available_skills><skill><name>name</name><description>...</description>` (XML-escaped).
Each CLI lists its own built-in skills beside the package's, and they compete in a route too.
Gemini CLI's prompt is the first user text part that is not its `<session_context>` (which
states the workspace: `- **Workspace Directories:**` then `  - DIR`).

A `route` step chooses the skill the way a model routes, from those names and descriptions: it
scores each listed skill by the distinct words it shares with the user's prompt (lowercase
words of 3+ letters, less a short list of English stopwords, a trailing plural `s` dropped; the
skill's name counts as words too, split at its hyphens; Copilot's `<current_datetime>` before
the prompt is not), takes the highest score if it is at least `min-overlap` (ties: the skill
listed first) and then answers as `skill: <that one>` does, so the session really loads it
(for Codex that reads `.agents/skills/<name>/SKILL.md`, where the package's skills are, not
Codex's own system skills); the next step answers the next turn as usual. When no skill
reaches `min-overlap` it answers `No skill fits; answering directly.` as a text step, so the
session ends there. It reads nothing but the request: the same request, the same choice. With
`route: {miss-every: N}`, every Nth session of the same prompt (counted at its first turn)
answers without a skill instead: a prompt whose fire rate is (N-1)/N, for tests of what sits
near a threshold.

A resumed session (a conversation's next turn: the CLI sends the whole history, then the new
user message) is still matched by its first prompt, and its turn index goes on counting, so
turn 2 plays the steps after turn 1's (not for Codex, whose index counts calls: see below). A
follow-up message can also have a scenario of its own:

    reply-to: "substring of the follow-up message"
    agent:
      - text: "The word was PLUM."

A `reply-to` scenario is matched against the request's latest user message when that is not
its first (the same text the first-prompt match reads: the CLI's injected blocks left out), and
its steps count the model turns since that message; it goes before every `match`, and never
answers a first prompt, a judge or a drafting request. A follow-up no `reply-to` scenario
matches is answered as before. `conversation(body)` lists a request's user and assistant
texts, in order, for tests that check what a resumed session sent.

One scenario with `match: "*"` is the catch-all: it answers every agent prompt that no other
scenario matches (a sub-agent's too), wherever it stands in the list (with several, the
first). A suite of trigger prompts then needs one scenario, `{match: "*", agent: [{route: {}},
{text: "Done."}]}`. It answers a judge request only when it has a `judge` of its own, so a
judge prompt that lost its text still fails loudly.

A simulated user's requests (the `reply_as_user` tool, or the `user_reply` JSON format) are
answered by the first scenario with a `user` list whose `match` occurs in the request (the
conversation it is shown starts with the case's prompt):

    user:
      - {when: "project called", say: "It is called acme."}   # `when`: in the agent's last message
      - {when: "port", say: "8080"}
      - {when: "Wrote", stop: goal-reached}                    # or agent-finished
      - {say: "Please go on."}                                 # no `when`: anything else

No entry matching: `agent-finished`. No scenario: a 400.

`aam-eval init`'s drafting requests (the `draft_cases` tool, or the `drafted_cases` JSON format)
are answered by the scenario whose `draft-for` occurs in the skill under test (the request's
`<skill id="A">` section): `draft: {positives: [...], near_misses: [...], ...}` as the drafted
cases, or any other value as a plain text (a garbage answer). Such a scenario never answers an
agent or judge request; a drafting request no scenario drafts for gets a 400.

`aam-eval tune`'s proposer requests (the `propose_descriptions` tool, or the
`proposed_descriptions` JSON format) are answered by the scenario whose `propose-for` occurs in
the description being improved (the request's `<skill name=...>` section): `propose: [text, ...]`
as the candidate descriptions. It never answers anything else; a proposer request no scenario
proposes for gets a 400.

The turn index is stateless: it is the number of model turns already in the request
(assistant messages for Anthropic, `model` contents for Gemini, function calls for
Responses), so retries of a turn
get the same answer. After the last step the last `text` answers again (or `Done.`).
`codex exec` stops its sub-agents when the main agent's turn ends, so a Codex conversation
that has started sub-agents waits for them: a text step while some have not reported yet
answers with the text and a `wait_agent` call on the first (then only `wait_agent` until
all have reported; those answers take no step), and the next step comes once all have. Such a
conversation counts its answers instead of its calls (what the model gave in one answer is
one turn, as for Claude). That answer is held until the sub-agents (known by their
`thread-id` header, which is their agent id) have had their last answer, and a moment more:
Codex then has their `<subagent_notification>` messages queued when `wait_agent` returns,
and sends them in the very next request, instead of racing them against it.
An agent request that matches no scenario gets `OK.`; side requests without tools (titles,
quota probes) get `OK.` and never use the script. A Gemini side request asking for JSON
(`generationConfig.responseJsonSchema`: Gemini CLI's next-speaker check, model router, loop
check) gets a small JSON text fitting its schema instead (`next_speaker` is `user`). Judge
requests are those offering the `record_verdict` tool (Anthropic) or asking for the `verdict`
JSON format (OpenAI) or for a `{result, reason}` JSON schema (Gemini); one that matches no
scenario gets a 400 `invalid_request_error`, so a judge prompt that lost the text a scenario
looks for fails loudly instead of passing. Answers are deterministic: ids derive from the
request content, so identical requests get byte-identical answers (a Gemini `functionCall` id
is `call_<digest>`; Gemini CLI shows it as `<tool>__call_<digest>`).

Like the real APIs, it checks the API key first (`x-api-key` or `Authorization: Bearer`;
401 `authentication_error` unless it is the server's `api_key`; Gemini: `x-goog-api-key` or
the `key` query parameter, 401 `UNAUTHENTICATED`), then the request's shape (Messages:
`anthropic-version` header, `model`, `max_tokens`, `messages`; Responses: `model`, `input`;
400 `invalid_request_error` naming the field otherwise; Gemini: `contents` with roles and
parts, 400 `INVALID_ARGUMENT`). Gemini errors have its shape: `{"error": {"code", "message",
"status"}}`.

Run standalone with `python -m aam_eval_action.testing.model_server --scenarios FILE`.
"""

from __future__ import annotations

import argparse
import contextlib
import http.server
import json
import re
import signal
import socket
import sys
import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from aam_eval_action.testing.model_base import (
    APPLY_PATCH,
    CODEX_AGENT_TOOLS,
    CODEX_SHELL_TOOLS,
    CODEX_SPAWN,
    CODEX_WAIT,
    CODEX_WAIT_MS,
    CREATED_AT,
    CUSTOM_INPUT,
    DEFAULT_API_KEY,
    DRAFT_FORMAT,
    DRAFT_TOOL,
    GEMINI_COMPLETE,
    GEMINI_INJECTED_PREFIXES,
    HOLD_AFTER_SECONDS,
    HOLD_MAX_SECONDS,
    INJECTED_PREFIXES,
    JUDGE_FORMAT,
    JUDGE_TOOL,
    NAMESPACE_SEP,
    PROPOSE_FORMAT,
    PROPOSE_TOOL,
    RESPONSES_SEARCH,
    TOOL_SEARCH,
    USER_FORMAT,
    USER_TOOL,
    Call,
    RecordedRequest,
    Reply,
)
from aam_eval_action.testing.model_dialects import (
    COPILOT_OWN,
    DEFERRED_AGENT_TOOLS,
    add_file_patch,
    claude_call,
    codex_agent_tool,
    codex_call,
    codex_command,
    codex_wait,
    copilot_call,
    deferred_tool_names,
    gemini_call,
    is_copilot,
    mcp_call,
    namespaced_tool_names,
    offers_spawn,
    step_reply,
    tool_names,
    verdict_reply,
)
from aam_eval_action.testing.model_requests import (
    AGENT_TOOLS,
    ASYNC_AGENT,
    IMAGE_BLOCKS,
    MOCK_AGENT,
    PLUGIN_EVAL_JUDGE,
    RESPONSES_CALLS,
    SUBAGENT_NOTIFICATION,
    _agent_tool,
    _gemini_system,
    _image_text,
    _json,
    _messages,
    _model_item,
    _texts,
    _texts_of_messages,
    _tokens,
    _tool_search,
    agents_answered,
    all_text,
    answers_given,
    asks_for,
    codex_sub_agents,
    conversation,
    digest,
    drafted_skill,
    follow_up,
    gemini_tool_names,
    is_agent_turn,
    is_draft,
    is_gemini,
    is_judge,
    is_mock_agent,
    is_plugin_eval_judge,
    is_proposal,
    is_simulated_user,
    is_vally_judge,
    prompt_text,
    system_text,
    turn_index,
    workspace_dir,
)
from aam_eval_action.testing.model_routing import (
    CATCH_ALL,
    CLAUDE_SKILLS,
    CODEX_SKILL_ENTRY,
    COPILOT_OVERFLOW,
    NAME_ONLY_ENTRY,
    NO_SKILL_FITS,
    REPLY_TO,
    ROUTE_MIN_OVERLAP,
    ROUTE_STOPWORDS,
    SKILL_ENTRY,
    XML_SKILL,
    _claude_skills,
    agent_step,
    is_catch_all,
    listed_skills,
    route_prompt,
    route_scores,
    route_skill,
    route_words,
    routed_step,
    skill_listing,
)
from aam_eval_action.testing.model_script import Script, check_coins, load_scenarios, load_seed
from aam_eval_action.testing.model_wire import (
    ANTHROPIC_ERRORS,
    GEMINI_ROUTE,
    GEMINI_STATUSES,
    _call_id,
    _gemini_problem,
    _messages_problem,
    _responses_problem,
    anthropic_error,
    anthropic_events,
    anthropic_message,
    auth_error,
    custom_tool_call,
    custom_tools,
    function_call,
    gemini_error,
    gemini_response,
    gemini_schema,
    is_gemini_judge,
    message_item,
    openai_error,
    presented_key,
    response_events,
    response_items,
    response_object,
    schema_example,
    shape_error,
    sse,
    tool_search_call,
)

__all__ = [
    "AGENT_TOOLS",
    "ANTHROPIC_ERRORS",
    "APPLY_PATCH",
    "ASYNC_AGENT",
    "CATCH_ALL",
    "CLAUDE_SKILLS",
    "CODEX_AGENT_TOOLS",
    "CODEX_SHELL_TOOLS",
    "CODEX_SKILL_ENTRY",
    "CODEX_SPAWN",
    "CODEX_WAIT",
    "CODEX_WAIT_MS",
    "COPILOT_OVERFLOW",
    "COPILOT_OWN",
    "CREATED_AT",
    "CUSTOM_INPUT",
    "DEFAULT_API_KEY",
    "DEFERRED_AGENT_TOOLS",
    "DRAFT_FORMAT",
    "DRAFT_TOOL",
    "GEMINI_COMPLETE",
    "GEMINI_INJECTED_PREFIXES",
    "GEMINI_ROUTE",
    "GEMINI_STATUSES",
    "HOLD_AFTER_SECONDS",
    "HOLD_MAX_SECONDS",
    "IMAGE_BLOCKS",
    "INJECTED_PREFIXES",
    "JUDGE_FORMAT",
    "JUDGE_TOOL",
    "MOCK_AGENT",
    "NAMESPACE_SEP",
    "NAME_ONLY_ENTRY",
    "NO_SKILL_FITS",
    "PLUGIN_EVAL_JUDGE",
    "PROPOSE_FORMAT",
    "PROPOSE_TOOL",
    "REPLY_TO",
    "RESPONSES_CALLS",
    "RESPONSES_SEARCH",
    "ROUTE_MIN_OVERLAP",
    "ROUTE_STOPWORDS",
    "SKILL_ENTRY",
    "SUBAGENT_NOTIFICATION",
    "TOOL_SEARCH",
    "USER_FORMAT",
    "USER_TOOL",
    "XML_SKILL",
    "Call",
    "ModelServer",
    "RecordedRequest",
    "Reply",
    "Script",
    "_agent_tool",
    "_call_id",
    "_claude_skills",
    "_gemini_problem",
    "_gemini_system",
    "_image_text",
    "_json",
    "_messages",
    "_messages_problem",
    "_model_item",
    "_responses_problem",
    "_texts",
    "_texts_of_messages",
    "_tokens",
    "_tool_search",
    "add_file_patch",
    "agent_step",
    "agents_answered",
    "all_text",
    "answers_given",
    "anthropic_error",
    "anthropic_events",
    "anthropic_message",
    "asks_for",
    "auth_error",
    "check_coins",
    "claude_call",
    "codex_agent_tool",
    "codex_call",
    "codex_command",
    "codex_sub_agents",
    "codex_wait",
    "conversation",
    "copilot_call",
    "custom_tool_call",
    "custom_tools",
    "deferred_tool_names",
    "digest",
    "drafted_skill",
    "follow_up",
    "function_call",
    "gemini_call",
    "gemini_error",
    "gemini_response",
    "gemini_schema",
    "gemini_tool_names",
    "is_agent_turn",
    "is_catch_all",
    "is_copilot",
    "is_draft",
    "is_gemini",
    "is_gemini_judge",
    "is_judge",
    "is_mock_agent",
    "is_plugin_eval_judge",
    "is_proposal",
    "is_simulated_user",
    "is_vally_judge",
    "listed_skills",
    "load_scenarios",
    "load_seed",
    "main",
    "mcp_call",
    "message_item",
    "namespaced_tool_names",
    "offers_spawn",
    "openai_error",
    "presented_key",
    "prompt_text",
    "response_events",
    "response_items",
    "response_object",
    "route_prompt",
    "route_scores",
    "route_skill",
    "route_words",
    "routed_step",
    "schema_example",
    "shape_error",
    "skill_listing",
    "sse",
    "step_reply",
    "system_text",
    "tool_names",
    "tool_search_call",
    "turn_index",
    "verdict_reply",
    "workspace_dir",
]


# --- HTTP -------------------------------------------------------------------------------


class _HTTPServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    # Many parallel sessions connect at once; the default backlog of 5 would reset some
    # connections under load and the clients' retries would then send requests twice.
    request_queue_size = 128
    owner: ModelServer


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: tests read `requests` instead."""

    def setup(self) -> None:
        super().setup()
        self.server.owner.connections.add(self.connection)

    def finish(self) -> None:
        self.server.owner.connections.discard(self.connection)
        super().finish()

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"null")
        except json.JSONDecodeError:
            body = None
        owner = self.server.owner
        headers = {k.lower(): v for k, v in self.headers.items()}
        owner.record(RecordedRequest(self.path, headers, body if isinstance(body, dict) else {}))
        judging = isinstance(body, dict) and (is_judge(body) or is_plugin_eval_judge(body)
                                              or is_vally_judge(body))
        with owner.serving("judge" if judging else "other"):
            self._serve(body, headers)

    def _serve(self, body: Any, headers: dict[str, str]) -> None:
        route = self.path.split("?", 1)[0]
        owner = self.server.owner
        if route not in ("/v1/messages", "/v1/responses") and not GEMINI_ROUTE.match(route):
            self._send(404, "application/json", b'{"error": "not found"}')
            return
        refused = auth_error(headers, owner.api_keys, self.path) or shape_error(route, headers, body)
        if refused is not None:
            self._answer(route, {}, refused)
            return
        fault = owner.script.down_for(body) or owner.flaky_fault()
        if fault is not None:
            self._fail(route, body, fault)
            return
        if GEMINI_ROUTE.match(route):
            reply = owner.script.judge_reply(body) if is_gemini_judge(body) else owner.gemini_reply(body)
        else:
            reply = (owner.script.judge_reply(body) if is_judge(body)
                     else owner.script.mock_reply(body) if is_mock_agent(body)
                     else owner.script.judge_reply(body, plain=True) if is_plugin_eval_judge(body)
                     else owner.script.judge_reply(body, scored=True) if is_vally_judge(body)
                     else owner.script.user_reply(body) if is_simulated_user(body)
                     else owner.script.draft_reply(body) if is_draft(body)
                     else owner.script.proposal_reply(body) if is_proposal(body) else owner.agent_reply(body))
        owner.sub_agent_asked(headers)
        if reply.hold:
            owner.hold(reply.hold)
        if owner.wait(owner.latency + reply.delay):
            self._answer(route, body, reply)
            owner.sub_agent_answered(headers, reply)

    def _answer(self, route: str, body: dict[str, Any], reply: Reply) -> None:
        gemini = GEMINI_ROUTE.match(route)
        if gemini:
            self._answer_gemini(gemini, body, reply)
            return
        anthropic = route == "/v1/messages"
        if reply.status != 200:
            error = anthropic_error(reply) if anthropic else openai_error(reply)
            self._send(reply.status, "application/json", json.dumps(error).encode())
            return
        rid = digest(route, body)
        if anthropic:
            obj = anthropic_message(reply, body, rid)
            events = anthropic_events(obj)
        else:
            obj = response_object(reply, body, rid)
            events = response_events(obj)
        if body.get("stream"):
            self._send(200, "text/event-stream", sse(events))
        else:
            self._send(200, "application/json", json.dumps(obj).encode())

    def _answer_gemini(self, route: re.Match[str], body: dict[str, Any], reply: Reply) -> None:
        """A GenerateContentResponse: one `data:` event for `:streamGenerateContent?alt=sse`, a JSON
        array of responses without `alt=sse`, one object for `:generateContent`."""
        if reply.status != 200:
            self._send(reply.status, "application/json", json.dumps(gemini_error(reply)).encode())
            return
        model, method = route.groups()
        obj = gemini_response(reply, body, digest(route.group(0), body), model)
        if method == "generateContent":
            self._send(200, "application/json", json.dumps(obj).encode())
        elif "sse" in urllib.parse.parse_qs(self.path.partition("?")[2]).get("alt", []):
            self._send(200, "text/event-stream", f"data: {json.dumps(obj)}\n\n".encode())
        else:
            self._send(200, "application/json", json.dumps([obj]).encode())

    def _fail(self, route: str, body: dict[str, Any], fault: dict[str, Any]) -> None:
        """A scripted outage: an error status (`{status: 529}`; its type as the API names it),
        or (`{cut: true}`) an answer whose stream ends half-way, as an API or a proxy cuts it.
        Either says to retry at once, so a client's retries take no time."""
        self._quick_retry = True
        if fault.get("cut"):
            self._cut = True
            self._answer(route, body, Reply(text="An answer that the API cuts before its end, mid-sentence."))
            return
        message = str(fault.get("message", "scripted outage"))
        self._answer(route, body, Reply(text=message, status=int(fault.get("status", 529))))

    def _send(self, status: int, content_type: str, data: bytes) -> None:
        try:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(data)))
            if status == 529 or status >= 500:
                self.send_header("retry-after", "0")
            if getattr(self, "_quick_retry", False):
                self.send_header("retry-after-ms", "10")
            self.end_headers()
            if getattr(self, "_cut", False):  # half the answer, then the connection goes
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client was killed while waiting (a timeout test); nothing to tell it
        finally:
            self._quick_retry = self._cut = False


class ModelServer:
    """A scripted Anthropic + OpenAI Responses + Gemini server on a free port of 127.0.0.1."""

    def __init__(
        self,
        scenarios: list[dict[str, Any]] | None = None,
        latency: float = 0.0,
        port: int = 0,
        api_key: str | tuple[str, ...] = DEFAULT_API_KEY,
        flaky: int = 0,
        seed: int | str = 0,
    ) -> None:
        self.script = Script(scenarios or [], seed=seed)
        self.latency = latency
        self.flaky = flaky
        self._in_flight: dict[str, int] = {}
        self.max_in_flight: dict[str, int] = {}
        """The most requests of a kind (`judge`, `other`) answered at once so far."""
        """Every `flaky`th request fails its first attempt (see `flaky_fault`); 0: none does."""
        self._flaky_count = 0
        keys = (api_key,) if isinstance(api_key, str) else api_key
        self.api_key = keys[0]
        """The key clients should send; any key not in `api_keys` gets a 401, as from the real APIs."""
        self.api_keys = frozenset(keys)
        """Every key accepted (an Anthropic and an OpenAI key can both be real)."""
        self.requests: list[RecordedRequest] = []
        self.connections: set[socket.socket] = set()
        self._port = port
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._sub_agents: dict[str, bool] = {}
        """Codex sub-agents seen (thread id), and whether their last answer was a final text."""
        self._sub_agents_changed = threading.Condition(self._lock)
        self._http: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    def add(self, scenario: dict[str, Any], first: bool = False) -> None:
        """Add a scenario: matched after the earlier ones, or (`first`) before them."""
        self.script.add(scenario, first)

    @property
    def coin_draws(self) -> dict[int, dict[str, int]]:
        """The coin draws so far: scenario index -> {"heads": n, "tails": m}."""
        return self.script.coin_draws

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    @contextlib.contextmanager
    def serving(self, kind: str) -> Iterator[None]:
        """Count a request being answered: `max_in_flight[kind]` is the most at once of a kind
        (`judge`, `other`): how many sessions and judge votes a client ran side by side."""
        with self._lock:
            self._in_flight[kind] = self._in_flight.get(kind, 0) + 1
            self.max_in_flight[kind] = max(self.max_in_flight.get(kind, 0), self._in_flight[kind])
        try:
            yield
        finally:
            with self._lock:
                self._in_flight[kind] -= 1

    @property
    def flaky_failures(self) -> int:
        """How many requests `flaky` has failed so far."""
        return self._flaky_count // self.flaky if self.flaky else 0

    def flaky_fault(self) -> dict[str, Any] | None:
        """With `flaky=N`, every Nth request fails (its retry, the next request, does not), by
        turns a 529, a 429, a 500 and a stream cut mid-answer: the API's weather."""
        if not self.flaky:
            return None
        with self._lock:
            self._flaky_count += 1
            n = self._flaky_count
        if n % self.flaky:
            return None
        faults: list[dict[str, Any]] = [{"status": 529}, {"status": 429}, {"status": 500}, {"cut": True}]
        return faults[(n // self.flaky - 1) % len(faults)]

    def agent_reply(self, body: dict[str, Any]) -> Reply:
        return self.script.agent_reply(body) if is_agent_turn(body) else Reply(text="OK.")

    def gemini_reply(self, body: dict[str, Any]) -> Reply:
        """A Gemini agent turn follows the script; a side request (Gemini CLI's next-speaker check,
        loop detection…: no tools) gets `OK.`, or a JSON text fitting the schema it asks for."""
        if is_agent_turn(body):
            return self.script.agent_reply(body)
        schema = gemini_schema(body)
        return Reply(text=json.dumps(schema_example(schema)) if schema else "OK.")

    def sub_agent_asked(self, headers: dict[str, str]) -> None:
        """A Codex sub-agent's request: it is working."""
        self._sub_agent(headers, False)

    def sub_agent_answered(self, headers: dict[str, str], reply: Reply) -> None:
        """A Codex sub-agent's answer went out: it has finished when that was a final text."""
        self._sub_agent(headers, not reply.calls and reply.status == 200)

    def _sub_agent(self, headers: dict[str, str], finished: bool) -> None:
        thread = headers.get("thread-id")
        if headers.get("x-openai-subagent") and thread:
            with self._sub_agents_changed:
                self._sub_agents[thread] = finished
                self._sub_agents_changed.notify_all()

    def hold(self, threads: tuple[str, ...]) -> None:
        """Wait until these Codex sub-agents have had their final answers (at most
        HOLD_MAX_SECONDS), then HOLD_AFTER_SECONDS for Codex to queue their notifications."""
        with self._sub_agents_changed:
            self._sub_agents_changed.wait_for(
                lambda: self._stopping.is_set() or all(self._sub_agents.get(t) for t in threads),
                timeout=HOLD_MAX_SECONDS)
        self.wait(HOLD_AFTER_SECONDS)

    def wait(self, seconds: float) -> bool:
        """Sleep unless the server stops first; True when the answer should still go out."""
        if seconds > 0:
            self._stopping.wait(seconds)
        return not self._stopping.is_set()

    def start(self) -> ModelServer:
        self._http = _HTTPServer(("127.0.0.1", self._port), _Handler)
        self._http.owner = self
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}"
        self._thread = threading.Thread(target=self._http.serve_forever, args=(0.1,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop like a crashed server: open keep-alive connections are cut too."""
        self._stopping.set()
        with self._sub_agents_changed:
            self._sub_agents_changed.notify_all()
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
        for conn in list(self.connections):
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--scenarios", type=Path, help="JSON or YAML file of scenarios")
    parser.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each answer")
    parser.add_argument("--api-key", default=DEFAULT_API_KEY,
                        help=f"the API key clients must send (default: {DEFAULT_API_KEY})")
    parser.add_argument("--seed", help="the coins' seed (default: the file's `seed`, else 0)")
    args = parser.parse_args(argv)
    scenarios = load_scenarios(args.scenarios) if args.scenarios else []
    seed = args.seed if args.seed is not None else (load_seed(args.scenarios) if args.scenarios else None)
    server = ModelServer(scenarios, latency=args.latency, port=args.port, api_key=args.api_key,
                         seed=0 if seed is None else seed).start()
    print(server.url, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with contextlib.suppress(KeyboardInterrupt):
        stop.wait()
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
