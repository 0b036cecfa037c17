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
    judge: {result: "PASS", reason: "why"}     # or {status: 529, times: 2, then: {...}}
                                               # or a list: successive calls, cycling
                                               # (a `claude plugin eval` judge, whose prompt
                                               # holds the criterion, not the task: a scenario
                                               # matching the criterion answers it in one word)
    needs-skill: "pdf-tools"    # optional: when the request does not list this skill (a
                                # plugin's `<plugin>:pdf-tools` counts) ...
    without-skill:              # ... these steps answer instead of `agent` (a no-skill baseline)
      - text: "I can't read PDFs."

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
import hashlib
import html
import http.server
import json
import re
import shlex
import signal
import socket
import sys
import threading
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_API_KEY = "sk-scripted-model-server"
"""The key the server accepts unless it is given another one."""
JUDGE_TOOL = "record_verdict"
JUDGE_FORMAT = "verdict"
DRAFT_TOOL = "draft_cases"
DRAFT_FORMAT = "drafted_cases"
PROPOSE_TOOL = "propose_descriptions"
PROPOSE_FORMAT = "proposed_descriptions"
"""`aam-eval tune`'s proposer request: the tool (Anthropic) or JSON format (OpenAI) it asks for."""
USER_TOOL = "reply_as_user"
USER_FORMAT = "user_reply"
"""`aam-eval init`'s drafting request: the tool (Anthropic) or JSON format (OpenAI) it asks for."""
CREATED_AT = 1_700_000_000
# Text blocks the CLIs add to the user's turn; the prompt is what is left.
INJECTED_PREFIXES = (
    "<system-reminder>",
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<skills_instructions>",
    "<permissions instructions>",
)
GEMINI_INJECTED_PREFIXES = ("<session_context>", "<hook_context>")
"""Gemini CLI's own text parts in the user's turn (its environment: date, OS, the workspace tree)."""
GEMINI_COMPLETE = "complete_task"
"""The tool a Gemini CLI sub-agent must call to hand its answer back (a text answer is an error)."""
CODEX_SHELL_TOOLS = ("exec_command", "shell_command", "shell")
APPLY_PATCH = "apply_patch"
CUSTOM_INPUT = "input"
"""A call to a custom (freeform) Responses tool, such as `apply_patch`, carries its text under this key."""
CODEX_AGENT_TOOLS = "multi_agent_v1"
"""The namespace tool through which Codex starts sub-agents (its `spawn_agent` takes a `message`)."""
CODEX_SPAWN = "spawn_agent"
CODEX_WAIT = "wait_agent"
CODEX_WAIT_MS = 300_000
"""How long one `wait_agent` call waits (it returns as soon as one of its targets finishes)."""
HOLD_MAX_SECONDS = 60.0
HOLD_AFTER_SECONDS = 0.3
"""How long an answer waits at most for the sub-agents it waits on, then after their last answer."""
NAMESPACE_SEP = "."
"""Between a namespace and a tool name in a call's name (`multi_agent_v1.spawn_agent`): function
names cannot contain it, and a Responses answer sends the two apart (`namespace`, `name`)."""


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received, for assertions."""

    path: str
    headers: dict[str, str]
    """Header names in lower case."""
    body: dict[str, Any]


Call = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class Reply:
    """What to answer, independent of the wire format."""

    text: str = ""
    calls: tuple[Call, ...] = ()
    """Tool calls (name, input), all in one answer."""
    status: int = 200
    delay: float = 0.0
    hold: tuple[str, ...] = ()
    """Codex sub-agents (thread ids) that must have had their last answer before this one."""

    @property
    def tool(self) -> str | None:
        return self.calls[0][0] if self.calls else None


# --- request inspection ---------------------------------------------------------------


def _texts(content: Any) -> list[str]:
    """The text parts of a message's content (a string or a list of blocks)."""
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [b["text"] if isinstance(b.get("text"), str) else _image_text(b) for b in content
            if isinstance(b, dict) and (isinstance(b.get("text"), str) or b.get("type") in IMAGE_BLOCKS)]


IMAGE_BLOCKS = ("image", "input_image")


def _image_text(block: dict[str, Any]) -> str:
    """An image block (Messages or Responses) as a scenario can match it: its media type and the
    sha256 of its bytes, `[image image/png sha256=…]`."""
    import base64
    import hashlib

    if block.get("type") == "image":
        kind, data = block["source"].get("media_type"), block["source"].get("data", "")
    else:
        kind, _, data = str(block.get("image_url", "")).removeprefix("data:").partition(";base64,")
    return f"[image {kind} sha256={hashlib.sha256(base64.b64decode(data)).hexdigest()}]"


def _messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Anthropic `messages`, Responses `input` or Gemini `contents` as a list of message-like items
    (a Gemini content becomes a message of its `parts`, a `model` one an assistant message)."""
    if is_gemini(body):
        return [{"role": "assistant" if c.get("role") == "model" else "user", "content": c.get("parts")}
                for c in body["contents"] if isinstance(c, dict)]
    items = body.get("messages", body.get("input", []))
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    return [m for m in items if isinstance(m, dict)]


AGENT_TOOLS = ("Agent", "Task")
"""Claude Code's sub-agent tool (`Task` in older releases)."""
ASYNC_AGENT = "Async agent launched"
"""How a Claude Code `Agent` result starts when the sub-agent runs in the background."""


def agents_answered(body: dict[str, Any]) -> bool:
    """An Anthropic request whose `Agent` calls returned the sub-agents' answers: Claude Code
    2.1.197 waits for them, as Gemini CLI does; 2.1.300 and later start them in the background
    (`Async agent launched…`) and notify the main agent."""
    if not isinstance(body.get("messages"), list):
        return False
    blocks = [b for m in _messages(body) if isinstance(m.get("content"), list)
              for b in m["content"] if isinstance(b, dict)]
    calls = {b.get("id") for b in blocks if b.get("type") == "tool_use" and b.get("name") in AGENT_TOOLS}
    results = [b for b in blocks if b.get("type") == "tool_result" and b.get("tool_use_id") in calls]
    return bool(results) and not any(ASYNC_AGENT in "".join(_texts(r.get("content"))) for r in results)


def is_gemini(body: dict[str, Any]) -> bool:
    """A Gemini API request (`contents`, not `messages` or `input`)."""
    return isinstance(body.get("contents"), list)


def prompt_text(body: dict[str, Any]) -> str:
    """The user's own prompt: the first user message's text that the CLI did not inject."""
    return next((text for role, text in conversation(body) if role == "user"), "")


def conversation(body: dict[str, Any]) -> list[tuple[str, str]]:
    """(role `user` or `assistant`, text) of each message of a request that has text of its own
    (the CLI's injected blocks left out; tool calls and results carry none), in order."""
    injected = INJECTED_PREFIXES + GEMINI_INJECTED_PREFIXES if is_gemini(body) else INJECTED_PREFIXES
    found = []
    for message in _messages(body):
        role = message.get("role")
        texts = [t for t in _texts(message.get("content")) if not t.lstrip().startswith(injected)]
        if role in ("user", "assistant") and texts:
            found.append((str(role), "\n".join(texts)))
    return found


