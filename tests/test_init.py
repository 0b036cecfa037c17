"""`aam-eval init` on a repository of three sibling skills with no evals, against the scripted
drafting model through the real anthropic and openai SDKs: the plan, the drafted files and
every check they pass (verbatim citations, the description not repeated, paths inside the
workspace), byte-identical redrafts from the recording, and nothing written for an answer that
cannot be used. The drafted suite recorded through the real CLIs is `test_init_e2e.py`.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from aam_eval_action.fsutil import sha256_bytes
from aam_eval_action.testing.model_server import ModelServer

from conftest import Result, aam_eval

FIXTURES = Path(__file__).parent / "fixtures"
SKILLS = ("changelog-writer", "commit-message", "release-notes")
SMALL = ("--positives", "4", "--negatives", "4", "--tasks", "1")


def _repo(tmp_path: Path) -> Path:
    return Path(shutil.copytree(FIXTURES / "routing-skills", tmp_path / "repo"))


def _drafts() -> list[dict[str, Any]]:
    return yaml.safe_load((FIXTURES / "routing-skills-drafts.yaml").read_text())


def _init(repo: Path, monkeypatch: pytest.MonkeyPatch, server: ModelServer | None, *args: str) -> Result:
    if server is not None:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", server.api_key)
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", server.api_key)
    else:
        for name in ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
            monkeypatch.delenv(name, raising=False)
    return aam_eval("init", "--package", str(repo), *args)


def _written(repo: Path) -> dict[str, bytes]:
    evals = repo / "evals"
    return {p.relative_to(repo).as_posix(): p.read_bytes() for p in sorted(evals.rglob("*")) if p.is_file()}


def _cases(repo: Path, skill: str, kind: str = "triggers") -> list[dict[str, Any]]:
    return yaml.safe_load((repo / "evals" / "cases" / f"{skill}-{kind}.yaml").read_text())


def test_dry_run_plans_each_skill_its_siblings_and_why_without_a_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(tmp_path)
    with ModelServer([]) as server:
        result = _init(repo, monkeypatch, server, "--dry-run")
        assert server.requests == []
    assert result.code == 0
    out = result.out
    assert "routing-skills" not in out or "3 skill(s) to draft" in out
    assert "  changelog-writer (skills/changelog-writer/SKILL.md)" in out
    assert "    sibling commit-message: BM25 " in out and "    sibling release-notes: BM25 " in out
    assert "9 should fire + 1 canary, 8 near misses, 2 out of scope, 2 task(s)" in out
    assert not (repo / "evals").exists()


@pytest.fixture(scope="module")
def drafted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict[str, bytes]]:
    """The fixture drafted once, through the Anthropic SDK."""
    tmp = tmp_path_factory.mktemp("init")
    repo = _repo(tmp)
    with pytest.MonkeyPatch.context() as mp, ModelServer(_drafts()) as server:
        result = _init(repo, mp, server, *SMALL)
        assert len(server.requests) == 3
    assert result.code == 0, result.out + result.err
    return repo, result.out, _written(repo)


def test_init_writes_a_suite_per_skill_that_loads(drafted: tuple[Path, str, dict[str, bytes]]) -> None:
    repo, out, files = drafted
    for skill in SKILLS:
        assert f"evals/cases/{skill}-triggers.yaml" in files and f"evals/cases/{skill}-tasks.yaml" in files
        assert f"evals/cassettes/init/{skill}.yaml" in files
    assert {"evals/fixtures/commits.txt", "evals/fixtures/CHANGELOG.md", "evals/fixtures/staged.diff",
            "evals/fixtures/prs.md", "evals/eval-config.json"} <= set(files)
    check = aam_eval("check", "--package", str(repo))
    assert check.code == 0, check.out
    assert "0 error(s)" in check.out
    kinds = [c["draft"]["kind"] for c in _cases(repo, "changelog-writer")]
    assert kinds.count("positive") == 3 and kinds.count("canary") == 1
    assert kinds.count("near-miss") == 4 and kinds.count("out-of-scope") == 1
    assert "wrote evals/cases/changelog-writer-triggers.yaml" in out


def test_every_citation_is_the_skills_text_verbatim(drafted: tuple[Path, str, dict[str, bytes]]) -> None:
    repo = drafted[0]
    checked = 0
    for skill in SKILLS:
        for case in _cases(repo, skill) + _cases(repo, skill, "tasks"):
            draft = case["draft"]
            source = (repo / "skills" / draft["skill"] / "SKILL.md").read_text()
            if "cites" in draft:
                assert " ".join(draft["cites"].split()) in " ".join(source.split())
                line = source.splitlines()[draft["cites-line"] - 1]
                assert draft["cites"].split()[0] in line.split()
                checked += 1
    assert checked == 3 * (3 + 4 + 1)  # positives, near misses, a task per skill


def test_what_fails_a_check_is_dropped_with_its_reason(drafted: tuple[Path, str, dict[str, bytes]]) -> None:
    repo, out = drafted[0], drafted[1]
    assert ("changelog-writer: dropped positive 4: its citation is not in skills/changelog-writer/SKILL.md "
            "verbatim: 'Keep the sections in alphabetical order'") in out
    assert "dropped positive 5: it repeats the description's wording ('turns the git commits since')" in out
    assert "dropped positive 6: it names changelog-writer (only the canary does)" in out
    assert "dropped near miss 5: sibling 'Z' is not one of B, C" in out
    header = (repo / "evals/cases/changelog-writer-triggers.yaml").read_text()
    assert "# Dropped by the checks: positive 5: it repeats the description's wording" in header
    prompts = [c["input"]["prompt"] for c in _cases(repo, "changelog-writer")]
    assert not any("alphabetical" in p or p.startswith("Turns the git") for p in prompts)


def test_near_misses_are_labelled_with_their_sibling_and_the_split_is_stratified(
    drafted: tuple[Path, str, dict[str, bytes]]
) -> None:
    repo = drafted[0]
    cases = _cases(repo, "changelog-writer")
    near = [c for c in cases if c["draft"]["kind"] == "near-miss"]
    assert sorted(c["expected"]["expected-skill"] for c in near) == ["commit-message"] * 2 + ["release-notes"] * 2
    assert all(c["expected"]["skill-triggered"] is False and c["install-all-skills"] for c in near)
    out = next(c for c in cases if c["draft"]["kind"] == "out-of-scope")
    assert out["expected"] == {"skill-triggered": False, "expected-skill": "none"}
    canary = next(c for c in cases if c["draft"]["kind"] == "canary")
    assert canary["input"]["prompt"].startswith("Use the changelog-writer skill for this.")
    for kind, train in (("positive", 2), ("near-miss", 2)):
        splits = [t for c in cases if c["draft"]["kind"] == kind for t in c["tags"] if t.startswith("split:")]
        assert splits.count("split:train") == train and len(splits) == len(splits)


def test_each_case_says_who_drafted_it_from_what_and_that_nobody_reviewed_it(
    drafted: tuple[Path, str, dict[str, bytes]]
) -> None:
    repo = drafted[0]
    sha = sha256_bytes((repo / "skills/release-notes/SKILL.md").read_bytes())
    task = _cases(repo, "release-notes", "tasks")[0]
    assert task["draft"] == {**task["draft"], "model": "claude-sonnet-4-6", "skill": "release-notes",
                             "skill-sha256": sha, "kind": "task", "reviewed": False}
    assert task["expected"]["files-created"] == ["RELEASE_NOTES.md"]
    assert task["input"]["workspace-files"] == ["prs.md"] and task["judge"]["criteria"]
    head = (repo / "evals/cases/release-notes-tasks.yaml").read_text().splitlines()[0]
    assert head.startswith("# Drafted by `aam-eval init` with claude-sonnet-4-6 from skills/release-notes/SKILL.md")


def test_replay_redrafts_byte_identical_files_offline(
    drafted: tuple[Path, str, dict[str, bytes]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, _, files = drafted
    again = Path(shutil.copytree(repo, tmp_path / "again"))
    for path in (again / "evals").rglob("*"):
        if path.is_file() and "cassettes" not in path.parts:
            path.unlink()
    result = _init(again, monkeypatch, None, "--replay", *SMALL)
    assert result.code == 0, result.out
    assert _written(again) == files


def test_replay_refuses_a_skill_changed_since_it_was_drafted(
    drafted: tuple[Path, str, dict[str, bytes]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    again = Path(shutil.copytree(drafted[0], tmp_path / "again"))
    skill = again / "skills/commit-message/SKILL.md"
    skill.write_text(skill.read_text() + "\n- A squash merge keeps the pull request title.\n")
    result = _init(again, monkeypatch, None, "--replay", "--force", "--skill", "commit-message", *SMALL)
    assert result.code == 1
    assert "commit-message: refused, nothing written:" in result.out
    assert "has no recording of this request: the skill or its siblings changed" in result.out


def test_skills_with_cases_are_kept_unless_forced(
    drafted: tuple[Path, str, dict[str, bytes]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    again = Path(shutil.copytree(drafted[0], tmp_path / "again"))
    result = _init(again, monkeypatch, None, "--replay", *SMALL)
    assert "  changelog-writer: has cases; not drafted (--force redrafts)" in result.out
    case_file = again / "evals/cases/changelog-writer-triggers.yaml"
    case_file.write_text(case_file.read_text() + "# reviewed by a person\n")
    kept = _init(again, monkeypatch, None, "--replay", "--force", "--skill", "changelog-writer", *SMALL)
    assert kept.code == 0 and case_file.read_text().endswith("# reviewed by a person\n") is False


@pytest.mark.parametrize("model", ["claude-sonnet-4-6", "gpt-5.5"])
def test_a_garbage_answer_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: str) -> None:
    repo = _repo(tmp_path)
    garbage = [{"draft-for": d["draft-for"], "draft": "Sure! Here are some prompts: 1. update the changelog"}
               for d in _drafts()]
    with ModelServer(garbage) as server:
        result = _init(repo, monkeypatch, server, "--model", model, *SMALL)
    assert result.code == 1
    said = "the model did not call draft_cases" if model.startswith("claude") else "the answer is not JSON"
    assert result.out.count(f"refused, nothing written: {said}") == 3
    assert not (repo / "evals").exists()


def test_a_missing_field_is_refused_and_a_hostile_task_is_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(tmp_path)
    drafts = _drafts()
    del drafts[1]["draft"]["near_misses"]
    task = drafts[2]["draft"]["tasks"][0]
    drafts[2]["draft"]["tasks"] = [
        {**task, "files": [{"path": "../../outside.txt", "content": "x"}]},
        {**task, "files": [{"path": ".git/hooks/pre-commit", "content": "curl evil"}]},
        {**task, "expected": {"contains": [], "files_created": [], "file_contains": [], "command": ""}},
    ]
    with ModelServer(drafts) as server:
        result = _init(repo, monkeypatch, server, *SMALL)
    assert "commit-message: refused, nothing written: the answer has no list near_misses" in result.out
    assert "release-notes: dropped task 1: input file '../../outside.txt' is not a relative path" in result.out
    assert "release-notes: dropped task 2: input file '.git/hooks/pre-commit' would write into .git/" in result.out
    assert "release-notes: dropped task 3: 0 deterministic checks; a task has 2 to 4" in result.out
    assert not (repo / "evals/cases/commit-message-triggers.yaml").exists()
    assert not (repo / "evals/cases/release-notes-tasks.yaml").exists()
    assert not (tmp_path / "outside.txt").exists() and not (repo / ".git").exists()
    assert (repo / "evals/cases/release-notes-triggers.yaml").is_file()
    assert result.code == 1


def test_urls_paths_and_code_never_make_skills_siblings() -> None:
    """Shaped like an SRE extension's skills: every body is full of endpoint URLs, shell commands
    and file paths. Those tokens (`https`, `com`, `api`, `forward`…) neither rank a sibling nor
    explain one; the prose does."""
    from aam_eval_action.drafting.skills import SkillDoc, siblings

    def doc(name: str, description: str, body: str) -> SkillDoc:
        return SkillDoc(name, description, body, 4, f"skills/{name}/SKILL.md", "0" * 64)

    endpoints = ("- https://api.monitoring.example.com/v2/forward?window=1h\n- https://api.logs.example.com/v1/forward\n"
                 "```bash\ncurl -s https://api.example.com/forward | jq .\n```\n- config/forward/api.yaml\n"
                 "- `kubectl get pods -n api`")
    docs = [doc("incident-triage", "Triage a paging incident: severity, owner, first response.",
                f"Decide the severity of the incident and who owns it.\n{endpoints}"),
            doc("log-search", "Search service logs for an error signature.",
                f"Find the error in the logs, newest entries on top.\n{endpoints}"),
            doc("postmortem", "Write the postmortem of a resolved incident.",
                "Summarise the incident, its severity and owner, and the follow-ups.")]
    found = siblings(docs, 2)
    assert [s.name for s in found["incident-triage"]] == ["postmortem"]  # the URLs alone make no sibling
    assert found["log-search"] == []
    assert set(found["incident-triage"][0].shared) <= {"incident", "severity", "owner", "owns"}
    for near in found.values():
        for sibling in near:
            assert not {"https", "com", "api", "forward", "example", "kubectl", "yaml"} & set(sibling.shared)
