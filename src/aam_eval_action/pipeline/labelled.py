"""A run's verdicts with human labels applied, judge–human agreement, and `judge-gate`.

Done once every case has finished, over the whole run (agreement is per judge model, across
engines and models): first each label that still matches its output and criteria decides its
case, then agreement is measured, then the gate decides which judge FAILs still fail.
See `labels.py` for the rules.
"""

from __future__ import annotations

from collections.abc import Sequence

from aam_eval_action.labels import (
    Judged,
    Label,
    agreement,
    gate_open,
    gate_reason,
    labels_path,
    load_labels,
    matching,
)
from aam_eval_action.report import Agreement, CaseLabel, CaseResult, LabelsSummary
from aam_eval_action.settings import RunSettings

Group = tuple[RunSettings, Sequence[CaseResult]]


def apply_labels(groups: Sequence[Group]) -> LabelsSummary | None:
    """Apply each package's labels to its results (in place); the run's labels summary, None
    when there are no labels and the gate is `always` (nothing to say)."""
    gate = groups[0][0].judge_gate if groups else "always"
    files: dict[str, list[Label]] = {}
    pairs: dict[str, list[tuple[str, str, str]]] = {}
    decided, stale = 0, []
    for settings, results in groups:
        path = labels_path(settings.package.layout.evals_dir)
        if str(path) not in files:
            files[str(path)] = load_labels(path).labels
        labels = files[str(path)]
        for result in results:
            judged = _judged(settings, result)
            if judged is None or not labels:
                continue
            label, old = matching(labels, judged)
            pairs.setdefault(judged.judge_model, [])
            if label is not None:
                decided += 1
                pairs[judged.judge_model].append((result.name, label.verdict, judged.judge_verdict))
                _decide(result, label)
            elif old:
                newest = max(old, key=lambda item: item.at)
                why = "its criteria changed" if newest.output == judged.output else "its output changed"
                result.label = _case_label(newest, stale=True, why=why)
                stale.append(f"{result.name} [{judged.engine} · {judged.model}]: {why}")
    found = {model: agreement(model, rows) for model, rows in pairs.items() if rows}
    cfg = groups[0][0].config.judge_calibration if groups else None
    for settings, results in groups:
        for result in results:
            _gate(settings, result, found, cfg.min_kappa if cfg else 0.6, cfg.min_labels if cfg else 10)
    if not any(files.values()) and gate == "always":
        return None
    return LabelsSummary(gate=gate, decided=decided, stale=stale, agreement=list(found.values()))


def _judged(settings: RunSettings, result: CaseResult) -> Judged | None:
    jv = result.judge_verdict
    if result.judged is None or jv is None or jv.result not in ("PASS", "FAIL"):
        return None
    return Judged(case=result.name, engine=settings.engine, model=settings.model,
                  output=result.judged.output, criteria=result.judged.criteria,
                  judge_verdict=jv.result, judge_model=jv.model or settings.judge_model)


def _case_label(label: Label, *, stale: bool = False, why: str | None = None) -> CaseLabel:
    return CaseLabel(verdict=label.verdict, reason=label.reason, by=label.by, at=label.at, stale=stale,
                     why_stale=why)


def _decide(result: CaseResult, label: Label) -> None:
    """The label is the case's verdict; the judge's stays beside it."""
    result.label = _case_label(label)
    if label.verdict == "PASS" and result.verdict == "FAIL":
        result.verdict, result.error = "PASS", None
    elif label.verdict == "FAIL" and result.verdict == "PASS":
        result.verdict = "FAIL"
        result.error = f"overruled by a person ({label.by}): {label.reason}"


def _gate(settings: RunSettings, result: CaseResult, found: dict[str, Agreement],
          min_kappa: float, min_labels: int) -> None:
    """A FAIL that only the judge gave, under a gate that does not trust this judge: advisory."""
    jv = result.judge_verdict
    gate = settings.judge_gate
    if gate == "always" or result.verdict != "FAIL" or jv is None or jv.result != "FAIL":
        return
    if result.label is not None and not result.label.stale:
        return  # a person decided
    if any(v == "FAIL" for v in result.deterministic_checks.values()):
        return
    judge = found.get(jv.model or settings.judge_model)
    if gate_open(gate, judge, min_kappa, min_labels):  # type: ignore[arg-type]
        return
    result.judge_advisory = gate_reason(gate, judge, min_kappa, min_labels)  # type: ignore[arg-type]
    result.verdict, result.error = "PASS", None
