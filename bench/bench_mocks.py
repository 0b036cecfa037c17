"""What a `claude plugin eval` mock costs a session: prints a table (not a test).

    python bench/bench_mocks.py            # 20 starts, 200 calls
    python bench/bench_mocks.py --runs 50 --calls 500

The stand-in MCP server (`aam_eval_action/mocks/server.py`) is started as a CLI starts it, with
the spec `mocks.serve` writes for the fixture plugin's tracker (a fixed answer with an input and
a file template, guarded by `expect:`), and asked `initialize` then `tools/list` (its start, to
the first listing); then one stand-in answers a run of `tools/call`s (each one logged); then the
same calls of an agent-played tool go through the relay folder to a harness-side thread that
answers at once (the relay's round trip, without the model). Medians and 90th percentiles.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from table import print_table  # noqa: E402

from aam_eval_action import mocks  # noqa: E402
from aam_eval_action.pipeline.mock_agent import Relay  # noqa: E402

FIXTURE = ROOT / "tests/fixtures/cpe-plugin"
CASE = "evals/issues/file-a-bug"


def _line(n: int, method: str, params: dict[str, object] | None = None) -> bytes:
    return (json.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": params or {}}) + "\n").encode()


def _served(folder: Path, agent: bool) -> mocks.Served:
    read = mocks.load(FIXTURE, mocks.layers(FIXTURE, "evals", CASE))
    servers = mocks.resolve(read, {"tracker": {}}, "team-notes", allow_real=False)
    if agent:  # the same tool, played by a model (here: a thread that answers at once)
        tool = servers[0].tools["create_issue"]
        servers[0].tools["create_issue"] = mocks.Responder("agent", "You play the tracker.", False, None,
                                                           tool.base_dir, tool.source, tool.digest)
    return mocks.serve(servers, FIXTURE, folder / "specs", folder / "home/calls.jsonl")


def starts(folder: Path, runs: int) -> list[float]:
    config = _served(folder, agent=False).configs["tracker"]
    out = []
    for _ in range(runs):
        began = time.perf_counter()
        proc = subprocess.Popen([config["command"], *config["args"]], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(_line(0, "initialize", {"protocolVersion": "2025-06-18"}) + _line(1, "tools/list"))
        proc.stdin.flush()
        proc.stdout.readline()
        proc.stdout.readline()
        out.append(time.perf_counter() - began)
        proc.stdin.close()
        proc.wait()
    return out


def calls(folder: Path, count: int, agent: bool) -> list[float]:
    served = _served(folder / ("agent" if agent else "fixed"), agent)
    config = served.configs["tracker"]
    arguments = {"title": "Export crashes on empty input", "labels": ["bug"]}
    out = []
    with Relay(served.relay if agent else None, lambda call: ("ok", "Created issue #42")):
        proc = subprocess.Popen([config["command"], *config["args"]], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE)
        assert proc.stdin is not None and proc.stdout is not None
        for n in range(count):
            began = time.perf_counter()
            proc.stdin.write(_line(n, "tools/call", {"name": "create_issue", "arguments": arguments}))
            proc.stdin.flush()
            proc.stdout.readline()
            out.append(time.perf_counter() - began)
        proc.stdin.close()
        proc.wait()
    assert len(served.calls()) == count
    return out


def _ms(values: list[float]) -> tuple[str, str]:
    ordered = sorted(values)
    p90 = ordered[int(len(ordered) * 0.9) - 1]
    return f"{statistics.median(ordered) * 1000:.1f} ms", f"{p90 * 1000:.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        rows = [("stand-in start, to its tools/list", args.runs, *_ms(starts(folder, args.runs))),
                ("fixed answer (templates, expect, logged)", args.calls,
                 *_ms(calls(folder, args.calls, False))),
                ("agent-played call through the relay", args.calls, *_ms(calls(folder, args.calls, True)))]
    print_table(("measure", "n", "median", "p90"), rows)


if __name__ == "__main__":
    main()
