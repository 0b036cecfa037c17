"""A forward HTTP proxy on 127.0.0.1 that behaves like a corporate runner's proxy.

It knows the hosts it can reach by name only (`hosts`: name → the address it connects to),
the way a proxy resolves names the runner itself cannot, and it cannot reach the runner's
loopback: a request aimed at `127.0.0.0/8`, `::1` or `localhost` is refused with 403, any
other unknown host with 502. It serves absolute-form requests (`POST http://host/path`) and
`CONNECT host:port` tunnels, and keeps a log of every request it was asked for, so a test can
prove what went through it and what did not.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import socketserver
import threading
import urllib.parse
from dataclasses import dataclass

HEAD_LIMIT = 65536


@dataclass(frozen=True)
class Seen:
    """One request the proxy was asked to carry."""

    method: str
    target: str
    """The absolute URL, or `host:port` of a CONNECT."""
    host: str
    outcome: str
    """`forwarded`, `tunnelled`, `refused-loopback` or `unknown-host`."""


def is_loopback(host: str) -> bool:
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False
    owner: ForwardProxy


class _Handler(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        client: socket.socket = self.request
        head, rest = _read_head(client)
        if not head:
            return
        line, *header_lines = head.split("\r\n")
        method, target, _ = (line.split(" ", 2) + ["", ""])[:3]
        owner = self.server.owner
        if method == "CONNECT":
            self._carry(client, method, target, target.rpartition(":")[0], None)
            return
        url = urllib.parse.urlsplit(target)
        request = _origin_request(method, url, header_lines) + rest
        length = _content_length(header_lines) - len(rest)
        while length > 0:
            chunk = client.recv(min(length, 65536))
            if not chunk:
                break
            request += chunk
            length -= len(chunk)
        if not url.hostname:
            owner.note(Seen(method, target, "", "unknown-host"))
            client.sendall(_status(400, "not a proxy request"))
            return
        self._carry(client, method, target, url.hostname, request)

    def _carry(self, client: socket.socket, method: str, target: str, host: str,
               request: bytes | None) -> None:
        owner = self.server.owner
        if is_loopback(host):
            owner.note(Seen(method, target, host, "refused-loopback"))
            client.sendall(_status(403, "this proxy cannot reach the runner's loopback"))
            return
        address = owner.hosts.get(host.lower())
        if address is None:
            owner.note(Seen(method, target, host, "unknown-host"))
            client.sendall(_status(502, f"cannot resolve {host}"))
            return
        owner.note(Seen(method, target, host, "tunnelled" if request is None else "forwarded"))
        with socket.create_connection(address) as up:
            if request is None:
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                up.sendall(request)
            _pipe(client, up)


def _read_head(sock: socket.socket) -> tuple[str, bytes]:
    data = b""
    while b"\r\n\r\n" not in data and len(data) < HEAD_LIMIT:
        chunk = sock.recv(4096)
        if not chunk:
            return "", b""
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head.decode("latin-1"), rest


def _content_length(lines: list[str]) -> int:
    for line in lines:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length" and value.strip().isdigit():
            return int(value.strip())
    return 0


def _origin_request(method: str, url: urllib.parse.SplitResult, lines: list[str]) -> bytes:
    """The request as the origin server expects it: origin-form target, one connection."""
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    kept = [h for h in lines if h.partition(":")[0].strip().lower()
            not in ("proxy-authorization", "proxy-connection", "connection", "keep-alive")]
    return (f"{method} {path} HTTP/1.1\r\n" + "".join(f"{h}\r\n" for h in kept)
            + "Connection: close\r\n\r\n").encode("latin-1")


def _status(code: int, why: str) -> bytes:
    body = why.encode()
    return (f"HTTP/1.1 {code} {why}\r\ncontent-type: text/plain\r\ncontent-length: {len(body)}\r\n"
            "connection: close\r\n\r\n").encode() + body


def _pipe(a: socket.socket, b: socket.socket) -> None:
    """Copy both ways until either side closes."""
    def copy(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while chunk := src.recv(65536):
                dst.sendall(chunk)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    other = threading.Thread(target=copy, args=(b, a), daemon=True)
    other.start()
    copy(a, b)
    other.join()


class ForwardProxy:
    """The proxy, started on a free port of 127.0.0.1; `url` is what HTTP(S)_PROXY takes."""

    def __init__(self, hosts: dict[str, tuple[str, int]] | None = None) -> None:
        self.hosts = {k.lower(): v for k, v in (hosts or {}).items()}
        """Host names this proxy resolves, and the address each one reaches."""
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    def note(self, seen: Seen) -> None:
        with self._lock:
            self.seen.append(seen)

    def log(self) -> list[Seen]:
        with self._lock:
            return list(self.seen)

    def start(self) -> ForwardProxy:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> ForwardProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
