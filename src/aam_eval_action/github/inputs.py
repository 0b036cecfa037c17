"""The action's inputs and the workflow run's context, each read once into a validated object.

Inputs come from the `INPUT_*` variables GitHub sets for a docker action; the `GITHUB_*`
environment gives the event, the repository and the file-command paths.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from aam_eval_action.errors import ConfigError
from aam_eval_action.modes import Mode, Rerun

INPUTS = (
    "mode", "package-path", "cases", "target", "engine", "model", "judge", "jobs", "shard",
    "base-ref", "base-report", "comment", "comment-template", "comment-id", "fail-on",
    "min-pass-rate", "report-path", "merge-reports", "github-token", "anthropic-api-key",
    "openai-api-key", "gemini-api-key", "baseline", "allow-live-on-pr", "rerun", "plugin", "strict", "tags",
    "suite",
    "max-usd", "judge-gate", "allow-empty", "sandbox-enforce", "threshold", "ablation", "runs",
    "scaffold", "allow-tools", "mocks", "allow-real-servers", "tune", "tune-skill", "sensitivity",
    "sensitivity-mutants", "max-runs", "confidence", "fail-on-not-shown",
)


class ActionInputs(BaseModel):
    """The action's inputs, kebab-case as in action.yml; empty means unset."""

    model_config = ConfigDict(extra="forbid", populate_by_name=False)

    mode: Mode = "replay"
    """replay, auto, record or live; live modes need keys."""
    package_path: str = Field(".", alias="package-path")
    """The package or repository root (any layout: an AAM package, a plugin, a marketplace, a
    Gemini CLI extension, a folder of skills), relative to the workspace."""
    plugin: list[str] = Field(default_factory=list)
    """Only these plugins of a marketplace (space- or comma-separated); all when empty."""
    strict: bool = False
    """The package's lint warnings (SKILL.md, manifests, hooks) fail the step."""
    tags: str | None = None
    """Only cases whose tags satisfy this expression, e.g. `sql && !slow`."""
    suite: str | None = None
    """Only the stimuli a `.vally.yaml` suite selects, as `vally eval --suite` does."""
    judge_gate: Literal["always", "calibrated", "never"] | None = Field(None, alias="judge-gate")
    """Whether a judge FAIL fails its case; default from eval-config (always)."""
    sandbox_enforce: Literal["best-effort", "required"] | None = Field(None, alias="sandbox-enforce")
    """`required`: refuse to run an agent session the OS cannot confine as eval-config's sandbox
    asks; default from eval-config (best-effort, reporting what was enforced)."""
    max_usd: float | None = Field(None, alias="max-usd", gt=0)
    """Spend at most this many USD on model calls; default from eval-config (no cap)."""
    threshold: float | None = Field(None, ge=0, le=1)
    """The score a `claude plugin eval` case passes at; default from eval-config (1.0)."""
    ablation: Literal["none", "with-without"] | None = None
    """`claude plugin eval` cases: also run without the plugin (with-without) or not (none);
    default from eval-config (with-without)."""
    scaffold: bool = False
    """Run `claude plugin eval` cases' scaffold scripts (inside the sandbox) before their sessions."""
    allow_real_servers: bool = Field(False, alias="allow-real-servers")
    """Start the plugin's MCP servers a `claude plugin eval` case does not mock (else not started)."""
    allow_tools: list[str] = Field(default_factory=list, alias="allow-tools")
    """Tools `claude plugin eval` cases may use beyond the read-only ones (space- or
    comma-separated), as that runner's `--allow-tools`."""
    mocks: Literal["record", "off"] = "record"
    """`claude plugin eval` cases' mocks: record (their stand-ins answer) or off (the plugin's own
    servers start, inside the sandbox)."""
    tune: Literal["off", "suggest"] = "off"
    """`suggest`: run `aam-eval tune` for `tune-skill` (replayed from its recordings in replay mode) and
    post a winning description as a suggested change on the pull request."""
    tune_skill: list[str] = Field(default_factory=list, alias="tune-skill")
    """The skill(s) `tune: suggest` tunes (space- or comma-separated)."""
    sensitivity: Literal["off", "on"] = "off"
    """`on`: run `aam-eval sensitivity` after the suite (in replay mode from the recordings a nightly
    run made; in a live mode recording them): its kill matrix in the job summary, its JSON and HTML
    page beside the report."""
    sensitivity_mutants: str | None = Field(None, alias="sensitivity-mutants")
    """The mutants `sensitivity: on` runs (kinds, directions or id patterns, as `--mutants`); all when
    empty."""
    runs: int | None = Field(None, ge=1, le=100)
    max_runs: int | None = Field(None, alias="max-runs", ge=1, le=100)
    """Live modes: attempts a changed case may take until the evidence decides (default 12)."""
    confidence: float | None = Field(None, ge=0.5, lt=1)
    """The confidence a blamed regression needs (default 0.95)."""
    fail_on_not_shown: bool = Field(False, alias="fail-on-not-shown")
    """A case the evidence could not decide fails the step (by default it is a warning)."""
    """Runs of every case, over each case's own, as `claude plugin eval --runs`; default: each case's."""
    cases: list[str] = Field(default_factory=list)
    """Case names to run (space- or comma-separated); all when empty."""
    target: str | None = None
    """Only cases with this target (`skill:NAME`, `hook:EVENT`, `agent:NAME`)."""
    engine: str | None = None
    """Agent engine; default from eval-config."""
    model: str | None = None
    """The agent's model; default from eval-config."""
    judge: str | None = None
    """The judge model; default from eval-config, else the agent's model."""
    jobs: int | None = Field(None, ge=1, le=64)
    """Cases run concurrently; default from eval-config."""
    shard: str | None = None
    """Run shard I of N (`I/N`) of the selected cases."""
    base_ref: str | None = Field(None, alias="base-ref")
    """The commit or branch to diff against; default: the pull request's base."""
    base_report: str | None = Field(None, alias="base-report")
    """A report file to diff against instead of replaying the base."""
    comment: bool | None = None
    """Post or update the sticky PR comment; default: on pull_request events."""
    comment_template: str | None = Field(None, alias="comment-template")
    """A user Jinja template for the comment (may extend comment.md.j2)."""
    comment_id: str | None = Field(None, alias="comment-id")
    """Keeps a separate sticky comment per id (several workflows on one PR)."""
    fail_on: Literal["regression", "failure", "never"] = Field("regression", alias="fail-on")
    """What fails the step: a regression (or stale cassette), any failure, or nothing."""
    min_pass_rate: float | None = Field(None, alias="min-pass-rate", ge=0, le=100)
    """Fail the step below this pass rate, in percent."""
    report_path: str | None = Field(None, alias="report-path")
    """Where to write the head report, relative to the workspace."""
    merge_reports: str | None = Field(None, alias="merge-reports")
    """Glob of shard reports to merge as the head report instead of running cases."""
    github_token: str | None = Field(None, alias="github-token", repr=False)
    """Token for posting the comment."""
    anthropic_api_key: str | None = Field(None, alias="anthropic-api-key", repr=False)
    """Anthropic key; only live modes use it."""
    openai_api_key: str | None = Field(None, alias="openai-api-key", repr=False)
    """OpenAI key; only live modes use it."""
    gemini_api_key: str | None = Field(None, alias="gemini-api-key", repr=False)
    """Gemini API key, for the gemini-cli engine; only live modes use it."""
    baseline: bool | None = None
    """Also run each case without the skill to measure its lift; default from eval-config."""
    allow_live_on_pr: bool = Field(False, alias="allow-live-on-pr")
    """Let live modes run on pull_request_target and on a fork's pull request (they run the
    PR's hooks and scripts with the API keys); refused unless true."""
    allow_empty: bool = Field(False, alias="allow-empty")
    """A run that selects no case passes (a warning) instead of failing the step (an error)."""
    rerun: Rerun | None = None
    """Re-execute replay: auto, always or never (snapshot only); default from eval-config.
    Re-executing needs the recorded agent CLI, i.e. the live image (`.../live@v1`)."""

    @field_validator("cases", "plugin", "tune_skill", "allow_tools", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        if isinstance(value, str):
            return [c for c in value.replace(",", " ").split() if c]
        return value

    @field_validator("min_pass_rate", mode="before")
    @classmethod
    def _percent(cls, value: object) -> object:
        # "0.8", "80" and "80%" all mean 80 %: a bare number of at most 1 with a decimal
        # point is a fraction; with `%` it is always percent ("0.5%" is half a percent).
        if isinstance(value, str):
            text = value.strip()
            if text.endswith("%"):
                return float(text.removesuffix("%").strip())
            number = float(text)
            return number * 100 if number <= 1 and "." in text else number
        return value

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> ActionInputs:
        raw = {}
        for name in INPUTS:
            value = environ.get(f"INPUT_{name.upper()}", "").strip()
            if value:
                raw[name] = value
        try:
            return cls.model_validate(raw)
        except ValidationError as exc:
            err = exc.errors()[0]
            name = str(err["loc"][0]) if err["loc"] else "?"
            raise ConfigError(f"action input {name!r}: {err['msg']}") from None


@dataclass(frozen=True)
class GitHubContext:
    """What the workflow run is: event, repository, API, file-command paths."""

    event_name: str
    """`pull_request`, `push`, `schedule`..."""
    event: dict[str, object]
    """The event payload from `GITHUB_EVENT_PATH`."""
    repository: str
    """`OWNER/NAME`."""
    api_url: str
    """`GITHUB_API_URL` (GitHub Enterprise: `https://HOST/api/v3`)."""
    server_url: str
    """`GITHUB_SERVER_URL`, for links to the run."""
    run_id: str
    """`GITHUB_RUN_ID`."""
    workspace: Path
    """`GITHUB_WORKSPACE`: the checked-out repository."""
    output_file: Path | None
    """`GITHUB_OUTPUT`, where outputs go."""
    summary_file: Path | None
    """`GITHUB_STEP_SUMMARY`, where the job summary goes."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> GitHubContext:
        event: dict[str, object] = {}
        path = environ.get("GITHUB_EVENT_PATH")
        if path and Path(path).is_file():
            event = json.loads(Path(path).read_text(encoding="utf-8"))
        out, summary = environ.get("GITHUB_OUTPUT"), environ.get("GITHUB_STEP_SUMMARY")
        return cls(
            event_name=environ.get("GITHUB_EVENT_NAME", ""),
            event=event,
            repository=environ.get("GITHUB_REPOSITORY", ""),
            api_url=environ.get("GITHUB_API_URL", "https://api.github.com"),
            server_url=environ.get("GITHUB_SERVER_URL", "https://github.com"),
            run_id=environ.get("GITHUB_RUN_ID", ""),
            workspace=Path(environ.get("GITHUB_WORKSPACE", ".")),
            output_file=Path(out) if out else None,
            summary_file=Path(summary) if summary else None,
        )

    @property
    def pull_request(self) -> dict[str, object] | None:
        pr = self.event.get("pull_request")
        return pr if isinstance(pr, dict) else None

    @property
    def untrusted_pr(self) -> str | None:
        """Why this run's pull request may not use live modes, or None.

        `pull_request_target` runs with the base's secrets on the PR's code; a fork's PR is
        written by someone outside the repository.
        """
        if self.event_name == "pull_request_target":
            return "this is a pull_request_target run"
        pr = self.pull_request
        if pr is None:
            return None
        head, base = _repo_name(pr.get("head")), _repo_name(pr.get("base"))
        if base and head is None:
            return "this pull request's head repository is unknown (a deleted fork?)"
        if head and base and head != base:
            return f"this pull request comes from a fork ({head})"
        return None

    @property
    def run_url(self) -> str | None:
        if not (self.repository and self.run_id):
            return None
        return f"{self.server_url}/{self.repository}/actions/runs/{self.run_id}"


def _repo_name(side: object) -> str | None:
    """`head.repo.full_name` / `base.repo.full_name` of a pull-request payload."""
    repo = side.get("repo") if isinstance(side, dict) else None
    name = repo.get("full_name") if isinstance(repo, dict) else None
    return name if isinstance(name, str) else None
