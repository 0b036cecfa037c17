"""Re-execute replay benchmark: prints a table of numbers (not a test).

    python bench/bench_rerun.py              # every example case with claude, csv-summary-e2e with codex

For each case of the shipped example (examples/csv-tools): one live session against the scripted
model server through the recording proxy, then the server is stopped and the real CLI re-executes
in a fresh workspace against the replay proxy. Reported: both times, whether the outcome was
identical, the traffic size as stored YAML (with and without its shared table) against today's
session cassette, and how much the shared tables of all cases have in common.
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from aam_eval_action.engines.base import AgentRun, Engine
from aam_eval_action.engines.registry import get_engine
from aam_eval_action.fsutil import dump_yaml
from aam_eval_action.package import PackageLayout
from aam_eval_action.redact import Redactor
from aam_eval_action.replay.proxy import RecordingProxy, ReplayProxy, Upstream, proxy_env
from aam_eval_action.replay.traffic import ModelTraffic, Normaliser, Paths
from aam_eval_action.session import Session
from aam_eval_action.spec import Sandbox
from aam_eval_action.testing.model_server import ModelServer, load_scenarios

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = PackageLayout(ROOT / "examples/csv-tools")
SCENARIOS = load_scenarios(ROOT / "examples/scripted-model/csv-tools.yaml")
KEYS = {"ANTHROPIC_API_KEY": "sk-ant-bench-key", "OPENAI_API_KEY": "sk-openai-bench-key"}


@dataclasses.dataclass
class Row:
    case: str
    engine: str
    live_s: float
    rerun_s: float
    identical: bool
    traffic_bytes: int
    traffic_no_shared_bytes: int
    session_bytes: int
    shared: dict[str, Any]


def cases() -> list[dict[str, Any]]:
    found = []
    for path in sorted((PACKAGE.evals_dir / "cases").glob("*.yaml")):
        found.append(yaml.safe_load(path.read_text()))
    return found


def workspace(engine: Engine, case: dict[str, Any]) -> AgentRun:
    """A fresh workspace as the runner makes it: input files, workspace files, the package."""
    base = Path(tempfile.mkdtemp(prefix=f"aam-eval-{case['name']}-"))
    ws, home = base / "workspace", base / "home"
    ws.mkdir()
    home.mkdir()
    inputs = case.get("input") or {}
    for rel in inputs.get("files") or []:
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(PACKAGE.evals_dir / rel, ws / rel)
    for rel in inputs.get("workspace-files") or []:
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(PACKAGE.evals_dir / "fixtures" / rel, ws / rel)
    engine.install(PACKAGE, ws, case.get("target"))
    env = dict(KEYS)
    return AgentRun(prompt=inputs["prompt"], model=engine.default_model, workspace=ws, home=home,
                    env=env, timeout=120, sandbox=Sandbox())


def pointed(engine: Engine, run: AgentRun, url: str) -> AgentRun:
    return dataclasses.replace(run, env={**run.env, **proxy_env(engine.name, url)})


def normaliser(run: AgentRun) -> Normaliser:
    return Normaliser(Paths(run.workspace, run.home, run.workspace.parent), Redactor(KEYS))


def outcome(session: Session, run: AgentRun) -> tuple[Any, ...]:
    installed = (".claude", ".agents", ".codex", ".aam", "CLAUDE.md", "AGENTS.md")
    files = sorted((p.relative_to(run.workspace).as_posix(), p.read_bytes())
                   for p in run.workspace.rglob("*")
                   if p.is_file() and p.relative_to(run.workspace).parts[0] not in installed)
    return session.output, session.is_error, session.hook_blocked, files


def bench_case(engine: Engine, case: dict[str, Any]) -> Row:
    run = workspace(engine, case)
    with ModelServer(SCENARIOS) as server:
        upstream = server.url if engine.name == "claude-code" else server.url + "/v1"
        with RecordingProxy(Upstream(upstream), normaliser(run)) as proxy:
            started = time.monotonic()
            session = engine.run(pointed(engine, run, proxy.url))
            live_s = time.monotonic() - started
    recorded = outcome(session, run)
    shutil.rmtree(run.workspace.parent)
    data = proxy.traffic().model_dump(mode="json", exclude_none=True)
    text = dump_yaml(data)
    traffic = ModelTraffic.model_validate(yaml.safe_load(text))

    run = workspace(engine, case)
    with ReplayProxy(traffic, normaliser(run)) as replay:
        started = time.monotonic()
        session = engine.run(pointed(engine, run, replay.url))
        rerun_s = time.monotonic() - started
    identical = replay.divergence is None and outcome(session, run) == recorded
    shutil.rmtree(run.workspace.parent)
    cassette = ROOT / "cassettes" / case["name"] / f"{engine.name}.session.yaml"
    return Row(
        case=case["name"], engine=engine.name, live_s=live_s, rerun_s=rerun_s, identical=identical,
        traffic_bytes=len(text.encode()),
        traffic_no_shared_bytes=len(dump_yaml({**data, "shared": {}}).encode()),
        session_bytes=cassette.stat().st_size if cassette.is_file() else 0,
        shared=traffic.shared,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=1, help="repeat each case (times are medians)")
    args = parser.parse_args()
    plan = [("claude-code", c) for c in cases()]
    plan += [("codex", c) for c in cases() if c["name"] == "csv-summary-e2e"]
    rows = []
    for engine_name, case in plan:
        engine = get_engine(engine_name)
        if engine.available():
            print(f"skip {engine_name}: {engine.available()}")
            continue
        runs = [bench_case(engine, case) for _ in range(args.rounds)]
        row = runs[-1]
        row.live_s = statistics.median(r.live_s for r in runs)
        row.rerun_s = statistics.median(r.rerun_s for r in runs)
        rows.append(row)
    print(f"{'case':24} {'engine':11} {'live s':>7} {'rerun s':>7} {'same':>5} "
          f"{'traffic':>8} {'no-shared':>9} {'session':>8} {'ratio':>6}")
    for r in rows:
        ratio = r.traffic_bytes / r.session_bytes if r.session_bytes else float("nan")
        print(f"{r.case:24} {r.engine:11} {r.live_s:7.2f} {r.rerun_s:7.2f} {r.identical!s:>5} "
              f"{r.traffic_bytes:8d} {r.traffic_no_shared_bytes:9d} {r.session_bytes:8d} {ratio:6.1f}")
    for engine_name in sorted({r.engine for r in rows}):
        mine = [r for r in rows if r.engine == engine_name]
        union: dict[str, Any] = {}
        for r in mine:
            union.update(r.shared)
        print(f"{engine_name}: {len(mine)} cases; traffic total {sum(r.traffic_bytes for r in mine)} B, "
              f"session cassettes {sum(r.session_bytes for r in mine)} B; shared tables once across cases "
              f"{len(dump_yaml(union).encode())} B + per-case rest "
              f"{sum(r.traffic_no_shared_bytes for r in mine)} B")


if __name__ == "__main__":
    main()
