"""Grading a `claude plugin eval` case as that runner grades it (Claude Code 2.1.330's own code,
read from its bundle, and its runs against the scripted model server, are the reference).

Each grader gives passed or not, with that runner's explanation:

* `regex` over its target: `last_message` (the agent's last answer), `files` (the paths of the
  files the run created, one a line, sorted), `mock_calls` (one JSON line per call a mock
  answered; no mock active: failed with why) or `{source: file, path}` (that file at the end of
  the run; missing: "grader threw"); `match` contains, not_contains or count:N (the number of
  matches). The pattern is a JavaScript RegExp with `flags` (`jsregex`): one JavaScript refuses
  fails the grader with "grader threw: Invalid regular expression: …", in that runner's words;
* `tool_used`: the calls of that tool (by its Claude Code name) whose input, as compact JSON,
  `input_match` (a JavaScript RegExp, no flags) finds, counted, and passed when `min` (1 unless
  given) ≤ n ≤ `max`;
* `tool_order`: the first call matching `before` comes before the first matching `after`;
* `file_exists`: a created file matches the glob (`*`, `**`, `**/`, `?`) as `exists` says;
* `llm`: the judge asked three times in that runner's words ("You are grading the output of a
  coding agent against a criterion. …"), a vote PASS when the reply has the word PASS and not
  FAIL, passed on a majority; a focus over 100,000 characters keeps its first 80,000 and its
  last 20,000 around `[…N chars elided…]`; a file focus that is an image (PNG, JPEG, GIF,
  WebP, by its bytes) is sent as the image itself, one that is a PDF, a ZIP or holds a NUL
  byte fails with why, in that runner's words (the record keeps such a file's bytes).

A run's score is the weight of the scored graders that passed over the weight of all scored
ones (0 when none is scored), and the run passes at 1. With both arms, a grader is with-only
(shown, not scored, not run without the plugin) when it says `arm: with-only`, or is `tool_used`
of `Skill` with no `arm`; unless every grader of the case is, and then all are scored. A case's
score is the mean of its runs' scores, its pass rate the share of runs at 1, and it passes when
its score reaches the threshold (1.0 unless set).

The `trace` target is every event the CLI printed, one compact JSON line each (kept for a case
whose graders read it); shown to a judge (`llm` with `focus: trace`, and `baseline`, which asks
whether the run does at least as well as a recorded trajectory), past 24 events the first and
last 12 are kept, and the ids and timings the CLI stamps afresh each run are left out so that a
recorded verdict replays. A run a mock aborted (a call broke its `expect:` guard) scores 0
ungraded (`pipeline/grade.py`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from aam_eval_action import jsregex
from aam_eval_action.engines.registry import DEFAULT_ENGINE, ENGINES
from aam_eval_action.graders import (
    BaselineGrader,
    FileExistsGrader,
    FileTarget,
    LlmGrader,
    PluginGrader,
    RegexGrader,
    Target,
    ToolOrderGrader,
    ToolSide,
    ToolUsedGrader,
)
from aam_eval_action.pipeline.checks import Check
from aam_eval_action.session import Session, ToolCall
from aam_eval_action.tools import CLAUDE_TOOLS, neutral_names

JUDGE_SYSTEM = "You are a strict, terse evaluation judge for coding-agent traces."
VOTES = 3
FOCUS_LIMIT, FOCUS_TAIL = 100_000, 20_000
NO_MOCKS = ("no mock stand-ins were active in this run (no mocks/ directory applies to this case): a "
            "mock_calls grader has nothing to check")


@dataclass
class RunInputs:
    """What the graders read of one finished run."""

    session: Session
    files: dict[str, str | None] = field(default_factory=dict)
    """Every file at the end of the run: path → text."""
    ask: Callable[[str | list[dict[str, Any]]], str] | None = None
    """The judge: the prompt (its text, or text and image blocks) → its reply."""
    engine: str = DEFAULT_ENGINE
    """Whose tool calls these are: another CLI's are matched by the neutral name of the Claude
    Code tool a grader names (`Skill` is its `skill`, `Write` its `write`…)."""
    case_dir: Path | None = None
    """The case's folder: a `baseline` grader's trajectory file is read beside it."""
    calls_with_only: bool = False
    """Every active mock shadows a server of the plugin: a `mock_calls` grader with no `arm` is
    with-only."""
    blobs: dict[str, bytes] = field(default_factory=dict)
    """The bytes of the files a grader looks at that are not text (an image, a PDF…)."""
    votes: Callable[[list[Callable[[], str]]], list[str]] | None = None
    """How a grader's votes are asked: together, as one step of the run (None: one by one)."""
    finished: Any = None
    """The finished workspace (`pipeline.finished.FinishedWorkspace`): a grader that runs a
    command (Vally's `run-command`, `program`) runs it in a fresh copy of it."""
    network: bool = False
    """Whether such a command may reach the network (the case's sandbox)."""
    command_env: dict[str, str] = field(default_factory=dict)
    """Its environment: the runner's PATH and locale, the agent's variables but no key."""


