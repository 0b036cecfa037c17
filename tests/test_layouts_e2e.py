"""Repositories as they are, run by the real agent CLIs against the scripted model server.

- `tests/fixtures/layouts/claude-plugin`: a Claude Code plugin (no file of ours) whose case loads
  its skill and whose PreToolUse hook, with a `timeout`, refuses a write into protected/:
  recorded, snapshot-replayed and re-executed with the same verdicts, on all four engines.
  Gemini CLI gets the hook converted (its events and tool names, the timeout in milliseconds:
  30 read as milliseconds would kill the guard before it answers).
- `tests/fixtures/layouts/multi-host`: one plugin with a manifest and a hooks file per host;
  Copilot and Gemini CLI each run their own host's hooks file, not Claude's (which the plugin
  tests show Claude Code and Codex running).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from aam_eval_action.engines.base import get_engine
from aam_eval_action.testing.model_server import ModelServer, load_scenarios

from conftest import ROOT, aam_eval
from support.golden import assert_golden

pytestmark = pytest.mark.cli
LAYOUTS = ROOT / "tests/fixtures/layouts"
SCENARIOS = load_scenarios(ROOT / "tests/fixtures/layouts-scenarios.yaml")
KEYS = {"ANTHROPIC_API_KEY": "sk-ant-CANARY-layouts-51c2", "OPENAI_API_KEY": "sk-openai-CANARY-layouts-0b7e",
        "GEMINI_API_KEY": "gemini-CANARY-layouts-9e44"}
ENGINE_ARGS = {"claude-code": ("--engine", "claude-code"), "codex": ("--engine", "codex", "--model", "gpt-5.5"),
               "copilot": ("--engine", "copilot"), "gemini-cli": ("--engine", "gemini-cli")}
# Whose hooks file each engine runs in the multi-host plugin: its own host's.
HOOKS_FILE = {"claude-code": "claude", "codex": "claude", "copilot": "copilot", "gemini-cli": "gemini"}
Recorded = tuple[Path, dict[str, Any], str]


def _record(fixture: str, engine: str, root: Path) -> Recorded:
    reason = get_engine(engine).available()
    if reason:
        pytest.skip(reason)
    repo = root / fixture
    shutil.copytree(LAYOUTS / fixture, repo)
    with pytest.MonkeyPatch.context() as mp, ModelServer(SCENARIOS, api_key=tuple(KEYS.values())) as server:
        mp.setenv("ANTHROPIC_BASE_URL", server.url)
        mp.setenv("OPENAI_BASE_URL", server.url + "/v1")
        mp.setenv("GOOGLE_GEMINI_BASE_URL", server.url)
        for name, value in KEYS.items():
            mp.setenv(name, value)
        result = aam_eval("run", "--package", str(repo), "--record", *ENGINE_ARGS[engine],
                          "-o", str(root / "rec.json"))
    report = json.loads((root / "rec.json").read_text())
    assert result.code == 0, result.out + result.err + json.dumps(report["cases"], indent=1)
    return repo, report, engine


@pytest.fixture(scope="module", params=list(ENGINE_ARGS))
def plugin(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorded]:
    yield _record("claude-plugin", request.param, tmp_path_factory.mktemp(f"plugin-{request.param}"))


@pytest.fixture(scope="module", params=["copilot", "gemini-cli"])  # Claude's and Codex's: the plugin tests
def multi_host(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorded]:
    yield _record("multi-host", request.param, tmp_path_factory.mktemp(f"multi-{request.param}"))


def _run(repo: Path, engine: str, *args: str) -> tuple[dict[str, Any], str]:
    out = repo.parent / f"run-{len(list(repo.parent.glob('run-*.json')))}.json"
    result = aam_eval("run", "--package", str(repo), *args, *ENGINE_ARGS[engine], "-o", str(out))
    return json.loads(out.read_text()), result.out + result.err


def _verdicts(report: dict[str, Any]) -> dict[str, str]:
    return {c["name"]: c["verdict"] for c in report["cases"]}


def _session(repo: Path, case: str, engine: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((repo / f"evals/cassettes/{case}/{engine}.session.yaml").read_text())
    return data


def test_a_claude_plugin_records_with_its_skill_loaded_and_its_hook_blocking(plugin: Recorded) -> None:
    repo, report, engine = plugin
    case = report["cases"][0]
    assert _verdicts(report) == {"changelog-guarded": "PASS"}, case
    assert case["plugin"] == "release-notes" and report["layout"] == "claude-plugin"
    assert case["skill_triggered"] is True and case["deterministic_checks"]["agent_blocked"] == "PASS"
    attempt = _session(repo, "changelog-guarded", engine)["attempts"][0]
    # Copilot gives the model only the exit status of a Claude-format hook; the others its stderr.
    said = "hook exited with code 2" if engine == "copilot" else "the claude hooks file refused it"
    assert any(said in e for e in attempt["hook_evidence"]), attempt["hook_evidence"]
    text = (repo / f"evals/cassettes/changelog-guarded/{engine}.session.yaml").read_text()
    assert not any(key in text for key in KEYS.values())
    # Evals sit at the repository's root, beside the plugin's own files; nothing else was written.
    assert sorted(p.name for p in (repo / "evals").iterdir()) == ["cases", "cassettes", "fixtures"]


def test_a_claude_plugin_replays_as_a_snapshot_and_re_executes_with_the_same_verdicts(
    plugin: Recorded, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(plugin[0], repo)
    snapshot, log = _run(repo, plugin[2], "--replay", "--no-rerun")
    assert _verdicts(snapshot) == _verdicts(plugin[1]), log
    assert [c["replay_kind"] for c in snapshot["cases"]] == ["snapshot"]
    rerun, log = _run(repo, plugin[2], "--replay", "--rerun")
    assert _verdicts(rerun) == _verdicts(plugin[1]), json.dumps(rerun["cases"], indent=1) + log
    assert [c["replay_kind"] for c in rerun["cases"]] == ["rerun"] and not rerun["cases"][0].get("miss")


def test_each_engine_runs_its_own_hosts_hooks_file(multi_host: Recorded) -> None:
    repo, report, engine = multi_host
    assert _verdicts(report) == {"notes-guarded": "PASS"}, report["cases"]
    evidence = " ".join(_session(repo, "notes-guarded", engine)["attempts"][0]["hook_evidence"])
    own = HOOKS_FILE[engine]
    assert f"the {own} hooks file refused it" in evidence, evidence
    others = {"claude", "copilot", "gemini"} - {own}
    assert not any(f"the {o} hooks file" in evidence for o in others), evidence


# --- a marketplace of two plugins ---------------------------------------------------------


@pytest.fixture(scope="module")
def marketplace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorded]:
    yield _record("marketplace-two", "claude-code", tmp_path_factory.mktemp("marketplace"))


def _steady(report_path: Path) -> Path:
    """The report with its wall times and costs fixed (the token counts follow the length of
    the temporary paths in the prompts), and its sandbox as on a kernel with Landlock, for a
    golden comment."""
    data = json.loads(report_path.read_text())
    data["duration_seconds"] = 12.0
    data["summary"]["cost_usd"] = 0.12
    for case in data["cases"]:
        case["duration_seconds"], case["cost_usd"] = 4.0, 0.04
        case["confinement"] = "writes: landlock; network: port-only"
    report_path.write_text(json.dumps(data))
    return report_path


def test_a_marketplace_runs_every_local_plugin_into_one_report(marketplace: Recorded) -> None:
    repo, report, _ = marketplace
    assert _verdicts(report) == {"csv-helper/count-rows": "PASS", "csv-helper/smoke": "PASS",
                                 "md-helper/smoke": "PASS"}
    assert {c["name"]: c["plugin"] for c in report["cases"]} == {
        "csv-helper/count-rows": "csv-helper", "csv-helper/smoke": "csv-helper", "md-helper/smoke": "md-helper"}
    assert report["layout"] == "claude-marketplace" and report["package"]["name"] == "data-tools"
    assert [(p["name"], p["path"], p["summary"]["passed"]) for p in report["plugins"]] == [
        ("csv-helper", "plugins/csv-helper", 2), ("md-helper", "plugins/md-helper", 1)]
    # Two plugins' cases of the same name never share a cassette.
    cassettes = repo / "evals/cassettes"
    assert (cassettes / "csv-helper/smoke/claude-code.session.yaml").is_file()
    assert (cassettes / "md-helper/smoke/claude-code.session.yaml").is_file()


def test_a_marketplace_comment_has_a_row_per_plugin(marketplace: Recorded, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(marketplace[0], repo)
    base, _ = _run(repo, "claude-code", "--replay")
    (repo.parent / "base.json").write_text(json.dumps(base))
    # The pull request tightens one case's check: graded again on the replayed output, it fails.
    case = repo / "evals/cases/md-helper/smoke.yaml"
    case.write_text(case.read_text().replace('contains: ["Markdown helper"]', 'contains: ["Markdown helper!"]'))
    head, log = _run(repo, "claude-code", "--replay")
    assert _verdicts(head)["md-helper/smoke"] == "FAIL", log
    (repo.parent / "head.json").write_text(json.dumps(head))
    result = aam_eval("comment", str(_steady(repo.parent / "head.json")),
                      "--base", str(_steady(repo.parent / "base.json")))
    assert result.code == 0, result.err
    assert_golden("comment_plugins.md", result.out)
    text = aam_eval("diff", str(repo.parent / "base.json"), str(repo.parent / "head.json")).out
    assert "  csv-helper: 100.0% → 100.0% (+0.0 pp) · 2/2 passed · no regressions" in text
    assert "  md-helper: 100.0% → 0.0% (-100.0 pp) · 0/1 passed · 1 regression" in text


def test_plugin_picks_some_plugins_of_a_marketplace(marketplace: Recorded, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(marketplace[0], repo)
    report, _ = _run(repo, "claude-code", "--replay", "--plugin", "md-helper")
    assert _verdicts(report) == {"md-helper/smoke": "PASS"}
    assert [p["name"] for p in report["plugins"]] == ["md-helper"]
    report, _ = _run(repo, "claude-code", "--replay", "md-helper/smoke", "csv-helper/count-rows")
    assert sorted(_verdicts(report)) == ["csv-helper/count-rows", "md-helper/smoke"]
    result = aam_eval("run", "--package", str(repo), "--replay", "--plugin", "nope")
    assert result.code == 2 and "--plugin: no plugin 'nope' here; plugins: csv-helper, md-helper" in result.err


def test_a_marketplace_html_report_has_a_row_per_plugin_and_each_case_transcript(
    marketplace: Recorded, tmp_path: Path
) -> None:
    from support.browser import open_case, report_page

    repo = tmp_path / "repo"
    shutil.copytree(marketplace[0], repo)
    page_path = tmp_path / "report.html"
    _, log = _run(repo, "claude-code", "--replay", "--html", str(page_path))
    with report_page(page_path) as page:
        rows = page.js("[...document.querySelectorAll('#plugins tbody tr')].map(r => r.innerText.split('\\t')[0])")
        assert rows == ["csv-helper", "md-helper"], log
        plugins = page.js("[...document.querySelectorAll('#case-rows tr')].map(r => r.innerText)")
        assert any("md-helper/smoke" in r and "md-helper" in r.replace("md-helper/smoke", "") for r in plugins)
        detail = open_case(page, "md-helper/smoke")
        assert "Say hello from the Markdown helper." in detail  # the prompt, from the plugin's case file
        assert "Hello from the Markdown helper." in detail  # the transcript, from its cassette
        assert page.requests() == [page_path.as_uri()] and page.problems() == []


def test_the_action_on_a_marketplace_pull_request(
    marketplace: Recorded, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The action pointed at the repository's root: the comment and the job summary have a
    row per plugin, the re-recorded cassette of one plugin's case is named `<plugin>/<case>`,
    and the regression's annotation points at the case file in its plugin's folder."""
    from aam_eval_action.commands.action import action as action_main
    from aam_eval_action.render.comment import MARKER
    from aam_eval_action.testing.github_server import GitHubServer

    from support.gitrepo import commit_all, git, init

    repo = tmp_path / "repo"
    shutil.copytree(marketplace[0], repo)
    init(repo)
    base = commit_all(repo, "base")
    git(repo, "checkout", "-q", "-b", "pr")
    case = repo / "evals/cases/md-helper/smoke.yaml"
    case.write_text(case.read_text().replace('contains: ["Markdown helper"]', 'contains: ["Markdown helper!"]'))
    cassette = repo / "evals/cassettes/csv-helper/smoke/claude-code.session.yaml"
    cassette.write_text(cassette.read_text().replace("recorded locally", "https://ci.example/runs/9"))
    commit_all(repo, "pr")
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"number": 3, "pull_request": {
        "number": 3, "base": {"ref": "main", "sha": base}, "head": {"ref": "pr", "sha": git(repo, "rev-parse", "HEAD")}},
        "repository": {"full_name": "acme/tools"}}))
    with GitHubServer(tokens={"rw": "write"}) as gh:
        gh.add_pr("acme", "tools", 3)
        env = {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event),
               "GITHUB_REPOSITORY": "acme/tools", "GITHUB_API_URL": gh.url, "GITHUB_RUN_ID": "5",
               "GITHUB_WORKSPACE": str(repo), "GITHUB_OUTPUT": str(tmp_path / "out.txt"),
               "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"), "INPUT_GITHUB-TOKEN": "rw",
               "INPUT_MODE": "replay", "INPUT_REPORT-PATH": "head.json"}
        assert action_main(env) == 1  # md-helper/smoke regressed
        body = next(c["body"] for c in gh.comments("acme", "tools", 3) if MARKER in c["body"])
    out = capsys.readouterr().out
    for text in (body, (tmp_path / "summary.md").read_text()):
        assert "### Plugins (2)" in text
        assert "| csv-helper | 100.0% → 100.0% | +0.0 pp | 2 | 0 | 0 | 0 |" in text
        assert "| md-helper | 100.0% → 0.0% | -100.0 pp | 0 | 1 | 0 | 1 |" in text
    assert "### Re-recorded in this PR (1)" in body and "csv-helper/smoke" in body
    assert "::error file=evals/cases/md-helper/smoke.yaml,line=1,title=eval regression%3A md-helper/smoke::" in out
    report = json.loads((repo / "head.json").read_text())
    assert [p["name"] for p in report["plugins"]] == ["csv-helper", "md-helper"]
