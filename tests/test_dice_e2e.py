"""The dice end to end, through the real CLIs: main's nightlies record a die-roll package
(tests/fixtures/dice: a steady die, one that lands 7 in 10, one 9 in 10), each committed with its
history; a pull request rewords the seven's skill and breaks the nine's (it then lands 15 in
100); `run --mode auto` samples the two changed cases until the rule decides, and `aam-eval
diff` against main's replay, its history read from main's commit, blames the break with both
sides' counts and not the rewording (`support/dice.py`; all four engines in
bench/bench_dice_e2e.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import installed
from support.dice import ENGINES, KEYS, NIGHT_SEEDS, diff, story


@pytest.mark.cli
@pytest.mark.parametrize("engine", ["claude-code", "codex"])
def test_the_break_is_blamed_with_its_evidence_and_the_rewording_is_not(tmp_path: Path, engine: str) -> None:
    installed(engine)
    told = story(tmp_path, ENGINES[engine])
    nights = len(NIGHT_SEEDS)
    # Between nightlies nothing changed: no diff blames a case (the seven and nine flipped).
    assert told.nightly_regressions == [0] * (nights - 1)
    by_name = {c["name"]: c for c in told.diff["cases"]}
    nine, seven, steady = by_name["roll-nine"], by_name["roll-seven"], by_name["roll-steady"]
    heads = {c["name"]: c for c in told.head["cases"]}
    # The break: sampled until the rule blamed it, both sides' counts shown, though main's last
    # nightly drew a FAIL (one attempt a side would read "still failing").
    assert nine["category"] == "regressed" and nine["evidence"]["decision"] == "regressed", nine
    assert nine["base_verdict"] == "FAIL" and nine["evidence"]["before_attempts"] == nights
    assert nine["evidence_text"].startswith("regressed: ") and "before (p = " in nine["evidence_text"]
    assert heads["roll-nine"]["evidence"]["now_attempts"] >= 3
    # The rewording: never blamed; it holds, or says what deciding would cost.
    assert seven["category"] != "regressed", seven
    assert seven["evidence"]["decision"] in ("holds", "not-shown"), seven
    if seven["evidence"]["decision"] == "not-shown":
        assert "would decide" in seven["evidence_text"]
    # The steady die did not change: replayed, nothing spent, its history carried.
    assert steady["category"] == "unchanged" and heads["roll-steady"]["replayed"] is True
    assert heads["roll-steady"]["history"]["attempts"] == nights
    assert told.diff["regressions"] == 1
    sampled = sum(heads[n]["evidence"]["now_attempts"] for n in ("roll-nine", "roll-seven"))
    assert told.sessions == {"nightlies": 3 * nights, "head": sampled}  # a case run twice is a bug
    # Every attempt made is in the head's history, under the new inputs; main's is untouched.
    path = told.repo / "evals/cassettes/roll-nine/history.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert sum(line["attempts"] for line in lines) == nights + heads["roll-nine"]["evidence"]["now_attempts"]
    # The comment shows the evidence, and no key is written anywhere.
    comment = diff(told.reports / "base.json", told.reports / "head.json", "markdown")
    assert nine["evidence_text"].split(" (p")[0] in comment and "### Regressions (1)" in comment
    for written in [*told.repo.rglob("history.jsonl"), *told.reports.glob("*.json")]:
        text = written.read_text()
        assert not any(key in text for key in KEYS.values()), written