def grade_run(graders: Sequence[PluginGrader], run: RunInputs, arm: str | None = None,
              passthrough: tuple[type[BaseException], ...] = (),
              grade: Callable[[PluginGrader, RunInputs], Check] | None = None) -> list[Check]:
    """Every grader of the case on one run of `arm` (`with`, `without`, or None: one arm). A
    grader that throws fails with why, as there; `passthrough` exceptions (a replay miss, the
    budget) stop the grading instead."""
    def only(grader: PluginGrader) -> bool:
        return grader.with_only(run.calls_with_only)

    all_with_only = all(only(g) for g in graders)
    chosen = [g for g in graders if arm != "without" or all_with_only or not only(g)]
    out = []
    for grader in chosen:
        try:
            result = (grade or grade_one)(grader, run)
        except passthrough:
            raise
        except _Unavailable as exc:
            result = _failed(grader, str(exc))
        except Exception as exc:
            result = _failed(grader, f"grader threw: {exc}")
        if arm is not None and not all_with_only and only(grader):
            result = replace(result, with_only=True, scored=False)
        out.append(result)
    return out


def run_score(results: Sequence[Check]) -> float:
    """The weighted mean of the scored graders' scores (a grader without a score: 1 when it
    passed, else 0); 0 when none is scored."""
    total = sum(r.weight for r in results if r.scored)
    got = sum(r.weight * (r.score if r.score is not None else float(r.passed)) for r in results if r.scored)
    return got / total if total > 0 else 0.0


def case_score(scores: Sequence[float]) -> tuple[float, float]:
    """(score, pass rate) of a case from its runs' scores."""
    if not scores:
        return 0.0, 0.0
    return sum(scores) / len(scores), sum(1 for s in scores if s >= 1) / len(scores)


def outcome(grader: PluginGrader, passed: bool, why: str, **more: Any) -> Check:
    return Check(grader.name, passed, why, type=grader.type, weight=float(grader.weight), **more)


def _failed(grader: PluginGrader, why: str, *, scored: bool = True) -> Check:
    return outcome(grader, False, why, scored=scored)


def grade_one(grader: PluginGrader, run: RunInputs) -> Check:
    """One grader on one run: the grading function of its type."""
    grade: Callable[[Any, RunInputs], Check] = GRADE[type(grader)]
    return grade(grader, run)


def _label(target: Target) -> str:
    return f"file {target.path}" if isinstance(target, FileTarget) else str(target)


