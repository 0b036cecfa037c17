"""A session's model traffic as a tree of conversations, and replay that follows it.

One agent session talks to its model in several conversations: the main agent's, one per
sub-agent (Claude Code's `Agent` tool starts one; several in one message run at the same
time), and side calls. Each conversation is a sequence of requests, each extending the
previous one's history; across conversations the requests interleave in no fixed order.

**Identity.** A conversation is known by its *root*: the stream, the system prompt (or
instructions) and the first message, normalised. A request belongs to the conversation of
its root whose last request its history extends (a retry after an error repeats it). Two
conversations with the same root (the same sub-agent started twice with the same prompt) are
told apart by that prefix.

**Names.** The first agent conversation is `main`. A sub-agent's conversation is found by the
tool call that started it: a call in another conversation whose input carries the
conversation's prompt (its first message's last text); it is named after the call's
`subagent_type` (`agent_type`, `name`), with the parent and the parent's turn kept. Side
calls are `side`, `count_tokens`, `other`, numbered when there are several.

**Replay.** A live request is answered from the recording of its own conversation at its own
position, never by arrival order (`Tracks`). Answers are also handed out in the recorded
order (`Tracks.wait_turn`): an answer waits for the answers recorded before it, and for as
many requests as had reached the model when it was recorded (`Exchange.after`), and where
the recording switched from one conversation to another, for as long as it paused there
(`Exchange.gap_ms`, up to 2 s). So a sub-agent that finished after the main agent's next turn
in the recording finishes after it again, and the main agent's requests carry the same
notifications.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from aam_eval_action.replay.divergence import Divergence, first_difference, missing
from aam_eval_action.replay.traffic import (
    MINTED_PLACEHOLDER,
    TOOL_CALL_TYPES,
    Conversation,
    ModelTraffic,
    Raw,
    RecordedResponse,
    Stream,
    apply_ignore,
    build,
    classify,
    history_key,
    model_item,
    results_in_call_order,
    short_hash,
    turn_of,
)

Learner = Callable[[dict[str, Any], dict[str, Any], Sequence[re.Pattern[str]]], list[re.Pattern[str]] | None]
"""(recorded request, live request, patterns in force) → new patterns that make them equal."""
AGENT_KEYS = ("subagent_type", "agent_type", "agent_name", "agent", "name")
"""Where a sub-agent-starting call names the agent."""
GAP_MIN_MS = 10
GAP_CAP_MS = 2000
"""Recorded gaps between answers of different conversations are kept from 10 ms, up to 2 s."""
HOLD_SECONDS = 3.0
"""How long an answer waits for the requests recorded before it (they may never come when the
CLI took another path; the answer then goes out anyway)."""


def root_key(request: dict[str, Any], stream: Stream) -> str:
    """What identifies a request's conversation: stream, system prompt and first message."""
    system = request.get("system", request.get("instructions"))
    items = request.get(history_key(request))
    first = items[0] if isinstance(items, list) and items else items
    return short_hash([stream, system, first])


def _history(request: dict[str, Any]) -> list[Any]:
    items = request.get(history_key(request))
    return items if isinstance(items, list) else []


def _extends(history: list[Any], before: list[Any], retry: bool) -> bool:
    if len(history) < len(before) or history[: len(before)] != before:
        return False
    return len(history) > len(before) or retry


@dataclass
class _Open:
    key: str
    index: int
    history: list[Any]
    retry: bool


def segment(
    requests: Sequence[dict[str, Any]], streams: Sequence[Stream], statuses: Sequence[int]
) -> list[int]:
    """The conversation (numbered in order of first request) of each request, in arrival order."""
    opened: list[_Open] = []
    out = []
    for request, stream, status in zip(requests, streams, statuses, strict=True):
        key, history = root_key(request, stream), _history(request)
        fits = [o for o in opened if o.key == key and _extends(history, o.history, o.retry)]
        if fits:
            chosen = max(fits, key=lambda o: len(o.history))
        else:
            chosen = _Open(key, len(opened), history, False)
            opened.append(chosen)
        chosen.history, chosen.retry = history, status != 200
        out.append(chosen.index)
    return out


