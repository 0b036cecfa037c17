"""Benchmarks: prints a table of numbers (not a test).

    python bench/bench.py                 # replay scale, start-up, diff+render
    python bench/bench.py --live          # also 16 live cases with the real claude CLI, jobs 1 vs 8

Replay packages are generated once under $AAM_BENCH_DIR (default /tmp/aam-eval-bench): agent
cassettes written by the project's own cassette code, judge cassettes recorded through the real
anthropic SDK against the scripted model server.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import site
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from aam_eval_action.testing.model_server import ModelServer
from aam_eval_action.testing.packages import record_sessions, simple_case, write_package

ROOT = Path(__file__).resolve().parents[1]

BENCH_DIR = Path(os.environ.get("AAM_BENCH_DIR", "/tmp/aam-eval-bench"))
CLI = [sys.executable, "-m", "aam_eval_action"]


def package(n: int) -> Path:
    """A package of n cases with agent and judge cassettes (built once, then reused)."""
    pkg = BENCH_DIR / f"pkg-{n}"
    if (pkg / ".complete").exists():
        return pkg
    shutil.rmtree(pkg, ignore_errors=True)
    cases = [simple_case(f"case-{i:04d}", expected={"contains": ["done"], "not-contains": ["ERROR"]})
             for i in range(n)]
    write_package(pkg, cases, files={"skills/demo/SKILL.md": "---\nname: demo\n---\nDo it.\n"})
    record_sessions(pkg, {c["name"]: f"done: finished the task for {c['name']}.\n" + "x" * 400
                          for c in cases})
    scenarios = [{"match": f"task for case-{i:04d}.", "judge": {"result": "PASS", "reason": "fine"}}
                 for i in range(n)]
    with ModelServer(scenarios) as server:
        env = {**os.environ, "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": server.api_key}
        subprocess.run([*CLI, "run", "--package", str(pkg), "--jobs", "8"], env=env,
                       stdout=subprocess.DEVNULL, check=False)
    (pkg / ".complete").touch()
    return pkg


def timed(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, max(peak, before) / 1024


def first_output(argv: list[str]) -> float:
    """Seconds until the command prints its first byte."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    proc.stdout.read(1)
    elapsed = time.perf_counter() - start
    proc.communicate()
    return elapsed


def read_floor(pkg: Path) -> float:
    """The floor: only parsing every cassette file (YAML, libyaml when available)."""
    code = (
        "import yaml,sys,pathlib;L=getattr(yaml,'CSafeLoader',yaml.SafeLoader);"
        "[yaml.load(p.read_text(),Loader=L) for p in pathlib.Path(sys.argv[1]).rglob('*.yaml')]"
    )
    return timed([sys.executable, "-c", code, str(pkg / "evals/cassettes")])[0]


RUNS = 5
"""Each timed number is the median of this many runs."""


def compile_bytecode(rows: list[tuple[str, str]]) -> None:
    """Compile the tool's modules as `pip install` does at install time, so the numbers are an
    installed tool's: an editable install under PYTHONDONTWRITEBYTECODE (set on some machines
    and images) would otherwise compile every module again on every run."""
    import compileall
    import importlib.util

    spec = importlib.util.find_spec("aam_eval_action")
    assert spec is not None and spec.submodule_search_locations
    where = next(iter(spec.submodule_search_locations))
    compileall.compile_dir(where, quiet=1)
    rows.append(("bytecode compiled (as pip install does)", where))


def median(measure: Callable[[], float]) -> float:
    return statistics.median(measure() for _ in range(RUNS))


def bench_replay(rows: list[tuple[str, str]]) -> None:
    for n in (10, 100, 1000):
        pkg = package(n)
        out = str(BENCH_DIR / f"r{n}.json")
        argv = [*CLI, "run", "--replay", "--package", str(pkg), "-o", out]
        peak = timed(argv)[1]
        wall = median(lambda argv=argv: timed(argv)[0])  # type: ignore[misc]
        floor = median(lambda pkg=pkg: read_floor(pkg))  # type: ignore[misc]
        rows.append((f"replay {n} cases (jobs 1)", f"{wall:.2f} s, peak {peak:.0f} MB"))
        rows.append((f"  floor: parse {n} cases' cassettes", f"{floor:.2f} s"))
        if n == 1000:
            TARGETS.append(("replay of 1,000 cases / parse floor", wall / floor, 2.5, "x"))


def bench_startup(rows: list[tuple[str, str]]) -> None:
    helped = median(lambda: first_output([*CLI, "--help"]))
    rows.append(("aam-eval --help: first output", f"{helped:.3f} s"))
    TARGETS.append(("--help: first output", helped, 0.1, "s"))
    pkg = package(10)
    t = median(lambda: first_output([*CLI, "run", "--replay", "--package", str(pkg)]))
    rows.append(("aam-eval run --replay: first output", f"{t:.3f} s"))
    TARGETS.append(("run --replay: first output", t, 0.3, "s"))


