"""Re-execute replay benchmark: prints tables of numbers (not a test).

    python bench/bench_rerun.py              # every example case on all four engines
    python bench/bench_rerun.py --rounds 3   # times are medians of 3 runs

Everything goes through `aam-eval run` on a private copy of the shipped example
(examples/csv-tools), as a user runs it:

1. per case and engine (claude-code, codex, copilot, gemini-cli): a live session against the
   scripted model server (`--record`, jobs 1), a snapshot replay (`--replay --no-rerun`) and a
   re-execution of the real CLI against the recorded traffic (`--replay --rerun`), each case's
   own duration from the report; the same, on each engine, for the parallel sub-agent package
   of the tests (tests/fixtures/subagents-pkg: two `counter` sub-agents at once);
2. `--jobs` scaling: the whole re-execute run with jobs 1 and jobs 2 (wall time);
3. sizes: each session cassette with and without its model traffic, and the shared stores.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from aam_eval_action.engines.base import get_engine
from aam_eval_action.fsutil import dump_yaml
from aam_eval_action.testing.model_server import ModelServer, load_scenarios

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = load_scenarios(ROOT / "examples/scripted-model/csv-tools.yaml")
SUBAGENTS = ROOT / "tests/fixtures/subagents-pkg"
SUBAGENT_SCENARIOS = load_scenarios(ROOT / "tests/fixtures/subagents-scenarios.yaml")
KEYS = {"ANTHROPIC_API_KEY": "sk-ant-bench-key", "OPENAI_API_KEY": "sk-openai-bench-key",
        "GEMINI_API_KEY": "gemini-bench-key"}
CODEX = ["--engine", "codex", "--model", "gpt-5.5"]
FOUR = "claude-code,codex,copilot,gemini-cli"
ENGINES = [("claude-code", []), ("codex", CODEX), ("copilot", ["--engine", "copilot"]),
           ("gemini-cli", ["--engine", "gemini-cli", "--model", "gemini-2.5-pro"])]
CLI = [sys.executable, "-m", "aam_eval_action", "run"]


def package(source: Path = ROOT / "examples/csv-tools") -> Path:
    """A private copy of a package with its cassettes inside it."""
    pkg = Path(tempfile.mkdtemp(prefix="aam-eval-bench-rerun-")) / "pkg"
    shutil.copytree(source, pkg)
    config = pkg / "evals/eval-config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "cassettes": "cassettes"}))
    return pkg


def run(pkg: Path, *args: str, env: dict[str, str] | None = None) -> tuple[dict[str, Any], float]:
    """One `aam-eval run`: its report and wall time."""
    out = pkg.parent / "report.json"
    started = time.monotonic()
    subprocess.run([*CLI, "--package", str(pkg), *args, "-o", str(out)], env={**os.environ, **(env or {})},
                   check=False, capture_output=True)
    return json.loads(out.read_text()), time.monotonic() - started


def per_case(report: dict[str, Any]) -> dict[str, float]:
    return {c["name"]: c["duration_seconds"] for c in report["cases"]}


def record(pkg: Path, server: ModelServer, *args: str) -> dict[str, Any]:
    env = {**KEYS, "ANTHROPIC_BASE_URL": server.url, "OPENAI_BASE_URL": server.url + "/v1",
           "GOOGLE_GEMINI_BASE_URL": server.url}
    return run(pkg, "--record", "--jobs", "1", *args, env=env)[0]


def times(pkg: Path, rounds: int, *extra: str, scenarios: list[dict[str, Any]] = SCENARIOS
          ) -> list[tuple[str, float, float, float, bool]]:
    """(case, live s, snapshot s, rerun s, same verdicts) per case, medians over rounds."""
    live, snap, rerun = [], [], []
    for _ in range(rounds):
        with ModelServer(scenarios, api_key=tuple(KEYS.values())) as server:
            recorded = record(pkg, server, *extra)
        live.append(per_case(recorded))
        snap.append(per_case(run(pkg, "--replay", "--no-rerun", *extra)[0]))
        rerun_report = run(pkg, "--replay", "--rerun", "--jobs", "1", *extra)[0]
        rerun.append(per_case(rerun_report))
    same = {c["name"]: c["verdict"] == v["verdict"] and c.get("replay_kind") == "rerun" and not c.get("miss")
            for c, v in zip(rerun_report["cases"], recorded["cases"], strict=True)}
    return [(name, statistics.median(r[name] for r in live), statistics.median(r[name] for r in snap),
             statistics.median(r[name] for r in rerun), same[name]) for name in sorted(live[0])]


def sizes(pkg: Path) -> list[tuple[str, int, int]]:
    """(cassette, bytes without model traffic, bytes with it) per session cassette."""
    rows = []
    for path in sorted((pkg / "evals/cassettes").glob("*/*.session.yaml")):
        data = yaml.safe_load(path.read_text())
        bare = dump_yaml({k: v for k, v in data.items() if k != "model_traffic"})
        rows.append((f"{path.parent.name}/{path.name}", len(bare.encode()), path.stat().st_size))
    return rows


def side_by_side(rows: list[tuple[str, str, float, float, float, bool]]) -> None:
    """Per case, each engine's live / snapshot / rerun seconds in one row."""
    engines = [e for e, _ in ENGINES]
    cases = sorted({r[0] for r in rows if r[1] == "codex"})
    cell = {(r[0], r[1]): f"{r[2]:.1f}/{r[3]:.2f}/{r[4]:.1f}" for r in rows}
    print("\nside by side, live/snapshot/rerun seconds:")
    print(f"{'case':24} " + " ".join(f"{e:>15}" for e in engines))
    for name in cases:
        print(f"{name:24} " + " ".join(f"{cell.get((name, e), '-'):>15}" for e in engines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=1, help="repeat each measurement (times are medians)")
    args = parser.parse_args()
    for name, _ in ENGINES:
        if get_engine(name).available():
            sys.exit(f"needs {name}: {get_engine(name).available()}")
    pkg = package()
    rows: list[tuple[str, str, float, float, float, bool]] = []
    for engine, extra in ENGINES:
        measured = times(pkg, args.rounds, *extra)
        rows += [(n, engine, live, snap, rerun, same) for n, live, snap, rerun, same in measured]
    for engine, extra in ENGINES:
        sub = package(SUBAGENTS)
        measured = times(sub, args.rounds, *extra, scenarios=SUBAGENT_SCENARIOS)
        rows += [(n, engine, live, snap, rerun, same) for n, live, snap, rerun, same in measured]
        shutil.rmtree(sub.parent)
    print(f"{'case':24} {'engine':11} {'live s':>7} {'snapshot s':>10} {'rerun s':>8} {'same':>5}")
    for name, engine, live, snap, rerun, same in rows:
        print(f"{name:24} {engine:11} {live:7.2f} {snap:10.3f} {rerun:8.2f} {same!s:>5}")
    print("(parallel-count and one-counter: the main agent and 2 or 1 concurrent sub-agents;"
          " their scripted answers wait 0.1-0.6 s, which live and rerun both include)")
    side_by_side(rows)
    for engine, _ in ENGINES:
        mine = [r for r in rows if r[1] == engine and r[0] not in ("parallel-count", "one-counter")]
        print(f"{engine} median per case ({len(mine)}): live {statistics.median(r[2] for r in mine):.2f} s, "
              f"snapshot {statistics.median(r[3] for r in mine):.3f} s, "
              f"rerun {statistics.median(r[4] for r in mine):.2f} s")

    print("\none run on all four engines (--engine " + FOUR + "), wall time:")
    for label, extra in (("snapshot", ("--no-rerun",)), ("rerun, jobs 2", ("--rerun", "--jobs", "2"))):
        walls = [run(pkg, "--replay", "--engine", FOUR, *extra)[1] for _ in range(args.rounds)]
        print(f"  {label}: {statistics.median(walls):.2f} s")

    print("\n--jobs scaling (the claude cases re-executed, wall time of the whole run):")
    for jobs in ("1", "2"):
        walls = [run(pkg, "--replay", "--rerun", "--jobs", jobs)[1] for _ in range(args.rounds)]
        print(f"  jobs {jobs}: {statistics.median(walls):.2f} s")

    print("\nsizes (bytes):")
    print(f"{'session cassette':44} {'no traffic':>10} {'with':>7} {'ratio':>6}")
    for name, bare, full in sizes(pkg):
        print(f"{name:44} {bare:10d} {full:7d} {full / bare:6.1f}")
    for store in sorted((pkg / "evals/cassettes/_shared").glob("*.yaml")):
        print(f"shared store {store.name}: {store.stat().st_size} B (once per cassettes directory)")
    shutil.rmtree(pkg.parent)


if __name__ == "__main__":
    main()
