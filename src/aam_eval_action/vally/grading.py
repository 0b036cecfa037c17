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

import re
from collections.abc import Callable, Sequence
from typing import Any

from aam_eval_action.pipeline.checks import Check
from aam_eval_action.pipeline.finished import HASH_ONLY
from aam_eval_action.pipeline.plugin_eval import RunInputs
from aam_eval_action.session import Session, ToolCall
from aam_eval_action.tools import COPILOT_TOOLS, NEUTRAL_TOOLS, neutral_names, skills_loaded
from aam_eval_action.vally.commands import grade_program, grade_run_command
from aam_eval_action.vally.grader_kit import (
    NotGraded,
    Refused,
    changes,
    compact_json,
    contains,
    diff_text,
    is_negated,
    js_regex,
    maximum,
    option,
    parse_duration,
    result,
    strings,
    turn_answers,
    view,
)
from aam_eval_action.vally.grader_model import VallyGrader
from aam_eval_action.vally.judges import grade_pairwise, grade_panel, grade_prompt


def grade(grader: VallyGrader, run: RunInputs) -> Check:
    """One grader on one run, by its type; ValueError for a type not in the catalog."""
    grading = GRADE.get(grader.type)
    if grading is None:
        raise ValueError(f"{grader.type!r} is not a Vally grader type this project grades")
    try:
        return grading(grader, run)
    except NotGraded as exc:
        return result(grader, False, f"not graded: {exc}", scored=False)
    except Refused as exc:
        return result(grader, False, str(exc))




# --- output, transcript ---


def _output_contains(grader: VallyGrader, run: RunInputs) -> Check:
    """`substring` (or `value`) in the output, both lower-cased unless `case_sensitive`; `negate`
    (output-not-contains) passes when it is absent.
    (https://microsoft.github.io/vally/reference/graders/output-contains/, 0.17)"""
    needle = str(option(grader, "substring", "value"))
    found = contains(view(grader, run.session).output, needle, grader.options.get("case_sensitive") is True)
    detail = f"'{needle}' found in output" if found else f"'{needle}' NOT found in output"
    return result(grader, found != is_negated(grader), detail)


def _output_matches(grader: VallyGrader, run: RunInputs) -> Check:
    """`pattern` tested (unanchored) against the output; `negate`.
    (https://microsoft.github.io/vally/reference/graders/output-matches/, 0.17)"""
    pattern = str(option(grader, "pattern"))
    found = js_regex(pattern).search(view(grader, run.session).output)
    detail = f"Output matches pattern /{pattern}/" if found else f"Output does not match pattern /{pattern}/"
    return result(grader, found != is_negated(grader), detail)


def _transcript(grader: VallyGrader, run: RunInputs) -> Check:
    """transcript-contains (`substring`, `case_sensitive`) or transcript-matches (`pattern`), "any
    assistant message, or one selected turn"; `negate`. Its config table is not in the docs.
    (https://microsoft.github.io/vally/guides/choosing-graders/, 0.17)"""
    test: Callable[[str], bool]
    if grader.type == "transcript-contains":
        needle = str(option(grader, "substring", "value"))
        sensitive = grader.options.get("case_sensitive") is True
        what, test = f"'{needle}'", lambda text: contains(text, needle, sensitive)
    else:
        pattern = str(option(grader, "pattern"))
        what, test = f"/{pattern}/", js_regex(pattern).search
    answers = turn_answers(grader, run.session)
    hits = [label for label, text in answers if test(text)]
    scope = f"the answer of turn {grader.turn}" if grader.turn is not None else "any assistant message"
    detail = f"{what} found in {', '.join(hits)}" if hits else f"{what} NOT found in {scope}"
    return result(grader, bool(hits) != is_negated(grader), detail)


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
    glob = str(option(grader, "path"))
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
    return result(grader, bool(found) != is_negated(grader), detail)


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
        needle = str(option(grader, "value", "substring"))
        what, test = f"'{needle}'", lambda text: needle in text
    else:
        pattern = str(option(grader, "pattern"))
        what, test = f"/{pattern}/", js_regex(pattern).search
    if not found:
        return result(grader, False, _none_match(glob))
    texts = {p: _file_text(run, p) for p in found}
    unread = [p for p, t in texts.items() if t is None]
    hits = [p for p, t in texts.items() if t is not None and test(t)]
    note = f"; not read ({HASH_ONLY}): {_named(unread)}" if unread else ""
    negated = is_negated(grader)
    if hits:
        return result(grader, not negated, f"{what} found in {_named(hits)}" + note)
    detail = f"{what} NOT found in {len(found) - len(unread)} file(s) matching '{glob}'" + note
    return result(grader, negated and not unread, detail)


