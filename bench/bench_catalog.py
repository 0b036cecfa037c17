"""What predicting a skill listing costs: prints a table (not a test).

    python bench/bench_catalog.py             # 90, 500 and 2,000 skills, 5 repeats
    python bench/bench_catalog.py --repeats 9

Each engine's rule (`catalog.predict`) on synthetic catalogs of skills with 300-character
descriptions: the cost of `aam-eval budget` per engine and model, and of a crowding sweep's
"name only from" scan, which predicts one listing per neighbour count up to the pool. Then the
whole `aam-eval budget` command on the crowded marketplace fixture (90 neighbours), as a process.
Medians.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

from table import print_table  # noqa: E402

from aam_eval_action.catalog import Skill, predict  # noqa: E402

MODELS = {"claude-code": "claude-sonnet-4-6", "codex": "gpt-5.5", "copilot": "claude-sonnet-4-6",
          "gemini-cli": "gemini-2.5-pro"}


def skills(n: int) -> list[Skill]:
    about = "Does task {} for the user, with its own words for it. " * 6
    return [Skill(f"skill-{i:04d}", about.format(*[i] * 6)) for i in range(n)]


def median_ms(fn: object, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rows = []
    for n in (90, 500, 2000):
        catalog = skills(n)
        row = [f"{n:,}"]
        for engine, model in MODELS.items():
            ms = median_ms(lambda e=engine, m=model, c=catalog: predict(e, c, m), args.repeats)
            row.append(f"{ms:.1f}")
        rows.append(row)
    print_table(["skills", *(f"{e} ms" for e in MODELS)], rows)
    from support import crowded

    with tempfile.TemporaryDirectory() as tmp:
        root = crowded.write(Path(tmp) / "acme-skills")
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            command = ["budget", "--package", str(root), "--plugin", "ledger-tools"]
            subprocess.run([sys.executable, "-m", "aam_eval_action", *command], check=True,
                           capture_output=True)
            times.append(time.perf_counter() - t0)
    print(f"\naam-eval budget on the crowded marketplace (4 engines, 90 neighbours): "
          f"{statistics.median(times):.2f} s median of {args.repeats}")


if __name__ == "__main__":
    main()
