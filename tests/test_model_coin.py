"""The scripted model server's seeded coin: a step that lands heads with probability `p`.

Fast tests drive the script and the server with request bodies as each CLI sends them; one end
to end test records tests/fixtures/dice through the real Claude Code CLI with a seed whose
first rolls are known, and the verdicts follow the coin.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from aam_eval_action.testing.model_server import (
    DEFAULT_API_KEY,
    ModelServer,
    Script,
    load_scenarios,
    load_seed,
)

from conftest import ROOT, aam_eval, installed

DICE = ROOT / "tests/fixtures/dice"
DICE_FILE = DICE / "scenarios.json"
DICE_SCENARIOS = load_scenarios(DICE_FILE)
BROKEN, STEADY, SEVEN, NINE = range(4)
"""The dice scenarios' indexes in scenarios.json (the broken `nine` first: it goes before the healthy one)."""
SEED = 3
"""The dice's seed here: the first rolls are steady heads, seven tails, nine heads (broken nine: tails)."""


def coin(p: float, **extra: Any) -> dict[str, Any]:
    return {"coin": {"p": p, "heads": {"text": "heads"}, "tails": {"text": "tails"}, **extra}}


def claude_body(prompt: str, skills: list[tuple[str, str]] | None = None, *history: dict[str, Any]) -> dict[str, Any]:
    """A Claude Code turn: its skills reminder and the prompt as text blocks of the first user message."""
    entries = "\n".join(f"- {name}: {about}" for name, about in skills or [])
    blocks = ["<system-reminder>\nThe following skills are available for use with the Skill tool:\n\n"
              f"{entries}\n</system-reminder>", prompt]
    return {"model": "claude-sonnet-4-6", "max_tokens": 32000,
            "messages": [{"role": "user", "content": [{"type": "text", "text": t} for t in blocks]}, *history],
            "tools": [{"name": n, "input_schema": {"type": "object"}} for n in ("Bash", "Skill")]}


def tosses(script: Script, n: int, prompt: str = "toss") -> list[str]:
    return [script.agent_reply(claude_body(prompt)).text for _ in range(n)]


def test_the_same_seed_draws_the_same_and_another_seed_differs() -> None:
    scenarios = [{"match": "toss", "agent": [coin(0.5)]}]
    first = tosses(Script(scenarios, seed=11), 64)
    assert first == tosses(Script(scenarios, seed=11), 64)
    assert first == tosses(Script(scenarios, seed="11"), 64)  # the CLI's `--seed 11` is a string
    assert first != tosses(Script(scenarios, seed=12), 64)
    assert set(first) == {"heads", "tails"}
    # Each scenario has its own stream (seed and index): another scenario's tosses between do not move it.
    both = Script([*scenarios, {"match": "other", "agent": [coin(0.5)]}], seed=11)
    mixed = [t for _ in range(64) for t in (tosses(both, 1)[0], tosses(both, 1, "other")[0])]
    assert mixed[::2] == first and mixed[1::2] != first
    # A coin's own `seed` stands for the server's: the same draws under any server seed.
    own = [{"match": "toss", "agent": [coin(0.5, seed=99)]}]
    assert tosses(Script(own, seed=1), 64) == tosses(Script(own, seed=2), 64)


def test_a_thousand_draws_at_p_07_land_near_07_and_are_counted() -> None:
    script = Script([{"match": "nothing"}, {"match": "toss", "agent": [coin(0.7)]}], seed=2024)
    outcomes = tosses(script, 1000)
    rate = outcomes.count("heads") / 1000
    assert 0.65 <= rate <= 0.75, rate
    assert script.coin_draws == {1: {"heads": outcomes.count("heads"), "tails": outcomes.count("tails")}}
    assert tosses(Script([{"match": "toss", "agent": [coin(1)]}]), 50) == ["heads"] * 50
    assert tosses(Script([{"match": "toss", "agent": [coin(0)]}]), 50) == ["tails"] * 50


def test_draws_from_many_threads_are_each_counted_once() -> None:
    from concurrent.futures import ThreadPoolExecutor

    scenarios = [{"match": "toss", "agent": [coin(0.5)]}]
    script = Script(scenarios, seed=5)
    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(lambda _: script.agent_reply(claude_body("toss")).text, range(800)))
    serial = tosses(Script(scenarios, seed=5), 800)
    assert sorted(outcomes) == sorted(serial)  # the same draws, in whatever order the threads took them
    assert script.coin_draws == {0: {"heads": serial.count("heads"), "tails": serial.count("tails")}}


