"""Benchmark: reading repositories of plugins (prints numbers; not a test).

    python bench/bench_layouts.py

For marketplaces of 10, 100 and 300 plugins (each with 5 skills, 2 agents, a command and a
hooks file, under `plugins/<name>/` as the public marketplaces keep them): the time to detect
the layout and read every plugin into the neutral package, in process, and the wall time of
`aam-eval check` (median of 3). Repositories are generated under $AAM_BENCH_DIR.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from aam_eval_action.layouts.detect import detect

BENCH_DIR = Path(os.environ.get("AAM_BENCH_DIR", "/tmp/aam-eval-bench")) / "layouts"
SIZES = (10, 100, 300)


def marketplace(plugins: int) -> Path:
    root = BENCH_DIR / f"marketplace-{plugins}"
    if (root / ".complete").exists():
        return root
    entries = []
    for i in range(plugins):
        name = f"plugin-{i:03d}"
        base = root / "plugins" / name
        entries.append({"name": name, "source": f"./plugins/{name}"})
        _write(base / ".claude-plugin/plugin.json", json.dumps({"name": name, "version": "1.0.0"}))
        for s in range(5):
            _write(base / f"skills/skill-{s}/SKILL.md",
                   f"---\nname: skill-{s}\ndescription: Skill {s} of {name}.\n---\n\nDo step {s}.\n")
            _write(base / f"skills/skill-{s}/references/notes.md", "Notes.\n")
        for a in range(2):
            agent = f"---\nname: agent-{a}\ndescription: d\ntools: Read\n---\nHelp.\n"
            _write(base / f"agents/agent-{a}.md", agent)
        _write(base / "commands/run.md", "Run $ARGUMENTS.\n")
        _write(base / "hooks/hooks.json", json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/scripts/check.sh", "timeout": 5}]}]}}))
        _write(base / "scripts/check.sh", "#!/bin/sh\nexit 0\n")
    _write(root / ".claude-plugin/marketplace.json",
           json.dumps({"name": "bench", "owner": {"name": "b"}, "plugins": entries}))
    (root / ".complete").touch()
    return root


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def main() -> None:
    print(f"{'plugins':>8} {'files':>7} {'detect (in process)':>20} {'aam-eval check':>15}")
    for size in SIZES:
        root = marketplace(size)
        files = sum(1 for p in root.rglob("*") if p.is_file())
        t0 = time.perf_counter()
        found = detect(root)
        detect_s = time.perf_counter() - t0
        assert len(found.packages) == size
        walls = []
        for _ in range(3):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "aam_eval_action", "check", "--package", str(root)],
                           check=True, capture_output=True)
            walls.append(time.perf_counter() - t0)
        print(f"{size:>8} {files:>7} {detect_s:>19.3f}s {statistics.median(walls):>14.3f}s")


if __name__ == "__main__":
    main()
