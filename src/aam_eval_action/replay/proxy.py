"""Local model proxies on 127.0.0.1 that record or replay an agent CLI's model traffic.

Point the CLI at `proxy.url` (Claude Code: `ANTHROPIC_BASE_URL=proxy.url`; Codex: its custom
provider's `base_url`, i.e. `OPENAI_BASE_URL=proxy.url + "/v1"` in the run's env).

- `RecordingProxy(upstream, normaliser)` forwards every request to the real upstream (the
  gateway or provider base URL the CLI would have used), streams SSE back chunk by chunk as
  it arrives, and keeps each exchange. Auth headers go upstream but are never stored.
- `ReplayProxy(traffic, normaliser)` has no upstream. Each live request is compared,
  normalised, with the next recorded request of its own conversation (the main agent's, a
  sub-agent's: `replay.conversations`), whatever order concurrent conversations arrive in;
  when equal, the recorded answer is sent back as SSE with the paths and ids of the new run,
  in the recorded order of requests; when not, the first difference is kept as `divergence`
  and the CLI gets HTTP 400 `invalid_request_error`, which stops it at once (429 and 5xx
  would be retried). With `continue_upstream` (and the runner's real key), the
  diverging request and everything after it go to the upstream instead and are recorded, so
  `traffic()` is the full new session and `live_requests` / `usage` say what it cost.

Both count the connections and requests they served, so a test can prove that nothing went
anywhere else.
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import http.server
import json
import re
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Self

from aam_eval_action.engines.registry import engine_of_user_agent
from aam_eval_action.replay.conversations import Tracks, build_traffic, in_call_order
from aam_eval_action.replay.divergence import Divergence
from aam_eval_action.replay.traffic import (
    Exchange,
    ModelTraffic,
    Normaliser,
    Raw,
    RecordedResponse,
    classify,
    full_requests,
    parse_sse,
    provider_of,
    served_body,
    served_events,
    sse_bytes,
    usage,
)
from aam_eval_action.replay.upstream import Upstream, proxy_env, upstream_for
from aam_eval_action.replay.volatile import Mask, compile_masks, learn, merge

__all__ = ["RecordingProxy", "ReplayProxy", "Upstream", "proxy_env", "upstream_for"]

HOP_BY_HOP = {
    "connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer",
    "upgrade", "host", "content-length", "accept-encoding",
}  # fmt: skip
AUTH_HEADERS = ("x-api-key", "authorization", "x-goog-api-key")
PASSED_BACK = {"retry-after", "retry-after-ms", "x-should-retry", "request-id", "x-request-id"}
RETRY_NOW = (("retry-after", "0"), ("x-should-retry", "true"))
Headers = Sequence[tuple[str, str]]
CLI_AGENT = re.compile(r"^\S+?/(\d\S*)")
"""A User-Agent's version: `claude-cli/2.1.330 (…)`, `codex_exec/0.169.0 …`."""
PREFIX = "aam-eval replay"


@dataclass(frozen=True)
class Incoming:
    """A request the CLI sent to the proxy."""

    method: str
    path: str
    headers: dict[str, str]
    """Header names in lower case."""
    raw: bytes
    body: dict[str, Any]


