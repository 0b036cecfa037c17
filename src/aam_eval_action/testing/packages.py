"""Build real AAM packages on disk for tests and benchmarks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from aam_eval_action.engines.registry import DEFAULT_ENGINE


def write_package(
    root: Path,
    cases: list[dict[str, Any]],
    config: dict[str, Any] | None = None,
    files: dict[str, str] | None = None,
) -> Path:
    """A package with a manifest, eval-config, case files (one per case) and extra files."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "package.agent.json").write_text(json.dumps({"name": "@test/pkg", "version": "0.1.0"}))
    evals = root / "evals"
    (evals / "cases").mkdir(parents=True, exist_ok=True)
    cfg = {"version": 1, "engine": DEFAULT_ENGINE, "timeout": 60, **(config or {})}
    (evals / "eval-config.json").write_text(json.dumps(cfg, indent=2))
    for i, case in enumerate(cases):
        path = evals / "cases" / f"{i:04d}-{case['name']}.yaml"
        path.write_text(yaml.safe_dump(case, sort_keys=False))
    for rel, text in (files or {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def simple_case(name: str, **extra: Any) -> dict[str, Any]:
    case: dict[str, Any] = {
        "name": name,
        "input": {"prompt": f"Do the task for {name}."},
        "judge": {"criteria": f"The agent completed the task for {name}."},
    }
    case.update(extra)
    return case


def record_sessions(
    package: Path, outputs: dict[str, str], engine: str = DEFAULT_ENGINE,
    fired: dict[str, list[list[str] | None]] | None = None,
) -> None:
    """Write agent cassettes for cases as if their sessions had been recorded live.

    Uses the project's own fingerprint and cassette code, so a replay finds them valid.
    `fired`: per case, one attempt per entry, the skills that attempt loaded (as `Skill` calls),
    or None for an attempt whose session errored.
    """
    from aam_eval_action.loader import load_package
    from aam_eval_action.replay import agent_cassette as cassette
    from aam_eval_action.replay.fingerprint import agent_fingerprint
    from aam_eval_action.session import Session, ToolCall
    from aam_eval_action.settings import Overrides, resolve

    loaded = load_package(package)
    settings = resolve(loaded, Overrides(engine=engine))
    for lc in loaded.cases:
        if lc.case.name not in outputs:
            continue
        fp = agent_fingerprint(loaded.layout, lc.case, loaded.config, engine, settings.model)
        runs = (fired or {}).get(lc.case.name) or [[]]
        attempts = [
            Session(
                engine=engine, model_provider="anthropic", model=settings.model,
                runtime_version="test", session_id=f"sess-{lc.case.name}",
                output=outputs[lc.case.name], exit_code=0 if skills is not None else 1,
                duration_seconds=1.0, is_error=skills is None,
                error=None if skills is not None else "the agent session failed: API error 500",
                tool_calls=[ToolCall(name="Skill", input={"skill": name}) for name in skills or []],
            )
            for skills in runs
        ]
        cassette.save(
            cassette.session_path(settings.cassettes, lc.case.name, engine),
            cassette.AgentCassette(
                case=lc.case.name, engine=engine, recorded_at="2026-01-01T00:00:00Z",
                fingerprint=cassette.FingerprintRecord(digest=fp.digest, inputs=fp.inputs),
                attempts=attempts,
            ),
            checkout=None,
        )