def follow_up(body: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """A resumed session's follow-up: the latest user message's own text, when it is not the
    first, and the request cut to start at that message (to count the turns since). None for
    a conversation with one user message."""
    key = "contents" if is_gemini(body) else "messages" if "messages" in body else "input"
    items = body.get(key)
    if not isinstance(items, list):
        return None
    prompts = [(i, text) for i, item in enumerate(items) if isinstance(item, dict)
               for role, text in conversation({**body, key: [item]}) if role == "user"]
    if len(prompts) < 2:
        return None
    index, text = prompts[-1]
    return text, {**body, key: items[index:]}


def all_text(body: dict[str, Any]) -> str:
    """Every piece of text in a request (system, instructions and messages)."""
    parts = _texts(body.get("system")) + _texts(body.get("instructions"))
    if is_gemini(body):
        parts += _texts(_gemini_system(body))
    for m in _messages(body):
        parts += _texts(m.get("content"))
    return "\n".join(parts)


def asks_for(body: dict[str, Any], tool: str, fmt_name: str) -> bool:
    """Whether a request offers this tool (Anthropic) or asks for this JSON format (OpenAI)."""
    tools = body.get("tools") or []
    if any(isinstance(t, dict) and t.get("name") == tool for t in tools):
        return True
    fmt = (body.get("text") or {}).get("format") or {}
    return isinstance(fmt, dict) and fmt.get("name") == fmt_name


def is_judge(body: dict[str, Any]) -> bool:
    """Judge requests carry the verdict tool (Anthropic) or the verdict format (OpenAI)."""
    return asks_for(body, JUDGE_TOOL, JUDGE_FORMAT)


PLUGIN_EVAL_JUDGE = ("You are grading the output of a coding agent against a criterion.",
                     "You are comparing a NEW coding-agent trajectory against a BASELINE.")
"""How a `claude plugin eval` judge prompt starts (an llm grader's, a baseline grader's)."""


def is_plugin_eval_judge(body: dict[str, Any]) -> bool:
    """A `claude plugin eval` judge's request (Claude Code's own, or ours grading as it does): no
    tool, and a user message in that runner's words; it is answered with one word."""
    if body.get("tools"):
        return False
    texts = _texts_of_messages(body) + ([body["input"]] if isinstance(body.get("input"), str) else [])
    return any(text.lstrip().startswith(PLUGIN_EVAL_JUDGE) for text in texts)


MOCK_AGENT = "You are standing in for the MCP server "


def system_text(body: dict[str, Any]) -> str:
    """A request's system prompt (Messages `system`, a string or blocks; Responses `instructions`)."""
    system = body.get("system", body.get("instructions", ""))
    if isinstance(system, list):
        return "\n".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
    return str(system or "")


def is_mock_agent(body: dict[str, Any]) -> bool:
    """A model asked to play an MCP server (a `claude plugin eval` agent mock, Claude Code's or ours):
    no tool, and that runner's words in the system prompt."""
    return not body.get("tools") and MOCK_AGENT in system_text(body)


def is_simulated_user(body: dict[str, Any]) -> bool:
    """A simulated user's request: it asks for the `reply_as_user` tool or the `user_reply` format."""
    return asks_for(body, USER_TOOL, USER_FORMAT)


def is_draft(body: dict[str, Any]) -> bool:
    """A drafting request of `aam-eval init`: it asks for the drafted-cases tool or format."""
    return asks_for(body, DRAFT_TOOL, DRAFT_FORMAT)


def is_proposal(body: dict[str, Any]) -> bool:
    """A proposer request of `aam-eval tune`: it asks for the proposed-descriptions tool or format."""
    return asks_for(body, PROPOSE_TOOL, PROPOSE_FORMAT)


def drafted_skill(body: dict[str, Any]) -> str:
    """The body of the skill under test in a drafting request (`<skill id="A" ...>`)."""
    found = re.search(r'<skill id="A"[^>]*>(.*?)</skill>', all_text(body), re.S)
    return found.group(1) if found else ""


def is_agent_turn(body: dict[str, Any]) -> bool:
    """A real agent turn offers tools; side requests (titles, quota probes) do not."""
    if is_gemini(body):
        return bool(gemini_tool_names(body))
    return bool(body.get("tools")) and int(body.get("max_tokens") or 4096) > 64


RESPONSES_CALLS = ("function_call", "custom_tool_call", "local_shell_call")


def turn_index(body: dict[str, Any]) -> int:
    """Model turns already taken: assistant messages or function calls in the history (for a
    Codex conversation that started sub-agents, the model's answers: see `answers_given`)."""
    if "messages" in body or is_gemini(body):  # a ToolSearch loading an `mcp` step's tool is not one
        return sum(1 for m in _messages(body) if m.get("role") == "assistant" and not _tool_search(m))
    items = _messages(body)
    if any(_agent_tool(m) for m in items):
        waits_only = (all(_agent_tool(m, CODEX_WAIT) for m in answer) for answer in answers_given(items))
        return sum(1 for only in waits_only if not only)
    return sum(1 for m in items if m.get("type") in RESPONSES_CALLS)


def _tool_search(message: dict[str, Any]) -> bool:
    """An assistant message that only calls ToolSearch (Claude Code loading a deferred tool)."""
    content = message.get("content")
    blocks = content if isinstance(content, list) else []
    uses = [c for c in blocks if isinstance(c, dict) and c.get("type") == "tool_use"]
    return bool(uses) and all(u.get("name") == TOOL_SEARCH for u in uses)


def _model_item(item: dict[str, Any]) -> bool:
    return item.get("type") in (*RESPONSES_CALLS, "reasoning") or item.get("role") == "assistant"


def _agent_tool(item: dict[str, Any], name: str | None = None) -> bool:
    """Whether an item is a call to Codex's sub-agent tools (to one of them, given its name)."""
    return (item.get("type") == "function_call" and item.get("namespace") == CODEX_AGENT_TOOLS
            and name in (None, item.get("name")))


def answers_given(items: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The model's answers in a Responses history: each run of its own items (calls, assistant
    messages, reasoning) with nothing sent back in between is one answer."""
    answers: list[list[dict[str, Any]]] = []
    for i, item in enumerate(items):
        if _model_item(item):
            if i and _model_item(items[i - 1]):
                answers[-1].append(item)
            else:
                answers.append([item])
    return answers


def _json(text: Any) -> Any:
    try:
        return json.loads(text) if isinstance(text, str) else None
    except json.JSONDecodeError:
        return None


SUBAGENT_NOTIFICATION = re.compile(r"<subagent_notification>\s*(\{.*?\})\s*</subagent_notification>", re.S)


def codex_sub_agents(items: list[dict[str, Any]]) -> tuple[list[str], bool]:
    """(the sub-agents a Codex conversation started that have not reported yet, in the order they
    were started; whether its last answer waited for them). An agent has reported once a
    `wait_agent` result or a `<subagent_notification>` gives it a final status."""
    spawns = {m.get("call_id") for m in items if _agent_tool(m, CODEX_SPAWN)}
    started: list[str] = []
    reported: set[str] = set()
    for item in items:
        output = _json(item.get("output")) if item.get("type") == "function_call_output" else None
        agent = output.get("agent_id") if isinstance(output, dict) else None
        if item.get("call_id") in spawns and isinstance(agent, str):
            started.append(agent)
        if isinstance(output, dict) and isinstance(output.get("status"), dict):  # a wait_agent result
            reported |= {k for k, v in output["status"].items() if v not in ("pending_init", "running")}
        if item.get("role") == "user":
            for text in _texts(item.get("content")):
                for found in SUBAGENT_NOTIFICATION.finditer(text):
                    note = _json(found.group(1))
                    if isinstance(note, dict) and isinstance(note.get("agent_path"), str):
                        reported.add(note["agent_path"])
    answers = answers_given(items)
    waited = bool(answers) and any(_agent_tool(m, CODEX_WAIT) for m in answers[-1])
    return [a for a in started if a not in reported], waited


def workspace_dir(body: dict[str, Any]) -> str | None:
    """The agent's working directory, as Claude Code, Codex or Gemini CLI states it in the request."""
    text = all_text(body)
    if is_gemini(body):  # its <session_context>: "- **Workspace Directories:**" then "  - DIR" lines
        found = re.search(r"\*\*Workspace Directories:\*\*\n {2}- (.+)", text)
        return found.group(1) if found else None
    found = (re.search(r"Primary working directory: (\S+)", text) or re.search(r"<cwd>([^<]+)</cwd>", text)
             or re.search(r"Current working directory: (\S+)", text))
    return found.group(1) if found else None


def digest(*parts: Any) -> str:
    """A short stable hash of JSON-able parts, for deterministic ids."""
    raw = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(raw.encode()).hexdigest()[:24]


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


# --- the script -------------------------------------------------------------------------


class Script:
    """The scenarios and the per-scenario judge failure counters (thread-safe)."""

    def __init__(self, scenarios: list[dict[str, Any]]) -> None:
        self._scenarios = list(scenarios)
        self._judge_failures: dict[int, int] = {}
        self._judge_calls: dict[int, int] = {}
        self._routes: dict[str, int] = {}
        """Sessions routed so far, per scenario and prompt (a route's `miss-every`)."""
        self._lock = threading.Lock()

    def add(self, scenario: dict[str, Any]) -> None:
        with self._lock:
            self._scenarios.append(scenario)

    def find(self, text: str, judge: bool = False) -> tuple[int, dict[str, Any]] | None:
        """The first scenario whose `match` occurs in the text; else the first catch-all
        (`match: "*"`), for a judge request only one with a `judge` of its own."""
        with self._lock:
            scenarios = [(i, s) for i, s in enumerate(self._scenarios)
                         if "draft-for" not in s and "propose-for" not in s and REPLY_TO not in s
                         and "mock-server" not in s]  # a model playing an MCP server plays no agent
        for i, s in scenarios:
            if not is_catch_all(s) and str(s.get("match", "")) in text:
                return i, s
        return next(((i, s) for i, s in scenarios if is_catch_all(s) and (not judge or "judge" in s)), None)

    def agent_reply(self, body: dict[str, Any]) -> Reply:
        follow = self.find_follow_up(body)
        found, since = follow if follow is not None else (self.find(prompt_text(body)), body)
        if found is None:
            return Reply(text="OK.")
        waits = is_gemini(body) or agents_answered(body)
        turn = turn_index(since)
        step = agent_step(found[1], turn, listed_skills(body), waits=waits)
        if "route" in step:
            options = step["route"] if isinstance(step["route"], dict) else {}
            every = int(options.get("miss-every", 0) or 0)
            if every > 0 and turn == 0:  # every Nth session of this prompt answers without a skill
                with self._lock:
                    key = f"route:{found[0]}:{route_prompt(since)}"
                    self._routes[key] = self._routes.get(key, 0) + 1
                    missed = self._routes[key] % every == 0
                if missed:
                    step = {k: v for k, v in step.items() if k != "route"} | {"text": NO_SKILL_FITS}
            if "route" in step:
                step = routed_step(step, route_prompt(since), skill_listing(body))
        reply = step_reply(step, body)
        return reply if "messages" in body or is_gemini(body) else codex_wait(reply, body)

    def find_follow_up(
        self, body: dict[str, Any]
    ) -> tuple[tuple[int, dict[str, Any]], dict[str, Any]] | None:
        """The first `reply-to` scenario whose text occurs in a resumed session's follow-up, and
        the request cut to start at that message (see `follow_up`); None without one."""
        asked = follow_up(body)
        if asked is None:
            return None
        with self._lock:
            scenarios = [(i, s) for i, s in enumerate(self._scenarios) if REPLY_TO in s]
        for i, s in scenarios:
            if str(s[REPLY_TO]) in asked[0]:
                return (i, s), asked[1]
        return None

    def judge_reply(self, body: dict[str, Any], plain: bool = False) -> Reply:
        """The scenario's `judge` verdict: as a `record_verdict` call, or (`plain`) the one word
        a `claude plugin eval` judge answers."""
        found = self.find(all_text(body), judge=True)
        if found is None:
            excerpt = " ".join(prompt_text(body).split())[:200]
            return Reply(text=f"scripted model server: no scenario matches this judge request: {excerpt}",
                         status=400)
        index, scenario = found
        judge = scenario.get("judge") or {"result": "PASS", "reason": "scripted"}
        if isinstance(judge, list):  # successive calls get successive verdicts (a flaky judge)
            judge = judge[self._next_call(index) % len(judge)]
        judge = dict(judge)
        if "status" in judge and self._take_failure(index, int(judge.get("times", 1))):
            return Reply(text=str(judge.get("message", "scripted error")), status=judge["status"])
        verdict = judge.get("then", judge)
        return Reply(text=str(verdict.get("result", "PASS"))) if plain else verdict_reply(verdict)

    def mock_reply(self, body: dict[str, Any]) -> Reply:
        """An agent mock's answer: the scenario whose `mock-server` is the server played answers
        from its `answers`, the first whose `when` occurs in the current call (its tool and
        arguments; an entry without `when` answers anything), in plain text."""
        system, text = system_text(body), all_text(body)
        current = text.rsplit("Current call: ", 1)[-1]
        with self._lock:
            scenarios = [s for s in self._scenarios if "mock-server" in s]
        scenario = next((s for s in scenarios if f'MCP server "{s["mock-server"]}"' in system), None)
        if scenario is None:
            return Reply(text="scripted model server: no scenario plays this MCP server", status=400)
        for entry in scenario.get("answers") or []:
            if str(entry.get("when", "")) in current:
                return Reply(text=str(entry.get("say", "")))
        return Reply(text="ERROR: no scripted answer")

    def user_reply(self, body: dict[str, Any]) -> Reply:
        """A simulated user's reply: the scenario whose `match` is in the conversation (its first
        prompt) answers from its `user` entries, the first whose `when` occurs in the agent's
        last message (an entry without `when` answers anything)."""
        text = all_text(body)
        with self._lock:
            scenarios = [s for s in self._scenarios if "user" in s and not is_catch_all(s)]
        scenario = next((s for s in scenarios if str(s.get("match", "")) in text), None)
        if scenario is None:
            excerpt = " ".join(text.split())[:200]
            return Reply(text=f"scripted model server: no scenario plays the user here: {excerpt}",
                         status=400)
        said = re.findall(r"<agent>\n(.*?)\n</agent>", text, re.S)
        last = said[-1] if said else ""
        for entry in scenario["user"]:
            if str(entry.get("when", "")) in last:
                stop = str(entry.get("stop", "continue"))
                return Reply(calls=((USER_TOOL, {"stop": stop, "message": str(entry.get("say", ""))}),))
        return Reply(calls=((USER_TOOL, {"stop": "agent-finished", "message": ""}),))

    def draft_reply(self, body: dict[str, Any]) -> Reply:
        """The scenario whose `draft-for` is in the skill under test answers with its `draft`: an
        object as the drafted cases, anything else as a plain text (a garbage answer)."""
        skill = drafted_skill(body)
        with self._lock:
            scenarios = list(self._scenarios)
        for scenario in scenarios:
            wanted = scenario.get("draft-for")
            if isinstance(wanted, str) and wanted and wanted in skill:
                draft = scenario.get("draft")
                if isinstance(draft, dict):
                    return Reply(calls=((DRAFT_TOOL, draft),))
                return Reply(text=str(draft))
        return Reply(text=f"scripted model server: no scenario drafts for: {' '.join(skill.split())[:200]}",
                     status=400)

    def proposal_reply(self, body: dict[str, Any]) -> Reply:
        """The scenario whose `propose-for` is in the skill's current description (the request's
        `<skill name=...>` section) answers with its `propose` list of descriptions."""
        found = re.search(r'<skill name="[^"]*">(.*?)</skill>', all_text(body), re.S)
        skill = found.group(1) if found else ""
        with self._lock:
            scenarios = list(self._scenarios)
        for scenario in scenarios:
            wanted = scenario.get("propose-for")
            if isinstance(wanted, str) and wanted and wanted in skill:
                texts = scenario.get("propose") or []
                candidates = [{"description": str(t), "rationale": "scripted"} for t in texts]
                return Reply(calls=((PROPOSE_TOOL, {"candidates": candidates}),))
        return Reply(text=f"scripted model server: no scenario proposes for: {' '.join(skill.split())[:200]}",
                     status=400)

    def _next_call(self, index: int) -> int:
        with self._lock:
            n = self._judge_calls.get(index, 0)
            self._judge_calls[index] = n + 1
            return n

    def _take_failure(self, index: int, times: int) -> bool:
        with self._lock:
            used = self._judge_failures.get(index, 0)
            if used >= times:
                return False
            self._judge_failures[index] = used + 1
            return True


CATCH_ALL = "*"
"""The `match` of the scenario that answers every agent prompt no other scenario matches."""
REPLY_TO = "reply-to"
"""The key of a scenario that answers a resumed session's follow-up message (see the module)."""


def is_catch_all(scenario: dict[str, Any]) -> bool:
    return scenario.get("match") == CATCH_ALL


CLAUDE_SKILLS = re.compile(r"skills are available[^\n]*\n")
"""The line before Claude Code's `- name: description` skill entries (in a `<system-reminder>`):
"The following skills are available for use with the Skill tool:"."""
SKILL_ENTRY = re.compile(r"^- ([A-Za-z0-9._:-]+): (.*)$")
NAME_ONLY_ENTRY = re.compile(r"^- ([A-Za-z0-9._:-]+)$")
"""Claude Code's entry for a skill its listing budget shows by name only."""
COPILOT_OVERFLOW = re.compile(r"Additional skills available \(invoke by name\): ([^\n<]*)")
"""Copilot CLI's line naming the skills past its listing budget."""
CODEX_SKILL_ENTRY = re.compile(r"^- ([A-Za-z0-9._:-]+): (.*?) ?\(file: [^)]*SKILL\.md\)\s*$")
XML_SKILL = re.compile(r"<skill>(.*?)</skill>", re.S)


def listed_skills(body: dict[str, Any]) -> set[str]:
    """Names of the skills the CLI lists to the model in this request (see `skill_listing`)."""
    return {name for name, _ in skill_listing(body)}


def skill_listing(body: dict[str, Any]) -> list[tuple[str, str]]:
    """(name, description) of each skill the CLI lists to the model in this request, in its
    order (a name listed twice counts once, where it came first): the `- name: description`
    entries of Claude Code's skills reminder, the `- name: description (file: ...)` lines of
    Codex's `<skills_instructions>`, the `<skill>` elements of Copilot's and Gemini CLI's
    `<available_skills>` in their system prompt."""
    found: list[tuple[str, str]] = []
    for text in _texts_of_messages(body):
        claude = CLAUDE_SKILLS.search(text)
        if "<skills_instructions>" in text:
            listing = text.split("<skills_instructions>", 1)[1].split("</skills_instructions>", 1)[0]
            found += [(m.group(1), m.group(2).strip()) for line in listing.splitlines()
                      if (m := CODEX_SKILL_ENTRY.match(line))]
        elif claude:
            found += _claude_skills(text[claude.end():].split("</system-reminder>", 1)[0])
    system = _texts(body.get("system")) + _texts(body.get("instructions"))
    system += _texts(_gemini_system(body)) if is_gemini(body) else []
    for text in system:  # Copilot (`instructions` with a GPT model), Gemini (`systemInstruction`)
        for listing in re.findall(r"<available_skills>(.*?)</available_skills>", text, re.S):
            for skill in XML_SKILL.findall(listing):
                name = re.search(r"<name>\s*([^<]*?)\s*</name>", skill)
                about = re.search(r"<description>(.*?)</description>", skill, re.S)
                if name and re.fullmatch(r"[A-Za-z0-9._:-]+", html.unescape(name.group(1))):
                    found.append((html.unescape(name.group(1)),
                                  html.unescape(about.group(1)).strip() if about else ""))
            for line in COPILOT_OVERFLOW.findall(listing):  # past the budget: by name only
                names = re.sub(r"\.\.\. and \d+ more$", "", line.strip()).split(", ")
                found += [(n.strip(), "") for n in names if re.fullmatch(r"[A-Za-z0-9._:-]+", n.strip())]
    first: dict[str, str] = {}
    for skill_name, description in found:
        first.setdefault(skill_name, description)
    return list(first.items())


def _claude_skills(listing: str) -> list[tuple[str, str]]:
    """Claude Code's entries: a `- name: description` line, and the lines after it up to the
    next entry (a long description goes on over several)."""
    entries: list[tuple[str, str]] = []
    lines: list[str] = []
    for line in listing.splitlines():
        entry = SKILL_ENTRY.match(line) or NAME_ONLY_ENTRY.match(line)
        if entry:
            if entries:
                entries[-1] = (entries[-1][0], " ".join(lines))
            entries.append((entry.group(1), ""))
            lines = [entry.group(2).strip()] if entry.re is SKILL_ENTRY else []
        elif entries and line.strip():
            lines.append(line.strip())
    if entries:
        entries[-1] = (entries[-1][0], " ".join(lines))
    return entries


ROUTE_MIN_OVERLAP = 2
NO_SKILL_FITS = "No skill fits; answering directly."
ROUTE_STOPWORDS = frozenset({
    "the", "and", "for", "with", "from", "into", "onto", "that", "this", "these", "those", "then",
    "than", "there", "here", "what", "which", "who", "whom", "whose", "when", "where", "why",
    "how", "are", "was", "were", "been", "being", "has", "have", "had", "does", "did", "doing",
    "done", "will", "would", "shall", "should", "can", "could", "may", "might", "must", "not",
    "but", "nor", "any", "all", "each", "every", "some", "such", "own", "our", "ours", "your",
    "yours", "you", "they", "them", "their", "its", "his", "her", "hers", "she", "him", "also",
    "just", "only", "very", "too", "more", "most", "other", "about", "above", "after", "again",
    "against", "before", "below", "between", "during", "over", "under", "out", "off", "once",
    "same", "both", "few", "via", "per", "use", "used", "uses", "using", "please", "want", "need",
    "like", "get", "got", "let", "make", "made", "new", "one", "two", "way", "ask", "asked",
    "without", "within", "while",
})
"""Words that say nothing about which skill fits (they are in every description and prompt)."""


def route_words(text: str) -> set[str]:
    """The words a route compares: lowercase runs of 3+ letters, less the stopwords, with a
    trailing plural `s` dropped (`commits` and `commit` are one word; `class` stays `class`)."""
    words: set[str] = set()
    for word in re.findall(r"[a-z]+", text.lower()):
        if len(word) < 3 or word in ROUTE_STOPWORDS:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        if word not in ROUTE_STOPWORDS:
            words.add(word)
    return words


def route_prompt(body: dict[str, Any]) -> str:
    """The prompt a route reads: the user's prompt less what a CLI wraps into the same text
    (Copilot CLI's `<current_datetime>` element)."""
    return re.sub(r"<current_datetime>.*?</current_datetime>", "", prompt_text(body), flags=re.S).strip()


def route_scores(prompt: str, skills: list[tuple[str, str]]) -> list[tuple[str, int]]:
    """Each listed skill with the number of distinct words its name and description share with
    the prompt (the name split at its hyphens), in the listing's order."""
    asked = route_words(prompt)
    return [(name, len(asked & route_words(f"{name.replace('-', ' ')} {about}"))) for name, about in skills]


def route_skill(
    prompt: str, skills: list[tuple[str, str]], min_overlap: int = ROUTE_MIN_OVERLAP
) -> str | None:
    """The skill a route picks: the best score of at least `min_overlap`, the first listed on a
    tie; None when none reaches it."""
    best: tuple[str, int] | None = None
    for name, score in route_scores(prompt, skills):
        if score >= min_overlap and (best is None or score > best[1]):
            best = (name, score)
    return best[0] if best else None


def routed_step(step: dict[str, Any], prompt: str, skills: list[tuple[str, str]]) -> dict[str, Any]:
    """A `route` step as the step it stands for: `skill: <picked>`, or the no-skill text (other
    keys of the step, such as `sleep`, stay)."""
    options = step.get("route")
    minimum = ROUTE_MIN_OVERLAP
    if isinstance(options, dict):
        minimum = int(options.get("min-overlap", ROUTE_MIN_OVERLAP))
    picked = route_skill(prompt, skills, minimum)
    rest = {k: v for k, v in step.items() if k != "route"}
    return {**rest, "skill": picked} if picked else {**rest, "text": NO_SKILL_FITS}


def _texts_of_messages(body: dict[str, Any]) -> list[str]:
    return [t for m in _messages(body) for t in _texts(m.get("content"))]


def agent_step(
    scenario: dict[str, Any], turn: int, skills: set[str] | None = None, waits: bool = False
) -> dict[str, Any]:
    """The step for this turn; past the end, the last text step (or `Done.`).

    A scenario with `needs-skill` plays `without-skill` when the request does not list that skill.
    With `waits` (a CLI whose sub-agent call returns the sub-agent's answer: Gemini CLI, Claude
    Code 2.1.197), the steps marked `background: true` (said while sub-agents run in the
    background) are left out.
    """
    key = "agent"
    needed = scenario.get("needs-skill")
    bare = {name.rsplit(":", 1)[-1] for name in skills or ()}  # a plugin's skill: `plugin:skill`
    if needed and skills is not None and str(needed) not in skills | bare:
        key = "without-skill"
    steps = [s for s in scenario.get(key) or [] if not (waits and s.get("background"))]
    if turn < len(steps):
        return dict(steps[turn])
    texts = [s["text"] for s in steps if "text" in s]
    return {"text": texts[-1] if texts else "Done."}


def verdict_reply(verdict: dict[str, Any]) -> Reply:
    """A judge verdict as a `record_verdict` call."""
    data = {"result": str(verdict.get("result", "PASS")), "reason": str(verdict.get("reason", ""))}
    return Reply(calls=((JUDGE_TOOL, data),))


def step_reply(step: dict[str, Any], body: dict[str, Any]) -> Reply:
    """Turn one scripted step into a reply for the requesting CLI."""
    delay = float(step.get("sleep", 0))
    if "error" in step:
        err = step["error"]
        return Reply(text=str(err.get("message", "error")), status=int(err["status"]), delay=delay)
    anthropic = "messages" in body
    steps = [dict(one) for one in step["parallel"]] if "parallel" in step else [step]
    cwd = workspace_dir(body)
    if any("mcp" in one for one in steps):
        calls = [mcp_call(one["mcp"], body) if "mcp" in one else None for one in steps]
    elif is_gemini(body):
        calls = [gemini_call(one, cwd) for one in steps]
    elif is_copilot(body):
        calls = [copilot_call(one, cwd, tool_names(body)) for one in steps]
    else:
        calls = [claude_call(one, cwd) if anthropic else codex_call(one, body) for one in steps]
    if not any(calls):
        text = str(step.get("text", "Done."))
        if is_gemini(body) and GEMINI_COMPLETE in gemini_tool_names(body):
            # A Gemini CLI sub-agent hands its answer back only through `complete_task`.
            return Reply(calls=((GEMINI_COMPLETE, {"result": text}),), delay=delay)
        return Reply(text=text, delay=delay)
    return Reply(calls=tuple(call for call in calls if call), delay=delay)


def mcp_call(step: dict[str, Any], body: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """A call of an MCP tool the request offers, by the tool's own name and its server's: each
    CLI names it its own way (`mcp__<server>__<tool>`, a plugin's server `plugin_<plugin>_
    <server>`; Copilot CLI `<server>-<tool>`; Gemini CLI `<tool>`). A tool Claude Code defers
    (named in its system prompt, its schema not offered) is loaded first with ToolSearch
    (`select:<name>`), a turn the step index does not count."""
    tool, server = str(step["tool"]), str(step.get("server", ""))

    def named(names: set[str]) -> list[str]:
        return sorted(n for n in names if n == tool or (n.endswith(tool) and server in n[: -len(tool)]))

    found = named(tool_names(body) | gemini_tool_names(body) | namespaced_tool_names(body))
    if found:
        return found[0], dict(step.get("input") or {})
    deferred = named(deferred_tool_names(body))
    if deferred and TOOL_SEARCH in tool_names(body):
        return TOOL_SEARCH, {"query": f"select:{deferred[0]}", "max_results": 5}
    if any(isinstance(t, dict) and t.get("type") == RESPONSES_SEARCH for t in body.get("tools") or []):
        return RESPONSES_SEARCH, {"query": f"{server} {tool}".strip()}  # Codex defers MCP tools too
    return None


TOOL_SEARCH = "ToolSearch"
RESPONSES_SEARCH = "tool_search"


def namespaced_tool_names(body: dict[str, Any]) -> set[str]:
    """The tools of a Responses request's namespaces, offered or found by a tool search (Codex's
    MCP tools: `tool_search_output` items of its history), as `namespace.tool`."""
    found = [t for item in body.get("input") or [] if isinstance(item, dict)
             and item.get("type") == "tool_search_output" for t in item.get("tools") or []]
    return {f"{t.get('name')}{NAMESPACE_SEP}{one.get('name')}" for t in [*(body.get("tools") or []), *found]
            if isinstance(t, dict) and t.get("type") == "namespace"
            for one in t.get("tools") or [] if isinstance(one, dict)}


def deferred_tool_names(body: dict[str, Any]) -> set[str]:
    """Tools a Claude Code request names without their schema (deferred behind ToolSearch, named
    in its system prompt): its `mcp__…` words."""
    text = json.dumps(body.get("system") or "") + json.dumps(body.get("messages") or [])
    return set(re.findall(r"mcp__[A-Za-z0-9_-]+__[A-Za-z0-9_-]+", text))


def tool_names(body: dict[str, Any]) -> set[str]:
    """The names of the tools a Messages or Responses request offers."""
    return {str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict)}


COPILOT_OWN = frozenset({"bash", "view", "create", "edit", "skill", "task", "glob", "grep", "web_fetch"})


def is_copilot(body: dict[str, Any]) -> bool:
    """Copilot CLI speaks Anthropic Messages and OpenAI Responses; its tools are `bash`, `view`…
    (a sub-agent of it may have `bash` and its helpers only; a run given `--available-tools`,
    only some of them)."""
    return bool(COPILOT_OWN & tool_names(body))


def copilot_call(step: dict[str, Any], cwd: str | None, tools: set[str]) -> tuple[str, dict[str, Any]] | None:
    """The Copilot CLI tool call for a step (None for a text step). A write is a `create` call,
    or with a GPT model (which Copilot offers `apply_patch` instead) a patch adding the file."""
    if "skill" in step:  # a `plugin:skill` name is that skill where skills have no plugin prefix
        return "skill", {"skill": str(step["skill"]).rsplit(":", 1)[-1]}
    if "bash" in step:
        return "bash", {"command": step["bash"], "description": "Run a scripted command"}
    if "subagent" in step:
        agent = step["subagent"]
        kind = str(agent["type"])
        return "task", {"agent_type": kind, "name": kind,
                        "description": str(agent.get("description") or kind),
                        "prompt": str(agent["prompt"]), "mode": "background"}
    if "write" in step:
        path = str(step["write"]["path"])
        if cwd and not path.startswith("/"):
            path = f"{cwd.rstrip('/')}/{path}"
        content = str(step["write"].get("content", ""))
        if "create" not in tools and APPLY_PATCH in tools:
            return APPLY_PATCH, {CUSTOM_INPUT: add_file_patch(path, content)}
        return "create", {"path": path, "file_text": content}
    return None


def add_file_patch(path: str, content: str) -> str:
    """An `apply_patch` patch (the freeform format of Codex and Copilot) that adds one file."""
    lines = "".join(f"+{line}\n" for line in content.splitlines())
    return f"*** Begin Patch\n*** Add File: {path}\n{lines}*** End Patch\n"


def claude_call(step: dict[str, Any], cwd: str | None) -> tuple[str, dict[str, Any]] | None:
    """The Claude Code tool call for a step (None for a text step)."""
    if "skill" in step:
        return "Skill", {"skill": step["skill"]}
    if "bash" in step:
        return "Bash", {"command": step["bash"], "description": "Run a scripted command"}
    if "subagent" in step:
        agent = step["subagent"]
        return "Agent", {"description": str(agent.get("description") or agent["type"]),
                         "prompt": str(agent["prompt"]), "subagent_type": str(agent["type"])}
    if "write" in step:
        path = str(step["write"]["path"])
        if cwd and not path.startswith("/"):
            path = f"{cwd.rstrip('/')}/{path}"
        return "Write", {"file_path": path, "content": str(step["write"].get("content", ""))}
    return None


def gemini_call(step: dict[str, Any], cwd: str | None) -> tuple[str, dict[str, Any]] | None:
    """The Gemini CLI tool call for a step (None for a text step)."""
    if "skill" in step:
        return "activate_skill", {"name": str(step["skill"]).rsplit(":", 1)[-1]}
    if "bash" in step:
        return "run_shell_command", {"command": str(step["bash"]), "description": "Run a scripted command"}
    if "subagent" in step:
        agent = step["subagent"]
        return "invoke_agent", {"agent_name": str(agent["type"]), "prompt": str(agent["prompt"])}
    if "write" in step:
        path = str(step["write"]["path"])
        if cwd and not path.startswith("/"):
            path = f"{cwd.rstrip('/')}/{path}"
        return "write_file", {"file_path": path, "content": str(step["write"].get("content", ""))}
    return None


def codex_command(step: dict[str, Any]) -> str | None:
    """The shell command Codex runs for a step (None for a text step)."""
    if "skill" in step:
        return f"cat .agents/skills/{shlex.quote(str(step['skill']).rsplit(':', 1)[-1])}/SKILL.md"
    if "bash" in step:
        return str(step["bash"])
    if "write" in step:
        path = str(step["write"]["path"])
        parent = path.rsplit("/", 1)[0] if "/" in path else "."
        content = shlex.quote(str(step["write"].get("content", "")))
        return f"mkdir -p {shlex.quote(parent)} && printf '%s' {content} > {shlex.quote(path)}"
    return None


def codex_call(step: dict[str, Any], body: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """A call to whichever shell tool the Codex request offers (for a sub-agent, `spawn_agent`)."""
    names = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
    if "subagent" in step:
        if not offers_spawn(body):
            return None
        return codex_agent_tool(CODEX_SPAWN), {"message": str(step["subagent"]["prompt"])}
    command = codex_command(step)
    if command is None:
        return None
    tool = next((n for n in CODEX_SHELL_TOOLS if n in names), "exec_command")
    if tool == "exec_command":
        return tool, {"cmd": command}
    if tool == "shell":
        return tool, {"command": ["bash", "-lc", command]}
    return tool, {"command": command}


DEFERRED_AGENT_TOOLS = re.compile(
    rf"^<tools>\nDeferred tool namespaces:\n(?:- .*\n)*?- {CODEX_AGENT_TOOLS}:", re.M)
"""How Codex lists the namespace when it defers it behind `tool_search` (for models such as
gpt-5.5); a call to `spawn_agent` with the namespace is accepted then too."""


def offers_spawn(body: dict[str, Any]) -> bool:
    """Whether a Codex request offers `spawn_agent`: in its sub-agent namespace tool, or that
    namespace listed as deferred (a sub-agent's own requests offer neither: it cannot start
    further sub-agents)."""
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict)]
    for tool in tools:
        if tool.get("type") == "namespace" and tool.get("name") == CODEX_AGENT_TOOLS:
            return any(isinstance(t, dict) and t.get("name") == CODEX_SPAWN for t in tool.get("tools") or [])
    return any(DEFERRED_AGENT_TOOLS.search(text) for text in _texts_of_messages(body))


