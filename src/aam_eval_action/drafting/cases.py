"""A drafted answer checked and turned into case files: pure, so the same answer always gives
the same bytes.

Nothing the model wrote is trusted beyond what is checked here: every citation must be the
cited skill's text verbatim, a prompt may not repeat the skill's description or name it, each
case must validate against the case schema, and each input file must stay inside the workspace.
What fails a check is dropped, with its reason, in the file's header for the reviewer.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from aam_eval_action.drafting.request import letters
from aam_eval_action.drafting.skills import SkillDoc
from aam_eval_action.fsutil import dump_yaml
from aam_eval_action.spec import Case

SHINGLE = 5
"""Words in a row that a prompt may not share with its skill's description."""
TRAIN_SHARE = 0.6
PROMPT_CHARS = 2000
MAX_FILE_CHARS = 20_000


@dataclass
class Drafted:
    """One skill's drafted suite: the cases of each file, their input files and what was dropped."""

    skill: str
    triggers: list[dict[str, Any]] = field(default_factory=list)
    tasks: list[dict[str, Any]] = field(default_factory=list)
    fixtures: dict[str, str] = field(default_factory=dict)
    """Input files of the tasks: path under `evals/fixtures/` → content."""
    dropped: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Draw:
    """What the drafted cases say of where they came from."""

    model: str
    skill: SkillDoc
    siblings: list[SkillDoc]
    want_positives: int
    want_near: int
    want_out: int
    want_tasks: int


def build(answer: dict[str, Any], draw: Draw) -> Drafted:
    """The checked cases of one skill from the model's answer."""
    out = Drafted(draw.skill.name)
    seen: set[str] = set()
    positives = _prompts(answer["positives"], "positive", draw, draw.skill, out, seen)[: draw.want_positives]
    near = _near_misses(answer["near_misses"], draw, out, seen)
    outside = _prompts(answer["out_of_scope"], "out-of-scope", draw, None, out, seen)[: draw.want_out]
    canary = _canary(draw, positives)
    triggers = positives + ([canary] if canary else []) + near + outside
    out.triggers = _split(triggers)
    out.tasks = _tasks(answer["tasks"], draw, out)[: draw.want_tasks]
    return out


def _prompts(
    items: list[Any], kind: str, draw: Draw, cited: SkillDoc | None, out: Drafted, seen: set[str]
) -> list[dict[str, Any]]:
    """The prompts of one kind that pass the checks; `cited`: the skill their citations quote
    (None: out of scope, no citation)."""
    kept = []
    for i, item in enumerate(items, 1):
        why = _prompt_problem(item, draw, cited, seen)
        if why:
            out.dropped.append(f"{kind} {i}: {why}")
            continue
        seen.add(item["prompt"].strip().lower())
        kept.append(_trigger(draw, kind, item["prompt"].strip(), cited, item["cites"] if cited else None))
    return kept


def _prompt_problem(item: Any, draw: Draw, cited: SkillDoc | None, seen: set[str]) -> str | None:
    """Why a drafted prompt is not kept, or None."""
    if not isinstance(item, dict) or not isinstance(item.get("prompt"), str) or not item["prompt"].strip():
        return "no prompt"
    prompt = item["prompt"].strip()
    if len(prompt) > PROMPT_CHARS:
        return f"the prompt is over {PROMPT_CHARS} characters"
    if prompt.lower() in seen:
        return "the same prompt twice"
    if cited is not None:
        cites = item.get("cites")
        if not isinstance(cites, str) or len(cites.split()) < 3:
            return "no citation of at least three words"
        if not cited.quotes(cites):
            return f"its citation is not in {cited.path} verbatim: {_short(cites)}"
    repeated = _repeats(prompt, draw.skill.description)
    if repeated:
        return f"it repeats the description's wording ({repeated!r})"
    if _names(prompt, draw.skill):
        return f"it names {draw.skill.name} (only the canary does)"
    return None


def _repeats(prompt: str, description: str) -> str | None:
    """The first run of SHINGLE description words (fewer for a short one) the prompt repeats."""
    theirs = re.findall(r"[a-z0-9]+", description.lower())
    n = min(SHINGLE, len(theirs))
    if n < 3:
        return None
    mine = re.findall(r"[a-z0-9]+", prompt.lower())
    grams = {tuple(mine[i : i + n]) for i in range(len(mine) - n + 1)}
    return next(
        (
            " ".join(theirs[i : i + n])
            for i in range(len(theirs) - n + 1)
            if tuple(theirs[i : i + n]) in grams
        ),
        None,
    )