def _text(target: Target, run: RunInputs) -> str | None:
    """The text a target names, or None where it is not available here."""
    if isinstance(target, FileTarget):
        content = _file(target, run)
        return content if isinstance(content, str) else content.decode("utf-8", errors="replace")
    if target == "last_message":
        return run.session.output
    if target == "files":
        return "\n".join(created(run.session))
    if target == "trace":
        return "\n".join(_trace(run.session))
    if target == "mock_calls":
        from aam_eval_action.mocks import calls_text

        if run.session.mock_calls is None:
            raise _Unavailable(NO_MOCKS)
        return calls_text(run.session.mock_calls)
    return None


def _file(target: FileTarget, run: RunInputs) -> str | bytes:
    """A focus file at the end of the run: its text, or its bytes when it is not text."""
    path = target.path
    if path not in run.files:
        raise FileNotFoundError(f"focus file {path} does not exist")
    text = run.files[path]
    return text if text is not None else run.blobs.get(path, b"")


IMAGE_TYPES = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"),
               (b"GIF87a", "image/gif"), (b"GIF89a", "image/gif"))


def image_type(data: bytes) -> str | None:
    """The media type of an image the judge can be shown (PNG, JPEG, GIF, WebP), by its bytes."""
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return next((kind for magic, kind in IMAGE_TYPES if data.startswith(magic)), None)


def not_text(data: bytes) -> str | None:
    """Why a file's bytes cannot be shown to a judge as text, in that runner's words; None when
    they can (decoded as UTF-8, an invalid sequence replaced)."""
    if data.startswith(b"%PDF"):
        return "it is a PDF document"
    if data.startswith(b"PK\x03\x04"):
        return "it is a ZIP archive (Office documents such as .pptx/.docx/.xlsx are ZIPs)"
    at = data.find(b"\x00")
    if at < 0:
        return None
    return (f"it contains a NUL byte at offset {at} (binary data, UTF-16 text — save such artifacts as UTF-8 "
            f"— or NUL-separated output; leading bytes: {_leading(data)})")


def _leading(data: bytes) -> str:
    head = data[:24].decode("latin-1")
    shown = "".join(c if " " <= c <= "~" else "." for c in head)
    lower = head.lower()
    if lower.startswith(("<!doctype", "<html")):
        return f'HTML document (starts with "{shown}")'
    if lower.startswith(("<?xml", "<svg")):
        return f'XML/SVG document (starts with "{shown}")'
    if head[:1] in ("{", "["):
        return f'JSON/text (starts with "{shown}")'
    return "unrecognized bytes (hex: " + " ".join(f"{b:02x}" for b in data[:8]) + ")"


NOT_KEPT = "the run's trace was not kept (a session recorded before its graders read it): record it again"
SHOWN_EVENTS = 12
JUDGE_UNSTABLE = frozenset({"session_id", "uuid", "timestamp", "request_id", "total_cost_usd", "memory_paths",
                            "messaging_socket_path", "id", "tool_use_id", "parent_tool_use_id"})
"""What a CLI stamps into its events afresh each run (and any `*_ms` timing), and the ids a
replayed model answer is given: not shown to a judge, whose view of the trace is also key-sorted
(a replayed answer's keys come in another order), so that a recorded verdict replays for a
re-executed session. Found by running one session twice, and re-executing it, and diffing."""


def _trace(session: Session) -> list[str]:
    if session.trace is None:
        raise _Unavailable(NOT_KEPT)
    return session.trace


def _events(lines: Sequence[str]) -> list[Any]:
    out = []
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            out.append(line)
    return out


def _stable(value: Any) -> Any:
    if isinstance(value, dict):
        kept = sorted(k for k in value if k not in JUDGE_UNSTABLE and not k.endswith("_ms"))
        return {k: _stable(value[k]) for k in kept}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def trajectory(events: Sequence[Any]) -> str:
    """A trace as that runner shows it to a judge: every event, one compact JSON line each, or
    past 24 the first and last 12 around `[…N messages elided…]`."""
    lines = [_compact(_stable(e)) for e in events]
    if len(lines) <= 2 * SHOWN_EVENTS:
        return "\n".join(lines)
    hidden = len(lines) - 2 * SHOWN_EVENTS
    return "\n".join([*lines[:SHOWN_EVENTS], f"[…{hidden} messages elided…]", *lines[-SHOWN_EVENTS:]])