def codex_agent_tool(name: str) -> str:
    """The name of a call to one of Codex's sub-agent tools (`multi_agent_v1.spawn_agent`)."""
    return f"{CODEX_AGENT_TOOLS}{NAMESPACE_SEP}{name}"


def codex_wait(reply: Reply, body: dict[str, Any]) -> Reply:
    """A text answer of a Codex conversation whose sub-agents have not all reported: the text
    and a `wait_agent` call, or once it has said the text, the call alone. It waits on the
    first of them only: Codex lists the statuses of several in no fixed order."""
    if reply.calls or reply.status != 200:
        return reply
    pending, waited = codex_sub_agents(_messages(body))
    if not pending:
        return reply
    wait = (codex_agent_tool(CODEX_WAIT), {"targets": pending[:1], "timeout_ms": CODEX_WAIT_MS})
    return Reply(text="" if waited else reply.text, calls=(wait,), delay=reply.delay, hold=tuple(pending))


# --- wire formats -------------------------------------------------------------------------

ANTHROPIC_ERRORS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def _call_id(rid: str, index: int) -> str:
    """The id of the index-th call of an answer: the answer's own for the first, derived after."""
    return rid if index == 0 else digest(rid, index)


def anthropic_message(reply: Reply, body: dict[str, Any], rid: str) -> dict[str, Any]:
    """A complete Anthropic Message for a reply."""
    blocks: list[dict[str, Any]]
    if reply.calls:
        blocks = [{"type": "tool_use", "id": f"toolu_{_call_id(rid, i)}", "name": name, "input": given}
                  for i, (name, given) in enumerate(reply.calls)]
        stop, out = "tool_use", "".join(json.dumps(given) for _, given in reply.calls)
    else:
        blocks, stop, out = [{"type": "text", "text": reply.text}], "end_turn", reply.text
    return {
        "id": f"msg_{rid}",
        "type": "message",
        "role": "assistant",
        "model": str(body.get("model", "")),
        "content": blocks,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": _tokens(all_text(body)),
            "output_tokens": _tokens(out),
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }


