"""`aam-eval tune` through the real Claude Code and Codex CLIs against the scripted model server
(tests/fixtures/tune-skills: three siblings, the target's description too narrow; every prompt
routed by the words it shares with each listed description).

The proposer's three candidates meet three fates: one that copies a train prompt is refused by the
lint before anything is spent; one that also claims schema-docs' prompts is vetoed on the
selection prompts, saying which prompt it took; the third wins on the held-out test prompts on
Claude Code (and Codex in bench/bench_repeats.py) with the lower bound of its improvement above 0. `tune --replay` then says the same,
byte for byte, with no CLI, no key and no network. A suite of six prompts ends in "no significant
improvement" with the smallest effect its test prompts could show; there, a prompt whose fire
rate sits on the threshold gets extra runs, and no other does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, installed
from support.action_env import OWNER, REPO, pull_request_env
from support.gitrepo import commit_all, init
from support.repeats import repeated

FIXTURE = ROOT / "tests/fixtures/tune-skills"
SCENARIOS = yaml.safe_load((ROOT / "tests/fixtures/tune-skills-scenarios.yaml").read_text())["scenarios"]
KEYS = {"ANTHROPIC_API_KEY": "sk-ant-test-tune", "OPENAI_API_KEY": "sk-test-tune"}
GOOD = SCENARIOS[0]["propose"][0]


def _tune(pkg: Path, *flags: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "aam_eval_action", "tune", "--skill", "db-migrations",
                           "--package", str(pkg), *flags], env=env, capture_output=True, text=True, timeout=900,
                          check=False)


def _live_env(url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    return env | {"ANTHROPIC_BASE_URL": url, "OPENAI_BASE_URL": url + "/v1", **KEYS}


@pytest.mark.cli
def test_tune_proposes_a_description_that_wins_on_held_out_prompts(tmp_path: Path) -> None:
    from aam_eval_action.testing.model_server import ModelServer

    # Claude Code here; Claude Code and Codex together in bench/bench_repeats.py.
    engines = repeated(["claude-code"], ["codex"])
    models = {"claude-code": "claude-sonnet-4-6", "codex": "gpt-5.5"}
    for engine in engines:
        installed(engine)
    pairs = [f"{e} · {models[e]}" for e in engines]
    repo = tmp_path / "repo"
    init(repo)
    pkg = Path(shutil.copytree(FIXTURE, repo / "pkg"))
    flags = ["--engine", ",".join(engines), "--model", ",".join(models[e] for e in engines)]
    with ModelServer(SCENARIOS, api_key=tuple(KEYS.values())) as server:
        live = _tune(pkg, *flags, "-o", str(tmp_path / "live.json"), "--patch", str(tmp_path / "live.patch"),
                     env=_live_env(server.url))
        proposer_calls = sum("propose_descriptions" in json.dumps(r.body) for r in server.requests)
    assert live.returncode == 0, live.stdout + live.stderr
    out = live.stdout
    assert f"tune db-migrations: 17 trigger prompts (train 5, selection 4, test 8) on {', '.join(pairs)}" in out
    assert "refused (proposer, round 1): copies a train prompt's words ('rename the customer column and')" in out
    assert ("it takes schema-docs's prompt billing-tables on claude-code · claude-sonnet-4-6 (") in out
    assert "of the train and selection prompts, e.g. 'Document each table of the billing database with its keys')" in out
    for pair in pairs:
        assert f"{pair:<32}   2/8 (7%–59%)   8/8 (68%–100%)  +75% (+6% to +75%), 6 better, 0 worse" in out
    assert f"suggested (proposer, round 1): {GOOD}" in out and proposer_calls == 1
    record = json.loads((tmp_path / "live.json").read_text())
    assert record["decision"] == "suggested" and record["candidate"] == GOOD
    assert all(g["interval"][0] > 0 for g in record["gate"].values())
    patch = (tmp_path / "live.patch").read_text()
    assert "-description: Writes Alembic revision files for a Flask app.\n" in patch
    assert f"+description: {json.dumps(GOOD)}\n" in patch
    assert "Writes Alembic revision files for a Flask app." in (pkg / "skills/db-migrations/SKILL.md").read_text()

    # Offline: the same candidates, numbers and decision from the recordings alone.
    bare = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    again = _tune(pkg, *flags, "--replay", "-o", str(tmp_path / "replay.json"), "--patch",
                  str(tmp_path / "replay.patch"), env=bare | {"PATH": "/usr/bin:/bin"})
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.replace("replay.patch", "live.patch") == live.stdout

    # The action, asked `tune: suggest` on a pull request, replays it and posts the winner as a
    # suggested change on the description line.
    from aam_eval_action.commands.action import action as action_main
    from aam_eval_action.testing.github_server import GitHubServer

    base = commit_all(repo, "the recorded tuning")
    with GitHubServer(tokens={"rw-token": "write"}) as gh:
        gh.add_pr(OWNER, REPO, 7)
        env = pull_request_env(repo, tmp_path, gh.url, "rw-token", base, 7, tune="suggest",
                               tune_skill="db-migrations", engine=flags[1],
                               model=flags[3], fail_on="never")
        assert action_main(env) == 0
        [review] = gh.reviews(OWNER, REPO, 7)
    [comment] = review["comments"]
    assert review["event"] == "COMMENT" and (comment["path"], comment["line"], comment["side"]) == \
        ("pkg/skills/db-migrations/SKILL.md", 3, "RIGHT")
    assert comment["body"].endswith(f"```suggestion\ndescription: {json.dumps(GOOD)}\n```")
    for pair in pairs:
        assert f"| {pair} | 2/8 | 8/8 | +6% to +75% |" in comment["body"]
    spent = json.loads((tmp_path / "live.json").read_text())
    replayed = json.loads((tmp_path / "replay.json").read_text())
    assert spent.pop("spent_usd") > 0 and replayed.pop("spent_usd") == 0  # a replay spends nothing
    assert replayed == spent


def _one_file(pkg: Path, extra: tuple[tuple[str, str, str], ...] = (), keep: set[str] | None = None) -> None:
    """The suite's cases in one file, as a list, with no split tags (tune must make and keep one);
    `extra`: (name, skill, prompt) cases added; `keep`: only these of the fixture's."""
    cases = []
    for case in sorted((pkg / "evals/cases").glob("*.yaml")):
        doc = yaml.safe_load(case.read_text())
        case.unlink()
        if keep is None or doc["name"] in keep:
            doc.pop("tags")
            cases.append(doc)
    cases += [{"name": name, "target": f"skill:{skill}", "install-all-skills": True, "input": {"prompt": prompt},
               "expected": {"skill-triggered": True}} for name, skill, prompt in extra]
    (pkg / "evals/cases/triggers.yaml").write_text(yaml.safe_dump(cases, sort_keys=False))


