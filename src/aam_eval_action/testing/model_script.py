"""The scripted model server's script: scenarios chosen by a substring of the request, answered step
by step.

A step may be a seeded coin: `{coin: {p: 0.7, heads: <step>, tails: <step>, seed: 5}}` answers as
its `heads` step with probability `p`, else as its `tails` step (each any step: a text, a tool
call, a route, another coin; a missing one is `{text: "Done."}`; other keys beside `coin`, such
as `sleep`, stay). It is resolved before the step is rendered, so it works in every dialect.
Each scenario draws from its own `random.Random`, seeded from the server's `seed` and the
scenario's index in the script (the coin's `seed`, when it has one, instead of the server's):
the same seed and the same requests in the same order draw the same outcomes, and each
scenario's outcomes over its sessions do not depend on how other scenarios' requests interleave.
A session draws once each time a request reaches the coin's turn (a retried turn draws again).
`Script.coin_draws` counts the draws per scenario index and outcome.

A scenario with `if-listed: "phrase"` is matched only when the phrase occurs in the name or
description of a skill the request lists (see `skill_listing`), for a judge request anywhere in
its text: put before a scenario of the same `match`, it answers instead once a SKILL.md's
description says the phrase (a skill edited to break it).
"""

from __future__ import annotations

import json
import random
import re
import threading
from pathlib import Path
from typing import Any

from aam_eval_action.testing.model_base import (
    DRAFT_TOOL,
    PROPOSE_TOOL,
    USER_TOOL,
    Reply,
)
from aam_eval_action.testing.model_dialects import (
    codex_wait,
    step_reply,
    verdict_reply,
)
from aam_eval_action.testing.model_requests import (
    agents_answered,
    all_text,
    drafted_skill,
    follow_up,
    is_gemini,
    prompt_text,
    read_lines,
    system_text,
    turn_index,
)
from aam_eval_action.testing.model_routing import (
    NO_SKILL_FITS,
    REPLY_TO,
    agent_step,
    is_catch_all,
    listed_skills,
    route_prompt,
    routed_step,
    skill_listing,
)

# --- the script -------------------------------------------------------------------------