def anthropic_events(message: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The SSE events that stream a Message."""
    start = dict(message, content=[], stop_reason=None)
    start["usage"] = dict(message["usage"], output_tokens=1)
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start}),
    ]
    for index, block in enumerate(message["content"]):
        if block["type"] == "tool_use":
            opening = dict(block, input={})
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            opening = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        events += [
            ("content_block_start",
             {"type": "content_block_start", "index": index, "content_block": opening}),
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]
    return [
        *events,
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": message["usage"]["output_tokens"]},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


def anthropic_error(reply: Reply) -> dict[str, Any]:
    kind = ANTHROPIC_ERRORS.get(reply.status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": reply.text}}


def response_items(reply: Reply, rid: str, custom: set[str] | None = None) -> list[dict[str, Any]]:
    """The output items of a Responses answer: one message, or one function call per call
    (after a message when the reply has a text too); a call to one of the `custom` tools is a
    custom tool call."""
    if reply.calls and reply.tool not in (JUDGE_TOOL, DRAFT_TOOL, USER_TOOL):
        custom = custom or set()
        calls = [tool_search_call(given, _call_id(rid, i)) if name == RESPONSES_SEARCH else
                 (custom_tool_call if name in custom else function_call)(name, given, _call_id(rid, i))
                 for i, (name, given) in enumerate(reply.calls)]
        return [message_item(reply.text, rid), *calls] if reply.text else calls
    text = json.dumps(reply.calls[0][1]) if reply.calls else reply.text
    return [message_item(text, rid)]


def message_item(text: str, rid: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": f"msg_{rid}",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def function_call(name: str, given: dict[str, Any], cid: str) -> dict[str, Any]:
    """A function_call output item; a namespaced tool's call names its namespace apart."""
    namespace, _, name = name.rpartition(NAMESPACE_SEP)
    item = {
        "type": "function_call",
        "id": f"fc_{cid}",
        "call_id": f"call_{cid}",
        "name": name,
        "arguments": json.dumps(given),
        "status": "completed",
    }
    return {**item, "namespace": namespace} if namespace else item


def tool_search_call(given: dict[str, Any], cid: str) -> dict[str, Any]:
    """A tool_search_call output item: the client (Codex) searches its deferred tools."""
    return {"type": "tool_search_call", "id": f"tsc_{cid}", "call_id": f"call_{cid}", "execution": "client",
            "arguments": given, "status": "completed"}


def custom_tool_call(name: str, given: dict[str, Any], cid: str) -> dict[str, Any]:
    """A custom_tool_call output item: a freeform tool's text input (an `apply_patch` patch)."""
    return {"type": "custom_tool_call", "id": f"ctc_{cid}", "call_id": f"call_{cid}", "name": name,
            "input": str(given.get(CUSTOM_INPUT, "")), "status": "completed"}


def custom_tools(body: dict[str, Any]) -> set[str]:
    """The names of the custom (freeform) tools a Responses request offers."""
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict)]
    return {str(t.get("name")) for t in tools if t.get("type") == "custom"}