def bench_diff(rows: list[tuple[str, str]]) -> None:
    base = json.loads((BENCH_DIR / "r1000.json").read_text())
    head = json.loads(json.dumps(base))
    # As varied as a real pair: flipped both ways, errored, slower and dearer, removed and new cases.
    for i, case in enumerate(head["cases"]):
        if i % 50 == 0:
            case["verdict"] = "FAIL"
            case["error"] = f"expected output to contain 'total {i}'"
        elif i % 50 == 7:
            case["verdict"] = "ERROR"
            case["error"] = "the agent session failed: timed out after 120 s"
        elif i % 50 == 13 and case.get("verdict") != "PASS":
            case["verdict"] = "PASS"
            case.pop("error", None)
        took = float(case.get("duration_seconds") or 1.0)
        case["duration_seconds"] = round(took * (1.3 if i % 3 else 0.8), 3)
    removed = {i for i in range(len(head["cases"])) if i % 97 == 5}
    added = [dict(head["cases"][i], name=f"{head['cases'][i]['name']}-new") for i in range(0, 1000, 100)]
    head["cases"] = [c for i, c in enumerate(head["cases"]) if i not in removed] + added
    (BENCH_DIR / "h1000.json").write_text(json.dumps(head))
    argv = [*CLI, "diff", str(BENCH_DIR / "r1000.json"), str(BENCH_DIR / "h1000.json"),
            "--format", "markdown"]
    # The first run compiles the comment template into the user's cache; a run that fails would
    # time nothing worth timing.
    first = subprocess.run(argv, capture_output=True, text=True, check=True)
    assert first.stdout.startswith("<!-- aam-eval-action:comment -->"), first.stdout[:200]
    wall = median(lambda: timed(argv)[0])
    rows.append(("diff + render 2 x 1,000-case reports", f"{wall:.2f} s (whole process)"))
    TARGETS.append(("diff + render 2 x 1,000 cases", wall, 0.5, "s"))

    def cold() -> float:
        """A run with no compiled template in the cache yet, as on a fresh CI runner."""
        with tempfile.TemporaryDirectory() as home:
            env = {**os.environ, "HOME": home, "PYTHONUSERBASE": site.getuserbase()}
            return timed(argv, env)[0]

    rows.append(("  first run (template not cached yet)", f"{median(cold):.2f} s (whole process)"))


TARGETS: list[tuple[str, float, float, str]] = []
"""(what, measured, target, unit) for the numbers that have a target."""


def bench_live(rows: list[tuple[str, str]]) -> None:
    """16 real claude sessions against the scripted server with 1 s per model answer.

    Each case costs 3 model answers (2 agent turns + 1 judge call) = 3 s of latency. The jobs 1
    run records, so each session's own CLI time is known and the harness overhead per case is
    case time - CLI time - the judge's 1 s.
    """
    import yaml

    names = [f"live-{i:02d}" for i in range(16)]
    pkg = BENCH_DIR / "live"
    shutil.rmtree(pkg, ignore_errors=True)
    write_package(pkg, [simple_case(n) for n in names])
    scenarios = [{"match": f"task for {n}.", "agent": [{"bash": "echo hi"}, {"text": f"done {n}"}],
                  "judge": {"result": "PASS", "reason": "ok"}} for n in names]
    results = {}
    with ModelServer(scenarios, latency=1.0) as server:
        env = {**os.environ, "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": server.api_key}
        for jobs, mode in ((1, "record"), (8, "live")):
            out = BENCH_DIR / f"live{jobs}.json"
            wall, _ = timed([*CLI, "run", "--mode", mode, "--package", str(pkg), "--jobs", str(jobs),
                             "-o", str(out)], env)
            results[jobs] = wall
            verdicts = sorted({c["verdict"] for c in json.loads(out.read_text())["cases"]})
            label = f"live 16 cases, 1 s model latency, jobs {jobs}"
            rows.append((label, f"{wall:.1f} s {verdicts}"))
    rows.append(("  speed-up jobs 8 vs 1", f"{results[1] / results[8]:.1f}x"))
    cases = json.loads((BENCH_DIR / "live1.json").read_text())["cases"]
    case_time = sum(c["duration_seconds"] for c in cases) / len(cases)
    cli_time = sum(
        yaml.safe_load(p.read_text())["attempts"][0]["duration_seconds"]
        for p in (pkg / "evals/cassettes").glob("*/claude-code.session.yaml")
    ) / len(cases)
    rows.append(("  per case: wall / CLI process", f"{case_time:.2f} s / {cli_time:.2f} s"))
    overhead = case_time - cli_time - 1.0
    rows.append(("  harness overhead per case", f"{overhead:.2f} s (minus 1 s judge latency)"))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--live", action="store_true", help="also run the live CLI benchmark")
    args = parser.parse_args()
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    rows: list[tuple[str, str]] = []
    compile_bytecode(rows)
    bench_startup(rows)
    bench_replay(rows)
    bench_diff(rows)
    if args.live:
        bench_live(rows)
    width = max(len(r[0]) for r in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    print(f"\ntargets (median of {RUNS} runs, measured side by side in this run):")
    for name, value, target, unit in TARGETS:
        verdict = "under target" if value <= target and (unit == "x" or value < target) else "OVER TARGET"
        bound = "<=" if unit == "x" else "<"
        print(f"  {name:<40} {value:6.3f} {unit}   target {bound} {target} {unit}   {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
