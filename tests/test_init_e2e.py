"""From zero to a gate, with the real CLIs: a repository of three sibling skills and no evals is
drafted by `aam-eval init`, its trigger prompts recorded through Claude Code (Codex in
bench/bench_repeats.py: its routing is tested by tune's end-to-end test), every skill installed
(the scripted model routes each prompt by the skills the CLI lists to it, as a model reads
their names and descriptions), and the report's confusion matrix says where each
prompt went. Editing one description so that it steals a sibling's prompts moves them, and the
diff and the comment say which. A harness whose every session errors says so.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from aam_eval_action.engines.base import get_engine
from aam_eval_action.layouts.common import frontmatter
from aam_eval_action.testing.model_server import ModelServer, route_skill

from conftest import ROOT, aam_eval
from support.repeats import repeated

pytestmark = pytest.mark.cli
FIXTURES = ROOT / "tests/fixtures"
SKILLS = ("changelog-writer", "commit-message", "release-notes")
KEYS = {"ANTHROPIC_API_KEY": "sk-ant-CANARY-init-5e1a", "OPENAI_API_KEY": "sk-CANARY-init-0b7c"}
ROUTE = {"match": "*", "agent": [{"route": {}}, {"text": "Done."}]}
TASKS = [
    {"match": "The commits since v1.4.0 are in commits.txt", "agent": [
        {"skill": "changelog-writer"},
        {"bash": "printf '%s\\n' '# Changelog' '' '## [Unreleased]' '' '### Added' "
                 "'- Export a report as CSV ([#142](https://github.com/acme/reports/pull/142))' '' '### Fixed' "
                 "'- Keep the totals row when a column is hidden ([#139](https://github.com/acme/reports/pull/139))'"
                 " '' '## [1.4.0] - 2026-10-01' '' '### Added' '- Report page' > CHANGELOG.md"},
        {"text": "Added an Unreleased entry: the CSV export under Added, the totals fix under Fixed."}],
     "judge": {"result": "PASS", "reason": "Both changes are logged with links; the chore is left out."}},
]
# The description edit of the last test: release-notes now also claims the changelog's work.
STEALING = (" Also keeps the changelog and adds the entry for the commits since the last tag to CHANGELOG.md "
            "with Added, Changed and Fixed sections.")


def _need(engine: str) -> None:
    reason = get_engine(engine).available()
    if reason:
        pytest.skip(reason)


def _serve(mp: pytest.MonkeyPatch, server: ModelServer) -> None:
    mp.setenv("ANTHROPIC_BASE_URL", server.url)
    mp.setenv("OPENAI_BASE_URL", server.url + "/v1")
    for name, value in KEYS.items():
        mp.setenv(name, value)


def _descriptions(repo: Path) -> list[tuple[str, str]]:
    return [(s, frontmatter(repo, f"skills/{s}/SKILL.md")[0]["description"]) for s in SKILLS]


@pytest.fixture(scope="module")
def drafted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture, drafted by `aam-eval init` (the drafting model's answers are scripted), with
    one run per trigger prompt (the runs' threshold is covered by test_routing.py)."""
    repo = Path(shutil.copytree(FIXTURES / "routing-skills", tmp_path_factory.mktemp("init") / "repo"))
    drafts = yaml.safe_load((FIXTURES / "routing-skills-drafts.yaml").read_text())
    with pytest.MonkeyPatch.context() as mp, ModelServer(drafts, api_key=tuple(KEYS.values())) as server:
        _serve(mp, server)
        result = aam_eval("init", "--package", str(repo), "--positives", "4", "--negatives", "4", "--tasks", "1")
    assert result.code == 0, result.out
    config = repo / "evals/eval-config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "triggers": {"runs": 1}}))
    return repo