def _names(prompt: str, skill: SkillDoc) -> bool:
    low = prompt.lower()
    return any(re.search(r"(?<![\w-])" + re.escape(s.lower()) + r"(?![\w-])", low) for s in skill.masks)


def _near_misses(items: list[Any], draw: Draw, out: Drafted, seen: set[str]) -> list[dict[str, Any]]:
    named = letters(draw.siblings)
    kept: list[dict[str, Any]] = []
    per: dict[str, int] = {}
    for i, item in enumerate(items, 1):
        letter = item.get("sibling") if isinstance(item, dict) else None
        sibling = named.get(letter) if isinstance(letter, str) else None
        if sibling is None:
            out.dropped.append(
                f"near miss {i}: sibling {str(letter)[:20]!r} is not one of {', '.join(named) or 'none'}"
            )
            continue
        if per.get(sibling.name, 0) >= draw.want_near:
            continue
        why = _prompt_problem(item, draw, sibling, seen)
        if why:
            out.dropped.append(f"near miss {i}: {why}")
            continue
        seen.add(item["prompt"].strip().lower())
        per[sibling.name] = per.get(sibling.name, 0) + 1
        kept.append(_trigger(draw, "near-miss", item["prompt"].strip(), sibling, item["cites"]))
    return kept


def _canary(draw: Draw, positives: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A prompt that names the skill outright: if it does not fire, the harness is at fault."""
    if not positives:
        return None
    first = positives[0]["input"]["prompt"]
    prompt = f"Use the {draw.skill.name} skill for this. {first}"
    case = _trigger(draw, "canary", prompt, draw.skill, None)
    case["draft"]["model"] = "template"
    return case


def _trigger(draw: Draw, kind: str, prompt: str, cited: SkillDoc | None, cites: str | None) -> dict[str, Any]:
    skill = draw.skill.name
    expected: dict[str, Any] = {"skill-triggered": kind in ("positive", "canary")}
    if kind == "near-miss" and cited is not None:
        expected["expected-skill"] = cited.name
    elif kind == "out-of-scope":
        expected["expected-skill"] = "none"
    source = cited or draw.skill
    draft: dict[str, Any] = {
        "model": draw.model,
        "skill": source.name,
        "skill-sha256": source.sha256,
        "kind": kind,
    }
    if cites is not None and cited is not None:
        draft["cites"] = " ".join(cites.split())
        line = cited.line_of(cites)
        if line:
            draft["cites-line"] = line
    draft["reviewed"] = False
    return {
        "name": "",
        "description": _describe(kind, skill, expected.get("expected-skill")),
        "target": f"skill:{skill}",
        "input": {"prompt": prompt},
        "expected": expected,
        "install-all-skills": True,
        "tags": ["drafted", "trigger", kind],
        "draft": draft,
    }


def _describe(kind: str, skill: str, sibling: str | None) -> str:
    return {
        "positive": f"Should fire {skill}.",
        "canary": f"Names {skill} outright: if it does not fire, the harness is at fault.",
        "near-miss": f"A near miss of {skill}: belongs to {sibling}.",
        "out-of-scope": "No skill should fire.",
    }[kind]


def _split(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Names by kind, then a fixed, stratified train/test split as tags: within each kind, the
    first 60% by the hash of the prompt are `split:train`, the rest `split:test`."""
    counters: dict[str, int] = {}
    for case in cases:
        kind = case["draft"]["kind"]
        counters[kind] = counters.get(kind, 0) + 1
        case["name"] = case_name(case["target"].removeprefix("skill:"), kind, counters[kind])
    for kind in counters:
        group = sorted(
            (c for c in cases if c["draft"]["kind"] == kind),
            key=lambda c: hashlib.sha256(c["input"]["prompt"].encode()).hexdigest(),
        )
        train = max(1, round(len(group) * TRAIN_SHARE)) if len(group) > 1 else len(group)
        for i, case in enumerate(group):
            case["tags"].append("split:train" if i < train else "split:test")
    return cases


SUFFIX = {"positive": "fires", "canary": "canary", "near-miss": "near", "out-of-scope": "out", "task": "task"}


def case_name(skill: str, kind: str, n: int) -> str:
    """`<skill>-<kind>-<n>`, the skill cut so that the name fits in 64 characters."""
    tail = SUFFIX[kind] if kind == "canary" else f"{SUFFIX[kind]}-{n:02d}"
    base = re.sub(r"[^a-z0-9-]+", "-", skill.lower()).strip("-") or "skill"
    return f"{base[: 63 - len(tail)].rstrip('-')}-{tail}"


def _tasks(items: list[Any], draw: Draw, out: Drafted) -> list[dict[str, Any]]:
    kept: list[dict[str, Any]] = []
    for i, item in enumerate(items, 1):
        try:
            case, files = _task(item, draw, len(kept) + 1)
        except ValueError as exc:
            out.dropped.append(f"task {i}: {exc}")
            continue
        clash = [p for p in files if p in out.fixtures and out.fixtures[p] != files[p]]
        if clash:
            out.dropped.append(f"task {i}: its input file {clash[0]} clashes with another task's")
            continue
        out.fixtures.update(files)
        kept.append(case)
    return kept


def _task(item: Any, draw: Draw, n: int) -> tuple[dict[str, Any], dict[str, str]]:
    """One task case and its input files; ValueError says why it is not kept."""
    if not isinstance(item, dict):
        raise ValueError("not an object")
    why = _prompt_problem(item, draw, draw.skill, set())
    if why:
        raise ValueError(why)
    criteria = item.get("criteria")
    if not isinstance(criteria, str) or not criteria.strip():
        raise ValueError("no judge criteria")
    files = _files(item.get("files"))
    expected = _expected(item.get("expected"))
    checks = sum(len(v) if isinstance(v, list | dict) else 1 for v in expected.values())
    if not 2 <= checks <= 4:
        raise ValueError(f"{checks} deterministic checks; a task has 2 to 4")
    skill = draw.skill
    case: dict[str, Any] = {
        "name": case_name(skill.name, "task", n),
        "description": f"A task for {skill.name}.",
        "target": f"skill:{skill.name}",
        "input": {"prompt": item["prompt"].strip(), **({"workspace-files": sorted(files)} if files else {})},
        "expected": expected,
        "judge": {"criteria": criteria.strip()},
        "tags": ["drafted", "task"],
        "draft": {
            "model": draw.model,
            "skill": skill.name,
            "skill-sha256": skill.sha256,
            "kind": "task",
            "cites": " ".join(item["cites"].split()),
            **({"cites-line": line} if (line := skill.line_of(item["cites"])) else {}),
            "reviewed": False,
        },
    }
    try:
        Case.model_validate(case)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ValueError(f"not a valid case: {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    return case, files


def _files(items: Any) -> dict[str, str]:
    files: dict[str, str] = {}
    for f in items if isinstance(items, list) else []:
        path = f.get("path") if isinstance(f, dict) else None
        content = f.get("content") if isinstance(f, dict) else None
        if not isinstance(path, str) or not isinstance(content, str):
            raise ValueError("an input file without path or content")
        rel = _workspace_path(path)
        if len(content) > MAX_FILE_CHARS:
            raise ValueError(f"input file {rel} is over {MAX_FILE_CHARS} characters")
        files[rel] = content
    return files


def _workspace_path(path: str) -> str:
    """A relative path inside the workspace, or ValueError."""
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    if path.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", path) or ".." in parts or not parts:
        raise ValueError(f"input file {path[:80]!r} is not a relative path inside the workspace")
    if parts[0] in (".git", ".claude", ".codex", ".gemini", ".github", ".agents"):
        raise ValueError(f"input file {path[:80]!r} would write into {parts[0]}/ of the workspace")
    return "/".join(parts)


def _expected(data: Any) -> dict[str, Any]:
    """The checks the model proposed, in the case file's keys (empty ones left out)."""
    if not isinstance(data, dict):
        raise ValueError("no expected checks")
    expected: dict[str, Any] = {}
    contains = [c for c in data.get("contains") or [] if isinstance(c, str) and c.strip()]
    if contains:
        expected["contains"] = contains
    created = [_workspace_path(p) for p in data.get("files_created") or [] if isinstance(p, str)]
    if created:
        expected["files-created"] = created
    within: dict[str, list[str]] = {}
    for f in data.get("file_contains") or []:
        if (
            isinstance(f, dict)
            and isinstance(f.get("path"), str)
            and isinstance(f.get("text"), str)
            and f["text"]
        ):
            within.setdefault(_workspace_path(f["path"]), []).append(f["text"])
    if within:
        expected["file-contains"] = within
    command = data.get("command")
    if isinstance(command, str) and command.strip():
        expected["command"] = command.strip()
    return expected


def _short(text: str) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= 80 else text[:77] + "...")


def file_text(header: list[str], cases: list[dict[str, Any]]) -> str:
    """A case file: its header comments, then the cases as a YAML list."""
    head = "".join(f"# {line}\n" for line in header)
    return head + dump_yaml(cases, sort_keys=False)
