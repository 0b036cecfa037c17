"""`aam-eval export`: recorded sessions as ATIF trajectories and OpenTelemetry traces.

From the cassettes alone, offline: each case's recorded session on each engine and model of
the run (its first attempt), graded by replaying the cassettes (or as a given report says),
redacted like everything this tool writes. A cassette that cannot be read is reported and the
other cases are exported.
"""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path
from typing import Any

from aam_eval_action.errors import EXIT_FAILED, EXIT_OK, UsageError
from aam_eval_action.fsutil import atomic_write, runner_checkout
from aam_eval_action.settings import Overrides, resolve_matrix, runner_environment

_UNSAFE = re.compile(r"[^A-Za-z0-9._@-]")


def export_plugin_eval(package: Path, report: Path | None, output: Path | None) -> int:
    """The report's `claude plugin eval` cases as that runner's `aggregate-result.json`."""
    import json

    from aam_eval_action.export.plugin_eval import aggregate
    from aam_eval_action.report import load_report

    if report is None or output is None:
        raise UsageError("--format claude-plugin-eval needs --report REPORT (one of ours) and -o FILE "
                         "(the aggregate-result.json to write)")
    loaded = load_report(report)
    root = package.resolve() if (package / "evals").is_dir() else None
    found = aggregate(loaded, root)
    atomic_write(output, json.dumps(found, indent=2, ensure_ascii=False) + "\n",
                 runner_checkout(runner_environment()))
    print(f"wrote {output}: {len(found['cases'])} claude plugin eval case(s) of {len(loaded.cases)}")
    return EXIT_OK


def export(
    package: Path, cases: list[str], *, atif: Path | None, otlp: Path | None, report: Path | None = None,
    engine: str | None = None, model: str | None = None, cassettes: Path | None = None,
    plugins: list[str] | None = None,
) -> int:
    from aam_eval_action.export.atif import trajectory
    from aam_eval_action.export.otlp import case_spans, document, evaluations
    from aam_eval_action.loader import load_repo
    from aam_eval_action.replay import agent_cassette, traffic_store
    from aam_eval_action.replay.agent_cassette import CassetteError
    from aam_eval_action.replay.traffic import TrafficError
    from aam_eval_action.report import CaseResult

    if atif is None and otlp is None:
        raise UsageError("say what to write: --atif DIR (one trajectory per case and pair) and/or "
                         "--otlp FILE (OTLP JSON spans)")
    environ = runner_environment()
    overrides = Overrides(engine=engine, model=model, cassettes=cassettes)
    graded = _grading(report, package, cases, overrides, plugins)
    repo = load_repo(package, plugins)
    checkout = runner_checkout(environ)
    spans: list[dict[str, Any]] = []
    written, problems = 0, 0
    for loaded in repo.packages:
        for settings in resolve_matrix(loaded, overrides, environ):
            redactor = settings.redactor()
            for lc in loaded.cases:
                name = loaded.qualified(lc.case.name)
                if cases and name not in cases and lc.case.name not in cases:
                    continue
                pair = f"{settings.engine} · {settings.model}"
                path = agent_cassette.session_path(settings.cassettes, lc.case.name, settings.cassette_stem)
                try:
                    cassette = agent_cassette.load(path, settings.cassettes)
                except CassetteError as exc:
                    problems += 1
                    said = redactor.text(str(exc))
                    print(f"aam-eval: {name} [{pair}]: not exported: {said}", file=sys.stderr)
                    continue
                if cassette is None:
                    continue
                traffic = None
                if cassette.model_traffic:
                    try:
                        recorded = cassette.model_traffic[:1]
                        traffic = traffic_store.load_traffic(settings.cassettes, recorded)[0]
                    except TrafficError as exc:
                        said = redactor.text(str(exc))
                        print(f"aam-eval: {name} [{pair}]: its model traffic is unusable ({said}); "
                              "exported from the session alone", file=sys.stderr)
                session = cassette.attempts[0]
                key = f"{name}@{settings.engine}@{settings.model}"
                result: CaseResult | None = graded.get((name, settings.engine, settings.model))
                grading = _graded(result)
                if atif is not None:
                    doc = trajectory(key, lc.case.input.prompt, session, traffic, engine=settings.engine,
                                     model=settings.model, recorded_at=cassette.recorded_at, grading=grading)
                    target = atif / f"{_UNSAFE.sub('_', key.replace('/', '__'))}.atif.json"
                    atomic_write(target, _json(redactor.deep(doc)), checkout)
                written += 1
                if otlp is not None:
                    spans += redactor.deep(case_spans(
                        key, session, traffic, engine=settings.engine, model=settings.model,
                        provider=session.model_provider, recorded_at=cassette.recorded_at,
                        evaluations=evaluations(grading)))
    if atif is not None:
        print(f"{written} ATIF trajectorie(s) written to {atif}")
    if otlp is not None:
        atomic_write(otlp, document(spans), checkout)
        print(f"{len(spans)} span(s) of {written} session(s) written to {otlp} (OTLP JSON)")
    return EXIT_FAILED if problems else EXIT_OK


def _grading(
    report: Path | None, package: Path, cases: list[str], overrides: Overrides, plugins: list[str] | None
) -> dict[tuple[str, str, str], Any]:
    """Each case's result by (name, engine, model): from the report given, else from replaying
    the cassettes (snapshots only: no CLI, no key, no network)."""
    import dataclasses

    from aam_eval_action.pipeline.suite import RunArgs, execute
    from aam_eval_action.render.console import Console
    from aam_eval_action.report import load_report

    if report is not None:
        found = load_report(report)
    else:
        quiet = Console(io.StringIO(), environ={})
        replay = dataclasses.replace(overrides, mode="replay", rerun="never")
        ran, _ = execute(RunArgs(package=package, cases=cases, overrides=replay, plugins=plugins), quiet)
        if ran is None:
            return {}
        found = ran
    engine, model = found.config.engine, found.config.model or found.agent.model or ""
    return {(c.name, c.engine or engine, c.model or model): c for c in found.cases}


def _graded(result: Any) -> dict[str, Any] | None:
    if result is None:
        return None
    judge = result.judge_verdict.model_dump(mode="json", exclude_none=True) if result.judge_verdict else None
    return {"verdict": result.verdict, "checks": dict(result.deterministic_checks),
            "check_details": result.check_details or {}, "judge": judge, "error": result.error}


def _json(data: Any) -> str:
    import json

    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