def response_object(reply: Reply, body: dict[str, Any], rid: str) -> dict[str, Any]:
    """A complete Responses API Response for a reply."""
    items = response_items(reply, rid, custom_tools(body))
    out = _tokens("".join(json.dumps(item) for item in items))
    inp = _tokens(all_text(body))
    return {
        "id": f"resp_{rid}",
        "object": "response",
        "created_at": CREATED_AT,
        "status": "completed",
        "model": str(body.get("model", "")),
        "output": items,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "usage": {
            "input_tokens": inp,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": out,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": inp + out,
        },
    }


def response_events(response: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The SSE events that stream a Response."""
    pending = dict(response, status="in_progress", output=[], usage=None)
    events: list[tuple[str, dict[str, Any]]] = [("response.created", {"response": pending})]
    for index, item in enumerate(response["output"]):
        opening = dict(item, status="in_progress")
        events.append(("response.output_item.added", {"output_index": index, "item": opening}))
        if item["type"] == "message":
            opening["content"] = []
            text = item["content"][0]["text"]
            events.append(("response.output_text.delta",
                           {"item_id": item["id"], "output_index": index, "content_index": 0, "delta": text}))
        events.append(("response.output_item.done", {"output_index": index, "item": item}))
    events.append(("response.completed", {"response": response}))
    return [(name, dict(data, type=name, sequence_number=i)) for i, (name, data) in enumerate(events)]


def openai_error(reply: Reply) -> dict[str, Any]:
    code = "invalid_api_key" if reply.status == 401 else str(reply.status)
    return {
        "error": {
            "message": reply.text,
            "type": "server_error" if reply.status >= 500 else "invalid_request_error",
            "param": None,
            "code": code,
        }
    }


GEMINI_STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    529: "UNAVAILABLE",
}
GEMINI_ROUTE = re.compile(r"^/v1(?:beta)?/models/([^/:]+):(streamGenerateContent|generateContent)$")
"""`POST /v1beta/models/{model}:streamGenerateContent` (SSE with `alt=sse`) or `:generateContent`."""


def _gemini_system(body: dict[str, Any]) -> Any:
    """The parts (or the string) of a Gemini request's `systemInstruction`."""
    system = body.get("systemInstruction")
    if isinstance(system, dict):
        return system.get("parts") if "parts" in system else [system]
    return system


def gemini_tool_names(body: dict[str, Any]) -> set[str]:
    """The functions a Gemini request declares (`tools[].functionDeclarations[].name`)."""
    return {str(d.get("name")) for t in body.get("tools") or [] if isinstance(t, dict)
            for d in t.get("functionDeclarations") or [] if isinstance(d, dict)}


def gemini_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema a Gemini request asks its answer to follow, if any."""
    config = body.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    return schema if isinstance(schema, dict) else None


def schema_example(schema: Any) -> Any:
    """A small value that satisfies a JSON schema (or a Gemini `responseSchema`, upper-case types)
    for Gemini CLI's side requests: an enum offering `user` answers `user` (its next-speaker check
    then lets the user speak, so a scripted session ends when its script does), an integer 1 (its
    router's `complexity_score` must be 1-100), a number 0 (its loop check's confidence)."""
    if not isinstance(schema, dict):
        return None
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return schema_example(schema[key][0])
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return "user" if "user" in enum else enum[0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if str(k).lower() != "null"), "null")
    kind = str(kind).lower() if kind else ("object" if "properties" in schema else "string")
    if kind == "object":
        return {k: schema_example(v) for k, v in (schema.get("properties") or {}).items()}
    if kind == "array":
        return [schema_example(schema.get("items"))] * int(schema.get("minItems") or 0)
    if kind in ("integer", "number"):  # an integer 1 (a score "from 1"), a number 0 (a confidence)
        return schema.get("minimum", 1 if kind == "integer" else 0)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return "scripted" if int(schema.get("minLength") or 0) <= 8 else "scripted" * int(schema["minLength"])


def is_gemini_judge(body: dict[str, Any]) -> bool:
    """A Gemini judge request: it offers `record_verdict` or asks for a `{result, reason}` object."""
    schema = gemini_schema(body) or {}
    asks_verdict = {"result", "reason"} <= set(schema.get("properties") or {})
    return asks_verdict or JUDGE_TOOL in gemini_tool_names(body)


def gemini_response(reply: Reply, body: dict[str, Any], rid: str, model: str) -> dict[str, Any]:
    """A complete GenerateContentResponse for a reply: a text part and/or one `functionCall` part
    per call (a judge's verdict is a JSON text unless the request offers `record_verdict`)."""
    parts: list[dict[str, Any]] = []
    calls = list(reply.calls)
    if calls and calls[0][0] == JUDGE_TOOL and JUDGE_TOOL not in gemini_tool_names(body):
        parts, calls = [{"text": json.dumps(calls[0][1])}], []
    elif reply.text or not calls:
        parts.append({"text": reply.text})
    parts += [{"functionCall": {"id": f"call_{_call_id(rid, i)}", "name": name, "args": given}}
              for i, (name, given) in enumerate(calls)]
    inp = _tokens(all_text(body))
    out = _tokens("".join(json.dumps(part) for part in parts))
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": inp, "candidatesTokenCount": out, "totalTokenCount": inp + out},
        "modelVersion": model,
        "responseId": rid,
    }