class _Unavailable(Exception):
    """A target this run has nothing for: the grader fails with why (not "grader threw")."""


def created(session: Session) -> list[str]:
    """The files the run created: not those its scaffold made before it (that runner's cwdDiff)."""
    staged = set(session.staged)
    return sorted(f.path for f in session.files if f.status == "created" and f.path not in staged)


def _not_here(grader: PluginGrader, what: str) -> Check:
    return _failed(grader, f"not graded here: the {what} target is not kept", scored=False)


def _regex(grader: RegexGrader, run: RunInputs) -> Check:
    target = grader.target
    if target == "trace" and not _native(run.engine):
        return _failed(grader, f"not graded on {run.engine}: the trace is Claude Code's stream-json; this "
                               "engine prints events of its own", scored=False)
    if isinstance(target, FileTarget):
        content = _file(target, run)
        kind = image_type(content) if isinstance(content, bytes) else None
        if kind is not None:
            path = target.path
            hint = f"grade what is visible with an llm grader (focus: {{source: file, path: {path}}})"
            return _failed(grader, f"file {path} is an image ({kind}); a regex grader needs text — {hint}")
    text = _text(target, run)
    if text is None:
        return _not_here(grader, str(target))
    pattern = jsregex.compile(grader.pattern, grader.flags)  # as there: a refusal is "grader threw: …"
    match = grader.match
    if match == "contains":
        passed = pattern.search(text)
        why = f"matched {grader.pattern}" if passed else f"pattern not found in {_label(target)}"
    elif match == "not_contains":
        passed = not pattern.search(text)
        why = "pattern absent as expected" if passed else "pattern found (expected absent)"
    else:
        wanted, found = int(match.removeprefix("count:")), pattern.count(text)
        passed, why = found == wanted, f"found {found} matches (expected {wanted})"
    return outcome(grader, passed, why)


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _native(engine: str) -> bool:
    """Whether the engine's tool names and trace are the ones a grader names (Claude Code's)."""
    return ENGINES[engine].claude_native


def _matches(call: ToolCall, side: ToolSide, engine: str) -> bool:
    tool, input_match = side.tool, side.input_match
    native = _native(engine)
    if native and call.name != tool:
        return False
    if not native and str(tool).startswith("mcp__"):
        if not mcp_call(call.name, str(tool)):
            return False
    elif not native and CLAUDE_TOOLS.get(str(tool)) not in neutral_names(call):
        return False
    # compiled only once a call of the tool is there, as there: a pattern it refuses throws then
    return not input_match or jsregex.compile(str(input_match)).search(_compact(call.input))


def mcp_call(name: str, tool: str) -> bool:
    """Whether another CLI's call `name` is the MCP tool Claude Code names `tool`
    (`mcp__<server>__<tool>`, a plugin's server `plugin_<plugin>_<server>`): Codex calls it
    `mcp__<server>__<tool>`, Copilot CLI `<server>-<tool>`, Gemini CLI `<tool>` (or
    `<server>__<tool>` when two servers share the name)."""
    server, _, bare = tool.removeprefix("mcp__").rpartition("__")
    if name in (tool, bare):
        return True
    prefix = name[: -len(bare)]
    return name.endswith(bare) and any(s and s in prefix for s in (server, server.rsplit("_", 1)[-1]))


def _missing_tool(grader: ToolUsedGrader | ToolOrderGrader, run: RunInputs) -> Check | None:
    """On another engine than Claude Code, a grader naming a Claude Code tool that engine has no
    counterpart of is shown unscored, with why: never failed for a tool that cannot be called."""
    if _native(run.engine):
        return None
    sides = [grader.tool] if isinstance(grader, ToolUsedGrader) else [grader.before.tool, grader.after.tool]
    for tool in sides:
        if tool not in CLAUDE_TOOLS and not tool.startswith("mcp__"):
            return _failed(grader, f"not graded on {run.engine}: it has no tool like Claude Code's {tool}",
                           scored=False)
    return None


