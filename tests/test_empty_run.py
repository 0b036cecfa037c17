"""A run that selects no case is not green: the real CLI, shards and their merge, a marketplace
with a plugin that has no cases, `check`, and the action's entry point (INPUT_*/GITHUB_*, a real
pull_request event file and git repository, PyGitHub against the GitHub-compatible server)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from aam_eval_action.commands.action import action as action_main
from aam_eval_action.render.comment import MARKER
from aam_eval_action.testing.github_server import GitHubServer
from aam_eval_action.testing.model_server import ModelServer
from aam_eval_action.testing.packages import record_sessions, simple_case, write_package

from conftest import ROOT, aam_eval
from support.action_env import OWNER, REPO, pull_request_env
from support.gitrepo import commit_all, git, init

PR = 9
MARKETPLACE = ROOT / "tests/fixtures/layouts/marketplace-two"


def _report(path: Path) -> dict:  # type: ignore[type-arg]
    return json.loads(path.read_text())


def test_a_package_without_cases_fails_and_passes_only_with_allow_empty(tmp_path: Path) -> None:
    pkg = write_package(tmp_path / "pkg", [])
    out = tmp_path / "report.json"
    failed = aam_eval("run", "--package", str(pkg), "--replay", "-o", str(out))
    assert failed.code == 1
    assert "FAILED: no eval case ran: the package has no eval cases (none in evals/cases/" in failed.out
    assert "`aam-eval init` drafts a starter suite to review" in failed.out
    assert "--allow-empty lets an empty run pass" in failed.out
    assert _report(out)["summary"]["empty"]["kind"] == "no-cases"

    allowed = aam_eval("run", "--package", str(pkg), "--replay", "--allow-empty", "-o", str(out))
    assert allowed.code == 0
    assert "no eval case ran: the package has no eval cases" in allowed.out
    assert "FAILED" not in allowed.out and "(passing: --allow-empty)" in allowed.out
    assert "aam-eval init" in _report(out)["summary"]["empty"]["todo"]


def test_an_empty_run_of_several_engines_fails_too(tmp_path: Path) -> None:
    pkg = write_package(tmp_path / "pkg", [])
    out = tmp_path / "report.json"
    result = aam_eval("run", "--package", str(pkg), "--replay", "--engine", "claude-code,codex", "-o", str(out))
    assert result.code == 1 and "no eval case ran" in result.out
    report = _report(out)
    assert len(report["pairs"]) == 2 and report["summary"]["empty"]["kind"] == "no-cases"


def test_filters_that_match_no_case_fail_and_name_the_filter(tmp_path: Path) -> None:
    pkg = write_package(tmp_path / "pkg", [simple_case("a", tags=["sql"]), simple_case("b")])
    out = tmp_path / "report.json"
    tags = aam_eval("run", "--package", str(pkg), "--replay", "--tags", "slow", "-o", str(out))
    assert tags.code == 1
    assert "tags 'slow' matched none of the 2 case(s); fix the filter (`aam-eval check` lists every case)" \
        in tags.out
    assert _report(out)["summary"]["empty"]["kind"] == "filtered"
    target = aam_eval("run", "a", "--package", str(pkg), "--replay", "--target", "skill:nope")
    assert target.code == 1 and "case names a and target skill:nope matched none" in target.out
    assert aam_eval("run", "--package", str(pkg), "--replay", "--tags", "slow", "--allow-empty").code == 0


def _recorded_suite(root: Path, names: list[str], monkeypatch: pytest.MonkeyPatch) -> Path:
    """A package whose cases replay and pass: agent cassettes written, judge cassettes recorded
    through the real SDK against the scripted model server."""
    pkg = write_package(root, [simple_case(n, expected={"contains": ["done"]}) for n in names])
    record_sessions(pkg, {n: f"done: finished the task for {n}." for n in names})
    scenarios = [{"match": f"task for {n}.", "judge": {"result": "PASS", "reason": f"{n} is fine"}}
                 for n in names]
    with ModelServer(scenarios) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", server.api_key)
        assert aam_eval("run", "--package", str(pkg)).code == 0
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    return pkg


def test_an_idle_shard_of_a_suite_with_cases_passes_and_the_shards_merge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pkg = _recorded_suite(tmp_path / "pkg", ["c1", "c2", "c3"], monkeypatch)
    paths = [tmp_path / f"shard-{i}.json" for i in range(1, 5)]
    runs = [aam_eval("run", "--package", str(pkg), "--replay", "--shard", f"{i}/4", "-o", str(p))
            for i, p in enumerate(paths, 1)]
    assert [r.code for r in runs] == [0, 0, 0, 0]
    idle = [r for r, p in zip(runs, paths, strict=True) if not _report(p)["cases"]]
    assert len(idle) == 1
    assert "runs no case: the 3 selected case(s) all fall to the other shards; nothing to do" in idle[0].out
    assert "FAILED" not in idle[0].out
    assert [_report(p)["summary"].get("empty", {}).get("kind") for p in paths].count("shard") == 1
    merged = tmp_path / "merged.json"
    result = aam_eval("merge", *map(str, paths), "-o", str(merged))
    assert result.code == 0
    assert _report(merged)["summary"]["total"] == 3 and "empty" not in _report(merged)["summary"]


def test_shards_of_a_suite_without_cases_each_fail_and_merge_says_why(tmp_path: Path) -> None:
    pkg = write_package(tmp_path / "pkg", [])
    paths = [tmp_path / f"shard-{i}.json" for i in (1, 2)]
    codes = [aam_eval("run", "--package", str(pkg), "--replay", "--shard", f"{i}/2", "-o", str(p)).code
             for i, p in zip((1, 2), paths, strict=True)]
    assert codes == [1, 1]
    merged = tmp_path / "merged.json"
    assert aam_eval("merge", *map(str, paths), "-o", str(merged)).code == 0
    assert _report(merged)["summary"]["empty"]["kind"] == "no-cases"


def _marketplace(tmp_path: Path) -> Path:
    """marketplace-two with the md-helper plugin's cases removed: one plugin with cases, one without."""
    repo = tmp_path / "market"
    shutil.copytree(MARKETPLACE, repo)
    shutil.rmtree(repo / "evals/cases/md-helper")
    return repo


