"""Crowded catalogs through each real CLI: a marketplace of 60 plugins (90 skills besides the
plugin under test, tests/support/crowded.py), a trigger case swept at 0, 5, 50 and 100 neighbours.

For every request the scripted model server receives, the listing the CLI really sent (which
skills it shows in full, cut short, by name only) is the listing `catalog.predict` builds for the
skills that session installed; where Codex cuts a description, within a character of the
predicted cut for nine in ten of them, and within one of its tokens (4 bytes) for every one. The prompt that fires its skill alone stops firing once the
listing shows that skill by name only (Claude Code, Copilot CLI), and keeps firing where the
listing only shortens descriptions (Codex) or has no budget (Gemini CLI); `aam-eval budget` names
that skill beforehand, and the sweep replays from its cassettes with no CLI and no key.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import aam_eval, installed
from support import crowded

ROUTE = [{"match": "*", "agent": [{"route": {}}, {"text": "Done."}]}]
KEYS = {"ANTHROPIC_API_KEY": "sk-ant-test-crowd", "OPENAI_API_KEY": "sk-test-crowd", "GEMINI_API_KEY": "gm-crowd"}
CASE = "invoices-match-payments"
SKILL = "vendor-invoice-reconciler"
DROPS = {"claude-code": True, "copilot": True, "codex": False, "gemini-cli": False}
"""Whether the engine's listing shows the skill by name only among the whole marketplace."""


def _kind(state: str) -> str:
    return state.split(":")[0]


def _cut(state: str) -> int:
    return int(state.split(":")[1])


def _state(description: str, full: str) -> str:
    if not description:
        return "name-only"
    return "full" if len(description) >= len(" ".join(full.split())) else f"truncated:{len(description)}"


@pytest.mark.cli
@pytest.mark.parametrize("engine", ["claude-code", "codex", "copilot", "gemini-cli"])
def test_the_listing_each_cli_sends_is_the_one_budget_predicts(tmp_path: Path, engine: str) -> None:
    from aam_eval_action.catalog import predict
    from aam_eval_action.catalog.installed import draw, neighbor_skills, package_skills
    from aam_eval_action.loader import load_repo
    from aam_eval_action.settings import Overrides, crowding
    from aam_eval_action.testing.model_server import ModelServer, skill_listing

    installed(engine)
    root = crowded.write(tmp_path / "acme-skills")
    model = ["--model", "gpt-5.5"] if engine == "codex" else []
    judge = ["--judge", "claude-sonnet-4-6"] if engine == "gemini-cli" else []  # no SDK of ours runs Gemini
    sizes = [0, 5, 50, 100] if engine != "gemini-cli" else [0, 100]

    before = aam_eval("budget", "--package", str(root), "--plugin", "ledger-tools", "--engine", engine, *model,
                      "--json")
    assert before.code == 0, before.err
    [listing] = json.loads(before.out)
    shown = {s["name"]: s["shown"] for s in listing["skills"] if s["origin"] == "package"}
    assert (shown[SKILL] == "name-only") is DROPS[engine], shown  # named beforehand

    with ModelServer(ROUTE, api_key=tuple(KEYS.values())) as server:
        env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
        env |= {"ANTHROPIC_BASE_URL": server.url, "OPENAI_BASE_URL": server.url + "/v1",
                "GOOGLE_GEMINI_BASE_URL": server.url, **KEYS}
        ran = subprocess.run([sys.executable, "-m", "aam_eval_action", "run", CASE, "--package", str(root),
                              "--plugin", "ledger-tools", "--record", "--engine", engine, *model, *judge, "--no-self-check",
                              "--sweep", ",".join(map(str, sizes)), "-o", str(tmp_path / "record.json")],
                             env=env, capture_output=True, text=True, timeout=600, check=False)
        assert (tmp_path / "record.json").is_file(), ran.stdout + ran.stderr
        requests = [r.body for r in server.requests]

    # Every listing sent is the predicted one, skill by skill (Codex: to the character).
    repo = load_repo(root, ["ledger-tools"])
    loaded = repo.packages[0]
    pool = crowding(loaded, Overrides())["pool"]
    assert len(pool) == 90
    whole = package_skills(loaded.layout, engine)  # with neighbours, the whole plugin is installed
    target = [s for s in whole if s.name == SKILL]
    full = {s.name: s.description for s in whole + neighbor_skills(pool)}
    predicted = {}
    for k in sizes:
        listing_k = predict(engine, (whole if k else target) + neighbor_skills(draw(pool, k)), listing["model"])
        predicted[k] = {e.skill.name: (e.shown if e.shown != "truncated" else f"truncated:{e.description_shown}")
                        for e in listing_k.entries if e.skill.origin != "cli" and e.shown != "left-out"}
    seen = set()
    for body in requests:
        sent = {name: _state(about, full[name]) for name, about in skill_listing(body) if name in full}
        if not sent:
            continue
        match = [k for k in sizes if set(predicted[k]) == set(sent)]
        assert match, sorted(sent)
        assert {n: _kind(s) for n, s in sent.items()} == {n: _kind(s) for n, s in predicted[match[0]].items()}
        # Codex shortens every description to fit: the cut falls where predicted, within a token (4 bytes).
        cuts = [(_cut(sent[n]), _cut(predicted[match[0]][n])) for n in sent if sent[n].startswith("truncated")]
        assert all(abs(a - b) <= 5 for a, b in cuts), cuts  # a token, and a trailing space the parser strips
        assert sum(abs(a - b) <= 1 for a, b in cuts) >= 0.9 * len(cuts), cuts
        seen.add(match[0])
    assert seen == set(sizes)

    report = json.loads((tmp_path / "record.json").read_text())
    sweep = report["sweep"]
    points = {p["size"]: p for p in sweep["points"]}
    assert points[0]["skills"][SKILL]["recall"] == 1.0 and points[0]["skills"][SKILL]["shown"] == "full"
    crowded_point = points[100]
    assert crowded_point["neighbors"] == 90
    if DROPS[engine]:  # shown by name only: the prompt that fired it alone no longer does
        mine = crowded_point["skills"][SKILL]
        assert (mine["shown"], mine["cases"], mine["recall"], mine.get("precision")) == ("name-only", 1, 0.0, None)
        assert crowded_point["lost"] == [f"ledger-tools/{CASE}"]
        assert sweep["name_only_from"][f"{engine} {listing['model']}"][SKILL] <= 50
    else:
        assert crowded_point["skills"][SKILL]["recall"] == 1.0 and crowded_point["lost"] == []
    assert "crowding sweep: 0, " in ran.stdout

    # The PR check replays the sweep from its cassettes: no CLI, no key, the same numbers.
    bare = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    again = subprocess.run([sys.executable, "-m", "aam_eval_action", "run", CASE, "--package", str(root),
                            "--plugin", "ledger-tools", "--replay", "--engine", engine, *model, *judge,
                            "--sweep", ",".join(map(str, sizes)), "-o", str(tmp_path / "replay.json")],
                           env=bare | {"PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=300,
                           check=False)
    replayed = json.loads((tmp_path / "replay.json").read_text())["sweep"]
    assert all(p["replayed"] == 1 for p in replayed["points"]), again.stdout + again.stderr
    strip = ("replayed",)
    assert [{k: v for k, v in p.items() if k not in strip} for p in replayed["points"]] == \
        [{k: v for k, v in p.items() if k not in strip} for p in sweep["points"]]