def _tool_used(grader: ToolUsedGrader, run: RunInputs) -> Check:
    missing = _missing_tool(grader, run)
    if missing is not None:
        return missing
    side = ToolSide(tool=grader.tool, input_match=grader.input_match)
    n = sum(1 for c in run.session.tool_calls if _matches(c, side, run.engine))
    least, most = grader.least, grader.max
    passed = least <= n and (most is None or n <= most)
    why = f"{grader.tool} called {n}x (expected {least}..{'∞' if most is None else most})"
    return outcome(grader, passed, why)


def _first(run: RunInputs, side: ToolSide) -> int:
    return next((i for i, c in enumerate(run.session.tool_calls) if _matches(c, side, run.engine)), -1)


def _tool_order(grader: ToolOrderGrader, run: RunInputs) -> Check:
    missing = _missing_tool(grader, run)
    if missing is not None:
        return missing
    before, after = grader.before, grader.after
    name = {"before": before.tool, "after": after.tool}
    b, a = _first(run, before), _first(run, after)
    if b == -1:
        return _failed(grader, f'"before" tool {name["before"]} never called')
    if a == -1:
        return _failed(grader, f'"after" tool {name["after"]} never called')
    why = f"{name['before']}@{b} {'precedes' if b < a else 'does NOT precede'} {name['after']}@{a}"
    return outcome(grader, b < a, why)


def glob_pattern(glob: str) -> re.Pattern[str]:
    """That runner's path glob: `**/` any folders (or none), `**` anything, `*` within a folder."""
    out, i = "^", 0
    while i < len(glob):
        c = glob[i]
        if glob.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
            continue
        if glob.startswith("**", i):
            out, i = out + ".*", i + 2
            continue
        out += "[^/]*" if c == "*" else "." if c == "?" else re.escape(c)
        i += 1
    return re.compile(out + "$")


def _file_exists(grader: FileExistsGrader, run: RunInputs) -> Check:
    path, exists = grader.path, grader.exists
    found = any(glob_pattern(path).match(p) for p in created(run.session))
    passed = found == exists
    if passed:
        why = f"{path} {'exists' if exists else 'absent'} as expected"
    else:
        why = f"{path} {'exists' if found else 'missing'} (expected {'present' if exists else 'absent'})"
    return outcome(grader, passed, why)


def elide(text: str) -> str:
    """A focus longer than that runner shows the judge: its head and tail around a marker."""
    if len(text) <= FOCUS_LIMIT:
        return text
    head = FOCUS_LIMIT - FOCUS_TAIL
    return text[:head] + f"\n[…{len(text) - FOCUS_LIMIT} chars elided…]\n" + text[-FOCUS_TAIL:]


def judge_prompt(criteria: str, focus: Target, text: str) -> str:
    return ("You are grading the output of a coding agent against a criterion.\n\n"
            f"Criterion:\n{criteria}\n\n\nAgent output ({_label(focus)}):\n{elide(text)}\n\n\n"
            "Respond with exactly one word: PASS or FAIL.")


def vote(reply: str) -> bool:
    """That runner's `/\bPASS\b/i.test(reply) && !/\bFAIL\b/i.test(reply)`: JavaScript's `\b` and
    `i` (without `u`) are ASCII's, as Python's are with re.ASCII."""
    flags = re.I | re.A
    return re.search(r"\bPASS\b", reply, flags) is not None and re.search(r"\bFAIL\b", reply, flags) is None


