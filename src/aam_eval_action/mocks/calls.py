"""The calls a session's stand-ins answered: parsed from their log, as a grader's text, and the call
that aborted the run."""

from __future__ import annotations

import json
from typing import Any


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
