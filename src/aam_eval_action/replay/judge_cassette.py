"""Judge cassettes: the judge's SDK traffic recorded and replayed as ordinary vcrpy cassettes.

No process-wide patching: each case's judge client gets its own transport that plays from,
or appends to, that case's own vcrpy `Cassette`. Parallel cases therefore never mix calls.

Replay mode (the PR check) does not go through vcrpy at all: the file is parsed with YAML's
safe loader and requests are matched as vcrpy matches them (method, path, query, and the
body compared as parsed JSON), each recorded answer played once. That is several times
faster on large suites, and a cassette from a pull request is never given to a loader that
could construct Python objects.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from aam_eval_action.fsutil import atomic_write, is_inside
from aam_eval_action.providers import PROVIDERS
from aam_eval_action.replay.upstream import Network

if TYPE_CHECKING:
    import httpx2

# Only these headers are kept: everything else (keys, org ids, cookies, request ids,
# dates, x-stainless-* platform details) is dropped. An allow-list, not a deny-list.
REQUEST_HEADERS = ("content-type", "anthropic-version", "anthropic-beta", "openai-beta")
RESPONSE_HEADERS = ("content-type",)
_TRANSFER = ("content-encoding", "content-length", "transfer-encoding")
# Host and port are left out so a cassette recorded through a gateway replays anywhere.
MATCH_ON = ("method", "path", "query", "body")


NOT_RECORDED = "this judge request is not in the cassette"
"""What the transport says on a miss; `replay.decision` turns it into a Miss that says why."""


class JudgeReplayMiss(Exception):
    """A judge request the cassette cannot answer in replay mode."""


def miss_error(provider: str, message: str) -> Exception:
    """A miss that also derives from the SDK's own error base, so the SDK raises it at once
    instead of wrapping it in a connection error and retrying."""
    if provider == "anthropic":
        import anthropic

        cls = type("AnthropicJudgeReplayMiss", (JudgeReplayMiss, anthropic.AnthropicError), {})
    else:
        import openai

        cls = type("OpenAIJudgeReplayMiss", (JudgeReplayMiss, openai.OpenAIError), {})
    return cls(message)  # type: ignore[no-any-return]


def _canonical_uri(uri: str, provider: str) -> str:
    """The provider's public API address, whatever gateway or local server was used.

    Recordings stay byte-stable (no ports), reveal no internal hosts, and replay anywhere.
    """
    parts = urlsplit(uri)
    path = parts.path
    if "/v1/" in path:
        path = path[path.index("/v1/"):]
    host = PROVIDERS[provider].api_host if provider in PROVIDERS else parts.netloc
    return urlunsplit(("https", host, path, parts.query, ""))


def _scrub_request(request: Any, redact: Callable[[str], str], provider: str) -> Any:
    request.uri = _canonical_uri(request.uri, provider)
    kept = {k: v for k, v in request.headers.items() if k.lower() in REQUEST_HEADERS}
    request.headers = kept
    if request.body:
        request.body = _readable_body(request.body, redact)
    return request


@functools.lru_cache(maxsize=64)
def _readable_body(body: bytes, redact: Callable[[str], str]) -> bytes:
    """A JSON body indented with sorted keys and redacted; vcrpy asks for it several times
    per call (matching, playing, saving), hence the cache."""
    try:
        parsed = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        # Not JSON (a form, a proxy's error page...): still never written unredacted.
        return redact(body.decode("utf-8", "replace")).encode()
    return redact(json.dumps(parsed, indent=2, sort_keys=True, ensure_ascii=False)).encode()


def _scrub_response(response: dict[str, Any], redact: Callable[[str], str]) -> dict[str, Any]:
    headers = response.get("headers", {})
    response["headers"] = {k: v for k, v in headers.items() if k.lower() in RESPONSE_HEADERS}
    body = response.get("body", {}).get("string")
    if body:
        try:
            parsed = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            raw = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body)
            response["body"]["string"] = redact(raw)
            return response
        text = json.dumps(parsed, indent=2, sort_keys=True, ensure_ascii=False)
        response["body"]["string"] = redact(text)
    return response


class JudgeCassette:
    """One case's judge cassette, opened for a mode: replay, auto or record."""

    def __init__(
        self, path: Path, mode: str, provider: str, redact: Callable[[str], str] = str,
        inside: Path | None = None, network: Network | None = None, *, checkout: Path | None,
    ) -> None:
        """`inside`: the cassettes folder; a cassette resolving outside it is refused.
        `network`: the runner's proxy and CA settings, for the calls that go to the API.
        `checkout`: the runner's checkout, for `fsutil.atomic_write`."""
        self.path = path
        self.inside = inside
        self.checkout = checkout
        self.network = network or Network()
        self.mode = mode
        self.provider = provider
        self.redact = redact
        self._lock = threading.Lock()
        self.used: list[tuple[Any, dict[str, Any]]] = []
        self.recorded = 0
        self.played = 0
        self._mine = threading.local()
        if mode == "replay":
            self.player: Player | None = Player.load(path, inside)
            return
        self.player = None
        if mode != "record":
            # The file may come from a pull request: our own safe, bounded read refuses
            # python tags, aliases and malformed interactions before vcrpy ever opens it.
            Player.load(path, inside)
        self._open_vcr(path, mode, provider, redact)

    def _open_vcr(self, path: Path, mode: str, provider: str, redact: Callable[[str], str]) -> None:
        from vcr import VCR
        from vcr.cassette import Cassette

        config = VCR(
            match_on=MATCH_ON, decode_compressed_response=True,
            before_record_request=functools.partial(_scrub_request, redact=redact, provider=provider),
            before_record_response=functools.partial(_scrub_response, redact=redact),
            record_mode="all" if mode == "record" else "new_episodes",
        ).get_merged_config(path=str(path))
        kept = {k: config[k] for k in (
            "serializer", "persister", "match_on", "record_mode", "before_record_request",
            "before_record_response", "allow_playback_repeats",
        )}
        if mode == "record" or not path.exists():
            self.cassette = Cassette(path=str(path), **kept)
        else:
            self.cassette = Cassette.load(path=str(path), **kept)

    @property
    def metadata(self) -> dict[str, Any]:
        if self.player is not None:
            return dict(self.player.metadata)
        return dict(self.cassette._metadata)

    def play_recorded(self, provider: str, path: str, params: dict[str, Any]) -> Any:
        """Replay's fast path: the recorded response body for the request these parameters make,
        parsed, without going through the SDK; None when it is not recorded (or not replay mode).

        The SDK sends `params` as its JSON body, so a match here is the match the SDK's own
        request would find; anything else goes the SDK's way and gets its exact miss.
        """
        if self.player is None:
            return None
        text = json.dumps(params)
        if self.redact(text) == text:  # nothing to mask: the parameters are the body as parsed
            parts = urlsplit(path)
            key: MatchKey = ("POST", _path_of(parts.path), parts.query, params)
        else:
            key = _match_key("POST", path, text, self.redact)
        with self._lock:
            played = self.player.take(key, peek=True)
            if played is None or played["status"]["code"] >= 400:
                return None
            try:
                body = json.loads(played["body"]["string"])
            except (TypeError, ValueError):
                return None
            self.player.take(key)
            self.played += 1
            self.count_mine()
        return body

    def count_mine(self) -> None:
        self._mine.played = self.mine() + 1

    def mine(self) -> int:
        """Answers played back to this thread (judge votes asked side by side each count theirs)."""
        return int(getattr(self._mine, "played", 0))

    def transport(self) -> httpx2.BaseTransport:
        return _transport_class()(self)  # type: ignore[call-arg]

    def http_client(self) -> httpx2.Client:
        """The SDK's own HTTP client class, on this cassette's transport."""
        if self.provider == "anthropic":
            import anthropic

            return anthropic.DefaultHttpxClient(transport=self.transport())
        import openai

        return openai.DefaultHttpxClient(transport=self.transport())

    def save(self, metadata: dict[str, Any]) -> bool:
        """Write the calls used in this run (sorted, atomically); False when nothing changed."""
        if self.mode == "replay" or (self.recorded == 0 and metadata == self.metadata):
            return False
        from vcr.serialize import serialize

        if self.inside is not None and not is_inside(self.path.parent, self.inside):
            from aam_eval_action.replay.agent_cassette import CassetteError

            raise CassetteError(f"{self.path.parent}: resolves outside {self.inside} (a symlink?); "
                             "remove it and record again")
        used = sorted(self.used, key=lambda pair: (pair[0].method, pair[0].uri, pair[0].body or b""))
        data = {
            "requests": [req for req, _ in used],
            "responses": [resp for _, resp in used],
            "metadata": metadata,
        }
        atomic_write(self.path, serialize(data, self.cassette._serializer), self.checkout)
        return True


