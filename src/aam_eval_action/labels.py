"""Human labels: a person's verdict on one exact judged output, and how far the judge agrees.

`evals/labels.yaml` holds what people said. Each label is keyed by the case, the engine and
model, a hash of the judged output (the task, the agent's final output and files as the judge
saw them: `judge.evidence`) and a hash of the criteria, with the verdict, who said it and why.
A recorded session replays byte for byte, so a label stays valid exactly as long as the output
it was given for: while both hashes match, the label is the case's verdict (the judge's is
kept beside it); when the output is re-recorded differently or the criteria change, the label
goes *stale*, no longer decides, and is listed as stale.

**Agreement.** Over every label whose output the judge also graded in the run, per judge
model: the share of agreement, Cohen's κ (agreement beyond chance: 1 perfect, 0 chance), the
judge's true-pass rate (of the outputs people passed, the share the judge passed) and
true-fail rate, and the cases where they disagree.

**Gate** (`judge-gate`): `always` (a judge FAIL fails the case, as before), `never` (a judge
FAIL is shown as advisory) or `calibrated` (a judge FAIL fails the case only when that judge
model's κ reaches `min-kappa` over at least `min-labels` labels; else it is advisory). An
advisory FAIL leaves the case passing on its checks, with the judge's verdict shown.

The file comes from the repository under test: read with the safe loader, validated strictly,
and a bad entry is an error naming the file, the line and the field.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from aam_eval_action.errors import ConfigError
from aam_eval_action.report import Agreement

LABELS_FILE = "labels.yaml"
LABELS_VERSION = 1
HEADER = (
    "# Human verdicts on judged outputs, written by `aam-eval label`. A label decides its case's\n"
    "# verdict while the output and the criteria it was given for are unchanged (their hashes\n"
    "# below); then it goes stale. See the docs: labels and judge agreement.\n"
)
Gate = Literal["always", "calibrated", "never"]


class Label(BaseModel):
    """One person's verdict on one judged output."""

    model_config = ConfigDict(extra="forbid")

    case: str = Field(pattern=r"^[a-z0-9-]{1,64}(/[a-z0-9-]{1,64})?$")
    """The case (`<plugin>/<case>` in a repository of plugins)."""
    engine: str = Field(pattern=r"^[a-z0-9-]{1,40}$")
    """The engine that produced the output."""
    model: str = Field(min_length=1, max_length=200)
    """The agent's model."""
    output: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    """Hash of the judged output: the task, the agent's final output and its files."""
    criteria: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    """Hash of the judge criteria it was labelled against."""
    verdict: Literal["PASS", "FAIL"]
    """The person's verdict."""
    reason: str = Field(min_length=1, max_length=2000)
    """Why, in their words."""
    by: str = Field(min_length=1, max_length=100)
    """Who."""
    at: str = Field(max_length=40)
    """When (UTC, ISO 8601)."""

    @property
    def key(self) -> tuple[str, str, str]:
        return self.case, self.engine, self.model


class LabelsFile(BaseModel):
    """`evals/labels.yaml`."""

    model_config = ConfigDict(extra="forbid")

    version: int = LABELS_VERSION
    """Format version."""
    labels: list[Label] = Field(default_factory=list)
    """Every label, one per case, engine, model and output."""


def digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def labels_path(evals_dir: Path) -> Path:
    return evals_dir / LABELS_FILE


def load_labels(path: Path) -> LabelsFile:
    """The labels file (empty when there is none); ConfigError naming file, line and field."""
    from aam_eval_action.lines import line_of, loc_str
    from aam_eval_action.replay.untrusted import UntrustedFileError, load_yaml, read_text

    try:
        text = read_text(path, inside=path.parent)
        if text is None:
            return LabelsFile()
        data = load_yaml(path, text)
    except UntrustedFileError as exc:
        raise ConfigError(str(exc)) from None
    try:
        return LabelsFile.model_validate(data if data is not None else {})
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(err["loc"])
        line = line_of(text, loc)
        where = f"{path}:{line}" if line else str(path)
        field = loc_str(loc) or "labels"
        raise ConfigError(f"{where}: {field}: {err['msg']}; fix or remove that label") from None


