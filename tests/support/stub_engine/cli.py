"""The stub engine's CLI: `python cli.py PROMPT MODEL` in a workspace; it asks the Anthropic
Messages API at $ANTHROPIC_BASE_URL (no SDK), lists `.stub/skills/*/SKILL.md` in its first
message as Claude Code does (`- name: description`), offers a `Skill` tool, and prints one JSON
line per event: `{"type": "tool", "name", "input"}` and `{"type": "result", "text"}`."""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from pathlib import Path


def skills(root: Path) -> dict[str, tuple[str, str]]:
    found = {}
    for md in sorted(root.glob(".stub/skills/*/SKILL.md")):
        text = md.read_text(encoding="utf-8")
        head, _, body = text.removeprefix("---\n").partition("\n---\n")
        meta = dict(line.split(": ", 1) for line in head.splitlines() if ": " in line)
        found[meta.get("name", md.parent.name)] = (meta.get("description", "").strip('"'), body)
    return found


def ask(messages: list[dict], model: str, listed: dict[str, tuple[str, str]]) -> dict:
    body = {"model": model, "max_tokens": 1024, "system": "You are a stub agent.", "messages": messages,
            "tools": [{"name": "Skill", "description": "Load a skill by name.",
                       "input_schema": {"type": "object", "properties": {"skill": {"type": "string"}},
                                        "required": ["skill"]}}]}
    request = urllib.request.Request(
        os.environ["ANTHROPIC_BASE_URL"].rstrip("/") + "/v1/messages", data=json.dumps(body).encode(),
        headers={"content-type": "application/json", "x-api-key": os.environ.get("ANTHROPIC_API_KEY", ""),
                 "anthropic-version": "2023-06-01", "user-agent": "stub-cli/1.0.0"})
    with urllib.request.urlopen(request, timeout=60) as response:
        answer: dict = json.loads(response.read())
    return answer


def main() -> int:
    prompt, model = sys.argv[1], sys.argv[2]
    listed = skills(Path.cwd())
    listing = "\n".join(f"- {name}: {about}" for name, (about, _) in listed.items())
    reminder = (f"<system-reminder>\nThe following skills are available for use with the Skill tool:\n\n{listing}\n"
                "</system-reminder>")
    messages: list[dict] = [{"role": "user", "content": [{"type": "text", "text": reminder},
                                                         {"type": "text", "text": prompt}]}]
    for _ in range(4):
        answer = ask(messages, model, listed)
        messages.append({"role": "assistant", "content": answer["content"]})
        calls = [b for b in answer["content"] if b.get("type") == "tool_use"]
        if not calls:
            text = "".join(b.get("text", "") for b in answer["content"] if b.get("type") == "text")
            print(json.dumps({"type": "result", "text": text}), flush=True)
            return 0
        results = []
        for call in calls:
            print(json.dumps({"type": "tool", "name": call["name"], "input": call["input"]}), flush=True)
            _, body = listed.get(str(call["input"].get("skill")), ("", "no such skill"))
            results.append({"type": "tool_result", "tool_use_id": call["id"], "content": body})
        messages.append({"role": "user", "content": results})
    print(json.dumps({"type": "result", "text": "turn limit"}), flush=True)
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
