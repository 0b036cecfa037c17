"""`aam-eval tune` without an agent: the gate's statistics, the split, the lint, the edit of a
SKILL.md's description, and the cap stopping a run before it spends."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from aam_eval_action.tuning.candidates import handoffs, lint, split
from aam_eval_action.tuning.stats import Paired, clopper_pearson, detectable, least_moves
from aam_eval_action.tuning.tuner import with_description

from conftest import ROOT, aam_eval

SKILLS = {"db-migrations": "Writes Alembic revision files for a Flask app.",
          "query-tuning": "Speeds up a slow SQL query. Reads the EXPLAIN plan, adds or changes an index.",
          "schema-docs": "Documents a database schema. One page per table with its columns and keys."}
TRAIN = ["Rename the customer column and write the downgrade too"]
ENGINES = [("claude-code", "claude-sonnet-4-6"), ("codex", "gpt-5.5"), ("copilot", "claude-sonnet-4-6")]


def test_the_exact_interval_and_the_paired_gate() -> None:
    lo, hi = clopper_pearson(6, 6)
    assert (round(lo, 4), hi) == (0.5407, 1.0)  # 0.025 ** (1/6)
    lo, hi = clopper_pearson(3, 10)
    assert (round(lo, 4), round(hi, 4)) == (0.0667, 0.6525)
    six = Paired(8, better=6, worse=0)
    assert six.shown and six.improvement == 0.75 and round(six.interval[0], 3) == 0.061
    assert round(six.p_value, 4) == 0.0312
    five = Paired(8, better=5, worse=0)  # one fewer: the lower bound is no longer above 0
    assert not five.shown and five.interval[0] < 0
    mixed = Paired(20, better=7, worse=1)
    assert not mixed.shown and round(mixed.p_value, 3) == 0.070
    assert least_moves() == 6
    assert detectable(2).startswith("no improvement can show on 2 test prompt(s): at least 6 must go from wrong")
    assert "the smallest improvement that can show is 6 prompts" in detectable(24) and "(25% of them)" in detectable(24)


def test_a_suite_without_a_split_gets_a_fixed_stratified_one_and_says_so() -> None:
    items = [(f"c{i}", f"c{i}", f"prompt {i}", "a" if i < 8 else "b", None) for i in range(12)]
    first, note, store = split(items)
    again, _, _ = split(list(reversed(items)))
    assert [(p.name, p.split) for p in first] == [(p.name, p.split) for p in again]  # fixed, not by order
    by = {s: [p for p in first if p.split == s] for s in ("train", "select", "test")}
    assert {p.expected for p in by["test"]} == {"a", "b"}  # stratified
    assert (len(by["train"]), len(by["select"]), len(by["test"])) == (6, 3, 3)
    assert note and note.startswith("the suite has no split: made one") and note.endswith("test 3") and store
    tagged, none, _ = split([("x", "x", "p", "a", "test"), ("y", "y", "q", "a", None)])
    assert none is None and [p.split for p in tagged] == ["test", "train"]


def test_a_train_and_test_split_as_init_writes_it_is_used_as_it_is() -> None:
    """`init` tags drafted prompts split:train and split:test: the test prompts stay as tagged, and
    the selection set is carved from train (a third of each skill's, by a fixed seed), the same on
    every run and never stored."""
    items = [(f"c{i}", f"c{i}", f"prompt {i}", "a" if i < 9 else "b", "split:test" if i % 3 == 0 else "split:train")
             for i in range(15)]
    from aam_eval_action.tuning.candidates import SPLIT_TAGS

    items = [(n, c, t, e, SPLIT_TAGS[tag]) for n, c, t, e, tag in items]
    first, note, store = split(items)
    again, _, _ = split(list(reversed(items)))
    assert [(p.name, p.split) for p in first] == [(p.name, p.split) for p in again] and not store
    by = {s: sorted(p.name for p in first if p.split == s) for s in ("train", "select", "test")}
    assert by["test"] == sorted(n for n, *_, tag in items if tag == "test")  # as tagged
    assert len(by["select"]) == 3 and {p.expected for p in first if p.split == "select"} == {"a", "b"}
    assert note == ("the suite's split has train and test prompts but no selection: 3 of its 10 train prompts "
                    "are the selection set, stratified by skill (seed aam-eval-tune-1), made the same way on "
                    "every run; the test prompts are as tagged")


@pytest.mark.parametrize("text, why", [
    ("", "empty"),
    ("x " * 600, "over 1,024, Copilot CLI would not load the skill"),
    ("Rename the customer column and more.", "copies a train prompt's words ('rename the customer column and')"),
    ("Database migrations for any task you have.", "catch-all wording ('any task')"),
    ("Migrations. For query speed use sql-speedup instead.", "names a skill that is not installed ('sql-speedup')"),
    ("Writes database migrations. " + "Every change gets a rollback and a backfill step. " * 19,
     "its length pushes sql-linter out of claude-code's skill listing at claude-sonnet-4-6"),
])
def test_the_lint_refuses_before_anything_is_spent(text: str, why: str) -> None:
    crowded = SKILLS | {"release-notes": "Drafts release notes from merged pull requests. " * 8,
                        "sql-linter": "Lints SQL files for style and risky statements before they ship. " * 6}
    assert why in (lint(text, "db-migrations", SKILLS["db-migrations"], TRAIN, crowded, ENGINES) or "")


def test_the_lint_passes_a_plain_description_and_a_hand_off_names_the_sibling() -> None:
    good = "Plans and writes database migrations with a rollback for each change."
    assert lint(good, "db-migrations", SKILLS["db-migrations"], TRAIN, SKILLS, ENGINES) is None
    [handoff] = handoffs("db-migrations", SKILLS["db-migrations"], {"schema-docs": 2}, SKILLS)
    assert handoff.text == ("Writes Alembic revision files for a Flask app. Not for the work of schema-docs "
                            "(Documents a database schema); use schema-docs for that.")
    assert handoff.source == "rule: hand off to schema-docs"
    # A sibling whose first sentence runs past 100 characters is cut at a space, so a skill name it
    # mentions stays whole and the hand-off passes the lint (a public suite's case).
    about = ("Scan the repository, propose one change, wait for the go-ahead, and with it run the whole "
             "propose-then-ship-pi loop to merge.")
    assert about.index("propose-then-ship-pi") < 100 < about.index("propose-then-ship-pi") + 20
    skills = SKILLS | {"propose-then-ship-pi": about}
    [long] = handoffs("db-migrations", SKILLS["db-migrations"], {"propose-then-ship-pi": 1}, skills)
    assert "(Scan the repository, propose one change, wait for the go-ahead, and with it run the whole);" in long.text
    assert lint(long.text, "db-migrations", SKILLS["db-migrations"], TRAIN, skills, ENGINES) is None
    # A sibling's own hyphenated words are not a skill name: "use propose-then-ship-pi" names the
    # installed skill, not a "propose-then-ship" (a public suite's case).
    pipeline = {"propose-then-ship-pi": "Use for the propose-then-ship pipeline: scan, propose, ship."}
    [quoted] = handoffs("db-migrations", SKILLS["db-migrations"], {"propose-then-ship-pi": 1}, SKILLS | pipeline)
    assert lint(quoted.text, "db-migrations", SKILLS["db-migrations"], TRAIN, SKILLS | pipeline, ENGINES) is None


def test_the_description_is_replaced_where_it_is_written() -> None:
    folded = "---\nname: x\ndescription: >\n  Two lines\n  of text.\nlicense: MIT\n---\n\n# X\n"
    assert with_description(folded, 'New: "quoted"') == \
        '---\nname: x\ndescription: "New: \\"quoted\\""\nlicense: MIT\n---\n\n# X\n'
    missing = "---\nname: x\n---\nbody\n"
    assert with_description(missing, "Added.") == '---\nname: x\ndescription: "Added."\n---\nbody\n'


def test_the_cap_stops_tune_before_it_spends_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = Path(shutil.copytree(ROOT / "tests/fixtures/tune-skills", tmp_path / "pkg"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-cap")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")  # never reached: nothing fits the cap
    out = aam_eval("tune", "--skill", "db-migrations", "--package", str(pkg), "--candidate", "Migrations.",
                   "--no-propose", "--max-usd", "0.0001", "-o", str(tmp_path / "tune.json"))
    assert out.code == 1, out.err
    assert "STOPPED: max-usd $0.0001 stopped the tuning: spent $0.0000 on 0 session(s)" in out.out
    assert "estimated at most $" in out.out and "held to max-usd $0.0001: the cap will stop it before the end" in out.out
    assert json.loads((tmp_path / "tune.json").read_text())["decision"] == "stopped"
    assert not (pkg / "skills/db-migrations/SKILL.md").read_text().count("Migrations.")  # never edited


def test_tune_names_a_skill_that_does_not_exist(tmp_path: Path) -> None:
    out = aam_eval("tune", "--skill", "nope", "--package", str(ROOT / "tests/fixtures/tune-skills"), "--replay")
    assert out.code == 2 and "--skill nope: no such skill (skills: db-migrations, query-tuning, schema-docs)" in out.err


def test_a_suggestion_cannot_break_out_of_its_fence_or_ping_anyone() -> None:
    from aam_eval_action.github.comments import post_suggestion
    from aam_eval_action.testing.github_server import GitHubServer

    hostile = 'description: "Runs ````\n@everyone <img src=x onerror=alert(1)> ```"'
    with GitHubServer(tokens={"rw-token": "write"}) as gh:
        gh.add_pr("octo", "skills", 3)
        result = post_suggestion(api_url=gh.url, token="rw-token", repository="octo/skills", pr_number=3,
                                 path="skills/x/SKILL.md", line=3, new_line=hostile, body="the table")
        [review] = gh.reviews("octo", "skills", 3)
    assert result.warning is None
    body = review["comments"][0]["body"]
    assert body.startswith("the table\n\n`````suggestion\n") and body.endswith("\n`````")  # longer than any run


def test_the_kept_split_tags_the_cases_it_names_and_a_case_tag_wins(tmp_path: Path) -> None:
    """tune's kept split (evals/tune-split.yaml): the loader gives each case it names its
    `split:` tag, even in a file of several cases; a case's own tag wins; a damaged file is an
    error naming its line, and the cases still load."""
    from aam_eval_action.loader import load_package

    pkg = Path(shutil.copytree(ROOT / "tests/fixtures/tune-skills", tmp_path / "pkg"))
    cases = []
    for case in sorted((pkg / "evals/cases").glob("*.yaml")):
        doc = yaml.safe_load(case.read_text())
        cases.append(doc)
        case.unlink()
    for doc in cases[1:]:
        doc.pop("tags")
    (pkg / "evals/cases/all.yaml").write_text(yaml.safe_dump(cases, sort_keys=False))
    own = cases[0]["name"], cases[0]["tags"][0]
    names = [c["name"] for c in cases]
    (pkg / "evals/tune-split.yaml").write_text(
        "version: 1\nsplit:\n" + "".join(f"  {n}: {'test' if i % 2 else 'train'}\n" for i, n in enumerate(names)))
    loaded = load_package(pkg)
    tags = {lc.case.name: [t for t in lc.case.tags if t.startswith("split:")] for lc in loaded.cases}
    assert tags[own[0]] == [own[1]] and own[0] not in loaded.stored_split
    assert tags[names[1]] == ["split:test"] and tags[names[2]] == ["split:train"]
    assert len(loaded.stored_split) == len(names) - 1
    (pkg / "evals/tune-split.yaml").write_text("version: 1\nsplit:\n  " + names[1] + ": later\n")
    loaded = load_package(pkg)
    assert [str(e) for e in loaded.errors] == [
        f"evals/tune-split.yaml:3: split.{names[1]}: 'later' is not one of train, select, test"]
    assert len(loaded.cases) == len(names)


def test_drafted_test_prompts_are_redrafted_only_while_nobody_edited_them(tmp_path: Path) -> None:
    """`--draft-test` drafts its file again from the recording while it is as tune wrote it (its
    header's digest of the cases); once a person has edited it, tune refuses to redraft it and says
    how to use it as it is, before any session."""
    from aam_eval_action.tuning.power import SIGNED, _signed, unedited

    cases = [{"name": "db-migrations-test1-fires-01", "target": "skill:db-migrations",
              "input": {"prompt": "Drop the old index in a migration"}, "expected": {"skill-triggered": True},
              "tags": ["drafted", "split:test"], "draft": {"reviewed": False}}]
    text = _signed(["Drafted by `aam-eval tune --draft-test`."], cases)
    assert unedited(text) and SIGNED in text
    edited = text.replace("Drop the old index", "Drop the legacy index")
    assert not unedited(edited)
    pkg = Path(shutil.copytree(ROOT / "tests/fixtures/tune-skills", tmp_path / "pkg"))
    (pkg / "evals/cases/db-migrations-test-drafts.yaml").write_text(edited)
    refused = aam_eval("tune", "--skill", "db-migrations", "--package", str(pkg), "--no-propose", "--draft-test", "8",
                       "--replay")
    assert refused.code == 2 and ("evals/cases/db-migrations-test-drafts.yaml was edited after tune drafted it "
                                  "(reviewed?): run without --draft-test") in refused.err, refused
