"""SIGINT / SIGTERM: stop new cases, keep the finished ones, write the partial report, exit 130."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aam_eval_action.testing.model_server import ModelServer
from aam_eval_action.testing.packages import record_sessions, simple_case, write_package

from support.procs import live_claude


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_writes_the_partial_report(tmp_path: Path, sig: signal.Signals) -> None:
    names = [f"case-{i:02d}" for i in range(8)]
    pkg = write_package(tmp_path / "pkg", [simple_case(n) for n in names])
    record_sessions(pkg, {n: f"Finished the task for {n}." for n in names})
    report = tmp_path / "report.json"
    judged = [{"match": "Finished the task for", "judge": {"result": "PASS", "reason": "finished"}}]
    with ModelServer(judged, latency=0.7) as server:  # every judge call takes 0.7 s
        env = {**os.environ, "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": server.api_key,
               "NO_COLOR": "1"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "aam_eval_action", "run", "--package", str(pkg), "-o", str(report)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        assert proc.stdout is not None
        header = proc.stdout.readline()
        assert header.startswith("8 case(s)"), header
        first = proc.stdout.readline()  # the first finished case
        assert first.startswith("PASS"), first
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, out + err
    data = json.loads(report.read_text())
    assert data["interrupted"] is True
    assert 1 <= len(data["cases"]) < len(names)
    assert all(c["verdict"] == "PASS" for c in data["cases"])
    assert data["summary"]["total"] == len(data["cases"])
    assert "interrupted: partial report" in out


def test_judge_server_errors_are_retried_then_the_case_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from conftest import aam_eval

    names = ["flaky-judge", "dead-judge", "fine"]
    pkg = write_package(tmp_path / "pkg", [simple_case(n) for n in names])
    record_sessions(pkg, {n: f"Finished the task for {n}." for n in names})
    scenarios = [
        {"match": "task for flaky-judge.", "judge": {"status": 529, "times": 2,
                                                   "then": {"result": "PASS", "reason": "ok after retries"}}},
        {"match": "task for dead-judge.", "judge": {"status": 500, "times": 99}},
        {"match": "task for fine.", "judge": {"result": "PASS", "reason": "fine"}},
    ]
    with ModelServer(scenarios) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", server.api_key)
        start = time.monotonic()
        result = aam_eval("run", "--package", str(pkg), "-o", str(tmp_path / "r.json"), "--jobs", "3")
        elapsed = time.monotonic() - start
    cases = {c["name"]: c for c in json.loads((tmp_path / "r.json").read_text())["cases"]}
    assert cases["flaky-judge"]["verdict"] == "PASS"
    assert cases["flaky-judge"]["judge_verdict"]["reason"] == "ok after retries"
    assert cases["dead-judge"]["verdict"] == "ERROR"
    # Down for every retry: not a verdict but an outage, named as the API answered it.
    assert cases["dead-judge"]["error"] == "the judge: the model API answered 500 api_error 5 times"
    assert cases["dead-judge"]["api_down"] is True
    assert cases["fine"]["verdict"] == "PASS"
    assert result.code == 1 and elapsed < 60


def test_model_server_dying_half_way_errors_only_the_affected_cases(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from conftest import aam_eval

    names = [f"case-{i:02d}" for i in range(4)]
    pkg = write_package(tmp_path / "pkg", [simple_case(n) for n in names])
    record_sessions(pkg, {n: f"Finished the task for {n}." for n in names})
    judged = [{"match": "Finished the task for", "judge": {"result": "PASS", "reason": "finished"}}]
    server = ModelServer(judged, latency=0.3).start()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", server.api_key)

    def kill_after_two() -> None:
        while len(server.requests) < 2:
            time.sleep(0.02)
        time.sleep(0.35)  # the second answer goes out, then the server is gone
        server.stop()

    killer = threading.Thread(target=kill_after_two)
    killer.start()
    result = aam_eval("run", "--package", str(pkg), "-o", str(tmp_path / "r.json"), "--jobs", "1")
    killer.join()
    cases = json.loads((tmp_path / "r.json").read_text())["cases"]
    verdicts = [c["verdict"] for c in cases]
    assert len(cases) == 4 and result.code == 1
    assert verdicts[:2] == ["PASS", "PASS"]
    assert verdicts[2:] == ["ERROR"] * 2
    assert all(c["error"] == "the judge: the model API could not be reached or cut its answer 5 times "
               "(APIConnectionError)" and c["api_down"] for c in cases[2:])


@pytest.mark.cli
def test_interrupt_kills_running_agent_sessions(tmp_path: Path) -> None:
    from aam_eval_action.engines.base import get_engine

    reason = get_engine("claude-code").available()
    if reason:
        pytest.skip(reason)
    names = [f"slow-{i}" for i in range(4)]
    pkg = write_package(tmp_path / "pkg", [simple_case(n) for n in names])
    report = tmp_path / "report.json"
    runs = tmp_path / "tmp"  # the run's workspaces, so only its own agents are counted
    runs.mkdir()
    before = live_claude(runs)
    scenarios = [{"match": f"task for {n}.", "agent": [{"sleep": 60, "text": "late"}]} for n in names]
    with ModelServer(scenarios) as server:
        env = {**os.environ, "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": server.api_key, "NO_COLOR": "1",
               "TMPDIR": str(runs)}
        proc = subprocess.Popen(
            [sys.executable, "-m", "aam_eval_action", "run", "--package", str(pkg), "--mode", "live",
             "--jobs", "2", "-o", str(report)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        deadline = time.monotonic() + 30
        while len(live_claude(runs) - before) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(live_claude(runs) - before) >= 2, "the two sessions never started"
        start = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        stopped_in = time.monotonic() - start
    assert proc.returncode == 130, out + err
    assert stopped_in < 15
    assert json.loads(report.read_text())["interrupted"] is True
    time.sleep(0.5)
    assert not (live_claude(runs) - before), "agent processes were left running"


def test_an_interrupted_matrix_run_writes_a_partial_report_naming_every_pair(tmp_path: Path) -> None:
    """Two engines, interrupted after the first case: the report keeps what finished, lists both
    pairs (the one that had not started with no cases), and reads back as a matrix report."""
    from aam_eval_action.report import load_report

    names = [f"case-{i:02d}" for i in range(6)]
    pkg = write_package(tmp_path / "pkg", [simple_case(n) for n in names])
    for engine in ("claude-code", "copilot"):
        record_sessions(pkg, {n: f"Finished the task for {n}." for n in names}, engine=engine)
    report = tmp_path / "report.json"
    judged = [{"match": "Finished the task for", "judge": {"result": "PASS", "reason": "finished"}}]
    with ModelServer(judged, latency=0.7) as server:
        env = {**os.environ, "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": server.api_key,
               "NO_COLOR": "1"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "aam_eval_action", "run", "--package", str(pkg),
             "--engine", "claude-code,copilot", "--jobs", "1", "-o", str(report)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        assert proc.stdout is not None
        for _ in range(2):
            assert "case(s)" in proc.stdout.readline()
        first = proc.stdout.readline()
        assert first.startswith("PASS"), first
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, out + err
    data = json.loads(report.read_text())
    assert data["interrupted"] is True
    assert [(p["engine"], p["summary"]["total"] > 0) for p in data["pairs"]] == [
        ("claude-code", True), ("copilot", False)]
    assert 1 <= len(data["cases"]) < len(names)
    assert {c["engine"] for c in data["cases"]} == {"claude-code"}
    assert load_report(report).pairs is not None
    assert "interrupted: partial report" in out
    # The partial matrix reads as one: engines side by side, and its HTML page.
    side = subprocess.run([sys.executable, "-m", "aam_eval_action", "diff", str(report)],
                          env=env, capture_output=True, text=True)
    assert "Traceback" not in side.stderr and "copilot" in side.stdout, side.stdout + side.stderr
    assert "No case was graded by more than one engine/model: nothing to compare." in side.stdout
    page = tmp_path / "report.html"
    view = subprocess.run([sys.executable, "-m", "aam_eval_action", "view", str(report), "-o", str(page)],
                          env=env, capture_output=True, text=True)
    assert view.returncode == 0 and page.is_file(), view.stdout + view.stderr


def _descendants(root: int) -> dict[int, str]:
    """Every process beneath `root`, with its command line, read from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat[stat.rfind(")") + 2:].split()[1])
    found, todo = {}, [root]
    while todo:
        pid = todo.pop()
        for child, parent in parents.items():
            if parent == pid and child not in found:
                with contextlib.suppress(OSError):
                    found[child] = (Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode())
                todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