def test_a_coin_lands_on_any_step_beside_its_other_keys_and_nests() -> None:
    scenario = {"match": "toss", "agent": [
        {"coin": {"p": 1, "heads": {"bash": "echo rolled"}}, "sleep": 0.25},
        {"coin": {"p": 1, "heads": {"coin": {"p": 0, "heads": {"text": "never"}, "tails": {"text": "nested"}}}}},
    ]}
    with ModelServer([scenario]) as server:
        first = server.script.agent_reply(claude_body("toss"))
        assert first.calls == (("Bash", {"command": "echo rolled", "description": "Run a scripted command"}),)
        assert first.delay == 0.25
        history = [{"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]},
                   {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "rolled"}]}]
        assert server.script.agent_reply(claude_body("toss", [], *history)).text == "nested"
        assert server.coin_draws == {0: {"heads": 2, "tails": 1}}


@pytest.mark.parametrize("bad", [{"p": 1.5}, {"p": "0.5"}, {"heads": {"text": "x"}}, {"p": 0.5, "tails": "x"}])
def test_a_malformed_coin_is_refused_where_the_scenario_is_given(bad: dict[str, Any]) -> None:
    scenario = {"match": "toss", "agent": [{"coin": bad}]}
    with pytest.raises(ValueError, match="coin"):
        Script([scenario])
    with pytest.raises(ValueError, match="coin"):
        ModelServer().add(scenario)


def _post(url: str, path: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
    request = urllib.request.Request(url + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"content-type": "application/json", **headers})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def _ask(server: ModelServer, cli: str, prompt: str) -> tuple[str, Any]:
    """One first turn over HTTP in the CLI's dialect: ("text", the text) or (the tool, its input)."""
    anthropic = {"anthropic-version": "2023-06-01", "x-api-key": server.api_key}
    if cli == "codex":
        body = {"model": "gpt-5.5", "tools": [{"type": "function", "name": "exec_command", "parameters": {}}],
                "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}]}
        [item] = _post(server.url, "/v1/responses", body, {"authorization": f"Bearer {server.api_key}"})["output"]
        return (item["name"], json.loads(item["arguments"])) if item["type"] == "function_call" else (
            "text", item["content"][0]["text"])
    if cli == "gemini-cli":
        tools = [{"functionDeclarations": [{"name": "run_shell_command", "parametersJsonSchema": {}}]}]
        body = {"contents": [{"role": "user", "parts": [{"text": prompt}]}], "tools": tools}
        answer = _post(server.url, "/v1beta/models/gemini-2.5-pro:generateContent", body,
                       {"x-goog-api-key": server.api_key})
        [part] = answer["candidates"][0]["content"]["parts"]
        return (part["functionCall"]["name"], part["functionCall"]["args"]) if "functionCall" in part else (
            "text", part["text"])
    tools = ("bash", "view", "create", "skill") if cli == "copilot" else ("Bash", "Skill")
    body = {"model": "claude-sonnet-4-6", "max_tokens": 4096, "messages": [{"role": "user", "content": prompt}],
            "tools": [{"name": n, "input_schema": {"type": "object"}} for n in tools]}
    [block] = _post(server.url, "/v1/messages", body, anthropic)["content"]
    return (block["name"], block["input"]) if block["type"] == "tool_use" else ("text", block["text"])


@pytest.mark.parametrize("cli", ["claude-code", "codex", "copilot", "gemini-cli"])
def test_every_dialect_answers_the_step_the_coin_landed_on(cli: str) -> None:
    scenarios = [
        {"match": "always heads", "agent": [{"coin": {"p": 1, "heads": {"bash": "echo six"}, "tails": {"text": "no"}}}]},
        {"match": "always tails", "agent": [{"coin": {"p": 0, "heads": {"bash": "echo six"}, "tails": {"text": "one"}}}]},
    ]
    shell = {"claude-code": ("Bash", {"command": "echo six", "description": "Run a scripted command"}),
             "codex": ("exec_command", {"cmd": "echo six"}),
             "copilot": ("bash", {"command": "echo six", "description": "Run a scripted command"}),
             "gemini-cli": ("run_shell_command", {"command": "echo six", "description": "Run a scripted command"})}[cli]
    with ModelServer(scenarios) as server:
        assert _ask(server, cli, "roll: always heads") == shell
        assert _ask(server, cli, "roll: always tails") == ("text", "one")
        assert server.coin_draws == {0: {"heads": 1, "tails": 0}, 1: {"heads": 0, "tails": 1}}


def _description(skill_md: Path) -> str:
    import yaml

    return str(yaml.safe_load(skill_md.read_text().split("---\n")[1])["description"])


def _roll(script: Script, skill: str, description: str) -> str:
    """A Claude Code session of the dice case, at its coin turn (the skill loaded)."""
    history = [{"role": "assistant", "content": [{"type": "tool_use", "id": "s1", "name": "Skill",
                                                  "input": {"skill": skill}}]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "s1", "content": "loaded"}]}]
    prompt = f"Roll the {skill} die and tell me the face it landed on."
    return script.agent_reply(claude_body(prompt, [(skill, description)], *history)).text


