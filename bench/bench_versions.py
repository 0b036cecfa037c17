"""Re-execution with CLI releases other than the pins: prints a table of numbers (not a test).

    python bench/bench_versions.py              # every `# other:` release, 5 re-executions
    python bench/bench_versions.py --runs 3

For each release listed as `# other:` in requirements/agent-clis.txt (installed once into the
test cache), the sub-agent package and the shipped example are recorded with it against the
scripted model server (each recording checks itself), then re-executed `--runs` times. It
prints whether every run gave the recorded verdicts with no divergence, what the recordings
learnt about the release's volatile values, and the times.
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

from support.agent_clis import ensure_pinned_clis, ensure_release, other_releases  # noqa: E402

ENGINE_OF = {"claude": "claude-code", "gemini": "gemini-cli", "codex": "codex", "copilot": "copilot"}
KEYS = {"ANTHROPIC_API_KEY": "sk-ant-bench-versions", "GEMINI_API_KEY": "gemini-bench-versions",
        "OPENAI_API_KEY": "sk-openai-bench-versions"}
PACKAGES = {
    "sub-agents": (ROOT / "tests/fixtures/subagents-pkg", ROOT / "tests/fixtures/subagents-scenarios.yaml"),
    "example": (ROOT / "examples/csv-tools", ROOT / "examples/scripted-model/csv-tools.yaml"),
}


def run(pkg: Path, scenarios: Path, path: str, *args: str) -> tuple[dict[str, Any], float]:
    out = pkg.parent / "out.json"
    with ModelServer(load_scenarios(scenarios), api_key=tuple(KEYS.values())) as server:
        env = {**os.environ, **KEYS, "PATH": path, "ANTHROPIC_BASE_URL": server.url,
               "GOOGLE_GEMINI_BASE_URL": server.url, "OPENAI_BASE_URL": server.url + "/v1"}
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "aam_eval_action", "run", "--package", str(pkg), *args,
                        "-o", str(out)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=False)
        took = time.perf_counter() - start
    return json.loads(out.read_text()), took


def copy(source: Path, dest: Path) -> Path:
    shutil.copytree(source, dest)
    config = dest / "evals/eval-config.json"
    data = json.loads(config.read_text())
    config.write_text(json.dumps({**data, "cassettes": "cassettes", "baseline": False}))
    return dest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    pinned = ensure_pinned_clis()
    rows = []
    for pin in other_releases():
        path = f"{ensure_release(pin)}{os.pathsep}{pinned}"
        engine = ENGINE_OF[pin.command]
        for name, (source, scenarios) in PACKAGES.items():
            with tempfile.TemporaryDirectory() as tmp:
                pkg = copy(source, Path(tmp) / "pkg")
                recorded, record_s = run(pkg, scenarios, path, "--record", "--jobs", "2", "--engine", engine)
                verdicts = {c["name"]: c["verdict"] for c in recorded["cases"]}
                checks = [c.get("self_check") or {} for c in recorded["cases"]]
                learnt = sorted({m for check in checks for m in check.get("learnt", [])})
                unstable = sum(bool(check.get("unstable")) for check in checks)
                same, diverged, times = 0, 0, []
                for _ in range(args.runs):
                    report, took = run(pkg, scenarios, path, "--replay", "--rerun", "--jobs", "2",
                                       "--engine", engine)
                    times.append(took)
                    diverged += sum(c.get("replay_miss") == "diverged" for c in report["cases"])
                    kinds = {c.get("replay_kind") for c in report["cases"]}
                    now = {c["name"]: c["verdict"] for c in report["cases"]}
                    same += now == verdicts and kinds == {"rerun"}
                rows.append((pin.spec, name, len(verdicts), f"{same}/{args.runs}", diverged, unstable,
                             len(learnt), f"{record_s:.1f}", f"{sum(times) / len(times):.1f}"))
                for mask in learnt:
                    print(f"  {pin.spec} {name}: learnt {mask}")
    head = ("release", "package", "cases", "runs same", "diverged", "unstable", "learnt", "record s",
            "rerun s")
    print_table(head, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
