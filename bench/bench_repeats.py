"""Benchmark: the end-to-end tests' repeats on more engines (prints numbers; not a test).

    python bench/bench_repeats.py

The README's test command shows each behaviour once; where a behaviour does not depend on the
engine, its test runs on one engine there, and here on the others too (`AAM_EVAL_REPEATS=1`,
see tests/support/repeats.py); a behaviour shown with one release of a CLI, here with another
that behaves alike; a check of re-execution shown twice, here five times. Prints each test
file's outcome and wall time.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FILES = ("tests/test_importers_e2e.py", "tests/test_init_e2e.py", "tests/test_engine_modes_e2e.py",
         "tests/test_self_check_e2e.py", "tests/test_subagents_e2e.py", "tests/test_conversation_e2e.py",
         "tests/test_tune_e2e.py", "tests/test_vally_e2e.py", "tests/test_claude_plugin_eval.py")
"""The test files with repeats."""


def main() -> int:
    failed = 0
    for file in FILES:
        start = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "pytest", file, "-q", "-n0", "-p", "no:cacheprovider"],
                              cwd=ROOT, env={**os.environ, "AAM_EVAL_REPEATS": "1"}, capture_output=True,
                              text=True, check=False)
        last = (done.stdout.strip().splitlines() or ["(no output)"])[-1]
        print(f"{file}  {time.monotonic() - start:6.1f} s  {last}")
        failed |= done.returncode
    return failed


if __name__ == "__main__":
    raise SystemExit(main())
