"""Record with the real CLIs against the scripted server, then replay with nothing at all.

The shipped example package is recorded by real `claude` sessions (and one `codex` session),
the server is stopped, and replay runs with no API key, no CLI on PATH and the network refused.
"""

from __future__ import annotations

import json
import socket
import tempfile
from pathlib import Path

import pytest
import yaml

from aam_eval_action.engines.base import get_engine
from aam_eval_action.testing.model_server import ModelServer, load_scenarios

from conftest import ROOT, aam_eval, installed
from support.procs import live_claude

SCENARIOS = load_scenarios(ROOT / "examples/scripted-model/csv-tools.yaml")
pytestmark = pytest.mark.cli


def _need(engine: str) -> None:
    reason = get_engine(engine).available()
    if reason:
        pytest.skip(reason)


def _verdicts(path: Path) -> dict[str, tuple[str, dict[str, str], str]]:
    cases = json.loads(path.read_text())["cases"]
    return {c["name"]: (c["verdict"], c["deterministic_checks"],
                        (c.get("judge_verdict") or {}).get("result", "")) for c in cases}


@pytest.fixture
def fresh_example(example: Path) -> Path:
    """The example with its cassettes removed and its cassette dir inside the package; no
    baseline runs (test_example_baseline covers them, from the shipped cassettes)."""
    config = example / "evals/eval-config.json"
    data = json.loads(config.read_text())
    data["cassettes"] = "cassettes"
    data["baseline"] = False
    config.write_text(json.dumps(data, indent=2))
    return example


def _record(pkg: Path, monkeypatch: pytest.MonkeyPatch, *extra: str, scenarios: list[dict[str, object]] = SCENARIOS) -> tuple[Path, str]:
    out = pkg.parent / f"record-{len(list(pkg.parent.glob('record-*')))}.json"
    with ModelServer(scenarios) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", server.api_key)
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", server.api_key)
        # No self-check: these recordings are replayed as snapshots (test_self_check_e2e.py checks it).
        result = aam_eval("run", "--package", str(pkg), "--record", "--no-self-check", "--jobs", "3", "-o", str(out),
                          *extra)
    for name in ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name)
    return out, result.out + result.err


def _no_network(self: socket.socket, address: object) -> None:
    raise OSError(f"replay tried to reach the network: {address}")


MISSING_FILE_CASE = """\
name: report-not-written
description: The agent answers but never writes the report file it was asked for.
input:
  prompt: "Write the sales report for fixtures/sales.csv to output/report.md."
  files: [fixtures/sales.csv]
expected:
  files-created: [output/report.md]
judge:
  criteria: output/report.md must exist and summarise the CSV.
"""
MISSING_FILE_SCENARIO = {"match": "Write the sales report", "agent": [{"text": "Here is the report: 3 rows."}]}


