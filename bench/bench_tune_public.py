"""Benchmark: `aam-eval tune` on a public trigger set (prints what tune says and its times; not a test).

    python bench/bench_tune_public.py [SKILL]

The vendored repository tests/fixtures/tune-public/fitchmultz--pi-agent-skills (MIT; 12 skills,
11 trigger sets in skill-creator's `[{query, should_trigger}]` format, 123 queries) is copied as it
is, and `tune --skill SKILL --no-propose` (default: tdd) runs through the real Claude Code CLI
against the scripted model server, which routes each prompt to the listed skill whose name and
description share the most words with it. Then `tune --replay` reads the recordings back, offline.
Prints tune's own output, the sessions asked of the model, and both wall times.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from aam_eval_action.testing.model_server import ModelServer

ROOT = Path(__file__).resolve().parents[1]
PUBLIC = ROOT / "tests/fixtures/tune-public/fitchmultz--pi-agent-skills"
ROUTE = [{"match": "*", "agent": [{"route": {}}, {"text": "Done."}]}]


def main() -> None:
    skill = sys.argv[1] if len(sys.argv) > 1 else "tdd"
    with tempfile.TemporaryDirectory(prefix="aam-bench-tune-") as tmp:
        pkg = Path(shutil.copytree(PUBLIC, Path(tmp) / "pi-agent-skills"))
        flags = ["tune", "--skill", skill, "--package", str(pkg), "--engine", "claude-code", "--model",
                 "claude-sonnet-4-6", "--no-propose"]
        key = "sk-ant-bench-tune-public"
        with ModelServer(ROUTE, api_key=key) as server:
            env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
            env |= {"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": key}
            t0 = time.monotonic()
            live = subprocess.run([sys.executable, "-m", "aam_eval_action", *flags], env=env,
                                  capture_output=True, text=True, check=False)
            live_s = time.monotonic() - t0
            asked = len(server.requests)
        bare = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
        t0 = time.monotonic()
        again = subprocess.run([sys.executable, "-m", "aam_eval_action", *flags, "--replay"],
                               env=bare | {"PATH": "/usr/bin:/bin"}, capture_output=True, text=True,
                               check=False)
        replay_s = time.monotonic() - t0
    print(live.stdout + live.stderr)
    print(f"live: {live_s:.1f} s, {asked} model request(s); replay: {replay_s:.1f} s, "
          f"same output: {again.stdout == live.stdout}")


if __name__ == "__main__":
    main()