def test_too_few_test_prompts_stop_before_any_session_and_the_kept_split_is_reused(tmp_path: Path) -> None:
    """Six prompts in one file with no split: tune makes a split, keeps it beside the cases
    (evals/tune-split.yaml: the file of several cases is left as it is), says before any session
    that even a perfect candidate could not pass the gate, and stops having spent nothing. The
    next run reads the kept split (edited by hand here: its plan line says so)."""
    from aam_eval_action.testing.model_server import ModelServer

    pkg = Path(shutil.copytree(FIXTURE, tmp_path / "pkg"))
    _one_file(pkg, keep={"status-backfill", "rename-invoices", "drop-audit-table", "report-explain",
                         "table-pages", "rename-customer-column"})
    before = (pkg / "evals/cases/triggers.yaml").read_text()
    with ModelServer(SCENARIOS, api_key=tuple(KEYS.values())) as server:
        run = _tune(pkg, "--no-propose", "--candidate", GOOD, "-o", str(tmp_path / "tune.json"),
                    env=_live_env(server.url))
        asked = len(server.requests)
    assert run.returncode == 0, run.stdout + run.stderr
    assert asked == 0  # no session, no proposal: nothing spent
    assert ("note: the suite has no split: tags: tune's split, stratified by the skill each prompt belongs to "
            "(seed aam-eval-tune-1): train 4, selection 1, test 1, kept in evals/tune-split.yaml for every later "
            "run: review and commit it (a case's own split: tag wins)") in run.stdout
    assert ("power: the gate shows a gain only when at least 6 test prompts go from wrong to right with none "
            "going back; the suite has 1: even a perfect candidate could not pass it") in run.stdout
    assert "cannot show: stopped before any session" in run.stdout
    assert (pkg / "evals/cases/triggers.yaml").read_text() == before
    kept = yaml.safe_load((pkg / "evals/tune-split.yaml").read_text())["split"]
    assert kept["rename-customer-column"] == "test" and list(kept.values()).count("test") == 1
    assert json.loads((tmp_path / "tune.json").read_text())["decision"] == "cannot show"
    # The next run reads the kept split, as a person edited it.
    (pkg / "evals/tune-split.yaml").write_text(
        (pkg / "evals/tune-split.yaml").read_text().replace("drop-audit-table: select", "drop-audit-table: test"))
    again = _tune(pkg, "--no-propose", "--candidate", GOOD, "--replay", env=_live_env("http://127.0.0.1:9"))
    assert "train 3, selection 1, test 2, kept in evals/tune-split.yaml" in again.stdout, again.stdout
    assert "the suite has 2: even a perfect candidate could not pass it" in again.stdout


