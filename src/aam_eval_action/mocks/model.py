"""A case's mocks as read: a server's responders, a mocked server, a case's layers of them."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SEGMENT = re.compile(r"^[A-Za-z0-9_-]+$")
SERVER_FILE, TOOLS_FILE = "_server.md", "_tools.json"
MAX_ENTRIES, MAX_GUARDS, MAX_BYTES = 256, 32, 1_048_576
PLACEHOLDER = "TODO: replace with the canned result this tool should return"
FRONT_KEYS = ("type", "expect", "error", "tools", "abort_when")


@dataclass(frozen=True)
class Responder:
    """How one tool is answered."""

    kind: str
    """`fixed` or `agent`."""
    body: str
    """The fixed answer (a template), or the agent's description of the server it plays."""
    is_error: bool
    expect: dict[str, Any] | None
    base_dir: str
    """The server folder the answer was read from (relative to the repository): `{{file:…}}`
    reads there."""
    source: str
    """The file (relative to the repository)."""
    digest: str
    abort_when: str | None = None
    """An agent's conditions for stopping the run (`abort_when:`)."""


@dataclass
class MockServer:
    """One mocked server, its layers merged."""

    name: str
    """The folder's name."""
    tools: dict[str, Responder] = field(default_factory=dict)
    listings: dict[str, dict[str, Any]] = field(default_factory=dict)
    kind: str = "standalone"
    """`shadow` (a server of the plugin under test), `standalone`, or `withheld` (a plugin
    server no folder mocks: not started, no tools)."""
    registered: str = ""
    """The name the CLI knows the server by on Claude Code: `plugin:<plugin>:<server>` for a
    shadow, the folder's name for a standalone server."""
    server: str = ""
    """The server's own name as the engine's config names it (the plugin's key, or the folder)."""

    def tool_name(self, tool: str) -> str:
        """The tool as Claude Code names it (`mcp__<server>__<tool>`): the name the graders use."""
        return f"mcp__{segment(self.registered or self.name)}__{tool}"

    def listed(self) -> list[dict[str, Any]]:
        return [self.listings.get(t) or {"name": t, "description": "",
                                         "inputSchema": {"type": "object", "additionalProperties": True}}
                for t in self.tools]


@dataclass
class Mocks:
    """A case's mocks, layered, and what was noticed while reading them."""

    servers: dict[str, MockServer] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    layers: tuple[str, ...] = ()
    """The `mocks/` folders read, shallowest first (relative to the repository)."""

    def digest(self, root: Path) -> str:
        """Every mock file's content, for the case's fingerprint."""
        h = hashlib.sha256()
        for layer in self.layers:
            files = (p for p in (root / layer).rglob("*") if p.is_file() and ".replay" not in p.parts)
            for path in sorted(files):
                h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
        return h.hexdigest()[:16]

def segment(name: str) -> str:
    """A server name as a segment of a tool name: what is not a letter, digit, `_` or `-` is `_`."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)
