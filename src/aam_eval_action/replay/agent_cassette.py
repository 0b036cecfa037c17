"""Agent cassettes: one YAML file per case and engine holding what grading needs without the agent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from aam_eval_action.fsutil import atomic_write, dump_yaml
from aam_eval_action.session import Session

CASSETTE_VERSION = 1
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# Fields that differ between two recordings of the same interaction; ignored when deciding
# whether a re-recording changed anything, so identical interactions leave the file untouched.
VOLATILE = ("recorded_at", "duration_seconds", "session_id")


class CassetteError(Exception):
    """A cassette that cannot be used; the message names the file and the problem."""


class FingerprintRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    digest: str
    """Hash over all inputs."""
    inputs: dict[str, str]
    """Per-input hash (or value), so a miss can say what changed."""


class AgentCassette(BaseModel):
    """`<cassettes>/<case>/<engine>.session.yaml`."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

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
    attempts: list[Session]
    """One session per attempt (several with --repeat)."""
    model_traffic: list[dict[str, Any]] | None = None
    """Each attempt's model traffic (`replay/traffic.py`, its shared entries in
    `<cassettes>/_shared/`), for re-executing the real CLI against it; absent in older cassettes."""


def session_path(cassettes: Path, case: str, engine: str) -> Path:
    return cassettes / case / f"{engine}.session.yaml"


def judge_path(cassettes: Path, case: str, engine: str) -> Path:
    return cassettes / case / f"{engine}.judge.yaml"


def load(path: Path) -> AgentCassette | None:
    """The cassette at `path`; None when there is none; CassetteError when it is damaged."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise CassetteError(f"{path}: cannot be read ({exc})") from None
    try:
        data = yaml.load(text, Loader=_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise CassetteError(f"{path}: damaged YAML{where}") from None
    if not isinstance(data, dict):
        raise CassetteError(f"{path}: not a cassette (expected a mapping)")
    version = data.get("version")
    if isinstance(version, int) and version > CASSETTE_VERSION:
        raise CassetteError(
            f"{path}: cassette format version {version} is newer than this aam-eval supports "
            f"({CASSETTE_VERSION}); upgrade aam-eval-action"
        )
    try:
        return AgentCassette.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise CassetteError(f"{path}: damaged cassette: {where}: {err['msg']}") from None


def save(path: Path, cassette: AgentCassette) -> bool:
    """Write atomically unless only volatile fields differ; True when the file changed."""
    try:
        existing = load(path)
    except CassetteError:
        existing = None
    # Compared as written text, so float rounding in the file cannot make equal data differ.
    if existing is not None and dump_yaml(_stable(existing)) == dump_yaml(_stable(cassette)):
        return False
    atomic_write(path, dump_yaml(cassette.model_dump(mode="json", exclude_none=True)))
    return True


def _stable(cassette: AgentCassette) -> Any:
    data = cassette.model_dump(mode="json", exclude_none=True)
    data.pop("recorded_at", None)
    for attempt in data.get("attempts", []):
        for key in VOLATILE:
            attempt.pop(key, None)
    return data


def list_recorded(cassettes: Path) -> dict[str, list[str]]:
    """Case name → engines with a session cassette, for finding orphans."""
    found: dict[str, list[str]] = {}
    if not cassettes.is_dir():
        return found
    for path in sorted(cassettes.glob("*/*.session.yaml")):
        found.setdefault(path.parent.name, []).append(path.name.removesuffix(".session.yaml"))
    return found
