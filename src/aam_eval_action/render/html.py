"""The HTML report: one self-contained file that shows what the agent did, case by case.

The page is data plus a fixed script. Every string that came from the repository under test
or from a model (case names, prompts, outputs, tool calls and results, judge reasons, file
contents) goes into the page only as JSON inside `<script type="application/json">` blocks,
with `<`, `>`, `&` and U+2028/U+2029 escaped so no text can end the block, and the script
shows it with text nodes only. A Content-Security-Policy allows nothing but the page's own
inline script and style (by hash) and `data:` images: no request leaves the file, which
opens from `file://` and works offline.

Each case's details are a block of their own, parsed when the case is opened, so a page of
1,000 cases shows its table at once.

Transcripts come from what the run had in memory (`run --html`) or from the agent cassettes
beside the report (`aam-eval view`); a damaged or missing cassette only costs that case its
transcript ("no transcript: <why>"), never the page.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aam_eval_action.report import CaseResult, Report, was_graded
from aam_eval_action.session import Session, cap

if TYPE_CHECKING:
    from aam_eval_action.loader import LoadedPackage
    from aam_eval_action.pipeline.case import Outcome
    from aam_eval_action.pipeline.context import CaseContext
    from aam_eval_action.redact import Redactor
    from aam_eval_action.replay.agent_cassette import AgentCassette
    from aam_eval_action.replay.traffic import ModelTraffic

INPUT_FILE_CAP = 64 * 1024
"""Longest input file shown in full (as a recorded file's text is)."""
CSP = (
    "default-src 'none'; script-src {script}; style-src {style}; img-src data:; "
    "base-uri 'none'; form-action 'none'"
)
_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026",
                          "\u2028": "\\u2028", "\u2029": "\\u2029"})
Key = tuple[str, str, str | None]
"""A case of a report: name, engine, model (a matrix run has one entry per case and pair)."""


@dataclass(frozen=True)
class Recording:
    """The sessions of one case and variant: each attempt, with its model traffic if recorded."""

    attempts: list[Session]
    traffic: list[ModelTraffic | None]
    where: str
    """Where they came from: `this run`, or the cassette's path."""
    note: str | None = None
    """Something the reader should know (the cassette holds another recording than the report's)."""


Lookup = Callable[[CaseResult, Key, str], Recording | str]
"""A case's recording for a variant (`""` or `"baseline"`), or why there is none."""
Stem = Callable[[str, str], str]
"""The cassette stem of an engine and model."""


@dataclass(frozen=True)
class Side:
    """One report and where its transcripts come from."""

    report: Report
    sessions: Lookup | None = None
    packages: list[LoadedPackage] = field(default_factory=list)
    """The package the report was run on (each plugin of a repository of several), for the
    prompts and input files."""
    package_note: str | None = None
    """Why the package could not be read, when it could not."""

    @property
    def package(self) -> LoadedPackage | None:
        return self.packages[0] if self.packages else None


@dataclass
class Page:
    """What the page embeds: the overview and table data, and one detail block per case."""

    data: dict[str, Any]
    details: list[dict[str, Any]] = field(default_factory=list)


# --- where transcripts come from -------------------------------------------------------------


def key_of(case: CaseResult, report: Report) -> Key:
    """(name, engine, model); a single-pair report's cases take the run's engine and model."""
    engine = getattr(case, "engine", None) or report.config.engine
    model = getattr(case, "model", None) or report.config.model or report.agent.model
    return case.name, str(engine), str(model) if model else None


