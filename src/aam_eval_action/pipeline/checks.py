"""Deterministic checks (seed step 4): run before the judge, on live or replayed output.

The seed's four come first in the seed's order, then the additive ones: regex, not_regex,
files_absent, file_contains, output_json_schema, tool_called, tool_order, skill_triggered and
`command` (the only one that runs anything) last; then the sandbox check.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from aam_eval_action.pipeline.finished import HASH_ONLY, FinishedWorkspace, run_command
from aam_eval_action.session import Session
from aam_eval_action.spec import Expected, Sandbox, trigger_expectation
from aam_eval_action.tools import neutral_names, neutral_sequence, skills_fired


@dataclass(frozen=True)
class Check:
    """One grader's outcome and why: a check of `expected:`, or a `claude plugin eval` grader
    (with its type, its weight, whether it counts toward the score, and the judge's votes)."""

    name: str
    passed: bool
    detail: str = ""
    type: str = ""
    """A `claude plugin eval` grader's type."""
    weight: float = 1.0
    scored: bool = True
    """Counted: a with-only grader in the without arm, or one this engine cannot grade, is not."""
    with_only: bool = False
    votes: tuple[bool, ...] | None = None
    """The judge's votes, when the grader asked it."""
    score: float | None = None
    """A score in [0, 1] beside pass or fail (a Vally grader's; None: 1 when passed, else 0)."""


@dataclass(frozen=True)
class CheckInputs:
    """What the checks read besides the session: the finished workspace, the sandbox, the target."""

    finished: FinishedWorkspace
    sandbox: Sandbox
    target_skill: str | None = None
    command_env: dict[str, str] = field(default_factory=dict)
    """Environment of the `command` check (HOME is set to a fresh directory)."""
    turn_expected: tuple[Expected | None, ...] = ()
    """A conversation's per-turn checks: those of `input.turns`, the second turn's first."""
    simulated_user: bool = False
    """The conversation's user was simulated (it must reach its goal before `max-turns`)."""


def run_checks(expected: Expected, session: Session, inputs: CheckInputs) -> list[Check]:
    """Every configured check, in the seed's order, then the additive ones, then the sandbox check."""
    checks = _seed_checks(expected, session)
    checks += _output_checks(expected, session.output)
    checks += _file_checks(expected, inputs.finished)
    if expected.output_json_schema is not None:
        checks.append(_json_check(expected.output_json_schema, session.output))
    checks += _tool_checks(expected, session, inputs)
    if expected.command is not None:
        done = run_command(inputs.finished, expected.command, inputs.sandbox.network, inputs.command_env)
        checks.append(Check("command", done.passed, done.detail))
    checks += conversation_checks(expected, session, inputs)
    roots = inputs.sandbox.writable_paths
    if roots is not None:
        outside = [f.path for f in session.files if not _writable(f.path, roots)]
        checks.append(Check("sandbox", not outside, _list("written outside writable-paths", outside)))
    return checks


def conversation_checks(expected: Expected, session: Session, inputs: CheckInputs) -> list[Check]:
    """`asked`, `max-turns`, the simulated user's goal, and each turn's own `expected`."""
    checks: list[Check] = []
    turns = [(t.output, t.calls) for t in session.turns] or [(session.output, len(session.tool_calls))]
    if expected.asked is not None:
        checks.append(_asked(expected.asked.pattern, expected.asked.before, turns, session))
    if expected.max_turns is not None:
        ok = len(turns) <= expected.max_turns
        checks.append(Check("max_turns", ok, "" if ok else
                            f"the conversation took {len(turns)} turns, at most {expected.max_turns} "
                            "allowed"))
    if inputs.simulated_user and session.stopped is not None:
        ok = session.stopped != "max-turns"
        checks.append(Check("user_goal", ok, "" if ok else
                            f"the simulated user did not reach its goal in {len(turns)} turns (max-turns)"))
    first = 0
    starts = []
    for _, calls in turns:
        starts.append(first)
        first += calls
    for number, wanted in enumerate(inputs.turn_expected, 2):
        if wanted is None:
            continue
        if number > len(turns):
            checks.append(Check(f"turn {number}", False, f"the conversation ended at turn {len(turns)}"))
            continue
        output, calls = turns[number - 1]
        begin = starts[number - 1]
        view = session.model_copy(update={"output": output,
                                          "tool_calls": session.tool_calls[begin:begin + calls]})
        found = _seed_checks(wanted, view) + _output_checks(wanted, output)
        for check in found + _tool_checks(wanted, view, inputs):
            checks.append(Check(f"turn {number}: {check.name}", check.passed, check.detail))
        if wanted.asked is not None:
            check = _asked(wanted.asked.pattern, wanted.asked.before, [(output, calls)], view)
            checks.append(Check(f"turn {number}: asked", check.passed, check.detail))
    return checks


def _asked(pattern: str, before: Sequence[str], turns: list[tuple[str, int]], session: Session) -> Check:
    """The agent asked something matching `pattern` in one of its messages, none of the `before`
    tools having been called by the end of that turn (loading a skill is not acting: a Codex
    command that reads a SKILL.md is not a `shell` call here)."""
    called = 0
    early = ""
    for number, (output, calls) in enumerate(turns, 1):
        called += calls
        if re.search(pattern, output):
            acts = [c for c in session.tool_calls[:called] if "skill" not in neutral_names(c)]
            done = [t for t in neutral_sequence(acts) if t in before]
            if not done:
                return Check("asked", True)
            early = early or f"it asked at turn {number}, but only after calling {done[0]}"
    return Check("asked", False, early or f"no message of the agent matches {pattern!r}")


def _seed_checks(expected: Expected, session: Session) -> list[Check]:
    checks: list[Check] = []
    if expected.contains:
        missing = [s for s in expected.contains if s not in session.output]
        checks.append(Check("contains", not missing, _list("output lacks", missing)))
    if expected.not_contains:
        found = [s for s in expected.not_contains if s in session.output]
        checks.append(Check("not_contains", not found, _list("output contains", found)))
    if expected.files_created:
        made = {f.path for f in session.files if f.status in ("created", "modified")}
        missing = [p for p in expected.files_created if p not in made]
        checks.append(Check("files_created", not missing, _list("not created", missing)))
    if expected.max_tool_calls is not None:
        calls = len(session.tool_calls)
        checks.append(Check("max_tool_calls", calls <= expected.max_tool_calls,
                            "" if calls <= expected.max_tool_calls else
                            f"{calls} tool calls, at most {expected.max_tool_calls} allowed"))
    if expected.agent_blocked is not None:
        ok = session.hook_blocked == expected.agent_blocked
        detail = "" if ok else (
            "expected agent-blocked=true but no hook blocked the agent"
            if expected.agent_blocked
            else "expected agent-blocked=false but a hook blocked the agent"
        )
        checks.append(Check("agent_blocked", ok, detail))
    return checks


def _output_checks(expected: Expected, output: str) -> list[Check]:
    checks: list[Check] = []
    if expected.regex:
        missing = [p for p in expected.regex if not re.search(p, output)]
        checks.append(Check("regex", not missing, _list("output does not match", missing)))
    if expected.not_regex:
        found = [p for p in expected.not_regex if re.search(p, output)]
        checks.append(Check("not_regex", not found, _list("output matches", found)))
    return checks


def _json_check(schema: dict[str, object], output: str) -> Check:
    from aam_eval_action.json_schema import errors

    try:
        value = json.loads(output)
    except json.JSONDecodeError as exc:
        why = f"output is not JSON ({exc.msg} at {exc.lineno}:{exc.colno})"
        return Check("output_json_schema", False, why)
    problems = errors(value, schema)
    return Check("output_json_schema", not problems, "; ".join(problems[:5]))


def _file_checks(expected: Expected, finished: FinishedWorkspace) -> list[Check]:
    checks: list[Check] = []
    if expected.files_absent:
        present = [p for p in expected.files_absent if p in finished.files]
        checks.append(Check("files_absent", not present, _list("present", present)))
    if expected.file_contains:
        problems = [p for path, needles in expected.file_contains.items()
                    for p in _file_problems(finished, path, needles)]
        checks.append(Check("file_contains", not problems, "; ".join(problems)))
    return checks


def _file_problems(finished: FinishedWorkspace, path: str, needles: list[str]) -> list[str]:
    if path not in finished.files:
        return [f"{path}: no such file"]
    text = finished.files[path]
    if text is None:
        return [f"{path}: {HASH_ONLY}, so its content cannot be checked"]
    return [f"{path}: lacks {n!r}" for n in needles if not _found(n, text)]


def _found(needle: str, text: str) -> bool:
    if len(needle) >= 2 and needle.startswith("/") and needle.endswith("/"):
        return re.search(needle[1:-1], text) is not None
    return needle in text


def _tool_checks(expected: Expected, session: Session, inputs: CheckInputs) -> list[Check]:
    checks: list[Check] = []
    sequence = neutral_sequence(session.tool_calls)
    if expected.tool_called:
        counts = Counter(sequence)
        problems = [
            f"{t.tool} called {counts[t.tool]}x, expected "
            + (f"{t.min}-{t.max}" if t.max is not None else f"at least {t.min}")
            for t in expected.tool_called
            if counts[t.tool] < t.min or (t.max is not None and counts[t.tool] > t.max)
        ]
        checks.append(Check("tool_called", not problems, "; ".join(problems)))
    if expected.tool_order:
        ok = _in_order(expected.tool_order, sequence)
        seen = " → ".join(sequence) or "no tool calls"
        detail = "" if ok else f"expected {' → '.join(expected.tool_order)} in order; saw {seen}"
        checks.append(Check("tool_order", ok, detail))
    should_fire = trigger_expectation(expected)
    if should_fire is not None and inputs.target_skill:
        checks.append(_trigger_check(session, inputs.target_skill, should_fire))
    return checks


def _trigger_check(session: Session, skill: str, should_fire: bool) -> Check:
    fired = skills_fired(session.tool_calls)
    ok = (skill in fired) == should_fire
    seen = ", ".join(fired) or "no skill"
    detail = "" if ok else (f"skill {skill} was {'loaded' if skill in fired else 'not loaded'}, expected "
                            f"skill-triggered: {str(should_fire).lower()} (fired: {seen})")
    return Check("skill_triggered", ok, detail)


def _in_order(wanted: Sequence[str], sequence: Sequence[str]) -> bool:
    """Whether `wanted` is a subsequence of `sequence`."""
    it = iter(sequence)
    return all(any(name == seen for seen in it) for name in wanted)


def _writable(path: str, roots: list[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _list(what: str, items: list[str]) -> str:
    return f"{what}: " + ", ".join(repr(i) for i in items) if items else ""
