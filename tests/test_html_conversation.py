"""A conversation case in the HTML report, in a real headless Chromium: the user's messages as a
chat, each followed by the agent's work on it and its answer, with who wrote each message, the
number of user turns and why the conversation stopped; a one-prompt case as before.

The sessions are recorded with the real Claude Code CLI against the project's scripted model
server (`tests/fixtures/conversation-pkg`, a copy), in one run that writes the page
(`run --record --html`); `aam-eval view` writes it again from the cassettes alone.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aam_eval_action.render import html
from aam_eval_action.render.transcript import session_view
from aam_eval_action.replay import agent_cassette, traffic_store
from aam_eval_action.report import CaseResult, Report, load_report, summarize
from aam_eval_action.session import ConversationTurn, Session, ToolCall
from aam_eval_action.testing.model_server import ModelServer, load_scenarios

from conftest import ROOT, aam_eval
from support.browser import Browser, Page, running_browser, show, texts

pytestmark = pytest.mark.cli

FIXTURES = ROOT / "tests" / "fixtures"
KEY = "sk-ant-test-conversation-html"
SCRIPTED = [
    ("user", "Set up a project config for my new service."),
    ("agent", "Happy to. What is the project called?"),
    ("user", "It is called acme."),
    ("agent", "Thanks. Which port should the server listen on?"),
    ("user", "8080, please."),
    ("agent", 'Wrote project.toml with name = "acme" and port = 8080.'),
]
ONE_PROMPT = """\
name: one-prompt
description: A case of one prompt, beside the conversations.
input:
  prompt: "Clean out the build folder."
  workspace-files: [build/out.txt]
expected:
  files-absent: [build/out.txt]
"""
HOSTILE = '<img src=x onerror="window.__pwned=1"></script><script>window.__pwned=2</script>'


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    yield from running_browser()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The two conversation cases and a one-prompt case recorded in one run with `--html`, and
    the same report viewed from its cassettes: the package and both pages."""
    tmp = tmp_path_factory.mktemp("conversation")
    package = tmp / "pkg"
    shutil.copytree(FIXTURES / "conversation-pkg", package)
    (package / "evals" / "cases" / "one-prompt.yaml").write_text(ONE_PROMPT)
    scenarios = load_scenarios(FIXTURES / "conversation-scenarios.yaml")
    with pytest.MonkeyPatch.context() as mp, ModelServer(scenarios, api_key=KEY) as server:
        mp.setenv("ANTHROPIC_BASE_URL", server.url)
        mp.setenv("ANTHROPIC_API_KEY", KEY)
        result = aam_eval("run", "--package", str(package), "--engine", "claude-code", "--record",
                          "setup-scripted", "setup-simulated", "one-prompt",
                          "-o", str(tmp / "report.json"), "--html", str(tmp / "run.html"))
    assert result.code == 0, result.out + result.err
    report = load_report(tmp / "report.json")
    assert {c.name: (c.verdict, c.turns, c.stopped) for c in report.cases} == {
        "setup-scripted": ("PASS", 3, "turns-done"), "setup-simulated": ("PASS", 3, "goal-reached"),
        "one-prompt": ("PASS", None, None)}
    result = aam_eval("view", str(tmp / "report.json"), "--package", str(package), "-o", str(tmp / "view.html"))
    assert result.code == 0, result.out + result.err
    return {"package": package, "run.html": tmp / "run.html", "view.html": tmp / "view.html"}


def open_case(page: Page, name: str) -> None:
    index = page.js(f"""[...document.querySelectorAll('#case-rows tr')].find(tr =>
        tr.querySelector('td.name').innerText === {json.dumps(name)})?.dataset.case""")
    assert index is not None, f"no row for {name}"
    page.click(f'tr[data-case="{index}"] td')
    page.wait_for(f"document.getElementById('case-view')?.dataset.name === {json.dumps(name)}")


def chat(page: Page) -> list[dict[str, Any]]:
    """The chat in the order a person reads it: each message (who, by, text) and each tool call."""
    found: list[dict[str, Any]] = page.js("""[...document.querySelectorAll('#chat .msg, #chat .tool-name')].map(e =>
        e.classList.contains('tool-name') ? {kind: 'tool', text: e.innerText}
        : {kind: e.classList.contains('user') ? 'user' : 'agent', by: e.dataset.by || null,
           who: e.querySelector('.who').innerText, text: e.querySelector('.body').innerText,
           turn: e.closest('.chat-turn').dataset.userTurn})""")
    return found


# --- the chat -----------------------------------------------------------------------------------


@pytest.mark.parametrize("built", ["run.html", "view.html"])
def test_a_scripted_conversation_reads_as_a_chat(browser: Browser, recorded: dict[str, Path], built: str) -> None:
    page = show(browser, recorded[built])
    open_case(page, "setup-scripted")
    shown = chat(page)
    messages = [m for m in shown if m["kind"] != "tool"]
    assert [(m["kind"], m["text"]) for m in messages] == SCRIPTED
    assert [m["turn"] for m in messages] == ["1", "1", "2", "2", "3", "3"]
    assert all(m["by"] == "case" and m["who"].startswith("user") for m in messages if m["kind"] == "user")
    # Each turn's work between its message and its answer: the skill, the reference file, the write.
    assert [m["kind"] if m["kind"] != "tool" else m["text"] for m in shown] == [
        "user", "Skill", "agent", "user", "Bash", "agent", "user", "Write", "agent"]
    about = page.js("document.querySelector('#chat .chat-about').innerText")
    assert about == "Conversation of 3 user turns · stopped: turns-done (every scripted turn was sent)"
    verdict = page.js("document.getElementById('verdict').innerText")
    assert "3 user turns · stopped: turns-done" in verdict
    # The answers are the chat's, not repeated as model turns' text or as a final answer.
    assert texts(page, "#chat .turn .say") == []
    assert page.js("document.querySelectorAll('#case-view .ending h4').length") == 0
    assert page.problems() == []


