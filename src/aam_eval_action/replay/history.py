"""A case's history: every recording run's attempt outcomes, kept beside its cassettes.

`<cassettes>/<case>/history.jsonl` holds one JSON line per run that recorded the case, per
engine and model: when, the inputs' fingerprint, passes and attempts, the CLI release and the
model the API said it served. Lines are sorted by time and bounded (the last `KEEP` runs per
engine and model), so two branches that each add a run merge line by line (`merge=union`).

Runs of the same inputs, CLI release and served model are A/A samples of the case's own noise.
A change of CLI release or served model starts a new stretch (an *epoch*): it may be the cause
of a changed rate, so it is shown as one, never folded into the noise.

The file comes from the repository under test: every line is parsed with `json` and validated,
a bad line is skipped with a warning that names the file and line, and the whole file is
bounded in size.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from aam_eval_action.fsutil import atomic_write, is_inside
from aam_eval_action.replay.traffic_model import ModelTraffic

FILE = "history.jsonl"
KEEP = 50
"""Runs kept per engine and model."""
MAX_BYTES = 1024 * 1024
MAX_LINE = 2048
ATTRIBUTES = "*/history.jsonl merge=union\n"
"""The cassettes folder's `.gitattributes`: branches that each add runs merge without conflict."""


class HistoryRun(BaseModel):
    """One run's attempts of one case on one engine and model."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    at: str = Field(pattern=r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
    """When the run recorded (UTC, `2026-12-01T03:00:00Z`)."""
    engine: str = Field(max_length=64)
    model: str = Field(max_length=200)
    """The model asked for."""
    inputs: str = Field(pattern=r"^[0-9a-f]{8,64}$")
    """The fingerprint of every input that shaped the session."""
    passes: int = Field(ge=0, le=1000)
    attempts: int = Field(ge=1, le=1000)
    cli: str | None = Field(default=None, max_length=64)
    """The CLI release that ran it (`2.1.332`)."""
    served: str | None = Field(default=None, max_length=200)
    """The model the API said it served, where it differs from the one asked for."""
    where: str = Field(default="ci", pattern=r"^(ci|local)$")
    """`ci` (a workflow run) or `local` (a run on someone's machine, committed by hand)."""
    run: str = Field(default="", pattern=r"^[0-9a-f]{0,16}$")
    """A token of the run, so two runs alike in every other field stay two lines."""

    def line(self) -> str:
        return json.dumps(self.model_dump(exclude_none=True), sort_keys=True, separators=(",", ":"))


@dataclass
class History:
    """A case's runs as read, and what could not be read."""

    runs: list[HistoryRun] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def of(self, engine: str, model: str) -> list[HistoryRun]:
        return [r for r in self.runs if r.engine == engine and r.model == model]


def path_for(cassettes: Path, case: str) -> Path:
    return cassettes / case / FILE


def read(path: Path, cassettes: Path | None = None) -> History:
    """The history at `path` (empty when there is none); bad lines are skipped and named. With
    `cassettes`, a path that resolves outside it (a symlink) is not read."""
    found = History()
    if cassettes is not None and path.exists() and not is_inside(path, cassettes):
        found.warnings.append(f"{path}: resolves outside {cassettes} (a symlink?); not read")
        return found
    try:
        size = path.stat().st_size
    except OSError:
        return found
    if size > MAX_BYTES or not path.is_file():
        found.warnings.append(f"{path}: not read ({size} bytes, over {MAX_BYTES}, or not a file); "
                              "delete it and the next recording starts it again")
        return found
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        found.warnings.append(f"{path}: not read ({exc}); delete it and the next recording starts it again")
        return found
    for number, raw in enumerate(text.splitlines(), 1):
        run = _parse(raw)
        if isinstance(run, str):
            found.warnings.append(f"{path}:{number}: {run}; the line is skipped (fix or delete it)")
        elif run is not None:
            found.runs.append(run)
    return found


def _parse(raw: str) -> HistoryRun | str | None:
    if not raw.strip():
        return None
    if len(raw) > MAX_LINE:
        return f"a line of {len(raw)} characters, over {MAX_LINE}"
    try:
        data = json.loads(raw)
    except ValueError as exc:
        return f"not JSON ({exc})"
    if not isinstance(data, dict):
        return "not a JSON object"
    try:
        run = HistoryRun.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "line"
        return f"{where}: {first['msg']}"
    if run.passes > run.attempts:
        return f"passes ({run.passes}) over attempts ({run.attempts})"
    return run


def bounded(runs: Iterable[HistoryRun], keep: int = KEEP) -> list[HistoryRun]:
    """The runs sorted by time, the same run once, the last `keep` per engine and model."""
    unique = sorted(set(runs), key=lambda r: (r.at, r.engine, r.model, r.inputs, r.line()))
    counts: dict[tuple[str, str], int] = {}
    kept: list[HistoryRun] = []
    for run in reversed(unique):
        key = (run.engine, run.model)
        counts[key] = counts.get(key, 0) + 1
        if counts[key] <= keep:
            kept.append(run)
    return kept[::-1]


def add(cassettes: Path, case: str, run: HistoryRun, checkout: Path | None) -> None:
    """Add one run to the case's history, atomically (lines that could not be read are dropped:
    the warning when it was read said so)."""
    path = path_for(cassettes, case)
    if not is_inside(path.parent, cassettes) or (path.is_symlink() and not is_inside(path, cassettes)):
        raise OSError(f"{path}: resolves outside {cassettes} (a symlink?); remove it and record again")
    runs = bounded([*read(path, cassettes).runs, run])
    atomic_write(path, "".join(r.line() + "\n" for r in runs), checkout)
    attributes = cassettes / ".gitattributes"
    if not attributes.exists():
        atomic_write(attributes, ATTRIBUTES, checkout)


# --- what a report says of it -------------------------------------------------------------


@dataclass(frozen=True)
class Stretch:
    """The runs of one inputs fingerprint under one CLI release and served model."""

    runs: tuple[HistoryRun, ...]

    @property
    def passes(self) -> int:
        return sum(r.passes for r in self.runs)

    @property
    def attempts(self) -> int:
        return sum(r.attempts for r in self.runs)


def same_epoch(a: HistoryRun, b: HistoryRun) -> bool:
    return (a.cli, a.served) == (b.cli, b.served)


def current(runs: list[HistoryRun], inputs: str) -> tuple[Stretch, list[str]]:
    """The runs of these inputs since the last change of CLI release or served model, and each
    such change, in words (the cause a changed rate may have)."""
    mine = [r for r in runs if r.inputs == inputs]
    if not mine:
        return Stretch(()), []
    changes = [_change(a, b) for a, b in itertools.pairwise(mine) if not same_epoch(a, b)]
    last = mine[-1]
    start = len(mine)
    while start > 0 and same_epoch(mine[start - 1], last):
        start -= 1
    return Stretch(tuple(mine[start:])), changes


def _change(a: HistoryRun, b: HistoryRun) -> str:
    parts = []
    if a.cli != b.cli:
        parts.append(f"CLI {a.cli or '?'} → {b.cli or '?'}")
    if a.served != b.served:
        parts.append(f"served model {a.served or a.model} → {b.served or b.model}")
    return f"{' and '.join(parts)} on {b.at[:10]}"


def earlier(runs: list[HistoryRun], inputs: str, recorded: str | None) -> Stretch:
    """The runs of the inputs before these: those the cassette was recorded with, else the most
    recent other inputs (the base a changed case is weighed against), in their last epoch."""
    others = [r for r in runs if r.inputs != inputs]
    if not others:
        return Stretch(())
    wanted = recorded if recorded and recorded != inputs and any(r.inputs == recorded for r in others) \
        else others[-1].inputs
    stretch, _ = current(others, wanted)
    return stretch


def served_by(traffic: ModelTraffic, asked: str) -> str | None:
    """The model the API said it served in the agent's first answer (`model`, `message.model`,
    `response.model` or `modelVersion`), when it is not the one asked for."""
    for exchange in traffic.exchanges:
        if exchange.stream != "agent":
            continue
        answer = exchange.response
        for data in [e.data for e in answer.events or ()] or [answer.body]:
            found = _model_in(data)
            if found:
                return found[:200] if found != asked else None
    return None


def _model_in(data: Any) -> str | None:
    if not isinstance(data, dict):
        return None
    for holder in (data, data.get("message"), data.get("response")):
        if isinstance(holder, dict):
            for key in ("model", "modelVersion"):
                value = holder.get(key)
                if isinstance(value, str) and value:
                    return value
    return None
