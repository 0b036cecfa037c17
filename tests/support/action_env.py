"""The environment GitHub gives a docker action on a pull request: an event file, the GITHUB_*
variables and the action's inputs as INPUT_* (kebab-case, upper-cased as the runner does)."""

from __future__ import annotations

import json
from pathlib import Path

from support.gitrepo import git

OWNER, REPO = "acme", "evals"


def pull_request_env(
    repo: Path, tmp: Path, api: str, token: str, base_sha: str, pr: int, **inputs: str
) -> dict[str, str]:
    """A `pull_request` run of the action on `repo` (head: its HEAD), replaying package `pkg`."""
    event = tmp / "event.json"
    event.write_text(json.dumps({
        "action": "synchronize", "number": pr,
        "pull_request": {"number": pr, "base": {"ref": "main", "sha": base_sha},
                         "head": {"ref": "pr", "sha": git(repo, "rev-parse", "HEAD")}},
        "repository": {"full_name": f"{OWNER}/{REPO}"},
    }))
    env = {
        "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event),
        "GITHUB_REPOSITORY": f"{OWNER}/{REPO}", "GITHUB_API_URL": api,
        "GITHUB_SERVER_URL": "https://github.example", "GITHUB_RUN_ID": "42",
        "GITHUB_WORKSPACE": str(repo), "GITHUB_OUTPUT": str(tmp / "output.txt"),
        "GITHUB_STEP_SUMMARY": str(tmp / "summary.md"),
        "INPUT_PACKAGE-PATH": "pkg", "INPUT_GITHUB-TOKEN": token, "INPUT_MODE": "replay",
        "INPUT_REPORT-PATH": "head-report.json",
    }
    env.update({f"INPUT_{k.upper().replace('_', '-')}": v for k, v in inputs.items()})
    return env
