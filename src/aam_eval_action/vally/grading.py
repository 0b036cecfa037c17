"""Each built-in Vally grader, graded as its catalog page defines it (release 0.17,
https://microsoft.github.io/vally/reference/graders/). Every result is a `Check` with a score
in [0, 1] and Vally's own evidence words where its pages give them; a failed one says why.

* text: `output-(not-)contains` (case-insensitive unless `case_sensitive`), `output-(not-)matches`,
  `transcript-contains`/`-matches` (every answer of the agent, or one turn's);
* files at the end of the run: `file-(not-)exists`, `file-(not-)contains` (case-SENSITIVE, `value`),
  `file-(not-)matches`, by a Node glob; `diff-contains`, `diff-not-contains`, `diff-empty`;
* the session: `completed`, `exit-success`, and the metric thresholds `error-count`,
  `tool-call-count`, `turn-count`, `token-budget`, `wall-time` (value ≤ `max`);
* `tool-calls` (`required`, `disallowed`, `sequence`), `skill-invocation` (exact names);
* `run-command` and `program`, run in a fresh copy of the finished workspace;
* `prompt` and `panel`, asked of this run's judge; `pairwise` shown, not graded.

Regexes are JavaScript RegExp (`jsregex`), a leading `(?i)`, `(?m)`, `(?s)` turned into flags.
A grader's `turn` (0-based) narrows the output, the tool calls, the errors and the wall time to
that turn of a conversation.
"""

from __future__ import annotations

import difflib
import json
import re
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from aam_eval_action import jsregex
from aam_eval_action.engines.process import Completed, run_process
from aam_eval_action.loader import workspace_file_source
from aam_eval_action.pipeline import workspace
from aam_eval_action.pipeline.checks import Check
from aam_eval_action.pipeline.finished import HASH_ONLY, SYSTEM_PATH, _no_network_prefix, inside
from aam_eval_action.pipeline.plugin_eval import RunInputs, elide
from aam_eval_action.session import TOOL_RESULT_CAP, Session, ToolCall, cap
from aam_eval_action.tools import COPILOT_TOOLS, NEUTRAL_TOOLS, neutral_names, skills_loaded
from aam_eval_action.vally.grader_model import VallyGrader


class _Refused(Exception):
    """The grader fails with this explanation (an invalid regex, a turn never reached…)."""


class _NotGraded(_Refused):
    """The grader cannot be graded here: shown failed with why, not scored."""


def grade(grader: VallyGrader, run: RunInputs) -> Check:
    """One grader on one run, by its type; ValueError for a type not in the catalog."""
    grading = GRADE.get(grader.type)
    if grading is None:
        raise ValueError(f"{grader.type!r} is not a Vally grader type this project grades")
    try:
        return grading(grader, run)
    except _NotGraded as exc:
        return _result(grader, False, f"not graded: {exc}", scored=False)
    except _Refused as exc:
        return _result(grader, False, str(exc))


def _result(grader: VallyGrader, passed: bool, detail: str, score: float | None = None, **more: Any) -> Check:
    score = float(passed) if score is None else score
    return Check(grader.name, passed, detail, type=grader.type, weight=grader.weight, score=score, **more)


# --- config ---


def _option(grader: VallyGrader, *keys: str) -> Any:
    """The first of `keys` the config sets, or ValueError naming the first."""
    found = next((grader.options[k] for k in keys if grader.options.get(k) is not None), None)
    if found is None:
        raise ValueError(f"{grader.type}: `{keys[0]}` is required")
    return found


def _negated(grader: VallyGrader) -> bool:
    """`*-not-*` is the type with `negate: true`."""
    return "-not-" in grader.type or grader.options.get("negate") is True


def _strings(value: Any) -> list[str]:
    """A string or a list of strings (run-command's stdout/stderr keys, since 0.7)."""
    if value is None:
        return []
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def _max(grader: VallyGrader) -> float:
    value = _option(grader, "max")
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


def _regex(pattern: Any) -> jsregex.JsRegex:
    """A Vally regex: JavaScript, its leading inline flags made RegExp flags."""
    source, flags = jsregex.vally(str(pattern))
    try:
        return jsregex.compile(source, flags)
    except jsregex.JsRegexError as exc:
        raise _Refused(f"Invalid regex pattern: {pattern}. Error: {exc}") from None


def _contains(text: str, needle: str, case_sensitive: bool) -> bool:
    return needle in text if case_sensitive else needle.lower() in text.lower()


# --- the turn a grader looks at ---


def _view(grader: VallyGrader, session: Session) -> Session:
    """The session, or the one turn `grader.turn` selects: its answer, calls, errors and time."""
    turn, turns = grader.turn, session.turns
    if turn is None or (turn == 0 and not turns):
        return session
    if turn >= max(len(turns), 1):
        raise _Refused(f"turn {turn} was not reached: the session had {max(len(turns), 1)} turn(s)")
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


def _answers(grader: VallyGrader, session: Session) -> list[tuple[str, str]]:
    """The agent's answers a transcript grader reads, labelled: each turn's last text and the
    session's output (the record keeps no other assistant message), or the selected turn's."""
    if grader.turn is not None:
        return [(f"turn {grader.turn}", _view(grader, session).output)]
    answers = [(f"turn {i}", t.output) for i, t in enumerate(session.turns)]
    if session.output and session.output not in (text for _, text in answers):
        answers.append(("output", session.output))
    return answers


# --- output, transcript ---


