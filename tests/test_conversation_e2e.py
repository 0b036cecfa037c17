"""Conversation cases end to end: a skill that asks two questions before it writes a file, run
through each real agent CLI against the scripted model server, with scripted follow-ups and
with a simulated user; recorded, snapshot-replayed (no CLI, no model) and re-executed with the
same verdicts. Then, on Claude Code: an edited skill that asks another second question
diverges at turn 2, and under `auto` only the turns from 2 on are spent; a simulated user that
never reaches its goal stops at `max-turns`; the `asked` check on a confirmation before a
delete, passing and failing.

The package is tests/fixtures/conversation-pkg, the model's side
tests/fixtures/conversation-scenarios.yaml; every run has canary keys, none of which may be
written anywhere.
"""

from __future__ import annotations

import contextlib
import copy
import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from aam_eval_action.replay import agent_cassette
from aam_eval_action.testing.model_server import (
    ModelServer,
    RecordedRequest,
    conversation,
    is_agent_turn,
    is_simulated_user,
    load_scenarios,
)

from conftest import ROOT, aam_eval, installed, scripted_model
from support.repeats import repeating

pytestmark = pytest.mark.cli
PACKAGE = ROOT / "tests/fixtures/conversation-pkg"
SCENARIOS = load_scenarios(ROOT / "tests/fixtures/conversation-scenarios.yaml")
KEYS = {"ANTHROPIC_API_KEY": "sk-ant-CANARY-conv-51c2", "OPENAI_API_KEY": "sk-CANARY-conv-7d1e",
        "GEMINI_API_KEY": "AIza-CANARY-conv-90ab"}
ENGINES = {
    "claude-code": ("--engine", "claude-code"),
    "codex": ("--engine", "codex"),
    "copilot": ("--engine", "copilot"),
    "gemini-cli": ("--engine", "gemini-cli", "--model", "gemini-2.5-pro"),
}
TWO_QUESTIONS = ("setup-scripted", "setup-simulated")
SECOND_QUESTION = "skills/project-setup/references/second-question.md"


@pytest.fixture(params=list(ENGINES))
def engine(request: pytest.FixtureRequest) -> str:
    return installed(request.param).name


def serving(scenarios: list[dict[str, Any]] = SCENARIOS) -> contextlib.AbstractContextManager[ModelServer]:
    """The scripted model server, every CLI and SDK pointed at it with the canary keys."""
    return scripted_model(scenarios, KEYS)


def run(pkg: Path, engine: str, cases: Sequence[str], *args: str) -> dict[str, dict[str, Any]]:
    out = pkg.parent / f"run-{len(list(pkg.parent.glob('run-*.json')))}.json"
    result = aam_eval("run", *cases, "--package", str(pkg), *ENGINES[engine], *args, "-o", str(out))
    assert out.is_file(), result.out + result.err
    return {c["name"]: c for c in json.loads(out.read_text())["cases"]}


def package(tmp_path: Path) -> Path:
    pkg = tmp_path / "pkg"
    shutil.copytree(PACKAGE, pkg)
    return pkg


def session(pkg: Path, case: str, engine: str) -> Any:
    cassette = agent_cassette.load(agent_cassette.session_path(pkg / "evals/cassettes", case, engine))
    assert cassette is not None
    return cassette.attempts[0]


def user_requests(requests: Sequence[RecordedRequest]) -> list[RecordedRequest]:
    return [r for r in requests if is_simulated_user(r.body)]


def no_canary(pkg: Path) -> None:
    written = "".join(p.read_text() for p in (pkg / "evals/cassettes").rglob("*.yaml"))
    assert written and not any(key in written for key in KEYS.values())


def test_a_skill_that_asks_two_questions_records_replays_and_reexecutes(engine: str, tmp_path: Path) -> None:
    """Each engine resumes its session for the scripted follow-ups; the simulated user, which
    plays the same turns through the same resumption, is shown on Claude Code (on the others
    in bench/bench_repeats.py)."""
    pkg = package(tmp_path)
    cases = TWO_QUESTIONS if engine == "claude-code" or repeating() else TWO_QUESTIONS[:1]
    with serving() as server:
        recorded = run(pkg, engine, cases, "--record")
        asked_user = user_requests(server.requests)
        heard = len(server.requests)
        # Snapshot replay: no CLI on PATH, no model reached.
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("PATH", "/usr/bin:/bin")
            snapshot = run(pkg, engine, cases, "--replay", "--no-rerun")
        reexecuted = run(pkg, engine, cases, "--replay", "--rerun")
        assert len(server.requests) == heard  # neither replay asked the model anything

    scripted = recorded["setup-scripted"]
    assert scripted["verdict"] == "PASS", scripted.get("error")
    assert (scripted["turns"], scripted["stopped"]) == (3, "turns-done")
    assert scripted["deterministic_checks"]["turn 2: regex"] == "PASS"
    assert scripted["deterministic_checks"]["asked"] == "PASS"

    turns = session(pkg, "setup-scripted", engine).turns
    assert [t.user for t in turns] == ["Set up a project config for my new service.", "It is called acme.",
                                       "8080, please."]
    assert "What is the project called?" in turns[0].output and "Which port" in turns[1].output
    for replayed, kind in ((snapshot, "snapshot"), (reexecuted, "rerun")):
        for name in cases:
            assert replayed[name]["verdict"] == recorded[name]["verdict"], replayed[name].get("error")
            assert replayed[name]["replay_kind"] == kind and replayed[name]["turns"] == 3
            assert replayed[name]["run_cost_usd"] == 0.0
    no_canary(pkg)
    if "setup-simulated" not in cases:
        return
    simulated = recorded["setup-simulated"]
    assert simulated["verdict"] == "PASS", simulated.get("error")
    assert (simulated["turns"], simulated["stopped"]) == (3, "goal-reached")
    played = session(pkg, "setup-simulated", engine).turns
    assert [t.by for t in played] == ["case", "simulated-user", "simulated-user"]
    assert [t.user for t in played[1:]] == ["It is called acme.", "8080, please."]
    # The simulated user was asked after each turn (the third time it said its goal was reached),
    # shown the conversation so far, and its calls are in their own cassette.
    assert len(asked_user) == 3
    shown = json.dumps(asked_user[1].body)
    assert "It is called acme." in shown and "Which port should the server listen on?" in shown
    user_cassette = agent_cassette.user_path(pkg / "evals/cassettes", "setup-simulated", engine)
    assert len(yaml.safe_load(user_cassette.read_text())["interactions"]) == 3


