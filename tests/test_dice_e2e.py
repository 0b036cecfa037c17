"""The dice end to end, through the real CLIs: main's nightlies record a die-roll package
(tests/fixtures/dice: a steady die, one that lands 7 in 10, one 9 in 10), each committed with its
history; a pull request rewords the seven's skill and breaks the nine's (it then lands 15 in
100); `run --mode auto` samples the two changed cases until the rule decides, and `aam-eval
diff` against main's replay, its history read from main's commit, blames the break with both
sides' counts and not the rewording.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from aam_eval_action.testing.model_server import ModelServer, load_scenarios

from conftest import ROOT, aam_eval, installed

DICE = ROOT / "tests/fixtures/dice"
KEYS = {"ANTHROPIC_API_KEY": "sk-ant-CANARY-dice-e2e-71c3", "OPENAI_API_KEY": "sk-CANARY-dice-e2e-0b9d"}
NIGHTS = 4
NIGHT_SEEDS = (136, 137, 138, 139)
"""Main's nightlies draw: steady H H H H, seven H H T H, nine H H H T (its last night a FAIL)."""
HEAD_SEED = 203
"""The pull request's run draws the broken nine tails eleven times before heads, the seven heads."""
REWORDED = """---
name: seven
description: The seven die - roll it when someone asks for the seven die; it comes up a winner seven times in ten.
---

# The seven die

Roll the die once and tell the user the face it landed on, in one line.
"""


def _git(repo: Path, *argv: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *argv], check=True, capture_output=True, text=True).stdout


def _run(repo: Path, seed: int, out: Path, *argv: str) -> Any:
    """`aam-eval run` on the package against the scripted model server, its coin seeded."""
    with pytest.MonkeyPatch.context() as mp, \
            ModelServer(load_scenarios(DICE / "scenarios.json"), api_key=tuple(KEYS.values()), seed=seed) as server:
        mp.setenv("ANTHROPIC_BASE_URL", server.url)
        mp.setenv("OPENAI_BASE_URL", server.url + "/v1")
        for name, value in KEYS.items():
            mp.setenv(name, value)
        result = aam_eval("run", "--package", str(repo), *argv, "--jobs", "3", "-o", str(out))
    assert result.code in (0, 1), result.out + result.err
    return json.loads(out.read_text())


def _diff(base: Path, head: Path) -> dict[str, Any]:
    result = aam_eval("diff", str(base), str(head), "--format", "json")
    assert result.code in (0, 1), result.err
    return json.loads(result.out)


def _story(tmp_path: Path, engine: list[str]) -> tuple[dict[str, Any], dict[str, Any], str, Path]:
    repo = tmp_path / "repo"
    shutil.copytree(DICE, repo)
    reports = tmp_path / "reports"
    _git(tmp_path, "init", "-q", "-b", "main", str(repo))
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=n", "-c", "user.email=n@x", "commit", "-qm", "dice")
    # Main's nightlies, each committed with everything it wrote.
    for night in range(NIGHTS):
        _run(repo, NIGHT_SEEDS[night], reports / f"night-{night}.json", "--record", "--no-self-check", *engine)
        _git(repo, "add", "-A")
        _git(repo, "-c", "user.name=n", "-c", "user.email=n@x", "commit", "-qm", f"night {night}")
    # Between nightlies nothing changed: no diff blames a case.
    for night in range(1, NIGHTS):
        nightly = _diff(reports / f"night-{night - 1}.json", reports / f"night-{night}.json")
        assert nightly["regressions"] == 0, [c for c in nightly["cases"] if c["category"] == "regressed"]
    main = _git(repo, "rev-parse", "HEAD").strip()
    # The pull request: the seven reworded (it rolls as before), the nine broken.
    _git(repo, "checkout", "-qb", "pr")
    (repo / "skills/seven/SKILL.md").write_text(REWORDED)
    shutil.copy(DICE / "variants/broken-nine/SKILL.md", repo / "skills/nine/SKILL.md")
    _git(repo, "-c", "user.name=n", "-c", "user.email=n@x", "commit", "-qam", "reword seven, break nine")
    head = _run(repo, HEAD_SEED, reports / "head.json", "--mode", "auto", *engine)
    # The base: main's commit replayed in a worktree, with main's history.
    _git(repo, "worktree", "add", "-q", str(tmp_path / "base"), main)
    _run(tmp_path / "base", 0, reports / "base.json", "--replay", *engine)
    return _diff(reports / "base.json", reports / "head.json"), head, main, repo


@pytest.mark.cli
@pytest.mark.parametrize("engine", [("claude-code", []), ("codex", ["--engine", "codex", "--model", "gpt-5.5"])],
                         ids=["claude-code", "codex"])
def test_the_break_is_blamed_with_its_evidence_and_the_rewording_is_not(
    tmp_path: Path, engine: tuple[str, list[str]]
) -> None:
    installed(engine[0])
    diff, head, main, repo = _story(tmp_path, engine[1])
    by_name = {c["name"]: c for c in diff["cases"]}
    nine, seven, steady = by_name["roll-nine"], by_name["roll-seven"], by_name["roll-steady"]
    heads = {c["name"]: c for c in head["cases"]}
    # The break: sampled until the rule blamed it, both sides' counts shown.
    assert nine["category"] == "regressed" and nine["evidence"]["decision"] == "regressed", nine
    assert nine["evidence"]["before_attempts"] == NIGHTS
    assert nine["base_verdict"] == "FAIL"  # main's last nightly drew a FAIL: the break is not "still failing"
    assert nine["evidence_text"].startswith("regressed: ") and "before (p = " in nine["evidence_text"]
    assert heads["roll-nine"]["evidence"]["now_attempts"] >= 2
    # The rewording: never blamed; it holds or says what deciding would cost.
    assert seven["category"] != "regressed", seven
    assert seven["evidence"]["decision"] in ("holds", "not-shown"), seven
    assert heads["roll-seven"]["evidence"]["now_attempts"] >= 2
    if seven["evidence"]["decision"] == "not-shown":
        assert "would decide" in seven["evidence_text"]
    # The steady die did not change: replayed, nothing spent, its history carried.
    assert steady["category"] == "unchanged" and heads["roll-steady"]["replayed"] is True
    assert heads["roll-steady"]["history"]["attempts"] == NIGHTS
    assert diff["regressions"] == 1
    # Every attempt made is in the head's history, under the new inputs; main's history is untouched.
    lines = [json.loads(line) for line in (repo / "evals/cassettes/roll-nine/history.jsonl").read_text().splitlines()]
    assert sum(line["attempts"] for line in lines) == NIGHTS + heads["roll-nine"]["evidence"]["now_attempts"]
    assert len(_git(repo, "show", f"{main}:evals/cassettes/roll-nine/history.jsonl").splitlines()) == NIGHTS
    # The comment shows the evidence, and no key is written anywhere.
    comment = aam_eval("diff", str(tmp_path / "reports/base.json"), str(tmp_path / "reports/head.json"),
                       "--format", "markdown").out
    assert nine["evidence_text"].split(" (p")[0] in comment
    for path in [*repo.rglob("history.jsonl"), *(tmp_path / "reports").glob("*.json")]:
        text = path.read_text()
        assert not any(key in text for key in KEYS.values()), path
