"""A pytest plugin: at the end of every run, the ten test files that took longest.

Each test's setup, call and teardown are added to its file's total (on the controller, as the
workers report them), so the suite's time is seen where it grows, run after run.
"""

from __future__ import annotations

from collections import Counter

import pytest

SHOWN = 10
_seconds: Counter[str] = Counter()
_tests: Counter[str] = Counter()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    path = report.nodeid.split("::", 1)[0]
    _seconds[path] += report.duration
    if report.when == "call":
        _tests[path] += 1


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _seconds:
        return
    total = sum(_seconds.values())
    terminalreporter.section(f"slowest {SHOWN} test files (of {len(_seconds)}; {total:,.0f} s of tests in all)")
    for path, seconds in _seconds.most_common(SHOWN):
        terminalreporter.write_line(f"{seconds:8.1f} s  {_tests[path]:4d} tests  {path}")