@functools.cache
def _transport_class() -> type[httpx2.BaseTransport]:
    """The transport's class, made on first use: replay never needs httpx2 (its import is a
    noticeable share of a large replay's start-up)."""
    import httpx2

    class _Transport(httpx2.BaseTransport):
        def __init__(self, owner: JudgeCassette) -> None:
            self.owner = owner
            self._inner: httpx2.HTTPTransport | None = None

        def handle_request(self, request: httpx2.Request) -> httpx2.Response:
            from vcr.request import Request as VcrRequest

            body = request.read()
            owner = self.owner
            if owner.player is not None:
                return self._play(request, body)
            vreq = VcrRequest(request.method, str(request.url), body, dict(request.headers))
            with owner._lock:
                cassette = owner.cassette
                if owner.mode != "record" and vreq in cassette:
                    played = cassette.play_response(vreq)
                    owner.used.append((cassette._before_record_request(vreq), played))
                    owner.played += 1
                    owner.count_mine()
                    return _to_response(played)
            if owner.mode == "replay":
                raise miss_error(owner.provider, NOT_RECORDED)
            response = self._real(str(request.url)).handle_request(request)
            content = response.read()
            serialized = {
                "status": {"code": response.status_code, "message": response.reason_phrase},
                "headers": {k: [v] for k, v in response.headers.items()},
                "body": {"string": content},
            }
            if response.status_code < 400:
                with owner._lock:
                    before = len(owner.cassette.data)
                    owner.cassette.append(vreq, serialized)
                    if len(owner.cassette.data) > before:
                        owner.used.append(owner.cassette.data[-1])
                        owner.cassette.play_counts[len(owner.cassette.data) - 1] += 1
                        owner.recorded += 1
            headers = [(k, v) for k, v in response.headers.items() if k.lower() not in _TRANSFER]
            return httpx2.Response(
                response.status_code, headers=headers, content=content,
                extensions={"reason_phrase": response.reason_phrase.encode("ascii", "replace")},
            )

        def _play(self, request: httpx2.Request, body: bytes) -> httpx2.Response:
            owner = self.owner
            assert owner.player is not None
            key = _match_key(request.method, str(request.url), body, owner.redact)
            with owner._lock:
                played = owner.player.take(key)
                if played is None:
                    raise miss_error(owner.provider, NOT_RECORDED)
                owner.played += 1
                owner.count_mine()
            return _to_response(played)

        def _real(self, url: str) -> httpx2.HTTPTransport:
            """The SDK's own way to the API: through the runner's proxy unless NO_PROXY covers it,
            trusting its CA bundles (a transport given to the SDK skips its proxy lookup)."""
            if self._inner is None:
                network = self.owner.network
                self._inner = httpx2.HTTPTransport(proxy=network.proxy_for(url), verify=network.ssl_context())
            return self._inner

        def close(self) -> None:
            if self._inner is not None:
                self._inner.close()


    def _to_response(played: dict[str, Any]) -> httpx2.Response:
        body = played["body"]["string"]
        raw = body.encode("utf-8") if isinstance(body, str) else body
        headers = [(k, v) for k, values in played.get("headers", {}).items() for v in values]
        headers = [(k, v) for k, v in headers if k.lower() not in _TRANSFER]
        message = played["status"].get("message") or ""
        return httpx2.Response(
            played["status"]["code"], headers=headers, content=raw,
            extensions={"reason_phrase": message.encode("ascii", "replace")} if message else None,
        )

    return _Transport


