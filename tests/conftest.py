"""Shared fixtures: real temporary packages built on disk, and the CLI run in-process."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from aam_eval_action.testing.model_server import ModelServer

if TYPE_CHECKING:
    from aam_eval_action.engines.base import Engine

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
EXAMPLE = ROOT / "examples" / "csv-tools"

from support.agent_clis import CliSetupError, ensure_pinned_clis, read_pins  # noqa: E402

PINNED_CLAUDE = next(p.version for p in read_pins() if p.command == "claude")
"""The pinned Claude Code release (the shipped example is recorded with it)."""
from support.file_times import (  # noqa: E402
    longest_first,
    pytest_runtest_logreport,
    pytest_terminal_summary,
)
from support.strict_skips import (  # noqa: E402
    ALLOW_ENV,
    pytest_collectreport,
    pytest_runtest_makereport,
    skips_allowed,
)

__all__ = ["pytest_collectreport", "pytest_runtest_logreport", "pytest_runtest_makereport",
           "pytest_terminal_summary"]


collect_ignore_glob = ["fixtures/*"]
"""Vendored repositories keep their own tests (tests/fixtures/vally-corpus): never collected here."""


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """One worker more than the machine has cores (pyproject's --maxprocesses caps it): about a
    quarter of the end-to-end tests' time is spent waiting (timeouts, servers, a model's
    latency), which a third worker on two cores fills. Measured on 2 cores: 698 s with two
    workers, 637 s with three, at 173% and 191% CPU."""
    return (os.cpu_count() or 1) + 1


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The longest test files first; before any end-to-end test runs, the pinned CLIs go first on
    PATH."""
    longest_first(items)
    if not any(item.get_closest_marker("cli") for item in items):
        return
    try:
        os.environ["PATH"] = ensure_pinned_clis()
    except CliSetupError as exc:
        if not skips_allowed():
            raise pytest.UsageError(f"{exc}\n(set {ALLOW_ENV}=1 to skip the end-to-end tests instead)") from exc
        print(f"the end-to-end tests will skip: {exc}", file=sys.stderr)


@dataclass
class Result:
    code: int
    out: str
    err: str


def aam_eval(*argv: str) -> Result:
    """Run the real CLI entry point in-process and capture what it prints."""
    from aam_eval_action.main import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return Result(code, out.getvalue(), err.getvalue())


def installed(name: str) -> Engine:
    """The engine, or the test skipped with why its CLI cannot run here (CI allows no skip)."""
    from aam_eval_action.engines.base import get_engine

    engine = get_engine(name)
    if reason := engine.available():
        pytest.skip(reason)
    return engine


@contextlib.contextmanager
def scripted_model(scenarios: list[dict[str, Any]], keys: dict[str, str]) -> Iterator[ModelServer]:
    """The scripted model server, every CLI and judge SDK pointed at it with these (canary) keys."""
    with pytest.MonkeyPatch.context() as mp, ModelServer(scenarios, api_key=tuple(keys.values())) as server:
        mp.setenv("ANTHROPIC_BASE_URL", server.url)
        mp.setenv("OPENAI_BASE_URL", server.url + "/v1")
        mp.setenv("GOOGLE_GEMINI_BASE_URL", server.url)
        for name, value in keys.items():
            mp.setenv(name, value)
        yield server


def example_copy(dest: Path) -> Path:
    """The shipped example copied to `dest` to be recorded there: its cassettes inside it (none
    yet) and no no-skill baseline."""
    shutil.copytree(EXAMPLE, dest)
    config = dest / "evals/eval-config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "cassettes": "cassettes", "baseline": False}))
    return dest


def example_repository(root: Path) -> Path:
    """A git repository at `root` holding a copy of the shipped example and its cassettes, laid
    out as in this repository; the example's folder in it."""
    shutil.copytree(EXAMPLE, root / "examples" / "csv-tools")
    shutil.copytree(ROOT / "cassettes", root / "cassettes")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root / "examples" / "csv-tools"


@pytest.fixture
def example(tmp_path: Path) -> Path:
    """A private copy of the shipped example package (its cassettes beside it, as shipped)."""
    dest = tmp_path / "repo"
    shutil.copytree(EXAMPLE, dest / "examples" / "csv-tools")
    if (ROOT / "cassettes").is_dir():
        shutil.copytree(ROOT / "cassettes", dest / "cassettes")
    # A repository, as a checkout is: its `cassettes` folder may only point inside it.
    subprocess.run(["git", "init", "-q", str(dest)], check=True)
    return dest / "examples" / "csv-tools"


@pytest.fixture(autouse=True)
def _no_real_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never use a real key or reach a real API by accident."""
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