def test_a_simulated_users_messages_are_marked_as_its(browser: Browser, recorded: dict[str, Path]) -> None:
    page = show(browser, recorded["view.html"])
    open_case(page, "setup-simulated")
    messages = [m for m in chat(page) if m["kind"] != "tool"]
    assert [(m["kind"], m["text"]) for m in messages] == [
        ("user", "Set up a project config for the service I am starting."), *SCRIPTED[1:]]
    users = [m for m in messages if m["kind"] == "user"]
    assert [(m["by"], m["who"].split(" · ")[0]) for m in users] == [
        ("case", "user"), ("simulated-user", "simulated user"), ("simulated-user", "simulated user")]
    assert page.js("document.querySelectorAll('#chat .msg.user.simulated').length") == 2
    about = page.js("document.querySelector('#chat .chat-about').innerText")
    assert about == "Conversation of 3 user turns · stopped: goal-reached (the simulated user's goal was reached)"
    assert page.problems() == []


def test_a_one_prompt_case_has_no_chat(browser: Browser, recorded: dict[str, Path]) -> None:
    page = show(browser, recorded["run.html"])
    open_case(page, "one-prompt")
    assert page.js("document.querySelectorAll('#chat, .msg, .chat-about').length") == 0
    assert texts(page, "#turns > .turn .tool-name") == ["Bash"]
    assert texts(page, "#turns > .turn .say")[-1] == "Cleaned out build/. Are you sure you wanted that? It cannot be undone."
    assert "conversation" not in page.js("document.getElementById('verdict').innerText")
    assert page.problems() == []


# --- how the model turns are matched to the messages ---------------------------------------------


def test_the_model_turns_follow_their_message_by_requests_then_by_calls(recorded: dict[str, Path]) -> None:
    """Split by the requests' histories; with messages the traffic does not hold, by the counts of
    tool calls; with counts that do not add up, not at all (the page lists the turns after)."""
    cassettes = recorded["package"] / "evals" / "cassettes"
    cassette = agent_cassette.load(cassettes / "setup-scripted" / "claude-code.session.yaml", cassettes)
    assert cassette is not None and cassette.model_traffic
    traffic = traffic_store.load_traffic(cassettes, cassette.model_traffic)[0]
    session = cassette.attempts[0]
    slices = [(1, 2), (3, 4), (5, 6)]  # each user turn: its call, then its answer

    def split(s: Session) -> tuple[str | None, list[Any]]:
        view = session_view(s, traffic)
        return view["split"], [(u["first"], u["count"]) for u in view["conversation"]]

    def numbered(found: list[Any]) -> list[Any]:
        return [(first + 1, first + count) for first, count in found]

    how, found = split(session)
    assert how == "messages" and numbered(found) == slices
    reworded = session.model_copy(update={"turns": [t.model_copy(update={"user": t.user + " (reworded)"})
                                                    for t in session.turns]})
    how, found = split(reworded)
    assert how == "calls" and numbered(found) == slices
    miscounted = reworded.model_copy(update={"turns": [t.model_copy(update={"calls": 2}) for t in reworded.turns]})
    assert split(miscounted) == (None, [(None, None)] * 3)
    # Without traffic: each user turn's calls from the session, then its answer.
    view = session_view(session, None)
    assert view["split"] == "steps" and numbered([(u["first"], u["count"]) for u in view["conversation"]]) == slices


def test_a_conversation_without_traffic_is_a_chat_of_text_only(browser: Browser, tmp_path: Path) -> None:
    """From the session alone (a live run, an older cassette), with hostile messages: text only."""
    session = Session(
        engine="claude-code", model_provider="anthropic", output="Done: " + HOSTILE, stopped="max-turns",
        tool_calls=[ToolCall(name="Bash", input={"command": HOSTILE}, result=HOSTILE)],
        turns=[ConversationTurn(user=HOSTILE, output="Which one? " + HOSTILE),
               ConversationTurn(user="The second " + HOSTILE, by="simulated-user", calls=1, output="Done: " + HOSTILE)])
    case = CaseResult(name="talk", verdict="FAIL", turns=2, stopped="max-turns")
    report = Report.model_validate({
        "version": 1, "id": "eval-run-x", "timestamp": "2026-11-23T10:00:00Z", "duration_seconds": 1,
        "config": {"engine": "claude-code"}, "summary": summarize([case]), "cases": [case.model_dump()]})

    def lookup(case: CaseResult, key: html.Key, variant: str) -> html.Recording | str:
        return html.Recording([session], [None], "a recording") if not variant else "none"

    page_path = tmp_path / "page.html"
    page_path.write_text(html.render(html.page_data(html.Side(report, lookup))))
    assert "<img" not in page_path.read_text()
    page = show(browser, page_path)
    open_case(page, "talk")
    shown = chat(page)
    assert [(m["kind"], m.get("by"), m["text"]) for m in shown] == [
        ("user", "case", HOSTILE), ("agent", None, "Which one? " + HOSTILE),
        ("user", "simulated-user", "The second " + HOSTILE), ("tool", None, "Bash"), ("agent", None, "Done: " + HOSTILE)]
    assert page.js("document.querySelector('#chat .chat-about').innerText").endswith(
        "stopped: max-turns (max-turns was reached)")
    assert page.js("typeof window.__pwned") == "undefined"
    assert page.js("document.querySelectorAll('img, script:not([type])').length") == 1
    assert page.problems() == []