def gemini_error(reply: Reply) -> dict[str, Any]:
    status = GEMINI_STATUSES.get(reply.status, "INTERNAL" if reply.status >= 500 else "UNKNOWN")
    return {"error": {"code": reply.status, "message": reply.text, "status": status}}


def sse(events: list[tuple[str, dict[str, Any]]]) -> bytes:
    return "".join(f"event: {n}\ndata: {json.dumps(d)}\n\n" for n, d in events).encode()


# --- what the real APIs refuse ----------------------------------------------------------


def presented_key(headers: dict[str, str]) -> str | None:
    """The API key of a request: `x-api-key` (Anthropic) or `Authorization: Bearer` (both)."""
    if headers.get("x-api-key"):
        return headers["x-api-key"]
    scheme, _, value = headers.get("authorization", "").partition(" ")
    return (value.strip() or None) if scheme.lower() == "bearer" else None


def auth_error(headers: dict[str, str], api_keys: frozenset[str], path: str = "") -> Reply | None:
    """A 401 unless the request carries one of the server's keys (a Gemini request: in its
    `x-goog-api-key` header or its `key` query parameter)."""
    if GEMINI_ROUTE.match(path.split("?", 1)[0]):
        params = urllib.parse.parse_qs(path.partition("?")[2])
        key = headers.get("x-goog-api-key") or next(iter(params.get("key") or []), None)
        if key in api_keys:
            return None
        return Reply(text="API key not valid. Please pass a valid API key." if key else
                     "Method doesn't allow unregistered callers. Please use an API key.", status=401)
    key = presented_key(headers)
    if key in api_keys:
        return None
    why = "no API key was given" if key is None else "invalid x-api-key"
    return Reply(text=why, status=401)


