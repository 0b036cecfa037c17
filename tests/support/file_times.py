"""A pytest plugin: the test files run longest first, and each run ends with its ten slowest.

With one test file a worker (`--dist=loadfile`), a long file started last keeps one worker busy
while the others are idle. So the files are handed out in the order of their last measured
times, longest first (`file_times.json`; a file not in it counts by its end-to-end tests), and
`--no-loadscope-reorder` keeps that order. At the end, each file's setup, call and teardown
times are added up (on the controller, as the workers report them) and the ten slowest printed;
`AAM_EVAL_WRITE_FILE_TIMES=1` writes this run's times to `file_times.json`.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

SHOWN = 10
TIMES = Path(__file__).with_name("file_times.json")
WRITE_ENV = "AAM_EVAL_WRITE_FILE_TIMES"
UNKNOWN_E2E_SECONDS = 5.0
"""What an end-to-end test of a file not measured yet is guessed to take."""
_seconds: Counter[str] = Counter()
_tests: Counter[str] = Counter()


def _path(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def longest_first(items: list[pytest.Item]) -> None:
    """Reorder `items` in place: whole files, the longest measured first (the same order on every
    worker), each file's tests as collected."""
    try:
        known: dict[str, float] = json.loads(TIMES.read_text())
    except (OSError, ValueError):
        known = {}
    guessed: Counter[str] = Counter()
    first: dict[str, int] = {}
    for i, item in enumerate(items):
        path = _path(item.nodeid)
        first.setdefault(path, i)
        if item.get_closest_marker("cli"):
            guessed[path] += UNKNOWN_E2E_SECONDS

    def cost(path: str) -> float:
        return known.get(path, guessed[path])

    items.sort(key=lambda item: (-cost(_path(item.nodeid)), first[_path(item.nodeid)]))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    path = _path(report.nodeid)
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
    if os.environ.get(WRITE_ENV, "") not in ("", "0"):
        measured = {path: round(s) for path, s in _seconds.most_common() if s >= 1}
        TIMES.write_text(json.dumps(measured, indent=1) + "\n")
        terminalreporter.write_line(f"written to {TIMES}")
