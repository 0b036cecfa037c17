"""The GitHub Action entry point (`aam-eval action`): inputs in, report, diff, comment out.

Every input is read once, from the `INPUT_*` variables GitHub sets for a docker action,
into one validated settings object; the `GITHUB_*` environment gives the event.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from aam_eval_action.config import Mode
from aam_eval_action.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, AamEvalError, ConfigError
from aam_eval_action.report import Report

INPUTS = (
    "mode", "package-path", "cases", "target", "engine", "model", "judge", "jobs", "shard",
    "base-ref", "base-report", "comment", "comment-template", "comment-id", "fail-on",
    "min-pass-rate", "report-path", "merge-reports", "github-token", "anthropic-api-key",
    "openai-api-key",
)


class ActionInputs(BaseModel):
    """The action's inputs, kebab-case as in action.yml; empty means unset."""

    model_config = ConfigDict(extra="forbid", populate_by_name=False)

    mode: Mode = "replay"
    package_path: str = Field(".", alias="package-path")
    cases: list[str] = Field(default_factory=list)
    target: str | None = None
    engine: str | None = None
    model: str | None = None
    judge: str | None = None
    jobs: int | None = Field(None, ge=1, le=64)
    shard: str | None = None
    base_ref: str | None = Field(None, alias="base-ref")
    base_report: str | None = Field(None, alias="base-report")
    comment: bool | None = None
    comment_template: str | None = Field(None, alias="comment-template")
    comment_id: str | None = Field(None, alias="comment-id")
    fail_on: Literal["regression", "failure", "never"] = Field("regression", alias="fail-on")
    min_pass_rate: float | None = Field(None, alias="min-pass-rate", ge=0, le=100)
    report_path: str | None = Field(None, alias="report-path")
    merge_reports: str | None = Field(None, alias="merge-reports")
    """Glob of shard reports to merge as the head report instead of running cases."""
    github_token: str | None = Field(None, alias="github-token", repr=False)
    anthropic_api_key: str | None = Field(None, alias="anthropic-api-key", repr=False)
    openai_api_key: str | None = Field(None, alias="openai-api-key", repr=False)

    @field_validator("cases", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        if isinstance(value, str):
            return [c for c in value.replace(",", " ").split() if c]
        return value

    @field_validator("min_pass_rate", mode="before")
    @classmethod
    def _percent(cls, value: object) -> object:
        # "0.8" and "80" and "80%" all mean 80 %.
        if isinstance(value, str):
            text = value.strip().removesuffix("%")
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
    event: dict[str, object]
    repository: str
    api_url: str
    server_url: str
    run_id: str
    workspace: Path
    output_file: Path | None
    summary_file: Path | None

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
    def run_url(self) -> str | None:
        if not (self.repository and self.run_id):
            return None
        return f"{self.server_url}/{self.repository}/actions/runs/{self.run_id}"


def main(environ: Mapping[str, str] | None = None) -> int:
    """Run the action; the exit code decides the step's status."""
    env = os.environ if environ is None else environ
    try:
        inputs = ActionInputs.from_env(env)
        gh = GitHubContext.from_env(env)
        _mask(inputs)
        _export_keys(inputs)
        from aam_eval_action.action_flow import run_action

        return run_action(inputs, gh)
    except AamEvalError as exc:
        # The same message as an annotation, so it shows on the run's summary page.
        print("::error::" + str(exc).replace("%", "%25").replace("\n", "%0A"), flush=True)
        raise


def _mask(inputs: ActionInputs) -> None:
    for secret in (inputs.anthropic_api_key, inputs.openai_api_key, inputs.github_token):
        if secret:
            print(f"::add-mask::{secret}", flush=True)


def _export_keys(inputs: ActionInputs) -> None:
    # The run reads keys from the environment, like the CLI; only live modes use them.
    if inputs.anthropic_api_key:
        os.environ["ANTHROPIC_API_KEY"] = inputs.anthropic_api_key
    if inputs.openai_api_key:
        os.environ["OPENAI_API_KEY"] = inputs.openai_api_key


def exit_code(
    inputs: ActionInputs, head: Report, regressions: int, interrupted: bool, stale: int = 0
) -> int:
    """fail-on and min-pass-rate decide the step's status.

    Stale cassettes fail `regression` too: those cases were not evaluated at all.
    """
    if interrupted:
        return EXIT_INTERRUPTED
    failed = False
    if inputs.fail_on == "regression":
        failed = regressions > 0 or stale > 0
    elif inputs.fail_on == "failure":
        failed = any(c.verdict in ("FAIL", "ERROR") for c in head.cases)
    if inputs.min_pass_rate is not None and head.summary.pass_rate * 100 < inputs.min_pass_rate:
        print(f"::error::pass rate {head.summary.pass_rate * 100:.1f}% is below "
              f"min-pass-rate {inputs.min_pass_rate:g}%", file=sys.stdout)
        failed = True
    return EXIT_FAILED if failed else EXIT_OK
