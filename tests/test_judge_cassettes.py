"""Judge calls through the real SDKs against the scripted server, recorded and replayed.

Agent sessions come from cassettes here (written by the project's own cassette code), so
these tests exercise the judge side in isolation; the real CLIs are covered elsewhere.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from aam_eval_action.testing.model_server import ModelServer
from aam_eval_action.testing.packages import record_sessions, simple_case, write_package

from conftest import aam_eval

N = 16


def _package(tmp_path: Path, n: int = N, config: dict[str, object] | None = None) -> Path:
    cases = [simple_case(f"case-{i:02d}") for i in range(n)]
    pkg = write_package(tmp_path / "pkg", cases, config=config)
    record_sessions(pkg, {c["name"]: f"Finished the task for {c['name']}." for c in cases})
    return pkg


def _scenarios(n: int = N) -> list[dict[str, object]]:
    return [
        {"match": f"task for case-{i:02d}.",
         "judge": {"result": "PASS" if i % 3 else "FAIL", "reason": f"reason number {i}"}}
        for i in range(n)
    ]


def _record_judges(pkg: Path, monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    """Run once in auto mode against the scripted server, so every judge call is recorded."""
    with ModelServer(_scenarios(n)) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", server.api_key)
        aam_eval("run", "--package", str(pkg))
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    monkeypatch.delenv("ANTHROPIC_API_KEY")


def _verdicts(report: Path) -> dict[str, tuple[str, str]]:
    data = json.loads(report.read_text())
    return {c["name"]: (c["verdict"], (c.get("judge_verdict") or {}).get("reason", "")) for c in data["cases"]}


def test_sixteen_cases_at_jobs_8_each_judge_cassette_holds_only_its_own_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pkg = _package(tmp_path)
    with ModelServer(_scenarios()) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", server.api_key)
        live = aam_eval("run", "--package", str(pkg), "--jobs", "8", "-o", str(tmp_path / "live.json"))
        judge_calls = [r for r in server.requests if r.path.startswith("/v1/messages")]
    assert live.code == 1, live.out + live.err  # every third case is judged FAIL
    assert len(judge_calls) == N
    for i in range(N):
        name = f"case-{i:02d}"
        data = yaml.safe_load((pkg / "evals/cassettes" / name / "claude-code.judge.yaml").read_text())
        assert len(data["interactions"]) == 1, name
        body = data["interactions"][0]["request"]["body"]
        assert f"task for {name}." in body
        assert f"reason number {i}\"" in data["interactions"][0]["response"]["body"]["string"]
    expected = {f"case-{i:02d}": ("PASS" if i % 3 else "FAIL", f"reason number {i}") for i in range(N)}
    assert _verdicts(tmp_path / "live.json") == expected

    # Replay: no server, no key, network refused: same verdicts, all from cassettes.
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.setattr(socket.socket, "connect", _no_network)
    replay = aam_eval("run", "--package", str(pkg), "--replay", "--jobs", "8", "-o", str(tmp_path / "replay.json"))
    assert replay.code == 1
    assert _verdicts(tmp_path / "replay.json") == expected
    report = json.loads((tmp_path / "replay.json").read_text())
    assert all(c["replayed"] and c["judge_verdict"]["replayed"] for c in report["cases"])


def _no_network(self: socket.socket, address: object) -> None:
    raise OSError(f"network access attempted in a replay test: {address}")


def test_vcrpy_itself_replays_our_judge_cassettes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import anthropic
    import vcr

    from aam_eval_action.pipeline.judge import build_prompt
    from aam_eval_action.session import Session

    pkg = _package(tmp_path, n=1)
    with ModelServer(_scenarios(1)) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", server.api_key)
        aam_eval("run", "--package", str(pkg))
        url = server.url
    cassette = pkg / "evals/cassettes/case-00/claude-code.judge.yaml"
    session = Session(engine="claude-code", model_provider="anthropic",
                      output="Finished the task for case-00.")
    text = build_prompt("The agent completed the task for case-00.", "Do the task for case-00.", session)
    with vcr.use_cassette(str(cassette), record_mode="none", match_on=["method", "path", "body"]):
        from aam_eval_action.pipeline.judge import ask

        verdict = ask(provider="anthropic", model="claude-sonnet-4-6", text=text, base_url=url, api_key=server.api_key)
    assert (verdict.result, verdict.reason) == ("FAIL", "reason number 0")
    assert anthropic.__version__


def test_criteria_change_invalidates_only_the_judge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = _package(tmp_path, n=2)
    with ModelServer(_scenarios(2)) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", server.api_key)
        assert aam_eval("run", "--package", str(pkg)).code == 1
        case_file = next((pkg / "evals/cases").glob("*case-01.yaml"))
        case_file.write_text(case_file.read_text().replace("completed the task", "finished the job"))
        monkeypatch.delenv("ANTHROPIC_BASE_URL")
        monkeypatch.delenv("ANTHROPIC_API_KEY")
        aam_eval("run", "--package", str(pkg), "--replay", "-o", str(tmp_path / "r.json"))
        case = {c["name"]: c for c in json.loads((tmp_path / "r.json").read_text())["cases"]}["case-01"]
        assert case["verdict"] == "ERROR"
        assert "judge replay miss: judge criteria changed" in case["error"]
        assert "aam-eval run case-01 --record" in case["error"]
        assert case["replayed"] is True  # the agent session still replayed
        before = len(server.requests)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", server.api_key)
        auto = aam_eval("run", "--package", str(pkg), "-o", str(tmp_path / "a.json"))
        assert auto.code == 1
        assert len(server.requests) - before == 1  # only case-01's judge went live
    again = aam_eval("run", "--package", str(pkg), "--replay", "-o", str(tmp_path / "b.json"))
    assert _verdicts(tmp_path / "b.json")["case-01"][0] == "PASS"
    assert again.code == 1


def test_expected_change_never_invalidates_cassettes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = _package(tmp_path, n=1)
    _record_judges(pkg, monkeypatch, 1)
    case_file = next((pkg / "evals/cases").glob("*.yaml"))
    data = yaml.safe_load(case_file.read_text())
    data["expected"] = {"contains": ["nowhere to be found"]}
    case_file.write_text(yaml.safe_dump(data))
    aam_eval("run", "--package", str(pkg), "--replay", "-o", str(tmp_path / "r.json"))
    case = json.loads((tmp_path / "r.json").read_text())["cases"][0]
    assert case["verdict"] == "FAIL" and case["replayed"] is True
    assert case["deterministic_checks"] == {"contains": "FAIL"}
    assert "output lacks: 'nowhere to be found'" in case["error"]


def test_openai_judge_round_trip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = _package(tmp_path, n=2, config={"judge": "gpt-5.5"})
    with ModelServer(_scenarios(2)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", server.api_key)
        aam_eval("run", "--package", str(pkg), "-o", str(tmp_path / "live.json"))
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.delenv("OPENAI_API_KEY")
    aam_eval("run", "--package", str(pkg), "--replay", "-o", str(tmp_path / "replay.json"))
    assert _verdicts(tmp_path / "live.json") == _verdicts(tmp_path / "replay.json") == {
        "case-00": ("FAIL", "reason number 0"), "case-01": ("PASS", "reason number 1"),
    }
    text = (pkg / "evals/cassettes/case-01/claude-code.judge.yaml").read_text()
    assert "/v1/responses" in text


def test_rerecording_identical_interactions_is_byte_identical(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = _package(tmp_path, n=3)
    with ModelServer(_scenarios(3)) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", server.api_key)
        aam_eval("run", "--package", str(pkg))
        first = {p: p.read_bytes() for p in (pkg / "evals/cassettes").rglob("*.yaml")}
        for judge in (pkg / "evals/cassettes").rglob("*.judge.yaml"):
            judge.unlink()  # the judge calls are made and recorded again
        aam_eval("run", "--package", str(pkg), "--jobs", "3")
        second = {p: p.read_bytes() for p in (pkg / "evals/cassettes").rglob("*.yaml")}
    assert first == second
    assert len(first) == 6


def test_agent_cassette_unchanged_when_only_volatile_fields_differ(tmp_path: Path) -> None:
    from aam_eval_action.replay import agent_cassette as cassette

    pkg = _package(tmp_path, n=1)
    path = pkg / "evals/cassettes/case-00/claude-code.session.yaml"
    before = path.read_bytes()
    again = cassette.load(path)
    assert again is not None
    again.recorded_at = "2030-01-01T00:00:00Z"
    again.attempts[0].session_id = "another-session"
    again.attempts[0].duration_seconds = 9.5
    assert cassette.save(path, again, checkout=None) is False
    assert path.read_bytes() == before
    again.attempts[0].output = "a different answer"
    assert cassette.save(path, again, checkout=None) is True
    assert b"a different answer" in path.read_bytes()


def test_canary_secrets_never_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    canaries = {
        "ANTHROPIC_API_KEY": "sk-ant-CANARY-1111111111",
        "MY_SERVICE_TOKEN": "tok-CANARY-2222222222",
        "GITHUB_TOKEN": "ghp_CANARY3333333333",
    }
    for k, v in canaries.items():
        monkeypatch.setenv(k, v)
    config = {"env": {"SERVICE_TOKEN": "${MY_SERVICE_TOKEN}", "DB_PASSWORD": "pw-CANARY-4444"},
              "secret-env": ["DB_PASSWORD"]}
    pkg = _package(tmp_path, n=2, config=config)
    # An agent that echoed a secret: the output itself must be scrubbed before it is written.
    record_sessions(pkg, {"case-00": "the key is sk-ant-CANARY-1111111111 and pw-CANARY-4444"})
    with ModelServer(_scenarios(2), api_key=canaries["ANTHROPIC_API_KEY"]) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        result = aam_eval("run", "--package", str(pkg), "--report", "-o", str(tmp_path / "r.json"))
        sent = [r.headers for r in server.requests]
    assert any("sk-ant-CANARY" in str(h) for h in sent)  # the key really was used
    # The session cassette above was planted by the test; everything this run wrote is checked.
    written = "\n".join(p.read_text() for p in pkg.rglob("*")
                        if p.is_file() and p.suffix in (".yaml", ".json")
                        and "session" not in p.name and p.name != "eval-config.json")
    written += (tmp_path / "r.json").read_text() + result.out + result.err
    for value in [*canaries.values(), "pw-CANARY-4444"]:
        assert value not in written
    assert "CANARY" not in written.replace("[REDACTED:", "")


def test_damaged_cassettes_are_errors_naming_the_file(tmp_path: Path) -> None:
    pkg = _package(tmp_path, n=3)
    base = pkg / "evals/cassettes"
    (base / "case-00/claude-code.session.yaml").write_text("version: 1\ncase: [unclosed\n")
    text = (base / "case-01/claude-code.session.yaml").read_text()
    (base / "case-01/claude-code.session.yaml").write_text(text[: len(text) // 2])
    (base / "case-02/claude-code.session.yaml").write_text(text.replace("version: 1", "version: 99"))
    result = aam_eval("run", "--package", str(pkg), "--replay", "-o", str(tmp_path / "r.json"))
    assert result.code == 1
    cases = {c["name"]: c for c in json.loads((tmp_path / "r.json").read_text())["cases"]}
    assert "case-00/claude-code.session.yaml: damaged YAML at line" in cases["case-00"]["error"]
    assert "case-01/claude-code.session.yaml" in cases["case-01"]["error"]
    assert "version 99 is newer than this aam-eval supports" in cases["case-02"]["error"]
    assert {c["verdict"] for c in cases.values()} == {"ERROR"}


def test_dry_run_says_replay_or_live_and_why(tmp_path: Path) -> None:
    pkg = _package(tmp_path, n=2)
    (pkg / "evals/cassettes/orphan-case").mkdir()
    (pkg / "evals/cassettes/orphan-case/claude-code.session.yaml").write_text("x: 1\n")
    case_file = next((pkg / "evals/cases").glob("*case-01.yaml"))
    case_file.write_text(case_file.read_text().replace("Do the task", "Do the chore"))
    result = aam_eval("run", "--package", str(pkg), "--dry-run")
    assert result.code == 0
    assert "case-00  target -  replay" in result.out
    assert "case-01  target -  live (the prompt changed since recording" in result.out
    assert "orphan cassette:" in result.out and "orphan-case" in result.out


def test_keep_workspaces_on_replay_restores_the_recorded_files(tmp_path: Path) -> None:
    from aam_eval_action.replay import agent_cassette as cassette

    pkg = _package(tmp_path, n=1)
    path = pkg / "evals/cassettes/case-00/claude-code.session.yaml"
    recorded = cassette.load(path)
    assert recorded is not None
    from aam_eval_action.session import FileChange

    recorded.attempts[0].files = [FileChange(path="out/a.txt", status="created", sha256="x", size=5, text="hello")]
    cassette.save(path, recorded, checkout=None)
    result = aam_eval("run", "--package", str(pkg), "--replay", "--keep-workspaces")
    line = next(x for x in result.err.splitlines() if "kept workspace of case-00" in x)
    kept = Path(line.rsplit(": ", 1)[1])
    assert (kept / "out/a.txt").read_text() == "hello"
    shutil.rmtree(kept.parent)


@pytest.mark.cli
def test_live_session_without_a_key_is_a_clear_error(tmp_path: Path) -> None:
    pkg = _package(tmp_path, n=1)
    result = aam_eval("run", "--package", str(pkg), "--mode", "live", "-o", str(tmp_path / "r.json"))
    case = json.loads((tmp_path / "r.json").read_text())["cases"][0]
    assert result.code == 1 and case["verdict"] == "ERROR"
    assert case["error"] == (
        "ANTHROPIC_API_KEY is not set: a live claude-code session needs it (set it in the environment, "
        "or run with --replay to use the recorded cassettes)")


def test_live_session_without_the_cli_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = _package(tmp_path, n=1)
    (tmp_path / "empty-bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-unused")
    result = aam_eval("run", "--package", str(pkg), "--mode", "live", "-o", str(tmp_path / "r.json"))
    case = json.loads((tmp_path / "r.json").read_text())["cases"][0]
    assert result.code == 1 and case["verdict"] == "ERROR"
    assert case["error"] == (
        "the `claude` CLI is not on PATH (npm install -g @anthropic-ai/claude-code); "
        "or run with --replay to use the recorded cassettes")


def test_huge_output_is_capped_for_the_judge_and_the_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    huge = "Finished the task for case-00. " + "x" * 2_000_000
    pkg = write_package(tmp_path / "pkg", [simple_case("case-00", expected={"contains": ["Finished"]})])
    record_sessions(pkg, {"case-00": huge})
    with ModelServer(_scenarios(1)) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", server.api_key)
        aam_eval("run", "--package", str(pkg), "-o", str(tmp_path / "r.json"))
        sent = server.requests[-1].body["messages"][0]["content"]
    assert len(sent) < 25_000 and "characters cut]" in sent
    case = json.loads((tmp_path / "r.json").read_text())["cases"][0]
    assert len(case["agent_output_snippet"]) == 500
    assert case["verdict"] == "FAIL"  # the scripted judge fails case-00


def test_damaged_judge_cassette_is_an_error_naming_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = _package(tmp_path, n=2)
    _record_judges(pkg, monkeypatch, 2)
    broken = pkg / "evals/cassettes/case-01/claude-code.judge.yaml"
    broken.write_text("interactions: [unclosed\n")
    aam_eval("run", "--package", str(pkg), "--replay", "-o", str(tmp_path / "r.json"))
    cases = {c["name"]: c for c in json.loads((tmp_path / "r.json").read_text())["cases"]}
    assert cases["case-00"]["verdict"] == "FAIL"  # intact: the scripted judge fails case-00
    assert cases["case-01"]["verdict"] == "ERROR"
    assert "case-01/claude-code.judge.yaml: damaged judge cassette" in cases["case-01"]["error"]


@pytest.mark.parametrize("judge", ["claude-sonnet-4-6", "gpt-5.5"])
def test_replay_answers_from_the_cassette_without_loading_the_sdk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, judge: str
) -> None:
    # The request parameters the SDK sent (recorded through the real SDK) are the ones replay
    # predicts: every recorded verdict is served without importing anthropic or openai.
    pkg = _package(tmp_path, n=3, config={"judge": judge})
    with ModelServer(_scenarios(3)) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("ANTHROPIC_API_KEY", server.api_key)
        monkeypatch.setenv("OPENAI_API_KEY", server.api_key)
        aam_eval("run", "--package", str(pkg), "-o", str(tmp_path / "live.json"))
    code = (
        "import sys; from aam_eval_action.main import main;"
        f"main(['run', '--replay', '--package', {str(pkg)!r}, '-o', {str(tmp_path / 'replay.json')!r}]);"
        "print(sorted(m for m in ('anthropic', 'openai', 'vcr') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"
    assert _verdicts(tmp_path / "live.json") == _verdicts(tmp_path / "replay.json")
    replayed = json.loads((tmp_path / "replay.json").read_text())["cases"]
    assert all(c["judge_verdict"]["replayed"] for c in replayed)