def test_a_marketplace_names_its_plugins_without_cases(tmp_path: Path) -> None:
    repo = _marketplace(tmp_path)
    checked = aam_eval("check", "--package", str(repo))
    assert checked.code == 0
    assert "plugins without eval cases: md-helper (`aam-eval init` drafts a starter suite to review)" \
        in checked.out.splitlines()
    out = tmp_path / "report.json"
    ran = aam_eval("run", "--package", str(repo), "--replay", "-o", str(out))
    assert "plugins without eval cases: md-helper (`aam-eval init`" in ran.out
    plugins = {p["name"]: p.get("no_cases") for p in _report(out)["plugins"]}
    assert plugins == {"csv-helper": None, "md-helper": True}
    comment = aam_eval("comment", str(out))
    assert "**1 plugin without eval cases**, so nothing of it is evaluated: md-helper." in comment.out

    only = aam_eval("run", "--package", str(repo), "--replay", "--plugin", "md-helper", "-o", str(out))
    assert only.code == 1
    assert "no eval case ran: the plugin(s) md-helper have no eval cases" in only.out


def test_check_of_a_package_without_cases_names_init(tmp_path: Path) -> None:
    pkg = write_package(tmp_path / "pkg", [])
    result = aam_eval("check", "--package", str(pkg))
    assert result.code == 0
    assert "no eval cases: `aam-eval init` drafts a starter suite to review" in result.out.splitlines()


# --- the action ---


@pytest.fixture
def empty_pr(tmp_path: Path) -> tuple[Path, str]:
    """A repository whose package has no eval cases, on main and on the PR branch."""
    repo = tmp_path / "repo"
    init(repo)
    pkg = write_package(repo / "pkg", [])
    (pkg / "evals/cases/.gitkeep").write_text("")
    base = commit_all(repo, "base")
    git(repo, "checkout", "-q", "-b", "pr")
    (pkg / "README.md").write_text("a package\n")
    commit_all(repo, "pr")
    return repo, base


