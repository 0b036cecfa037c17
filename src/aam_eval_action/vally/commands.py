"""Vally's `run-command` and `program` graders: a command run in a fresh copy of the finished
workspace."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aam_eval_action.engines.process import Completed, run_process
from aam_eval_action.pipeline import workspace
from aam_eval_action.pipeline.checks import Check
from aam_eval_action.pipeline.finished import HASH_ONLY, SYSTEM_PATH, inside, no_network_prefix
from aam_eval_action.pipeline.plugin_eval import RunInputs
from aam_eval_action.session import TOOL_RESULT_CAP, ToolCall, cap
from aam_eval_action.vally.grader_kit import (
    NotGraded,
    Refused,
    diff_text,
    js_regex,
    option,
    parse_duration,
    result,
    strings,
    view,
)
from aam_eval_action.vally.grader_model import VallyGrader

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
        raise Refused(f"sub_path {sub_path!r} leaves the workspace")
    if not cwd.is_dir():
        raise Refused(f"sub_path {sub_path!r} is not a folder of the finished workspace")
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
    EVALUATE_* variables and the input file (beside the workspace, not in it). A command that
    cannot start fails the grader with why."""
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
        return run_process([*no_network_prefix(run.network), *argv], cwd=cwd, env=env, timeout=timeout)
    except OSError as exc:
        raise Refused(f"could not run {argv[0]}: {exc}") from None
    finally:
        ws.cleanup()


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


def grade_run_command(grader: VallyGrader, run: RunInputs) -> Check:
    """`command` through /bin/sh (or exec'd with `args`), passing when the exit code is
    `expected_exit_code` (0) and every `stdout_contains`, `stderr_contains`, `stdout_matches`,
    `stdout_not_matches` holds (each a string or a list, case-sensitive); `sub_path`, `timeout`
    (30s), `env` merged over the run's command environment.
    (https://microsoft.github.io/vally/reference/graders/run-command/, 0.17)"""
    if run.finished is None:
        raise NotGraded("no finished workspace to run the command in")
    o = grader.options
    command, args = str(option(grader, "command")), o.get("args")
    argv = [command, *map(str, args)] if isinstance(args, list) else ["/bin/sh", "-c", command]
    timeout = parse_duration(o.get("timeout", "30s"))
    expected = int(o.get("expected_exit_code", 0))
    matches = [(js_regex(p), p) for p in strings(o.get("stdout_matches"))]
    not_matches = [(js_regex(p), p) for p in strings(o.get("stdout_not_matches"))]
    done = _execute(grader, run, argv, timeout)
    out, err = done.stdout, done.stderr
    problems = (
        [f"timed out after {timeout:g}s"]
        if done.timed_out
        else ([f"exit code {done.exit_code} (expected {expected})"] if done.exit_code != expected else [])
    )
    problems += [f"stdout lacks '{s}'" for s in strings(o.get("stdout_contains")) if s not in out]
    problems += [f"stderr lacks '{s}'" for s in strings(o.get("stderr_contains")) if s not in err]
    problems += [f"stdout does not match /{p}/" for rx, p in matches if not rx.search(out)]
    problems += [f"stdout matches /{p}/ (expected no match)" for rx, p in not_matches if rx.search(out)]
    if not problems:
        return result(grader, True, f"exit code {done.exit_code} (expected {expected}); every check held")
    output = cap((out + err).strip(), TOOL_RESULT_CAP)
    detail = "; ".join(problems) + (f"; output: {output}" if output else "") + _hash_only_note(run)
    return result(grader, False, detail)


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
    session = view(grader, run.session)
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


def grade_program(grader: VallyGrader, run: RunInputs) -> Check:
    """`program` (with `args`; through the shell with `shell: true`) in the workspace (or `sub_path`),
    given EVALUATE_WORKSPACE and EVALUATE_GRADER_INPUT; `timeout` 60s. Nothing on stdout: exit 0
    passes (score 1), else fails (0). A GraderResult JSON object on stdout: its `score` (in [0, 1])
    and `evidence`; its `passed`, or, not given, the score reaching 0.5.
    (https://microsoft.github.io/vally/reference/graders/program/, 0.17)"""
    if run.finished is None:
        raise NotGraded("no finished workspace to run the program in")
    o = grader.options
    clash = [k for k in _env(grader) if k.upper() in RESERVED]
    if clash:
        raise ValueError(f"program: `env` must not set {', '.join(clash)} (Vally sets it)")
    program, args = str(option(grader, "program")), [str(a) for a in o.get("args") or []]
    argv = ["/bin/sh", "-c", " ".join([program, *args])] if o.get("shell") is True else [program, *args]
    timeout = parse_duration(o.get("timeout", "60s"))
    done = _execute(grader, run, argv, timeout, _program_input(grader, run))
    if done.timed_out:
        return result(grader, False, f"timed out after {timeout:g}s")
    printed = done.stdout.strip()
    if not printed:
        why = cap(done.stderr.strip(), TOOL_RESULT_CAP)
        detail = f"exit code {done.exit_code}" + (f"; stderr: {why}" if why and done.exit_code else "")
        return result(grader, done.exit_code == 0, detail)
    return _program_result(grader, printed)


def _program_result(grader: VallyGrader, printed: str) -> Check:
    try:
        value = json.loads(printed)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        why = f"the program's stdout is not a GraderResult JSON object: {cap(printed, 300)}"
        return result(grader, False, why)
    score, passed = value.get("score"), value.get("passed")
    if score is None and isinstance(passed, bool):
        score = float(passed)
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0 <= score <= 1:
        return result(grader, False, f"the program's score must be a number in [0, 1], not {score!r}")
    if passed is not None and not isinstance(passed, bool):
        return result(grader, False, f"the program's `passed` must be true or false, not {passed!r}")
    verdict = passed if isinstance(passed, bool) else score >= 0.5
    evidence = value.get("evidence")
    detail = str(evidence) if evidence not in (None, "") else f"the program's score: {score:g}"
    return result(grader, verdict, detail, float(score))