KILLED_ENGINES = {"claude-code": (), "codex": ("--model", "gpt-5.5"), "copilot": (),
                  "gemini-cli": ("--judge", "claude-sonnet-4-6")}


@pytest.mark.cli
def test_a_killed_run_leaves_no_process_of_its_sandboxed_sessions(tmp_path: Path) -> None:
    """SIGKILL of `aam-eval` while each engine's sandboxed session waits on its model, after the
    session started a process that left its group (`setsid`): within a second nothing of any
    session is left: the launcher, the namespace's relay, the supervisor, the CLI, its shell and
    the escaped process."""
    from conftest import installed

    for engine in KILLED_ENGINES:
        installed(engine)
    escaped = "sleep 3171"
    scenarios = [{"match": f"task for {engine}.", "agent": [
        {"bash": f"setsid {escaped} >/dev/null 2>&1 < /dev/null &"}, {"sleep": 120, "text": "late"}]}
        for engine in KILLED_ENGINES]
    keys = {"ANTHROPIC_API_KEY": "sk-ant-kill", "OPENAI_API_KEY": "sk-kill", "GEMINI_API_KEY": "gemini-kill"}
    with ModelServer(scenarios, api_key=tuple(keys.values())) as server:
        env = {**os.environ, **keys, "ANTHROPIC_BASE_URL": server.url, "OPENAI_BASE_URL": server.url + "/v1",
               "GOOGLE_GEMINI_BASE_URL": server.url, "NO_COLOR": "1"}
        runs = {}
        for engine, flags in KILLED_ENGINES.items():
            pkg = write_package(tmp_path / engine, [simple_case(engine)], {"engine": engine, "timeout": 200})
            runs[engine] = subprocess.Popen(
                [sys.executable, "-m", "aam_eval_action", "run", "--package", str(pkg), "--mode", "live", *flags],
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        waiting = {e: False for e in KILLED_ENGINES}
        deadline = time.monotonic() + 120
        while not all(waiting.values()) and time.monotonic() < deadline:
            for engine, proc in runs.items():  # its second model turn: the escaped process runs
                seen = _descendants(proc.pid)
                waiting[engine] = any(cmd.strip() == escaped for cmd in seen.values()) and any(
                    "sandbox.enter" in cmd for cmd in seen.values())
            time.sleep(0.2)
        assert all(waiting.values()), f"not every session reached its model's second turn: {waiting}"
        sessions = {engine: _descendants(proc.pid) for engine, proc in runs.items()}
        for proc in runs.values():
            proc.kill()
        for proc in runs.values():
            proc.wait(timeout=10)
        time.sleep(1.0)
        left = {engine: {pid: cmd for pid, cmd in procs.items() if _alive(pid)}
                for engine, procs in sessions.items()}
    assert not any(left.values()), f"processes outlived their killed run: {left}"
    for engine, procs in sessions.items():  # what was there to be killed
        assert any("sandbox.enter" in cmd for cmd in procs.values()), engine
        assert any(cmd.strip() == escaped for cmd in procs.values()), (engine, procs)