def image_prompt(criteria: str, focus: Target, kind: str, data: bytes) -> list[dict[str, Any]]:
    """The judge's prompt for an image focus, as that runner sends it: its words, the image, the
    answer asked for."""
    import base64

    head = ("You are grading the output of a coding agent against a criterion.\n\n"
            f"Criterion:\n{criteria}\n\nAgent output ({_label(focus)}) is the attached image:")
    return [{"type": "text", "text": head},
            {"type": "image", "source": {"type": "base64", "media_type": kind,
                                         "data": base64.b64encode(data).decode("ascii")}},
            {"type": "text", "text": "Respond with exactly one word: PASS or FAIL."}]


def _llm(grader: LlmGrader, run: RunInputs) -> Check:
    focus = grader.focus
    if isinstance(focus, FileTarget):
        content = _file(focus, run)
        data = content if isinstance(content, bytes) else content.encode("utf-8")
        kind = image_type(data)
        if kind is not None:
            voted = _votes(grader, run, image_prompt(grader.criteria, focus, kind, data))
            return replace(voted, detail=voted.detail + " (image)")
        why = not_text(data)
        if why is not None:
            return _failed(grader, f"file {focus.path} cannot be shown to the judge as text — {why}. "
                                   "It is not a supported image either (PNG/JPEG/GIF/WebP), so have the case "
                                   "render it to an image or write its content as a UTF-8 text file, and "
                                   "grade that.")
    text = trajectory(_events(_trace(run.session))) if focus == "trace" else _text(focus, run)
    if text is None:
        return _not_here(grader, str(focus))
    if text == "" and focus in ("files", "mock_calls"):
        text = "(no file changes)" if focus == "files" else "(no mocked tool calls)"
    return _votes(grader, run, judge_prompt(grader.criteria, focus, text))


def _votes(grader: LlmGrader | BaselineGrader, run: RunInputs, prompt: str | list[dict[str, Any]]) -> Check:
    """The judge asked three times; passed on a majority."""
    if run.ask is None:
        raise RuntimeError(f"no judge for an {grader.type} grader")
    ask = run.ask
    asking: list[Callable[[], str]] = [lambda: ask(prompt)] * VOTES
    replies = run.votes(asking) if run.votes is not None else [call() for call in asking]
    votes = tuple(vote(reply) for reply in replies)
    passed = sum(votes) > len(votes) / 2
    why = "judge votes: " + " ".join("PASS" if v else "FAIL" for v in votes)
    return outcome(grader, passed, why, votes=votes)


def baseline_prompt(criteria: str, baseline: str, new: str) -> str:
    return "\n\n".join([
        "You are comparing a NEW coding-agent trajectory against a BASELINE.", f"Criterion:\n{criteria}",
        f"\nBASELINE trajectory:\n{baseline}", f"\nNEW trajectory:\n{new}",
        "\nDoes the NEW trajectory satisfy the criterion at least as well as the BASELINE?",
        "Respond with exactly one word: PASS or FAIL."])


def _baseline(grader: BaselineGrader, run: RunInputs) -> Check:
    """The run's trace against a recorded trajectory (`baseline_file`, JSON lines beside the
    case), three votes as for `llm`."""
    rel = grader.baseline_file
    if run.case_dir is None:
        return _failed(grader, f"baseline file {rel} does not exist")
    path = (run.case_dir / rel).resolve()
    if not path.is_relative_to(run.case_dir.resolve().parent) or not path.is_file():
        return _failed(grader, f"baseline file {rel} does not exist")
    try:
        base = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, ValueError) as exc:
        return _failed(grader, f"failed to read baseline: {exc}")
    new = trajectory(_events(_trace(run.session)))
    return _votes(grader, run, baseline_prompt(grader.criteria, trajectory(base), new))


GRADE: dict[type, Callable[[Any, RunInputs], Check]] = {
    RegexGrader: _regex, ToolUsedGrader: _tool_used, ToolOrderGrader: _tool_order,
    FileExistsGrader: _file_exists, LlmGrader: _llm, BaselineGrader: _baseline,
}
"""Each grader type's grading: a new type is its model in `graders.py` and its function here."""
