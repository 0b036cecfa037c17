"""MCP mocks of `claude plugin eval` suites: `mocks/<server>/` folders, read as that runner reads
them, and served to any engine's CLI by a stand-in MCP server of ours (`mocks/server.py`).

A case's mocks are layered from its eval dir down to its own folder: every folder on that path
may hold a `mocks/`, and a deeper layer's `<tool>.md` answers over a shallower one's. In a
server folder:

* `<tool>.md` answers the tool `<tool>`: its body (leading blank lines and trailing space cut) is
  the text returned, with `{{input.a.b}}` and `{{file:rel/{input.id}.json}}` (a file of that
  folder) filled in; `error: true` returns it as a tool error; `expect:` guards the input (a
  dotted path → a list of allowed literals, a type name, a literal, or a `/regex/`), and a call
  that breaks a guard aborts the run (it scores 0, ungraded).
* `_tools.json` is a saved `tools/list` (the tools' descriptions and input schemas); a tool it
  does not list is offered with an empty description and any input.
* `_server.md` (`type: agent`, `tools: [...]`, `abort_when:`) is a model playing the server: the
  stand-in hands its calls to the harness (`pipeline/mock_agent.py`), which asks the model and
  records the answers in the case's own cassette.

A folder named after a server of the plugin under test shadows it (its tools keep their names,
`mcp__plugin_<plugin>_<server>__<tool>` on Claude Code); any other folder is a standalone server
of that name, present in both arms. A plugin server no folder mocks is not started, unless the
run allows real servers (`--allow-real-servers`).

What that runner refuses is refused here, naming the file and what to write instead.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aam_eval_action.errors import ConfigError

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


def layers(root: Path, evals: str | None, case_folder: str) -> list[str]:
    """The `mocks/` folders that apply to a case, from its eval dir down to its own folder."""
    parts = case_folder.split("/")
    top = len(evals.split("/")) if evals and case_folder.startswith(evals + "/") else len(parts)
    out = []
    for n in range(top, len(parts) + 1):
        folder = "/".join(parts[:n] + ["mocks"])
        if (root / folder).is_dir():
            out.append(folder)
    return out


def load(root: Path, folders: list[str]) -> Mocks:
    """A case's mocks from its `mocks/` folders (`layers`). Raises ConfigError naming the file
    and what to write instead."""
    found = Mocks(layers=tuple(folders))
    read = [_layer(root, layer, found.notes) for layer in found.layers]
    for name in sorted({n for layer in read for n in layer}):
        server = MockServer(name)
        agent: tuple[Responder, list[str]] | None = None
        for layer in read:
            one = layer.get(name)
            if one is not None and one["agent"] is not None:
                agent = one["agent"]
        if agent is not None:
            for tool in agent[1]:
                server.tools[tool] = agent[0]
        for layer in read:
            one = layer.get(name)
            if one is not None:
                server.tools.update(one["tools"])
                server.listings.update(one["listings"])
        if not server.tools:
            found.notes.append(f"mocks: mocks/{name}/ has no <tool>.md responders in any layer: nothing is "
                               f"mocked for {name}")
            continue
        found.servers[name] = server
    return found


def _layer(root: Path, rel: str, notes: list[str]) -> dict[str, dict[str, Any]]:
    folder = root / rel
    if folder.is_symlink():
        raise ConfigError(f"{rel}: mocks/ is a symbolic link: use a folder of the repository")
    entries = sorted(folder.iterdir(), key=lambda p: p.name)
    if len(entries) > MAX_ENTRIES:
        raise ConfigError(f"{rel}: mocks/ has {len(entries)} entries (cap: {MAX_ENTRIES})")
    out = {}
    for entry in entries:
        if entry.name.startswith(".") or not entry.is_dir():
            continue
        if entry.is_symlink():
            raise ConfigError(f"{rel}/{entry.name}: a symbolic link: use a folder of the repository")
        if not SEGMENT.match(entry.name):
            raise ConfigError(f"{rel}/{entry.name}/: name the directory after the server segment of the tool "
                              'name (letters, digits, "_" and "-" only)')
        server = _server(root, f"{rel}/{entry.name}")
        if server is None:
            notes.append(f"mocks: mocks/{entry.name}/ has no <tool>.md responders: nothing is mocked for "
                         f"{entry.name}")
            continue
        out[entry.name] = server
    return out


def _server(root: Path, rel: str) -> dict[str, Any] | None:
    entries = sorted((root / rel).iterdir(), key=lambda p: p.name)
    if len(entries) > MAX_ENTRIES:
        raise ConfigError(f"{rel}/ has {len(entries)} entries (cap: {MAX_ENTRIES})")
    tools: dict[str, Responder] = {}
    listings: dict[str, dict[str, Any]] = {}
    agent = None
    for entry in entries:
        file = f"{rel}/{entry.name}"
        if entry.name == TOOLS_FILE:
            listings = _listings(root, file)
            continue
        if entry.name.startswith(".") or not entry.name.endswith(".md") or entry.is_dir():
            continue
        tool = entry.name[:-3]
        if entry.name != SERVER_FILE and not SEGMENT.match(tool):
            raise ConfigError(f"{file}: name responder files after the tool (letters, digits, "
                              '"_" and "-" only), e.g. list_issues.md')
        responder, listed = _responder(root, file, rel)
        if entry.name == SERVER_FILE:
            if responder.kind != "agent":
                raise ConfigError(f"{file}: only `type: agent` is meaningful here (one agent answering "
                                  "several tools); put a fixed answer in <tool>.md")
            if not listed:
                raise ConfigError(f"{file}: an agent answering several tools needs `tools: [...]`")
            if responder.expect is not None and len(listed) > 1:
                raise ConfigError(f"{file}: `expect:` here would guard all {len(listed)} tools it answers; "
                                  f"put the guard on the one tool it is meant for as {rel}/<tool>.md")
            agent = (responder, listed)
            continue
        tools[tool] = responder
    if not tools and agent is None and not listings:
        return None
    for tool in [*tools, *(agent[1] if agent else [])]:
        if "__" in tool:
            raise ConfigError(f'{rel}/{tool}.md: "__" is the tool-name separator and cannot appear in a '
                              "mocked tool name")
    return {"tools": tools, "listings": listings, "agent": agent}


def _read(root: Path, file: str) -> str:
    path = root / file
    if path.is_symlink():
        raise ConfigError(f"{file}: a symbolic link: use a regular file")
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise ConfigError(f"{file}: {size} bytes (cap: {MAX_BYTES})")
    return path.read_text(encoding="utf-8", errors="replace")


def _listings(root: Path, file: str) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(_read(root, file))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{file}:{exc.lineno}: not valid JSON ({exc.msg})") from exc
    if isinstance(data, dict) and "result" in data:
        data = data["result"]
    tools = data.get("tools") if isinstance(data, dict) else None
    shape = (f'{file}: expected a saved tools/list response '
             '({"tools": [{"name", "description", "inputSchema"}]})')
    if not isinstance(tools, list):
        raise ConfigError(shape)
    out = {}
    for tool in tools:
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str) or not tool["name"] \
                or not isinstance(tool.get("description", ""), str) \
                or not isinstance(tool.get("inputSchema", {}), dict):
            raise ConfigError(shape)
        out[tool["name"]] = {"name": tool["name"], "description": tool.get("description", ""),
                             "inputSchema": tool.get("inputSchema") or {"type": "object"}}
    return out


def _responder(root: Path, file: str, base: str) -> tuple[Responder, list[str]]:
    from aam_eval_action.layouts.common import frontmatter

    text = _read(root, file)
    try:
        front, start = frontmatter(root, file)
    except ConfigError as exc:
        raise ConfigError(f"{file}: {exc}") from exc
    body_lines = text.splitlines()[start - 1:] if front or start > 1 else text.splitlines()
    body = re.sub(r"^\n+", "", "\n".join(body_lines)).rstrip()
    for key in front:
        if key not in FRONT_KEYS:
            raise ConfigError(f"{file}: frontmatter: Unrecognized key(s) in object: '{key}' "
                              f"(keys: {', '.join(FRONT_KEYS)})")
    kind = front.get("type", "fixed")
    if kind not in ("fixed", "agent"):
        raise ConfigError(f"{file}: type: Invalid enum value. Expected 'fixed' | 'agent', received '{kind}' "
                          f"(keys: {', '.join(FRONT_KEYS)})")
    error = front.get("error")
    if error is not None and not isinstance(error, bool):
        raise ConfigError(f"{file}: error: Expected boolean (keys: {', '.join(FRONT_KEYS)})")
    tools = front.get("tools")
    if tools is not None and (not isinstance(tools, list)
                              or not all(isinstance(t, str) and SEGMENT.match(t) for t in tools)):
        raise ConfigError(f'{file}: tools: tool names may contain only letters, digits, "_" and "-"')
    if tools is not None and not file.endswith("/" + SERVER_FILE):
        raise ConfigError(f"{file}: `tools:` belongs in {SERVER_FILE} (a <tool>.md answers the tool it is "
                          "named after)")
    expect = front.get("expect")
    if expect is not None:
        if not isinstance(expect, dict):
            raise ConfigError(f"{file}: expect: Expected object (keys: {', '.join(FRONT_KEYS)})")
        problems = guard_problems(expect)
        if problems:
            raise ConfigError(f"{file}: {problems[0]}")
    abort_when = front.get("abort_when")
    digest = hashlib.sha256(text.replace("\r\n", "\n").encode()).hexdigest()[:16]
    if kind == "agent":
        if error is not None:
            raise ConfigError(f"{file}: `error:` applies to fixed responders only")
        if not body or PLACEHOLDER in body:
            raise ConfigError(f"{file}: an agent responder needs a description of the server it plays as its "
                              "body" + (" (it still holds the scaffolded placeholder)" if body else ""))
        stop = abort_when if isinstance(abort_when, str) and abort_when.strip() else None
        return Responder("agent", body, False, expect, base, file, digest, stop), list(tools or [])
    if abort_when is not None:
        raise ConfigError(f"{file}: `abort_when:` needs `type: agent`; a fixed responder guards its "
                          "with `expect:`")
    if PLACEHOLDER in body:
        raise ConfigError(f"{file}: still holds the scaffolded placeholder: write the tool's canned answer "
                          "as the body")
    return Responder("fixed", body, bool(error), expect, base, file, digest), list(tools or [])


def guard_problems(expect: dict[str, Any], at: str = "") -> list[str]:
    """Why an `expect:` mapping cannot be used, as that runner says it (empty: usable)."""
    out: list[str] = []
    if not at and _count(expect) > MAX_GUARDS:
        return [f"expect: {_count(expect)} guards is more than the {MAX_GUARDS} one responder may carry: "
                "every call checks each of them; keep the ones that catch a wrong call"]
    for key, value in expect.items():
        where = f"{at}.{key}" if at else str(key)
        if isinstance(value, list):
            if not value:
                out.append(f"expect.{where}: an empty list of allowed values can never be satisfied: list at "
                           "least one")
            continue
        if isinstance(value, dict):
            out += guard_problems(value, where)
            continue
        text = str(value)
        found = re.fullmatch(r"/(.*)/([a-z]*)", text, re.S)
        if not found:
            continue
        if set(found.group(2)) - {"i", "s"}:
            out.append(f"expect.{where}: {text}: only the i and s flags are supported in expect: guards")
        elif re.search(r"(?<!\\)[()|]|\\[1-9k]", found.group(1)):
            out.append(f"expect.{where}: {text}: expect: /regex/ guards use a small dialect: literals, "
                       '".", escapes, character classes, and quantifiers on single atoms, with optional ^ '
                       'and $; no groups "(…)", alternation "|", backreferences, or lookaround')
        else:
            try:
                re.compile(found.group(1))
            except re.error as exc:
                out.append(f"expect.{where}: invalid regular expression {text} ({exc}): for a literal that "
                           f'starts and ends with a slash, write a one-element list: ["{text}"]')
    return out


def _count(expect: dict[str, Any]) -> int:
    return sum(_count(v) if isinstance(v, dict) else 1 for v in expect.values())


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


def parsed(lines: list[str] | None) -> list[dict[str, Any]]:
    """A session's recorded mock calls, as objects."""
    out = []
    for line in lines or []:
        try:
            call = json.loads(line)
        except ValueError:
            continue
        if isinstance(call, dict):
            out.append(call)
    return out


def calls_text(lines: list[str]) -> str:
    """The `mock_calls` target: one compact JSON line per call, `{tool, input, output, isError?,
    verdict}`, as that runner writes it."""
    lines_out = []
    for call in parsed(lines):
        line: dict[str, Any] = {"tool": call.get("name"), "input": call.get("input")}
        if call.get("output") is not None:
            line["output"] = call["output"]
        if call.get("verdict") != "ok":
            line["isError"] = True
        line["verdict"] = call.get("verdict")
        lines_out.append(json.dumps(line, separators=(",", ":"), ensure_ascii=False))
    return "\n".join(lines_out)


def aborted(lines: list[str] | None) -> dict[str, Any] | None:
    """The call that aborted the run (an `expect:` guard broken), if one did."""
    return next((c for c in parsed(lines) if c.get("verdict") == "abort"), None)
