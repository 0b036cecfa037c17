"""macOS: a generated `sandbox-exec` (Seatbelt) profile around the whole CLI process, the layer
macOS offers where Linux has Landlock. Everything is allowed but writes outside the session's
folders, a connection to a UNIX socket outside them, and, when the network is off, every
network operation but a TCP connection to the model proxy's port on localhost (Gemini CLI and
Anthropic's sandbox-runtime ship profiles of this kind). `sandbox-exec` is deprecated but
present on every macOS release to date.

Strings in a profile are quoted for its Scheme-like language: a path can hold no character
that would end the string or start another form."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

SANDBOX_EXEC = "/usr/bin/sandbox-exec"
DEVICES = ("/dev/null", "/dev/zero", "/dev/tty", "/dev/stdout", "/dev/stderr")
"""Devices every session may write (a terminal's `/dev/ttys*` too)."""


MDNS = "/private/var/run/mDNSResponder"


def available() -> bool:
    """Whether this machine is macOS with `sandbox-exec`."""
    return sys.platform == "darwin" and os.path.exists(SANDBOX_EXEC)


def quote(text: str) -> str:
    """`text` as a profile string literal (backslashes and quotes escaped)."""
    if any(ord(c) < 0x20 for c in text):
        raise ValueError(f"a control character in a sandbox path: {text!r}")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def profile(writable: Sequence[str], tcp_ports: Sequence[int] | None) -> str:
    """The profile: writes, and connections to UNIX sockets, only beneath `writable` (their real
    paths too: `/tmp` is `/private/tmp` on macOS) and the usual devices; with `tcp_ports`, no
    network but a TCP connection to those ports on localhost."""
    folders = sorted({p for path in writable if not path.startswith("/dev/")
                      for p in (path, os.path.realpath(path))})
    lines = ["(version 1)", "(allow default)", "(deny file-write*)", "(allow file-write*"]
    lines += [f"    (subpath {quote(p)})" for p in folders]
    lines += [f"    (literal {quote(d)})" for d in DEVICES]
    lines += ['    (regex #"^/dev/ttys[0-9]+$")', '    (regex #"^/dev/fd/[0-9]+$"))']
    if tcp_ports is not None:
        lines.append("(deny network*)")
        lines += [f'(allow network-outbound (remote tcp "localhost:{int(port)}"))' for port in tcp_ports]
    else:  # host names resolve through mDNSResponder's socket
        lines.append("(deny network-outbound (remote unix-socket))")
        lines.append(f"(allow network-outbound (literal {quote(MDNS)}))")
    lines += [f"(allow network-outbound (subpath {quote(p)}))" for p in folders]  # the session's own sockets
    return "\n".join(lines) + "\n"


def wrap(argv: Sequence[str], writable: Sequence[str], tcp_ports: Sequence[int] | None) -> list[str]:
    """`argv` run inside the profile."""
    return [SANDBOX_EXEC, "-p", profile(writable, tcp_ports), *argv]