class _Reply:
    """The handler's way back to the CLI: a whole answer or a chunked stream."""

    def __init__(self, handler: _Handler) -> None:
        self._h = handler
        self.started = False
        self.mark = (0, 0, 0.0)
        """(write order, requests arrived, time) taken just before the last write to the CLI:
        when the CLI had the answer, and how many requests had reached the proxy by then."""
        self.began = time.monotonic()
        """When the request arrived (an answer that ended after it was concurrent with it)."""

    def _marked(self) -> None:
        self.mark = self._h.server.owner.delivery_mark()

    def whole(self, status: int, content_type: str, data: bytes, headers: Headers = ()) -> None:
        with self._h.server.owner.spaced_end(self.began):
            self._whole(status, content_type, data, headers)

    def _whole(self, status: int, content_type: str, data: bytes, headers: Headers) -> None:
        self._h.send_response(status)
        self._h.send_header("content-type", content_type)
        self._h.send_header("content-length", str(len(data)))
        for name, value in headers:
            self._h.send_header(name, value)
        self._marked()
        self._h.end_headers()
        self._h.wfile.write(data)
        self.started = True

    def json(self, status: int, body: Any, headers: Headers = ()) -> None:
        self.whole(status, "application/json", json.dumps(body).encode(), headers)

    def open_stream(self, status: int, content_type: str, headers: Headers = ()) -> None:
        self._h.send_response(status)
        self._h.send_header("content-type", content_type)
        self._h.send_header("cache-control", "no-cache")
        self._h.send_header("transfer-encoding", "chunked")
        for name, value in headers:
            self._h.send_header(name, value)
        self._h.end_headers()
        self.started = True

    def chunk(self, data: bytes) -> None:
        if data:
            self._marked()
            self._h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self._h.wfile.flush()

    def close_stream(self, last: bytes = b"") -> None:
        """The stream's last chunk (held back until the upstream ended it) and its end."""
        with self._h.server.owner.spaced_end(self.began):
            self.chunk(last)
            self._h.wfile.write(b"0\r\n\r\n")
            self._h.wfile.flush()


