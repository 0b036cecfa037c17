"""Candidates: the three sets, the proposer's request, the rule-made candidates and the lint.

The proposer sees the train failures only: prompts the skill missed, and prompts it took from a
sibling (with which sibling should have had it and that sibling's description). A candidate is
linted before anything is spent on it: its length within every engine's cap and what it takes of
the listing budget, no five-word run copied from a train prompt, no unknown skill named, no
catch-all wording.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from aam_eval_action.catalog import Skill, predict
from aam_eval_action.model_calls import Structured

SETS = ("train", "select", "test")
SPLIT_TAGS = {
    "split:train": "train",
    "split:select": "select",
    "split:selection": "select",
    "split:validation": "select",
    "split:test": "test",
}
SEED = "aam-eval-tune-1"
TOOL = "propose_descriptions"
FORMAT = "proposed_descriptions"
MAX_TOKENS = 4096
MAX_LENGTH = 1024
"""Copilot CLI does not load a skill whose description is longer; Codex cuts it."""
CATCH_ALL = (
    r"\b(any|every|all)\s+(kind of\s+)?(tasks?|requests?|questions?|prompts?|work)\b",
    r"\balways\s+use\b",
    r"\buse\s+(this|it)\s+(for\s+)?(everything|anything)\b",
    r"\banything\b",
    r"\bwhenever\s+the\s+user\s+asks\b",
)
SKILL_NAME = re.compile(r"`?\b([a-z0-9]+(?:-[a-z0-9]+)+)\b`?")


@dataclass(frozen=True)
class Prompt:
    """A trigger case as tuning sees it."""

    name: str
    """The case's name as reported (`<plugin>/<case>` in a repository of plugins)."""
    case: str
    """The case's own name."""
    text: str
    expected: str
    """The skill it belongs to, or `none`."""
    split: str


def split(prompts: list[tuple[str, str, str, str, str | None]]) -> tuple[list[Prompt], str | None, bool]:
    """(name, case, prompt, expected, split tag) → the prompts with their set, a note when a
    split was made, and whether it is one to store. No split: one is made, stratified by the skill
    each prompt belongs to, ordered by a fixed seed's hash of its name, half to train, a quarter
    each to selection and test (to store). A train and test split with no selection (as `init`
    writes it): the selection set is carved from train the same way, a third of each skill's train
    prompts, made again on every run (nothing to store); the test prompts stay as tagged."""
    if any(tag for *_, tag in prompts):
        tagged = [Prompt(n, c, t, e, tag or "train") for n, c, t, e, tag in prompts]
        if any(p.split == "select" for p in tagged) or sum(p.split == "train" for p in tagged) < 2:
            return tagged, None, False
        return _carve_selection(tagged)
    out: list[Prompt] = []
    strata: dict[str, list[tuple[str, str, str, str, str | None]]] = {}
    for item in prompts:
        strata.setdefault(item[3], []).append(item)
    for _, items in sorted(strata.items()):
        items.sort(key=lambda i: hashlib.sha256(f"{SEED}\0{i[1]}".encode()).hexdigest())
        n = len(items)
        test = max(1, round(n / 4)) if n >= 3 else (1 if n == 2 else 0)
        select = max(1, round(n / 4)) if n >= 3 else 0
        for k, (name, case, text, expected, _) in enumerate(items):
            which = "test" if k < test else "select" if k < test + select else "train"
            out.append(Prompt(name, case, text, expected, which))
    counts = {s: sum(p.split == s for p in out) for s in SETS}
    note = (
        f"the suite has no split: made one, stratified by the skill each prompt belongs to (seed {SEED}): "
        f"train {counts['train']}, selection {counts['select']}, test {counts['test']}"
    )
    return sorted(out, key=lambda p: p.name), note, True


def _carve_selection(tagged: list[Prompt]) -> tuple[list[Prompt], str, bool]:
    """A train + test split's selection set: a third of each skill's train prompts (at least one
    where a skill has two or more), by the seed's hash of the case name."""
    strata: dict[str, list[Prompt]] = {}
    for p in tagged:
        if p.split == "train":
            strata.setdefault(p.expected, []).append(p)
    chosen: set[str] = set()
    for _, items in sorted(strata.items()):
        items.sort(key=lambda p: hashlib.sha256(f"{SEED}\0{p.case}".encode()).hexdigest())
        n = len(items)
        take = max(1, round(n / 3)) if n >= 2 else 0
        chosen |= {p.name for p in items[:take]}
    if not chosen:  # every skill has one train prompt: take the first by the hash
        first = min((p for p in tagged if p.split == "train"),
                    key=lambda p: hashlib.sha256(f"{SEED}\0{p.case}".encode()).hexdigest())
        chosen = {first.name}
    out = [Prompt(p.name, p.case, p.text, p.expected, "select") if p.name in chosen else p for p in tagged]
    trained = sum(p.split == "train" for p in tagged)
    note = (f"the suite's split has train and test prompts but no selection: {len(chosen)} of its {trained} "
            f"train prompts are the selection set, stratified by skill (seed {SEED}), made the same way on "
            "every run; the test prompts are as tagged")
    return sorted(out, key=lambda p: p.name), note, False