@pytest.mark.cli
def test_a_twenty_prompt_suite_drafts_test_prompts_until_the_gate_can_show_a_gain(tmp_path: Path) -> None:
    """A 20-prompt suite (one file, no split) leaves 5 test prompts: tune says so before any
    session. With `--draft-test 8` it drafts 8 held-out test prompts as init drafts them (cited,
    recorded, written for review), the baseline now gets 6 of 13 wrong, the gate can speak, and the
    good description is suggested with its interval above 0; the proposer never saw a drafted
    prompt. `--replay` drafts the same prompts from the recording, offline, and prints the same."""
    from aam_eval_action.testing.model_server import ModelServer

    installed("claude-code")
    pkg = Path(shutil.copytree(FIXTURE, tmp_path / "pkg"))
    _one_file(pkg, extra=(
        ("make-email-not-null", "db-migrations", "Make the email column not null after a backfill, with a downgrade"),
        ("payments-created-at", "db-migrations",
         "Add a created_at column to payments and backfill old rows with a rollback"),
        ("orders-explain", "query-tuning", "The orders query is slow; read its EXPLAIN plan and add an index")))
    flags = ["--engine", "claude-code", "--model", "claude-sonnet-4-6", "--no-propose", "--candidate", GOOD]
    with ModelServer(SCENARIOS, api_key=tuple(KEYS.values())) as server:
        first = _tune(pkg, *flags, env=_live_env(server.url))
        spent_first = len(server.requests)
        live = _tune(pkg, *flags, "--draft-test", "8", "-o", str(tmp_path / "live.json"), env=_live_env(server.url))
    assert first.returncode == 0 and spent_first == 0, first.stdout + first.stderr
    assert "tune db-migrations: 20 trigger prompts (train 10, selection 5, test 5)" in first.stdout
    assert "the suite has 5: even a perfect candidate could not pass it" in first.stdout
    assert live.returncode == 0, live.stdout + live.stderr
    out = live.stdout
    assert ("drafted 8 held-out test prompt(s) (round 1, claude-sonnet-4-6): 4 for db-migrations, 4 near misses "
            "of query-tuning, schema-docs; written to evals/cases/db-migrations-test-drafts.yaml, to review") in out
    assert ("power on claude-code · claude-sonnet-4-6: the baseline gets 6 of 13 test prompts wrong; the gate needs "
            "at least 6 to go from wrong to right with none going back: the smallest gain it could show is 6 "
            "prompts (46%)") in out
    record = json.loads((tmp_path / "live.json").read_text())
    assert record["decision"] == "suggested" and record["candidate"] == GOOD, out
    [gate] = record["gate"].values()
    assert (gate["n"], gate["better"], gate["worse"]) == (13, 6, 0) and gate["interval"][0] > 0
    drafts = yaml.safe_load((pkg / "evals/cases/db-migrations-test-drafts.yaml").read_text())
    assert len(drafts) == 8 and all("split:test" in c["tags"] and c["draft"]["reviewed"] is False for c in drafts)
    assert {c["draft"]["cites"] for c in drafts} >= {"Write one revision per change", "Add the index that node needs"}
    assert (pkg / "evals/cassettes/tune/db-migrations/draft-test-1.yaml").is_file()
    bare = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    again = _tune(pkg, *flags, "--draft-test", "8", "--replay", "-o", str(tmp_path / "live.json"),
                  env=bare | {"PATH": "/usr/bin:/bin"})
    assert again.returncode == 0 and again.stdout == out, again.stdout + again.stderr