END_SPACING_SECONDS = 0.25
"""The least time between the ends of two answers that were being served at the same time.

Two sub-agents that finish within milliseconds of each other leave the CLI a race of its own
(which one's answer or notification the main agent sees first, and whether both come in one
request), so a recording would not repeat itself. Their ends are spaced, recorded and
replayed alike: the later one's last chunk is held back until this long after the earlier
one's (the recorded pause between them, `Exchange.gap_ms`, is then at least this too).
Answers to requests that came after an answer ended are not held: they may depend on it."""
ANSWER_ENDS = re.compile(rb"message_stop|response\.(?:completed|incomplete|failed)|\[DONE\]|\"finishReason\"")
"""What ends a streamed answer: Anthropic's `message_stop`, the Responses API's final event, chat
completions' `[DONE]`, Gemini's `finishReason`."""
STOP_WAIT_SECONDS = 10.0
"""How long stopping a proxy waits for requests still being served."""


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 64
    owner: _Proxy


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: what happened is kept as data on the proxy."""

    def setup(self) -> None:
        super().setup()
        self.server.owner.count_connection()

    def do_POST(self) -> None:
        self.server.owner.arrive()
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {}
        headers = {k.lower(): v for k, v in self.headers.items()}
        incoming = Incoming("POST", self.path, headers, raw, body if isinstance(body, dict) else {})
        reply = _Reply(self)
        owner = self.server.owner
        with owner.in_flight(), contextlib.suppress(BrokenPipeError, ConnectionResetError):
            try:
                owner.serve(incoming, reply)
            except Exception as exc:  # a bug must stop the CLI, not make it retry a dead socket
                owner.failures.append(f"{type(exc).__name__}: {exc}")
                if not reply.started:
                    _refuse(reply, self.path, 400, f"{PREFIX}: internal error: {exc}")

    def do_GET(self) -> None:
        self.server.owner.count_request()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            _Reply(self).json(404, {"error": {"type": "not_found_error", "message": "not proxied"}})


class _Proxy:
    """The HTTP server part both roles share."""

    def __init__(self, normaliser: Normaliser) -> None:
        self.normaliser = normaliser
        self.connections = 0
        """Connections the CLI opened to this proxy."""
        self.requests = 0
        """Requests this proxy received."""
        self.failures: list[str] = []
        """Errors inside the proxy itself (each answered with a 400 so the CLI stops)."""
        self.cli: str | None = None
        self.cli_version: str | None = None
        self._exchanges: list[tuple[tuple[int, int, float], Raw]] = []
        """Each kept exchange with its reply's mark: (write order, requests arrived by then)."""
        self._writes = 0
        self.arrivals = 0
        """Requests that reached the proxy (counted as they arrive, before they are served)."""
        self._lock = threading.Lock()
        self._ending = threading.Lock()
        self._last_end = float("-inf")
        self._idle = threading.Condition(self._lock)
        self._active = 0
        self._http: _Server | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    def count_connection(self) -> None:
        with self._lock:
            self.connections += 1

    def count_request(self) -> None:
        with self._lock:
            self.requests += 1

    def arrive(self) -> None:
        """A request reached the proxy (before it is read through or served)."""
        with self._lock:
            self.arrivals += 1

    def delivery_mark(self) -> tuple[int, int, float]:
        """A write to the CLI is about to happen: its order, the requests arrived so far, the time."""
        with self._lock:
            self._writes += 1
            return self._writes, self.arrivals, time.monotonic()

    @contextlib.contextmanager
    def spaced_end(self, began: float) -> Iterator[None]:
        """Around the write that completes an answer to a request that arrived at `began`: when
        another answer ended since (the two were served at the same time) less than
        END_SPACING_SECONDS ago, wait out the rest first. One answer ends at a time."""
        with self._ending:
            if self._last_end > began:
                time.sleep(max(0.0, self._last_end + END_SPACING_SECONDS - time.monotonic()))
            try:
                yield
            finally:
                self._last_end = time.monotonic()

    def serve(self, incoming: Incoming, reply: _Reply) -> None:
        raise NotImplementedError

    def start(self) -> _Proxy:
        self._http = _Server(("127.0.0.1", 0), _Handler)
        self._http.owner = self
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}"
        self._thread = threading.Thread(target=self._http.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    @contextlib.contextmanager
    def in_flight(self) -> Iterator[None]:
        """Counts a request being served, so `stop` can wait for its exchange to be kept."""
        with self._lock:
            self._active += 1
        try:
            yield
        finally:
            with self._lock:
                self._active -= 1
                self._idle.notify_all()

    def stop(self) -> None:
        # The CLI may exit as soon as it has read the last answer, before the handler thread
        # has kept that exchange: wait for requests in flight, or the recording would lose it.
        with self._lock:
            self._idle.wait_for(lambda: self._active == 0, timeout=STOP_WAIT_SECONDS)
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
        if self._thread is not None:
            self._thread.join()

    def relay(
        self, incoming: Incoming, upstream: Upstream, reply: _Reply, *, live: bool, prefix: str
    ) -> None:
        """Forward to the upstream and keep the exchange; an unreachable upstream is a 502."""
        try:
            response = self.forward(incoming, upstream, reply)
        except OSError as exc:
            if not reply.started:
                where = f"{upstream.base_url} ({upstream.via()})"
                _refuse(reply, incoming.path, 502, f"{prefix}upstream {where} unreachable: {exc}")
            return
        self.keep(incoming, response, live=live, mark=reply.mark)

    def keep(
        self, incoming: Incoming, response: RecordedResponse, live: bool, mark: tuple[int, int, float]
    ) -> None:
        """Store one exchange as it came (headers are never stored); it is normalised and
        redacted by `traffic`, in the order the CLI had the answers."""
        self._note_cli(incoming.headers.get("user-agent", ""))
        with self._lock:
            self._exchanges.append((mark, (incoming.path, incoming.body, response, live)))

    def identify(self, cli: str, version: str | None) -> None:
        """The CLI this proxy serves, when known beforehand (its User-Agent may not say)."""
        self.cli, self.cli_version = cli, version

    def _note_cli(self, agent: str) -> None:
        found = CLI_AGENT.match(agent)
        engine = engine_of_user_agent(agent)
        if found and engine and self.cli is None:
            self.cli = engine.cli
            self.cli_version = found.group(1)

    def traffic(self) -> ModelTraffic:
        """Every kept exchange in order, normalised, in the stored format.

        Normalised here, in the order the CLI had the answers, rather than as each exchange
        ends: the CLI may act on an answer (and echo the ids it issued in its next request,
        from another thread) before the stream carrying it has closed, so normalising as they
        come would race; in answer order every id is known before a request echoes it, and the
        names ids get do not depend on thread timing.
        """
        with self._lock:
            kept = sorted(self._exchanges, key=lambda e: e[0])  # in the order the CLI had the answers
        normalise = self.normaliser
        exchanges = []
        for _, (path, body, response, live) in kept:
            request = normalise.request(body)
            exchanges.append((path, request, normalise.response(response), live))
        arrivals = [e[0][1] for e in kept]
        times = [e[0][2] for e in kept]
        return build_traffic(self.cli or "unknown", self.cli_version, exchanges, arrivals, times)

    def forward(self, incoming: Incoming, upstream: Upstream, reply: _Reply) -> RecordedResponse:
        """Send a request upstream and relay the answer as it arrives; the answer as recorded."""
        conn, target, proxy_headers = upstream.connect(incoming.path)
        try:
            headers = {**_upstream_headers(incoming, upstream), **(proxy_headers or {})}
            conn.request(incoming.method, target, body=incoming.raw, headers=headers)
            resp = conn.getresponse()
            if proxy_headers is not None and _from_proxy(resp):
                said = resp.read(300).decode("utf-8", "replace")
                raise OSError(f"the proxy answered HTTP {resp.status}: {said}")
            return _relay(resp, reply)
        finally:
            conn.close()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _from_proxy(resp: http.client.HTTPResponse) -> bool:
    """An error the runner's proxy made itself (the APIs answer errors in JSON)."""
    kind = resp.getheader("content-type", "")
    return resp.status >= 400 and "json" not in kind and "event-stream" not in kind


def _upstream_headers(incoming: Incoming, upstream: Upstream) -> dict[str, str]:
    headers = {k: v for k, v in incoming.headers.items() if k not in HOP_BY_HOP}
    headers["accept-encoding"] = "identity"  # the proxy reads the SSE it relays
    if upstream.key:
        for name in AUTH_HEADERS:
            if name in headers:
                headers[name] = f"Bearer {upstream.key}" if name == "authorization" else upstream.key
    return headers


def _relay(resp: http.client.HTTPResponse, reply: _Reply) -> RecordedResponse:
    content_type = resp.getheader("content-type", "application/json")
    # Retry hints and request ids reach the CLI as they came (not stored: they vary per call).
    headers = [(k, v) for k, v in resp.getheaders() if k.lower() in PASSED_BACK]
    if "text/event-stream" not in content_type:
        data = resp.read()
        reply.whole(resp.status, content_type, data, headers)
        try:
            return RecordedResponse(status=resp.status, body=json.loads(data or b"null"))
        except json.JSONDecodeError:
            return RecordedResponse(status=resp.status, body=data.decode("utf-8", "replace"))
    reply.open_stream(resp.status, content_type, headers)
    received = bytearray()
    held = bytearray()
    while chunk := resp.read1(65536):
        received += chunk
        # Passed on as it comes, the CLI sees tokens as the model produces them; but for the
        # chunk that ends the answer and any after it, held until the stream ends (`spaced_end`).
        if held or ANSWER_ENDS.search(chunk):
            held += chunk
        else:
            reply.chunk(chunk)
    reply.close_stream(bytes(held))
    # A stream that ended before its answer's last event was cut by the API (or on the way).
    cut = True if resp.status == 200 and not held else None
    return RecordedResponse(status=resp.status, events=parse_sse(bytes(received)), cut=cut)


class RecordingProxy(_Proxy):
    """Forwards to the upstream and keeps every exchange."""

    def __init__(self, upstream: Upstream, normaliser: Normaliser) -> None:
        super().__init__(normaliser)
        self.upstream = upstream

    def serve(self, incoming: Incoming, reply: _Reply) -> None:
        self.count_request()
        self.relay(incoming, self.upstream, reply, live=False, prefix="")


class ReplayProxy(_Proxy):
    """Answers from recorded traffic; on the first difference refuses, or goes live."""

    def __init__(
        self,
        traffic: ModelTraffic,
        normaliser: Normaliser,
        ignore: Sequence[re.Pattern[str]] = (),
        continue_upstream: Upstream | None = None,
        learn_as: str | None = None,
    ) -> None:
        super().__init__(normaliser)
        self.recorded = traffic
        self.ignore = list(ignore)
        self.continue_upstream = continue_upstream
        self.learnt: list[Mask] = []
        """With `learn_as` (a recording's self-check, named after its case): the volatile values
        learnt from requests that differed from the recording and that a narrow mask explains."""
        self.cli, self.cli_version = traffic.cli, traffic.cli_version
        self.divergence: Divergence | None = None
        """The first live request that differed from the recording."""
        self.live_requests = 0
        """Requests forwarded to the upstream after the divergence."""
        self.refused = 0
        """Requests answered with the divergence error (Claude Code re-sends a refused turn in
        a few fallback shapes before it gives up; all are refused)."""
        traffic, fulls = in_call_order(traffic, full_requests(traffic))
        self._recorded = traffic.exchanges
        learner = None if learn_as is None else functools.partial(self._learn, learn_as)
        self._tracks = Tracks(traffic, fulls, self.ignore, learner)
        self._diverged = threading.Event()

    def arrive(self) -> None:
        super().arrive()
        self._tracks.arrived()

    def _learn(self, case: str, recorded: dict[str, Any], live: dict[str, Any],
               ignore: Sequence[re.Pattern[str]]) -> list[re.Pattern[str]] | None:
        masks = learn(recorded, live, ignore, case)
        if not masks:
            return None
        self.learnt = merge(self.learnt, masks)
        return compile_masks(masks)

    @property
    def served(self) -> dict[str, int]:
        """Recorded answers served per conversation."""
        return self._tracks.served()

    @property
    def unserved(self) -> dict[str, int]:
        """Recorded requests per conversation that no live request asked for (the run ended early)."""
        return self._tracks.unserved()

    @property
    def live_usage(self) -> dict[str, int]:
        """Token counts of the exchanges that went live."""
        return usage(e for e in self.traffic().exchanges if e.live)

    def serve(self, incoming: Incoming, reply: _Reply) -> None:
        self.count_request()
        index, divergence = self._match(incoming)
        if index is not None:
            # Concurrent conversations: answer in the recorded order, so that what each one
            # had seen of the others when it asked is what it had seen then.
            self._tracks.wait_turn(index, self._diverged)
            recorded = self._recorded[index]
            try:
                self._answer(recorded, reply)
            finally:
                self._tracks.answered(index)
            self.keep(incoming, recorded.response, live=False, mark=reply.mark)
            return
        assert divergence is not None
        if self.continue_upstream is None:
            with self._lock:
                self.refused += 1
            _refuse(reply, incoming.path, 400, f"{PREFIX}: diverged from the recording: {divergence.message}")
            return
        with self._lock:
            self.live_requests += 1
        self.relay(incoming, self.continue_upstream, reply, live=True, prefix=f"{PREFIX}: ")

    def _match(self, incoming: Incoming) -> tuple[int | None, Divergence | None]:
        """The recorded exchange answering this request, or the divergence it causes."""
        stream = classify(incoming.path, incoming.body)
        live = self.normaliser.request(incoming.body)
        if self._diverged.is_set():  # after a divergence, nothing is replayed any more
            return None, self.divergence
        index, found = self._tracks.match(live, stream)
        if found is not None:
            with self._lock:
                if self.divergence is None:
                    self.divergence = found
                found = self.divergence
            self._diverged.set()
            self._tracks.release()
        return index, found

    def _answer(self, exchange: Exchange, reply: _Reply) -> None:
        """A recorded answer re-emitted with this run's paths and ids."""
        response = exchange.response
        live = self.normaliser.live
        if response.events is None:
            # A recorded overload or rate limit is retried by the CLI: at once, as it was then.
            retry = RETRY_NOW if response.status == 429 or response.status >= 500 else ()
            reply.json(response.status, served_body(response.body, live), retry)
            return
        data = sse_bytes(served_events(response.events, live))
        reply.whole(response.status, "text/event-stream", data)



def _refuse(reply: _Reply, path: str, status: int, message: str) -> None:
    """An error in the wire format of the API the CLI called."""
    if provider_of(path) == "openai-responses":
        kind = "invalid_request_error" if status < 500 else "server_error"
        reply.json(status, {"error": {"message": message, "type": kind, "param": None, "code": "replay"}})
        return
    if provider_of(path) == "gemini-generate-content":
        kind = "INVALID_ARGUMENT" if status == 400 else "UNAVAILABLE"
        reply.json(status, {"error": {"code": status, "message": message, "status": kind}})
        return
    kind = "invalid_request_error" if status == 400 else "api_error"
    reply.json(status, {"type": "error", "error": {"type": kind, "message": message}})
