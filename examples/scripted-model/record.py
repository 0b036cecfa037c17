"""Re-record the shipped example's cassettes against the project's scripted model server.

    python examples/scripted-model/record.py            # every case on all four engines
    python examples/scripted-model/record.py codex      # only these engines

Needs the `claude`, `codex`, `copilot` and `gemini` CLIs on PATH. To record against a real API
instead, skip this script and run `aam-eval run --record --package examples/csv-tools` with
ANTHROPIC_API_KEY set.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from aam_eval_action.testing.model_server import ModelServer, load_scenarios

ROOT = Path(__file__).resolve().parents[2]

PACKAGE = ROOT / "examples" / "csv-tools"
ENGINES = {"claude-code": (), "codex": ("--model", "gpt-5.5"), "copilot": (),
           "gemini-cli": ("--model", "gemini-2.5-pro")}


def main() -> int:
    scenarios = load_scenarios(Path(__file__).with_name("csv-tools.yaml"))
    with ModelServer(scenarios) as server:
        env = {
            **os.environ,
            "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": server.api_key,
            "OPENAI_BASE_URL": server.url + "/v1", "OPENAI_API_KEY": server.api_key,
            "GOOGLE_GEMINI_BASE_URL": server.url, "GEMINI_API_KEY": server.api_key,
        }
        base = [sys.executable, "-m", "aam_eval_action", "run", "--record", "--package", str(PACKAGE),
                "--jobs", "3"]
        chosen = sys.argv[1:] or list(ENGINES)
        runs = [base + ["--engine", engine, *ENGINES[engine]] for engine in chosen]
        for argv in runs:
            print("$", " ".join(argv[2:]), flush=True)
            subprocess.run(argv, env=env, check=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
