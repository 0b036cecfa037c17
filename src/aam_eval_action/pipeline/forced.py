"""The forced arm: a case's skill invoked by name in its first prompt, whatever routing decides,
in the engine's own way (`EngineInfo.invoke_skill`: on Claude Code its slash command, on Codex a
`$` mention, on Gemini CLI an `@file` reference to the installed SKILL.md; each verified to put
the skill's SKILL.md body into the first request). Copilot CLI has no such way under `-p`. A
case that checks its skill does not fire (`skill-triggered: false`, a near miss) is not forced.
The case changes as its prompt does, so its fingerprint and cassettes are its own.
"""

from __future__ import annotations

import dataclasses

from aam_eval_action.engines.registry import ENGINES
from aam_eval_action.errors import AamEvalError
from aam_eval_action.loader import LoadedCase
from aam_eval_action.package import PackageLayout
from aam_eval_action.spec import trigger_expectation


def skill_of(loaded: LoadedCase, layout: PackageLayout) -> str | None:
    """The skill a case exercises: its `skill:` target, else the package's one skill."""
    target = loaded.case.target or ""
    if target.startswith("skill:"):
        return target.removeprefix("skill:")
    skills = sorted(layout.skill_dirs)
    return skills[0] if len(skills) == 1 else None


def forced(loaded: LoadedCase, layout: PackageLayout, engine: str) -> tuple[LoadedCase, str]:
    """The case with its skill invoked in its first prompt, and how; AamEvalError (the case is
    not measured in this arm) when it checks its skill does not fire, names no skill, or the
    engine has no verified way."""
    info = ENGINES[engine]
    skill = skill_of(loaded, layout)
    if trigger_expectation(loaded.case.expected) is False:
        raise AamEvalError("not forced: the case checks that its skill does not fire, which invoking it by "
                           "name would only fail")
    if skill is None:
        raise AamEvalError("not forced: the case names no skill (give it `target: skill:NAME`) and the "
                           f"package has {len(layout.skill_dirs)} skills")
    if not info.invoke_skill:
        why = info.invoke_skill_how or "no way for a prompt to invoke a skill by name was verified"
        raise AamEvalError(f"not forced: {why} on {engine}")
    from aam_eval_action.pipeline.live import loads_as_plugin

    if loads_as_plugin(layout, loaded, engine) and layout.name:
        skill = f"{layout.name}:{skill}"  # as the plugin's skills are listed (`/plugin:skill`)
    fields = {"skill": skill, "skills_dir": info.skills_dir}
    prompt = info.invoke_skill.format(**fields) + loaded.case.input.prompt
    case = loaded.case.model_copy(update={"input": loaded.case.input.model_copy(update={"prompt": prompt})})
    return dataclasses.replace(loaded, case=case), info.invoke_skill_how.format(**fields)
