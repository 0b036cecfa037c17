"""A Vally stimulus's limits: its durations, its behavioural constraints (each graded as the
catalog grader that checks it) and what the executor it names leaves unhonoured."""

from __future__ import annotations

import re
from typing import Any

from aam_eval_action.errors import ConfigError
from aam_eval_action.layouts.common import Json
from aam_eval_action.vally.grader_model import VallyGrader

CONSTRAINT_KEYS = (
    "max_turns",
    "max_tokens",
    "max_duration",
    "expect_tools",
    "reject_tools",
    "expect_skills",
    "reject_skills",
    "max_agent_duration",
)
"""`max_agent_duration`: the agent's own time (no page of Vally's documents it; Vally's executor
options carry it as `maxAgentDurationMs`, and suites pinned to 0.14 and 0.16 lint with it)."""
EXECUTORS = ("copilot-sdk", "mock")
_DURATION = re.compile(r"(?:\d+(?:\.\d+)?(?:ms|s|m|h))+")
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def duration(value: Any, where: str) -> float:
    """Seconds of a Vally duration; a bare number is refused, as since 0.4."""
    match = _DURATION.fullmatch(value.strip()) if isinstance(value, str) else None
    if match is None:
        raise ConfigError(
            f"{where}: {value!r}: a duration needs a unit (ms, s, m, h), e.g. 30s or 5m; "
            "bare numbers are refused since Vally 0.4"
        )
    return sum(float(n) * _UNITS[unit] for n, unit in _PART.findall(value))


CONSTRAINT_GRADERS: dict[str, tuple[str, str]] = {
    "max_turns": ("turn-count", "max"),
    "max_tokens": ("token-budget", "max"),
    "max_duration": ("wall-time", "max"),
    "expect_tools": ("tool-calls", "required"),
    "reject_tools": ("tool-calls", "disallowed"),
    "expect_skills": ("skill-invocation", "required"),
    "reject_skills": ("skill-invocation", "disallowed"),
}
"""Each constraint as the catalog grader that checks it (Vally grades its behavioural
constraints; 0.15 dropped their grader aliases for the canonical constraint names)."""


def executor_notes(executor: Any) -> dict[str, str]:
    """What the executor a stimulus names leaves unhonoured: a plugin's executor (Vally runs it
    with `--executor-plugin`) is not run here, the engine's built-in one is; a provider block
    (0.13, #835: bring your own endpoint and key) is not followed, as no repository chooses
    where a key goes."""
    name = executor.get("name") if isinstance(executor, dict) else executor
    notes: dict[str, str] = {}
    if isinstance(name, str) and name not in EXECUTORS:
        notes["defaults.executor"] = (f"executor {name!r} comes from an --executor-plugin: not run here; "
                                      "the stimulus runs on the engine's built-in executor")
    config = executor.get("config") if isinstance(executor, dict) else None
    if isinstance(config, dict) and "provider" in config:
        notes["defaults.executor.config.provider"] = ("a provider of the eval's own is not followed: the "
                                                      "run's engine, model and keys are used")
    elif isinstance(config, dict) and config:
        notes["defaults.executor.config"] = "the executor's options are not honoured here"
    return notes


def constraints(
    doc: Json, raw: Any, where: tuple[str | int, ...], scoring: tuple[dict[str, float], float | None],
) -> tuple[int | None, float | None, list[VallyGrader]]:
    """(max_turns, max_duration in seconds, a grader per constraint): the CLI's own turn limit
    where it has one, the session's timeout, and each constraint graded as its catalog grader
    (`constraint-<name>`, weighted by that grader's type)."""
    if raw is None:
        return None, None, []
    if not isinstance(raw, dict):
        raise ConfigError(
            f"{doc.at(*where)}: constraints: a mapping (max_turns, max_tokens, max_duration, expect_tools)"
        )
    turns, seconds = None, None
    graders: list[VallyGrader] = []
    for k, v in raw.items():
        if k not in CONSTRAINT_KEYS:
            raise ConfigError(
                f"{doc.at(*where, k)}: unknown constraint {k!r}; constraints are {', '.join(CONSTRAINT_KEYS)}"
            )
        if k in ("max_duration", "max_agent_duration"):
            given = duration(v, doc.at(*where, k))
            seconds = given if seconds is None else min(seconds, given)
            if k == "max_agent_duration":
                continue  # the session's timeout: no catalog grader checks it
        elif k in ("max_turns", "max_tokens"):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1 or (k == "max_turns" and v > 200):
                raise ConfigError(f"{doc.at(*where, k)}: {k}: a whole number of at least 1")
            turns = v if k == "max_turns" else turns
        elif not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
            raise ConfigError(f"{doc.at(*where, k)}: {k}: a list of names")
        kind, key = CONSTRAINT_GRADERS[k]
        value = [f"^{re.escape(x)}$" for x in v] if kind == "tool-calls" else v
        graders.append(VallyGrader(type=kind, name=f"constraint-{k.replace('_', '-')}",
                                   weight=scoring[0].get(kind, 1.0), options={key: value},
                                   threshold=scoring[1]))
    return turns, seconds, graders
