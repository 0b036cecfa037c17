"""openai/skills' `<skill>/evaluations/*.json`: `{name, skills, query, context, expected_behavior:
[...], success_criteria: [...]}`. The query (after its context) is the prompt; the expected
behaviour and the success criteria are the judge's."""

from __future__ import annotations

from typing import Any

from aam_eval_action.errors import ConfigError
from aam_eval_action.importers.common import Imported, Place, build, case_name, criteria, skill_of
from aam_eval_action.layouts.common import Json


def detect(data: Any) -> str | None:
    if isinstance(data, dict) and isinstance(data.get("query"), str) and (
            "expected_behavior" in data or "success_criteria" in data):
        return "openai-skills"
    return None


def read(place: Place, doc: Json) -> list[Imported]:
    data = doc.data
    skills = data.get("skills")
    named = skills[0] if isinstance(skills, list) and skills else skills
    skill = skill_of(place, doc, named, "skills")
    context = data.get("context")
    prompt = data["query"]
    if isinstance(context, str) and context.strip():
        prompt = f"{context.strip()}\n\n{prompt}"
    text = criteria(("Expected behaviour:", data.get("expected_behavior")),
                    ("Success criteria:", data.get("success_criteria")))
    if text is None:
        raise ConfigError(f"{doc.at('expected_behavior')}: expected_behavior or success_criteria must list "
                          "what to judge")
    stem = doc.rel.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    fields = {
        "name": case_name(skill, data.get("name") if isinstance(data.get("name"), str) else stem),
        "target": f"skill:{skill}",
        "input": {"prompt": prompt},
        "judge": {"criteria": text},
    }
    case = build(doc, (), fields).imported_from(place.root / place.folder)
    return [Imported(case, 1)]
