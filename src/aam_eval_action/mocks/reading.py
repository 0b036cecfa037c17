"""Reading `mocks/<server>/` folders as that runner reads them, layered from the eval dir down to
the case's folder, refusing what it refuses."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from aam_eval_action.errors import ConfigError
from aam_eval_action.mocks.model import (
    FRONT_KEYS,
    MAX_BYTES,
    MAX_ENTRIES,
    MAX_GUARDS,
    PLACEHOLDER,
    SEGMENT,
    SERVER_FILE,
    TOOLS_FILE,
    Mocks,
    MockServer,
    Responder,
)


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
