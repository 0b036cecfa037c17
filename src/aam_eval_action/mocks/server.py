"""The stand-in MCP server a mocked server is replaced by: stdio JSON-RPC, one message a line.

Run as `python -I server.py SPEC` (the standard library only: it starts inside the session's
sandbox, as the CLI's child). SPEC (`mocks.spec`) lists the tools it offers and how each is
answered; every call is appended to the spec's call log as one JSON line
`{nonce, seq, server, tool, name, responder, input, verdict, output}`, verdict `ok`,
`tool_error` or `abort` (an `expect:` guard broken: the run is aborted and scores 0).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

ABORTED = "eval aborted by mock"
TEMPLATE = re.compile(r"\{\{\s*(input\.[A-Za-z0-9_.-]+|file:(?:[^{}]|\{input\.[A-Za-z0-9_.-]+\})+?)\s*\}\}")
FILE_SEGMENT = re.compile(r"^(?!\.{1,2}$)[A-Za-z0-9._-]+$")
TYPES = {"string", "number", "bool", "boolean", "object", "array"}
OUTPUT_LIMIT, FIXTURE_LIMIT = 16384, 1_048_576
_MISSING = object()


def js(value: Any) -> str:
    """A value as JavaScript's JSON.stringify writes it (compact)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def js_str(value: Any) -> str:
    """`String(value)` for a scalar."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def lookup(value: Any, path: str) -> Any:
    """A dotted path into the input (`a.b.0`); _MISSING when it is not there."""
    for part in path.split("."):
        if isinstance(value, list):
            if not part.isdigit() or int(part) >= len(value):
                return _MISSING
            value = value[int(part)]
        elif isinstance(value, dict):
            if part not in value:
                return _MISSING
            value = value[part]
        else:
            return _MISSING
    return value


def _shown(value: Any) -> str:
    if value is _MISSING:
        return "(missing)"
    text = js(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _equal(value: Any, literal: str) -> bool:
    if isinstance(value, str):
        return value == literal
    if isinstance(value, (int, float, bool)):
        return js_str(value) == literal
    return False


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if value is None or value is _MISSING:
        return "missing"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return "string" if isinstance(value, str) else "object"


def broken_guard(given: Any, expect: dict[str, Any], prefix: str = "") -> str | None:
    """The first `expect:` guard the input breaks, said as that runner says it; None: none."""
    for key, guard in expect.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        value = lookup(given, path)
        if isinstance(guard, list):
            allowed = [js_str(g) for g in guard]
            if not any(_equal(value, a) for a in allowed):
                return f"{path} = {_shown(value)} is not one of [{', '.join(allowed)}]"
            continue
        if isinstance(guard, dict):
            found = broken_guard(given, guard, path)
            if found is not None:
                return found
            continue
        literal = js_str(guard)
        regex = re.fullmatch(r"/(.+)/([a-z]*)", literal, re.S)
        if regex:
            flags = (re.I if "i" in regex.group(2) else 0) | (re.S if "s" in regex.group(2) else 0)
            scalar = isinstance(value, (int, float))
            text = value if isinstance(value, str) else js_str(value) if scalar else None
            if text is None or not re.search(regex.group(1), text, flags):
                return f"{path} = {_shown(value)} does not match {literal}"
            continue
        if literal in TYPES:
            wanted = "bool" if literal == "boolean" else literal
            if _kind(value) != wanted:
                return f"{path} = {_shown(value)} is not a {literal}"
            continue
        if not _equal(value, literal):
            return f'{path} = {_shown(value)} is not "{literal}"'
    return None


def render(body: str, given: Any, base: Path) -> tuple[bool, str]:
    """A fixed answer with its templates filled in: (ok, text or why not)."""
    out, problem, last = [], None, 0
    for found in TEMPLATE.finditer(body):
        out.append(body[last:found.start()])
        last = found.end()
        ref = found.group(1)
        if ref.startswith("input."):
            value = lookup(given, ref[6:])
            out.append("" if value is _MISSING else value if isinstance(value, str) else js(value))
            continue
        rel = ref[5:].strip()

        def fill(m: re.Match[str]) -> str:
            nonlocal problem
            value = lookup(given, m.group(1))
            text = "" if value is _MISSING or value is None else js_str(value)
            if not FILE_SEGMENT.match(text):
                why = f"{{input.{m.group(1)}}} = {_shown(value)} is not a plain file-name segment"
                problem = problem or why
            return text

        rel = re.sub(r"\{input\.([A-Za-z0-9_.-]+)\}", fill, rel)
        if problem:
            continue
        path = (base / rel).resolve()
        if not path.is_relative_to(base.resolve()) or path == base.resolve():
            problem = problem or f"{{{{file:{rel}}}}} names a path outside the mock's directory"
            continue
        try:
            if path.stat().st_size > FIXTURE_LIMIT:
                problem = problem or f"{{{{file:{rel}}}}}: is over the {FIXTURE_LIMIT}-byte fixture limit"
                continue
            out.append(path.read_text(encoding="utf-8", errors="replace"))
        except FileNotFoundError:
            problem = problem or f"{{{{file:{rel}}}}}: no such fixture"
        except OSError as exc:
            problem = problem or f"{{{{file:{rel}}}}}: could not be read ({exc.strerror})"
    out.append(body[last:])
    return (False, problem) if problem else (True, "".join(out))


def answer(spec: dict[str, Any], tool: str, given: Any) -> tuple[str, str]:
    """(verdict, text) for one call."""
    responder = spec["responders"].get(tool)
    if responder is None:
        return "tool_error", f"no mock for {spec['server']}/{tool}"
    if responder.get("expect"):
        broken = broken_guard(given, responder["expect"])
        if broken is not None:
            return "abort", f"the model's call violates expect: {broken}"
    if responder["kind"] == "agent":
        return relayed(spec, tool, given)
    ok, text = render(responder["body"], given, Path(responder["base_dir"]))
    if not ok:
        return "tool_error", text
    return ("tool_error" if responder["is_error"] else "ok"), text


HISTORY: list[dict[str, Any]] = []
"""This run's earlier calls of the server (an agent-played one sees them)."""
RELAY_WAIT = 300.0
RELAY_FAILED = "mock agent responder failed"