def test_the_dice_fixture_rolls_at_its_rates_and_a_broken_skill_md_switches_the_scenario() -> None:
    assert load_seed(DICE_FILE) == SEED and load_seed(ROOT / "tests/fixtures/volatile-scenarios.yaml") is None
    healthy = _description(DICE / "skills/nine/SKILL.md")
    broken = _description(DICE / "variants/broken-nine/SKILL.md")
    assert "cracked edition" in broken and "cracked edition" not in healthy
    script = Script(DICE_SCENARIOS, seed=SEED)
    first = {skill: _roll(script, skill, _description(DICE / f"skills/{skill}/SKILL.md"))
             for skill in ("steady", "seven", "nine")}
    assert first == {"steady": "HEADS: the steady die landed on its winning face.",
                     "seven": "TAILS: the seven die landed on its losing face.",
                     "nine": "HEADS: the nine die landed on its winning face."}
    assert _roll(script, "nine", broken).startswith("TAILS")
    for _ in range(399):
        for skill in ("steady", "seven"):
            _roll(script, skill, _description(DICE / f"skills/{skill}/SKILL.md"))
        _roll(script, "nine", healthy)
        _roll(script, "nine", broken)
    rates = {index: counts["heads"] / 400 for index, counts in script.coin_draws.items()}
    assert rates[STEADY] == 1.0
    assert 0.65 <= rates[SEVEN] <= 0.75 and 0.86 <= rates[NINE] <= 0.94 and 0.11 <= rates[BROKEN] <= 0.19, rates


def test_the_standalone_server_takes_a_seed(tmp_path: Path) -> None:
    script = tmp_path / "scenarios.json"
    script.write_text(json.dumps({"seed": 11, "scenarios": [{"match": "toss", "agent": [coin(0.5)]}]}))
    expected = {seed: tosses(Script(load_scenarios(script), seed=seed), 16) for seed in (11, 12)}
    assert expected[11] != expected[12]
    for argv, seed in (([], 11), (["--seed", "12"], 12)):  # the file's seed, or the flag's
        proc = subprocess.Popen([sys.executable, "-m", "aam_eval_action.testing.model_server",
                                 "--scenarios", str(script), *argv], stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().strip()
            headers = {"anthropic-version": "2023-06-01", "x-api-key": DEFAULT_API_KEY}
            got = [_post(url, "/v1/messages", claude_body("toss"), headers)["content"][0]["text"] for _ in range(16)]
        finally:
            proc.terminate()
            proc.wait(timeout=10)
            if proc.stdout is not None:
                proc.stdout.close()
        assert got == expected[seed], argv


def _verdicts(report: Path) -> dict[str, tuple[str, dict[str, str]]]:
    return {c["name"]: (c["verdict"], c["deterministic_checks"]) for c in json.loads(report.read_text())["cases"]}


@pytest.mark.cli
def test_the_real_claude_code_rolls_the_dice_as_the_seed_says(tmp_path: Path) -> None:
    """tests/fixtures/dice recorded once through the real CLI: with seed 3 the steady and nine
    dice land heads and the seven die tails, so roll-seven fails and the others pass."""
    installed("claude-code")
    pkg = shutil.copytree(DICE, tmp_path / "dice")
    out = tmp_path / "report.json"
    key = "sk-ant-CANARY-dice-5e1d"
    with pytest.MonkeyPatch.context() as mp, ModelServer(DICE_SCENARIOS, api_key=key, seed=SEED) as server:
        mp.setenv("ANTHROPIC_BASE_URL", server.url)
        mp.setenv("ANTHROPIC_API_KEY", key)
        result = aam_eval("run", "--package", str(pkg), "--record", "--no-self-check", "--jobs", "3", "-o", str(out))
        draws = server.coin_draws
    log = result.out + result.err
    assert result.code == 1, log
    assert _verdicts(out) == {
        "roll-steady": ("PASS", {"contains": "PASS", "skill_triggered": "PASS"}),
        "roll-seven": ("FAIL", {"contains": "FAIL", "skill_triggered": "PASS"}),
        "roll-nine": ("PASS", {"contains": "PASS", "skill_triggered": "PASS"}),
    }, log
    # Each session reached its coin once; the broken nine's scenario never answered.
    assert draws == {STEADY: {"heads": 1, "tails": 0}, SEVEN: {"heads": 0, "tails": 1},
                     NINE: {"heads": 1, "tails": 0}}, log
