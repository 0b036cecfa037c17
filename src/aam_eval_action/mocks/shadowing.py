"""The mocks against the plugin's own servers: which shadow one, which stand alone, which plugin
servers are withheld; a stand-in's spec."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aam_eval_action.errors import ConfigError
from aam_eval_action.mocks.model import (
    Mocks,
    MockServer,
    segment,
)

# --- against the plugin's servers ---


def resolve(mocks: Mocks, declared: dict[str, Any], plugin: str, allow_real: bool) -> list[MockServer]:
    """The case's servers against the plugin's declared ones (`declared`: name → config): a folder
    named after one (or after its `plugin_<plugin>_<server>` segment) shadows it; any other is
    standalone; a declared server no folder mocks is withheld unless `allow_real`. Raises
    ConfigError when two folders mock one server."""
    by_segment = {segment(f"plugin:{plugin}:{name}"): name for name in declared}
    by_name = {segment(name): name for name in declared}
    out: list[MockServer] = []
    shadowed: dict[str, str] = {}
    for folder, server in mocks.servers.items():
        name = by_segment.get(folder) or by_name.get(folder)
        if name is not None:
            if name in shadowed:
                raise ConfigError(f"mocks/{shadowed[name]}/ and mocks/{folder}/ both mock the server "
                                  f'"plugin:{plugin}:{name}": keep one')
            shadowed[name] = folder
            server.kind, server.registered, server.server = "shadow", f"plugin:{plugin}:{name}", name
        else:
            server.kind, server.registered, server.server = "standalone", folder, folder
        out.append(server)
    for name in declared:
        if name not in shadowed:
            if allow_real:
                mocks.notes.append(f'mocks: "plugin:{plugin}:{name}" has no mock: the plugin\'s REAL server '
                                   "starts (--allow-real-servers), inside the session's sandbox")
            else:
                mocks.notes.append(f'mocks: "plugin:{plugin}:{name}" has no mock and is NOT started: its '
                                   "tools are unavailable this run; add mocks/<server>/ to mock it, or pass "
                                   "--allow-real-servers to run the plugin's real server")
                registered = f"plugin:{plugin}:{name}"
                out.append(MockServer(name, kind="withheld", registered=registered, server=name))
    return out


def with_only_calls(servers: list[MockServer]) -> bool:
    """Whether a `mock_calls` grader with no `arm` is with-only: every active mock shadows a
    plugin server (so none is left without the plugin)."""
    active = [s for s in servers if s.kind != "withheld"]
    return bool(active) and all(s.kind == "shadow" for s in active)


def spec(server: MockServer, root: Path, nonce: str, call_log: str, relay: str = "") -> dict[str, Any]:
    """What the stand-in serves: its tools, their answers, where it logs each call (and where it
    hands an agent-played tool's calls to this process)."""
    return {
        "server": server.name, "registered": server.registered, "nonce": nonce,
        "call_log": call_log, "relay": relay,
        "tools": server.listed(),
        "responders": {tool: {"kind": r.kind, "body": r.body if r.kind == "fixed" else "",
                              "is_error": r.is_error, "expect": r.expect, "base_dir": str(root / r.base_dir),
                              "names": server.tool_name(tool)}
                       for tool, r in server.tools.items()},
    }
