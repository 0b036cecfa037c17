"""A session's stand-ins: the case's mocked servers served by `mocks/server.py` processes, and their
call log."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aam_eval_action.mocks.model import (
    MockServer,
)
from aam_eval_action.mocks.reading import (
    load,
)
from aam_eval_action.mocks.shadowing import (
    resolve,
    spec,
)

# --- a session's stand-ins ---


def declared(layout: Any) -> dict[str, Any]:
    """The MCP servers the package under test declares: name → config."""
    return {k: v for k, v in layout.mcp.items() if isinstance(v, dict)}


def for_case(layout: Any, execution: Any, allow_real: bool,
             notes: list[str] | None = None) -> list[MockServer]:
    """A case's mocked servers against the package's own (none for a case without mocks); what
    was noticed on the way (a server not started, a folder with no answer) goes to `notes`."""
    if execution is None or not execution.mocks:
        return []
    read = load(layout.root, list(execution.mocks))
    servers = resolve(read, declared(layout), layout.name or "plugin", allow_real)
    if notes is not None:
        notes += read.notes
    return servers


@dataclass
class Served:
    """The stand-ins of one session: their configs, and the call log they append to."""

    servers: list[MockServer]
    configs: dict[str, dict[str, Any]]
    """Server name (as the engine's config names it) → the stand-in's launch config."""
    call_log: Path
    nonce: str
    relay: Path | None = None
    """Where agent-played calls are handed to this process (`pipeline/mock_agent.py`)."""

    @property
    def agents(self) -> bool:
        """Whether an active server has an agent-played tool."""
        return any(r.kind == "agent" for s in self.servers if s.kind != "withheld" for r in s.tools.values())

    @property
    def standalone(self) -> dict[str, dict[str, Any]]:
        return {s.server: self.configs[s.server] for s in self.servers if s.kind == "standalone"}

    def package_servers(self, original: dict[str, Any]) -> dict[str, Any]:
        """The package's servers as the session gets them: a shadowed one replaced by its
        stand-in, a withheld one left out, one allowed to run as declared."""
        out = {}
        for name, config in original.items():
            kinds = {s.kind for s in self.servers if s.server == name and s.kind != "standalone"}
            if "shadow" in kinds:
                out[name] = self.configs[name]
            elif "withheld" not in kinds:
                out[name] = config
        return out

    def granted(self, arm_has_plugin: bool) -> list[str]:
        """The mocked tools by their Claude Code names: granted to the run as that runner grants them."""
        return [s.tool_name(t) for s in self.servers
                if s.kind == "standalone" or (s.kind == "shadow" and arm_has_plugin) for t in s.tools]

    def calls(self) -> list[dict[str, Any]]:
        """The calls the stand-ins logged for this session, in order."""
        out: list[dict[str, Any]] = []
        if not self.call_log.is_file():
            return out
        for line in self.call_log.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict) and record.get("nonce") == self.nonce:
                keys = ("name", "server", "tool", "input", "output", "verdict")
                out.append({k: record.get(k) for k in keys})
        return out


def serve(servers: list[MockServer], root: Path, specs: Path, call_log: Path) -> Served:
    """Write each active server's spec under `specs`; the stand-ins log to `call_log` and relay
    agent-played calls through the folder beside it (`relay/`)."""
    relay = call_log.parent / "relay"
    import secrets
    import sys

    nonce = secrets.token_hex(6)
    specs.mkdir(parents=True, exist_ok=True)
    call_log.parent.mkdir(parents=True, exist_ok=True)
    stand_in = str(Path(__file__).with_name("server.py"))
    configs = {}
    for server in servers:
        if server.kind == "withheld":
            continue
        path = specs / f"{server.server}.json"
        path.write_text(json.dumps(spec(server, root, nonce, str(call_log), str(relay))), encoding="utf-8")
        configs[server.server] = {"command": sys.executable, "args": ["-I", stand_in, str(path)]}
    return Served(servers, configs, call_log, nonce, relay)
