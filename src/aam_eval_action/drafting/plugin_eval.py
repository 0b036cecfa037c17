"""Drafted cases written as `claude plugin eval` reads them: one `evals/<case>/case.yaml` each,
so the suite runs in that runner and here alike (and is graded the same way in both).

- A prompt that should fire the skill: a `tool_used` grader of `Skill` whose input names it
  (`plugin:skill` or the bare name), `min` 1; a near miss or an out-of-scope prompt: the same
  with `min: 0, max: 0`, the must-not-fire form.
- A task: its judge criteria as an `llm` grader; `contains` and `not-contains` as `regex`
  graders on the last message (the text escaped); `files-created` as `file_exists`;
  `file-contains` as `regex` graders on that file. A task that needs input files is not
  written in this form (that runner gives a case no files but by a scaffold script), and is
  said so.

Each file says, in comments and in a `draft:` block that runner drops as an unknown key, who
drafted it from what, and that nobody has reviewed it yet. Nothing is written for the user's
review to skip: `aam-eval init --replay` redrafts the same files from the recording.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from aam_eval_action.drafting.cases import Drafted
from aam_eval_action.drafting.skills import SkillDoc

SCHEMA_VERSION = "1.0"
RUNS = 3
"""That runner's default runs per case."""
TRIGGER_TOOLS = ["Skill", "Read", "Glob", "Grep"]
TASK_TOOLS = ["Skill", "Read", "Glob", "Grep", "Write", "Edit", "Bash"]


def suite_files(evals: Path, skill: SkillDoc, drafted: Drafted, model: str) -> dict[Path, str]:
    """The case files of one skill's drafted suite, by path."""
    head = [
        f"Drafted by `aam-eval init --format claude-plugin-eval` with {model} from {skill.path} "
        f"(sha256 {skill.sha256[:12]}).",
        "Not reviewed yet: read it, fix or delete it, then set `reviewed: true` under `draft`.",
        f"Redraft offline from the recording: aam-eval init --replay --force --format claude-plugin-eval "
        f"--skill {skill.name}",
    ]
    files: dict[Path, str] = {}
    for case in drafted.triggers:
        files[evals / case["name"] / "case.yaml"] = _text(head, _trigger(case, skill.name))
    for case in drafted.tasks:
        if case["input"].get("workspace-files"):
            print(f"{skill.name}: {case['name']} not written as a claude plugin eval case: it needs input "
                  "files, which that runner gives a case only through a scaffold script")
            continue
        files[evals / case["name"] / "case.yaml"] = _text(head, _task(case))
    return files


def _names_skill(name: str) -> str:
    """`input_match` for a Skill call of this skill, by its plugin-qualified or bare name."""
    return '"skill":"(?:[^":]+:)?' + re.escape(name) + '"'


def _common(case: dict[str, Any], tools: list[str]) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION, "name": case["name"], "description": case.get("description"),
        "tags": case.get("tags", []),
        "execution": {"prompt": case["input"]["prompt"], "allowed_tools": tools},
        "runs": RUNS,
    }


def _trigger(case: dict[str, Any], skill: str) -> dict[str, Any]:
    fires = bool(case["expected"].get("skill-triggered"))
    grader: dict[str, Any] = {"name": "fires" if fires else "does-not-fire", "type": "tool_used",
                              "tool": "Skill", "input_match": _names_skill(skill)}
    if not fires:
        grader |= {"min": 0, "max": 0}
    return {**_common(case, TRIGGER_TOOLS), "graders": [grader], "draft": case["draft"]}


def _task(case: dict[str, Any]) -> dict[str, Any]:
    expected = case.get("expected") or {}
    graders: list[dict[str, Any]] = []
    for n, text in enumerate(expected.get("contains") or [], 1):
        graders.append({"name": f"says-{n}", "type": "regex", "pattern": re.escape(text)})
    for n, text in enumerate(expected.get("not-contains") or [], 1):
        graders.append({"name": f"never-says-{n}", "type": "regex", "pattern": re.escape(text),
                        "match": "not_contains"})
    for n, path in enumerate(expected.get("files-created") or [], 1):
        graders.append({"name": f"creates-{n}", "type": "file_exists", "path": path})
    for path, needles in (expected.get("file-contains") or {}).items():
        for n, text in enumerate(needles, 1):
            graders.append({"name": f"{_slug(path)}-has-{n}", "type": "regex", "pattern": re.escape(text),
                            "target": {"source": "file", "path": path}})
    if case.get("judge"):
        graders.append({"name": "judged", "type": "llm", "criteria": case["judge"]["criteria"]})
    return {**_common(case, TASK_TOOLS), "graders": graders, "draft": case["draft"]}


def _slug(path: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", path.lower()).strip("-") or "file"


def _text(head: list[str], case: dict[str, Any]) -> str:
    kept = {k: v for k, v in case.items() if v is not None}
    body = yaml.safe_dump(kept, sort_keys=False, allow_unicode=True, width=100)
    return "".join(f"# {line}\n" for line in head) + body
