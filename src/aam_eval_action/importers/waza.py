"""waza suites: `eval.yaml` = `{name, skill, config: {trials_per_task, timeout_seconds, parallel,
model}, graders: [...], tasks: ["tasks/*.yaml"]}`, each task `{id, name, tags, inputs: {prompt,
context, files: [{path}], follow_up_prompts, responder: {model, instructions, max_followups}},
expected: {output_contains, output_contains_any, output_not_contains, outcomes, behavior:
{max_tool_calls, max_response_time_ms}}, graders, checkpoints}`; the suite sits in `<skill>/` or
in `evals/<skill>/`.

A task of several turns stays one: `inputs.follow_up_prompts` (messages sent in order in the
same session, each once the agent has answered) become `input.turns`; `inputs.responder` (a
model that answers the agent's questions as its `instructions` say, at most `max_followups`
times) becomes a simulated user (`input.user`) whose persona is those instructions, with
`max-turns` one more than `max_followups` (the first prompt counts here). The responder's
`model` and the task's per-turn `checkpoints` are listed as not honoured.

`trials_per_task` and `timeout_seconds` become the case's attempts and timeout; the expected
substrings, text graders' regexes and `max_tool_calls` become checks; an `llm` grader's rubric
becomes the judge's criteria; a `code` grader (Python assertions), `max_response_time_ms`, the
suite's `parallel`, `executor` and `model` are listed as not honoured, with why.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from aam_eval_action.errors import ConfigError
from aam_eval_action.importers.common import Imported, Place, build, case_name, criteria, load, skill_of
from aam_eval_action.layouts.common import Json, inside, refuse_link_out

SUITE_KEYS = ("tasks",)
FIXTURE_FOLDERS = ("fixtures", "")
"""Where a task's `files` are looked for, under the suite's folder."""


def detect(data: Any) -> str | None:
    suite = isinstance(data, dict) and isinstance(data.get("tasks"), list)
    return "waza" if suite and ("graders" in data or "config" in data) else None


def read(place: Place, doc: Json) -> list[Imported]:
    suite = doc.data
    skill = skill_of(place, doc, suite.get("skill"), "skill")
    config = suite.get("config") if isinstance(suite.get("config"), dict) else {}
    repeat = _positive_int(config.get("trials_per_task"), doc, "config", "trials_per_task")
    timeout = _positive_int(config.get("timeout_seconds"), doc, "config", "timeout_seconds")
    suite_skips = {f"config.{k}": why for k, why in _SUITE_UNSUPPORTED.items()
                   if config.get(k) not in (None, False)}
    shared = suite.get("graders") or []
    found = []
    for rel in _task_files(place, doc):
        task_doc = load(place.root, rel)
        if not isinstance(task_doc.data, dict):
            raise ConfigError(f"{rel}:1: a waza task is a mapping (id, inputs, expected)")
        found.append(_case(place, doc, task_doc, skill, shared, suite_skips, repeat, timeout))
    return found


_SUITE_UNSUPPORTED = {
    "parallel": "cases run as --jobs says",
    "executor": "the run's engines execute the tasks",
    "model": "the run's model (eval-config or --model) is used",
}


def _positive_int(value: Any, doc: Json, *loc: str) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"{doc.at(*loc)}: {loc[-1]}: a whole number of at least 1")
    return value


def _task_files(place: Place, doc: Json) -> list[str]:
    """The suite's `tasks` globs, matched under its folder, each file inside the repository."""
    found: list[str] = []
    for i, pattern in enumerate(doc.data["tasks"]):
        where = doc.at("tasks", i)
        if not isinstance(pattern, str) or not pattern.strip():
            raise ConfigError(f"{where}: a task file or glob such as tasks/*.yaml")
        inside(place.root, place.folder, pattern.replace("*", "x"), where, within=place.folder)
        base = place.root / place.folder if place.folder else place.root
        for path in sorted(base.glob(pattern)):
            refuse_link_out(place.root, path)
            if path.is_file():
                found.append(path.relative_to(place.root).as_posix())
    return list(dict.fromkeys(found))


def _case(place: Place, suite: Json, task: Json, skill: str, shared: Any, suite_skips: dict[str, str],
          repeat: int | None, timeout: int | None) -> Imported:
    data = task.data
    inputs = data.get("inputs") if isinstance(data.get("inputs"), dict) else {}
    prompt = inputs.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise ConfigError(f"{task.at('inputs', 'prompt')}: inputs.prompt: a non-empty text is required")
    skipped = dict(suite_skips)
    expected, judged = _expected(data.get("expected"), task, skipped)
    for source, graders in (("suite", shared), ("task", data.get("graders") or [])):
        _graders(graders, source, expected, judged, skipped)
    if isinstance(inputs.get("context"), dict) and inputs["context"]:
        skipped["inputs.context"] = "waza's task metadata, not part of the prompt: not given to the agent"
    files, root = _files(place, task, inputs.get("files"))
    text = criteria(("Each of these must hold:", judged))
    ident = data.get("id", Path(task.rel).stem)
    tags = [str(t) for t in data.get("tags") or [] if isinstance(t, str | int)]
    given: dict[str, Any] = {"prompt": prompt, "files": files, **_turns(inputs, task, skipped)}
    if data.get("checkpoints"):
        skipped["checkpoints"] = ("per-turn graders are not mapped: write them as the turns' own checks "
                                  "(input.turns[].expected)")
    fields = {
        "name": case_name(skill, ident),
        "description": data["name"] if isinstance(data.get("name"), str) else None,
        "target": f"skill:{skill}", "input": given,
        "expected": expected, "judge": {"criteria": text} if text else None, "tags": tags,
        "repeat": repeat, "timeout": timeout,
    }
    case = build(task, (), fields).imported_from(place.root / root)
    return Imported(case, 1, skipped, file=task.rel)