def shape_error(route: str, headers: dict[str, str], body: Any) -> Reply | None:
    """A 400 for a request the real API would refuse: what a client must always send."""
    if route == "/v1/messages":
        problem = _messages_problem(headers, body)
    elif GEMINI_ROUTE.match(route):
        problem = _gemini_problem(body)
    else:
        problem = _responses_problem(body)
    return Reply(text=problem, status=400) if problem else None


def _gemini_problem(body: Any) -> str | None:
    if not isinstance(body, dict):
        return "Invalid JSON payload received."
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        return "* GenerateContentRequest.contents: contents is not specified"
    for i, content in enumerate(contents):
        if not isinstance(content, dict) or content.get("role", "user") not in ("user", "model"):
            return f"* GenerateContentRequest.contents[{i}].role: Please use a valid role: user, model."
        if not isinstance(content.get("parts"), list) or not content["parts"]:
            return f"* GenerateContentRequest.contents[{i}].parts: contents.parts must not be empty."
    return None


def _messages_problem(headers: dict[str, str], body: Any) -> str | None:
    if not headers.get("anthropic-version"):
        return "anthropic-version: header is required"
    if not isinstance(body, dict):
        return "the request body must be a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model: Field required"
    if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
        return "max_tokens: Field required (a positive integer)"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: Field required (a non-empty list)"
    for i, message in enumerate(messages):
        # Claude Code 2.1.332 sends its context (git status, date) as a `system` message after
        # the user's: the API takes it there.
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant", "system"):
            return f"messages.{i}.role: Input should be 'user', 'assistant' or 'system'"
        if not isinstance(message.get("content"), str | list):
            return f"messages.{i}.content: Field required"
    return None