@dataclass
class Candidate:
    """A description put forward, and what became of it."""

    text: str
    source: str
    """`baseline`, `yours` (--candidate), `proposer, round N` or `rule: ...`."""
    rationale: str = ""
    refused: str | None = None
    """Why the lint refused it (nothing was spent on it)."""
    vetoed: str | None = None
    """Why its selection scores ruled it out."""
    scores: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per engine: its numbers on the selection prompts."""

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()[:12]


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def lint(
    candidate: str,
    target: str,
    baseline: str,
    train: list[str],
    skills: dict[str, str],
    engines: list[tuple[str, str]],
) -> str | None:
    """Why a candidate is refused before anything is spent on it; None when it passes."""
    text = candidate.strip()
    if not text:
        return "empty"
    if len(text) > MAX_LENGTH:
        return (
            f"{len(text):,} characters: over {MAX_LENGTH:,}, Copilot CLI would not load the skill and Codex "
            "would cut it"
        )
    mine = words(text)
    runs = {tuple(mine[i : i + 5]) for i in range(len(mine) - 4)}
    base = words(baseline)
    allowed = {tuple(base[i : i + 5]) for i in range(len(base) - 4)}
    for prompt in train:
        theirs = words(prompt)
        for i in range(len(theirs) - 4):
            run = tuple(theirs[i : i + 5])
            if run in runs and run not in allowed:
                return f"copies a train prompt's words ({' '.join(run)!r}): a description must generalise"
    for pattern in CATCH_ALL:
        found = re.search(pattern, text, re.I)
        if found:
            return f"catch-all wording ({found.group(0)!r}): it would take prompts from every sibling"
    for named in SKILL_NAME.findall(text):
        called = rf"\b(use|see|try|prefer)\s+`?{re.escape(named)}(?![\w-])"  # the whole name
        if named not in skills and re.search(called, text, re.I):
            return f"names a skill that is not installed ({named!r})"
    for engine, model in engines:
        before = predict(engine, _with(skills, target, baseline), model)
        after = predict(engine, _with(skills, target, text), model)
        worse = [
            e.skill.name
            for e in after.of("package")
            if e.skill.name != target and _rank(e.shown) > _rank(before.shown(e.skill.name) or "full")
        ]
        if worse:
            return (
                f"its length pushes {', '.join(worse)} out of {engine}'s skill listing at {model} "
                "(shown by name only or cut)"
            )
    return None


def _rank(shown: str) -> int:
    return {"full": 0, "truncated": 1, "name-only": 2, "left-out": 3}.get(shown, 0)


def _with(skills: dict[str, str], target: str, text: str) -> list[Skill]:
    return [Skill(name, text if name == target else about) for name, about in sorted(skills.items())]


def handoffs(target: str, baseline: str, stolen: dict[str, int], skills: dict[str, str]) -> list[Candidate]:
    """Rule-made candidates: for each sibling the skill took prompts from, the baseline with a
    hand-off sentence naming it."""
    out = []
    for sibling, _ in sorted(stolen.items(), key=lambda kv: (-kv[1], kv[0])):
        about = re.split(r"(?<=[.!?])\s", skills.get(sibling, "").strip(), maxsplit=1)[0].rstrip(".!?")
        if len(about) > 100:  # cut at a space: a skill name it mentions stays whole for the lint
            about = about[:101].rsplit(" ", 1)[0]
        text = f"{baseline.rstrip(' .')}. Not for the work of {sibling} ({about}); use {sibling} for that."
        out.append(
            Candidate(
                text,
                f"rule: hand off to {sibling}",
                f"it took {stolen[sibling]} of {sibling}'s train prompts",
            )
        )
    return out


SYSTEM = (
    "You improve the description of one agent skill. An agent picks a skill by reading each "
    "installed skill's name and description; the description must say what the skill does and "
    "when to use it, so that the prompts meant for it reach it and prompts meant for its siblings "
    "do not. You are shown the skill, its siblings, and the training prompts it got wrong. Write "
    "diverse candidate descriptions: each under 1024 characters, in plain words, never copying a "
    "prompt's wording, never naming a skill that is not listed, never claiming every task."
)


def request_text(
    target: str,
    current: str,
    skills: dict[str, str],
    missed: list[str],
    stolen: list[tuple[str, str]],
    count: int,
) -> str:
    siblings = "\n".join(f"- {n}: {d}" for n, d in sorted(skills.items()) if n != target)
    missed_text = "\n".join(f"- {p}" for p in missed) or "- none"
    stolen_text = "\n".join(f"- {p} (belongs to {s}: {skills.get(s, '')})" for p, s in stolen) or "- none"
    return (
        f'<skill name="{target}">\n{current}\n</skill>\n\n<siblings>\n{siblings}\n</siblings>\n\n'
        f"<missed>Prompts meant for {target} that did not reach it:\n{missed_text}\n</missed>\n\n"
        f"<stolen>Prompts meant for a sibling that {target} took:\n{stolen_text}\n</stolen>\n\n"
        f"Propose {count} different descriptions for {target}."
    )


SCHEMA = {
    "type": "object",
    "properties": {
        "candidates": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"description": {"type": "string"}, "rationale": {"type": "string"}},
                "required": ["description", "rationale"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["candidates"],
    "additionalProperties": False,
}


PROPOSE = Structured(SYSTEM, TOOL, "Record the proposed descriptions.", FORMAT, SCHEMA, max_tokens=MAX_TOKENS)
"""The proposer's request (`model_calls.py`)."""


def request_params(provider: str, model: str, text: str) -> dict[str, Any]:
    return PROPOSE.params(provider, model, text)


def proposals(provider: str, body: Any, round_no: int, count: int) -> list[Candidate]:
    """The candidates in a proposer's answer (at most `count`); anything malformed is dropped."""
    data = PROPOSE.answer(provider, body)
    items = data.get("candidates") if isinstance(data, dict) else None
    out = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and isinstance(item.get("description"), str):
            out.append(
                Candidate(
                    " ".join(item["description"].split()),
                    f"proposer, round {round_no}",
                    str(item.get("rationale", ""))[:300],
                )
            )
    return out[:count]