USER_GOAL = "Get done what your first message asked for, the way the persona says."
MOST_TURNS = 50


def _turns(inputs: dict[str, Any], task: Json, skipped: dict[str, str]) -> dict[str, Any]:
    """A task's later turns: its follow-up prompts (`turns`), or its responder (`user`)."""
    follow, responder = inputs.get("follow_up_prompts"), inputs.get("responder")
    if follow and responder:
        raise ConfigError(f"{task.at('inputs')}: follow_up_prompts and responder exclude each other; "
                          "keep one")
    if follow:
        if not isinstance(follow, list) or not all(isinstance(m, str) and m.strip() for m in follow):
            raise ConfigError(f"{task.at('inputs', 'follow_up_prompts')}: follow_up_prompts: a list of "
                              "non-empty messages")
        return {"turns": list(follow)}
    if responder is None:
        return {}
    if not isinstance(responder, dict):
        raise ConfigError(f"{task.at('inputs', 'responder')}: responder: a mapping (instructions, "
                          "max_followups)")
    instructions = responder.get("instructions")
    if not isinstance(instructions, str) or not instructions.strip():
        raise ConfigError(f"{task.at('inputs', 'responder', 'instructions')}: instructions: a non-empty "
                          "text is required")
    most = responder.get("max_followups")
    if not isinstance(most, int) or isinstance(most, bool) or most < 1:
        raise ConfigError(f"{task.at('inputs', 'responder', 'max_followups')}: max_followups: a whole "
                          "number of at least 1")
    if responder.get("model"):
        skipped["inputs.responder.model"] = ("the simulated user's model is eval-config `user.model` "
                                             "(a Claude or GPT model)")
    return {"user": {"persona": instructions.strip(), "goal": USER_GOAL,
                     "max-turns": min(most + 1, MOST_TURNS)}}


def _expected(value: Any, task: Json, skipped: dict[str, str]) -> tuple[dict[str, Any], list[str]]:
    expected: dict[str, Any] = {}
    judged: list[str] = []
    if not isinstance(value, dict):
        return expected, judged
    if value.get("output_contains"):
        expected["contains"] = [str(s) for s in _list(value["output_contains"])]
    if value.get("output_not_contains"):
        expected["not-contains"] = [str(s) for s in _list(value["output_not_contains"])]
    if value.get("output_contains_any"):
        expected["regex"] = ["|".join(re.escape(str(s)) for s in _list(value["output_contains_any"]))]
    for i, outcome in enumerate(_list(value.get("outcomes"))):
        kind = outcome.get("type") if isinstance(outcome, dict) else outcome
        if kind != "task_completed":  # completing without an error is every case's first check
            skipped[f"outcomes[{i}]"] = f"outcome {kind!r} has no counterpart here"
    behavior: dict[str, Any] = value["behavior"] if isinstance(value.get("behavior"), dict) else {}
    if isinstance(behavior.get("max_tool_calls"), int):
        expected["max-tool-calls"] = behavior["max_tool_calls"]
    if behavior.get("max_response_time_ms") is not None:
        skipped["behavior.max_response_time_ms"] = ("wall time is not graded: a replayed session takes none, "
                                                    "and it varies with the machine")
    return expected, judged


def _graders(
    graders: Any, source: str, expected: dict[str, Any], judged: list[str], skipped: dict[str, str]
) -> None:
    for i, grader in enumerate(_list(graders)):
        if not isinstance(grader, dict):
            continue
        kind = grader.get("type")
        config: dict[str, Any] = grader["config"] if isinstance(grader.get("config"), dict) else {}
        label = f"{source} grader {grader.get('name') or i}"
        rubric = config.get("rubric", config.get("prompt"))
        if kind == "text" and (config.get("regex_match") or config.get("regex_not_match")):
            expected.setdefault("regex", []).extend(str(p) for p in _list(config.get("regex_match")))
            expected.setdefault("not-regex", []).extend(str(p) for p in _list(config.get("regex_not_match")))
        elif kind in ("llm", "prompt", "rubric") and isinstance(rubric, str):
            judged.append(rubric)
        elif kind == "code":
            skipped[label] = "a code grader runs Python assertions on the output: not run here"
        else:
            skipped[label] = f"a grader of type {kind!r} has no counterpart here"
    for key in ("regex", "not-regex"):
        if key in expected and not expected[key]:
            del expected[key]


def _files(place: Place, task: Json, value: Any) -> tuple[list[str], str]:
    """Task files `[{path}]`, looked for in the suite's `fixtures/`, then its folder."""
    if not value:
        return [], place.folder
    paths = [v.get("path") if isinstance(v, dict) else v for v in _list(value)]
    if not all(isinstance(p, str) for p in paths):
        raise ConfigError(f"{task.at('inputs', 'files')}: inputs.files: a list of {{path}}")
    suite = place.folder
    for sub in FIXTURE_FOLDERS:
        root = f"{suite}/{sub}".strip("/") if sub else suite
        rels = [inside(place.root, root, p, task.at("inputs", "files", i), within=suite)
                for i, p in enumerate(paths)]
        if all((place.root / r).is_file() for r in rels):
            return [str(Path(r).relative_to(root)) if root else r for r in rels], root
    raise ConfigError(f"{task.at('inputs', 'files')}: inputs.files: {paths[0]!r} not found in "
                      f"{suite or '.'}/fixtures/ nor beside the suite; add it or fix the path")


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [] if value is None else [value]