def cassette_lookup(cassettes: Path, *, strict: bool = False, stem: Stem | None = None) -> Lookup:
    """Recordings from `<cassettes>/<case>/<stem>.session.yaml`, read as untrusted input.

    `stem` names a pair's cassette (the engine, `<engine>@<model>` for another model than its
    own); without it the stem is not parsed: the cassette whose sessions ran the case's engine
    (and model) is taken. With `strict`, a cassette that is not the recording the report graded
    (its fingerprint and session ids differ) is refused rather than shown with a note: a base
    report must not borrow the head's sessions.
    """

    def lookup(case: CaseResult, key: Key, variant: str) -> Recording | str:
        from aam_eval_action.replay import agent_cassette

        found: list[tuple[Path, AgentCassette]] = []
        errors: list[str] = []
        for path in _candidates(cassettes, key, variant, stem):
            try:
                cassette = agent_cassette.load(path, cassettes)
            except agent_cassette.CassetteError as exc:
                errors.append(str(exc))
                continue
            except (OSError, ValueError) as exc:
                errors.append(f"{path}: {exc}")
                continue
            if cassette is not None and _runs(cassette.attempts, key):
                found.append((path, cassette))
        if not found:
            if errors:
                return f"damaged cassette: {errors[0]}"
            return f"no cassette for this case in {cassettes}"
        path, cassette = found[0]
        note = None if variant else _mismatch(case, cassette)
        if note and strict:
            return f"{path}: {note}"
        return Recording(list(cassette.attempts), _traffic(cassettes, cassette), _show(path), note)

    return lookup


def _candidates(cassettes: Path, key: Key, variant: str, stem: Stem | None) -> list[Path]:
    from aam_eval_action.replay.agent_cassette import session_path

    name, engine, model = key
    if stem is not None and model:
        return [session_path(cassettes, name, stem(engine, model), variant)]
    plain = session_path(cassettes, name, engine, variant)
    suffix = f".{variant}.session.yaml" if variant else ".session.yaml"
    folder = cassettes / name
    paired = sorted(folder.glob(f"{_glob_safe(engine)}@*{suffix}")) if folder.is_dir() else []
    if not variant:
        paired = [p for p in paired if not p.name.endswith(".baseline.session.yaml")]
    return [*paired, plain]


def _glob_safe(text: str) -> str:
    return "".join(f"[{c}]" if c in "*?[]" else c for c in text)


def _runs(attempts: Sequence[Session], key: Key) -> bool:
    """The sessions ran the case's engine and, when both name one, its model."""
    _, engine, model = key
    first = attempts[0] if attempts else None
    if first is None or first.engine != engine:
        return False
    return model is None or first.model is None or first.model == model


def _mismatch(case: CaseResult, cassette: AgentCassette) -> str | None:
    """Why the cassette may not hold the session the report graded."""
    ids = {s.session_id for s in cassette.attempts if s.session_id}
    if case.session_id and case.session_id in ids:
        return None
    if case.fingerprint and case.fingerprint != cassette.fingerprint.digest:
        return ("the cassette was recorded from other inputs than this run used "
                f"(recorded {cassette.recorded_at}): this is the recorded session, not this run's")
    return None


def _traffic(cassettes: Path, cassette: AgentCassette) -> list[ModelTraffic | None]:
    """Each attempt's model traffic; a damaged one only costs the turn boundaries."""
    from aam_eval_action.replay import traffic_store
    from aam_eval_action.replay.traffic import TrafficError

    recorded = cassette.model_traffic or []
    try:
        loaded: list[ModelTraffic | None] = list(traffic_store.load_traffic(cassettes, recorded))
    except (TrafficError, OSError, ValueError, KeyError):
        loaded = []
    return loaded + [None] * (len(cassette.attempts) - len(loaded))


def _show(path: Path) -> str:
    from aam_eval_action.fsutil import display_path

    return display_path(path)


def run_lookup(sessions: Mapping[Key, Session], cassettes: Lookup | None) -> Lookup:
    """The sessions a run had in memory; its cassettes for the baseline, other attempts and
    traffic, when they hold the very session the run graded."""

    def lookup(case: CaseResult, key: Key, variant: str) -> Recording | str:
        recorded = cassettes(case, key, variant) if cassettes else "no cassettes"
        session = sessions.get(key) if not variant else None
        if session is None:
            return recorded
        if isinstance(recorded, Recording) and any(_same(session, s) for s in recorded.attempts):
            return Recording(recorded.attempts, recorded.traffic, recorded.where)
        return Recording([session], [None], "this run")

    return lookup


