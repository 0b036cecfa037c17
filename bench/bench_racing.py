"""Racing sub-agents, recorded and self-checked again and again: prints a table (not a test).

    python bench/bench_racing.py                       # the Claude Code `# other:` releases, 10 runs
    python bench/bench_racing.py --runs 3 --release 2.1.330
    python bench/bench_racing.py --scenarios reordered --release 2.1.197

Each run records the `parallel-count` case of tests/fixtures/subagents-pkg in a fresh copy
against the scripted model server (two `counter` sub-agents started in one message), so its
recording checks itself, then re-executes it once. With `racing`
(tests/fixtures/subagents-racing-scenarios.yaml) both counters answer after the same pause and
finish within milliseconds of each other, in either order; with `reordered`
(subagents-reordered-scenarios.yaml) they finish in one order when recorded and in the other
on every re-execution (on releases that run sub-agents in the background, 2.1.300 on, that
re-execution hands the main agent the other counter's notification first: unstable). The
table gives, per release and scenario: the runs, how many recordings were unstable, how many
re-executions gave the recorded verdict (no divergence), what the self-checks learnt, and the
times.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from table import print_table  # noqa: E402

from aam_eval_action.testing.model_server import ModelServer, load_scenarios  # noqa: E402

from support.agent_clis import Pin, ensure_pinned_clis, ensure_release, other_releases  # noqa: E402

PACKAGE = ROOT / "tests/fixtures/subagents-pkg"
SCENARIOS = {
    "racing": ROOT / "tests/fixtures/subagents-racing-scenarios.yaml",
    "reordered": ROOT / "tests/fixtures/subagents-reordered-scenarios.yaml",
}
CASE = "parallel-count"
KEY = "sk-ant-bench-racing"


def run(pkg: Path, scenarios: Path, path: str, *args: str) -> tuple[dict[str, Any], float]:
    out = pkg.parent / "out.json"
    out.unlink(missing_ok=True)
    with ModelServer(load_scenarios(scenarios), api_key=KEY) as server:
        env = {**os.environ, "ANTHROPIC_API_KEY": KEY, "PATH": path, "ANTHROPIC_BASE_URL": server.url}
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "aam_eval_action", "run", "--package", str(pkg), *args, CASE,
                        "-o", str(out)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=False)
        took = time.perf_counter() - start
    [case] = json.loads(out.read_text())["cases"]
    return case, took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--release", action="append", help="a Claude Code version (repeatable); default: "
                        "the Claude Code `# other:` releases of requirements/agent-clis.txt")
    parser.add_argument("--scenarios", default="racing", help="comma-separated: " + ", ".join(SCENARIOS))
    args = parser.parse_args()
    pinned = ensure_pinned_clis()
    pins = ([Pin("@anthropic-ai/claude-code", v) for v in args.release] if args.release
            else [p for p in other_releases() if p.command == "claude"])
    rows = []
    for pin in pins:
        path = f"{ensure_release(pin)}{os.pathsep}{pinned}"
        for name in args.scenarios.split(","):
            unstable, same, learnt, record_s, rerun_s = 0, 0, set(), [], []
            for number in range(args.runs):
                with tempfile.TemporaryDirectory() as tmp:
                    pkg = Path(tmp) / "pkg"
                    shutil.copytree(PACKAGE, pkg)
                    recorded, took = run(pkg, SCENARIOS[name], path, "--record")
                    record_s.append(took)
                    check = recorded.get("self_check") or {}
                    learnt.update(mask.split(" (seen")[0] for mask in check.get("learnt", []))
                    if not check.get("clean"):
                        unstable += 1
                        print(f"  {pin.spec} {name} run {number + 1}: unstable: {check.get('unstable')}",
                              flush=True)
                        continue  # an unstable recording is not re-executed
                    again, took = run(pkg, SCENARIOS[name], path, "--replay", "--rerun")
                    rerun_s.append(took)
                    ok = again["verdict"] == recorded["verdict"] and again.get("replay_kind") == "rerun"
                    same += ok
                    if not ok:
                        why = (again.get("miss") or {}).get("reason") or again.get("error")
                        print(f"  {pin.spec} {name} run {number + 1}: re-executed {again['verdict']}: {why}",
                              flush=True)
            rows.append((pin.version, name, args.runs, unstable, f"{same}/{args.runs}",
                         "; ".join(sorted(learnt)) or "-", f"{sum(record_s) / len(record_s):.1f}",
                         f"{sum(rerun_s) / len(rerun_s):.1f}" if rerun_s else "-"))
    head = ("release", "scenario", "runs", "unstable", "same verdicts", "learnt", "record s", "rerun s")
    print_table(head, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
