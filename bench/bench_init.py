"""Benchmark of a first suite: `aam-eval init` on a repository of 20 sibling skills (plan, draft
against the scripted model server through the real SDK, redraft from the recording), then the
drafted trigger suite replayed with 3 runs per prompt and its routing diffed. Prints a table of
medians (each a whole process, as users run it); not a test.

    python bench/bench_init.py [--skills 20] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from aam_eval_action.drafting.skills import read_skills, siblings
from aam_eval_action.loader import load_repo
from aam_eval_action.testing.model_server import ModelServer
from aam_eval_action.testing.packages import record_sessions

CLI = [sys.executable, "-m", "aam_eval_action"]
TOPICS = ["changelog", "release", "commit", "migration", "schema", "report", "invoice", "backup", "deploy",
          "lint", "test", "docs", "api", "cache", "queue", "metrics", "alert", "secret", "image", "locale"]
VERBS = ["write", "check", "update", "draft", "review", "list", "plan", "fix", "export", "summarise"]


def _body(topic: str, rng: random.Random) -> str:
    lines = [f"# {topic.title()} helper", ""]
    for i in range(30):
        other = rng.choice(TOPICS)
        lines.append(f"{i + 1}. {rng.choice(VERBS).title()} the {topic} entries and the {other} notes "
                     f"for step {i + 1} before the {rng.choice(TOPICS)} review.")
    return "\n".join(lines) + "\n"


def repository(root: Path, n: int) -> Path:
    rng = random.Random(7)
    for topic in TOPICS[:n]:
        skill = root / "skills" / f"{topic}-helper"
        skill.mkdir(parents=True)
        description = f"Keeps the {topic} work of a project in order and {rng.choice(VERBS)}s {topic} files."
        (skill / "SKILL.md").write_text(f"---\nname: {topic}-helper\ndescription: {description}\n---\n"
                                        + _body(topic, rng))
    return root


def _steps(body: str) -> list[str]:
    """The numbered lines of a body, without their numbers: passages to cite verbatim."""
    return [line.split(". ", 1)[1] for line in body.splitlines() if line[:1].isdigit()]


def drafts(repo: Path) -> list[dict[str, Any]]:
    """One scripted answer per skill: every prompt cites a line of its skill verbatim."""
    docs = read_skills(load_repo(repo).packages[0].layout)
    near = siblings(docs, 2)
    steps = {d.name: _steps(d.body) for d in docs}
    answers = []
    for doc in docs:
        positives = [{"prompt": f"Case {k}: our team needs step {k} done for the project today, please.",
                      "cites": steps[doc.name][k]} for k in range(9)]
        near_misses = [{"sibling": letter, "prompt": f"Could you handle step {k} of area {letter} for me?",
                        "cites": steps[s.name][k]}
                       for letter, s in zip("BC", near[doc.name], strict=False) for k in range(4)]
        answers.append({"draft-for": steps[doc.name][0], "draft": {
            "positives": positives, "near_misses": near_misses,
            "out_of_scope": [{"prompt": "Translate the README into German."}, {"prompt": "Resize the logo."}],
            "tasks": []}})
    return answers


def timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def median(argv: list[str], env: dict[str, str], repeat: int) -> float:
    return statistics.median(timed(argv, env) for _ in range(repeat))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skills", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="aam-bench-init-"))
    repo = repository(work / "repo", args.skills)
    rows: list[tuple[str, str]] = []
    with ModelServer(drafts(repo)) as server:
        env = {**os.environ, "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": server.api_key}
        init = [*CLI, "init", "--package", str(repo), "--tasks", "0"]
        plan = median([*init, "--dry-run"], env, args.repeat)
        rows.append((f"init --dry-run, {args.skills} skills (BM25 siblings)", f"{plan:.2f} s"))
        drafted = median([*init, "--force"], env, args.repeat)
        rows.append((f"init, {args.skills} drafting calls (scripted model)", f"{drafted:.2f} s"))
    offline = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    redrafted = median([*init, "--replay", "--force"], offline, args.repeat)
    rows.append((f"init --replay, {args.skills} skills offline", f"{redrafted:.2f} s"))
    cases = sum(len(yaml.safe_load(p.read_text())) for p in (repo / "evals/cases").glob("*.yaml"))
    rng = random.Random(3)
    names = [c["name"] for p in (repo / "evals/cases").glob("*.yaml") for c in yaml.safe_load(p.read_text())]
    skills = [f"{t}-helper" for t in TOPICS[: args.skills]]
    runs = {n: [[rng.choice(skills)] if rng.random() < 0.9 else [] for _ in range(3)] for n in names}
    record_sessions(repo, dict.fromkeys(names, "Done."), fired=runs)
    base = work / "base.json"
    replay = [*CLI, "run", "--replay", "--package", str(repo), "-o", str(base)]
    replayed = median(replay, offline, args.repeat)
    rows.append((f"run --replay, {cases} trigger cases x 3 runs (routing matrix)", f"{replayed:.2f} s"))
    moved = {n: [[rng.choice(skills)]] * 3 if rng.random() < 0.1 else r for n, r in runs.items()}
    record_sessions(repo, dict.fromkeys(names, "Done."), fired=moved)
    head = work / "head.json"
    subprocess.run([*CLI, "run", "--replay", "--package", str(repo), "-o", str(head)], env=offline,
                   stdout=subprocess.DEVNULL, check=False)
    diff = [*CLI, "diff", str(base), str(head), "--format", "markdown"]
    diffed = median(diff, offline, args.repeat)
    rows.append(("diff --format markdown (moved prompts, matrix)", f"{diffed:.2f} s"))
    width = max(len(r[0]) for r in rows)
    print(f"{'what (median of ' + str(args.repeat) + ', as a process)':{width}}  time")
    for what, value in rows:
        print(f"{what:{width}}  {value}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
