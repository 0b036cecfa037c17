"""Agent-played MCP mocks (`mocks/<server>/_server.md`, `type: agent`): a model plays the server.

The stand-in (inside the session's sandbox, with no key) hands each call of such a tool to this
process through a relay folder beneath the session's HOME: it writes `<n>.req.json` (the server,
the tool, the input, the earlier calls of this run) and waits for `<n>.ans.json`. Here a model is
asked, with that runner's words ("You are standing in for the MCP server …"), as the judge is
asked: through the official SDK, recorded in the case's own cassette (`<case>/<stem>.mocks.yaml`).
A re-executed session gets the recorded answer to the same call (the same history), at no cost
and with no network; a call never recorded is a miss in replay, a live call (recorded) under
`auto`.

A reply starting `ERROR:` is a tool error; one starting `ABORT:` aborts the run (only when the
responder has `abort_when:`, else it is a tool error). Everything the agent sent is untrusted:
it reaches the model as the call's arguments, and what comes back is only ever the tool's result.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aam_eval_action.loader import LoadedCase
    from aam_eval_action.mocks import Served
    from aam_eval_action.pipeline.context import CaseContext
    from aam_eval_action.replay.decision import JudgeReplay

ABORT, ERROR = "ABORT:", "ERROR:"
HISTORY, HISTORY_CHARS, ARGS_CHARS, ANSWER_CHARS = 40, 240_000, 16_384, 49_152
MAX_CALLS = 200
"""Calls one session may relay: a runaway agent stops costing here."""


INSTRUCTIONS = (
    'You are standing in for the MCP server "{server}" inside an automated evaluation of a coding-'
    'agent plugin. Each user turn is one tool call the agent under test just made; earlier calls '
    "this run and your answers to them are listed first as history. Reply with ONLY the tool's "
    'result content, exactly as the real server would return it (JSON when the server returns JSON) '
    '— no commentary, no markdown fences unless the real result would contain them. Stay consistent '
    'with your earlier answers this run.'
)
ON_ERROR = ("To return an ordinary tool ERROR the agent should handle (bad arguments, not found, rate "
            'limited), reply with a single line starting "ERROR: " followed by the error text.')
ON_ABORT = ("The evaluation author listed conditions under which this run must be STOPPED because the agent "
            "has gone off the rails. If — and only if — the current call meets one of them, reply with a "
            'single line starting "ABORT: " followed by a short reason naming the condition. The '
            "conditions:\n")


def system_prompt(server: str, abort_when: str | None, prompt: str) -> str:
    """That runner's instructions to the model playing `server`, then the author's description."""
    parts = [INSTRUCTIONS.format(server=server), ON_ERROR]
    if abort_when and abort_when.strip():
        parts.append(ON_ABORT + abort_when.strip())
    else:
        parts.append(f'Never reply with a line starting "{ABORT}".')
    parts.append("The author's description of the server you are playing follows.")
    return "\n\n".join(parts) + "\n\n" + prompt


def _cut(text: str, most: int) -> str:
    return text if len(text) <= most else f"{text[:most]}… [{len(text) - most} more characters omitted]"


def user_prompt(tool: str, given: Any, history: list[dict[str, Any]]) -> str:
    """The call, after the earlier calls of this run (the last 40, within a size budget)."""
    recent, lines, size = history[-HISTORY:], list[str](), 0
    for call in reversed(recent):
        shown = call.get("input") if isinstance(call.get("input"), str) else json.dumps(
            call.get("input"), separators=(",", ":"), ensure_ascii=False)
        verdict = "" if call.get("verdict") == "ok" else f"[{call.get('verdict')}] "
        line = f"- {call.get('tool')}({shown}) → {verdict}{call.get('output')}"
        if size + len(line) > HISTORY_CHARS:
            break
        lines.insert(0, line)
        size += len(line)
    out = []
    if lines:
        older = len(history) - len(lines)
        omitted = f" ({older} older omitted)" if older else ""
        out.append(f"Earlier calls this run{omitted}:\n" + "\n".join(lines))
    arguments = _cut(json.dumps(given, indent=2, ensure_ascii=False), ARGS_CHARS)
    out.append(f"Current call: {tool}\nArguments:\n{arguments}")
    return "\n\n".join(out)


def verdict_of(reply: str, abort_when: str | None) -> tuple[str, str]:
    """(verdict, text) of the model's reply."""
    reply = reply.strip()
    if reply.startswith(ABORT):
        text = reply[len(ABORT):].strip() or "abort_when condition met"
        return ("abort" if abort_when and abort_when.strip() else "tool_error"), text
    if reply.startswith(ERROR):
        return "tool_error", reply[len(ERROR):].strip() or "error"
    return "ok", _cut(reply, ANSWER_CHARS)


