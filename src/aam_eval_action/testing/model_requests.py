"""The scripted model server reading a request: its prompt, conversation, turn, tools, and which
kind of request it is (agent turn, judge, drafting, proposal, simulated user, agent mock)."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from aam_eval_action.testing.model_base import (
    CODEX_AGENT_TOOLS,
    CODEX_SPAWN,
    CODEX_WAIT,
    DRAFT_FORMAT,
    DRAFT_TOOL,
    GEMINI_INJECTED_PREFIXES,
    INJECTED_PREFIXES,
    JUDGE_FORMAT,
    JUDGE_TOOL,
    PROPOSE_FORMAT,
    PROPOSE_TOOL,
    TOOL_SEARCH,
    USER_FORMAT,
    USER_TOOL,
)

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


def read_lines(body: dict[str, Any], pattern: str) -> list[str]:
    """The lines matching `pattern` in what the conversation holds (messages, tool results, a
    loaded skill; not the system prompt), each once, in order: what the agent has read."""
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            for line in value.splitlines():
                hit = re.search(pattern, line)
                if hit and hit.group(0).strip() not in found:
                    found.append(hit.group(0).strip())
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(_messages(body))
    return found


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


VALLY_JUDGE = "You are grading the work of a coding agent against a rubric."
"""How a Vally `prompt` or `panel` grader's judge prompt starts (`vally/grading.py`)."""


def is_vally_judge(body: dict[str, Any]) -> bool:
    """A Vally LLM grader's judge request: no tool, and a user message in those words; it is
    answered with its reason, then `SCORE: <result>`."""
    if body.get("tools"):
        return False
    texts = _texts_of_messages(body) + ([body["input"]] if isinstance(body.get("input"), str) else [])
    return any(text.lstrip().startswith(VALLY_JUDGE) for text in texts)


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


def _texts_of_messages(body: dict[str, Any]) -> list[str]:
    return [t for m in _messages(body) for t in _texts(m.get("content"))]


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