# --- the diff of the run ---


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
        changed = [path for path, _, _, _ in changes(run)]
        detail = f"{len(changed)} file(s) changed: {_named(changed)}" if changed else "No file changes"
        return result(grader, not changed, detail + note)
    text = diff_text(run)
    if grader.options.get("pattern") is not None:
        pattern = str(grader.options["pattern"])
        found = js_regex(pattern).search(text)
        detail = f"Diff matches pattern /{pattern}/" if found else f"Diff does not match pattern /{pattern}/"
    else:
        needle = str(option(grader, "substring", "value"))
        found = contains(text, needle, grader.options.get("case_sensitive") is True)
        detail = f"'{needle}' found in diff" if found else f"'{needle}' NOT found in diff"
    return result(grader, found != is_negated(grader), detail + note)


# --- the session ---


def _errors(session: Session) -> int:
    """Error events: each failed turn, or the session's own failure."""
    failed = sum(1 for t in session.turns if t.is_error)
    return failed or int(session.is_error or session.error is not None)


def _completed(grader: VallyGrader, run: RunInputs) -> Check:
    """Non-empty output, no error event, the session ended its turn (not killed at the timeout);
    exit-success (legacy) only asks for output.
    (https://microsoft.github.io/vally/reference/graders/completed/, 0.17)"""
    session = view(grader, run.session)
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
    return result(grader, not problems, detail)


def _metric(grader: VallyGrader, run: RunInputs) -> Check:
    """The value does not exceed `max`.
    (https://microsoft.github.io/vally/reference/graders/metric-thresholds/, 0.17)"""
    session = view(grader, run.session)
    kind = grader.type
    if kind == "wall-time":
        limit = parse_duration(option(grader, "max"))
        took = session.duration_seconds
        return result(grader, took <= limit, f"wall time {took:g}s (max {limit:g}s)")
    most = maximum(grader)
    if kind == "token-budget":
        if session.usage is None:
            raise NotGraded("the engine reported no token usage")
        value, what = session.usage.input_tokens + session.usage.output_tokens, "tokens (input + output)"
    elif kind == "error-count":
        value, what = _errors(session), "error(s)"
    elif kind == "turn-count":
        value, what = session.num_turns or max(len(session.turns), 1), "turn(s)"
    else:
        value, what = _counted(grader, session), "tool call(s)"
    return result(grader, value <= most, f"{value} {what} (max {most:g})")


def _counted(grader: VallyGrader, session: Session) -> int:
    """tool-call-count: the calls, or those whose name a `tools` regex matches (0.13)."""
    filters = [js_regex(p) for p in strings(grader.options.get("tools"))]
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
            raise NotGraded(
                f"tool-calls {', '.join(ungraded)}: this project's record keeps neither agent "
                "steps nor write/read kinds"
            )
        self.spec = spec
        self.regexes = {
            k: js_regex(spec[k])
            for k in ("name", "command", "path", "result", "pattern")
            if spec.get(k) is not None
        }
        args = spec.get("args") or {}
        if not isinstance(args, dict):
            raise ValueError(f"{grader.type}: `args` maps argument names to regexes, not {args!r}")
        self.args = {str(k): js_regex(v) for k, v in args.items()}
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
        if "pattern" in rx and not rx["pattern"].search(compact_json(call.input)):
            return False
        return all(k in call.input and v.search(_arg(call.input[k])) for k, v in self.args.items())


def _arg(value: Any) -> str:
    return value if isinstance(value, str) else compact_json(value)


def _entries(grader: VallyGrader, key: str) -> list[_Entry]:
    return [_Entry(raw, grader) for raw in grader.options.get(key) or []]


def _tool_calls(grader: VallyGrader, run: RunInputs) -> Check:
    """Every `required` entry matched by ≥ `min_count` calls (`final`: the last call is one); no
    `disallowed` entry matched; the `sequence` entries matched in call order (a subsequence). A
    call's name is matched as `call_names` says; `command` the shell command argument, `path` a path
    argument, `args` arguments by name, `result` the result text, `pattern` the compact JSON of the
    arguments. (Public suites at 0.13 note that `args` was ignored then; the 0.17 page documents
    it.) (https://microsoft.github.io/vally/reference/graders/tool-calls/, 0.17)"""
    calls = view(grader, run.session).tool_calls
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
    return result(grader, not problems, detail)


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
    required = strings(grader.options.get("required"))
    disallowed = strings(grader.options.get("disallowed"))
    if not (required or disallowed):
        raise ValueError("skill-invocation: set `required` or `disallowed`")
    both = sorted(set(required) & set(disallowed))
    if both:
        raise ValueError(f"A skill cannot appear in both lists: {', '.join(both)}")
    fired = _skills(view(grader, run.session).tool_calls)
    missing = [s for s in required if s not in fired]
    found = [s for s in disallowed if s in fired]
    shown = ", ".join(sorted(fired)) or "none"
    problems = [f"required skill(s) not activated: {', '.join(missing)}"] if missing else []
    problems += [f"disallowed skill(s) activated: {', '.join(found)}"] if found else []
    return result(grader, not problems, "; ".join([*problems, f"activated: {shown}"]))


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
    "run-command": grade_run_command,
    "program": grade_program,
    "prompt": grade_prompt,
    "panel": grade_panel,
    "pairwise": grade_pairwise,
}
"""Each catalog type's grading function (its page under `DOCS`)."""