def prompt_of(request: dict[str, Any]) -> str | None:
    """A conversation's prompt: the last text of the last user message of its first request (the
    CLI's reminders come before it; Codex puts its instructions and context first)."""
    users = [m for m in _history(request) if isinstance(m, dict) and m.get("role") == "user"]
    content = users[-1].get("content", users[-1].get("parts")) if users else None
    if isinstance(content, str):
        return content.strip() or None
    blocks = content if isinstance(content, list) else []
    texts = [str(b["text"]).strip() for b in blocks if isinstance(b, dict) and isinstance(b.get("text"), str)]
    texts = [t for t in texts if t]
    return texts[-1] if texts else None


@dataclass(frozen=True)
class _Call:
    """A tool call in some request's history that may have started a conversation."""

    conversation: int
    turn: int
    position: int
    name: str
    args: dict[str, Any]


def _calls(request: dict[str, Any], conversation: int) -> list[_Call]:
    items = _history(request)
    found: list[_Call] = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        start = i  # the answer this item belongs to starts after the last thing sent back
        while start and model_item(items[start - 1]):
            start -= 1
        turn = turn_of({history_key(request): items[:start]})
        if item.get("type") in TOOL_CALL_TYPES:
            name, given = str(item.get("name")), _args(item.get("arguments"))
            found.append(_Call(conversation, turn, len(found), name, given))
        mine = item.get("role") in ("assistant", "model")
        content = item.get("content", item.get("parts")) if mine else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                name, given = str(block.get("name")), _args(block.get("input"))
                found.append(_Call(conversation, turn, len(found), name, given))
            call = block.get("functionCall") if isinstance(block, dict) else None
            if isinstance(call, dict):  # Gemini
                name, given = str(call.get("name")), _args(call.get("args"))
                found.append(_Call(conversation, turn, len(found), name, given))
    return found


