"""A pytest plugin: a skipped test is a failed test, unless skips are allowed explicitly.

The README's test command runs every test, the end-to-end tier included, so a skip means
something is missing (a CLI, Node) and CI would stay green while testing less. Set
`AAM_EVAL_ALLOW_SKIPS=1` to let tests skip, e.g. on a machine without network access.
"""

from __future__ import annotations

import os
from collections.abc import Generator

import pytest

ALLOW_ENV = "AAM_EVAL_ALLOW_SKIPS"


def skips_allowed() -> bool:
    return os.environ.get(ALLOW_ENV, "") not in ("", "0")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, None, None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if report.skipped and not hasattr(report, "wasxfail") and not skips_allowed():
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped, and skips fail the run ({ALLOW_ENV}=1 allows them): {reason}"


def pytest_collectreport(report: pytest.CollectReport) -> None:
    """A whole module skipped at import is a failure too."""
    if report.skipped and not skips_allowed():
        report.outcome = "failed"
