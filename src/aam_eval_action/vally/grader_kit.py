"""What every Vally grader shares: its result, its config read, durations, JavaScript regexes,
and the turn of a conversation it looks at."""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path
from typing import Any

from aam_eval_action import jsregex
from aam_eval_action.loader import workspace_file_source
from aam_eval_action.pipeline.checks import Check
from aam_eval_action.pipeline.plugin_eval import RunInputs
from aam_eval_action.session import Session
from aam_eval_action.vally.grader_model import VallyGrader


class Refused(Exception):
    """The grader fails with this explanation (an invalid regex, a turn never reached…)."""


class NotGraded(Refused):
    """The grader cannot be graded here: shown failed with why, not scored."""


def result(grader: VallyGrader, passed: bool, detail: str, score: float | None = None, **more: Any) -> Check:
    score = float(passed) if score is None else score
    return Check(grader.name, passed, detail, type=grader.type, weight=grader.weight, score=score, **more)


# --- config ---


def option(grader: VallyGrader, *keys: str) -> Any:
    """The first of `keys` the config sets, or ValueError naming the first."""
    found = next((grader.options[k] for k in keys if grader.options.get(k) is not None), None)
    if found is None:
        raise ValueError(f"{grader.type}: `{keys[0]}` is required")
    return found


def is_negated(grader: VallyGrader) -> bool:
    """`*-not-*` is the type with `negate: true`."""
    return "-not-" in grader.type or grader.options.get("negate") is True


def strings(value: Any) -> list[str]:
    """A string or a list of strings (run-command's stdout/stderr keys, since 0.7)."""
    if value is None:
        return []
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def maximum(grader: VallyGrader) -> float:
    value = option(grader, "max")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError(f"{grader.type}: `max` must be a non-negative number, not {value!r}")
    return float(value)


DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """A Vally duration (`30s`, `5m`, `1h`, `500ms`) in seconds; a unit is required since 0.4."""
    found = DURATION.fullmatch(text.strip()) if isinstance(text, str) else None
    if found is None:
        raise ValueError("a duration needs a unit: 30s, 5m, 1h, 500ms")
    return float(found.group(1)) * UNITS[found.group(2)]


def js_regex(pattern: Any) -> jsregex.JsRegex:
    """A Vally regex: JavaScript, its leading inline flags made RegExp flags."""
    source, flags = jsregex.vally(str(pattern))
    try:
        return jsregex.compile(source, flags)
    except jsregex.JsRegexError as exc:
        raise Refused(f"Invalid regex pattern: {pattern}. Error: {exc}") from None


def contains(text: str, needle: str, case_sensitive: bool) -> bool:
    return needle in text if case_sensitive else needle.lower() in text.lower()


# --- the turn a grader looks at ---


def view(grader: VallyGrader, session: Session) -> Session:
    """The session, or the one turn `grader.turn` selects: its answer, calls, errors and time."""
    turn, turns = grader.turn, session.turns
    if turn is None or (turn == 0 and not turns):
        return session
    if turn >= max(len(turns), 1):
        raise Refused(f"turn {turn} was not reached: the session had {max(len(turns), 1)} turn(s)")
    begin = sum(t.calls for t in turns[:turn])
    one = turns[turn]
    return session.model_copy(
        update={
            "output": one.output,
            "tool_calls": session.tool_calls[begin : begin + one.calls],
            "turns": [one],
            "duration_seconds": one.duration_seconds,
            "is_error": one.is_error,
            "num_turns": None,
            "error": session.error if one.is_error else None,
        }
    )


def turn_answers(grader: VallyGrader, session: Session) -> list[tuple[str, str]]:
    """The agent's answers a transcript grader reads, labelled: each turn's last text and the
    session's output (the record keeps no other assistant message), or the selected turn's."""
    if grader.turn is not None:
        return [(f"turn {grader.turn}", view(grader, session).output)]
    answers = [(f"turn {i}", t.output) for i, t in enumerate(session.turns)]
    if session.output and session.output not in (text for _, text in answers):
        answers.append(("output", session.output))
    return answers


# --- the diff of the run ---


def files_before(run: RunInputs) -> dict[str, str | None]:
    """The case's own files before the run, when the finished workspace is known."""
    finished = run.finished
    if finished is None:
        return {}
    layout, case = finished.layout, finished.case
    found = {rel: read_text(layout.fixtures(case.files_root) / rel) for rel in case.input.files}
    for rel in case.input.workspace_files:
        source = workspace_file_source(layout, rel)
        found[rel] = read_text(source) if source else ""
    for src, dest in case.staged_files:  # a stimulus's environment.files, copied in before the run
        source = layout.root / src
        if source.is_dir():
            for path in sorted(p for p in source.rglob("*") if p.is_file()):
                found[f"{dest}/{path.relative_to(source).as_posix()}".removeprefix("./")] = read_text(path)
        else:
            found[dest] = read_text(source)
    return found


def read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def changes(run: RunInputs) -> list[tuple[str, str, str | None, str | None]]:
    """(path, created | modified | deleted, before, after) of each file the agent changed: a
    file staged before the run (a stimulus's `environment.files`) counts only if the agent
    changed it."""
    before = files_before(run)
    out: list[tuple[str, str, str | None, str | None]] = []
    staged = set(run.session.staged)
    for change in sorted(run.session.files, key=lambda c: c.path):
        path, status = change.path, str(change.status)
        if path in staged:  # there before the agent started
            if status != "deleted" and change.text is not None and change.text == before.get(path):
                continue
            status = "deleted" if status == "deleted" else "modified"
        old = None if status == "created" else before.get(path)
        out.append((path, status, old, None if status == "deleted" else change.text))
    return out


def diff_text(run: RunInputs) -> str:
    """The run's file changes as a unified diff. The "before" side is known for the case's own
    files (its `input.files`, workspace files and a stimulus's `environment.files`); any other
    file the run modified or deleted had a before the record does not keep, so its whole end
    text shows as `+` lines."""
    out: list[str] = []
    for path, status, old, new in changes(run):
        out += [
            f"diff --git a/{path} b/{path}",
            f"--- {'/dev/null' if status == 'created' else 'a/' + path}",
            f"+++ {'/dev/null' if status == 'deleted' else 'b/' + path}",
        ]
        if status != "deleted" and new is None:
            out.append("Binary files differ")
            continue
        lines = difflib.unified_diff((old or "").splitlines(), (new or "").splitlines(), lineterm="", n=3)
        out += list(lines)[2:]
    return "\n".join(out)


def compact_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