def relayed(spec: dict[str, Any], tool: str, given: Any) -> tuple[str, str]:
    """An agent-played tool's answer: the call handed to the harness through the relay folder
    (`<n>.req.json` written, `<n>.ans.json` awaited); it asks the model, or plays the recording."""
    folder = Path(spec.get("relay") or "")
    if not spec.get("relay") or not folder.is_dir():
        return "tool_error", f"{RELAY_FAILED} (no relay)"
    name = f"{os.getpid()}-{len(HISTORY):04d}-{time.monotonic_ns()}"
    partial = folder / f"{name}.part"
    partial.write_text(js({"server": spec["server"], "tool": tool, "input": given,
                           "history": HISTORY[-40:]}), encoding="utf-8")
    partial.replace(folder / f"{name}.req.json")
    answer = folder / f"{name}.ans.json"
    deadline = time.monotonic() + RELAY_WAIT
    while time.monotonic() < deadline:
        try:
            found = json.loads(answer.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            time.sleep(0.005)
            continue
        verdict, text = str(found.get("verdict")), str(found.get("text"))
        return (verdict if verdict in ("ok", "tool_error", "abort") else "tool_error"), text
    return "tool_error", f"{RELAY_FAILED} (no answer in {RELAY_WAIT:.0f} s)"


def _log(spec: dict[str, Any], record: dict[str, Any]) -> None:
    fd = os.open(spec["call_log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (js(record) + "\n").encode())
    finally:
        os.close(fd)


def handle(spec: dict[str, Any], message: dict[str, Any], seq: list[int]) -> dict[str, Any] | None:
    method, params = message.get("method", ""), message.get("params") or {}
    if method == "initialize":
        result: dict[str, Any] = {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                                  "capabilities": {"tools": {}},
                                  "serverInfo": {"name": f"eval-mock/{spec['server']}", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": t["name"], "description": t.get("description", ""),
                             "inputSchema": {"type": "object", **(t.get("inputSchema") or {})}}
                            for t in spec["tools"]]}
    elif method == "tools/call":
        tool, given = str(params.get("name", "")), params.get("arguments") or {}
        verdict, text = answer(spec, tool, given)
        if verdict == "abort":
            text = f"{ABORTED}: {spec['server']}/{tool} — {text}"  # no nonce: the same text each run
        responder = spec["responders"].get(tool) or {}
        _log(spec, {"nonce": spec["nonce"], "seq": seq[0], "server": spec["server"], "tool": tool,
                    "name": responder.get("names") or f"mcp__{spec['registered']}__{tool}",
                    "responder": responder.get("kind", "fixed"), "input": given, "verdict": verdict,
                    "output": text if len(text) <= OUTPUT_LIMIT else text[:OUTPUT_LIMIT] + "…[truncated]"})
        seq[0] += 1
        HISTORY.append({"tool": tool, "input": given, "verdict": verdict, "output": text})
        result = {"content": [{"type": "text", "text": text}]}
        if verdict != "ok":
            result["isError"] = True
    elif method == "ping":
        result = {}
    elif "id" in message:
        error = {"code": -32601, "message": f"{method}: not served"}
        return {"jsonrpc": "2.0", "id": message["id"], "error": error}
    else:
        return None
    return {"jsonrpc": "2.0", "id": message["id"], "result": result} if "id" in message else None


def main(argv: list[str]) -> int:
    spec = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    seq = [0]
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(message, dict):
            continue
        reply = handle(spec, message, seq)
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