def _license_instead(scenarios: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The model's side once the skill asks for a license second: the agent asks that, the user
    answers it, and the agent writes it."""
    edited = copy.deepcopy(scenarios)
    edited.insert(0, {"reply-to": "It is called acme.", "agent": [
        {"bash": "cat .*/skills/project-setup/references/second-question.md"},
        {"text": "Thanks. Which license should the project use?"}]})
    edited.insert(1, {"reply-to": "MIT", "agent": [
        {"write": {"path": "project.toml", "content": 'name = "acme"\nlicense = "MIT"\n'}},
        {"text": 'Wrote project.toml with name = "acme" and license = "MIT".'}]})
    starts = next(s for s in edited if s.get("match") == "Set up a project config for")
    starts["user"].insert(0, {"when": "Which license", "say": "MIT, please."})
    return edited


def test_a_changed_second_question_diverges_at_turn_2_and_auto_spends_only_from_there(tmp_path: Path) -> None:
    engine = installed("claude-code").name
    pkg = package(tmp_path)
    with serving():
        run(pkg, engine, ["setup-simulated"], "--record")
    question = pkg / SECOND_QUESTION
    question.write_text(question.read_text().replace("Which port should the server listen on?",
                                                     "Which license should the project use?"))
    with serving() as server:
        diverged = run(pkg, engine, ["setup-simulated"], "--replay", "--rerun")["setup-simulated"]
        assert not server.requests  # re-executed against the recording: no model call
    assert diverged["verdict"] == "ERROR" and diverged["changed_at_turn"] == 2
    assert diverged["miss"]["divergence"]["user_turn"] == 2
    assert "conversation turn 2" in diverged["error"]

    with serving(_license_instead(SCENARIOS)) as server:
        live = run(pkg, engine, ["setup-simulated"], "--mode", "auto")["setup-simulated"]
        agent = [r for r in server.requests if is_agent_turn(r.body) and not is_simulated_user(r.body)]
        users = user_requests(server.requests)
    assert live["replay_kind"] == "rerun" and live["changed_at_turn"] == 2, live.get("error")
    assert live["live_from_turn"] is not None
    # Turn 1 came from the recording: every model request that went out carried turn 2's message,
    # and the user was asked live only about the new question and after.
    assert agent and all(any(text == "It is called acme." for _, text in conversation(r.body)) for r in agent)
    assert users and all("Which license" in json.dumps(r.body) for r in users)
    assert live["turns"] == 3 and live["stopped"] == "goal-reached"
    assert live["deterministic_checks"]["file_contains"] == "FAIL"  # no port any more: the check says so
    played = session(pkg, "setup-simulated", engine).turns
    assert [t.user for t in played] == ["Set up a project config for the service I am starting.",
                                        "It is called acme.", "MIT, please."]
    # The user's live answer to the new question is recorded beside the earlier ones.
    user_cassette = agent_cassette.user_path(pkg / "evals/cassettes", "setup-simulated", engine)
    assert "Which license should the project use?" in user_cassette.read_text()
    no_canary(pkg)


def test_max_turns_and_the_asked_check(tmp_path: Path) -> None:
    engine = installed("claude-code").name
    pkg = package(tmp_path)
    cases = ("setup-endless", "delete-confirmed", "delete-unconfirmed")
    with serving() as server:
        recorded = run(pkg, engine, cases, "--record")
        endless_user = [r for r in user_requests(server.requests) if "every option" in json.dumps(r.body)]
        replayed = run(pkg, engine, cases, "--replay", "--no-rerun")

    endless = recorded["setup-endless"]
    assert endless["verdict"] == "FAIL" and (endless["turns"], endless["stopped"]) == (3, "max-turns")
    assert "the simulated user did not reach its goal in 3 turns (max-turns)" in endless["error"]
    assert len(endless_user) == 3  # asked after every turn, the last one too
    confirmed, careless = recorded["delete-confirmed"], recorded["delete-unconfirmed"]
    assert confirmed["verdict"] == "PASS", confirmed.get("error")
    assert confirmed["deterministic_checks"] == {"files_absent": "PASS", "asked": "PASS"}
    assert careless["verdict"] == "FAIL"
    assert careless["deterministic_checks"]["asked"] == "FAIL"
    assert "it asked at turn 1, but only after calling shell" in careless["error"]
    assert {n: c["verdict"] for n, c in replayed.items()} == {n: c["verdict"] for n, c in recorded.items()}
