"""What the sandbox costs a session to start: prints a table (not a test).

    python bench/bench_sandbox.py            # 20 starts of each
    python bench/bench_sandbox.py --runs 50

Each row starts one short process (`python3 -c pass`, the shape of a CLI's start-up without its
own work) as a session would, through `run_process`: unconfined; inside Landlock with the
network open (`writes: landlock; network: open`); inside Landlock with TCP only to one port
(`network: port-only`, the namespace off), with every UNIX socket refused by the filter
(`unix: none`) and with the session's supervisor answering its connections (`unix: session`);
and, where user namespaces are allowed, in a network namespace of its own with the relay to
that port (`network: namespace`). The table gives the median and the 90th percentile wall time
of a start, and what it adds to the unconfined one.

Then what a connection costs (200 TCP connections to a local listener from inside a session:
unconfined; port-only without and with the supervisor making it; in the namespace, through
its relay too), and the launcher's own imports
(`python -X importtime`): the modules it loads before the CLI starts, and their time.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from table import print_table  # noqa: E402

from aam_eval_action.engines.process import run_process  # noqa: E402
from aam_eval_action.sandbox.plan import Confinement, confine, probe_namespace  # noqa: E402


def timings(made: Confinement | None, folder: Path, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        done = run_process([sys.executable, "-I", "-c", "pass"], cwd=folder, env={"PATH": "/usr/bin:/bin"},
                           timeout=60, confine=made)
        out.append(time.perf_counter() - start)
        if done.exit_code != 0:
            raise SystemExit(f"the session did not start: {done.stderr.strip()}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="aam-bench-sandbox-") as tmp:
        folder = Path(tmp)
        port_only = confine([folder], 43121, network=False)
        rows: list[tuple[str, Confinement | None]] = [
            ("unconfined", None),
            ("landlock, network open", confine([folder], 43121, network=True)),
            ("landlock, port-only, unix: none", dataclasses.replace(port_only, namespace=False, unix="none")),
            ("landlock, port-only", dataclasses.replace(port_only, namespace=False)),
        ]
        if port_only.namespace:
            rows.append(("landlock + network namespace", port_only))
        else:
            print(f"no network namespace here: {probe_namespace()}")
        if not port_only.abi:
            print(f"no Landlock here: {port_only.why_not}")
        base = 0.0
        table = []
        for label, made in rows:
            times = timings(made, folder, args.runs)
            median = statistics.median(times)
            p90 = sorted(times)[max(0, int(len(times) * 0.9) - 1)]
            base = base or median
            table.append([label, made.describe() if made else "-", f"{median * 1000:.0f} ms",
                          f"{p90 * 1000:.0f} ms", f"+{(median - base) * 1000:.0f} ms" if made else "-"])
    print_table(["session", "confinement", "median", "p90", "added"], table)
    print()
    print_table(["connections", "confinement", "per connection"], connection_costs(args.runs))
    print()
    modules, ms = launcher_imports()
    print(f"the launcher imports {modules} modules of its own and the standard library's in {ms:.1f} ms "
          "(python -I -X importtime -m aam_eval_action.sandbox.enter)")
    return 0


CONNECTS = """
import socket, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
start = time.perf_counter()
for _ in range(n):
    socket.create_connection(("127.0.0.1", port)).close()
print((time.perf_counter() - start) / n)
"""


def connection_costs(runs: int) -> list[list[str]]:
    """The median time of a TCP connection from a session, unconfined and supervised."""
    import socket
    import threading

    server = socket.create_server(("127.0.0.1", 0), backlog=256)
    port = server.getsockname()[1]

    def serve() -> None:
        while True:
            try:
                server.accept()[0].close()
            except OSError:
                return

    threading.Thread(target=serve, daemon=True).start()
    rows = []
    with tempfile.TemporaryDirectory(prefix="aam-bench-sandbox-") as tmp:
        confined = confine([Path(tmp)], port, network=False)
        variants = [None, dataclasses.replace(confined, namespace=False, unix="none"),
                    dataclasses.replace(confined, namespace=False), confined]
        for made in dict.fromkeys(variants):
            each = []
            for _ in range(max(1, runs // 4)):
                done = run_process([sys.executable, "-I", "-c", CONNECTS, str(port), "200"], cwd=Path(tmp),
                                   env={"PATH": "/usr/bin:/bin"}, timeout=120, confine=made)
                if done.exit_code != 0:
                    raise SystemExit(f"the connections failed: {done.stderr.strip()}")
                each.append(float(done.stdout))
            rows.append(["200 TCP", made.describe() if made else "unconfined",
                         f"{statistics.median(each) * 1e6:.0f} µs"])
    server.close()
    return rows


def launcher_imports() -> tuple[int, float]:
    """How many modules the sandbox's launcher imports, and their cumulative time."""
    import subprocess

    done = subprocess.run([sys.executable, "-I", "-X", "importtime", "-m", "aam_eval_action.sandbox.enter"],
                          capture_output=True, text=True, check=False)
    rows = [line.split("|") for line in done.stderr.splitlines() if line.startswith("import time:")][1:]
    top = [r for r in rows if len(r) == 3 and not r[2].startswith("  ")]
    return len(rows), sum(int(r[1]) for r in top) / 1000


if __name__ == "__main__":
    raise SystemExit(main())
