"""The dice story, shared by tests/test_dice_e2e.py and bench/bench_dice_e2e.py: main's nightlies
record tests/fixtures/dice (each committed with what it wrote), a pull request rewords the
seven's skill and breaks the nine's, `run --mode auto` samples the changed cases, and the head
report is diffed against main's commit replayed in a worktree."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aam_eval_action.testing.model_server import ModelServer, load_scenarios

ROOT = Path(__file__).resolve().parents[2]
DICE = ROOT / "tests/fixtures/dice"
KEYS = {"ANTHROPIC_API_KEY": "sk-ant-CANARY-dice-e2e-71c3", "OPENAI_API_KEY": "sk-CANARY-dice-e2e-0b9d",
        "GEMINI_API_KEY": "CANARY-gemini-dice-e2e-44aa"}
NIGHT_SEEDS = (136, 137, 138, 139)
"""Main's nightlies draw: steady H H H H, seven H H T H, nine H H H T (its last night a FAIL)."""
HEAD_SEED = 203
"""The pull request's run draws the broken nine tails eleven times before heads, the seven heads."""
ENGINES = {
    "claude-code": (),
    "codex": ("--engine", "codex", "--model", "gpt-5.5"),
    "copilot": ("--engine", "copilot"),
    "gemini-cli": ("--engine", "gemini-cli", "--model", "gemini-2.5-pro", "--judge", "claude-sonnet-4-6"),
}
REWORDED = """---
name: seven
description: The seven die - roll it when someone asks for the seven die; it comes up a winner seven times in ten.
---

# The seven die

Roll the die once and tell the user the face it landed on, in one line.
"""


@dataclass
class Story:
    repo: Path
    reports: Path
    main: str
    """Main's last commit."""
    diff: dict[str, Any]
    """`aam-eval diff base head --format json`."""
    head: dict[str, Any]
    nightly_regressions: list[int]
    """Regressions blamed by each diff between consecutive nightlies (inputs unchanged)."""
    sessions: dict[str, int]
    """Agent sessions the model server answered: nightlies, head."""


def aam_eval(*argv: str) -> tuple[int, str, str]:
    """The real entry point, in-process: (exit code, stdout, stderr)."""
    from aam_eval_action.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@contextlib.contextmanager
def _environ(values: dict[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def run(repo: Path, seed: int, out: Path, *argv: str) -> tuple[dict[str, Any], int]:
    """`aam-eval run` against the scripted model server, its coin seeded: the report and the
    agent sessions answered."""
    scenarios = load_scenarios(DICE / "scenarios.json")
    with ModelServer(scenarios, api_key=tuple(KEYS.values()), seed=seed) as server, _environ(
            {"ANTHROPIC_BASE_URL": server.url, "OPENAI_BASE_URL": server.url + "/v1",
             "GOOGLE_GEMINI_BASE_URL": server.url, **KEYS}):
        code, stdout, stderr = aam_eval("run", "--package", str(repo), *argv, "--jobs", "3", "-o", str(out))
        draws = sum(n for counts in server.coin_draws.values() for n in counts.values())
    assert code in (0, 1), stdout + stderr
    return json.loads(out.read_text()), draws


def diff(base: Path, head: Path, form: str = "json") -> str:
    code, stdout, stderr = aam_eval("diff", str(base), str(head), "--format", form)
    assert code in (0, 1), stderr
    return stdout


def _git(repo: Path, *argv: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *argv], check=True, capture_output=True, text=True).stdout


def _commit(repo: Path, message: str) -> None:
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=n", "-c", "user.email=n@x", "commit", "-qm", message)


def story(tmp: Path, engine: tuple[str, ...]) -> Story:
    repo, reports = tmp / "repo", tmp / "reports"
    shutil.copytree(DICE, repo)
    _git(tmp, "init", "-q", "-b", "main", str(repo))
    _commit(repo, "dice")
    nights = 0
    for night, seed in enumerate(NIGHT_SEEDS):
        nights += run(repo, seed, reports / f"night-{night}.json", "--record", "--no-self-check", *engine)[1]
        _commit(repo, f"night {night}")
    nightly = [json.loads(diff(reports / f"night-{n - 1}.json", reports / f"night-{n}.json"))["regressions"]
               for n in range(1, len(NIGHT_SEEDS))]
    main = _git(repo, "rev-parse", "HEAD").strip()
    _git(repo, "checkout", "-qb", "pr")
    (repo / "skills/seven/SKILL.md").write_text(REWORDED)
    shutil.copy(DICE / "variants/broken-nine/SKILL.md", repo / "skills/nine/SKILL.md")
    _commit(repo, "reword seven, break nine")
    head, head_sessions = run(repo, HEAD_SEED, reports / "head.json", "--mode", "auto", *engine)
    _git(repo, "worktree", "add", "-q", str(tmp / "base"), main)
    run(tmp / "base", 0, reports / "base.json", "--replay", *engine)
    found = json.loads(diff(reports / "base.json", reports / "head.json"))
    return Story(repo, reports, main, found, head, nightly, {"nightlies": nights, "head": head_sessions})
