"""The dice story on all four engines (not a test): main's four nightlies, a pull request that
rewords one skill and breaks another, `run --mode auto`, and the diff (tests/support/dice.py).

    python bench/bench_dice_e2e.py                 # claude-code codex copilot gemini-cli
    python bench/bench_dice_e2e.py codex           # one engine

Prints, per engine: each changed case's decision with both sides' counts, the sessions the
model server answered, the regressions the nightly diffs blamed, and the wall time.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.agent_clis import ensure_pinned_clis  # noqa: E402
from support.dice import ENGINES, story  # noqa: E402


def _said(c: dict[str, object]) -> str:
    return str(c.get("evidence_text") or f"{c['category']} ({c['base_verdict']} → {c['head_verdict']})")


def main() -> None:
    os.environ["PATH"] = ensure_pinned_clis()
    print("| engine | roll-nine (broken) | roll-seven (reworded) | roll-steady | sessions: nightlies, head "
          "| nightly diffs blaming | wall |")
    print("| --- | --- | --- | --- | --- | --- | ---: |")
    for engine in sys.argv[1:] or list(ENGINES):
        start = time.monotonic()
        with tempfile.TemporaryDirectory() as tmp:
            told = story(Path(tmp), ENGINES[engine])
        cases = {c["name"]: c for c in told.diff["cases"]}
        nine, seven, steady = (_said(cases[n]) for n in ("roll-nine", "roll-seven", "roll-steady"))
        print(f"| {engine} | {nine} | {seven} | {steady} "
              f"| {told.sessions['nightlies']}, {told.sessions['head']} | {sum(told.nightly_regressions)} "
              f"| {time.monotonic() - start:.0f} s |", flush=True)


if __name__ == "__main__":
    main()
