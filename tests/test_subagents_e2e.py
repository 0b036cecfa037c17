"""Parallel sub-agents with the real agent CLIs against the scripted model server.

`tests/fixtures/subagents-pkg` has one AAM sub-agent, `counter`; its `parallel-count` case makes
the main agent start two counters in one message (they run at the same time, each its own
conversation, each running a command), and `one-counter` starts one. Claude Code starts them
with its `Agent` tool, Copilot with its `task` tool (in the background, like Claude Code) and
Gemini CLI with `invoke_agent` (both at once; the call returns the sub-agent's answer, which it
hands back through `complete_task`), each the package's `counter` agent; Codex with its
`spawn_agent` tool (its own generic sub-agent: Codex has no agent definitions). Recorded once
per engine; each test replays a private copy.
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
from aam_eval_action.replay.traffic_store import load_traffic
from aam_eval_action.testing.model_server import ModelServer, load_scenarios

from conftest import ROOT, aam_eval
from support.repeats import repeating

pytestmark = pytest.mark.cli
PACKAGE = ROOT / "tests/fixtures/subagents-pkg"
SCENARIOS = load_scenarios(ROOT / "tests/fixtures/subagents-scenarios.yaml")
KEYS = {"ANTHROPIC_API_KEY": "sk-ant-CANARY-subagents-4e1f", "OPENAI_API_KEY": "sk-openai-CANARY-subagents-77a0"}
ENGINE_ARGS = {"claude-code": (), "codex": ("--engine", "codex", "--model", "gpt-5.5"),
               "copilot": ("--engine", "copilot"), "gemini-cli": ("--engine", "gemini-cli")}
KEYS["GEMINI_API_KEY"] = "gemini-CANARY-subagents-2d9c"
# Where each CLI's request carries the sub-agent's system prompt (the package's agent file).
PROMPT_AT = {"claude-code": "system[2].text", "copilot": "system[0].text",
             "gemini-cli": "systemInstruction.parts[0].text"}
Recorded = tuple[Path, dict[str, Any], str]


@pytest.fixture(scope="module", params=list(ENGINE_ARGS))
def recorded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorded]:
    """(the recorded package, the recording run's report, the engine)."""
    engine = request.param
    reason = get_engine(engine).available()
    if reason:
        pytest.skip(reason)
    pkg = tmp_path_factory.mktemp(f"subagents-{engine}") / "pkg"
    shutil.copytree(PACKAGE, pkg)
    with pytest.MonkeyPatch.context() as mp, ModelServer(SCENARIOS, api_key=tuple(KEYS.values())) as server:
        mp.setenv("ANTHROPIC_BASE_URL", server.url)
        mp.setenv("OPENAI_BASE_URL", server.url + "/v1")
        mp.setenv("GOOGLE_GEMINI_BASE_URL", server.url)
        for name, value in KEYS.items():
            mp.setenv(name, value)
        result = aam_eval("run", "--package", str(pkg), "--record", "--jobs", "2", *ENGINE_ARGS[engine],
                          "-o", str(pkg.parent / "rec.json"))
    assert result.code == 0, result.out + result.err
    yield pkg, json.loads((pkg.parent / "rec.json").read_text()), engine


def _copy(recorded: Recorded, tmp_path: Path) -> Path:
    shutil.copytree(recorded[0], tmp_path / "pkg")
    return tmp_path / "pkg"


def _run(pkg: Path, engine: str, *args: str) -> tuple[dict[str, Any], str]:
    out = pkg.parent / f"run-{len(list(pkg.parent.glob('run-*.json')))}.json"
    result = aam_eval("run", "--package", str(pkg), *args, *ENGINE_ARGS[engine], "-o", str(out))
    return json.loads(out.read_text()), result.out + result.err


def _verdicts(report: dict[str, Any]) -> dict[str, str]:
    return {c["name"]: c["verdict"] for c in report["cases"]}


def test_recording_keeps_the_main_agent_and_each_sub_agent_as_its_own_conversation(recorded: Recorded) -> None:
    pkg, report, engine = recorded
    assert _verdicts(report) == {"parallel-count": "PASS", "one-counter": "PASS"}
    # Each recording re-executed cleanly against itself right after it was made.
    assert [c["self_check"]["clean"] for c in report["cases"]] == [True, True], [c["self_check"] for c in report["cases"]]
    cassette = pkg / f"evals/cassettes/parallel-count/{engine}.session.yaml"
    traffic = load_traffic(pkg / "evals/cassettes", yaml.safe_load(cassette.read_text())["model_traffic"])[0]
    name = "spawn_agent" if engine == "codex" else "counter"
    assert [(c.id, c.agent, c.parent, c.turn) for c in traffic.conversations] == [
        ("main", None, None, None), (name, name, "main", 1), (f"{name}-2", name, "main", 1)]
    assert {e.conversation for e in traffic.exchanges} == {"main", name, f"{name}-2"}
    text = cassette.read_text()
    # The ids the CLIs make up per run are stored as placeholders, and no key is stored.
    if engine == "claude-code":
        assert "agentId: $AGENT1" in text and "/tasks/$AGENT2.output" in text
    elif engine == "codex":
        assert '"agent_id":"$UUID1","nickname":"$NICK"' in text
    elif engine == "copilot":  # the agent ids, and how long an agent ran when the main agent read it
        assert "Agent started in background with agent_id: $UUID" in text and "elapsed: $SECONDS," in text
    assert not any(key in text for key in KEYS.values())


# What each CLI's own output shows of the two counters: the calls that started them with the
# answers they handed back, or the sub-agents' commands with their results.
SEEN = {
    "claude-code": [("Bash", "wc -l < fixtures/a.txt", "3"), ("Bash", "wc -l < fixtures/b.txt", "5")],
    # (a started agent's status is `pending_init` or `running`, by a race in the CLI)
    "codex": [("spawn_agent", "Count the lines of fixtures/a.txt.", ""),
              ("spawn_agent", "Count the lines of fixtures/b.txt.", ""), ("wait", "", "completed: 3")],
    "copilot": [("bash", "wc -l < fixtures/a.txt", "3"), ("bash", "wc -l < fixtures/b.txt", "5")],
    # Gemini CLI's stream-json has neither: both come from its chat files.
    "gemini-cli": [("invoke_agent", "Count the lines of fixtures/a.txt.", "Result:\n3"),
                   ("run_shell_command", "wc -l < fixtures/a.txt", "Output: 3"),
                   ("invoke_agent", "Count the lines of fixtures/b.txt.", "Result:\n5"),
                   ("run_shell_command", "wc -l < fixtures/b.txt", "Output: 5")],
}


def test_the_session_shows_what_the_sub_agents_did(recorded: Recorded) -> None:
    pkg, _, engine = recorded
    cassette = yaml.safe_load((pkg / f"evals/cassettes/parallel-count/{engine}.session.yaml").read_text())
    calls = cassette["attempts"][0]["tool_calls"]
    for name, given, answer in SEEN[engine]:
        assert any(c["name"] == name and given in str(c["input"].get("prompt") or c["input"].get("command") or "")
                   and answer in (c.get("result") or "") for c in calls), (name, given, answer, calls)
    if engine == "gemini-cli":  # each sub-agent's calls right after the call that started it
        assert [c["name"] for c in calls] == [n for n, _, _ in SEEN[engine]]


def test_snapshot_replay_gives_the_recorded_verdicts(recorded: Recorded, tmp_path: Path) -> None:
    report, _ = _run(_copy(recorded, tmp_path), recorded[2], "--replay", "--no-rerun")
    assert _verdicts(report) == _verdicts(recorded[1])
    assert all(c["replay_kind"] == "snapshot" for c in report["cases"])


def test_re_execution_with_concurrent_sub_agents_gives_the_same_verdict_every_time(
    recorded: Recorded, tmp_path: Path
) -> None:
    pkg = _copy(recorded, tmp_path)
    for attempt in range(5 if repeating() else 2):  # bench/bench_repeats.py: five times
        report, log = _run(pkg, recorded[2], "--replay", "--rerun", "--jobs", "2")
        # On failure: what each case saw, the divergence first.
        seen = [(c["name"], c["verdict"], (c.get("miss") or {}).get("reason") or c.get("error"))
                for c in report["cases"]]
        assert _verdicts(report) == _verdicts(recorded[1]), f"attempt {attempt + 1}: {seen}\n{log}"
        assert all(c["replay_kind"] == "rerun" and not c.get("miss") for c in report["cases"]), f"{seen}\n{log}"
        outputs = {c["name"]: c["agent_output_snippet"] for c in report["cases"]}
        assert outputs == {c["name"]: c["agent_output_snippet"] for c in recorded[1]["cases"]}


# Codex has no agent definitions: its sub-agents take no system prompt from the package.
@pytest.mark.parametrize("recorded", list(PROMPT_AT), indirect=True)
def test_an_edited_sub_agent_prompt_diverges_in_that_sub_agents_conversation(
    recorded: Recorded, tmp_path: Path
) -> None:
    pkg = _copy(recorded, tmp_path)
    prompt = pkg / "agents/counter/system-prompt.md"
    prompt.write_text(prompt.read_text().replace("number only", "number and the word lines"))
    report, log = _run(pkg, recorded[2], "--replay", "--rerun", "parallel-count")
    case = report["cases"][0]
    assert case["verdict"] == "ERROR" and case["miss"]["kind"] == "diverged", log
    found = case["miss"]["divergence"]
    assert found["conversation"] in ("counter", "counter-2") and found["turn"] == 1
    assert found["message"].startswith(f"turn 1 of sub-agent `{found['conversation']}`, started at main turn 1: "
                                       f"the request changed at {PROMPT_AT[recorded[2]]}")
    assert "number and the word lines" in found["live"] and "number only" in found["recorded"]
    assert "agents/counter/system-prompt.md" in case["miss"]["reason"]


def test_the_html_transcript_nests_both_recorded_sub_agents_under_the_turn_that_started_them(
    recorded: Recorded,
) -> None:
    """The HTML report's transcript of a real recording: the main agent's first turn starts two
    `counter` conversations at once; each is nested there with its own turns and its command."""
    from aam_eval_action.render.transcript import traffic_turns

    pkg, _, engine = recorded
    cassette = yaml.safe_load((pkg / "evals/cassettes/parallel-count" / f"{engine}.session.yaml").read_text())
    [traffic] = load_traffic(pkg / "evals/cassettes", cassette["model_traffic"])
    turns = traffic_turns(traffic)
    nested = [(turn["n"], sub) for turn in turns for sub in turn.get("sub", [])]
    assert len(nested) == 2 and {n for n, _ in nested} == {turns[0]["n"]}, [t.get("sub") for t in turns]
    for _, sub in nested:
        calls = [call for turn in sub["turns"] for call in turn.get("calls", [])]
        assert calls and all(call["result"] for call in calls), sub
    assert len({sub["id"] for _, sub in nested}) == 2  # two conversations, told apart


def test_the_recordings_export_as_atif_with_each_sub_agent_embedded_and_as_otlp_spans(
    recorded: Recorded, tmp_path: Path
) -> None:
    """ATIF validated by Harbor's own models: the two counters of `parallel-count` are embedded
    trajectories referenced from the step that started them; in OTLP each is an invoke_agent
    span under that turn."""
    from support.harbor import trajectory_model

    pkg, _, engine = recorded
    out = tmp_path / "export"
    result = aam_eval("export", "parallel-count", "--package", str(pkg), *ENGINE_ARGS[engine][:2] or (),
                      "--atif", str(out / "atif"), "--otlp", str(out / "traces.json"))
    assert result.code == 0, result.out + result.err
    [path] = (out / "atif").glob("parallel-count@*.atif.json")
    data = json.loads(path.read_text())
    trajectory_model().model_validate(data)
    subs = data["subagent_trajectories"]
    assert len(subs) == 2 and all(sub["steps"][1:] for sub in subs)
    refs = [ref["trajectory_id"] for step in data["steps"] for r in step.get("observation", {}).get("results", [])
            for ref in r.get("subagent_trajectory_ref") or []]
    assert sorted(refs) == sorted(sub["trajectory_id"] for sub in subs)
    spans = json.loads((out / "traces.json").read_text())["resourceSpans"][0]["scopeSpans"][0]["spans"]
    agents = [s for s in spans if s["name"].startswith("invoke_agent") and "parentSpanId" in s]
    assert len(agents) == 2
    assert not any(key in path.read_text() for key in KEYS.values())
