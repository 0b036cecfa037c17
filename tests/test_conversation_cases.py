"""Conversation cases without a CLI: the case format, the checks on a conversation, the
simulated user through the real SDKs against the scripted model server, and what a recording
tells a re-execution. The end-to-end runs are in test_conversation_e2e.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from aam_eval_action.loader import load_package
from aam_eval_action.pipeline.checks import CheckInputs, conversation_checks
from aam_eval_action.pipeline.conversation import merged, said_before
from aam_eval_action.pipeline.finished import FinishedWorkspace
from aam_eval_action.pipeline.simulated_user import UserError, ask, build_prompt, reply_from_body
from aam_eval_action.replay.fingerprint import agent_fingerprint, explain, not_rerunnable
from aam_eval_action.session import ConversationTurn, Session, ToolCall, Usage
from aam_eval_action.spec import Case, Expected, Sandbox, SimulatedUser
from aam_eval_action.testing.model_server import ModelServer, load_scenarios

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "tests/fixtures/conversation-pkg"
USER = SimulatedUser(persona="A terse developer.", goal="Get project.toml written.",
                     facts=["The project is called acme.", "The server listens on port 8080."])


def case(**fields: Any) -> Case:
    return Case.model_validate({"name": "c", "input": {"prompt": "Set up a project config for me."}} | fields)


def conversation(*turns: tuple[str, str, list[ToolCall]], stopped: str = "turns-done") -> Session:
    parts = [Session(engine="claude-code", model_provider="anthropic", session_id=f"s{i}", output=output,
                     tool_calls=calls, usage=Usage(input_tokens=10, output_tokens=2), cost_usd=0.01)
             for i, (_, output, calls) in enumerate(turns)]
    said = [ConversationTurn(user=user, output=output, calls=len(calls)) for user, output, calls in turns]
    return merged(parts, said, stopped)


def shell(command: str) -> ToolCall:
    return ToolCall(name="Bash", input={"command": command})


def checks(expected: Expected, session: Session, turn_expected: tuple[Expected | None, ...] = (),
           simulated: bool = False) -> dict[str, tuple[bool, str]]:
    loaded = load_package(PACKAGE)
    inputs = CheckInputs(finished=FinishedWorkspace(loaded.layout, case(), session), sandbox=Sandbox(),
                         turn_expected=turn_expected, simulated_user=simulated)
    return {c.name: (c.passed, c.detail) for c in conversation_checks(expected, session, inputs)}


def test_turns_are_strings_or_messages_with_their_own_checks_and_never_beside_a_user() -> None:
    c = case(input={"prompt": "Hi", "turns": ["acme", {"message": "8080", "expected": {"contains": ["port"]}}]},
             expected={"asked": "(?i)called", "max-turns": 3})
    assert [t.message for t in c.input.turns] == ["acme", "8080"] and c.input.conversation
    assert c.input.turns[1].expected is not None and c.input.turns[1].expected.contains == ["port"]
    assert c.expected.asked is not None and c.expected.asked.pattern == "(?i)called"
    with pytest.raises(ValidationError, match="either `turns`"):
        case(input={"prompt": "Hi", "turns": ["acme"], "user": USER.model_dump(by_alias=True)})
    with pytest.raises(ValidationError, match="not a valid regular expression"):
        case(expected={"asked": "(unclosed"})
    assert not case().input.conversation


def test_asked_passes_for_a_question_before_acting_and_says_why_it_failed() -> None:
    skill = ToolCall(name="Skill", input={"skill": "tidy-build"})
    careful = conversation(("Delete build", "Are you sure?", [skill]),
                           ("Yes", "Deleted.", [shell("rm build/out.txt")]))
    careless = conversation(("Delete build", "Deleted. Are you sure that was right?", [shell("rm -r build")]),
                            ("Yes", "OK.", []))
    wanted = Expected.model_validate({"asked": {"pattern": "(?i)are you sure", "before": ["shell"]}})
    assert checks(wanted, careful)["asked"] == (True, "")
    assert checks(wanted, careless)["asked"] == (False, "it asked at turn 1, but only after calling shell")
    silent = conversation(("Delete build", "Deleted.", [shell("rm -r build")]))
    assert checks(wanted, silent)["asked"] == (False, "no message of the agent matches '(?i)are you sure'")


def test_max_turns_the_users_goal_and_each_turns_own_checks() -> None:
    talk = conversation(("Set up", "What is it called?", []), ("acme", "Which port?", [shell("cat ref.md")]),
                        ("8080", "Wrote project.toml.", []), stopped="max-turns")
    found = checks(Expected.model_validate({"max-turns": 2}), talk,
                   (Expected.model_validate({"regex": ["(?i)which port"], "tool-called": [{"tool": "shell"}]}),
                    None, Expected.model_validate({"contains": ["never said"]})), simulated=True)
    assert found["max_turns"] == (False, "the conversation took 3 turns, at most 2 allowed")
    assert found["user_goal"] == (False, "the simulated user did not reach its goal in 3 turns (max-turns)")
    assert found["turn 2: regex"] == (True, "") and found["turn 2: tool_called"] == (True, "")
    assert found["turn 4"] == (False, "the conversation ended at turn 3")
    assert "turn 3: contains" not in found  # a turn without checks of its own adds none


def test_the_turns_sessions_become_one() -> None:
    talk = conversation(("a", "first", [shell("ls")]), ("b", "second", [shell("cat x"), shell("cat y")]))
    assert talk.output == "second" and talk.session_id == "s1"
    assert [c.input["command"] for c in talk.tool_calls] == ["ls", "cat x", "cat y"]
    assert talk.usage == Usage(input_tokens=20, output_tokens=4) and talk.cost_usd == 0.02
    assert [t.calls for t in talk.turns] == [1, 2] and talk.stopped == "turns-done"


def test_a_recording_says_what_its_user_said_to_the_same_conversation_only() -> None:
    recorded = conversation(("Set up", "What is it called?", []), ("It is called acme.", "Which port?", []),
                            ("8080", "Wrote it.", []), stopped="goal-reached")
    first = [ConversationTurn(user="Set up", output="What is it called?")]
    again = said_before(recorded, first, "m")
    assert again is not None and (again.stop, again.message) == ("continue", "It is called acme.")
    done = said_before(recorded, recorded.turns, "m")
    assert done is not None and done.stop == "goal-reached"
    other = [ConversationTurn(user="Set up", output="Which license?")]
    assert said_before(recorded, other, "m") is None


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_the_simulated_user_answers_through_the_real_sdk(provider: str) -> None:
    turns = [ConversationTurn(user="Set up a project config for my new service.",
                              output="Happy to. What is the project called?")]
    model = "claude-sonnet-4-6" if provider == "anthropic" else "gpt-5.5"
    with ModelServer(load_scenarios(ROOT / "tests/fixtures/conversation-scenarios.yaml")) as server:
        base = server.url if provider == "anthropic" else server.url + "/v1"
        reply = ask(provider=provider, model=model, text=build_prompt(USER, turns), base_url=base,
                    api_key=server.api_key, max_retries=0)
        sent = server.requests[-1].body
    assert (reply.stop, reply.message) == ("continue", "It is called acme.")
    text = str(sent)
    assert "The project is called acme." in text and "What is the project called?" in text


def test_a_malformed_user_reply_is_an_error_not_a_message() -> None:
    with pytest.raises(UserError, match="malformed"):
        reply_from_body("anthropic", "m", {"content": [{"type": "text", "text": "sure"}]})
    with pytest.raises(UserError, match="empty message"):
        reply_from_body("openai", "m", {"output": [{"type": "message", "content": [
            {"type": "output_text", "text": '{"stop": "continue", "message": " "}'}]}]})


def test_changed_follow_ups_are_re_executed_not_re_recorded() -> None:
    layout = load_package(PACKAGE).layout
    config = load_package(PACKAGE).config
    before = case(target="skill:project-setup", input={"prompt": "Set up", "turns": ["acme", "8080"]})
    after = case(target="skill:project-setup", input={"prompt": "Set up", "turns": ["acme", "9090"]})
    old = agent_fingerprint(layout, before, config, "claude-code", "claude-sonnet-4-6")
    new = agent_fingerprint(layout, after, config, "claude-code", "claude-sonnet-4-6")
    assert explain(old.inputs, new.inputs) == ["the follow-up turns changed"]
    assert not_rerunnable(old.inputs, new.inputs) == []
    one = agent_fingerprint(layout, case(target="skill:project-setup"), config, "claude-code", "claude-sonnet-4-6")
    assert "turns" not in one.inputs and "user" not in one.inputs  # one-turn fingerprints as before


def test_a_turn_checks_only_its_answer_and_calls() -> None:
    with pytest.raises(ValidationError, match="files-created cannot be checked per turn"):
        case(input={"prompt": "Hi", "turns": [{"message": "acme", "expected": {"files-created": ["a.txt"]}}]})
