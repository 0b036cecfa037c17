"""Model traffic: the requests an agent CLI sent to its model and the answers it got.

Re-execute replay runs the real CLI again and answers its model calls from this recording.
This module is the pure part: the stored format and normalisation; the divergence finder is
`replay/divergence.py`.
The HTTP side (recording and replaying proxies) is `aam_eval_action.replay.proxy`.

**Streams.** A CLI sends several kinds of requests, and their number and order can differ
between runs independently of each other. Each request is put in a stream: `agent` (a turn of
the agent loop: it offers tools), `side` (titles, summaries, quota probes: no tools),
`count_tokens`, and `other`. The n-th live request of a stream is answered with the n-th
recorded response of that stream.

**Normalisation.** Before two requests are compared, both are normalised the same way: the
workspace, HOME and temp base paths (and their realpaths) become `$WORKSPACE`, `$HOME` and
`$TMP`, Claude Code's project directory name (the workspace path with `-` for `/`) becomes
`$PROJECT`; per-run ids (`metadata.user_id`, Codex's `client_metadata`, `prompt_cache_key` and
input item ids), `cache_control` markers (they move to the newest message each turn), the date
line, git SHAs in the git status, Codex's per-command `Chunk ID` and `Wall time`, the machine's
OS version and time zone are replaced or dropped; secrets are redacted; several tool results of
one message are put in the order of their calls (`results_in_call_order`). Ids the API issues
(messages, tool calls, items) are renamed in order of first sight (`toolu_aam001`), in answers
and where requests echo them, so recording the same session twice gives the same bytes. A user's
`rerun-ignore` regexes are applied to both sides at comparison time only, so changing them never
needs a re-recording. So is `responses_once`: a Gemini history's tool result repeated in the same
message counts once, and messages of one role in a row count as one (Gemini CLI, resuming a
session, sends each earlier tool result twice, but not always).

**Storage.** Requests are stored normalised. Every tool schema, every long (>= 1 KiB) text block
of the system prompt, instructions or messages (the CLI's own prompt) and every `<system-
reminder>` block of at least 256 characters (the CLI's reminders) go once into a `shared` table
keyed by name and a short content hash; requests refer to them as `{$shared: KEY}`. Those
entries are the same in every case run by one CLI version, so `detach_shared` / `attach_shared`
let a cassette directory keep them in one common store. A request's message history is stored as
`$history` (the number of messages carried over from the previous request of its stream) plus
the new messages only. Streamed answers are kept as parsed SSE events, with consecutive text and
JSON deltas merged into one event (readable, and a path split across `input_json_delta`
fragments is whole again, so it can be rewritten for a new workspace and served as one
fragment).

**Divergence.** `first_difference` walks a recorded and a live request in parallel and
reports the first differing JSON path with both values shortened. When the difference lies in
a tool result (Anthropic `tool_result`, Responses `function_call_output` or, for a freeform
tool such as `apply_patch`, `custom_tool_call_output`), it names the tool call it answers,
found in the history by its id.

**Continue-live.** After a divergence the proxy may forward the rest of the session to a real
upstream; those exchanges are marked `live`, and `usage` sums their token counts.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from aam_eval_action.redact import Redactor
from aam_eval_action.replay.sse import (
    ANTHROPIC_DELTAS,
    RESPONSES_DELTAS,
    Live,
    _type,
    merge_deltas,
    parse_sse,
    sse_bytes,
    usage,
)
from aam_eval_action.replay.traffic_model import (
    CALL_WIDTH,
    GIT_STATUS,
    HISTORY,
    ID_IN_TEXT,
    ID_KEYS,
    ID_SHAPE,
    MINTED,
    MINTED_PLACEHOLDER,
    PATCH_FILE,
    REMINDER_SHARE_MIN,
    RUN_ID_KEYS,
    SHA,
    SHARE_MIN,
    SHARED,
    SKILL_ENTRY,
    SKILL_LISTING,
    SKILL_NAMES,
    STABLE_ID,
    TOOL_CALL_TYPES,
    TOOL_RESULT_TYPES,
    TRAFFIC_VERSION,
    VALUE_WIDTH,
    VOLATILE_KEYS,
    VOLATILE_TEXT,
    Conversation,
    Exchange,
    ModelTraffic,
    Provider,
    RecordedResponse,
    SseEvent,
    Stream,
    TrafficError,
    _Model,
)

__all__ = [
    "ANTHROPIC_DELTAS",
    "CALL_WIDTH",
    "GIT_STATUS",
    "HISTORY",
    "ID_IN_TEXT",
    "ID_KEYS",
    "ID_SHAPE",
    "MINTED",
    "MINTED_PLACEHOLDER",
    "PATCH_FILE",
    "REMINDER_SHARE_MIN",
    "RESPONSES_DELTAS",
    "RUN_ID_KEYS",
    "SHA",
    "SHARED",
    "SHARE_MIN",
    "SKILL_ENTRY",
    "SKILL_LISTING",
    "SKILL_NAMES",
    "STABLE_ID",
    "TOOL_CALL_TYPES",
    "TOOL_RESULT_TYPES",
    "TRAFFIC_VERSION",
    "VALUE_WIDTH",
    "VOLATILE_KEYS",
    "VOLATILE_TEXT",
    "Conversation",
    "Exchange",
    "Live",
    "ModelTraffic",
    "Provider",
    "RecordedResponse",
    "SseEvent",
    "Stream",
    "TrafficError",
    "_Model",
    "merge_deltas",
    "parse_sse",
    "sse_bytes",
    "usage",
]


def parse_traffic(data: Any) -> ModelTraffic:
    """Traffic from its stored (YAML-loaded) form; TrafficError when damaged or too new."""
    version = data.get("version") if isinstance(data, dict) else None
    if isinstance(version, int) and version > TRAFFIC_VERSION:
        raise TrafficError(
            f"model traffic format version {version} is newer than this aam-eval supports "
            f"({TRAFFIC_VERSION}); upgrade aam-eval-action"
        )
    try:
        traffic = ModelTraffic.model_validate(data)
        full_requests(traffic)  # every `$shared` reference resolves
    except ValidationError as exc:
        err = exc.errors()[0]
        raise TrafficError(f"damaged model traffic: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None
    except KeyError as exc:
        raise TrafficError(f"damaged model traffic: unknown shared entry {exc}") from None
    return traffic


def stored(traffic: ModelTraffic) -> dict[str, Any]:
    """Traffic as plain data for the cassette (dump it with `fsutil.dump_yaml`)."""
    return traffic.model_dump(mode="json", exclude_none=True)


# --- paths ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Paths:
    """The per-run directories that appear in requests and answers."""

    workspace: Path
    """The session's workspace (the CLI's cwd)."""
    home: Path
    """The session's HOME."""
    tmp: Path | None = None
    """The temp directory holding both (the runner's `Workspace.base`), if any."""

    @functools.cached_property
    def placeholders(self) -> list[tuple[str, str]]:
        """(path, placeholder) pairs, longest path first so nested paths win, realpaths too
        (worked out once: every string of a session's requests goes through them)."""
        pairs = []
        for path, name in ((self.workspace, "$WORKSPACE"), (self.home, "$HOME"), (self.tmp, "$TMP")):
            if path is not None:
                pairs += [(variant, name) for variant in {str(path), os.path.realpath(path)}]
        # Claude Code names its per-project directory after the workspace path.
        pairs += [(project_slug(str(self.workspace)), "$PROJECT")]
        pairs += [(project_slug(os.path.realpath(self.workspace)), "$PROJECT")]
        return sorted(set(pairs), key=lambda p: (-len(p[0]), p[0]))

    def to_placeholders(self, text: str) -> str:
        """This run's paths replaced by `$WORKSPACE`, `$HOME`, `$TMP`, `$PROJECT`."""
        for path, name in self.placeholders:
            text = text.replace(path, name)
        return text

    def from_placeholders(self, text: str, in_json: bool = False) -> str:
        """Placeholders back to this run's paths (JSON-escaped inside a JSON document)."""
        live_paths = (
            ("$WORKSPACE", str(self.workspace)), ("$HOME", str(self.home)),
            ("$TMP", str(self.tmp) if self.tmp else None), ("$PROJECT", project_slug(str(self.workspace))),
        )
        for name, live in live_paths:
            if live is not None and name in text:
                text = text.replace(name, json.dumps(live)[1:-1] if in_json else live)
        return text