class Script:
    """The scenarios and the per-scenario judge failure counters (thread-safe)."""

    def __init__(self, scenarios: list[dict[str, Any]], seed: int | str = 0) -> None:
        for scenario in scenarios:
            check_coins(scenario)
        self._scenarios = list(scenarios)
        self.seed = seed
        """The seed each scenario's coin draws are seeded from, with the scenario's index."""
        self._coins: dict[tuple[int, str], random.Random] = {}
        self._draws: dict[int, dict[str, int]] = {}
        self._judge_failures: dict[int, int] = {}
        self._judge_calls: dict[int, int] = {}
        self._routes: dict[str, int] = {}
        """Sessions routed so far, per scenario and prompt (a route's `miss-every`)."""
        self._lock = threading.Lock()

    def add(self, scenario: dict[str, Any], first: bool = False) -> None:
        check_coins(scenario)
        with self._lock:
            if first:
                self._scenarios.insert(0, scenario)
            else:
                self._scenarios.append(scenario)

    def find(
        self, text: str, judge: bool = False, listing: str | None = None
    ) -> tuple[int, dict[str, Any]] | None:
        """The first scenario whose `match` occurs in the text; else the first catch-all
        (`match: "*"`), for a judge request only one with a `judge` of its own. A scenario with
        `if-listed` counts only when its phrase occurs in `listing` (None: in the text)."""
        where = text if listing is None else listing
        with self._lock:
            scenarios = [(i, s) for i, s in enumerate(self._scenarios)
                         if "draft-for" not in s and "propose-for" not in s and REPLY_TO not in s
                         and "mock-server" not in s  # a model playing an MCP server plays no agent
                         and str(s.get("if-listed", "")) in where]
        for i, s in scenarios:
            if not is_catch_all(s) and str(s.get("match", "")) in text:
                return i, s
        return next(((i, s) for i, s in scenarios if is_catch_all(s) and (not judge or "judge" in s)), None)

    def remove(self, scenario: dict[str, Any]) -> None:
        """Take a scenario out (an outage that ends)."""
        with self._lock:
            self._scenarios.remove(scenario)

    def down_for(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """The `down` of the first scenario whose `match`, `draft-for`, `propose-for` or
        `mock-server` text occurs in the request (an agent's prompt, a judge's or a simulated
        user's evidence, a draft's or proposal's skill): its case's API stays down."""
        text, skill = all_text(body), drafted_skill(body)  # a draft's siblings are in its text too
        with self._lock:
            scenarios = [s for s in self._scenarios if isinstance(s.get("down"), dict)]
        for s in scenarios:
            keys = [(s.get(k), text) for k in ("match", "propose-for", "mock-server")]
            keys.append((s.get("draft-for"), skill))
            if any(isinstance(k, str) and k and k != "*" and k in where for k, where in keys):
                return dict(s["down"])
        return None

    def agent_reply(self, body: dict[str, Any]) -> Reply:
        follow = self.find_follow_up(body)
        listing = "\n".join(f"{name}: {about}" for name, about in skill_listing(body))
        found, since = follow if follow is not None else (self.find(prompt_text(body), listing=listing), body)
        if found is None:
            return Reply(text="OK.")
        waits = is_gemini(body) or agents_answered(body)
        turn = turn_index(since)
        step = self.toss(found[0], agent_step(found[1], turn, listed_skills(body), waits=waits))
        if "route" in step:
            options = step["route"] if isinstance(step["route"], dict) else {}
            every = int(options.get("miss-every", 0) or 0)
            if every > 0 and turn == 0:  # every Nth session of this prompt answers without a skill
                with self._lock:
                    key = f"route:{found[0]}:{route_prompt(since)}"
                    self._routes[key] = self._routes.get(key, 0) + 1
                    missed = self._routes[key] % every == 0
                if missed:
                    step = {k: v for k, v in step.items() if k != "route"} | {"text": NO_SKILL_FITS}
            if "route" in step:
                step = routed_step(step, route_prompt(since), skill_listing(body))
        if "rules-read" in step:  # the answer names what the agent has read: each rule line
            rules = read_lines(body, str(step.pop("rules-read")))
            step["text"] = "\n".join([str(step.get("text", "")), *rules]).strip() or "No rules read."
        reply = step_reply(step, body)
        return reply if "messages" in body or is_gemini(body) else codex_wait(reply, body)

    def find_follow_up(
        self, body: dict[str, Any]
    ) -> tuple[tuple[int, dict[str, Any]], dict[str, Any]] | None:
        """The first `reply-to` scenario whose text occurs in a resumed session's follow-up, and
        the request cut to start at that message (see `follow_up`); None without one."""
        asked = follow_up(body)
        if asked is None:
            return None
        with self._lock:
            scenarios = [(i, s) for i, s in enumerate(self._scenarios) if REPLY_TO in s]
        for i, s in scenarios:
            if str(s[REPLY_TO]) in asked[0]:
                return (i, s), asked[1]
        return None

    def judge_reply(self, body: dict[str, Any], plain: bool = False, scored: bool = False) -> Reply:
        """The scenario's `judge` verdict: as a `record_verdict` call, or (`plain`) the one word
        a `claude plugin eval` judge answers."""
        found = self.find(all_text(body), judge=True)
        if found is None:
            excerpt = " ".join(prompt_text(body).split())[:200]
            return Reply(text=f"scripted model server: no scenario matches this judge request: {excerpt}",
                         status=400)
        index, scenario = found
        judge = scenario.get("judge") or {"result": "PASS", "reason": "scripted"}
        if isinstance(judge, list):  # successive calls get successive verdicts (a flaky judge)
            judge = judge[self._next_call(index) % len(judge)]
        judge = dict(judge)
        if "status" in judge and self._take_failure(index, int(judge.get("times", 1))):
            return Reply(text=str(judge.get("message", "scripted error")), status=judge["status"])
        verdict = judge.get("then", judge)
        if scored:  # a Vally judge: its reasons, then the score line (`result` is PASS, FAIL or a number)
            return Reply(text=f"{verdict.get('reason', 'scripted')}\nSCORE: {verdict.get('result', 'PASS')}")
        return Reply(text=str(verdict.get("result", "PASS"))) if plain else verdict_reply(verdict)

    def mock_reply(self, body: dict[str, Any]) -> Reply:
        """An agent mock's answer: the scenario whose `mock-server` is the server played answers
        from its `answers`, the first whose `when` occurs in the current call (its tool and
        arguments; an entry without `when` answers anything), in plain text."""
        system, text = system_text(body), all_text(body)
        current = text.rsplit("Current call: ", 1)[-1]
        with self._lock:
            scenarios = [s for s in self._scenarios if "mock-server" in s]
        scenario = next((s for s in scenarios if f'MCP server "{s["mock-server"]}"' in system), None)
        if scenario is None:
            return Reply(text="scripted model server: no scenario plays this MCP server", status=400)
        for entry in scenario.get("answers") or []:
            if str(entry.get("when", "")) in current:
                return Reply(text=str(entry.get("say", "")))
        return Reply(text="ERROR: no scripted answer")

    def user_reply(self, body: dict[str, Any]) -> Reply:
        """A simulated user's reply: the scenario whose `match` is in the conversation (its first
        prompt) answers from its `user` entries, the first whose `when` occurs in the agent's
        last message (an entry without `when` answers anything)."""
        text = all_text(body)
        with self._lock:
            scenarios = [s for s in self._scenarios if "user" in s and not is_catch_all(s)]
        scenario = next((s for s in scenarios if str(s.get("match", "")) in text), None)
        if scenario is None:
            excerpt = " ".join(text.split())[:200]
            return Reply(text=f"scripted model server: no scenario plays the user here: {excerpt}",
                         status=400)
        said = re.findall(r"<agent>\n(.*?)\n</agent>", text, re.S)
        last = said[-1] if said else ""
        for entry in scenario["user"]:
            if str(entry.get("when", "")) in last:
                stop = str(entry.get("stop", "continue"))
                return Reply(calls=((USER_TOOL, {"stop": stop, "message": str(entry.get("say", ""))}),))
        return Reply(calls=((USER_TOOL, {"stop": "agent-finished", "message": ""}),))

    def draft_reply(self, body: dict[str, Any]) -> Reply:
        """The scenario whose `draft-for` is in the skill under test answers with its `draft`: an
        object as the drafted cases, anything else as a plain text (a garbage answer)."""
        skill = drafted_skill(body)
        with self._lock:
            scenarios = list(self._scenarios)
        for scenario in scenarios:
            wanted = scenario.get("draft-for")
            if isinstance(wanted, str) and wanted and wanted in skill:
                draft = scenario.get("draft")
                if isinstance(draft, dict):
                    return Reply(calls=((DRAFT_TOOL, draft),))
                return Reply(text=str(draft))
        return Reply(text=f"scripted model server: no scenario drafts for: {' '.join(skill.split())[:200]}",
                     status=400)

    def proposal_reply(self, body: dict[str, Any]) -> Reply:
        """The scenario whose `propose-for` is in the skill's current description (the request's
        `<skill name=...>` section) answers with its `propose` list of descriptions."""
        found = re.search(r'<skill name="[^"]*">(.*?)</skill>', all_text(body), re.S)
        skill = found.group(1) if found else ""
        with self._lock:
            scenarios = list(self._scenarios)
        for scenario in scenarios:
            wanted = scenario.get("propose-for")
            if isinstance(wanted, str) and wanted and wanted in skill:
                texts = scenario.get("propose") or []
                candidates = [{"description": str(t), "rationale": "scripted"} for t in texts]
                return Reply(calls=((PROPOSE_TOOL, {"candidates": candidates}),))
        return Reply(text=f"scripted model server: no scenario proposes for: {' '.join(skill.split())[:200]}",
                     status=400)

    def toss(self, index: int, step: dict[str, Any]) -> dict[str, Any]:
        """A `coin` step as the step it lands on (drawn from scenario `index`'s stream, counted in
        `coin_draws`); any other step as it is."""
        while "coin" in step:
            coin, rest = step["coin"], {k: v for k, v in step.items() if k != "coin"}
            seed = str(coin.get("seed", self.seed))
            with self._lock:
                stream = self._coins.setdefault((index, seed), random.Random(f"{seed}:{index}"))
                side = "heads" if stream.random() < float(coin["p"]) else "tails"
                counts = self._draws.setdefault(index, {"heads": 0, "tails": 0})
                counts[side] += 1
            step = {**rest, **dict(coin.get(side) or {"text": "Done."})}
        return step

    @property
    def coin_draws(self) -> dict[int, dict[str, int]]:
        """The coin draws so far: scenario index -> {"heads": n, "tails": m} (a copy)."""
        with self._lock:
            return {index: dict(counts) for index, counts in self._draws.items()}

    def _next_call(self, index: int) -> int:
        with self._lock:
            n = self._judge_calls.get(index, 0)
            self._judge_calls[index] = n + 1
            return n

    def _take_failure(self, index: int, times: int) -> bool:
        with self._lock:
            used = self._judge_failures.get(index, 0)
            if used >= times:
                return False
            self._judge_failures[index] = used + 1
            return True


def check_coins(scenario: dict[str, Any]) -> None:
    """Refuse a malformed `coin` step where the scenario is given, not mid-session: `p` a number
    from 0 to 1, `heads` and `tails` steps (mappings) when given."""
    steps = [*(scenario.get("agent") or []), *(scenario.get("without-skill") or [])]
    while steps:
        step = steps.pop()
        coin = step.get("coin") if isinstance(step, dict) else None
        if coin is None:
            continue
        p = coin.get("p") if isinstance(coin, dict) else None
        if not isinstance(p, int | float) or isinstance(p, bool) or not 0 <= p <= 1:
            raise ValueError(f"a coin needs `p`, a number from 0 to 1: {json.dumps(coin, default=str)}")
        for side in ("heads", "tails"):
            if not isinstance(coin.get(side, {}), dict):
                raise ValueError(f"a coin's `{side}` is a step (a mapping): {json.dumps(coin, default=str)}")
            steps.append(coin.get(side, {}))


def load_scenarios(path: Path) -> list[dict[str, Any]]:
    """Scenarios from a JSON or YAML file: a list, or a mapping with a `scenarios` list (and
    optionally a `seed`: see `load_seed`)."""
    data = _load(path)
    return list(data["scenarios"] if isinstance(data, dict) else data)


def load_seed(path: Path) -> int | str | None:
    """A scenario file's top-level `seed` (its mapping form), the coins' seed when the server is
    given none; None without one."""
    data = _load(path)
    return data.get("seed") if isinstance(data, dict) else None


def _load(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    if path.suffix in (".yaml", ".yml"):
        import yaml  # only the YAML form needs it

        return yaml.safe_load(text)
    return json.loads(text)
