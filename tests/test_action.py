"""The action's entry point run exactly as the container runs it: INPUT_* and GITHUB_*
variables, a real pull_request event file, a real git repo with a base and a PR branch,
and PyGitHub talking to the project's GitHub-compatible server."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from aam_eval_action.commands.action import action as action_main
from aam_eval_action.render.comment import MARKER
from aam_eval_action.testing.github_server import GitHubServer
from aam_eval_action.testing.model_server import ModelServer
from aam_eval_action.testing.packages import record_sessions, simple_case, write_package

from support.action_env import OWNER, REPO, pull_request_env
from support.gitrepo import commit_all, git, init

PR = 7


def _judge_all(pkg: Path, monkeypatch: pytest.MonkeyPatch, names: list[str]) -> None:
    """Record judge cassettes for these cases through the real SDK and the scripted server."""
    from conftest import aam_eval

    scenarios = [{"match": f"task for {n}.", "judge": {"result": "PASS", "reason": f"{n} is fine"}}
                 for n in names]
    with ModelServer(scenarios) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", server.api_key)
        aam_eval("run", "--package", str(pkg))
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    monkeypatch.delenv("ANTHROPIC_API_KEY")


@pytest.fixture
def pr_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """main: 4 passing cases. pr: case-01 now fails a check, case-03 removed, case-04 new."""
    repo = tmp_path / "repo"
    init(repo)
    names = [f"case-0{i}" for i in range(4)]
    pkg = write_package(repo / "pkg", [simple_case(n, expected={"contains": ["done"]}) for n in names])
    record_sessions(pkg, {n: f"done: finished the task for {n}." for n in names})
    _judge_all(pkg, monkeypatch, names)
    base = commit_all(repo, "base")
    git(repo, "checkout", "-q", "-b", "pr")
    case1 = next((pkg / "evals/cases").glob("*case-01.yaml"))
    data = yaml.safe_load(case1.read_text())
    data["expected"]["contains"] = ["a word the agent never said"]
    case1.write_text(yaml.safe_dump(data))
    next((pkg / "evals/cases").glob("*case-03.yaml")).unlink()
    shutil.rmtree(pkg / "evals/cassettes/case-03")
    (pkg / "evals/cases/0009-case-04.yaml").write_text(yaml.safe_dump(simple_case("case-04")))
    record_sessions(pkg, {"case-04": "done: finished the task for case-04."})
    _judge_all(pkg, monkeypatch, ["case-04"])
    commit_all(repo, "pr")
    return repo, base


def _env(repo: Path, tmp: Path, api: str, token: str, base_sha: str, **inputs: str) -> dict[str, str]:
    return pull_request_env(repo, tmp, api, token, base_sha, PR, **inputs)


def _outputs(tmp: Path) -> dict[str, str]:
    lines = (tmp / "output.txt").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines)


def test_pull_request_run_creates_then_updates_one_sticky_comment(
    pr_repo: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, base = pr_repo
    with GitHubServer(tokens={"rw-token": "write", "ro-token": "read"}) as gh:
        gh.add_pr(OWNER, REPO, PR)
        gh.seed_comments(OWNER, REPO, PR, 120)
        env = _env(repo, tmp_path, gh.url, "rw-token", base)
        assert action_main(env) == 1  # fail-on: regression, and case-01 regressed
        out = capsys.readouterr().out
        comments = [c for c in gh.comments(OWNER, REPO, PR) if MARKER in c["body"]]
        assert len(comments) == 1
        body = comments[0]["body"]
        assert "**Pass rate 100.0% → 66.7% (-33.3 pp)** (over 3 cases graded on both sides)" in body
        assert "### Regressions (1)" in body and "case-01" in body
        assert "case-04" in body and "case-03" in body
        outputs = _outputs(tmp_path)
        assert outputs["pass-rate"] == "75.0" and outputs["pass-rate-delta"] == "-33.3"
        assert outputs["regressions"] == "1" and outputs["total"] == "4"
        assert outputs["comment-url"] == comments[0]["html_url"]
        assert outputs["report-path"] == "head-report.json"
        # The graded rate says what it is over; the HTML report sits beside the JSON one.
        assert outputs["graded"] == "4" and outputs["not-graded"] == "0"
        assert outputs["html-path"] == "head-report.html"
        page = (repo / "head-report.html").read_text()
        assert "Content-Security-Policy" in page and "case-01" in page
        # Base beside head: the regressed case's base session was read from the base's worktree.
        found = re.search(r'<script type="application/json" id="case-1">(.*?)</script>', page, re.S)
        assert found and json.loads(found.group(1))["base"]["rec"]["sessions"], "no base transcript"
        assert "head-report.html in the [run's artifacts]" in body
        assert "::error file=pkg/evals/cases/0001-case-01.yaml,line=1,title=eval regression%3A case-01::" in out
        assert "::add-mask::rw-token" in out
        assert (tmp_path / "summary.md").read_text().count(MARKER) == 1

        # A second push: the same comment is edited, not a new one added.
        (tmp_path / "output.txt").unlink()
        assert action_main(_env(repo, tmp_path, gh.url, "rw-token", base)) == 1
        after = gh.comments(OWNER, REPO, PR)
        assert len(after) == 121
        assert [c["id"] for c in after if MARKER in c["body"]] == [comments[0]["id"]]

        # A fork's read-only token: a warning, and with fail-on never a green step.
        env = _env(repo, tmp_path, gh.url, "ro-token", base, fail_on="never")
        assert action_main(env) == 0
        out = capsys.readouterr().out
        assert "::warning::" in out and "pull-requests: write" in out
        assert "ro-token" not in out.replace("::add-mask::ro-token", "")


def test_shallow_clone_fetches_the_base_commit(pr_repo: tuple[Path, str], tmp_path: Path) -> None:
    repo, base = pr_repo
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth=1", "--branch", "pr", f"file://{repo}", str(clone))
    with pytest.raises(subprocess.CalledProcessError):
        git(clone, "cat-file", "-e", base)
    env = _env(clone, tmp_path, "http://127.0.0.1:9", "rw-token", base, comment="false")
    assert action_main(env) == 1
    assert _outputs(tmp_path)["pass-rate-delta"] == "-33.3"


def test_push_event_has_no_comment_only_summary_and_outputs(pr_repo: tuple[Path, str], tmp_path: Path) -> None:
    repo, _ = pr_repo
    env = _env(repo, tmp_path, "http://127.0.0.1:9", "rw-token", "")
    env["GITHUB_EVENT_NAME"] = "push"
    (tmp_path / "event.json").write_text(json.dumps({"ref": "refs/heads/pr"}))
    assert action_main(env) == 0  # no base, so no regression
    outputs = _outputs(tmp_path)
    assert outputs["comment-url"] == "" and outputs["pass-rate-delta"] == ""
    assert MARKER in (tmp_path / "summary.md").read_text()


def test_base_report_input_and_min_pass_rate(pr_repo: tuple[Path, str], tmp_path: Path) -> None:
    repo, _ = pr_repo
    env = _env(repo, tmp_path, "http://127.0.0.1:9", "rw-token", "", comment="false",
               fail_on="never", min_pass_rate="90")
    env["GITHUB_EVENT_NAME"] = "workflow_dispatch"
    assert action_main(env) == 1  # 75 % < 90 %
    shutil.copy(repo / "head-report.json", tmp_path / "old.json")
    env = _env(repo, tmp_path, "http://127.0.0.1:9", "rw-token", "", comment="false",
               base_report=str(tmp_path / "old.json"), min_pass_rate="0.5")
    assert action_main(env) == 0
    assert _outputs(tmp_path)["pass-rate-delta"] == "+0.0"


def test_bad_input_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from aam_eval_action.errors import ConfigError

    with pytest.raises(ConfigError, match="action input 'fail-on'"):
        action_main({"INPUT_FAIL-ON": "sometimes", "GITHUB_WORKSPACE": str(tmp_path)})
    assert "::error::action input 'fail-on'" in capsys.readouterr().out
    assert os.environ.get("INPUT_FAIL-ON") is None


def test_matrix_shards_then_a_merge_job_comments_once(pr_repo: tuple[Path, str], tmp_path: Path) -> None:
    repo, base = pr_repo
    for i in (1, 2):
        env = _env(repo, tmp_path, "http://127.0.0.1:9", "rw-token", base, shard=f"{i}/2",
                   comment="false", fail_on="never", report_path=f"shards/shard-{i}.json")
        assert action_main(env) == 0
    sizes = [len(json.loads((repo / f"shards/shard-{i}.json").read_text())["cases"]) for i in (1, 2)]
    assert sorted(sizes) == [2, 2]
    with GitHubServer(tokens={"rw-token": "write"}) as gh:
        gh.add_pr(OWNER, REPO, PR)
        env = _env(repo, tmp_path, gh.url, "rw-token", base, merge_reports="shards/*.json",
                   report_path="merged.json")
        assert action_main(env) == 1
        comments = [c for c in gh.comments(OWNER, REPO, PR) if MARKER in c["body"]]
    assert len(comments) == 1
    assert "**Pass rate 100.0% → 66.7% (-33.3 pp)** (over 3 cases graded on both sides)" in comments[0]["body"]
    assert json.loads((repo / "merged.json").read_text())["summary"]["total"] == 4


def test_comment_command_prints_or_posts(pr_repo: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from conftest import aam_eval

    repo, _ = pr_repo
    head = tmp_path / "head.json"
    aam_eval("run", "--package", str(repo / "pkg"), "--replay", "-o", str(head))
    printed = aam_eval("comment", str(head))
    assert printed.code == 0 and MARKER in printed.out and "Pass rate 75.0%" in printed.out
    with GitHubServer(tokens={"rw-token": "write"}) as gh:
        gh.add_pr(OWNER, REPO, PR)
        missing = aam_eval("comment", str(head), "--repo", f"{OWNER}/{REPO}", "--pr", str(PR), "--api-url", gh.url)
        assert missing.code == 2 and "GITHUB_TOKEN" in missing.err
        monkeypatch.setenv("GITHUB_TOKEN", "rw-token")
        first = aam_eval("comment", str(head), "--repo", f"{OWNER}/{REPO}", "--pr", str(PR), "--api-url", gh.url)
        second = aam_eval("comment", str(head), "--repo", f"{OWNER}/{REPO}", "--pr", str(PR), "--api-url", gh.url)
        assert first.out.startswith("created ") and second.out.startswith("updated ")
        assert len(gh.comments(OWNER, REPO, PR)) == 1


def test_stale_cassettes_fail_the_check_without_counting_as_regressions(
    pr_repo: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    repo, base = pr_repo
    monkeypatch.chdir(repo)  # a docker action runs in the workspace
    case2 = next((repo / "pkg/evals/cases").glob("*case-02.yaml"))
    data = yaml.safe_load(case2.read_text())
    data["input"]["prompt"] = "Do the task for case-02, but faster."
    case2.write_text(yaml.safe_dump(data))
    commit_all(repo, "change a prompt without re-recording")
    env = _env(repo, tmp_path, "http://127.0.0.1:9", "rw-token", base, comment="false")
    assert action_main(env) == 1
    out = capsys.readouterr().out
    assert _outputs(tmp_path)["regressions"] == "1"  # case-01 only
    assert "title=stale cassette%3A case-02::replay miss: the prompt changed since recording" in out
    summary = (tmp_path / "summary.md").read_text()
    assert "**1 case could not be replayed**" in summary
    assert "aam-eval run case-02 --record --package pkg" in summary


@pytest.mark.parametrize("metadata", ["action.yml", "live/action.yml"])
def test_every_action_input_is_read_and_every_output_written(metadata: str) -> None:
    from aam_eval_action.github.inputs import INPUTS, ActionInputs

    from conftest import ROOT

    spec = yaml.safe_load((ROOT / metadata).read_text())
    assert set(spec["inputs"]) == set(INPUTS)
    aliases = {f.alias or name for name, f in ActionInputs.model_fields.items()}
    assert aliases == set(INPUTS)
    assert set(spec["outputs"]) == {
        "pass-rate", "pass-rate-delta", "passed", "failed", "errored", "total", "graded", "not-graded",
        "regressions", "not-shown", "estimated-pass-rate", "report-path", "html-path", "comment-url",
        "sensitivity-path",
    }


def test_the_job_summary_charts_the_pass_rate_over_the_kept_reports(tmp_path: Path) -> None:
    from aam_eval_action.commands.action import trend_chart
    from aam_eval_action.report import to_json

    from support.reports import case, report

    folder = tmp_path / "pkg/evals/reports"
    folder.mkdir(parents=True)
    assert trend_chart(tmp_path / "pkg") == ""
    for day, verdicts in (("2026-11-20", ["PASS", "FAIL"]), ("2026-11-21", ["PASS", "PASS"]),
                          ('2026-11-22"] ] %%{init}', ["FAIL", "FAIL"])):
        one = report([case(f"c{i}", v) for i, v in enumerate(verdicts)])
        one.timestamp = day + "T03:17:00Z"
        (folder / f"{day[:10]}.json").write_text(to_json(one))
    chart = trend_chart(tmp_path / "pkg")
    assert "```mermaid\nxychart-beta\n" in chart
    assert 'x-axis ["11-20 03:17", "11-21 03:17", "11-22"]' in chart  # a hostile date: digits only
    assert "line [50.0, 100.0, 0.0]" in chart and "%%" not in chart