def project_slug(path: str) -> str:
    """How Claude Code turns a workspace path into a directory name under ~/.claude/projects."""
    return re.sub(r"[^A-Za-z0-9]", "-", path)


# --- normalisation -------------------------------------------------------------------------


class Ids:
    """Ids the model API issues (messages, tool calls, items), renamed in order of first sight.

    The API makes new ones on every call, so without this two recordings of the same session
    would differ; the CLI only needs them to be consistent, and it echoes the renamed ones back.
    """

    def __init__(self) -> None:
        self._names: dict[str, str] = {}
        self._count = 0
        self._lock = threading.Lock()

    def issue(self, value: str) -> str:
        """The stable name of an id seen in an answer (registered on first sight)."""
        with self._lock:
            if value in self._names:
                return self._names[value]
            stable, shaped = STABLE_ID.match(value), ID_SHAPE.match(value)
            if stable:  # already renamed: a recorded answer served again
                self._count = max(self._count, int(stable.group(2)))
                name = value
            elif shaped:
                self._count += 1
                name = f"{shaped.group(1)}_aam{self._count:03d}"
            else:
                return value
            self._names[value] = name
            return name

    def known(self, value: str) -> str:
        """An id echoed in a request, by its stable name when an answer issued it."""
        with self._lock:
            return self._names.get(value, value)

    def in_text(self, text: str) -> str:
        """Issued ids quoted inside a text (`<tool-use-id>toolu_…</tool-use-id>`) by their names."""
        with self._lock:
            if not self._names:
                return text
            return ID_IN_TEXT.sub(lambda m: self._names.get(m.group(0), m.group(0)), text)