def _output_contains(grader: VallyGrader, run: RunInputs) -> Check:
    """`substring` (or `value`) in the output, both lower-cased unless `case_sensitive`; `negate`
    (output-not-contains) passes when it is absent.
    (https://microsoft.github.io/vally/reference/graders/output-contains/, 0.17)"""
    needle = str(_option(grader, "substring", "value"))
    found = _contains(_view(grader, run.session).output, needle, grader.options.get("case_sensitive") is True)
    detail = f"'{needle}' found in output" if found else f"'{needle}' NOT found in output"
    return _result(grader, found != _negated(grader), detail)


def _output_matches(grader: VallyGrader, run: RunInputs) -> Check:
    """`pattern` tested (unanchored) against the output; `negate`.
    (https://microsoft.github.io/vally/reference/graders/output-matches/, 0.17)"""
    pattern = str(_option(grader, "pattern"))
    found = _regex(pattern).search(_view(grader, run.session).output)
    detail = f"Output matches pattern /{pattern}/" if found else f"Output does not match pattern /{pattern}/"
    return _result(grader, found != _negated(grader), detail)


def _transcript(grader: VallyGrader, run: RunInputs) -> Check:
    """transcript-contains (`substring`, `case_sensitive`) or transcript-matches (`pattern`), "any
    assistant message, or one selected turn"; `negate`. Its config table is not in the docs.
    (https://microsoft.github.io/vally/guides/choosing-graders/, 0.17)"""
    test: Callable[[str], bool]
    if grader.type == "transcript-contains":
        needle = str(_option(grader, "substring", "value"))
        sensitive = grader.options.get("case_sensitive") is True
        what, test = f"'{needle}'", lambda text: _contains(text, needle, sensitive)
    else:
        pattern = str(_option(grader, "pattern"))
        what, test = f"/{pattern}/", _regex(pattern).search
    answers = _answers(grader, run.session)
    hits = [label for label, text in answers if test(text)]
    scope = f"the answer of turn {grader.turn}" if grader.turn is not None else "any assistant message"
    detail = f"{what} found in {', '.join(hits)}" if hits else f"{what} NOT found in {scope}"
    return _result(grader, bool(hits) != _negated(grader), detail)


# --- files at the end of the run ---


