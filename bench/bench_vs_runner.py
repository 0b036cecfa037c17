"""Benchmark: our live run beside `claude plugin eval`'s on the same suites (prints tables; not a test).

    python bench/bench_vs_runner.py --quick       # one suite, latency 0, -j 4, --runs 1 (a smoke run)
    python bench/bench_vs_runner.py --suites homeassistant-ai__skills --latency 1 --jobs 4
    python bench/bench_vs_runner.py               # the grid: 3 suites x latency 0,1 x -j 1,4

For each grid point (suite, per-request latency, jobs) the pinned `claude plugin eval` (the
runner) runs first, then `aam-eval run --record` (ours), with the self-check and, by default,
again with `--no-self-check`: each on a fresh copy of the vendored corpus suite
(tests/fixtures/cpe-corpus), each against its own fresh scripted model server answering every
request after the latency, with the suite's scripted scenarios (tests/support/cpe_corpus.py).
Both tools run with their defaults otherwise (with-without ablation wherever a plugin resolves),
with `--runs N` given to both (0: each case's own `runs:`) and one judge model named to both
(`--judge-model` / `--judge`, so the votes are the same requests). The runner gets a fresh HOME,
as the tests give it. The agents' model is each tool's default (printed; the scripted server
answers every model alike).

Every request the server received is classified (aam_eval_action.testing.model_requests):
sessions (an agent's first turn), agent turns, judge votes, agent mocks, and other requests
(no tools: titles, quota probes). The table gives wall time, those counts, ours/runner ratios,
and whether every case's score (and score without the plugin) agrees. Below it, every request
ours made beyond the runner's is named and counted, by kind; a self-check's re-executions are
served by the replay proxy, and the on/off pair shows they reach no model.

CPU is counted too (every process each tool started, from the kernel's accounting of the
children it waited for), and for ours, split into this project's own process (up to its exit
handlers: the interpreter's teardown after them counts only in the total) and its children (the
agent CLIs, the sandbox launchers and probes): at latency 0 a run is bound by CPU, and the split
says how much of it is the CLIs themselves.

The numbers are this checkout's (its src/ goes first on the children's PYTHONPATH) with the
pinned claude (put first on PATH, installed once into the test cache). The 1-minute load
average at each start is printed: on a shared machine, wall times move with it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "src"))  # this checkout's package, whatever the editable install points at

from table import print_table  # noqa: E402

from aam_eval_action.testing.model_requests import (  # noqa: E402
    is_agent_turn,
    is_judge,
    is_mock_agent,
    is_plugin_eval_judge,
    prompt_text,
    system_text,
    turn_index,
)
from aam_eval_action.testing.model_server import ModelServer  # noqa: E402

from support.agent_clis import ensure_pinned_clis  # noqa: E402
from support.cpe_corpus import ANSWERED, CORPUS, SCORED, case_folder, claude_plugin_eval  # noqa: E402

DEFAULT_SUITES = ("homeassistant-ai__skills", "mdrubelamin2__omc-slim", "sonilo-ai__skills")
"""Three suites the runner loads whole, each with a plugin.json (so both tools run both arms): 8
cases with llm, regex and tool_used graders (the field measurement's suite), 2 with llm and regex,
5 routing cases with tool_used. (k97__skills has only a marketplace.json: the runner resolves no
plugin there and runs one arm; `--suites k97__skills` shows how ours differs.)"""
QUICK_SUITE = "mdrubelamin2__omc-slim"
JUDGE = "claude-haiku-4-5"
"""Both tools' judge, named: without `--judge-model`, the pinned runner (2.1.332) sent its votes
as claude-opus-5-5, its agents' model, though its help says haiku; ours defaults to this one."""
KEY = "sk-ant-bench-vs-runner"
COLUMNS = ("wall s", "load", "cpu s", "own cpu s", "sessions", "agent req", "judge votes", "mocks",
           "other req", "total req", "wall/runner", "req/runner", "scores agree")
TIMEOUT = 3600
OWN_CPU = """import atexit, resource, runpy, sys
out = sys.argv.pop(1)
def said():
    with open(out, "w") as f:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        f.write(str(usage.ru_utime + usage.ru_stime))
atexit.register(said)
sys.argv[0] = "aam_eval_action"
runpy.run_module("aam_eval_action", run_name="__main__", alter_sys=True)
"""
"""Ours run as `python -m aam_eval_action`, and at exit its own CPU (not its children's) written down."""


@dataclass
class Counts:
    """What one tool asked of the model server."""

    sessions: int = 0
    agent: int = 0
    judge: int = 0
    mock: int = 0
    other: int = 0
    judge_models: set[str] = field(default_factory=set)
    agent_models: set[str] = field(default_factory=set)
    kinds: Counter[str] = field(default_factory=Counter)
    """Each request by kind, for naming what one tool asked beyond the other."""

    @property
    def total(self) -> int:
        return self.agent + self.judge + self.mock + self.other


def _short(text: str, n: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= n else flat[: n - 1] + "…"


def _criterion(body: dict[str, Any]) -> str:
    text = json.dumps(body.get("messages") or body.get("input") or "")
    found = re.search(r"Criterion:(?:\\n)+(.*?)(?:\\n|$)", text)
    return found.group(1) if found else "?"


def classify(requests: list[Any]) -> Counts:
    counts = Counts()
    for request in requests:
        body = request.body
        if is_plugin_eval_judge(body) or is_judge(body):
            counts.judge += 1
            counts.judge_models.add(str(body.get("model")))
            counts.kinds[f"judge vote: {_short(_criterion(body))}"] += 1
        elif is_mock_agent(body):
            counts.mock += 1
            counts.kinds["agent mock"] += 1
        elif is_agent_turn(body):
            counts.agent += 1
            counts.agent_models.add(str(body.get("model")))
            first = turn_index(body) == 0
            counts.sessions += first
            counts.kinds[f"agent {'session' if first else 'turn'}: {_short(prompt_text(body))}"] += 1
        else:
            counts.other += 1
            what = system_text(body) or prompt_text(body)
            counts.kinds[f"other ({request.path.split('?')[0]}, max_tokens {body.get('max_tokens')}, "
                         f"{'tools' if body.get('tools') else 'no tools'}): {_short(what)}"] += 1
    return counts


@dataclass
class Run:
    tool: str
    wall: float
    load: float
    counts: Counts
    scores: dict[str, tuple[float | None, float | None]] | None
    """Case folder: (score, score without the plugin); None: the tool wrote no result."""
    cpu: float = 0.0
    """CPU seconds of every process the tool started (user and system)."""
    own_cpu: float | None = None
    """Of that, this project's own process (ours only)."""
    self_checks: int = 0
    failure: str = ""
    arms: str = ""
    """The ablation it ran and the plugins it resolved."""


def _env(server: ModelServer, path: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env |= {"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": KEY, "PATH": path,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))}
    return env


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _tail(done: subprocess.CompletedProcess[str] | None, why: str) -> str:
    if done is None:
        return f"timed out after {TIMEOUT} s"
    return f"{why} (exit {done.returncode})\n" + "\n".join((done.stdout + done.stderr).splitlines()[-25:])


def run_runner(suite: str, work: Path, latency: float, jobs: int, runs: int, path: str, judge: str) -> Run:
    copy = Path(shutil.copytree(CORPUS / suite, work / "theirs"))
    out = work / "theirs.json"
    flags = ["-j", str(jobs), *(["--runs", str(runs)] if runs else []),
             *(["--judge-model", judge] if judge else [])]
    claude = shutil.which("claude", path=path) or "claude"
    load = os.getloadavg()[0]
    done: subprocess.CompletedProcess[str] | None = None
    with ModelServer(SCORED.get(suite, ANSWERED), latency=latency, api_key=KEY) as server:
        start, cpu = time.perf_counter(), _children_cpu()
        with contextlib.suppress(subprocess.TimeoutExpired):  # the helper passes this process's PATH on
            done = claude_plugin_eval(claude, copy, work / "home", server.url, KEY, out, *flags)
        wall, cpu = time.perf_counter() - start, _children_cpu() - cpu
        counts = classify(list(server.requests))
    scores, failure, arms = None, "", ""
    try:
        result = json.loads(out.read_text())
        scores = {c["dir"]: (c["aggregates"].get("score"), c["aggregates"].get("scoreWithout"))
                  for c in result["cases"]}
        suite_ = result.get("suite") or {}
        arms = f"{suite_.get('ablation')}, plugins {[p.get('name') for p in suite_.get('plugins') or []]}"
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        failure = _tail(done, f"no result the bench could read ({type(exc).__name__}: {exc})")
    return Run("runner", wall, load, counts, scores, cpu=cpu, failure=failure, arms=arms)


def self_checks(package: Path) -> int:
    """Re-executions the self-checks made, both arms (each session cassette keeps its attempts')."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return sum(int(check.get("runs") or 0) for path in package.rglob("*.session.yaml")
               for check in yaml.load(path.read_text(), Loader=loader).get("self_check") or [])


def run_ours(suite: str, work: Path, latency: float, jobs: int, runs: int, path: str, judge: str,
             self_check: bool) -> Run:
    name = "ours" if self_check else "ours --no-self-check"
    copy = Path(shutil.copytree(CORPUS / suite, work / ("ours" if self_check else "ours-nsc")))
    out = work / f"{copy.name}.json"
    own = work / f"{copy.name}.cpu"
    argv = [sys.executable, "-c", OWN_CPU, str(own), "run", "--package", str(copy), "--record",
            "--engine", "claude-code", "--jobs", str(jobs), *(["--runs", str(runs)] if runs else []),
            *(["--judge", judge] if judge else []),
            *([] if self_check else ["--no-self-check"]), "-o", str(out)]
    load = os.getloadavg()[0]
    done: subprocess.CompletedProcess[str] | None = None
    with ModelServer(SCORED.get(suite, ANSWERED), latency=latency, api_key=KEY) as server:
        start, cpu = time.perf_counter(), _children_cpu()
        with contextlib.suppress(subprocess.TimeoutExpired):
            done = subprocess.run(argv, env=_env(server, path), capture_output=True, text=True,
                                  timeout=TIMEOUT, check=False, stdin=subprocess.DEVNULL)
        wall, cpu = time.perf_counter() - start, _children_cpu() - cpu
        counts = classify(list(server.requests))
    scores, failure, arms, checks = None, "", "", 0
    try:
        report = json.loads(out.read_text())
        cases = report["cases"]
        scores = {case_folder(c["file"]): (c.get("score"), c.get("score_without")) for c in cases
                  if c.get("score") is not None}
        checks = self_checks(copy)
        two = sum(c.get("score_without") is not None for c in cases)
        arms = (f"{(report.get('config') or {}).get('ablation')} ({two} of {len(cases)} cases with a score "
                f"without), plugins {[p.get('name') for p in report.get('plugins') or []]}")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        failure = _tail(done, f"no report the bench could read ({type(exc).__name__}: {exc})")
    try:
        own_cpu: float | None = float(own.read_text())
    except (OSError, ValueError):
        own_cpu = None
    return Run(name, wall, load, counts, scores, cpu=cpu, own_cpu=own_cpu, self_checks=checks,
               failure=failure, arms=arms)


def _same(a: float | None, b: float | None) -> bool:
    return (a is None) == (b is None) and (a is None or b is None or round(a, 6) == round(b, 6))


def agreement(theirs: Run, ours: Run) -> str:
    if theirs.scores is None or ours.scores is None:
        return "-"
    if set(theirs.scores) != set(ours.scores):
        return f"no: cases {sorted(set(theirs.scores) ^ set(ours.scores))}"
    differ = [k for k, (s, w) in theirs.scores.items()
              if not (_same(s, ours.scores[k][0]) and _same(w, ours.scores[k][1]))]
    if differ:
        return f"no: {len(differ)} of {len(theirs.scores)} ({', '.join(differ)})"
    return f"yes ({len(theirs.scores)})"


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "-"


def beyond(theirs: Counts, ours: Counts) -> list[tuple[str, int]]:
    """(kind, ours minus the runner's) for each kind of request whose count differs."""
    kinds = set(theirs.kinds) | set(ours.kinds)
    return sorted(((k, ours.kinds[k] - theirs.kinds[k]) for k in kinds if ours.kinds[k] != theirs.kinds[k]),
                  key=lambda kv: (-abs(kv[1]), kv[0]))


def grid_point(suite: str, latency: float, jobs: int, runs: int, self_check: str, path: str, judge: str,
               summary: list[list[object]], keep: Path | None) -> None:
    each = runs or "(each case's own)"
    print(f"\n== {suite}, latency {latency:g} s, -j {jobs}, runs {each}", flush=True)
    with tempfile.TemporaryDirectory(prefix="aam-bench-vs-runner-") as tmp:
        work = Path(tmp)
        if keep is not None:
            work = keep / f"{suite}-l{latency:g}-j{jobs}"
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir(parents=True)
        theirs = run_runner(suite, work, latency, jobs, runs, path, judge)
        mine = [run_ours(suite, work, latency, jobs, runs, path, judge, on)
                for on in {"both": (True, False), "on": (True,), "off": (False,)}[self_check]]
    rows = []
    for run in (theirs, *mine):
        c = run.counts
        alone = run is theirs or bool(run.failure)
        rows.append([run.tool + (" FAILED" if run.failure else ""), f"{run.wall:.1f}", f"{run.load:.1f}",
                     f"{run.cpu:.1f}", "-" if run.own_cpu is None else f"{run.own_cpu:.1f}",
                     c.sessions, c.agent, c.judge, c.mock, c.other, c.total,
                     "-" if alone else _ratio(run.wall, theirs.wall),
                     "-" if alone else _ratio(c.total, theirs.counts.total),
                     "-" if run is theirs else agreement(theirs, run)])
        summary.append([suite, f"{latency:g}", jobs, *rows[-1]])
    print_table(["tool", *COLUMNS], rows)
    print("arms: " + "; ".join(f"{r.tool} {r.arms}" for r in (theirs, *mine) if r.arms))
    for what in ("agent", "judge"):
        models = {r.tool: sorted(getattr(r.counts, f"{what}_models")) for r in (theirs, *mine)}
        print(f"{what} model: " + "; ".join(f"{t} {', '.join(m) or '-'}" for t, m in models.items()))
    for run in (theirs, *mine):
        if run.failure:
            print(f"\n{run.tool} failed: {run.failure}", flush=True)
    for run in mine:
        if run.failure or theirs.failure:
            continue
        extra = beyond(theirs.counts, run.counts)
        if run.self_checks:
            print(f"{run.tool}: {run.self_checks} self-check re-execution(s), served by the replay proxy")
        if not extra:
            print(f"{run.tool}: the same requests as the runner, kind by kind")
            continue
        more = sum(n for _, n in extra if n > 0)
        fewer = -sum(n for _, n in extra if n < 0)
        print(f"{run.tool}: {more} request(s) beyond the runner's, {fewer} fewer, by kind:")
        for kind, n in extra:
            print(f"  {n:+d}  {kind}")
    by_tool = {r.tool: r for r in mine}
    if "ours" in by_tool and "ours --no-self-check" in by_tool:
        on, off = by_tool["ours"], by_tool["ours --no-self-check"]
        print(f"self-check's cost: {on.wall - off.wall:+.1f} s wall, {on.cpu - off.cpu:+.1f} s CPU, "
              f"{on.counts.total - off.counts.total:+d} model request(s) ({on.self_checks} re-execution(s))")
    sys.stdout.flush()


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suites",
                        help=f"corpus repositories, comma-separated (default: {','.join(DEFAULT_SUITES)})")
    parser.add_argument("--latency", default="0,1", help="seconds before each answer, comma-separated")
    parser.add_argument("--jobs", default="1,4", help="concurrency of both tools, comma-separated")
    parser.add_argument("--runs", type=int, default=1, help="--runs given to both tools (0: each case's own)")
    parser.add_argument("--self-check", choices=("both", "on", "off"), default="both",
                        help="ours with the self-check, without it (--no-self-check), or both")
    parser.add_argument("--judge", default=JUDGE,
                        help=f"the judge model of both (default: {JUDGE}; empty: each tool's default)")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="keep each point's copies, results and reports under DIR")
    parser.add_argument("--quick", action="store_true",
                        help=f"a smoke run: latency 0, -j 4, --runs 1, on {QUICK_SUITE} unless --suites")
    args = parser.parse_args()
    if args.quick:
        args.suites, args.latency, args.jobs, args.runs = args.suites or QUICK_SUITE, "0", "4", 1
    args.suites = args.suites or ",".join(DEFAULT_SUITES)
    suites = [s.strip() for s in args.suites.split(",") if s.strip()]
    unknown = [s for s in suites if not (CORPUS / s).is_dir()]
    if unknown:
        parser.error(f"not in {CORPUS.relative_to(ROOT)}: {', '.join(unknown)}")
    path = ensure_pinned_clis()
    os.environ["PATH"] = path
    claude = shutil.which("claude", path=path) or "claude"
    version = subprocess.run([claude, "--version"], capture_output=True, text=True, check=False).stdout
    load = os.getloadavg()[0]
    print(f"claude {version.strip()}; {os.cpu_count()} CPU(s); load average {load:.1f} at start")
    summary: list[list[object]] = []
    for suite in suites:
        for latency in _floats(args.latency):
            for jobs in _ints(args.jobs):
                grid_point(suite, latency, jobs, args.runs, args.self_check, path, args.judge, summary,
                           args.keep)
    if len(summary) > 3:
        print("\n== all points")
        print_table(["suite", "latency", "jobs", "tool", *COLUMNS], summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
