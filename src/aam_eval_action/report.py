"""The eval report: exactly the seed's JSON, with additive fields only.

Reports are read back by `diff` and the PR comment, possibly from another machine or an
older version, so reading is tolerant of missing optional fields and unknown extra keys.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from aam_eval_action.errors import ConfigError

REPORT_VERSION = 1
SNIPPET_CHARS = 500
Verdict = Literal["PASS", "FAIL", "SKIP", "ERROR"]
CheckResult = Literal["PASS", "FAIL", "SKIP"]


class Part(BaseModel):
    """Base for report parts: extra keys from other versions are kept, not refused."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)


class RunConfig(Part):
    engine: str
    """Agent runtime used (from config or `--engine`)."""
    engine_version: str | None = None
    """The runtime's version, as reported by the engine."""
    judge: str | None = None
    """Judge model used (from config or `--judge`)."""
    timeout: float | None = None
    """Max seconds per case."""
    model: str | None = None
    """Agent model requested (additive)."""
    mode: str | None = None
    """Cassette mode of the run: replay, auto, record or live (additive)."""
    package_path: str | None = None
    """The package directory as given to --package, relative when it can be (additive)."""


class AgentInfo(Part):
    runtime: str | None = None
    """Actual agent runtime name."""
    runtime_version: str | None = None
    """Agent runtime version."""
    model: str | None = None
    """Model the agent used."""
    model_provider: str | None = None
    """`anthropic`, `openai`..."""
    session_id: str | None = None
    """A session id of the run, for traceability (per-case ids are on each case)."""


class JudgeInfo(Part):
    model: str | None = None
    """Judge model."""
    model_provider: str | None = None
    """Judge provider."""


class Environment(Part):
    os: str | None = None
    arch: str | None = None
    aam_version: str | None = None
    """Version of this tool."""
    node_version: str | None = None
    python_version: str | None = None


class PackageInfo(Part):
    name: str | None = None
    version: str | None = None


class Summary(Part):
    total: int
    passed: int
    failed: int
    skipped: int = 0
    pass_rate: float
    """passed / (total - skipped); 0 when nothing ran."""
    errored: int = 0
    """Cases that could not be graded (additive)."""
    flaky: int = 0
    """Cases whose repeated attempts disagreed (additive)."""
    cost_usd: float | None = None
    """Agent + judge cost when reported (additive)."""
    replayed: int = 0
    """Cases whose agent session came from a cassette (additive)."""


class JudgeVerdict(Part):
    result: Literal["PASS", "FAIL", "ERROR", "SKIP"]
    reason: str = ""
    model: str | None = None
    replayed: bool | None = None
    """Whether the judge call came from a cassette (additive)."""


class Attempt(Part):
    """One attempt of a repeated case (additive)."""

    verdict: Verdict
    error: str | None = None
    duration_seconds: float | None = None


class CaseResult(Part):
    name: str
    target: str | None = None
    verdict: Verdict
    duration_seconds: float = 0
    deterministic_checks: dict[str, CheckResult] = Field(default_factory=dict)
    judge_verdict: JudgeVerdict | None = None
    agent_output_snippet: str = ""
    error: str | None = None
    file: str | None = None
    """Case file, relative to the package root (additive)."""
    line: int | None = None
    """Line of the case in its file (additive)."""
    replayed: bool | None = None
    """Whether the agent session came from a cassette (additive)."""
    fingerprint: str | None = None
    """Hash of every input that shaped the agent session (additive)."""
    session_id: str | None = None
    """The engine's session id (additive)."""
    usage: dict[str, int] | None = None
    """Token usage of the agent session (additive)."""
    cost_usd: float | None = None
    """Agent + judge cost in USD when reported (additive)."""
    attempts: list[Attempt] | None = None
    """Every attempt when the case was repeated (additive)."""
    flaky: bool | None = None
    """Whether repeated attempts disagreed (additive)."""
    replay_miss: Literal["no-cassette", "stale", "damaged"] | None = None
    """Why replay could not serve this case, when it could not (additive)."""


class Report(Part):
    version: int
    id: str
    timestamp: str
    duration_seconds: float
    config: RunConfig
    agent: AgentInfo = Field(default_factory=AgentInfo)
    judge: JudgeInfo = Field(default_factory=JudgeInfo)
    environment: Environment = Field(default_factory=Environment)
    package: PackageInfo = Field(default_factory=PackageInfo)
    summary: Summary
    cases: list[CaseResult]
    interrupted: bool | None = None
    """True when the run was interrupted and this report is partial (additive)."""


def summarize(cases: list[CaseResult]) -> Summary:
    """Counts and pass rate over case results."""
    passed = sum(c.verdict == "PASS" for c in cases)
    skipped = sum(c.verdict == "SKIP" for c in cases)
    ran = len(cases) - skipped
    costs = [c.cost_usd for c in cases if c.cost_usd is not None]
    return Summary(
        total=len(cases),
        passed=passed,
        failed=sum(c.verdict == "FAIL" for c in cases),
        skipped=skipped,
        errored=sum(c.verdict == "ERROR" for c in cases),
        flaky=sum(bool(c.flaky) for c in cases),
        pass_rate=round(passed / ran, 4) if ran else 0.0,
        cost_usd=round(sum(costs), 6) if costs else None,
        replayed=sum(bool(c.replayed) for c in cases),
    )


def snippet(text: str) -> str:
    """The report's agent output snippet: the first 500 characters."""
    return text[:SNIPPET_CHARS]


def to_json(report: Report) -> str:
    """Stable JSON: seed field order, no nulls for absent additive fields, trailing newline."""
    data = report.model_dump(mode="json", exclude_none=True)
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def load_report(path: Path) -> Report:
    """Read a report written by any version; a broken one is a clear error."""
    try:
        raw: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such report file") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: not a JSON report ({exc})") from None
    try:
        return Report.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise ConfigError(
            f"{path}: {where}: {first['msg']} — is this an aam-eval report?"
        ) from None