class Minted:
    """Ids the CLI made up in this run (MINTED), numbered in order of first sight."""

    def __init__(self) -> None:
        self._names: dict[str, str] = {}
        self._values: dict[str, str] = {}
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._seen: dict[str, list[tuple[str, str]]] = {}
        """The (kind, id) pairs each text holds, in order: a session's texts repeat."""

    def normalise(self, text: str) -> str:
        """Every minted id in a text replaced by its placeholder (new ones registered)."""
        seen = self._seen.get(text)
        if seen is None:
            seen = self._seen[text] = [(kind, found.group(1)) for kind, pattern in MINTED
                                       for found in pattern.finditer(text)]
        with self._lock:
            for kind, value in seen:
                if value not in self._names and not value.startswith("$"):
                    self._counts[kind] = self._counts.get(kind, 0) + 1
                    name = f"${kind}{self._counts[kind]}"
                    self._names[value], self._values[name] = name, value
            if not self._names:
                return text
            for value in sorted(self._names, key=len, reverse=True):
                if value in text:
                    text = text.replace(value, self._names[value])
            return text

    def live(self, text: str) -> str:
        """Placeholders in a recorded answer back to this run's values (unknown ones kept)."""
        if "$" not in text:
            return text
        with self._lock:
            return MINTED_PLACEHOLDER.sub(lambda m: self._values.get(m.group(0), m.group(0)), text)


def _renamed(key: str, value: Any, rename: Callable[[str], str]) -> Any:
    if isinstance(value, str) and key in ID_KEYS:
        return rename(value)
    if isinstance(value, str) and key == "responseId":  # Gemini's: a bare hex id, new every call
        return rename(value if value.startswith("resp_") else f"resp_{value}")
    return _rename_ids(value, rename)


def _rename_ids(value: Any, rename: Callable[[str], str]) -> Any:
    if isinstance(value, dict):
        return {k: _renamed(k, v, rename) for k, v in value.items()}
    if isinstance(value, list):
        return [_rename_ids(v, rename) for v in value]
    return value


