"""Agent cassettes: one YAML file per case and engine holding what grading needs without the agent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from aam_eval_action.fsutil import atomic_write, dump_yaml, is_inside
from aam_eval_action.replay.prefetch import load_file
from aam_eval_action.replay.untrusted import UntrustedFileError
from aam_eval_action.session import SelfCheck, Session

CASSETTE_VERSION = 1
RECORDED_LOCALLY = "recorded locally"
# Fields that differ between two recordings of the same interaction; ignored when deciding
# whether a re-recording changed anything, so identical interactions leave the file untouched.
VOLATILE = ("recorded_at", "duration_seconds", "session_id")


class CassetteError(Exception):
    """A cassette that cannot be used; the message names the file and the problem."""


class FingerprintRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    digest: str
    """Hash over all inputs."""
    inputs: dict[str, str]
    """Per-input hash (or value), so a miss can say what changed."""


class AgentCassette(BaseModel):
    """`<cassettes>/<case>/<engine>.session.yaml`."""

    model_config = ConfigDict(extra="forbid")

    version: int = CASSETTE_VERSION
    """Cassette format version; newer versions are refused."""
    case: str
    """Case name."""
    engine: str
    """Engine that recorded it."""
    recorded_at: str
    """When it was recorded (UTC, ISO 8601)."""
    fingerprint: FingerprintRecord
    """Inputs that shaped the session."""
    attempts: list[Session] = Field(min_length=1)
    """One session per attempt (several with --repeat); at least one."""
    provenance: str | None = None
    """Where it was recorded: the CI run's URL, or `recorded locally`."""
    model_traffic: list[dict[str, Any]] | None = None
    """Each attempt's model traffic (`replay/traffic.py`, its shared entries in
    `<cassettes>/_shared/`), for re-executing the real CLI against it; absent in older cassettes."""
    self_check: list[SelfCheck] | None = None
    """Each attempt's self-check: its traffic re-executed once right after recording. A recording
    that did not come out clean is not re-executed later (it would diverge there)."""


def session_path(cassettes: Path, case: str, stem: str, variant: str = "") -> Path:
    """`<case>/<stem>.session.yaml`, the stem being the engine (`<engine>@<model>` for a model
    other than its own); a variant (`baseline`) gets `<stem>.<variant>.session.yaml`."""
    return cassettes / case / f"{_stem(stem, variant)}.session.yaml"


def judge_path(cassettes: Path, case: str, stem: str, variant: str = "") -> Path:
    return cassettes / case / f"{_stem(stem, variant)}.judge.yaml"


def user_path(cassettes: Path, case: str, stem: str) -> Path:
    """`<case>/<stem>.user.yaml`: the simulated user's calls of a conversation case."""
    return cassettes / case / f"{stem}.user.yaml"


def mocks_path(cassettes: Path, case: str, stem: str) -> Path:
    """`<case>/<stem>.mocks.yaml`: the model calls of a case's agent-played MCP mocks."""
    return cassettes / case / f"{stem}.mocks.yaml"


def _stem(stem: str, variant: str) -> str:
    return f"{stem}.{variant}" if variant else stem


def load(path: Path, cassettes: Path | None = None) -> AgentCassette | None:
    """The cassette at `path`; None when there is none; CassetteError when it is damaged.

    The file may come from a pull request: it is read bounded and alias-free with the safe
    loader, every path in it is validated, and its fingerprint digest must match its inputs.
    With `cassettes`, a cassette that resolves (through a symlink) outside it is refused.
    """
    try:
        found, data = load_file(path, inside=cassettes)
    except UntrustedFileError as exc:
        raise CassetteError(str(exc)) from None
    if not found:
        return None
    if not isinstance(data, dict):
        raise CassetteError(f"{path}: not a cassette (expected a mapping); re-record the case")
    version = data.get("version")
    if isinstance(version, int) and version > CASSETTE_VERSION:
        raise CassetteError(
            f"{path}: cassette format version {version} is newer than this aam-eval supports "
            f"({CASSETTE_VERSION}); upgrade aam-eval-action"
        )
    try:
        cassette = AgentCassette.model_validate(data)
    except ValidationError as exc:
        raise CassetteError(_describe(path, _text(path), exc)) from None
    _check_digest(path, cassette)
    return cassette


def _describe(path: Path, text: str, exc: ValidationError) -> str:
    """`<file>:<line>: damaged cassette: <field>: <problem>; re-record the case`."""
    from aam_eval_action.loader import line_of

    err = exc.errors()[0]
    loc = tuple(err["loc"])
    where = ".".join(str(p) for p in loc)
    line = line_of(text, loc)
    msg = str(err["msg"]).removeprefix("Value error, ")
    return f"{path}{f':{line}' if line else ''}: damaged cassette: {where}: {msg}; re-record the case"


def _text(path: Path) -> str:
    """The cassette's text, for the line of a problem found in it."""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _check_digest(path: Path, cassette: AgentCassette) -> None:
    """A digest that does not hash its own inputs was edited by hand."""
    from aam_eval_action.loader import line_of
    from aam_eval_action.replay.fingerprint import Fingerprint

    fp = cassette.fingerprint
    if Fingerprint.of(fp.inputs).digest != fp.digest:
        line = line_of(_text(path), ("fingerprint", "digest"))
        raise CassetteError(
            f"{path}{f':{line}' if line else ''}: damaged cassette: fingerprint.digest does not "
            "match fingerprint.inputs (edited by hand?); re-record the case"
        )


def save(
    path: Path, cassette: AgentCassette, cassettes: Path | None = None, *, checkout: Path | None
) -> bool:
    """Write atomically unless only volatile fields differ; True when the file changed
    (`checkout`: see `fsutil.atomic_write`).

    With `cassettes`, a path that resolves (through a symlinked folder) outside it is refused.
    """
    if cassettes is not None and not is_inside(path.parent, cassettes):
        raise CassetteError(f"{path.parent}: resolves outside {cassettes} (a symlink?); "
                            "remove it and record again")
    try:
        existing = load(path, cassettes)
    except CassetteError:
        existing = None
    # Compared as written text, so float rounding in the file cannot make equal data differ.
    if existing is not None and dump_yaml(_stable(existing)) == dump_yaml(_stable(cassette)):
        return False
    atomic_write(path, dump_yaml(cassette.model_dump(mode="json", exclude_none=True)), checkout)
    return True


def _stable(cassette: AgentCassette) -> Any:
    data = cassette.model_dump(mode="json", exclude_none=True)
    data.pop("recorded_at", None)
    data.pop("provenance", None)
    for attempt in data.get("attempts", []):
        for key in VOLATILE:
            attempt.pop(key, None)
    return data


def list_recorded(cassettes: Path) -> dict[str, list[str]]:
    """Case name → the stems (`<engine>`, `<engine>@<model>`) with a session cassette, for
    finding orphans."""
    found: dict[str, list[str]] = {}
    if not cassettes.is_dir():
        return found
    for path in sorted(cassettes.glob("*/*.session.yaml")):
        stem = path.name.removesuffix(".session.yaml")
        if not stem.endswith(".baseline"):  # `<stem>.baseline` belongs to the same case and pair
            found.setdefault(path.parent.name, []).append(stem)
    return found