MatchKey = tuple[str, str, str, Any]


def _match_key(method: str, uri: str, body: bytes | str | None, redact: Callable[[str], str]) -> MatchKey:
    """What vcrpy matches on: method, path, query, and the body (as JSON when it parses)."""
    parts = urlsplit(uri)
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else (body or "")
    text = redact(text)
    try:
        parsed: Any = json.loads(text) if text else None
    except ValueError:
        parsed = text
    return method.upper(), _path_of(parts.path), parts.query, parsed


def _path_of(path: str) -> str:
    """The API path from `/v1/` on (a base URL's own prefix is not matched)."""
    return path[path.index("/v1/"):] if "/v1/" in path else path


class Player:
    """A judge cassette read for replay: safe YAML, vcrpy's matching, each answer played once."""

    def __init__(self, interactions: list[tuple[MatchKey, dict[str, Any]]], metadata: dict[str, Any]) -> None:
        self.interactions = interactions
        self.metadata = metadata
        self.taken = [False] * len(interactions)

    @classmethod
    def load(cls, path: Path, inside: Path | None = None) -> Player:
        """The cassette at `path` (an empty one when there is no file); errors for a damaged file.

        Read as untrusted input: bounded size, safe loader, no tags or aliases.
        """
        from aam_eval_action.replay.prefetch import load_file

        exists, data = load_file(path, inside=inside)
        if not exists:
            return cls([], {})
        if not isinstance(data, dict) or not isinstance(data.get("interactions", []), list):
            raise ValueError("not a vcrpy cassette (expected a mapping with `interactions`)")
        found = []
        for i, item in enumerate(data.get("interactions") or []):
            try:
                req, resp = item["request"], item["response"]
                key = _match_key(str(req["method"]), str(req["uri"]), req.get("body"), str)
                if not isinstance(resp["status"]["code"], int) or "string" not in resp["body"]:
                    raise TypeError
            except (KeyError, TypeError, AttributeError):
                raise ValueError(f"interaction {i + 1} is not a request/response pair") from None
            found.append((key, resp))
        metadata = data.get("metadata")
        return cls(found, metadata if isinstance(metadata, dict) else {})

    def take(self, key: MatchKey, *, peek: bool = False) -> dict[str, Any] | None:
        """The first unplayed recorded response whose request matches (marked played unless peeking)."""
        for i, (recorded, response) in enumerate(self.interactions):
            if not self.taken[i] and recorded == key:
                self.taken[i] = not peek
                return response
        return None