class Normaliser:
    """Turns a run's raw requests and answers into their run-independent form.

    One per session: it remembers the ids the answers issued, to rename them in later requests.
    """

    def __init__(self, paths: Paths, redactor: Redactor) -> None:
        self.paths = paths
        self.redactor = redactor
        self.ids = Ids()
        self.minted = Minted()
        self._fixed: dict[str, str] = {}
        """Each string's run-independent form before the ids: a session's requests repeat their
        history and the CLI's prompt and tools, so each is worked out once."""

    def text(self, value: str) -> str:
        """One string: paths to placeholders, secrets redacted, volatile parts replaced."""
        fixed = self._fixed.get(value)
        if fixed is None:
            fixed = self._fixed[value] = self._fixed_text(value)
        return self.ids.in_text(self.minted.normalise(fixed))

    def _fixed_text(self, value: str) -> str:
        """What `text` does that depends on nothing but the string (and this run's paths)."""
        value = self.redactor.text(self.paths.to_placeholders(value))
        for pattern, repl in VOLATILE_TEXT:
            value = pattern.sub(repl, value)
        if "gitStatus:" in value:
            value = GIT_STATUS.sub(lambda m: SHA.sub("$SHA", m.group(0)), value)
        if "<available_skills>" in value:
            value = SKILL_LISTING.sub(_sorted_skills, value)
        if "(Available: '" in value:
            value = SKILL_NAMES.sub(_sorted_names, value)
        return value

    def live(self, value: str, in_json: bool = False) -> str:
        """A recorded string for this run: its paths and the ids it minted put back."""
        return self.minted.live(self.paths.from_placeholders(value, in_json))

    def request(self, body: dict[str, Any]) -> dict[str, Any]:
        """A request body without run ids, cache markers, paths, dates or secrets."""
        body = {k: v for k, v in body.items() if k not in RUN_ID_KEYS}
        if isinstance(body.get("input"), list):  # Responses input items carry random ids
            body["input"] = [_without(item, "id") for item in body["input"]]
        # Before the ids the CLI minted are numbered, so they are numbered in call order too.
        body = results_in_call_order(body)
        normal = dict(_rename_ids(self._deep(_strip_keys(body, VOLATILE_KEYS)), self.ids.known))
        _sort_skill_enum(normal)
        return normal

    def response(self, response: RecordedResponse) -> RecordedResponse:
        """An answer with paths as placeholders and secrets redacted, deltas merged."""
        events = None if response.events is None else merge_deltas(response.events)
        if events is not None:  # an event name that only repeats `data.type` is left out
            events = [SseEvent(event=None if e.event == _type(e.data) else e.event, data=self._answer(e.data))
                      for e in events]
        return RecordedResponse(status=response.status, events=events, body=self._answer(response.body),
                                cut=response.cut)

    def _answer(self, data: Any) -> Any:
        return _rename_ids(self._deep(data), self.ids.issue)

    def _deep(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self._deep(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._deep(v) for v in value]
        return value


def results_in_call_order(body: dict[str, Any]) -> dict[str, Any]:
    """The results of several tool calls of one answer in the order of the calls (Anthropic
    Messages): Claude Code sends them in the order they finished, and parallel sub-agents
    (2.1.197's `Agent` calls return the sub-agent's answer) finishing within a few
    milliseconds of each other finish in either order, run to run. Other blocks stay where
    they are; results of calls not found keep their order, after the others. The body itself
    when they are in order already."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not any(tool_results(m)[1:] for m in messages):
        return body
    out: list[Any] = []
    calls: dict[Any, int] = {}
    moved = False
    for message in messages:
        if isinstance(message, dict) and message.get("role") == "assistant":
            blocks = message.get("content")
            calls = {b.get("id"): n for n, b in enumerate(blocks if isinstance(blocks, list) else [])
                     if isinstance(b, dict) and b.get("type") == "tool_use"}
        results = tool_results(message)
        ordered = sorted(results, key=lambda b: calls.get(b.get("tool_use_id"), len(calls)))
        if message.get("role") == "user" and any(a is not b for a, b in zip(ordered, results, strict=True)):
            placed = iter(ordered)
            content = [next(placed) if _is_result(block) else block for block in message["content"]]
            message, moved = {**message, "content": content}, True
        out.append(message)
    return {**body, "messages": out} if moved else body


def _is_result(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "tool_result"


def _sort_skill_enum(body: dict[str, Any]) -> None:
    """Gemini CLI's `activate_skill` declaration lists the skill names as an enum in an order that
    varies between runs (1 of 4 runs of its tests here): sorted, like the listings in text."""
    for tool in body.get("tools") or []:
        declarations = tool.get("functionDeclarations") if isinstance(tool, dict) else None
        for decl in declarations or []:
            if not isinstance(decl, dict) or decl.get("name") != "activate_skill":
                continue
            for key in ("parametersJsonSchema", "parameters"):
                schema = decl.get(key)
                name = schema.get("properties", {}).get("name") if isinstance(schema, dict) else None
                enum = name.get("enum") if isinstance(name, dict) else None
                if isinstance(enum, list) and all(isinstance(e, str) for e in enum):
                    enum.sort()


def _sorted_names(listing: re.Match[str]) -> str:
    return listing.group(1) + ", ".join(sorted(listing.group(2).split(", "))) + listing.group(3)


def _sorted_skills(listing: re.Match[str]) -> str:
    entries = SKILL_ENTRY.findall(listing.group(2))
    if not entries:
        return listing.group(0)
    gaps = SKILL_ENTRY.split(listing.group(2))  # the text around the entries stays where it was
    body = gaps[0] + "".join(e + g for e, g in zip(sorted(entries), gaps[1:], strict=True))
    return listing.group(1) + body + listing.group(3)


def _without(item: Any, key: str) -> Any:
    return {k: v for k, v in item.items() if k != key} if isinstance(item, dict) else item


def _strip_keys(value: Any, keys: Sequence[str]) -> Any:
    if isinstance(value, dict):
        return {k: _strip_keys(v, keys) for k, v in value.items() if k not in keys}
    if isinstance(value, list):
        return [_strip_keys(v, keys) for v in value]
    return value


def apply_ignore(value: Any, ignore: Sequence[re.Pattern[str]]) -> Any:
    """`rerun-ignore` patterns replaced by `$IGNORED` in every string (both sides)."""
    if not ignore:
        return value
    if isinstance(value, str):
        for pattern in ignore:
            value = pattern.sub("$IGNORED", value)
        return value
    if isinstance(value, dict):
        return {k: apply_ignore(v, ignore) for k, v in value.items()}
    if isinstance(value, list):
        return [apply_ignore(v, ignore) for v in value]
    return value


def comparable(value: Any, ignore: Sequence[re.Pattern[str]]) -> Any:
    """A normalised request as it is compared: tool results once (`responses_once`), then the
    `rerun-ignore` patterns applied."""
    return apply_ignore(responses_once(value), ignore)


def responses_once(body: Any) -> Any:
    """A Gemini request (`contents`) with consecutive messages of one role as one, and a
    `functionResponse` part that repeats an earlier one of its message left out; other bodies
    as they are.

    Gemini CLI rebuilds a resumed session from its chat file, where each tool result is both in
    the answer's `toolCalls` and in the user message that carried it, so it sends the result
    twice (0.60, 0.61), one run in a few dozen once: the same session, the same meaning."""
    contents = body.get("contents") if isinstance(body, dict) else None
    if not isinstance(contents, list) or not all(isinstance(c, dict) for c in contents):
        return body
    merged: list[dict[str, Any]] = []
    for content in contents:
        parts = content.get("parts")
        if merged and isinstance(parts, list) and content.get("role") == merged[-1].get("role") \
                and isinstance(merged[-1].get("parts"), list):
            merged[-1] = {**merged[-1], "parts": [*merged[-1]["parts"], *parts]}
        else:
            merged.append(content)
    out = []
    for content in merged:
        parts = content.get("parts")
        if isinstance(parts, list):
            kept: list[Any] = []
            for part in parts:
                if not (isinstance(part, dict) and "functionResponse" in part and part in kept):
                    kept.append(part)
            content = {**content, "parts": kept}
        out.append(content)
    return {**body, "contents": out}


# --- streams -------------------------------------------------------------------------------


def provider_of(path: str) -> Provider | None:
    route = path.split("?", 1)[0]
    if route.startswith("/v1/messages"):
        return "anthropic-messages"
    if route.endswith("/responses"):
        return "openai-responses"
    if route.endswith((":streamGenerateContent", ":generateContent")):
        return "gemini-generate-content"
    return None


def classify(path: str, body: dict[str, Any]) -> Stream:
    """The stream of a request: agent turns offer tools; side calls do not."""
    route = path.split("?", 1)[0]
    if route.endswith(("/count_tokens", ":countTokens")):
        return "count_tokens"
    if provider_of(path) is None:
        return "other"
    # Quota probes offer tools too but ask for a token or two.
    if body.get("tools") and int(body.get("max_tokens") or 4096) > 64:
        return "agent"
    return "side"


def history_key(body: dict[str, Any]) -> str:
    """Where the conversation is: Anthropic `messages`, Responses `input`, Gemini `contents`."""
    if "messages" in body:
        return "messages"
    return "contents" if "contents" in body else "input"


def model_item(item: Any) -> bool:
    """An item the model produced: an assistant (or Gemini `model`) message, a call, reasoning."""
    if not isinstance(item, dict):
        return False
    return item.get("role") in ("assistant", "model") or item.get("type") in (*TOOL_CALL_TYPES, "reasoning")


def turn_of(body: dict[str, Any]) -> int:
    """The 1-based model turn a request asks for: one more than the model turns it carries
    (Anthropic: assistant messages; Responses: runs of the model's own items, so several calls
    in one answer are one turn)."""
    items = body.get(history_key(body))
    if not isinstance(items, list):
        return 1
    if "messages" in body:
        return 1 + sum(1 for m in items if isinstance(m, dict) and m.get("role") == "assistant")
    if "contents" in body:
        return 1 + sum(1 for m in items if isinstance(m, dict) and m.get("role") == "model")
    runs, inside = 0, False
    for item in items:
        mine = model_item(item)
        runs += mine and not inside
        inside = mine
    return 1 + runs


# --- compact storage -----------------------------------------------------------------------


def short_hash(value: Any) -> str:
    raw = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(raw.encode()).hexdigest()[:12]


def _share(value: Any, shared: dict[str, Any], label: str) -> dict[str, str]:
    """Put a value in the shared table under a readable, content-derived key; a reference to it."""
    name = value.get("name") if isinstance(value, dict) else None
    key = f"{name or label}-{short_hash(value)}"
    shared[key] = value
    return {SHARED: key}


def compact(full: dict[str, Any], previous: dict[str, Any] | None, shared: dict[str, Any]) -> dict[str, Any]:
    """A normalised request as stored: big parts shared, history carried over from `previous`."""
    stored = dict(full)
    for key in ("system", "instructions", "systemInstruction"):
        if isinstance(stored.get(key), list):  # blocks one by one: a short one varies by prompt
            stored[key] = [_share_big(block, shared, key) for block in stored[key]]
        elif stored.get(key):
            stored[key] = _share(stored[key], shared, key)
    if isinstance(stored.get("tools"), list):
        stored["tools"] = [_share(tool, shared, "tool") for tool in stored["tools"]]
    key = history_key(full)
    items, before = full.get(key), (previous or {}).get(key)
    if isinstance(items, list) and isinstance(before, list) and before and items[: len(before)] == before:
        items = items[len(before):]
        stored[HISTORY] = len(before)
    if isinstance(items, list):
        stored[key] = [_share_injected(item, shared) for item in items]
    return stored


def _share_big(block: Any, shared: dict[str, Any], label: str) -> Any:
    """A text block of at least SHARE_MIN characters as a shared reference, else itself."""
    text = block.get("text") if isinstance(block, dict) else None
    if not isinstance(text, str):
        return block
    reminder = text.startswith("<system-reminder>") and len(text) >= REMINDER_SHARE_MIN
    return _share(block, shared, label) if reminder or len(text) >= SHARE_MIN else block


def _share_injected(item: Any, shared: dict[str, Any]) -> Any:
    """Long text blocks of a message (the CLI's own reminders and listings) shared.

    They are the same in every case run by one CLI version, so a store common to all cases can
    hold them once; tool results stay inline, they are what a reviewer reads.
    """
    key = "parts" if isinstance(item, dict) and "parts" in item else "content"  # Gemini: `parts`
    content = item.get(key) if isinstance(item, dict) else None
    if not isinstance(content, list):
        return item
    return {**item, key: [_share_big(block, shared, "text") for block in content]}


def expand(stored: dict[str, Any], previous: dict[str, Any] | None, shared: dict[str, Any]) -> dict[str, Any]:
    """The full normalised request back from its stored form."""
    full = dict(_unshare({k: v for k, v in stored.items() if k != HISTORY}, shared))
    carried = int(stored.get(HISTORY, 0))
    if carried:
        key = history_key(full)
        full[key] = list((previous or {}).get(key, [])[:carried]) + list(full.get(key) or [])
    return full


def _unshare(value: Any, shared: dict[str, Any]) -> Any:
    """Every `$shared` reference replaced by its entry."""
    if isinstance(value, dict):
        if set(value) == {SHARED}:
            return shared[value[SHARED]]
        return {k: _unshare(v, shared) for k, v in value.items()}
    if isinstance(value, list):
        return [_unshare(v, shared) for v in value]
    return value


def detach_shared(traffic: ModelTraffic) -> tuple[ModelTraffic, dict[str, Any]]:
    """The traffic without its shared table, and the table: for a store common to all cases."""
    return traffic.model_copy(update={"shared": {}}), dict(traffic.shared)


def attach_shared(traffic: ModelTraffic, store: dict[str, Any]) -> ModelTraffic:
    """The traffic with the shared entries it refers to taken from a common store."""
    wanted = _references(traffic.model_dump(mode="json")["exchanges"])
    absent = sorted(wanted - set(traffic.shared) - set(store))
    if absent:
        raise KeyError(f"shared entries missing from the store: {', '.join(absent[:3])}")
    found = {key: traffic.shared.get(key, store.get(key)) for key in sorted(wanted)}
    return traffic.model_copy(update={"shared": found})


def _references(value: Any) -> set[str]:
    if isinstance(value, dict):
        if set(value) == {SHARED}:
            return {str(value[SHARED])}
        return set().union(*(_references(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(_references(v) for v in value)) if value else set()
    return set()


Raw = tuple[str, dict[str, Any], RecordedResponse, bool]
"""A kept exchange: path, normalised request, normalised answer, whether it went live."""


def build(
    cli: str, cli_version: str | None, raw: Sequence[Raw],
    labels: Sequence[str | None] | None = None, conversations: Sequence[Conversation] = (),
    arrivals: Sequence[int] | None = None,
) -> ModelTraffic:
    """Traffic from normalised exchanges in the order they were answered, each in its
    conversation (`labels`; see `conversations.build_traffic`), the history compacted within
    its conversation; `arrivals` counts the requests that had arrived at each answer."""
    shared: dict[str, Any] = {}
    previous: dict[str, dict[str, Any]] = {}
    exchanges = []
    provider: Provider = "anthropic-messages"
    counts = arrivals or [i + 1 for i in range(len(raw))]
    for i, ((path, request, response, live), label) in enumerate(
        zip(raw, labels or [None] * len(raw), strict=True)
    ):
        provider = provider_of(path) or provider
        stream = classify(path, request)
        thread = label or stream
        stored = compact(request, previous.get(thread), shared)
        previous[thread] = request
        after = counts[i] if counts[i] > i + 1 else None
        exchanges.append(Exchange(stream=stream, path=path, request=stored, response=response, live=live,
                                  after=after, conversation=label))
    return ModelTraffic(
        cli=cli, cli_version=cli_version, provider=provider, shared=shared, exchanges=exchanges,
        conversations=list(conversations),
    )


def full_requests(traffic: ModelTraffic) -> list[dict[str, Any]]:
    """Every exchange's full normalised request, in order."""
    previous: dict[str, dict[str, Any]] = {}
    out = []
    for exchange in traffic.exchanges:
        thread = exchange.conversation or exchange.stream
        full = expand(exchange.request, previous.get(thread), traffic.shared)
        previous[thread] = full
        out.append(full)
    return out


# --- SSE events ----------------------------------------------------------------------------

# Anthropic delta type -> the field that accumulates.
def served_events(events: Sequence[SseEvent], paths: Paths | Live) -> list[SseEvent]:
    """Recorded events for a new run: placeholders become its paths (and ids), sequence renumbered."""
    live = paths.from_placeholders if isinstance(paths, Paths) else paths
    out = []
    for number, event in enumerate(events):
        data = _live_paths(event.data, live, None)
        if isinstance(data, dict) and "sequence_number" in data:
            data = dict(data, sequence_number=number)
        out.append(SseEvent(event=event.event, data=data))
    return out


# Strings holding a JSON document: a path placed in them must be JSON-escaped.
JSON_TEXT_KEYS = ("partial_json", "arguments")


def _live_paths(value: Any, live: Live, key: str | None) -> Any:
    if isinstance(value, str):
        return live(value, key in JSON_TEXT_KEYS)
    if isinstance(value, dict):
        return {k: _live_paths(v, live, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_live_paths(v, live, key) for v in value]
    return value


def served_body(body: Any, paths: Paths | Live) -> Any:
    """A recorded JSON answer with this run's paths (and ids)."""
    return _live_paths(body, paths.from_placeholders if isinstance(paths, Paths) else paths, None)


def tool_results(item: Any) -> list[dict[str, Any]]:
    content = item.get("content") if isinstance(item, dict) else None
    blocks = content if isinstance(content, list) else []
    return [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