def _one_case_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """A repository whose package has one recorded case, committed; and its commit."""
    repo = tmp_path / "repo"
    init(repo)
    _recorded_suite(repo / "pkg", ["c1"], monkeypatch)
    return repo, commit_all(repo, "suite")


def _env(repo: Path, tmp: Path, api: str, base_sha: str, **inputs: str) -> dict[str, str]:
    return pull_request_env(repo, tmp, api, "rw-token", base_sha, PR, **inputs)


def _outputs(tmp: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in (tmp / "output.txt").read_text().splitlines())


def test_the_action_fails_an_empty_run_and_says_why_unless_allow_empty(
    empty_pr: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, base = empty_pr
    with GitHubServer(tokens={"rw-token": "write"}) as gh:
        gh.add_pr(OWNER, REPO, PR)
        assert action_main(_env(repo, tmp_path, gh.url, base)) == 1
        out = capsys.readouterr().out
        annotation = [line for line in out.splitlines() if line.startswith("::error")]
        assert annotation == [
            "::error title=no eval case ran::no eval case ran: the package has no eval cases (none in "
            "evals/cases/, and no other tool's eval files); `aam-eval init` drafts a starter suite to "
            "review. Set allow-empty: true to let an empty run pass"]
        body = next(c["body"] for c in gh.comments(OWNER, REPO, PR) if MARKER in c["body"])
        assert "## ⚠️ Agent evals: @\u200btest/pkg: no eval case ran" in body
        assert "**No eval case ran:** the package has no eval cases" in body
        assert "`aam-eval init` drafts a starter suite to review" in body
        assert "No eval case ran" in (tmp_path / "summary.md").read_text()
        outputs = _outputs(tmp_path)
        assert outputs["total"] == "0" and outputs["graded"] == "0"
        assert _report(repo / "head-report.json")["summary"]["empty"]["kind"] == "no-cases"

        (tmp_path / "output.txt").unlink()
        assert action_main(_env(repo, tmp_path, gh.url, base, allow_empty="true")) == 0
        out = capsys.readouterr().out
        assert not [line for line in out.splitlines() if line.startswith("::error")]
        assert "::warning::no eval case ran: the package has no eval cases" in out
        assert "(passing: allow-empty is true)" in out
        comments = [c for c in gh.comments(OWNER, REPO, PR) if MARKER in c["body"]]
        assert len(comments) == 1 and "**No eval case ran:**" in comments[0]["body"]
        assert _outputs(tmp_path)["total"] == "0"


def test_the_action_fails_a_filter_that_matches_nothing_without_forming_commands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, head = _one_case_repo(tmp_path, monkeypatch)
    env = _env(repo, tmp_path, "http://127.0.0.1:9", head, comment="false",
               target="skill:nope\n::error::forged\r::warning::forged")
    env["GITHUB_EVENT_NAME"] = "workflow_dispatch"
    assert action_main(env) == 1
    out = capsys.readouterr().out
    assert not [line for line in out.splitlines() if "forged" in line and line.lstrip().startswith("::")
                and not line.startswith("::error title=no eval case ran::")]
    assert "::error title=no eval case ran::no eval case ran: target skill:nope%0A::error::forged%0D" in out
    assert "matched none of the 1 case(s); fix the filter" in out
    summary = (tmp_path / "summary.md").read_text()
    assert "**No eval case ran:** target skill:nope ::error::forged ::warning::forged matched none" in summary


def test_an_idle_shard_does_not_fail_the_action(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, head = _one_case_repo(tmp_path, monkeypatch)
    env = _env(repo, tmp_path, "http://127.0.0.1:9", head, comment="false", shard="2/2")
    env["GITHUB_EVENT_NAME"] = "workflow_dispatch"
    assert action_main(env) == 0
    out = capsys.readouterr().out
    assert "shard 2/2 runs no case: the 1 selected case(s) all fall to the other shards" in out
    assert not [line for line in out.splitlines() if line.startswith(("::error", "::warning"))]
    assert _outputs(tmp_path)["total"] == "0"
