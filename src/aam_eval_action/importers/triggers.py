"""Trigger sets: prompts that should, or should not, make an agent load a skill.

Three shapes: a bare list `[{query, should_trigger}]` (e.g. `<skill>/evals/trigger_eval.json`),
evolve's `{triggers: [{query, should_trigger}]}` (`evals/<skill>/triggers.{json,yaml}`) and
waza's `{skill, should_trigger_prompts: [{prompt, reason, confidence}], should_not_trigger_prompts}`
(`trigger_tests.yaml`). Each prompt becomes a case run with every skill of the package installed
and graded by `skill-triggered` alone (no judge): the summary's trigger precision and recall
cover them, per skill.
"""

from __future__ import annotations

from typing import Any

from aam_eval_action.errors import ConfigError
from aam_eval_action.importers.common import Imported, Place, build, case_name, digest, skill_of
from aam_eval_action.layouts.common import Json


def detect(data: Any) -> str | None:
    if isinstance(data, list) and data and all(isinstance(e, dict) and "query" in e for e in data):
        return "trigger-set"
    if isinstance(data, dict) and isinstance(data.get("triggers"), list):
        return "trigger-set"
    if isinstance(data, dict) and ("should_trigger_prompts" in data or "should_not_trigger_prompts" in data):
        return "waza-triggers"
    return None


def read(place: Place, doc: Json) -> list[Imported]:
    data = doc.data
    if isinstance(data, dict) and "triggers" not in data:  # waza
        skill = skill_of(place, doc, data.get("skill"), "skill")
        found = []
        for key, fires in (("should_trigger_prompts", True), ("should_not_trigger_prompts", False)):
            items = data.get(key) or []
            if not isinstance(items, list):
                raise ConfigError(f"{doc.at(key)}: {key}: a list of {{prompt, reason}}")
            found += [_case(place, doc, skill, (key, i), item, "prompt", fires)
                      for i, item in enumerate(items)]
        return found
    items = data["triggers"] if isinstance(data, dict) else data
    prefix: tuple[str, ...] = ("triggers",) if isinstance(data, dict) else ()
    skill = skill_of(place, doc, data.get("skill") if isinstance(data, dict) else None, "skill")
    return [_case(place, doc, skill, (*prefix, i), item, "query", None) for i, item in enumerate(items)]


def _case(place: Place, doc: Json, skill: str, loc: tuple[str | int, ...], item: Any, key: str,
          fires: bool | None) -> Imported:
    if not isinstance(item, dict) or not isinstance(item.get(key), str) or not item[key].strip():
        raise ConfigError(f"{doc.at(*loc)}: an entry needs a non-empty `{key}`")
    if fires is None:
        fires = item.get("should_trigger")
        if not isinstance(fires, bool):
            raise ConfigError(f"{doc.at(*loc, 'should_trigger')}: should_trigger: true or false")
    prompt = item[key]
    why = item.get("reason")
    fields = {
        "name": case_name(skill, "fires" if fires else "quiet", digest(prompt)),
        "description": why if isinstance(why, str) else None,
        "target": f"skill:{skill}",
        "input": {"prompt": prompt},
        "expected": {"skill-triggered": fires},
        "install-all-skills": True,
    }
    case = build(doc, loc, fields).imported_from(place.root / place.folder)
    return Imported(case, doc.line(*loc))
