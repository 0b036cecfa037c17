"""MCP mocks of `claude plugin eval` suites (`aam_eval_action.mocks`): read and layered as that
runner reads them, refused where it refuses them, and served by the stand-in MCP server (a real
process on stdio) with its templates, tool errors, `expect:` guards and call log.

The fixture plugin's tracker server is mocked at the eval dir (`evals/mocks/tracker/`: a fixed
answer and a saved `tools/list`) and again in the file-a-bug case (a deeper answer, with a file
template); the guarded-call case mocks a standalone `calendar` server.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from aam_eval_action import mocks
from aam_eval_action.errors import ConfigError

from conftest import ROOT

FIXTURE = ROOT / "tests/fixtures/cpe-plugin"
CASE = "evals/issues/file-a-bug"


@pytest.fixture
def plugin(tmp_path: Path) -> Path:
    return Path(shutil.copytree(FIXTURE, tmp_path / "team-notes"))


def test_mocks_are_layered_from_the_eval_dir_down_to_the_case(plugin: Path) -> None:
    layers = mocks.layers(plugin, "evals", CASE)
    assert layers == ["evals/mocks", f"{CASE}/mocks"]
    read = mocks.load(plugin, layers)
    tracker = read.servers["tracker"]
    assert tracker.tools["create_issue"].source == f"{CASE}/mocks/tracker/create_issue.md"  # deeper wins
    assert tracker.listings["create_issue"]["description"] == "Open an issue in the team's tracker."
    assert mocks.layers(plugin, "evals", "evals/routing/no-fire-on-weather") == ["evals/mocks"]
    # Against the plugin's declared servers: tracker shadows the plugin's, calendar stands alone.
    servers = mocks.resolve(mocks.load(plugin, mocks.layers(plugin, "evals", "evals/issues/guarded-call")),
                            {"tracker": {"command": "python3"}}, "team-notes", allow_real=False)
    assert [(s.name, s.kind, s.tool_name(t)) for s in servers for t in s.tools] == [
        ("calendar", "standalone", "mcp__calendar__book_room"),
        ("tracker", "shadow", "mcp__plugin_team-notes_tracker__create_issue")]
    assert not mocks.with_only_calls(servers)  # a standalone server is there without the plugin too
    # A declared server no folder mocks is withheld (not started), unless real servers are allowed.
    none = mocks.Mocks()
    withheld = mocks.resolve(none, {"search": {"command": "srv"}}, "team-notes", allow_real=False)
    assert [(s.kind, s.registered) for s in withheld] == [("withheld", "plugin:team-notes:search")]
    served = mocks.Served(withheld, {}, plugin / "calls.jsonl", "n")
    assert served.package_servers({"search": {"command": "srv"}}) == {}
    assert mocks.resolve(mocks.Mocks(), {"search": {"command": "srv"}}, "team-notes", allow_real=True) == []


@pytest.mark.parametrize(("file", "text", "said"), [
    ("evals/mocks/bad.name/t.md", "x", 'name the directory after the server segment of the tool name'),
    ("evals/mocks/tracker/list_issues.md", "---\ntools: [a]\n---\nx", "`tools:` belongs in _server.md"),
    ("evals/mocks/tracker/list_issues.md", "---\nabort_when: never\n---\nx", "`abort_when:` needs `type: agent`"),
    ("evals/mocks/tracker/list_issues.md", "---\ncolour: red\n---\nx", "Unrecognized key(s) in object: 'colour'"),
    ("evals/mocks/tracker/list_issues.md", "TODO: replace with the canned result this tool should return",
     "still holds the scaffolded placeholder"),
    ("evals/mocks/tracker/list_issues.md", "---\nexpect:\n  state: []\n---\nx",
     "expect.state: an empty list of allowed values can never be satisfied"),
    ("evals/mocks/tracker/list_issues.md", "---\nexpect:\n  state: /open|closed/\n---\nx",
     'no groups "(…)", alternation "|"'),
    ("evals/mocks/tracker/_server.md", "---\ntype: agent\n---\nYou play the tracker.",
     "an agent answering several tools needs `tools: [...]`"),
    ("evals/mocks/tracker/_tools.json", '{"tools": "create_issue"}', "expected a saved tools/list response"),
])
def test_a_mock_it_refuses_is_refused_naming_the_file(plugin: Path, file: str, text: str, said: str) -> None:
    (plugin / file).parent.mkdir(parents=True, exist_ok=True)
    (plugin / file).write_text(text)
    with pytest.raises(ConfigError) as refused:
        mocks.load(plugin, mocks.layers(plugin, "evals", CASE))
    assert said in str(refused.value) and str(refused.value).startswith(file.rsplit("/", 1)[0]), refused.value


def _serve(plugin: Path, tmp_path: Path, folder: str, *messages: dict) -> tuple[list[dict], list[dict]]:
    """The stand-in, as a CLI starts it, sent `messages`: its answers and its call log."""
    read = mocks.load(plugin, mocks.layers(plugin, "evals", folder))
    servers = mocks.resolve(read, {"tracker": {}}, "team-notes", allow_real=False)
    served = mocks.serve(servers, plugin, tmp_path / "specs", tmp_path / "home/calls.jsonl")
    config = served.configs[messages[0].pop("server")]
    done = subprocess.run([config["command"], *config["args"]], input="".join(json.dumps(m) + "\n" for m in messages),
                          capture_output=True, text=True, timeout=30, check=True)
    return [json.loads(line) for line in done.stdout.splitlines()], served.calls()


def test_the_stand_in_answers_lists_and_logs_every_call(plugin: Path, tmp_path: Path) -> None:
    def call(n: int, tool: str, arguments: dict) -> dict:
        return {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}

    (plugin / "evals/mocks/tracker/close_issue.md").write_text("---\nerror: true\n---\nIssue {{input.id}} is locked.")
    answers, calls = _serve(plugin, tmp_path, CASE,
                            {"server": "tracker", "jsonrpc": "2.0", "id": 0, "method": "initialize",
                             "params": {"protocolVersion": "2025-06-18"}},
                            {"jsonrpc": "2.0", "method": "notifications/initialized"},
                            {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                            call(2, "create_issue", {"title": "Crash on export", "labels": ["bug"]}),
                            call(3, "close_issue", {"id": 7}),
                            call(4, "create_issue", {"title": "Crash", "labels": ["chore"]}),
                            call(5, "create_issue", {"title": "Crash", "labels": ["regression"]}))
    assert answers[0]["result"]["serverInfo"]["name"] == "eval-mock/tracker"
    listed = {t["name"]: t for t in answers[1]["result"]["tools"]}
    assert listed["create_issue"]["inputSchema"]["required"] == ["title"]
    assert listed["close_issue"]["description"] == ""  # not in _tools.json: any input
    assert answers[2]["result"] == {"content": [{"type": "text", "text": (
        "Created issue #42: Crash on export\nLabel bug: triaged within one working day.\n")}]}
    assert answers[3]["result"] == {"content": [{"type": "text", "text": "Issue 7 is locked."}], "isError": True}
    assert answers[4]["result"]["isError"] is True
    assert answers[4]["result"]["content"][0]["text"].endswith(
        "tracker/create_issue — the model's call violates expect: labels.0 = \"chore\" is not one of [bug, regression]")
    assert answers[5]["result"]["content"][0]["text"] == "{{file:labels/regression.txt}}: no such fixture"
    assert [(c["name"], c["verdict"]) for c in calls] == [
        ("mcp__plugin_team-notes_tracker__create_issue", "ok"), ("mcp__plugin_team-notes_tracker__close_issue",
                                                                 "tool_error"),
        ("mcp__plugin_team-notes_tracker__create_issue", "abort"), ("mcp__plugin_team-notes_tracker__create_issue",
                                                                    "tool_error")]
    lines = [json.dumps(c, separators=(",", ":")) for c in calls]  # as a session keeps them
    assert mocks.aborted(lines) == calls[2]
    # The mock_calls target, as that runner writes it: one compact JSON line a call.
    first = mocks.calls_text(lines).splitlines()[1]
    assert first == ('{"tool":"mcp__plugin_team-notes_tracker__close_issue","input":{"id":7},'
                     '"output":"Issue 7 is locked.","isError":true,"verdict":"tool_error"}')


def test_a_file_template_never_leaves_the_mock_folder(plugin: Path, tmp_path: Path) -> None:
    (plugin / CASE / "mocks/tracker/create_issue.md").write_text("{{file:../{input.title}}} {{file:{input.title}}}")
    answers, _ = _serve(plugin, tmp_path, CASE, {"server": "tracker", "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                                 "params": {"name": "create_issue", "arguments": {"title": ".."}}})
    assert answers[0]["result"]["isError"] is True
    assert "is not a plain file-name segment" in answers[0]["result"]["content"][0]["text"]


def test_what_resolving_mocks_notices_is_warned_with_no_workflow_command(
        plugin: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A manifest's server name is the repository's text: quoted in a warning, no line of it can
    start a workflow command on a GitHub runner."""
    from aam_eval_action.pipeline.context import CaseContext
    from aam_eval_action.redact import Redactor

    read = mocks.load(plugin, mocks.layers(plugin, "evals", CASE))
    mocks.resolve(read, {"tracker": {}, "x\n::error::pwned": {}}, "team-notes", allow_real=False)
    ctx = CaseContext(settings=None, redactor=Redactor({}))  # type: ignore[arg-type]
    for note in read.notes:
        ctx.warn_once(note)
    said = capsys.readouterr().err
    assert "is NOT started" in said
    assert not any(line.lstrip().startswith("::") for line in said.splitlines()), said