def save_labels(path: Path, labels: LabelsFile, checkout: Path | None) -> None:
    """Written atomically, sorted by case, engine and model, with a header saying what it is."""
    from aam_eval_action.fsutil import atomic_write, dump_yaml

    ordered = sorted(labels.labels, key=lambda item: (item.key, item.at))
    data = LabelsFile(version=LABELS_VERSION, labels=ordered).model_dump(mode="json")
    atomic_write(path, HEADER + dump_yaml(data), checkout)


def upsert(labels: LabelsFile, label: Label) -> tuple[LabelsFile, Label | None]:
    """The file with `label` in place of any label for the same case, pair and output; the one
    it replaced."""
    kept, replaced = [], None
    for old in labels.labels:
        if old.key == label.key and old.output == label.output:
            replaced = old
        else:
            kept.append(old)
    return LabelsFile(version=labels.version, labels=[*kept, label]), replaced


# --- matching a run's cases --------------------------------------------------------------------


@dataclass(frozen=True)
class Judged:
    """What a case's judge graded: the hashes a label must match, and the judge's verdict."""

    case: str
    engine: str
    model: str
    output: str
    criteria: str
    judge_verdict: Literal["PASS", "FAIL"]
    judge_model: str


def matching(labels: Sequence[Label], judged: Judged) -> tuple[Label | None, list[Label]]:
    """The label that decides this output (the newest of those that match), and the labels for
    the same case and pair that no longer match (stale)."""
    mine = [item for item in labels if item.key == (judged.case, judged.engine, judged.model)]
    live = [item for item in mine if item.output == judged.output and item.criteria == judged.criteria]
    stale = [item for item in mine if item not in live]
    return (max(live, key=lambda item: item.at) if live else None), stale


# --- agreement ---------------------------------------------------------------------------------


def agreement(judge_model: str, pairs: Iterable[tuple[str, str, str]]) -> Agreement:
    """Agreement over (case, person's verdict, judge's verdict) triples."""
    rows = list(pairs)
    n = len(rows)
    both_pass = sum(h == "PASS" and j == "PASS" for _, h, j in rows)
    both_fail = sum(h == "FAIL" and j == "FAIL" for _, h, j in rows)
    human_pass = sum(h == "PASS" for _, h, _ in rows)
    judge_pass = sum(j == "PASS" for _, _, j in rows)
    observed = (both_pass + both_fail) / n if n else 0.0
    kappa = None
    if n:
        chance = (human_pass / n) * (judge_pass / n) + ((n - human_pass) / n) * ((n - judge_pass) / n)
        kappa = round((observed - chance) / (1 - chance), 4) if chance < 1 else None
    return Agreement(
        judge_model=judge_model, labels=n, agreement=round(observed, 4), kappa=kappa,
        true_pass_rate=round(both_pass / human_pass, 4) if human_pass else None,
        true_fail_rate=round(both_fail / (n - human_pass), 4) if n - human_pass else None,
        disagreements=[f"{case} (person {h}, judge {j})" for case, h, j in rows if h != j],
    )


def gate_open(gate: Gate, found: Agreement | None, min_kappa: float, min_labels: int) -> bool:
    """Whether a judge FAIL fails its case under this gate and this judge's agreement."""
    if gate == "always":
        return True
    if gate == "never" or found is None:
        return False
    return found.labels >= min_labels and found.kappa is not None and found.kappa >= min_kappa


def gate_reason(gate: Gate, found: Agreement | None, min_kappa: float, min_labels: int) -> str:
    """Why a judge FAIL is advisory, in words."""
    if gate == "never":
        return "judge-gate is never: the judge's FAIL is advisory"
    if found is None or found.labels < min_labels:
        have = found.labels if found else 0
        return (f"judge-gate is calibrated: the judge has {have} label(s) to be measured against, "
                f"{min_labels} are needed; its FAIL is advisory")
    kappa = "undefined" if found.kappa is None else f"{found.kappa:.2f}"
    return f"judge-gate is calibrated: the judge's κ is {kappa} (< {min_kappa:.2f}); its FAIL is advisory"