def _args(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return {}
    return value if isinstance(value, dict) else {}


LEADING_TAGS = re.compile(r"^(?:\s*<(\w+)>[^<]*</\1>)+\s*")
"""Tagged lines a CLI puts before a sub-agent's prompt (Copilot: `<current_datetime>…`)."""


def _starter(prompt: str, calls: list[_Call], conversation: int) -> _Call | None:
    """The call whose input carries the conversation's prompt, with or without the tagged lines
    the CLI put before it."""
    prompts = {prompt, LEADING_TAGS.sub("", prompt)}
    for call in calls:
        if call.conversation != conversation and any(
            isinstance(v, str) and v.strip() in prompts for v in call.args.values()
        ):
            return call
    return None


def name_conversations(
    requests: Sequence[dict[str, Any]], streams: Sequence[Stream], numbers: Sequence[int]
) -> list[Conversation]:
    """Each conversation (by number) named, with the sub-agents' parents and starting turns."""
    count = max(numbers, default=-1) + 1
    first = {n: requests[numbers.index(n)] for n in range(count)}
    stream = {n: streams[numbers.index(n)] for n in range(count)}
    calls = [c for r, n in zip(requests, numbers, strict=True) for c in _calls(r, n)]
    starters: dict[int, _Call] = {}
    for n in range(count):
        prompt = prompt_of(first[n])
        call = _starter(prompt, calls, n) if prompt and stream[n] == "agent" else None
        if call is not None:
            starters[n] = call
    names: dict[int, str] = {}
    main = next((n for n in range(count) if stream[n] == "agent" and n not in starters), None)
    if main is not None:
        names[main] = "main"
    order = sorted(range(count), key=lambda n: _order(n, starters, names))
    taken: dict[str, int] = {}
    out: dict[int, Conversation] = {}
    for n in order:
        call = starters.get(n)
        base = names.get(n) or (_agent_name(call) if call else stream[n])
        taken[base] = taken.get(base, 0) + 1
        name = base if taken[base] == 1 else f"{base}-{taken[base]}"
        names[n] = name
        parent = names.get(call.conversation) if call else None
        out[n] = Conversation(
            id=name, stream=stream[n], agent=_agent_name(call) if call else None,
            description=_text(call.args.get("description")) if call else None,
            parent=parent, turn=call.turn if call else None,
        )
    return [out[n] for n in range(count)]


def _order(n: int, starters: dict[int, _Call], names: dict[int, str]) -> tuple[int, int, int, int, int]:
    """Main first, then sub-agents by the turn and position of the call that started them."""
    if names.get(n) == "main":
        return (0, 0, 0, 0, n)
    call = starters.get(n)
    if call is not None:
        return (1, call.conversation, call.turn, call.position, n)
    return (2, 0, 0, 0, n)


def _agent_name(call: _Call) -> str:
    for key in AGENT_KEYS:
        value = call.args.get(key)
        if isinstance(value, str) and value.strip():
            return "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in value.strip())[:40]
    return call.name


def _text(value: Any) -> str | None:
    return " ".join(value.split())[:120] if isinstance(value, str) and value.strip() else None


def _stored_order(conversation: Conversation, named: list[Conversation]) -> tuple[int, int, int]:
    """Main, then the sub-agents as they were named (by the turn and place of their call), then
    side conversations."""
    if conversation.id == "main":
        return (0, 0, 0)
    if conversation.parent is not None:
        return (1, conversation.turn or 0, _suffix(conversation.id))
    return (2, 0, named.index(conversation))


def _suffix(name: str) -> int:
    head, _, tail = name.rpartition("-")
    return int(tail) if head and tail.isdigit() else 1


def where(conversation: Conversation | None, turn: int) -> str:
    """`turn 2`, or `turn 2 of sub-agent `counter` (started at main turn 1)`."""
    if conversation is None or conversation.id == "main" or conversation.stream != "agent":
        return f"turn {turn}"
    started = f", started at {conversation.parent} turn {conversation.turn}" if conversation.parent else ""
    return f"turn {turn} of sub-agent `{conversation.id}`{started}"


# --- recording and replay ---------------------------------------------------------------------


def build_traffic(
    cli: str, cli_version: str | None, raw: Sequence[Raw], arrivals: Sequence[int] | None = None,
    times: Sequence[float] | None = None,
) -> ModelTraffic:
    """Traffic from the kept exchanges in the order they were answered, each labelled with its
    conversation; `arrivals`: how many requests had arrived at each answer; `times`: when
    each answer was handed out (monotonic seconds)."""
    requests = [r[1] for r in raw]
    streams = [classify(r[0], r[1]) for r in raw]
    numbers = segment(requests, streams, [r[2].status for r in raw])
    named = name_conversations(requests, streams, numbers)
    ordered = sorted(named, key=lambda c: _stored_order(c, named))
    traffic = build(cli, cli_version, raw, [named[n].id for n in numbers], ordered, arrivals)
    if times and len({n for n, s in zip(numbers, streams, strict=True) if s == "agent"}) > 1:
        for i in range(1, len(traffic.exchanges)):
            if numbers[i] != numbers[i - 1]:
                gap = round((times[i] - times[i - 1]) * 1000)
                traffic.exchanges[i].gap_ms = min(gap, GAP_CAP_MS) if gap >= GAP_MIN_MS else None
    return traffic


def threads(traffic: ModelTraffic, fulls: Sequence[dict[str, Any]]) -> tuple[list[Conversation], list[int]]:
    """The recorded conversations and each exchange's, as stored or (older traffic) found again."""
    ids = {c.id: n for n, c in enumerate(traffic.conversations)}
    if ids and all(e.conversation in ids for e in traffic.exchanges):
        return list(traffic.conversations), [ids[str(e.conversation)] for e in traffic.exchanges]
    streams = [e.stream for e in traffic.exchanges]
    numbers = segment(fulls, streams, [e.response.status for e in traffic.exchanges])
    return name_conversations(fulls, streams, numbers), numbers


def in_call_order(
    traffic: ModelTraffic, fulls: Sequence[dict[str, Any]]
) -> tuple[ModelTraffic, list[dict[str, Any]]]:
    """Traffic recorded before the results of parallel calls were stored in call order (Claude
    Code 2.1.197 sends its sub-agents' answers in the order they finished) as it is recorded
    now: each request's results in call order, and the ids the CLI made up numbered again in
    order of first sight, in the requests and the answers alike (so a recorded answer's
    `$AGENT2` names the same sub-agent as this run's `$AGENT2`). Newer traffic as it is."""
    ordered = [results_in_call_order(full) for full in fulls]
    if all(new is old for new, old in zip(ordered, fulls, strict=True)):
        return traffic, list(fulls)
    names: dict[str, str] = {}
    counts: dict[str, int] = {}

    def see(text: str) -> str:
        for found in MINTED_PLACEHOLDER.finditer(text):
            if found.group(0) not in names:
                counts[found.group(1)] = counts.get(found.group(1), 0) + 1
                names[found.group(0)] = f"${found.group(1)}{counts[found.group(1)]}"
        return text

    answers = [e.response.model_dump(mode="json", exclude_none=True) for e in traffic.exchanges]
    for full, answer in zip(ordered, answers, strict=True):
        _strings(full, see)
        _strings(answer, see)
    if all(old == new for old, new in names.items()):
        return traffic, ordered

    def rename(text: str) -> str:
        return MINTED_PLACEHOLDER.sub(lambda m: names.get(m.group(0), m.group(0)), text)

    exchanges = [e.model_copy(update={"response": RecordedResponse.model_validate(_strings(a, rename))})
                 for e, a in zip(traffic.exchanges, answers, strict=True)]
    return traffic.model_copy(update={"exchanges": exchanges}), [_strings(f, rename) for f in ordered]


def _strings(value: Any, change: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {k: _strings(v, change) for k, v in value.items()}
    if isinstance(value, list):
        return [_strings(v, change) for v in value]
    return value


@dataclass
class _Track:
    """One recorded conversation being replayed."""

    info: Conversation
    items: list[tuple[int, dict[str, Any]]]
    """(index in the recording, full normalised request) in order."""
    key: str = ""
    served: int = 0
    history: list[Any] | None = None
    """The history of the last live request answered from it (None: not started)."""


class Tracks:
    """The recorded conversations of one session, answering live requests by conversation and
    position, and handing out answers in the recorded order (thread-safe)."""

    def __init__(self, traffic: ModelTraffic, fulls: Sequence[dict[str, Any]],
                 ignore: Sequence[re.Pattern[str]] = (), learner: Learner | None = None) -> None:
        conversations, numbers = threads(traffic, fulls)
        self.ignore = list(ignore)
        self.learner = learner
        """Asked for patterns that make a request equal to the one it was meant to be (a
        recording's self-check); None: a difference is a divergence."""
        indexed = list(enumerate(zip(fulls, numbers, strict=True)))
        self.tracks = [_Track(info, [(i, full) for i, (full, n) in indexed if n == k])
                       for k, info in enumerate(conversations)]
        self._keys()
        self._after = [e.after or i + 1 for i, e in enumerate(traffic.exchanges)]
        # A cassette may come from a pull request: a pause it asks for is capped, never trusted.
        self._gaps = [min(max(e.gap_ms or 0, 0), GAP_CAP_MS) / 1000 for e in traffic.exchanges]
        self._last_sent = 0.0
        self._sent: set[int] = set()
        self._arrivals = 0
        self._lock = threading.Condition()

    def _keys(self) -> None:
        for track in self.tracks:
            if track.items:
                track.key = root_key(apply_ignore(track.items[0][1], self.ignore), track.info.stream)

    def match(self, live: dict[str, Any], stream: Stream) -> tuple[int | None, Divergence | None]:
        """The recording's index answering `live`, or the divergence it is."""
        history = _history(live)
        with self._lock:
            index = self._matching(live, stream, history)
            if index is None and self.learner is not None and self._learn(live, stream, history):
                index = self._matching(live, stream, history)
            if index is not None:
                return index, None
            key = root_key(apply_ignore(live, self.ignore), stream)
            return None, self._divergence(live, stream, key, history)

    def _matching(self, live: dict[str, Any], stream: Stream, history: list[Any]) -> int | None:
        key = root_key(apply_ignore(live, self.ignore), stream)
        same = [t for t in self.tracks if t.key == key]
        for track in [t for t in same if t.history is not None] + [t for t in same if t.history is None]:
            if track.served < len(track.items) and first_difference(
                track.items[track.served][1], live, stream, self.ignore
            ) is None:
                index = track.items[track.served][0]
                track.served += 1
                track.history = history
                return index
        return None

    def _learn(self, live: dict[str, Any], stream: Stream, history: list[Any]) -> bool:
        """Ask the learner for patterns that make `live` the request it was most likely meant
        to be; True when it gave some (they then apply to every comparison)."""
        assert self.learner is not None
        key = root_key(apply_ignore(live, self.ignore), stream)
        track = self._likely(live, stream, key, history)
        if track is None or track.served >= len(track.items):
            return False
        patterns = self.learner(track.items[track.served][1], live, self.ignore)
        if not patterns:
            return False
        self.ignore += patterns
        self._keys()
        return True

    def _divergence(self, live: dict[str, Any], stream: Stream, key: str, history: list[Any]) -> Divergence:
        track = self._likely(live, stream, key, history)
        found = None
        if track is not None and track.served < len(track.items):
            found = first_difference(track.items[track.served][1], live, stream, self.ignore)
        found = found or missing(turn_of(live), stream)
        info = track.info if track else None
        update = {"conversation": info.id if info else None, "where": where(info, found.turn)}
        return found.model_copy(update=update)

    def _likely(self, live: dict[str, Any], stream: Stream, key: str, history: list[Any]) -> _Track | None:
        """The recorded conversation a request that matches nothing was most likely meant for:
        one it continues, else a fresh one with its root, its first message, its system prompt,
        or its stream."""
        same = [t for t in self.tracks if t.key == key]
        for track in same:
            if track.history is not None and _extends(history, track.history, True):
                return track
        fresh = [t for t in self.tracks if t.history is None and t.info.stream == stream and t.items]
        system = live.get("system", live.get("instructions"))
        for pick in (
            [t for t in same if t.history is None],
            [t for t in fresh if _history(t.items[0][1])[:1] == history[:1]],
            [t for t in fresh if t.items[0][1].get("system", t.items[0][1].get("instructions")) == system],
            fresh,
        ):
            if pick:
                return pick[0]
        return None

    def unserved(self) -> dict[str, int]:
        """Recorded requests per conversation that no live request asked for."""
        with self._lock:
            return {t.info.id: len(t.items) - t.served for t in self.tracks if len(t.items) > t.served}

    def served(self) -> dict[str, int]:
        """Recorded answers served per conversation."""
        with self._lock:
            return {t.info.id: t.served for t in self.tracks if t.served}

    def arrived(self) -> None:
        """A live request reached the proxy."""
        with self._lock:
            self._arrivals += 1
            self._lock.notify_all()

    def wait_turn(self, index: int, give_up: threading.Event) -> None:
        """Hold the answer to recorded exchange `index` until the answers recorded before it have
        been handed out and as many requests have arrived as had when it was recorded. After
        HOLD_SECONDS those still missing are taken as never coming (the CLI took another path),
        so no later answer waits for them again."""
        earlier, after = range(index), self._after[index]
        with self._lock:
            def ready() -> bool:
                return self._arrivals >= after and all(i in self._sent for i in earlier)

            done = self._lock.wait_for(lambda: give_up.is_set() or ready(), timeout=HOLD_SECONDS)
            if not done:
                self._sent.update(earlier)
                self._arrivals = max(self._arrivals, after)
            pause = self._last_sent + self._gaps[index] - time.monotonic()
        if pause > 0 and not give_up.is_set():
            give_up.wait(pause)

    def answered(self, index: int) -> None:
        """The answer to recorded request `index` has been handed to the CLI."""
        with self._lock:
            self._sent.add(index)
            self._last_sent = time.monotonic()
            self._lock.notify_all()

    def release(self) -> None:
        """Wake every held answer (after a divergence nothing is replayed any more)."""
        with self._lock:
            self._lock.notify_all()