INIT_DRAFT = {
    "draft-for": "# Database migrations",
    "draft": {
        "positives": [{"prompt": p, "cites": c} for p, c in [
            ("Drop the legacy audit table in a migration with a rollback", "how to roll it back"),
            ("Drop the unused sessions column with a downgrade", "a `downgrade()` that undoes it"),
            ("Backfill the new region field for old rows and keep a rollback", "Backfill data in its own step"),
            ("Rename the customer column and write the downgrade too", "a `downgrade()` that undoes it"),
            ("Rename table invoices to bills and drop the old index", "Write one revision per change"),
            ("Write a rollback for yesterday's column change", "how to roll it back"),
            ("Split the address table into two tables with a downgrade path", "Write one revision per change"),
            ("Add a nullable status column and backfill it from orders", "Backfill data in its own step"),
            ("Add a unique constraint to emails and backfill duplicates first", "Backfill data in its own step"),
            ("Make the email column not null after a backfill, with a downgrade", "in batches, so the table"),
            ("Add a created_at column to payments and backfill old rows with a rollback", "Backfill data in its own step"),
            ("Add a migration that renames the orders status column and its downgrade", "Write one revision per change"),
            ("Backfill the created date on old invoices in batches with a rollback", "Backfill data in its own step"),
            ("Drop the temporary import table in a migration and keep the rollback", "how to roll it back"),
            ("Rename the sku column in products and write the downgrade", "Say what each revision does")]],
        "near_misses": [
            {"prompt": "Document each table of the billing database with its keys", "sibling": "B",
             "cites": "columns, types, keys, relations"},
            {"prompt": "Draw an ER diagram of the schema and its relations", "sibling": "B",
             "cites": "Draw the ER diagram in Mermaid"},
            {"prompt": "Speed up the dashboard SQL with a better join", "sibling": "C",
             "cites": "rewrite the join so an existing one is used"},
            {"prompt": "Why is this query slow even with the index", "sibling": "C",
             "cites": "Add the index that node needs"}],
        "out_of_scope": [{"prompt": "Plan the team offsite agenda for next month"},
                         {"prompt": "Translate the onboarding guide into Spanish"}],
        "tasks": [],
    },
}
"""What the drafting model answers `aam-eval init` for db-migrations: 15 prompts the narrow
description misses, 2 near misses of each sibling (B: schema-docs, C: query-tuning, as init ranks
them by BM25), 2 out of scope."""


@pytest.mark.cli
def test_a_suite_drafted_by_init_tunes_as_it_is(tmp_path: Path) -> None:
    """`aam-eval init` drafts the suite (its train and test tags, in one file of many cases),
    then tune, through the real Claude Code CLI: the selection set is carved from train and said,
    the candidate that takes schema-docs' prompts is vetoed naming the prompt, the good one is
    suggested with its interval above 0 on init's test prompts, SKILL.md is left alone, and a
    replay prints the same, byte for byte."""
    from aam_eval_action.testing.model_server import ModelServer

    installed("claude-code")
    pkg = Path(shutil.copytree(FIXTURE, tmp_path / "pkg"))
    for case in (pkg / "evals/cases").glob("*.yaml"):
        case.unlink()
    thief = SCENARIOS[0]["propose"][1]
    flags = ["--engine", "claude-code", "--model", "claude-sonnet-4-6", "--no-propose", "--candidate", GOOD,
             "--candidate", thief]
    skill = (pkg / "skills/db-migrations/SKILL.md").read_text()
    scenarios = [INIT_DRAFT, *(s for s in SCENARIOS if "draft-for" not in s)]
    with ModelServer(scenarios, api_key=tuple(KEYS.values())) as server:
        drafted = subprocess.run([sys.executable, "-m", "aam_eval_action", "init", "--package", str(pkg), "--skill",
                                  "db-migrations", "--positives", "16", "--negatives", "6", "--tasks", "0"],
                                 env=_live_env(server.url), capture_output=True, text=True, timeout=300, check=False)
        assert drafted.returncode == 0, drafted.stdout + drafted.stderr
        written = yaml.safe_load((pkg / "evals/cases/db-migrations-triggers.yaml").read_text())
        assert len(written) == 22 and {t for c in written for t in c["tags"] if t.startswith("split:")} == {
            "split:train", "split:test"}, drafted.stdout
        live = _tune(pkg, *flags, "-o", str(tmp_path / "live.json"), env=_live_env(server.url))
    assert live.returncode == 0, live.stdout + live.stderr
    out = live.stdout
    assert "tune db-migrations: 22 trigger prompts (train 10, selection 3, test 9)" in out
    assert "note: the suite's split has train and test prompts but no selection: 3 of its 13 train prompts" in out
    assert ("power on claude-code · claude-sonnet-4-6: the baseline gets 6 of 9 test prompts wrong; the gate needs "
            "at least 6 to go from wrong to right with none going back: the smallest gain it could show is 6 "
            "prompts (67%)") in out
    assert ("vetoed (yours, 146 characters): claude-code · claude-sonnet-4-6:" in out
            and "it takes schema-docs's prompt db-migrations-near-02 on claude-code · claude-sonnet-4-6" in out
            and "e.g. 'Draw an ER diagram of the schema and its relations'" in out), out
    assert f"suggested (yours): {GOOD}" in out
    record = json.loads((tmp_path / "live.json").read_text())
    assert record["decision"] == "suggested" and all(g["interval"][0] > 0 for g in record["gate"].values())
    assert (pkg / "skills/db-migrations/SKILL.md").read_text() == skill
    bare = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    again = _tune(pkg, *flags, "--replay", "-o", str(tmp_path / "live.json"), env=bare | {"PATH": "/usr/bin:/bin"})
    assert again.returncode == 0 and again.stdout == out, again.stdout