def test_record_then_replay_with_nothing(fresh_example: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _need("claude-code")
    (fresh_example / "evals/cases/07-report-not-written.yaml").write_text(MISSING_FILE_CASE)
    recorded, log = _record(fresh_example, monkeypatch, scenarios=[*SCENARIOS, MISSING_FILE_SCENARIO])
    live = _verdicts(recorded)
    assert live == {
        "average-revenue": ("FAIL", {"contains": "FAIL", "skill_triggered": "PASS", "sandbox": "PASS"}, "SKIP"),
        "changelog-entry": ("PASS", {"files_created": "PASS", "file_contains": "PASS", "sandbox": "PASS"}, "PASS"),
        "csv-summary-e2e": ("PASS", {"contains": "PASS", "not_contains": "PASS", "files_created": "PASS",
                                     "regex": "PASS", "file_contains": "PASS", "tool_called": "PASS",
                                     "tool_order": "PASS", "skill_triggered": "PASS", "command": "PASS",
                                     "sandbox": "PASS"}, "PASS"),
        "hook-blocks-env-write": ("PASS", {"not_contains": "PASS", "agent_blocked": "PASS", "not_regex": "PASS",
                                           "files_absent": "PASS", "sandbox": "PASS"}, "PASS"),
        "json-row-count": ("PASS", {"output_json_schema": "PASS", "tool_called": "PASS", "skill_triggered": "PASS",
                                    "sandbox": "PASS"}, "PASS"),
        "no-invented-numbers": ("FAIL", {"sandbox": "PASS"}, "FAIL"),
        "scratch-copy-sandbox": ("FAIL", {"sandbox": "FAIL"}, "SKIP"),
        "report-not-written": ("FAIL", {"files_created": "FAIL", "sandbox": "PASS"}, "SKIP"),
    }, log
    session = yaml.safe_load((fresh_example / "evals/cassettes/csv-summary-e2e/claude-code.session.yaml").read_text())
    attempt = session["attempts"][0]
    assert [t["name"] for t in attempt["tool_calls"]] == ["Skill", "Bash"]
    assert attempt["files"][0]["path"] == "output/summary.md" and "Rows: 3" in attempt["files"][0]["text"]
    assert attempt["runtime_version"] and attempt["session_id"]
    assert "/tmp/" not in (fresh_example / "evals/cassettes/hook-blocks-env-write/claude-code.session.yaml").read_text()

    # Replay: no key, no CLI on PATH, no network.
    empty_bin = tmp_path / "empty-bin"
    empty_bin.mkdir()
    monkeypatch.setenv("PATH", str(empty_bin))
    monkeypatch.setattr(socket.socket, "connect", _no_network)
    replay = aam_eval("run", "--package", str(fresh_example), "--replay", "-o", str(tmp_path / "replay.json"))
    assert replay.code == 1
    assert _verdicts(tmp_path / "replay.json") == live
    report = json.loads((tmp_path / "replay.json").read_text())
    assert report["summary"]["replayed"] == 8
    errors = {c["name"]: c.get("error") for c in report["cases"]}
    assert errors["report-not-written"] == "files_created: not created: 'output/report.md'"
    assert report["agent"]["runtime_version"]


def test_rerecording_identical_sessions_is_byte_identical(fresh_example: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _need("claude-code")
    _record(fresh_example, monkeypatch, "csv-summary-e2e", "hook-blocks-env-write")
    first = {p: p.read_bytes() for p in (fresh_example / "evals/cassettes").rglob("*.yaml")}
    _record(fresh_example, monkeypatch, "csv-summary-e2e", "hook-blocks-env-write")
    second = {p: p.read_bytes() for p in (fresh_example / "evals/cassettes").rglob("*.yaml")}
    assert len(first) == 5  # two sessions, two judge cassettes, the shared traffic store
    for path in first:
        assert first[path] == second[path], _diff(first[path], second[path])


def _diff(a: bytes, b: bytes) -> str:
    import difflib

    return "".join(difflib.unified_diff(a.decode().splitlines(True), b.decode().splitlines(True)))


def test_each_kind_of_replay_miss_says_what_changed(fresh_example: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _need("claude-code")
    _record(fresh_example, monkeypatch, "csv-summary-e2e", "hook-blocks-env-write", "changelog-entry")
    skill = fresh_example / "skills/csv-summary/SKILL.md"
    skill.write_text(skill.read_text() + "\nAlso mention the file name.\n")
    (fresh_example / "evals/fixtures/src/app.py").write_text("print('changed')\n")
    out = tmp_path / "r.json"
    # Snapshot replay: any changed input is a miss (re-execution is tested in test_rerun_e2e.py).
    aam_eval("run", "--package", str(fresh_example), "--replay", "--no-rerun", "-o", str(out))
    errors = {c["name"]: c.get("error", "") for c in json.loads(out.read_text())["cases"]}
    assert "replay miss: skill file skills/csv-summary/SKILL.md changed since recording" in errors["csv-summary-e2e"]
    assert "aam-eval run csv-summary-e2e --record --package" in errors["csv-summary-e2e"]
    assert "workspace file src/app.py changed" in errors["hook-blocks-env-write"]
    assert "skill file" in errors["hook-blocks-env-write"]  # no target: every skill is installed
    assert "replay miss: no cassette recorded for engine claude-code" in errors["average-revenue"]
    # Another model has cassettes of its own (`claude-code@<model>`): none recorded yet.
    aam_eval("run", "changelog-entry", "--package", str(fresh_example), "--replay", "--model", "claude-opus-4-7", "-o", str(out))
    error = json.loads(out.read_text())["cases"][0]["error"]
    assert "no cassette recorded for claude-code with model claude-opus-4-7" in error
    assert "claude-code@claude-opus-4-7.session.yaml" in error and "--model claude-opus-4-7" in error
    # The package's own model changed: its cassettes are stale.
    config = fresh_example / "evals/eval-config.json"
    config.write_text(config.read_text().replace('"claude-sonnet-4-6"', '"claude-opus-4-7"', 1))
    aam_eval("run", "changelog-entry", "--package", str(fresh_example), "--replay", "--no-rerun", "-o", str(out))
    assert "model changed (claude-sonnet-4-6 → claude-opus-4-7)" in json.loads(out.read_text())["cases"][0]["error"]
    aam_eval("run", "changelog-entry", "--package", str(fresh_example), "--replay", "--engine", "codex",
             "--model", "gpt-5.1", "-o", str(out))
    assert "no cassette recorded for codex with model gpt-5.1" in json.loads(out.read_text())["cases"][0]["error"]


def test_codex_session_records_and_replays(fresh_example: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _need("codex")
    recorded, log = _record(fresh_example, monkeypatch, "csv-summary-e2e", "hook-blocks-env-write",
                            "--engine", "codex", "--model", "gpt-5.5")
    live = _verdicts(recorded)
    assert live["csv-summary-e2e"][0] == "PASS", log
    assert live["hook-blocks-env-write"][1]["agent_blocked"] == "PASS", log
    session = yaml.safe_load((fresh_example / "evals/cassettes/csv-summary-e2e/codex.session.yaml").read_text())
    assert session["attempts"][0]["runtime_version"] and session["attempts"][0]["model"] == "gpt-5.5"
    out = tmp_path / "replay.json"
    aam_eval("run", "csv-summary-e2e", "hook-blocks-env-write", "--package", str(fresh_example), "--replay",
             "--engine", "codex", "--model", "gpt-5.5", "-o", str(out))
    assert _verdicts(out) == live


def test_canary_key_echoed_by_the_model_is_never_written(fresh_example: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _need("claude-code")
    canary = "sk-ant-CANARY-9f8e7d6c5b4a"
    leaky = [dict(s) for s in SCENARIOS]
    leaky[0] = {**leaky[0], "agent": [{"text": f"Rows: 3, 952.75 and by the way your key is {canary}"}]}
    with ModelServer(leaky, api_key=canary) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", canary)
        result = aam_eval("run", "csv-summary-e2e", "--package", str(fresh_example), "--record", "--report")
        assert any(canary in str(r.headers) for r in server.requests)  # the CLI really used it
    written = [p for p in fresh_example.rglob("*") if p.is_file() and p.suffix in (".yaml", ".json")]
    text = "\n".join(p.read_text() for p in written) + result.out + result.err
    assert canary not in text
    assert "[REDACTED:ANTHROPIC_API_KEY]" in text


def test_timeout_fails_the_case_and_leaves_no_process(fresh_example: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _need("claude-code")
    slow = [{"match": "Summarise fixtures/sales.csv", "agent": [{"sleep": 60, "text": "late"}]}]
    runs = fresh_example.parent / "tmp"  # the run's workspaces, so only its own agents are counted
    runs.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(runs))
    before = live_claude(runs)
    with ModelServer(slow) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", server.api_key)
        out = fresh_example.parent / "t.json"
        aam_eval("run", "csv-summary-e2e", "--package", str(fresh_example), "--mode", "live", "--timeout", "4", "-o", str(out))
    case = json.loads(out.read_text())["cases"][0]
    assert case["verdict"] == "FAIL"
    assert "timed out after 4" in case["error"]
    assert live_claude(runs) <= before


def test_copy_is_private(example: Path) -> None:
    # The fixture copies the example; the repository's own files are never touched by tests.
    original = ROOT / "examples/csv-tools"
    assert example.resolve() != original.resolve()
    def files(root: Path) -> list[str]:
        return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and "reports" not in p.parts)

    assert files(original) and files(example) == files(original)
    config = "evals/eval-config.json"
    before = (original / config).read_bytes()
    (example / config).write_text("{}")
    assert (original / config).read_bytes() == before


def test_example_baseline_replays_from_the_shipped_cassettes(example: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    aam_eval("run", "--package", str(example), "--replay", "-o", str(out))
    report = json.loads(out.read_text())
    cases = {c["name"]: c for c in report["cases"]}
    # The skill makes csv-summary-e2e pass; without it the scripted model has no report to give.
    assert (cases["csv-summary-e2e"]["verdict"], cases["csv-summary-e2e"]["baseline_verdict"]) == ("PASS", "FAIL")
    assert cases["json-row-count"]["skill_not_needed"] is True
    assert report["summary"]["lift_pp"] > 0
    assert (report["summary"]["trigger_precision"], report["summary"]["trigger_recall"]) == (1.0, 1.0)
    votes = cases["changelog-entry"]["judge_verdict"]["votes"]
    assert [v["result"] for v in votes] == ["PASS", "PASS", "FAIL"]  # passes first
    assert cases["changelog-entry"]["judge_verdict"]["result"] == "PASS"


SHIPPED_ENGINES = {"claude-code": (), "codex": ("--model", "gpt-5.5"), "copilot": (),
                   "gemini-cli": ("--model", "gemini-2.5-pro")}


@pytest.mark.parametrize("engine", list(SHIPPED_ENGINES))
def test_the_shipped_cassettes_re_execute_with_their_verdicts(engine: str, example: Path, tmp_path: Path) -> None:
    """The README's example as shipped: each engine's real CLI re-executed against its recorded
    traffic, no model and no key, gives every case the verdict of its snapshot replay (a
    recording made before a change to how a CLI is started would diverge here instead)."""
    installed(engine)
    snapshot, rerun = tmp_path / "snapshot.json", tmp_path / "rerun.json"
    aam_eval("run", "--package", str(example), "--replay", "--no-rerun", "--engine", engine,
             *SHIPPED_ENGINES[engine], "-o", str(snapshot))
    aam_eval("run", "--package", str(example), "--replay", "--rerun", "--engine", engine,
             *SHIPPED_ENGINES[engine], "-o", str(rerun))
    again = json.loads(rerun.read_text())["cases"]
    assert again and all(c["replay_kind"] == "rerun" for c in again), [c.get("error") for c in again]
    assert _verdicts(rerun) == _verdicts(snapshot)
