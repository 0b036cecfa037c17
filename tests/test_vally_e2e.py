"""A Vally project (tests/fixtures/vally-pkg: a `.vally.yaml`, two eval specs, every grader type
of the catalog) recorded through the real Copilot CLI, Vally's default executor, against the
scripted model server; then replayed offline for $0, and re-executed where a skill changed.

Each grader is graded as its page defines, the stimuli scored by their eval's weights and
threshold, the evals' numbers and `results.jsonl` in Vally's shape; the canary key is in no file
the run writes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, aam_eval, installed
from support.agent_clis import ensure_pinned_clis
from support.repeats import repeated

FIXTURE = ROOT / "tests/fixtures/vally-pkg"
ECHO_SERVER = ROOT / "tests/fixtures/engine-mcp-pkg/scripts/echo_mcp.py"


def _package(tmp_path: Path) -> Path:
    """A copy of the fixture, with the stdio MCP server one stimulus stages (the engines' tests' own)."""
    pkg = Path(shutil.copytree(FIXTURE, tmp_path / "pkg"))
    servers = pkg / "evals/greetings/servers"
    servers.mkdir()
    shutil.copyfile(ECHO_SERVER, servers / "echo_mcp.py")
    return pkg
KEY = "sk-ant-CANARY-vally-5e1b"
GRADERS = {
    "Greets Ada": [
        "output-contains",
        "output-not-contains",
        "output-matches",
        "output-not-matches",
        "skill-invocation",
        "completed",
        "error-count",
        "wall-time",
        "turn-count",
        "token-budget",
        "diff-empty",
    ],
    "Greets twice": ["transcript-contains", "transcript-matches", "output-contains"],
    "Judged greeting": ["prompt", "panel", "pairwise"],
    "Summarises the meeting": [
        "file-exists",
        "file-not-exists",
        "file-contains",
        "file-not-contains",
        "file-matches",
        "file-not-matches",
        "diff-contains",
        "diff-not-contains",
        "tool-calls",
        "tool-call-count",
        "skill-invocation",
        "run-command",
        "program",
    ],
}


def _run(
    pkg: Path,
    *args: str,
    live: str | None = None,
    cli: bool = True,
) -> tuple[dict[str, Any], str, list[dict[str, Any]]]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env["PATH"] = ensure_pinned_clis() if cli else "/usr/bin:/bin"
    if live is not None:
        env |= {"ANTHROPIC_BASE_URL": live, "ANTHROPIC_API_KEY": KEY}
    out, results = pkg.parent / "report.json", pkg.parent / "results.jsonl"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "aam_eval_action",
            "run",
            "--package",
            str(pkg),
            *args,
            "-o",
            str(out),
            "--vally-results",
            str(results),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert out.is_file(), done.stdout + done.stderr
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    return json.loads(out.read_text()), done.stdout + done.stderr, lines


@pytest.mark.cli
def test_a_vally_project_records_on_copilot_replays_for_nothing_and_reexecutes_a_changed_skill(
    tmp_path: Path,
) -> None:
    from aam_eval_action.testing.model_server import ModelServer, load_scenarios

    installed("copilot")
    pkg = _package(tmp_path)
    scenarios = load_scenarios(ROOT / "tests/fixtures/vally-pkg-scenarios.yaml")
    with ModelServer(scenarios, api_key=KEY) as server:
        live, log, lines = _run(pkg, "--record", live=server.url)
        judged = [
            r for r in server.requests if "You are grading the work of a coding agent" in json.dumps(r.body)
        ]
        # The stimulus's own MCP server, started by the CLI in its sandbox: its tool is offered.
        offered = {
            str(t.get("name")) for r in server.requests if "Greet Ada" in json.dumps(r.body)
            for t in r.body.get("tools") or [] if isinstance(t, dict)
        }
    assert live["config"]["engine"] == "copilot", log  # Vally's executor, copilot-sdk
    assert any("echo" in str(name) for name in offered), sorted(map(str, offered))
    cases = {c["title"]: c for c in live["cases"]}
    assert {t: c["verdict"] for t, c in cases.items()} == {
        "Greets Ada": "PASS",
        "Greets twice": "PASS",
        "Judged greeting": "FAIL",
        "Summarises the meeting": "PASS",
    }, log
    for title, types in GRADERS.items():
        graders = cases[title]["graders"]
        assert [g["type"] for g in graders] == types, title
        assert all(g["passed"] for g in graders), (title, [(g["name"], g["explanation"]) for g in graders])
        assert "score_without" not in cases[title]  # one arm, as `vally eval` runs
    # The judge: a score of 4 on scale_1_5 is 0.75, the panel's median too; below the eval's 0.8.
    judge = cases["Judged greeting"]
    assert judge["score"] == 0.75 and len(judged) == 1 + 3
    assert [g["scored"] for g in judge["graders"]] == [True, True, False]  # pairwise: only `vally compare`
    assert "judge score 4/5 (0.75 ≥ threshold 0.5)" in judge["graders"][0]["explanation"]
    # Weighted by type (skill-invocation 2, the rest 1): every grader passed.
    assert cases["Greets Ada"]["score"] == 1.0 and cases["Greets Ada"]["vally"] == {
        "eval": "greetings",
        "stimulus": "Greets Ada",
        "threshold": 0.8,
    }
    assert (
        "/^bash$/ (command /cat meeting/) called 1x"
        in next(g for g in cases["Summarises the meeting"]["graders"] if g["type"] == "tool-calls")[
            "explanation"
        ]
    )
    evals = {e["name"]: e for e in live["vally"]}
    assert evals["greetings"]["passed"] and evals["greetings"]["overall_score"] == pytest.approx(0.916667)
    assert (
        evals["greetings"]["pass_rate"] == pytest.approx(2 / 3) and evals["notes"]["scoring_applied"] is False
    )
    assert "vally greetings: PASS · score 0.92 ≥ 0.8 · pass rate 66.7%" in log
    # results.jsonl: a trial-result per stimulus, then the run summary CI scripts gate on.
    trials = [line for line in lines if line["type"] == "trial-result"]
    assert sorted(t["itemId"] for t in trials) == [
        "greetings::Greets Ada",
        "greetings::Greets twice",
        "greetings::Judged greeting",
        "notes::Summarises the meeting",
    ]
    assert all(t["status"] == "success" and t["gradeResult"]["details"] for t in trials)
    summary = lines[-1]
    assert (
        summary["type"] == "run-summary"
        and summary["passed"] is True
        and summary["hadExecutionErrors"] is False
    )
    assert [(e["name"], e["stimuliRun"], e["stimuliTotal"]) for e in summary["evals"]] == [
        ("greetings", 3, 3),
        ("notes", 1, 1),
    ]
    for path in [*pkg.rglob("*"), tmp_path / "report.json", tmp_path / "results.jsonl"]:
        if path.is_file():
            assert KEY not in path.read_text(errors="replace"), path

    # Offline: no key, no CLI, no server. The same verdicts, scores and numbers, for $0.
    replay, log, lines = _run(pkg, "--replay", "--no-rerun", cli=False)
    assert {c["title"]: (c["verdict"], c["score"]) for c in replay["cases"]} == {
        t: (c["verdict"], c["score"]) for t, c in cases.items()
    }, log
    assert all(c["replayed"] and c["run_cost_usd"] == 0 for c in replay["cases"])
    assert replay["vally"] == live["vally"] and lines[-1] == summary

    # A pull request that edits the greet skill. With no key (a fork): its stimuli re-executed
    # through the real CLI against the recording, which diverges where the skill's new text
    # reaches the model, and says so; the notes stimulus replayed as it was.
    skill = pkg / "skills/greet/SKILL.md"
    skill.write_text(skill.read_text().replace("One line, no numbers.", "One line, no numbers, no emoji."))
    fork, log, _ = _run(pkg, "--replay")
    by = {c["title"]: c for c in fork["cases"]}
    assert (
        by["Summarises the meeting"]["replay_kind"] == "snapshot"
        and by["Summarises the meeting"]["verdict"] == "PASS"
    )
    for title in ("Greets Ada", "Greets twice", "Judged greeting"):
        assert (
            by[title]["replay_miss"] == "diverged"
            and "the skill tool result (greet) changed" in by[title]["error"]
        )
        assert "skill file skills/greet/SKILL.md changed" in by[title]["error"], by[title]["error"]
    # The pull request's comment names each stimulus as its file does.
    (tmp_path / "base.json").write_text(json.dumps(replay))
    (tmp_path / "head.json").write_text(json.dumps(fork))
    shown = aam_eval("diff", str(tmp_path / "base.json"), str(tmp_path / "head.json"), "--format", "markdown")
    assert all(f"| {title}<br>" in shown.out for title in ("Greets Ada", "Greets twice", "Judged greeting")), shown.out


@pytest.mark.cli
@pytest.mark.parametrize("engine", repeated(["claude-code"], ["codex", "gemini-cli"]))
def test_the_same_stimuli_on_another_engine_load_their_skills_its_way(tmp_path: Path, engine: str) -> None:
    """Asked for another engine, every stimulus runs there, its skills installed where that CLI
    reads skills, and its graders give the same verdicts (Copilot's tool names match that CLI's
    calls). Claude Code here; Codex and Gemini CLI in bench/bench_repeats.py."""
    from aam_eval_action.testing.model_server import ModelServer, load_scenarios

    installed(engine)
    pkg = _package(tmp_path)
    keys = {"ANTHROPIC_API_KEY": KEY, "OPENAI_API_KEY": KEY, "GEMINI_API_KEY": KEY}
    with ModelServer(load_scenarios(ROOT / "tests/fixtures/vally-pkg-scenarios.yaml"), api_key=KEY) as server:
        env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
        env |= {"PATH": ensure_pinned_clis(), "ANTHROPIC_BASE_URL": server.url, "OPENAI_BASE_URL": server.url + "/v1",
                "GOOGLE_GEMINI_BASE_URL": server.url, **keys}
        done = subprocess.run([sys.executable, "-m", "aam_eval_action", "run", "--package", str(pkg), "--record",
                               "--no-self-check", "--engine", engine, "-o", str(tmp_path / "report.json")],
                              env=env, capture_output=True, text=True, timeout=600, check=False)
    report = json.loads((tmp_path / "report.json").read_text())
    cases = {c["title"]: c for c in report["cases"]}
    assert {t: c["verdict"] for t, c in cases.items()} == {
        "Greets Ada": "PASS", "Greets twice": "PASS", "Judged greeting": "FAIL", "Summarises the meeting": "PASS",
    }, done.stdout + done.stderr
    for title in GRADERS:
        failed = [(g["name"], g["explanation"]) for g in cases[title]["graders"] if not g["passed"]]
        assert not failed, (title, failed)
