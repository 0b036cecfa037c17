"""A conversation's second turn: each real agent CLI resumes the session it ran before.

Turn 1 runs a prompt in a fresh workspace and HOME; turn 2 runs the follow-up message through
the same engine with `AgentRun.resume` set to turn 1's `session_id`, in the same workspace and
HOME. The scripted model server must then receive the whole conversation: turn 1's prompt,
turn 1's answer and the follow-up, in that order. The follow-up is answered by a `reply-to`
scenario. A test is skipped, with the reason, only when its CLI is not on PATH.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from aam_eval_action.engines.base import AgentRun, Engine, get_engine
from aam_eval_action.session import Session
from aam_eval_action.settings import runner_environment
from aam_eval_action.testing.model_server import ModelServer, RecordedRequest, conversation, is_agent_turn

from conftest import installed

pytestmark = pytest.mark.cli

ENGINES = ("claude-code", "codex", "copilot", "gemini-cli")
MODELS = {"gemini-cli": "gemini-2.5-pro"}
FIRST = "Remember the word PLUM and note it in notes.txt."
FIRST_ANSWER = "Noted: PLUM."
FOLLOW_UP = "Which word did I ask you to remember?"
SECOND_ANSWER = "The word was PLUM."
SCENARIOS = [
    {"match": FIRST, "agent": [{"write": {"path": "notes.txt", "content": "PLUM\n"}}, {"text": FIRST_ANSWER}]},
    {"reply-to": FOLLOW_UP, "agent": [{"text": SECOND_ANSWER}]},
]
STORED = {
    "claude-code": ".claude/projects/*/{id}.jsonl",
    "codex": ".codex/sessions/*/*/*/rollout-*-{id}.jsonl",
    "copilot": ".copilot/session-state/{id}/events.jsonl",
    "gemini-cli": ".gemini/tmp/*/chats/session-*-{short}.jsonl",
}
"""Where each CLI keeps the session it resumes: always under the run's own HOME."""


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> Engine:
    return installed(request.param)


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer(SCENARIOS) as running:
        yield running


def turn(engine: Engine, server: ModelServer, root: Path, prompt: str, resume: str | None = None) -> AgentRun:
    """One turn of the conversation: the same workspace and HOME under `root` for every turn."""
    env = {
        "ANTHROPIC_API_KEY": server.api_key,
        "ANTHROPIC_BASE_URL": server.url,
        "OPENAI_API_KEY": server.api_key,
        "OPENAI_BASE_URL": server.url + "/v1",
        "GEMINI_API_KEY": server.api_key,
        "GOOGLE_GEMINI_BASE_URL": server.url,
    }
    return AgentRun(prompt=prompt, model=MODELS.get(engine.name, engine.default_model), workspace=root / "ws",
                    home=root / "home", env=env, runner_env=runner_environment(), timeout=120, resume=resume)


def agent_requests(requests: list[RecordedRequest]) -> list[RecordedRequest]:
    """The model turns among the requests (side requests such as titles left out)."""
    return [r for r in requests if is_agent_turn(r.body)]


def assert_answered(session: Session, output: str) -> None:
    assert not session.is_error and session.exit_code == 0, (session.error, session.stderr)
    assert session.output == output


def test_a_resumed_session_sends_the_whole_conversation(engine: Engine, server: ModelServer, tmp_path: Path) -> None:
    first = turn(engine, server, tmp_path, FIRST)
    first.workspace.mkdir()
    first.home.mkdir()
    one = engine.run(first)
    assert_answered(one, FIRST_ANSWER)
    assert one.session_id and (first.workspace / "notes.txt").read_text() == "PLUM\n"
    stored = STORED[engine.name].format(id=one.session_id, short=one.session_id[:8])
    assert list(first.home.glob(stored)), f"{engine.name} kept no session at ~/{stored}"
    before = len(server.requests)

    two = engine.run(turn(engine, server, tmp_path, FOLLOW_UP, resume=one.session_id))

    assert_answered(two, SECOND_ANSWER)
    assert two.session_id == one.session_id  # every CLI goes on under the same id
    # Its own tokens only: one model turn, against turn 1's two (Codex and Copilot report the
    # conversation's totals on resume; the engine takes off what the earlier turns used).
    assert one.usage and two.usage and 0 < two.usage.input_tokens < one.usage.input_tokens, (one.usage, two.usage)
    sent = [conversation(r.body) for r in agent_requests(server.requests[before:])]
    assert sent, "turn 2 asked the model nothing"
    said = sent[0]  # the first model request of turn 2
    assert [role for role, _ in said] == ["user", "assistant", "user"], said
    assert FIRST in said[0][1] and said[1][1] == FIRST_ANSWER and FOLLOW_UP in said[2][1]
    assert not any(FOLLOW_UP in text for r in agent_requests(server.requests[:before])
                   for _, text in conversation(r.body))


def test_codex_keeps_its_sessions_in_the_runs_own_codex_home(server: ModelServer, tmp_path: Path) -> None:
    """Codex runs without `--ephemeral` (a later turn needs the rollout): the rollout is in the
    run's CODEX_HOME, and nowhere in the runner's own HOME."""
    engine = get_engine("codex")
    reason = engine.available()
    if reason:
        pytest.skip(reason)
    run = turn(engine, server, tmp_path, FIRST)
    run.workspace.mkdir()
    run.home.mkdir()
    session = engine.run(run)
    assert_answered(session, FIRST_ANSWER)
    assert engine.env(run)["CODEX_HOME"] == str(run.home / ".codex")
    assert len(list((run.home / ".codex" / "sessions").rglob(f"*{session.session_id}*"))) == 1
    runner_home = Path(runner_environment().get("HOME") or Path.home())
    assert not list((runner_home / ".codex" / "sessions").rglob(f"*{session.session_id}*"))


@pytest.mark.parametrize(("name", "flags"), [
    ("claude-code", ["--resume", "S-1"]),
    ("codex", ["resume", "S-1"]),
    ("copilot", ["--resume=S-1"]),
    ("gemini-cli", ["--resume", "S-1"]),
])  # fmt: skip
def test_only_a_follow_up_turn_resumes_and_codex_never_runs_ephemeral(
    name: str, flags: list[str], tmp_path: Path
) -> None:
    engine = get_engine(name)
    with ModelServer() as running:
        new = turn(engine, running, tmp_path, FIRST)
        again = turn(engine, running, tmp_path, FOLLOW_UP, resume="S-1")
    argv = engine.argv  # type: ignore[attr-defined]
    extra = [tmp_path / "usage.json"] if name == "copilot" else []
    first, second = argv(new, *extra), argv(again, *extra)
    assert not any("resume" in arg for arg in first) and "--ephemeral" not in first + second
    at = second.index(flags[0])
    assert second[at:at + len(flags)] == flags and FOLLOW_UP in second
