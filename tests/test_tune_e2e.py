"""`aam-eval tune` through the real Claude Code and Codex CLIs against the scripted model server
(tests/fixtures/tune-skills: three siblings, the target's description too narrow; every prompt
routed by the words it shares with each listed description).

The proposer's three candidates meet three fates: one that copies a train prompt is refused by the
lint before anything is spent; one that also claims schema-docs' prompts is vetoed on the
selection prompts, saying which prompt it took; the third wins on the held-out test prompts on
both engines with the lower bound of its improvement above 0. `tune --replay` then says the same,
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
def test_tune_proposes_a_description_that_wins_on_held_out_prompts_on_both_engines(tmp_path: Path) -> None:
    from aam_eval_action.testing.model_server import ModelServer

    installed("claude-code")
    installed("codex")
    repo = tmp_path / "repo"
    init(repo)
    pkg = Path(shutil.copytree(FIXTURE, repo / "pkg"))
    flags = ["--engine", "claude-code,codex", "--model", "claude-sonnet-4-6,gpt-5.5"]
    with ModelServer(SCENARIOS, api_key=tuple(KEYS.values())) as server:
        live = _tune(pkg, *flags, "-o", str(tmp_path / "live.json"), "--patch", str(tmp_path / "live.patch"),
                     env=_live_env(server.url))
        proposer_calls = sum("propose_descriptions" in json.dumps(r.body) for r in server.requests)
    assert live.returncode == 0, live.stdout + live.stderr
    out = live.stdout
    assert "tune db-migrations: 17 trigger prompts (train 5, selection 4, test 8) on claude-code · " \
           "claude-sonnet-4-6, codex · gpt-5.5" in out
    assert "refused (proposer, round 1): copies a train prompt's words ('rename the customer column and')" in out
    assert ("it takes schema-docs's prompt billing-tables on claude-code · claude-sonnet-4-6 (") in out
    assert "of the train and selection prompts, e.g. 'Document each table of the billing database with its keys')" in out
    for pair in ("claude-code · claude-sonnet-4-6", "codex · gpt-5.5"):
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
                               tune_skill="db-migrations", engine="claude-code,codex",
                               model="claude-sonnet-4-6,gpt-5.5", fail_on="never")
        assert action_main(env) == 0
        [review] = gh.reviews(OWNER, REPO, 7)
    [comment] = review["comments"]
    assert review["event"] == "COMMENT" and (comment["path"], comment["line"], comment["side"]) == \
        ("pkg/skills/db-migrations/SKILL.md", 3, "RIGHT")
    assert comment["body"].endswith(f"```suggestion\ndescription: {json.dumps(GOOD)}\n```")
    assert "| codex · gpt-5.5 | 2/8 | 8/8 | +6% to +75% |" in comment["body"]
    spent = json.loads((tmp_path / "live.json").read_text())
    replayed = json.loads((tmp_path / "replay.json").read_text())
    assert spent.pop("spent_usd") > 0 and replayed.pop("spent_usd") == 0  # a replay spends nothing
    assert replayed == spent


@pytest.mark.cli
def test_six_prompts_end_in_no_significant_improvement(tmp_path: Path) -> None:
    from aam_eval_action.testing.model_server import ModelServer

    installed("claude-code")
    pkg = Path(shutil.copytree(FIXTURE, tmp_path / "pkg"))
    keep = {"status-backfill", "rename-invoices", "drop-audit-table", "report-explain", "table-pages",
            "rename-customer-column"}
    for case in (pkg / "evals/cases").glob("*.yaml"):
        doc = yaml.safe_load(case.read_text())
        if doc["name"] not in keep:
            case.unlink()
        else:  # no split tags: tune makes one and says so
            doc.pop("tags")
            case.write_text(yaml.safe_dump(doc, sort_keys=False))
    copied = "Writes migrations. Rename table invoices to bills and the like."
    config = json.loads((pkg / "evals/eval-config.json").read_text())
    (pkg / "evals/eval-config.json").write_text(json.dumps(config | {"triggers": {"runs": 2}}))
    # One train prompt fires its skill in every other session: its fire rate sits on the threshold.
    wavering = {"match": "This report query is slow", "agent": [{"route": {"miss-every": 2}}, {"text": "Done."}]}
    with ModelServer([wavering, *SCENARIOS], api_key=tuple(KEYS.values())) as server:
        run = _tune(pkg, "--no-propose", "--candidate", GOOD, "--candidate", copied, "-o",
                    str(tmp_path / "tune.json"), env=_live_env(server.url))
        proposer_calls = sum("propose_descriptions" in json.dumps(r.body) for r in server.requests)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "note: the suite has no split: made one, stratified by the skill each prompt belongs to" in run.stdout
    assert "stored as split:train, split:select and split:test tags in 6 case file(s), to review" in run.stdout
    tagged = {yaml.safe_load(f.read_text())["name"]: yaml.safe_load(f.read_text())["tags"]
              for f in (pkg / "evals/cases").glob("*.yaml")}
    assert tagged["rename-customer-column"] == ["split:test"] and tagged["drop-audit-table"] == ["split:select"]
    assert "refused (yours): copies a train prompt's words" in run.stdout and proposer_calls == 0
    # Extra runs only there: 6 instead of 2, and only for that prompt.
    assert ("extra runs on claude-code · claude-sonnet-4-6: 1 prompt(s) near the threshold (report-explain 50%) "
            "ran 6 times each") in run.stdout
    assert "no significant improvement: on the test prompts the interval of the improvement does not exclude " \
           "no change on every engine; no improvement can show on 1 test prompt(s): at least 6 must go from " \
           "wrong to right with none going back" in run.stdout
    record = json.loads((tmp_path / "tune.json").read_text())
    assert record["decision"] == "no significant improvement" and record["candidate"] == GOOD


@pytest.mark.cli
def test_a_train_and_test_split_as_init_writes_it_tunes_as_it_is(tmp_path: Path) -> None:
    """The suite tagged as `init` tags its drafts (split:train and split:test only): tune carves
    the selection set from train, says so, vetoes the candidate that takes schema-docs' prompt
    (naming it), suggests the good one with its interval above 0 on the tagged test prompts,
    leaves SKILL.md alone, and a replay prints the same, byte for byte."""
    from aam_eval_action.testing.model_server import ModelServer

    installed("claude-code")
    pkg = Path(shutil.copytree(FIXTURE, tmp_path / "pkg"))
    for case in (pkg / "evals/cases").glob("*.yaml"):
        case.write_text(case.read_text().replace("- split:select", "- split:train"))
    thief = SCENARIOS[0]["propose"][1]
    flags = ["--engine", "claude-code", "--model", "claude-sonnet-4-6", "--no-propose", "--candidate", GOOD,
             "--candidate", thief]
    skill = (pkg / "skills/db-migrations/SKILL.md").read_text()
    with ModelServer(SCENARIOS, api_key=tuple(KEYS.values())) as server:
        live = _tune(pkg, *flags, "-o", str(tmp_path / "live.json"), env=_live_env(server.url))
    assert live.returncode == 0, live.stdout + live.stderr
    out = live.stdout
    assert ("note: the suite's split has train and test prompts but no selection: 4 of its 9 train prompts are "
            "the selection set") in out
    assert ("vetoed (yours, 146 characters): claude-code · claude-sonnet-4-6: recall 0%, precision 0%, 1/4 right; "
            "it takes schema-docs's prompt billing-tables on claude-code · claude-sonnet-4-6 (2 of the train and "
            "selection prompts, e.g. 'Document each table of the billing database with its keys')") in out
    assert f"suggested (yours): {GOOD}" in out
    record = json.loads((tmp_path / "live.json").read_text())
    assert record["decision"] == "suggested" and all(g["interval"][0] > 0 for g in record["gate"].values())
    assert (pkg / "skills/db-migrations/SKILL.md").read_text() == skill
    bare = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    again = _tune(pkg, *flags, "--replay", env=bare | {"PATH": "/usr/bin:/bin"})
    assert again.returncode == 0 and again.stdout == out.replace(f"-o {tmp_path / 'live.json'}", ""), again.stdout