class Relay:
    """Answers the stand-ins' relayed calls while a session runs (a thread polling the folder)."""

    def __init__(self, folder: Path | None, answer: Callable[[dict[str, Any]], tuple[str, str]]) -> None:
        """`folder` None: a relay that is never started (no agent mock)."""
        self.folder, self.answer = folder, answer
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
            folder.chmod(0o777)  # the agent's user writes its requests here
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self.calls = 0
        self.failure: BaseException | None = None

    def __enter__(self) -> Relay:
        if self.folder is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)

    def _serve(self) -> None:
        assert self.folder is not None
        while not self._stop.is_set():
            for request in sorted(self.folder.glob("*.req.json")):
                self._one(request)
            self._stop.wait(0.005)

    def _one(self, request: Path) -> None:
        answer = request.with_name(request.name.removesuffix(".req.json") + ".ans.json")
        try:
            call = json.loads(request.read_text(encoding="utf-8"))
            request.unlink()
        except (OSError, json.JSONDecodeError):
            return
        self.calls += 1
        try:
            if self.calls > MAX_CALLS:
                verdict, text = "tool_error", f"more than {MAX_CALLS} agent-mock calls in one session"
            elif self.failure is not None:
                verdict, text = "tool_error", "mock agent responder failed (an earlier call did)"
            else:
                verdict, text = self.answer(call if isinstance(call, dict) else {})
        except BaseException as exc:  # a replay miss or a spent budget: the session's outcome says so
            self.failure = self.failure or exc
            verdict, text = "tool_error", "mock agent responder failed: see the case's error"
        partial = answer.with_suffix(".part")
        partial.write_text(json.dumps({"verdict": verdict, "text": text}), encoding="utf-8")
        os.chmod(partial, 0o644)
        partial.replace(answer)


class MockAgents:
    """The model that plays a case's agent mocks: its cassette, its budget (as the judge's)."""

    def __init__(self, ctx: CaseContext, loaded: LoadedCase, served: Served) -> None:
        from aam_eval_action.providers import JUDGE_PROVIDERS, provider_for_model

        s = ctx.settings
        self.ctx, self.loaded = ctx, loaded
        # The session's own model plays the server, as there; a model no SDK of ours calls
        # (Gemini's) leaves it to the small judge model.
        model = (loaded.case.execution.model if loaded.case.execution else None) or s.model
        provider = provider_for_model(model, "")
        if provider in JUDGE_PROVIDERS:
            self.model, self.provider = model, provider
        else:
            self.model, self.provider = s.plugin_eval_judge(), s.judge_provider
        self.responders = {(srv.name, tool): r for srv in served.servers for tool, r in srv.tools.items()
                           if r.kind == "agent"}
        self.replay: JudgeReplay | None = None
        self._opened = False
        self._lock = threading.Lock()

    def _open(self) -> JudgeReplay | None:
        if not self._opened:
            from aam_eval_action.replay.decision import open_mock_agents

            self.replay = open_mock_agents(self.ctx.settings, self.loaded.case.name, self.provider,
                                           self.ctx.redactor.text)
            self._opened = True
        return self.replay

    def __call__(self, call: dict[str, Any]) -> tuple[str, str]:
        """(verdict, text) of one relayed call: recorded when it was, else asked (and recorded)."""
        from aam_eval_action.pipeline.judge import API_PATHS, ask_plain, plain_params, text_of
        from aam_eval_action.replay.decision import Miss, rerecord_command
        from aam_eval_action.replay.judge_cassette import JudgeReplayMiss

        responder = self.responders.get((str(call.get("server")), str(call.get("tool"))))
        if responder is None:
            return "tool_error", f"no agent mock for {call.get('server')}/{call.get('tool')}"
        history = [h for h in call.get("history") or [] if isinstance(h, dict)]
        system = system_prompt(str(call.get("server")), responder.abort_when, responder.body)
        text = user_prompt(str(call.get("tool")), call.get("input"), history)
        s = self.ctx.settings
        with self._lock:
            replay = self._open()
            mc = replay.cassette if replay else None
            params = plain_params(self.provider, self.model, system, text)
            body = mc.play_recorded(self.provider, API_PATHS[self.provider], params) if mc else None
            if body is None:
                try:
                    body = ask_plain(self.provider, self.model, system, text, s.base_url(self.provider),
                                     s.api_key(self.provider), mc.http_client() if mc else None)
                except JudgeReplayMiss:
                    assert replay is not None
                    which = f"{call.get('server')}/{call.get('tool')}"
                    why = f"{replay.miss_reason}: the agent mock {which} was not recorded answering this call"
                    raise Miss(replay.miss_kind, "mock", why,
                               rerecord_command(s, self.loaded.case.name)) from None
        return verdict_of(text_of(self.provider, body), responder.abort_when)

    def close(self) -> None:
        if self.replay is not None:
            self.replay.cassette.save({"model": self.model, "responders": sorted(
                {r.source for r in self.responders.values()})})