def _braces(glob: str) -> list[str]:
    """minimatch's brace expansion: `{a,b}` and `{1..3}`, nested; `{a}` stays literal."""
    depth, start, i = 0, -1, 0
    while i < len(glob):
        c = glob[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            depth, start = depth + 1, i if depth == 0 else start
        elif c == "}" and depth:
            depth -= 1
            if depth == 0:
                options = _brace_options(glob[start + 1 : i])
                if options is not None:
                    head, tail = glob[:start], glob[i + 1 :]
                    return [x for o in options for x in _braces(head + o + tail)]
        i += 1
    return [glob]


def _brace_options(body: str) -> list[str] | None:
    span = re.fullmatch(r"(-?\d+)\.\.(-?\d+)", body)
    if span:
        a, b = int(span.group(1)), int(span.group(2))
        return [str(n) for n in (range(a, b + 1) if a <= b else range(a, b - 1, -1))]
    parts, depth, last = [], 0, 0
    for i, c in enumerate(body):
        depth += (c == "{") - (c == "}")
        if c == "," and depth == 0 and (i == 0 or body[i - 1] != "\\"):
            parts.append(body[last:i])
            last = i + 1
    parts.append(body[last:])
    return parts if len(parts) > 1 else None


def _segment(seg: str) -> str:
    """One path segment of a glob as a regex: `*`, `?`, `[…]` (`!`/`^` negates), `\\x`."""
    out, i = "", 0
    while i < len(seg):
        c = seg[i]
        end = seg.find("]", i + 2) if c == "[" else -1
        if c == "\\" and i + 1 < len(seg):
            out, i = out + re.escape(seg[i + 1]), i + 2
            continue
        if end > 0:
            body = seg[i + 1 : end]
            negate = body[:1] in ("!", "^")
            body = body[1:] if negate else body
            body = "".join("\\" + ch if ch in "\\[&~|" else ch for ch in body)
            out, i = out + "[" + ("^/" if negate else "") + body + "]", end + 1
            continue
        out += "[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c)
        i += 1
    return out


def glob_regex(glob: str) -> re.Pattern[str]:
    """A Node glob as Vally's file graders use it (dotfiles match, since 0.12): `**` any folders,
    `*` and `?` within one, `[…]`, `{a,b}`; matched against workspace-relative paths."""
    alternatives = []
    for one in _braces(glob):
        segs = one.removeprefix("./").split("/")
        rx = ""
        for i, seg in enumerate(segs):
            last = i == len(segs) - 1
            if seg == "**":
                rx = rx[:-1] + "(?:/.+)?" if last and rx else ".*" if last else rx + "(?:[^/]+/)*"
            else:
                rx += _segment(seg) + ("" if last else "/")
        alternatives.append(rx)
    return re.compile("(?:" + "|".join(alternatives) + r")\Z")


def _folders(paths: Sequence[str]) -> list[str]:
    return sorted({p.rsplit("/", i)[0] for p in paths for i in range(1, p.count("/") + 1)})


def _globbed(grader: VallyGrader, run: RunInputs, folders: bool = False) -> tuple[str, list[str]]:
    """`path` and the files (and, for file-exists, folders) at the end of the run it matches."""
    glob = str(_option(grader, "path"))
    pattern = glob_regex(glob)
    candidates = sorted(run.files) + (_folders(list(run.files)) if folders else [])
    return glob, [p for p in candidates if pattern.match(p)]


def _named(paths: Sequence[str]) -> str:
    shown = ", ".join(paths[:20])
    return shown + (f" (+{len(paths) - 20} more)" if len(paths) > 20 else "")


def _none_match(glob: str) -> str:
    return f"No files matching '{glob}' found"


def _file_exists(grader: VallyGrader, run: RunInputs) -> Check:
    """≥1 file (or folder) matches `path`; `negate` (file-not-exists): none.
    (https://microsoft.github.io/vally/reference/graders/file-exists/, 0.17)"""
    glob, found = _globbed(grader, run, folders=True)
    detail = f"Files matching '{glob}' found: {_named(found)}" if found else _none_match(glob)
    return _result(grader, bool(found) != _negated(grader), detail)


def _file_text(run: RunInputs, path: str) -> str | None:
    text = run.files.get(path)
    if text is None and path in run.blobs:
        return run.blobs[path].decode("utf-8", errors="replace")  # binary files are not skipped
    return text


def _file_content(grader: VallyGrader, run: RunInputs) -> Check:
    """file-contains (`value`, or `substring`; case-SENSITIVE) and file-matches (`pattern`): passes
    when ≥1 file matching `path` has it; negated, when none has. No matching file fails. A file
    whose content the record does not hold is skipped and named; a negated grader that cannot
    read every file fails (Vally 0.12: "indeterminate").
    (https://microsoft.github.io/vally/reference/graders/file-contains/,
    https://microsoft.github.io/vally/reference/graders/file-matches/, 0.17)"""
    glob, found = _globbed(grader, run)
    test: Callable[[str], bool]
    if "contains" in grader.type:
        needle = str(_option(grader, "value", "substring"))
        what, test = f"'{needle}'", lambda text: needle in text
    else:
        pattern = str(_option(grader, "pattern"))
        what, test = f"/{pattern}/", _regex(pattern).search
    if not found:
        return _result(grader, False, _none_match(glob))
    texts = {p: _file_text(run, p) for p in found}
    unread = [p for p, t in texts.items() if t is None]
    hits = [p for p, t in texts.items() if t is not None and test(t)]
    note = f"; not read ({HASH_ONLY}): {_named(unread)}" if unread else ""
    negated = _negated(grader)
    if hits:
        return _result(grader, not negated, f"{what} found in {_named(hits)}" + note)
    detail = f"{what} NOT found in {len(found) - len(unread)} file(s) matching '{glob}'" + note
    return _result(grader, negated and not unread, detail)


# --- the diff of the run ---


def _before(run: RunInputs) -> dict[str, str | None]:
    """The case's own files before the run, when the finished workspace is known."""
    finished = run.finished
    if finished is None:
        return {}
    layout, case = finished.layout, finished.case
    found = {rel: _read(layout.fixtures(case.files_root) / rel) for rel in case.input.files}
    for rel in case.input.workspace_files:
        source = workspace_file_source(layout, rel)
        found[rel] = _read(source) if source else ""
    return found


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def diff_text(run: RunInputs) -> str:
    """The run's file changes as a unified diff. The "before" side is known for the case's own
    files (its `input.files` and workspace files); any other file the run modified or deleted
    had a before the record does not keep, so its whole end text shows as `+` lines."""
    before, out = _before(run), []
    for change in sorted(run.session.files, key=lambda c: c.path):
        path, status = change.path, change.status
        old = None if status == "created" else before.get(path)
        out += [
            f"diff --git a/{path} b/{path}",
            f"--- {'/dev/null' if status == 'created' else 'a/' + path}",
            f"+++ {'/dev/null' if status == 'deleted' else 'b/' + path}",
        ]
        if status != "deleted" and change.text is None:
            out.append("Binary files differ")
            continue
        new = "" if status == "deleted" else change.text or ""
        lines = difflib.unified_diff((old or "").splitlines(), new.splitlines(), lineterm="", n=3)
        out += list(lines)[2:]
    return "\n".join(out)


def _diff(grader: VallyGrader, run: RunInputs) -> Check:
    """diff-contains / diff-not-contains (`substring`/`value`, case-insensitive unless
    `case_sensitive`, as output-contains; or `pattern`) and diff-empty (no file changed). The
    record keeps the whole session's changes, not each turn's: a `turn` is not narrowed."""
    note = (
        f" (the whole session's changes: they are not kept per turn, turn {grader.turn} asked)"
        if grader.turn is not None and len(run.session.turns) > 1
        else ""
    )
    if grader.type == "diff-empty":
        changed = [c.path for c in run.session.files]
        detail = f"{len(changed)} file(s) changed: {_named(changed)}" if changed else "No file changes"
        return _result(grader, not changed, detail + note)
    text = diff_text(run)
    if grader.options.get("pattern") is not None:
        pattern = str(grader.options["pattern"])
        found = _regex(pattern).search(text)
        detail = f"Diff matches pattern /{pattern}/" if found else f"Diff does not match pattern /{pattern}/"
    else:
        needle = str(_option(grader, "substring", "value"))
        found = _contains(text, needle, grader.options.get("case_sensitive") is True)
        detail = f"'{needle}' found in diff" if found else f"'{needle}' NOT found in diff"
    return _result(grader, found != _negated(grader), detail + note)


# --- the session ---


def _errors(session: Session) -> int:
    """Error events: each failed turn, or the session's own failure."""
    failed = sum(1 for t in session.turns if t.is_error)
    return failed or int(session.is_error or session.error is not None)


def _completed(grader: VallyGrader, run: RunInputs) -> Check:
    """Non-empty output, no error event, the session ended its turn (not killed at the timeout);
    exit-success (legacy) only asks for output.
    (https://microsoft.github.io/vally/reference/graders/completed/, 0.17)"""
    session = _view(grader, run.session)
    problems = [] if session.output.strip() else ["Agent produced no output"]
    if grader.type == "completed":
        errors = _errors(session)
        if errors:
            why = f": {session.error}" if session.error else ""
            problems.append(f"{errors} error event(s) in trajectory{why}")
        if session.timed_out:
            problems.append("No turn_end events found — session may have crashed mid-turn (timed out)")
    done = "Agent completed" if grader.type == "completed" else "Agent produced output"
    detail = "; ".join(problems) or done
    return _result(grader, not problems, detail)


def _metric(grader: VallyGrader, run: RunInputs) -> Check:
    """The value does not exceed `max`.
    (https://microsoft.github.io/vally/reference/graders/metric-thresholds/, 0.17)"""
    session = _view(grader, run.session)
    kind = grader.type
    if kind == "wall-time":
        limit = parse_duration(_option(grader, "max"))
        took = session.duration_seconds
        return _result(grader, took <= limit, f"wall time {took:g}s (max {limit:g}s)")
    most = _max(grader)
    if kind == "token-budget":
        if session.usage is None:
            raise _NotGraded("the engine reported no token usage")
        value, what = session.usage.input_tokens + session.usage.output_tokens, "tokens (input + output)"
    elif kind == "error-count":
        value, what = _errors(session), "error(s)"
    elif kind == "turn-count":
        value, what = session.num_turns or max(len(session.turns), 1), "turn(s)"
    else:
        value, what = _counted(grader, session), "tool call(s)"
    return _result(grader, value <= most, f"{value} {what} (max {most:g})")


def _counted(grader: VallyGrader, session: Session) -> int:
    """tool-call-count: the calls, or those whose name a `tools` regex matches (0.13)."""
    filters = [_regex(p) for p in _strings(grader.options.get("tools"))]
    return sum(
        1
        for c in session.tool_calls
        if not filters or any(f.search(n) for f in filters for n in call_names(c))
    )


# --- tool calls, skills ---

AS_COPILOT = {n: tuple(name for name, m in COPILOT_TOOLS.items() if m == n) for n in NEUTRAL_TOOLS}
PATH_KEYS = ("path", "file_path", "absolute_path", "notebook_path")


def call_names(call: ToolCall) -> list[str]:
    """The names a Vally regex may match for a call: its own, its neutral names (`tools.py`),
    and, for another CLI's call, the Copilot CLI names of those (Vally's names: Claude Code's
    `Bash` is also `bash`, its `Read` `view`, its `mcp__srv__tool` `srv-tool`), so that a suite
    grades alike on every engine."""
    neutral = neutral_names(call)
    names = [call.name, *neutral]
    if call.name not in COPILOT_TOOLS:
        names += [copilot for n in neutral for copilot in AS_COPILOT[n]]
    server, _, tool = call.name.removeprefix("mcp__").partition("__")
    if call.name.startswith("mcp__") and tool:
        names.append(f"{server}-{tool}")
    return list(dict.fromkeys(names))


def _command(call: ToolCall) -> str | None:
    value = call.input.get("command")
    if isinstance(value, list):
        return " ".join(str(v) for v in value)
    return value if isinstance(value, str) else None


def _paths(call: ToolCall) -> list[str]:
    found = [str(call.input[k]) for k in PATH_KEYS if isinstance(call.input.get(k), str)]
    changes = call.input.get("changes")  # Codex's file_change
    if isinstance(changes, list):
        found += [str(c["path"]) for c in changes if isinstance(c, dict) and "path" in c]
    return found


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


UNGRADED_KEYS = ("at_step", "before_step", "write_only", "read_only")


class _Entry:
    """One ToolMatch: `name` and the optional regexes, all unanchored."""

    def __init__(self, raw: Any, grader: VallyGrader):
        given = {"name": raw} if isinstance(raw, str) else raw  # a string is `{name: <string>}`
        spec: dict[str, Any] = dict(given) if isinstance(given, dict) else {}
        if not isinstance(spec.get("name"), str):
            raise ValueError(f"{grader.type}: an entry needs a `name` regex, not {raw!r}")
        ungraded = [k for k in UNGRADED_KEYS if k in spec]
        if ungraded:
            raise _NotGraded(
                f"tool-calls {', '.join(ungraded)}: this project's record keeps neither agent "
                "steps nor write/read kinds"
            )
        self.spec = spec
        self.regexes = {
            k: _regex(spec[k])
            for k in ("name", "command", "path", "result", "pattern")
            if spec.get(k) is not None
        }
        args = spec.get("args") or {}
        if not isinstance(args, dict):
            raise ValueError(f"{grader.type}: `args` maps argument names to regexes, not {args!r}")
        self.args = {str(k): _regex(v) for k, v in args.items()}
        self.min_count = int(spec.get("min_count", 1))
        self.final = spec.get("final") is True

    def __str__(self) -> str:
        keys = ("command", "path", "result", "pattern")
        more = [f"{k} /{self.spec[k]}/" for k in keys if k in self.regexes]
        more += [f"args.{k} /{v.pattern}/" for k, v in self.args.items()]
        return f"/{self.spec['name']}/" + (f" ({', '.join(more)})" if more else "")

    def matches(self, call: ToolCall) -> bool:
        rx = self.regexes
        if not any(rx["name"].search(n) for n in call_names(call)):
            return False
        command = _command(call)
        if "command" in rx and (command is None or not rx["command"].search(command)):
            return False
        if "path" in rx and not any(rx["path"].search(p) for p in _paths(call)):
            return False
        if "result" in rx and not rx["result"].search(call.result or ""):
            return False
        if "pattern" in rx and not rx["pattern"].search(_compact(call.input)):
            return False
        return all(k in call.input and v.search(_arg(call.input[k])) for k, v in self.args.items())


def _arg(value: Any) -> str:
    return value if isinstance(value, str) else _compact(value)


def _entries(grader: VallyGrader, key: str) -> list[_Entry]:
    return [_Entry(raw, grader) for raw in grader.options.get(key) or []]


def _tool_calls(grader: VallyGrader, run: RunInputs) -> Check:
    """Every `required` entry matched by ≥ `min_count` calls (`final`: the last call is one); no
    `disallowed` entry matched; the `sequence` entries matched in call order (a subsequence). A
    call's name is matched as `call_names` says; `command` the shell command argument, `path` a path
    argument, `args` arguments by name, `result` the result text, `pattern` the compact JSON of the
    arguments. (Public suites at 0.13 note that `args` was ignored then; the 0.17 page documents
    it.) (https://microsoft.github.io/vally/reference/graders/tool-calls/, 0.17)"""
    calls = _view(grader, run.session).tool_calls
    required, disallowed, sequence = (_entries(grader, k) for k in ("required", "disallowed", "sequence"))
    if not (required or disallowed or sequence):
        raise ValueError("tool-calls: set at least one of `required`, `disallowed`, `sequence`")
    problems, seen = [], []
    for entry in required:
        hits = [i for i, c in enumerate(calls) if entry.matches(c)]
        if len(hits) < entry.min_count:
            problems.append(f"required {entry} called {len(hits)}x (min {entry.min_count})")
        elif entry.final and hits[-1] != len(calls) - 1:
            problems.append(f"required {entry} is not the last tool call")
        else:
            seen.append(f"{entry} called {len(hits)}x")
    for entry in disallowed:
        n = sum(1 for c in calls if entry.matches(c))
        if n:
            problems.append(f"disallowed {entry} called {n}x")
        else:
            seen.append(f"no {entry} call")
    if sequence:
        done = _subsequence(sequence, calls)
        if done < len(sequence):
            problems.append(
                f"sequence {' → '.join(map(str, sequence))}: no {sequence[done]} after the "
                f"{'earlier entries' if done else 'start'}"
            )
        else:
            seen.append(f"sequence of {len(sequence)} in order")
    detail = "; ".join(problems or seen)
    return _result(grader, not problems, detail)


def _subsequence(entries: Sequence[_Entry], calls: Sequence[ToolCall]) -> int:
    """How many of the entries match calls in order."""
    done = 0
    for call in calls:
        if done < len(entries) and entries[done].matches(call):
            done += 1
    return done


def _skills(calls: Sequence[ToolCall]) -> set[str]:
    """The skills the calls loaded (`tools.skills_loaded`, each engine's rule), and a Skill
    call's plugin-qualified name as written (`plugin:skill`)."""
    names = {n for c in calls for n in skills_loaded(c)}
    for call in calls:
        given = call.input.get("skill") or call.input.get("name")
        if skills_loaded(call) and isinstance(given, str):
            names.add(given)
    return names


def _skill_invocation(grader: VallyGrader, run: RunInputs) -> Check:
    """Every `required` skill activated and no `disallowed` one; names are compared exactly (a
    plugin-qualified `plugin:skill` load is also the skill `skill`).
    (https://microsoft.github.io/vally/reference/graders/skill-invocation/, 0.17)"""
    required = _strings(grader.options.get("required"))
    disallowed = _strings(grader.options.get("disallowed"))
    if not (required or disallowed):
        raise ValueError("skill-invocation: set `required` or `disallowed`")
    both = sorted(set(required) & set(disallowed))
    if both:
        raise ValueError(f"A skill cannot appear in both lists: {', '.join(both)}")
    fired = _skills(_view(grader, run.session).tool_calls)
    missing = [s for s in required if s not in fired]
    found = [s for s in disallowed if s in fired]
    shown = ", ".join(sorted(fired)) or "none"
    problems = [f"required skill(s) not activated: {', '.join(missing)}"] if missing else []
    problems += [f"disallowed skill(s) activated: {', '.join(found)}"] if found else []
    return _result(grader, not problems, "; ".join([*problems, f"activated: {shown}"]))


# --- commands ---

RESERVED = ("EVALUATE_WORKSPACE", "EVALUATE_GRADER_INPUT")


def _env(grader: VallyGrader) -> dict[str, str]:
    given = grader.options.get("env") or {}
    if not isinstance(given, dict):
        raise ValueError(f"{grader.type}: `env` must be a mapping of names to strings")
    return {str(k): str(v) for k, v in given.items()}


def _cwd(root: Path, sub_path: Any) -> Path:
    if sub_path is None:
        return root
    cwd = (root / str(sub_path)).resolve()
    if not cwd.is_relative_to(root.resolve()):
        raise _Refused(f"sub_path {sub_path!r} leaves the workspace")
    if not cwd.is_dir():
        raise _Refused(f"sub_path {sub_path!r} is not a folder of the finished workspace")
    return cwd


def _execute(
    grader: VallyGrader,
    run: RunInputs,
    argv: list[str],
    timeout: float,
    program_input: dict[str, Any] | None = None,
) -> Completed:
    """`argv` in a fresh copy of the finished workspace (without network unless the case has
    it), with the run's command environment and the grader's `env`; for `program`, the two
    EVALUATE_* variables and the input file (beside the workspace, not in it)."""
    finished = run.finished
    ws = workspace.create(finished.layout, finished.case)
    try:
        workspace.restore(ws.root, [f for f in finished.session.files if inside(f.path)])
        env = {**run.command_env, "HOME": str(ws.home), **_env(grader)}
        env["PATH"] = ":".join(p for p in (env.get("PATH"), SYSTEM_PATH) if p)
        if program_input is not None:
            given = ws.base / "grader-input.json"
            program_input["trajectory"]["workDir"] = str(ws.root)
            given.write_text(json.dumps(program_input, ensure_ascii=False), encoding="utf-8")
            env |= {"EVALUATE_WORKSPACE": str(ws.root), "EVALUATE_GRADER_INPUT": str(given)}
        cwd = _cwd(ws.root, grader.options.get("sub_path"))
        return run_process([*_no_network_prefix(run.network), *argv], cwd=cwd, env=env, timeout=timeout)
    finally:
        ws.cleanup()


def _ran(
    grader: VallyGrader,
    run: RunInputs,
    argv: list[str],
    timeout: float,
    program_input: dict[str, Any] | None = None,
) -> Completed:
    try:
        return _execute(grader, run, argv, timeout, program_input)
    except OSError as exc:
        raise _Refused(f"could not run {argv[0]}: {exc}") from None


def _hash_only_note(run: RunInputs) -> str:
    held = run.finished.hash_only()
    return (
        (
            f"; note: {', '.join(held)} {'was' if len(held) == 1 else 'were'} {HASH_ONLY} and restored "
            "as zero-filled placeholders of equal size"
        )
        if held
        else ""
    )


def _run_command(grader: VallyGrader, run: RunInputs) -> Check:
    """`command` through /bin/sh (or exec'd with `args`), passing when the exit code is
    `expected_exit_code` (0) and every `stdout_contains`, `stderr_contains`, `stdout_matches`,
    `stdout_not_matches` holds (each a string or a list, case-sensitive); `sub_path`, `timeout`
    (30s), `env` merged over the run's command environment.
    (https://microsoft.github.io/vally/reference/graders/run-command/, 0.17)"""
    if run.finished is None:
        raise _NotGraded("no finished workspace to run the command in")
    o = grader.options
    command, args = str(_option(grader, "command")), o.get("args")
    argv = [command, *map(str, args)] if isinstance(args, list) else ["/bin/sh", "-c", command]
    timeout = parse_duration(o.get("timeout", "30s"))
    expected = int(o.get("expected_exit_code", 0))
    matches = [(_regex(p), p) for p in _strings(o.get("stdout_matches"))]
    not_matches = [(_regex(p), p) for p in _strings(o.get("stdout_not_matches"))]
    done = _ran(grader, run, argv, timeout)
    out, err = done.stdout, done.stderr
    problems = (
        [f"timed out after {timeout:g}s"]
        if done.timed_out
        else ([f"exit code {done.exit_code} (expected {expected})"] if done.exit_code != expected else [])
    )
    problems += [f"stdout lacks '{s}'" for s in _strings(o.get("stdout_contains")) if s not in out]
    problems += [f"stderr lacks '{s}'" for s in _strings(o.get("stderr_contains")) if s not in err]
    problems += [f"stdout does not match /{p}/" for rx, p in matches if not rx.search(out)]
    problems += [f"stdout matches /{p}/ (expected no match)" for rx, p in not_matches if rx.search(out)]
    if not problems:
        return _result(grader, True, f"exit code {done.exit_code} (expected {expected}); every check held")
    output = cap((out + err).strip(), TOOL_RESULT_CAP)
    detail = "; ".join(problems) + (f"; output: {output}" if output else "") + _hash_only_note(run)
    return _result(grader, False, detail)


def _events(calls: Sequence[ToolCall]) -> list[dict[str, Any]]:
    """Tool calls as trajectory events (https://microsoft.github.io/vally/reference/trajectory-format/)."""
    out: list[dict[str, Any]] = []
    for i, call in enumerate(calls):
        ids = {"toolName": call.name, "toolCallId": f"call-{i}"}
        out.append({"type": "tool_call", "data": {**ids, "arguments": call.input}})
        result = {"success": not call.is_error, "result": call.result}
        out.append({"type": "tool_result", "data": {**ids, **result}})
    return out


def _program_input(grader: VallyGrader, run: RunInputs) -> dict[str, Any]:
    """GraderInput (https://microsoft.github.io/vally/guides/writing-custom-graders/): the trajectory
    this project records (output, tool call and result events, the diff), the stimulus's name and
    prompt, the config."""
    case = run.finished.case
    session = _view(grader, run.session)
    trajectory = {
        "output": session.output,
        "events": _events(session.tool_calls),
        "diff": diff_text(run),
        "workDir": "",
    }
    return {
        "trajectory": trajectory,
        "stimulus": {"name": case.name, "prompt": case.input.prompt},
        "config": dict(grader.options),
    }


def _program(grader: VallyGrader, run: RunInputs) -> Check:
    """`program` (with `args`; through the shell with `shell: true`) in the workspace (or `sub_path`),
    given EVALUATE_WORKSPACE and EVALUATE_GRADER_INPUT; `timeout` 60s. Nothing on stdout: exit 0
    passes (score 1), else fails (0). A GraderResult JSON object on stdout: its `score` (in [0, 1])
    and `evidence`; its `passed`, or, not given, the score reaching 0.5.
    (https://microsoft.github.io/vally/reference/graders/program/, 0.17)"""
    if run.finished is None:
        raise _NotGraded("no finished workspace to run the program in")
    o = grader.options
    clash = [k for k in _env(grader) if k.upper() in RESERVED]
    if clash:
        raise ValueError(f"program: `env` must not set {', '.join(clash)} (Vally sets it)")
    program, args = str(_option(grader, "program")), [str(a) for a in o.get("args") or []]
    argv = ["/bin/sh", "-c", " ".join([program, *args])] if o.get("shell") is True else [program, *args]
    timeout = parse_duration(o.get("timeout", "60s"))
    done = _ran(grader, run, argv, timeout, _program_input(grader, run))
    if done.timed_out:
        return _result(grader, False, f"timed out after {timeout:g}s")
    printed = done.stdout.strip()
    if not printed:
        why = cap(done.stderr.strip(), TOOL_RESULT_CAP)
        detail = f"exit code {done.exit_code}" + (f"; stderr: {why}" if why and done.exit_code else "")
        return _result(grader, done.exit_code == 0, detail)
    return _program_result(grader, printed)


def _program_result(grader: VallyGrader, printed: str) -> Check:
    try:
        value = json.loads(printed)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        why = f"the program's stdout is not a GraderResult JSON object: {cap(printed, 300)}"
        return _result(grader, False, why)
    score, passed = value.get("score"), value.get("passed")
    if score is None and isinstance(passed, bool):
        score = float(passed)
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0 <= score <= 1:
        return _result(grader, False, f"the program's score must be a number in [0, 1], not {score!r}")
    if passed is not None and not isinstance(passed, bool):
        return _result(grader, False, f"the program's `passed` must be true or false, not {passed!r}")
    verdict = passed if isinstance(passed, bool) else score >= 0.5
    evidence = value.get("evidence")
    detail = str(evidence) if evidence not in (None, "") else f"the program's score: {score:g}"
    return _result(grader, verdict, detail, float(score))


# --- LLM judges ---

SCALES = {"binary": 1, "scale_1_5": 5, "scale_1_10": 10}
DEFAULT_RUBRIC = "The agent completed the task it was given correctly and completely."
SHOWN_CALLS = 20
NO_EVIDENCE = "no evidence for the judge: the agent produced no output and called no tool"
ARGS_SHOWN = 300
SCORE_LINE = re.compile(
    r"^[\s>*_#`-]*(?:final\s+)?score\s*[*_`]*\s*[:=]\s*[*_`]*\s*"
    r"(pass|fail|\d+(?:\.\d+)?)\b",
    re.I | re.M,
)
"""The reply's score line: `SCORE: 4`, and markdown around it (`**Score:** 4`)."""
STAMPED = re.compile(r"/[^\s\"'`]*?/aam-eval-[^/\s\"'`]*/(workspace|home)")
"""A path into this run's temp workspace: stamped afresh each run, so shown as `<workspace>`."""


def _scoring(grader: VallyGrader) -> tuple[str, float]:
    scoring = str(grader.options.get("scoring", "scale_1_5"))
    if scoring not in SCALES:
        raise ValueError(f"{grader.type}: `scoring` is binary, scale_1_5 or scale_1_10, not {scoring!r}")
    threshold = grader.options.get("threshold", 0.5)
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
        raise ValueError(f"{grader.type}: `threshold` must be a number in [0, 1], not {threshold!r}")
    return scoring, float(threshold)


def _timeline(calls: Sequence[ToolCall]) -> str:
    """The tool calls, one a line (name, compact arguments, failed or not; results left out, as
    they can differ between runs), the first and last 20 past 40."""

    def line(i: int, call: ToolCall) -> str:
        args = STAMPED.sub(r"<\1>", _compact(call.input))
        args = args if len(args) <= ARGS_SHOWN else args[:ARGS_SHOWN] + "…"
        return f"{i + 1}. {call.name} {args}" + (" (failed)" if call.is_error else "")

    lines = [line(i, c) for i, c in enumerate(calls)]
    if len(lines) > 2 * SHOWN_CALLS:
        hidden = len(lines) - 2 * SHOWN_CALLS
        lines = [*lines[:SHOWN_CALLS], f"[…{hidden} calls elided…]", *lines[-SHOWN_CALLS:]]
    return "\n".join(lines) or "(none)"


def _task(grader: VallyGrader, run: RunInputs) -> str | None:
    """What the agent was asked: the selected turn's message, each turn's, or the case's prompt."""
    turns = run.session.turns
    if turns and grader.turn is not None:
        return turns[grader.turn].user
    if turns:
        return "\n\n".join(f"Turn {i}: {t.user}" for i, t in enumerate(turns))
    return run.finished.case.input.prompt if run.finished is not None else None


def judge_prompt(grader: VallyGrader, run: RunInputs, scoring: str) -> str:
    """The judge's prompt: the rubric, the grader's own instruction, the task, the tool calls and
    the final answer, then the reply format. Nothing in it changes between runs of one session."""
    session = _view(grader, run.session)
    rubric = "\n".join(f"- {c}" for c in grader.rubric) or f"- {DEFAULT_RUBRIC}"
    parts = ["You are grading the work of a coding agent against a rubric.", f"Rubric:\n{rubric}"]
    if grader.options.get("prompt"):
        parts.append(f"Grading instructions:\n{grader.options['prompt']}")
    task = _task(grader, run)
    if task:
        parts.append(f"Task given to the agent:\n{task}")
    parts += [
        f"The agent's tool calls, in order:\n{_timeline(session.tool_calls)}",
        f"The agent's final answer:\n{elide(session.output) or '(empty)'}",
    ]
    if scoring == "binary":
        parts.append(
            "Decide whether the work meets the rubric. Give your reasons in a few sentences, "
            "then end with one line in exactly this form:\nSCORE: PASS\nor\nSCORE: FAIL"
        )
    else:
        top = SCALES[scoring]
        parts.append(
            f"Score the work as a whole from 1 (does not meet the rubric) to {top} (fully meets "
            "it). Give your reasons in a few sentences, then end with one line in exactly this "
            "form:\n"
            f"SCORE: <a whole number from 1 to {top}>"
        )
    return "\n\n".join(parts)


def parse_score(reply: str, scoring: str) -> tuple[float, str]:
    """(normalised score, as the judge gave it) from the reply's last `SCORE:` line: binary
    PASS/FAIL (or 1/0) is 1/0, a scale's s is (s-1)/(max-1); _Refused when there is none."""
    found = SCORE_LINE.findall(reply)
    if not found:
        raise _Refused(f"the judge's reply has no 'SCORE: …' line: {_preview(reply)}")
    given = found[-1].upper()
    if scoring == "binary":
        if given in ("PASS", "1"):
            return 1.0, "PASS"
        if given in ("FAIL", "0"):
            return 0.0, "FAIL"
        raise _Refused(f"the judge's binary score {found[-1]!r} is not PASS or FAIL")
    top = SCALES[scoring]
    if given in ("PASS", "FAIL") or not 1 <= float(given) <= top:
        raise _Refused(f"the judge's score {found[-1]!r} is not a number from 1 to {top}")
    return (float(given) - 1) / (top - 1), f"{given}/{top}"


def _preview(reply: str) -> str:
    text = " ".join(reply.split())
    return repr(text if len(text) <= 200 else text[:200] + "…")


def _evidence_missing(session: Session) -> bool:
    """Nothing for a judge to read (Vally 0.16: LLM grading fails on empty evidence)."""
    return not session.output.strip() and not session.tool_calls


def _ask_all(run: RunInputs, grader: VallyGrader, prompt: str, n: int) -> list[str]:
    if run.ask is None:
        raise RuntimeError(f"no judge for a {grader.type} grader")
    ask = run.ask
    asking: list[Callable[[], str]] = [lambda: ask(prompt)] * n
    return run.votes(asking) if run.votes is not None else [call() for call in asking]


def _model_note(grader: VallyGrader) -> str:
    model = grader.options.get("model")
    return f" (config model {model} not used: graded by this run's judge model)" if model else ""


def _prompt(grader: VallyGrader, run: RunInputs) -> Check:
    """The judge scores the run against the stimulus's rubric on `scoring`'s scale (default scale_1_5);
    passed when the normalised score reaches `threshold` (0.5). `model` is not used: this run's
    judge model grades. (https://microsoft.github.io/vally/reference/graders/prompt/, 0.17)"""
    scoring, threshold = _scoring(grader)
    if _evidence_missing(_view(grader, run.session)):
        return _result(grader, False, NO_EVIDENCE)
    (reply,) = _ask_all(run, grader, judge_prompt(grader, run, scoring), 1)
    score, given = parse_score(reply, scoring)
    passed = score >= threshold
    detail = (
        f"judge score {given} ({score:.2f} {'≥' if passed else '<'} threshold {threshold:g})"
        + _model_note(grader)
    )
    return _result(grader, passed, detail, score, votes=(passed,))


AGGREGATE: dict[str, Callable[[list[float]], float]] = {
    "mean": statistics.fmean,
    "median": statistics.median,
    "min": min,
}


def _panel(grader: VallyGrader, run: RunInputs) -> Check:
    """One judge per `models` entry on the rubric (default scale_1_5), their scores aggregated by
    `aggregation` (mean; median; min; majority: the share of judges that passed, passed over half).
    A judge whose reply cannot be read is left out, and named. Every entry is asked of this run's
    judge model. (https://microsoft.github.io/vally/reference/graders/panel/, 0.17)"""
    models = _strings(_option(grader, "models"))
    aggregation = str(grader.options.get("aggregation", "mean"))
    if aggregation not in (*AGGREGATE, "majority"):
        raise ValueError(f"panel: `aggregation` is majority, mean, median or min, not {aggregation!r}")
    scoring, threshold = _scoring(grader)
    if _evidence_missing(_view(grader, run.session)):
        return _result(grader, False, NO_EVIDENCE)
    replies = _ask_all(run, grader, judge_prompt(grader, run, scoring), len(models))
    scores, shown = [], []
    for model, reply in zip(models, replies, strict=True):
        try:
            score, given = parse_score(reply, scoring)
        except _Refused as exc:
            shown.append(f"{model}: {exc}")
            continue
        scores.append(score)
        shown.append(f"{model}: {given}")
    head = f"panel of {len(models)} (each asked of this run's judge model): " + "; ".join(shown)
    if not scores:
        return _result(grader, False, head + "; no judge gave a score")
    votes = tuple(s >= threshold for s in scores)
    if aggregation == "majority":
        score = sum(votes) / len(votes)
        passed = score > 0.5
    else:
        score = AGGREGATE[aggregation](scores)
        passed = score >= threshold
    verdict = f"{aggregation} {score:.2f} ({'passed' if passed else 'failed'}, threshold {threshold:g})"
    return _result(grader, passed, f"{head}; {verdict}", score, votes=votes)


def _pairwise(grader: VallyGrader, run: RunInputs) -> Check:
    """Vally runs it only in `vally compare`; `vally eval` leaves it out.
    (https://microsoft.github.io/vally/reference/graders/pairwise/, 0.17)"""
    return Check(
        grader.name,
        True,
        "pairwise: Vally runs it only in vally compare; not graded by vally eval",
        type=grader.type,
        weight=grader.weight,
        scored=False,
    )


GRADE: dict[str, Callable[[VallyGrader, RunInputs], Check]] = {
    "output-contains": _output_contains,
    "output-not-contains": _output_contains,
    "output-matches": _output_matches,
    "output-not-matches": _output_matches,
    "transcript-contains": _transcript,
    "transcript-matches": _transcript,
    "file-exists": _file_exists,
    "file-not-exists": _file_exists,
    "file-contains": _file_content,
    "file-not-contains": _file_content,
    "file-matches": _file_content,
    "file-not-matches": _file_content,
    "diff-contains": _diff,
    "diff-not-contains": _diff,
    "diff-empty": _diff,
    "completed": _completed,
    "exit-success": _completed,
    "error-count": _metric,
    "tool-call-count": _metric,
    "turn-count": _metric,
    "token-budget": _metric,
    "wall-time": _metric,
    "tool-calls": _tool_calls,
    "skill-invocation": _skill_invocation,
    "run-command": _run_command,
    "program": _program,
    "prompt": _prompt,
    "panel": _panel,
    "pairwise": _pairwise,
}
"""Each catalog type's grading function (its page under `DOCS`)."""
