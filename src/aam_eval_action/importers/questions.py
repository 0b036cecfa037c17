"""Question sets: `[{id, question, expected_skill, ground_truth, expected_behavior: [...]}]` (or
`{skill, cases: [...]}` around them), a routing eval kept as `<skill>/evals/evals.json` in some
public plugins. The question is the
prompt; the ground truth and the expected behaviour are the judge's; `expected_skill` is the
target (a routing question also checks that the skill fired)."""

from __future__ import annotations

from typing import Any

from aam_eval_action.errors import ConfigError
from aam_eval_action.importers.common import Imported, Place, build, case_name, criteria, digest, skill_of
from aam_eval_action.layouts.common import Json


def _entries(data: Any) -> tuple[list[Any], tuple[str, ...]]:
    if isinstance(data, dict) and isinstance(data.get("cases"), list):
        return data["cases"], ("cases",)
    return (data, ()) if isinstance(data, list) else ([], ())


def detect(data: Any) -> str | None:
    items, _ = _entries(data)
    if items and all(isinstance(e, dict) and "question" in e for e in items) and any(
            "ground_truth" in e or "expected_behavior" in e for e in items):
        return "question-set"
    return None


def read(place: Place, doc: Json) -> list[Imported]:
    items, prefix = _entries(doc.data)
    named = doc.data.get("skill") if isinstance(doc.data, dict) else None
    return [_case(place, doc, (*prefix, i), entry, named) for i, entry in enumerate(items)]


def _case(place: Place, doc: Json, loc: tuple[str | int, ...], entry: dict[str, Any], named: Any) -> Imported:
    question = entry.get("question")
    if not isinstance(question, str) or not question.strip():
        raise ConfigError(f"{doc.at(*loc, 'question')}: question: a non-empty text is required")
    skill = skill_of(place, doc, entry.get("expected_skill") or named, *loc, "expected_skill")
    text = criteria(("What a correct answer does:", entry.get("ground_truth")),
                    ("Expected behaviour:", entry.get("expected_behavior")))
    skipped = {}
    if entry.get("expected_script"):
        skipped["expected_script"] = "which script the agent runs is not checked (no neutral check for it)"
    ident = entry.get("id")
    fields = {
        "name": case_name(skill, ident if ident is not None else digest(question)),
        "target": f"skill:{skill}",
        "input": {"prompt": question},
        "judge": {"criteria": text} if text else None,
    }
    case = build(doc, loc, fields).imported_from(place.root / place.folder)
    return Imported(case, doc.line(*loc), skipped)