def _same(a: Session, b: Session) -> bool:
    """The same session: by its id (a recording is redacted, the session in memory is not yet)."""
    if a.session_id or b.session_id:
        return a.session_id == b.session_id
    return a.output == b.output and a.tool_calls == b.tool_calls


def package_lookup(package_dir: Path | None) -> tuple[list[LoadedPackage], str | None]:
    """The package (every plugin) a report ran on, or why it cannot be read (the page goes on
    without it)."""
    from aam_eval_action.errors import AamEvalError
    from aam_eval_action.loader import load_repo

    if package_dir is None:
        return [], "the package the report ran on was not found"
    try:
        return load_repo(package_dir).packages, None
    except (AamEvalError, OSError, ValueError) as exc:
        return [], f"{package_dir}: {exc}"


def run_html(report: Report, ran: Sequence[tuple[CaseContext, Outcome]]) -> str:
    """The page of a run that just finished: its sessions from memory, the rest from its
    cassettes, every string through the run's redactor."""
    from aam_eval_action.settings import cassette_stem

    sessions: dict[Key, Session] = {}
    for ctx, outcome in ran:
        if outcome.session is not None:
            sessions[(outcome.result.name, ctx.settings.engine, ctx.settings.model)] = outcome.session
    first = ran[0][0] if ran else None
    if first is None:
        return render(page_data(Side(report)), None)
    settings = first.settings
    config = settings.package.config
    cassettes = settings.cassettes.parent if settings.package.several else settings.cassettes
    recorded = cassette_lookup(cassettes, stem=lambda e, m: cassette_stem(config, e, m))
    packages = list({id(ctx.settings.package): ctx.settings.package for ctx, _ in ran}.values())
    head = Side(report, run_lookup(sessions, recorded), packages)
    return render(page_data(head, history=_kept_reports(settings.package)), first.redactor)


def _kept_reports(package: LoadedPackage) -> list[Report]:
    folder = package.layout.evals_dir / "reports"
    return history_reports(sorted(folder.glob("*.json")))[0] if folder.is_dir() else []


# --- the page's data -------------------------------------------------------------------------