def _record(repo: Path, out: Path, *args: str, scenarios: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    with pytest.MonkeyPatch.context() as mp, \
            ModelServer(scenarios or [*TASKS, ROUTE], api_key=tuple(KEYS.values())) as server:
        _serve(mp, server)
        result = aam_eval("run", "--package", str(repo), "--record", "--no-self-check", "--jobs", "3",
                          "-o", str(out), *args)
    report = json.loads(out.read_text())
    assert report["cases"], result.out + result.err
    return report


@pytest.fixture(scope="module", params=repeated(["claude-code"], ["codex"]))  # bench/bench_repeats.py
def recorded(request: pytest.FixtureRequest, drafted: Path) -> tuple[Path, str, dict[str, Any]]:
    engine = request.param
    _need(engine)
    repo = Path(shutil.copytree(drafted, drafted.parent / f"repo-{engine}"))
    report = _record(repo, repo.parent / f"{engine}.json", "--engine", engine, "--tags", "trigger")
    return repo, engine, report


def test_the_drafted_suite_records_where_every_prompt_went(recorded: tuple[Path, str, dict[str, Any]]) -> None:
    repo, engine, report = recorded
    listed = _descriptions(repo)
    cases = report["cases"]
    assert len(cases) == 27
    for case in cases:
        # What the scripted model picked from the skills this CLI listed is what the report says fired.
        picked = route_skill(case["prompt"], listed) or "none"
        assert case["routed_to"] == picked, (engine, case["name"], case.get("skills_fired"), case.get("error"))
        assert case["skills_fired"] == ([] if picked == "none" else [picked])
    assert {c["verdict"] for c in cases} == {"PASS"}, [(c["name"], c.get("error")) for c in cases]


def test_the_confusion_matrix_per_skill(recorded: tuple[Path, str, dict[str, Any]]) -> None:
    routing = recorded[2]["summary"]["routing"]
    assert routing["labels"] == [*SKILLS, "none"]
    for skill in SKILLS:
        # 3 positives and the canary, and 2 near misses from each sibling's suite: 8 prompts each.
        assert routing["matrix"][skill] == {**dict.fromkeys([*SKILLS, "none"], 0), skill: 8}
        row = routing["skills"][skill]
        assert (row["precision"], row["recall"], row["cases"]) == (1.0, 1.0, 8)
        assert row["recall_ci"] == [0.6756, 1.0]  # Wilson, 8 of 8
    assert routing["matrix"]["none"]["none"] == 3


def test_snapshot_replay_gives_the_same_matrix_with_no_cli(recorded: tuple[Path, str, dict[str, Any]]) -> None:
    repo, engine, report = recorded
    out = repo.parent / f"{engine}-replay.json"
    result = aam_eval("run", "--package", str(repo), "--replay", "--engine", engine, "--tags", "trigger",
                      "-o", str(out))
    replayed = json.loads(out.read_text())
    assert result.code == 0
    assert replayed["summary"]["routing"]["matrix"] == report["summary"]["routing"]["matrix"]
    assert replayed["summary"]["replayed"] == 27 and not replayed["summary"].get("run_cost_usd")
    assert "Routing: rows are the skill a prompt belongs to" in result.out


def test_a_drafted_task_records_and_passes_its_checks(drafted: Path) -> None:
    _need("claude-code")
    repo = Path(shutil.copytree(drafted, drafted.parent / "repo-task"))
    report = _record(repo, repo.parent / "task.json", "--engine", "claude-code", "changelog-writer-task-01")
    case = report["cases"][0]
    assert case["verdict"] == "PASS", case.get("error")
    assert case["deterministic_checks"] == {"file_contains": "PASS", "command": "PASS", "sandbox": "PASS"} \
        or set(case["deterministic_checks"]) >= {"file_contains", "command"}
    assert case["judge_verdict"]["result"] == "PASS"


def test_a_description_that_steals_a_siblings_prompts_shows_which_moved(
    recorded: tuple[Path, str, dict[str, Any]]
) -> None:
    repo, engine, base = recorded
    head_repo = Path(shutil.copytree(repo, repo.parent / f"repo-stealing-{engine}"))
    skill = head_repo / "skills/release-notes/SKILL.md"
    text = skill.read_text()
    old = frontmatter(head_repo, "skills/release-notes/SKILL.md")[0]["description"]
    skill.write_text(text.replace(old, old + STEALING))
    listed = _descriptions(head_repo)
    moved = {c["name"]: (c["routed_to"], route_skill(c["prompt"], listed) or "none") for c in base["cases"]}
    moved = {name: pair for name, pair in moved.items() if pair[0] != pair[1]}
    assert moved, "the edited description moves no prompt"
    head_path = repo.parent / f"stealing-{engine}.json"
    head = _record(head_repo, head_path, "--engine", engine, "--tags", "trigger")
    for case in head["cases"]:
        assert case["routed_to"] == (moved.get(case["name"], (None, case["routed_to"]))[1])
    base_path = repo.parent / f"{engine}.json"
    diff = json.loads(aam_eval("diff", str(base_path), str(head_path), "--format", "json").out)
    assert {m["name"]: (m["base"], m["head"]) for m in diff["moved"]} == moved
    comment = aam_eval("diff", str(base_path), str(head_path), "--format", "markdown").out
    assert f"### 🔀 {len(moved)} prompt" in comment
    for name, (before, after) in moved.items():
        assert name in comment and f"{before} → **{after}**" in comment
    assert moved == {"changelog-writer-fires-01": ("changelog-writer", "release-notes"),
                     "commit-message-near-01": ("changelog-writer", "release-notes")}
    stolen = head["summary"]["routing"]["skills"]["release-notes"]
    assert (stolen["fired"], stolen["precision"]) == (10, 0.8)
    cases = {c["name"]: c for c in head["cases"]}
    # The positive it stole now fails; the near miss of commit-message still passes (commit-message
    # did not fire), but the matrix shows it went to release-notes.
    assert cases["changelog-writer-fires-01"]["verdict"] == "FAIL"
    assert cases["commit-message-near-01"]["verdict"] == "PASS"
    assert head["summary"]["routing"]["matrix"]["changelog-writer"]["release-notes"] == 2


def test_a_harness_whose_sessions_all_error_says_nothing_was_measured(drafted: Path) -> None:
    _need("claude-code")
    repo = Path(shutil.copytree(drafted, drafted.parent / "repo-broken"))
    broken = [{"match": "*", "agent": [{"error": {"status": 400, "message": "model not found"}}]}]
    report = _record(repo, repo.parent / "broken.json", "--engine", "claude-code", "--tags", "trigger",
                     "--target", "skill:commit-message", scenarios=broken)
    assert {c["verdict"] for c in report["cases"]} == {"ERROR"}
    row = report["summary"]["routing"]["skills"]["commit-message"]
    assert "every session of its 4 trigger prompt(s) errored: nothing was measured" in row["harness"]
    assert "recall" not in row


def test_a_skill_the_engine_does_not_show_is_a_harness_fault_not_a_bad_description(drafted: Path) -> None:
    """The canary names its skill outright: when even it does not fire (here Claude Code keeps a
    skill with `disable-model-invocation` from the model), the report blames the harness."""
    _need("claude-code")
    repo = Path(shutil.copytree(drafted, drafted.parent / "repo-hidden"))
    skill = repo / "skills/commit-message/SKILL.md"
    skill.write_text(skill.read_text().replace("license: Apache-2.0\n", "license: Apache-2.0\n"
                                               "disable-model-invocation: true\n", 1))
    report = _record(repo, repo.parent / "hidden.json", "--engine", "claude-code", "--tags", "canary")
    cases = {c["name"]: c for c in report["cases"]}
    assert cases["commit-message-canary"]["routed_to"] != "commit-message"
    assert cases["changelog-writer-canary"]["routed_to"] == "changelog-writer"
    skills = report["summary"]["routing"]["skills"]
    assert "its canary, which names commit-message outright, did not fire it" in skills["commit-message"]["harness"]
    assert "harness" not in skills["changelog-writer"]