def _responses_problem(body: Any) -> str | None:
    if not isinstance(body, dict):
        return "the request body must be a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "Missing required parameter: 'model'."
    if not isinstance(body.get("input"), str | list):
        return "Missing required parameter: 'input'."
    return None


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
        route = self.path.split("?", 1)[0]
        owner = self.server.owner
        headers = {k.lower(): v for k, v in self.headers.items()}
        owner.record(RecordedRequest(self.path, headers, body if isinstance(body, dict) else {}))
        if route not in ("/v1/messages", "/v1/responses") and not GEMINI_ROUTE.match(route):
            self._send(404, "application/json", b'{"error": "not found"}')
            return
        refused = auth_error(headers, owner.api_keys, self.path) or shape_error(route, headers, body)
        if refused is not None:
            self._answer(route, {}, refused)
            return
        if GEMINI_ROUTE.match(route):
            reply = owner.script.judge_reply(body) if is_gemini_judge(body) else owner.gemini_reply(body)
        else:
            reply = (owner.script.judge_reply(body) if is_judge(body)
                     else owner.script.mock_reply(body) if is_mock_agent(body)
                     else owner.script.judge_reply(body, plain=True) if is_plugin_eval_judge(body)
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

    def _send(self, status: int, content_type: str, data: bytes) -> None:
        try:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(data)))
            if status == 529 or status >= 500:
                self.send_header("retry-after", "0")
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client was killed while waiting (a timeout test); nothing to tell it


class ModelServer:
    """A scripted Anthropic + OpenAI Responses + Gemini server on a free port of 127.0.0.1."""

    def __init__(
        self,
        scenarios: list[dict[str, Any]] | None = None,
        latency: float = 0.0,
        port: int = 0,
        api_key: str | tuple[str, ...] = DEFAULT_API_KEY,
    ) -> None:
        self.script = Script(scenarios or [])
        self.latency = latency
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

    def add(self, scenario: dict[str, Any]) -> None:
        """Add a scenario (matched after the earlier ones)."""
        self.script.add(scenario)

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

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


def load_scenarios(path: Path) -> list[dict[str, Any]]:
    """Scenarios from a JSON or YAML file: a list, or a mapping with a `scenarios` list."""
    text = path.read_text(encoding="utf-8")
    if path.suffix in (".yaml", ".yml"):
        import yaml  # only the YAML form needs it

        data = yaml.safe_load(text)
    else:
        data = json.loads(text)
    return list(data["scenarios"] if isinstance(data, dict) else data)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--scenarios", type=Path, help="JSON or YAML file of scenarios")
    parser.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each answer")
    parser.add_argument("--api-key", default=DEFAULT_API_KEY,
                        help=f"the API key clients must send (default: {DEFAULT_API_KEY})")
    args = parser.parse_args(argv)
    scenarios = load_scenarios(args.scenarios) if args.scenarios else []
    server = ModelServer(scenarios, latency=args.latency, port=args.port, api_key=args.api_key).start()
    print(server.url, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with contextlib.suppress(KeyboardInterrupt):
        stop.wait()
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
