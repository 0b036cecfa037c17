"""skill-creator's `<skill>/evals/evals.json`, and evolve's superset of it.

skill-creator: `{skill_name, evals: [{id, prompt, expected_output, files, expectations}]}` (some
repos name the list `assertions`). evolve (`evals/<skill>/evals.{json,yaml}`) adds `name`,
`max_turns`, `timeout_seconds`, `allowed_tools`, `skip_providers`, and assertions that are
strings (judged) or typed: `file_exists`, `file_absent`, `regex`, `not_regex`, `command`
(`run`, `expect_exit`, `requires`), `tool_call`, `llm`.

Strings, `expected_output` and `llm` assertions become the judge's criteria; typed assertions
that map exactly become our checks; the rest is listed as skipped with its reason.
"""

from __future__ import annotations

import shlex
import shutil
from typing import Any

from aam_eval_action.errors import ConfigError
from aam_eval_action.importers.common import Imported, Place, build, case_name, criteria, files_root, skill_of
from aam_eval_action.layouts.common import Json
from aam_eval_action.tools import NEUTRAL_TOOLS

EVOLVE_KEYS = ("name", "max_turns", "timeout_seconds", "allowed_tools", "skip_providers")
DEFAULT_CRITERIA = "The agent did what the prompt asks, correctly and completely."


def detect(data: Any) -> str | None:
    """`skill-creator` or `evolve` for a file of this shape, else None."""
    evals = data.get("evals") if isinstance(data, dict) else None
    if not isinstance(evals, list) or not evals:
        return None
    if not all(isinstance(e, dict) and "prompt" in e for e in evals):
        return None
    typed = any(isinstance(a, dict) for e in evals for a in _assertions(e) or [])
    return "evolve" if typed or any(k in e for e in evals for k in EVOLVE_KEYS) else "skill-creator"


def _assertions(entry: dict[str, Any]) -> Any:
    return entry.get("expectations", entry.get("assertions"))


def read(place: Place, doc: Json) -> list[Imported]:
    data = doc.data
    named = data.get("skill_name", data.get("skill"))
    skill = skill_of(place, doc, named, "skill_name" if "skill_name" in data else "skill")
    return [_case(place, doc, skill, i, entry) for i, entry in enumerate(data["evals"])]


def _case(place: Place, doc: Json, skill: str, i: int, entry: dict[str, Any]) -> Imported:
    loc: tuple[str | int, ...] = ("evals", i)
    prompt = entry.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise ConfigError(f"{doc.at(*loc, 'prompt')}: prompt: a non-empty text is required")
    key = "expectations" if "expectations" in entry else "assertions"
    listed = _assertions(entry)
    if listed is not None and not isinstance(listed, list):
        raise ConfigError(f"{doc.at(*loc, key)}: {key}: a list of statements (or typed assertions)")
    expected, judged, skipped = _typed(listed or [], doc, (*loc, key))
    files, root = files_root(place, doc, entry.get("files"), (*loc, "files"))
    text = criteria(("Each of these must hold:", [a for a in listed or [] if isinstance(a, str)] + judged),
                    ("The expected output:", entry.get("expected_output")))
    if text is None and not expected:
        text = DEFAULT_CRITERIA
    for key_ in ("max_turns", "allowed_tools", "skip_providers"):
        if entry.get(key_) is not None:
            skipped[key_] = _UNSUPPORTED[key_]
    ident = entry.get("id", entry.get("name"))
    fields: dict[str, Any] = {
        "name": case_name(skill, ident if ident is not None else f"p{_digest(prompt)}"),
        "target": f"skill:{skill}",
        "input": {"prompt": prompt, "files": files},
        "expected": expected,
        "judge": {"criteria": text} if text else None,
        "timeout": entry.get("timeout_seconds"),
    }
    if isinstance(entry.get("name"), str):
        fields["description"] = entry["name"]
    case = build(doc, loc, fields).imported_from(place.root / root)
    return Imported(case, doc.line(*loc), skipped)


def _digest(text: str) -> str:
    from aam_eval_action.importers.common import digest

    return digest(text)


_UNSUPPORTED = {
    "max_turns": "a per-case turn limit is not enforced (the engines take none from a case)",
    "allowed_tools": "a per-case tool allow-list is not applied",
    "skip_providers": "per-provider skips are not applied: the run's engines and models are",
}


def _typed(assertions: list[Any], doc: Json, loc: tuple[str | int, ...]
           ) -> tuple[dict[str, Any], list[str], dict[str, str]]:
    """evolve's typed assertions (the statements among them are left to the caller): (our
    checks, statements for the judge, skipped with why), each skipped one named by its index."""
    expected: dict[str, Any] = {}
    judged: list[str] = []
    skipped: dict[str, str] = {}
    commands: list[str] = []
    for n, a in enumerate(assertions):
        if not isinstance(a, dict):
            continue
        kind = a.get("type")
        label = f"{kind or 'assertion'}[{n}]"
        if kind in ("file_exists", "file_absent") and isinstance(a.get("path"), str):
            if kind == "file_exists":
                commands.append(f"test -e {shlex.quote(a['path'])}")
            else:
                expected.setdefault("files-absent", []).append(a["path"])
        elif kind in ("regex", "not_regex") and isinstance(a.get("pattern"), str):
            expected.setdefault("regex" if kind == "regex" else "not-regex", []).append(a["pattern"])
        elif kind == "command" and isinstance(a.get("run"), str):
            missing = [r for r in _list(a.get("requires")) if shutil.which(r) is None]
            if missing:
                skipped[label] = f"needs {', '.join(missing)}, not on PATH here"
                continue
            code = a.get("expect_exit", 0)
            commands.append(a["run"] if code == 0 else f"({a['run']}); test $? -eq {int(code)}")
        elif kind == "tool_call" and a.get("tool") in NEUTRAL_TOOLS:
            count = {"tool": a["tool"], "min": int(a.get("min", 1))}
            if a.get("max") is not None:
                count["max"] = int(a["max"])
            expected.setdefault("tool-called", []).append(count)
        elif kind == "llm" and isinstance(statement := a.get("criteria", a.get("prompt")), str):
            judged.append(statement)
        else:
            where = doc.at(*loc, n)
            skipped[label] = f"not mapped ({where}): {_why(kind, a)}"
    if commands:
        expected["command"] = " && ".join(f"({c})" if len(commands) > 1 else c for c in commands)
    return expected, judged, skipped


def _list(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else [v for v in value or [] if isinstance(v, str)]


def _why(kind: Any, a: dict[str, Any]) -> str:
    if kind == "tool_call":
        return f"tool {a.get('tool')!r} is not one of the neutral tools ({', '.join(NEUTRAL_TOOLS)})"
    return f"an assertion of type {kind!r} with these fields has no counterpart here"
