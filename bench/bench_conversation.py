"""Conversation cases per engine: what a recording, a snapshot replay and a re-execution take;
prints a table (not a test).

    python bench/bench_conversation.py                      # all four engines, 3 runs each
    python bench/bench_conversation.py --engine claude-code --runs 5

Each run copies tests/fixtures/conversation-pkg, records `setup-scripted` (three scripted turns)
and `setup-simulated` (a simulated user, three turns) against the scripted model server, then
replays them as snapshots and re-executes them. The table gives, per engine: the median seconds
of each step for the two cases together, the model requests each step made (the agents' turns,
the simulated user's; side requests and the judge's left out), and whether every replay gave
the recorded verdicts.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from table import print_table  # noqa: E402

from aam_eval_action.testing.model_server import (  # noqa: E402
    ModelServer,
    is_agent_turn,
    is_judge,
    is_simulated_user,
    load_scenarios,
)

from support.agent_clis import ensure_pinned_clis  # noqa: E402

PACKAGE = ROOT / "tests/fixtures/conversation-pkg"
SCENARIOS = ROOT / "tests/fixtures/conversation-scenarios.yaml"
CASES = ("setup-scripted", "setup-simulated")
KEY = "sk-bench-conversation"
ENGINES = {"claude-code": (), "codex": (), "copilot": (), "gemini-cli": ("--model", "gemini-2.5-pro")}
STEPS = {"record": ("--record",), "snapshot": ("--replay", "--no-rerun"), "rerun": ("--replay", "--rerun")}


def step(
    server: ModelServer, pkg: Path, engine: str, path: str, args: tuple[str, ...]
) -> tuple[float, dict[str, str]]:
    out = pkg.parent / "out.json"
    out.unlink(missing_ok=True)
    env = {**os.environ, "PATH": path, "ANTHROPIC_API_KEY": KEY, "OPENAI_API_KEY": KEY, "GEMINI_API_KEY": KEY,
           "ANTHROPIC_BASE_URL": server.url, "OPENAI_BASE_URL": server.url + "/v1",
           "GOOGLE_GEMINI_BASE_URL": server.url}
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "aam_eval_action", "run", "--package", str(pkg), "--engine", engine,
                    *ENGINES[engine], *args, *CASES, "-o", str(out)], env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False)
    took = time.perf_counter() - start
    if not out.is_file():
        return took, {}
    return took, {c["name"]: c["verdict"] for c in json.loads(out.read_text())["cases"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--engine", action="append", choices=list(ENGINES),
                        help="repeatable; default: all four")
    args = parser.parse_args()
    path = f"{ensure_pinned_clis()}{os.pathsep}{os.environ['PATH']}"
    rows = []
    for engine in args.engine or list(ENGINES):
        seconds: dict[str, list[float]] = {name: [] for name in STEPS}
        requests: dict[str, tuple[int, int]] = {}
        same = 0
        for _ in range(args.runs):
            with (tempfile.TemporaryDirectory() as tmp,
                  ModelServer(load_scenarios(SCENARIOS), api_key=KEY) as server):
                pkg = Path(tmp) / "pkg"
                shutil.copytree(PACKAGE, pkg)
                verdicts = {}
                for name, flags in STEPS.items():
                    before = len(server.requests)
                    took, verdicts[name] = step(server, pkg, engine, path, flags)
                    seconds[name].append(took)
                    made = server.requests[before:]
                    users = sum(is_simulated_user(r.body) for r in made)
                    agent = sum(is_agent_turn(r.body) and not is_judge(r.body) for r in made) - users
                    requests[name] = (agent, users)
                recorded = verdicts["record"]
                same += recorded != {} and verdicts["snapshot"] == verdicts["rerun"] == recorded
        rows.append((engine, args.runs, *(f"{statistics.median(seconds[n]):.1f}" for n in STEPS),
                     *(f"{requests[n][0]}/{requests[n][1]}" for n in STEPS), f"{same}/{args.runs}"))
    head = ("engine", "runs", "record s", "snapshot s", "rerun s", "record agent/user requests",
            "snapshot requests", "rerun requests", "same verdicts")
    print_table(head, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