def page_data(
    head: Side, base: Side | None = None, history: Sequence[Report] = (), *,
    generated: datetime | None = None, warnings: Sequence[str] = (),
) -> Page:
    """Everything the page shows, as JSON-ready data (untrusted strings left as they are)."""
    from aam_eval_action.diff import categorize

    report = head.report
    base_cases = {key_of(c, base.report): c for c in base.report.cases} if base else {}
    page = Page({
        "generated": (generated or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "head": _run(report), "base": _run(base.report) if base else None,
        "headline": _headline(report, base.report if base else None),
        "pairs": _pairs(report), "history": _history(report, history),
        "plugins": [p.model_dump(mode="json", include={"name", "layout", "path", "summary", "warnings"})
                    for p in report.plugins or []],
        "warnings": list(warnings), "cases": [],
        "volatile": [m.model_dump(mode="json", exclude_none=True) for m in report.volatile or []],
        "labels": report.labels.model_dump(mode="json", exclude_none=True) if report.labels else None,
        "routing": _routing(report),
        "listings": [v.model_dump(mode="json", exclude_none=True) for v in report.listings or []],
        "sweep": report.sweep.model_dump(mode="json", exclude_none=True) if report.sweep else None,
    })
    prompts = {p.qualified(c.case.name): c for p in head.packages for c in p.cases}
    for case in report.cases:
        key = key_of(case, report)
        old = base_cases.get(key)
        row = _row(case, key, old, categorize(old, case) if base else None)
        page.data["cases"].append(row)
        page.details.append(_detail(case, key, old, head, base, prompts))
    if base:
        seen = {key_of(c, report) for c in report.cases}
        page.data["removed"] = [c.name for k, c in base_cases.items() if k not in seen]
    return page


def _run(report: Report) -> dict[str, Any]:
    summary = report.summary.model_dump(mode="json", exclude_none=True)
    return {
        "id": report.id, "timestamp": report.timestamp, "duration_seconds": report.duration_seconds,
        "package": report.package.name, "version": report.package.version,
        "engine": report.config.engine, "model": report.config.model or report.agent.model,
        "judge": report.config.judge or report.judge.model, "mode": report.config.mode,
        "runtime_version": report.agent.runtime_version or report.config.engine_version,
        "interrupted": bool(report.interrupted), "summary": summary,
    }


def _routing(report: Report) -> list[dict[str, Any]]:
    """Each engine · model's routing matrix (one for a run of one engine and model), with the
    engine and model it is for; none without trigger cases. A report of several pairs is shown
    pair by pair: its overall summary would mix engines' routing in one matrix."""
    if report.pairs:
        found = [(p.engine, p.model or None, p.summary) for p in report.pairs]
    else:
        found = [(report.config.engine, report.config.model or report.agent.model, report.summary)]
    return [{"engine": engine, "model": model, **summary.routing.model_dump(mode="json", exclude_none=True)}
            for engine, model, summary in found if summary.routing is not None]


def _trigger(case: CaseResult, old: CaseResult | None) -> dict[str, Any] | None:
    """A trigger case's row of the routing table: its prompt, where it belongs, where it went."""
    if case.expected_skill is None:
        return None
    base = old.routed_to if old is not None and old.verdict != "ERROR" else None
    return {"prompt": case.prompt, "expected": case.expected_skill, "routed": case.routed_to,
            "fired": case.skills_fired, "rate": case.fire_rate, "canary": bool(case.canary),
            "draft": case.draft, "runs": len(case.attempts) if case.attempts else 1,
            "base_routed": base}


def _headline(head: Report, base: Report | None) -> dict[str, Any]:
    """Pass rate over graded cases; with a base, over the cases graded on both sides."""
    graded = [c for c in head.cases if was_graded(c)]
    out: dict[str, Any] = {
        "head_rate": _rate(graded), "graded": len(graded), "total": len(head.cases),
        "not_graded": sum(c.replay_miss is not None for c in head.cases),
    }
    if base is None:
        return out
    olds = {key_of(c, base): c for c in base.cases}
    both = [(olds[key_of(c, head)], c) for c in head.cases
            if key_of(c, head) in olds and was_graded(c) and was_graded(olds[key_of(c, head)])]
    base_rate, head_rate = _rate([b for b, _ in both]), _rate([h for _, h in both])
    out.update(compared=len(both), base_compared=base_rate, head_compared=head_rate,
               delta_pp=None if base_rate is None or head_rate is None
               else round((head_rate - base_rate) * 100, 1))
    return out


def _rate(cases: Sequence[CaseResult]) -> float | None:
    return round(sum(c.verdict == "PASS" for c in cases) / len(cases), 4) if cases else None


def _pairs(report: Report) -> list[dict[str, Any]]:
    """The engine × model matrix: the report's `pairs`, else counted from its cases."""
    given = getattr(report, "pairs", None)
    if isinstance(given, list) and given:
        out = []
        for pair in given:
            item = pair if isinstance(pair, dict) else getattr(pair, "model_dump", dict)()
            summary = item.get("summary") or {}
            out.append({"engine": str(item.get("engine")), "model": item.get("model"),
                        "rate": summary.get("graded_pass_rate", summary.get("pass_rate")),
                        "passed": summary.get("passed"), "total": summary.get("total"),
                        "graded": summary.get("graded")})
        return out
    groups: dict[tuple[str, str | None], list[CaseResult]] = {}
    for case in report.cases:
        _, engine, model = key_of(case, report)
        groups.setdefault((engine, model), []).append(case)
    if len(groups) < 2:
        return []
    return [{"engine": e, "model": m, "rate": _rate([c for c in cs if was_graded(c)]),
             "passed": sum(c.verdict == "PASS" for c in cs), "total": len(cs),
             "graded": sum(was_graded(c) for c in cs)} for (e, m), cs in groups.items()]


def _history(head: Report, reports: Sequence[Report]) -> dict[str, Any]:
    """Pass rate per run over time, and each case's verdict per run."""
    runs = {r.id: r for r in reports}
    runs.setdefault(head.id, head)
    ordered = sorted(runs.values(), key=lambda r: (r.timestamp, r.id))
    if len(ordered) < 2:
        return {"runs": [], "cases": [], "cells": []}
    names: dict[str, None] = {}
    verdicts = []
    for report in ordered:
        by_label = {_label(c, report): c.verdict if was_graded(c) else "NOT GRADED" for c in report.cases}
        names.update(dict.fromkeys(by_label))
        verdicts.append(by_label)
    labels = sorted(names)
    return {
        "runs": [{"id": r.id, "timestamp": r.timestamp, "label": label,
                  "rate": r.summary.graded_pass_rate if r.summary.graded_pass_rate is not None
                  else r.summary.pass_rate,
                  "passed": r.summary.passed, "graded": r.summary.graded, "total": r.summary.total}
                 for r, label in zip(ordered, run_labels([r.timestamp for r in ordered]), strict=True)],
        "cases": labels,
        "cells": [[v.get(label) for v in verdicts] for label in labels],
    }


def run_labels(stamps: Sequence[str]) -> list[str]:
    """Labels for runs on a time axis, told apart even on one day: `MM-DD HH:MM` in UTC (the year
    first when the runs span more than one, seconds when two share a minute, `run N` after the
    ones that still agree). Built from the parsed time, so only digits, dashes, colons, spaces and
    `run` reach a chart: a report is a file of the repository (an unreadable timestamp gives its
    leading date, else `run N`)."""
    whens = [_when(stamp) for stamp in stamps]
    years = {when.year for when in whens if when is not None}
    day = "%Y-%m-%d" if len(years) > 1 else "%m-%d"

    def labelled(clock: str) -> list[str]:
        out = []
        for n, (stamp, when) in enumerate(zip(stamps, whens, strict=True), 1):
            if when is not None:
                out.append(when.strftime(f"{day} {clock}"))
                continue
            date = _LEADING_DATE.match(stamp)
            out.append((date.group(0) if len(years) > 1 else date.group(0)[5:]) if date else f"run {n}")
        return out

    labels = labelled("%H:%M")
    if len(set(labels)) < len(labels):
        labels = labelled("%H:%M:%S")
    seen: dict[str, int] = {}
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
    return [f"{label} run {n}" if seen[label] > 1 and not label.startswith("run ") else label
            for n, label in enumerate(labels, 1)]


_LEADING_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def _when(stamp: str) -> datetime | None:
    """A report's timestamp in UTC (one without a zone is taken as UTC), or None."""
    try:
        when = datetime.fromisoformat(stamp.strip())
    except (ValueError, AttributeError):
        return None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def _label(case: CaseResult, report: Report) -> str:
    engine, model = getattr(case, "engine", None), getattr(case, "model", None)
    return f"{case.shown} · {engine}{f' · {model}' if model else ''}" if engine else case.shown


def _refusal(case: CaseResult) -> str | None:
    """Why a case file was refused (its message without the place), shown beside the case."""
    if case.verdict != "ERROR" or not case.error or not case.judge_verdict \
            or case.judge_verdict.reason != "not asked: the case file is invalid":
        return None
    return case.error.split(": ", 1)[-1][:200]


def _row(case: CaseResult, key: Key, old: CaseResult | None, category: str | None) -> dict[str, Any]:
    failed = [n for n, r in case.deterministic_checks.items() if r == "FAIL"]
    if case.judge_verdict and case.judge_verdict.result == "FAIL":
        failed.append("judge")
    return {
        "name": case.name, "title": case.title, "target": case.target, "engine": key[1], "model": key[2],
        "plugin": case.plugin,
        "verdict": case.verdict, "base": old.verdict if old else None, "category": category,
        "refused": _refusal(case),
        "miss": case.replay_miss, "flaky": bool(case.flaky), "failed": failed,
        "duration": case.duration_seconds, "cost": case.cost_usd, "kind": case.replay_kind,
        "trigger": _trigger(case, old),
    }


def _detail(
    case: CaseResult, key: Key, old: CaseResult | None, head: Side, base: Side | None,
    prompts: Mapping[str, Any],
) -> dict[str, Any]:
    detail = _grading(case)
    detail["label_line"] = label_line(case, key, head.report)
    detail.update(_inputs(prompts.get(case.name), head))
    if detail["prompt"] is None and case.prompt is not None:  # a trigger case keeps its prompt in the report
        detail.update(prompt=case.prompt, prompt_from_report=True)
    detail["head"] = _transcripts(head, case, key, "")
    if case.baseline_verdict is not None:
        detail["baseline_rec"] = _transcripts(head, case, key, "baseline")
    if base is not None and old is not None:
        detail["base"] = _grading(old) | {"rec": _transcripts(base, old, key, "")}
        detail["first_diff"] = _first_diff(detail["head"], detail["base"]["rec"])
    return detail


def label_line(case: CaseResult, key: Key, report: Report) -> str | None:
    """The `aam-eval label` command for the judged output of this case, to copy and run: it
    overrules the judge (its verdict the other way) and names the output's hash, so it is
    refused if the cassette has been re-recorded since. The reason is for the person to write."""
    import shlex

    jv = case.judge_verdict
    if case.judged is None or jv is None or jv.result not in ("PASS", "FAIL"):
        return None
    _, engine, model = key
    verdict = "PASS" if jv.result == "FAIL" else "FAIL"
    parts = ["aam-eval", "label", case.name, "--package", report.config.package_path or ".",
             "--engine", engine, *(["--model", model] if model else []), "--output", case.judged.output,
             "--verdict", verdict, "--reason", "REPLACE WITH WHY"]
    return " ".join(shlex.quote(part) for part in parts)


def _grading(case: CaseResult) -> dict[str, Any]:
    """A case's verdict and why: checks with details, judge and votes, misses, attempts, costs."""
    details = case.check_details or {}
    out = case.model_dump(mode="json", exclude_none=True, include={
        "name", "target", "verdict", "error", "file", "line", "replayed", "replay_kind", "live_from_turn",
        "usage", "cost_usd", "run_cost_usd", "duration_seconds", "attempts", "flaky", "baseline_verdict",
        "baseline_error", "baseline_attempts", "skill_not_needed", "trigger_expected", "skill_triggered",
        "cassette_changed", "cassette_provenance", "judge_verdict", "miss", "session_id", "source",
        "skipped_checks", "self_check", "budget", "label", "judge_advisory", "expected_skill", "routed_to",
        "skills_fired", "fire_rate", "canary", "draft", "confinement", "turns", "stopped", "changed_at_turn",
        "score", "pass_rate", "score_without", "pass_rate_without", "delta", "run_scores", "graders",
    })
    out["checks"] = [{"name": n, "result": r, "detail": details.get(n)}
                     for n, r in case.deterministic_checks.items()]
    return out


def _inputs(loaded: Any, head: Side) -> dict[str, Any]:
    """The case's prompt and input files, from the package as it is now."""
    if loaded is None:
        why = head.package_note or "the case is not in the package any more"
        return {"prompt": None, "prompt_note": why, "inputs": []}
    from aam_eval_action.loader import workspace_file_source

    assert head.package is not None  # a case was found in it
    evals = head.package.layout.evals_dir
    spec = loaded.case.input
    root = head.package.layout.fixtures(loaded.case.files_root)
    files = [(rel, root / rel) for rel in spec.files]
    files += [(rel, workspace_file_source(head.package.layout, rel)) for rel in spec.workspace_files]
    return {"prompt": spec.prompt, "description": loaded.case.description,
            "criteria": loaded.case.judge.criteria if loaded.case.judge else None,
            "inputs": [_input_file(rel, p, evals if root == evals else head.package.layout.root)
                       for rel, p in files]}


def _input_file(rel: str, path: Path | None, evals: Path) -> dict[str, Any]:
    from aam_eval_action.fsutil import is_inside

    if path is None:
        return {"path": rel, "note": "created empty"}
    if not is_inside(path, evals):
        return {"path": rel, "note": f"outside {evals.name}/: not shown"}
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return {"path": rel, "note": f"cannot be read: {exc.strerror or exc}"}
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return {"path": rel, "note": f"binary, {len(raw)} bytes"}
    return {"path": rel, "text": cap(text, INPUT_FILE_CAP)}


def _transcripts(side: Side, case: CaseResult, key: Key, variant: str) -> dict[str, Any]:
    from aam_eval_action.render.transcript import session_view

    if side.sessions is None:
        return {"missing": f"no cassettes: {side.package_note}" if side.package_note
                else "no recording was given to this page"}
    try:
        found = side.sessions(case, key, variant)
    except Exception as exc:  # a hostile cassette costs its case the transcript, never the page
        found = f"unreadable recording: {type(exc).__name__}: {exc}"
    if isinstance(found, str):
        return {"missing": found}
    sessions = []
    for session, traffic in zip(found.attempts, found.traffic, strict=False):
        try:
            sessions.append(session_view(session, traffic))
        except Exception as exc:  # damaged traffic: the session alone still has the tool calls
            view = session_view(session, None)
            view["note"] = f"model traffic unusable ({type(exc).__name__}); steps from the session"
            sessions.append(view)
    return {"where": found.where, "note": found.note, "sessions": sessions}


def _first_diff(head: dict[str, Any], base: dict[str, Any]) -> int | None:
    from aam_eval_action.render.transcript import first_difference

    if not head.get("sessions") or not base.get("sessions"):
        return None
    return first_difference(head["sessions"][0]["turns"], base["sessions"][0]["turns"])


# --- the file --------------------------------------------------------------------------------


def script_json(value: Any) -> str:
    """JSON that is inert inside a `<script type="application/json">` block."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).translate(_ESCAPES)


def _asset(name: str) -> str:
    return resources.files("aam_eval_action.render").joinpath("templates", name).read_text(encoding="utf-8")


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def render(page: Page, redactor: Redactor | None = None) -> str:
    """The HTML file's text; with a redactor, every embedded string goes through it first."""
    import jinja2
    from markupsafe import Markup

    data, details = page.data, page.details
    if redactor is not None:
        data, details = redactor.deep(data), [redactor.deep(d) for d in details]
    script, style = _asset("report.js"), _asset("report.css")
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    template = env.from_string(_asset("report.html.j2"))
    head = data["head"]
    title = f"{head.get('package') or 'aam-eval'} · {head.get('id')}"
    return template.render(
        csp=Markup(CSP.format(script=_hash(script), style=_hash(style))), title=title,
        style=Markup(style), script=Markup(script), data=Markup(script_json(data)),
        details=[Markup(script_json(d)) for d in details],
    )




def history_reports(paths: Iterable[Path]) -> tuple[list[Report], list[str]]:
    """Reports for the trends; one that cannot be read is left out with a warning."""
    from aam_eval_action.errors import AamEvalError
    from aam_eval_action.report import load_report

    found, warnings = [], []
    for path in paths:
        try:
            found.append(load_report(path))
        except AamEvalError as exc:
            warnings.append(f"left out of the trends: {exc}")
    return found, warnings
