"""`max-usd`: a hard cap on what a run spends on model calls.

Before a case spends anything (a live or recorded session, a live judge call, a re-executed
session that may go on live), its cost is estimated: from its recording when it has one (what
the recorded attempts cost, as the CLI reported it or from their tokens at the model's price,
plus the judge's request at the judge's price), else from the median recorded cost of the run's
other cases on the same engine and model, else from a typical session's tokens at the model's
price (eval-config `prices` adds models the built-in list lacks). A case whose estimate does
not fit what is left of the cap is not run: it is reported *not graded (budget)* with the
estimate and the cap, never as failed. A case without any estimate (no price known) is not
run under a cap either.

Paid work runs one case at a time under a cap (replays stay parallel), and each case is
charged what it actually cost before the next one is admitted: so a run never spends more
than the cap plus one case's overrun of its estimate, and the report says what it spent.
"""

from __future__ import annotations

import contextlib
import statistics
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aam_eval_action.loader import LoadedCase
from aam_eval_action.pricing import Price, price_of, tokens_cost, usage_of
from aam_eval_action.session import Session, Usage

if TYPE_CHECKING:
    from aam_eval_action.replay.agent_cassette import AgentCassette
    from aam_eval_action.replay.traffic import ModelTraffic
    from aam_eval_action.settings import RunSettings

TYPICAL_SESSION = Usage(input_tokens=60_000, output_tokens=3_000, cache_read_input_tokens=200_000)
"""A session's tokens when nothing of the case or its engine was recorded yet."""
JUDGE_OUTPUT_TOKENS = 1024
"""A judge answer is capped at this many tokens: the estimate assumes all of them."""
CHARS_PER_TOKEN = 4


class OverBudget(Exception):
    """A case whose estimated cost does not fit what is left of the cap."""

    def __init__(self, estimate: float | None, basis: str, cap: float, left: float) -> None:
        self.estimate, self.basis, self.cap, self.left = estimate, basis, cap, left
        super().__init__(self.message)

    @property
    def message(self) -> str:
        if self.estimate is None:
            return f"not graded (budget): {self.basis}, so it cannot be held to max-usd ${self.cap:.4g}"
        return (f"not graded (budget): estimated ${self.estimate:.4f} ({self.basis}) but "
                f"${max(self.left, 0):.4f} of max-usd ${self.cap:.4g} is left")


@dataclass(frozen=True)
class Estimate:
    usd: float | None
    """None: no price is known for a model the case would call."""
    basis: str
    """`recording`, `similar cases`, `prices`, or why there is no estimate."""


class Budget:
    """The run's spending, shared by every case of the run (thread-safe).

    Without a cap it only adds up what was spent.
    """

    def __init__(self, cap: float | None) -> None:
        self.cap = cap
        self.spent = 0.0
        self._lock = threading.Lock()
        self._paid = threading.Lock()
        self._held = threading.local()

    @property
    def left(self) -> float:
        return (self.cap - self.spent) if self.cap is not None else float("inf")

    def charge(self, usd: float | None) -> None:
        """Add what a call actually cost."""
        if usd:
            with self._lock:
                self.spent = round(self.spent + usd, 6)

    @contextlib.contextmanager
    def paid(self, estimate: Estimate) -> Iterator[None]:
        """Hold the run's one paid slot for a case whose estimate fits (OverBudget when it does
        not); its real cost is charged inside, before the next case is admitted."""
        if self.cap is None or getattr(self._held, "slot", False):  # no cap, or the case holds it
            yield
            return
        with self._paid:
            if estimate.usd is None or estimate.usd > self.left:
                raise OverBudget(estimate.usd, estimate.basis, self.cap, self.left)
            self._held.slot = True
            try:
                yield
            finally:
                self._held.slot = False


# --- estimates ---------------------------------------------------------------------------------


def session_cost(session: Session, usage: dict[str, int] | None, model: str, provider: str,
                 prices: dict[str, Price]) -> float | None:
    """What a session cost: as its CLI reported it, else its tokens at the model's price."""
    if session.cost_usd is not None:
        return session.cost_usd
    price = price_of(session.model or model, prices) or price_of(model, prices)
    tokens = session.usage or (usage_of(usage) if usage else None)
    if price is None or tokens is None:
        return None
    return tokens_cost(tokens, price, provider)


def judge_cost(text_chars: int, model: str, prices: dict[str, Price]) -> float | None:
    """A judge request of this size, with the longest answer allowed, at the judge's price."""
    price = price_of(model, prices)
    if price is None:
        return None
    usage = Usage(input_tokens=text_chars // CHARS_PER_TOKEN + 400, output_tokens=JUDGE_OUTPUT_TOKENS)
    return tokens_cost(usage, price, "anthropic")


def answered_cost(
    counts: dict[str, int], model: str, provider: str, prices: dict[str, Price]
) -> float | None:
    """What one judge answer cost, from the usage it reported."""
    price = price_of(model, prices)
    return tokens_cost(usage_of(counts), price, provider) if price and counts else None


class Estimator:
    """Estimates for the cases of one engine + model (the median of its recorded cases is
    computed once)."""

    def __init__(self, settings: RunSettings) -> None:
        self.settings = s = settings
        self.prices = {name: Price(p.input, p.output) for name, p in s.config.prices.items()}
        self._median: float | bool | None = False
        self._lock = threading.Lock()

    def case(self, loaded: LoadedCase, repeat: int, with_agent: bool = True) -> Estimate:
        """The case's estimated cost for `repeat` attempts: its agent sessions (unless they are
        replayed) and its judge calls."""
        from aam_eval_action.pipeline.judge import FILES_CAP, OUTPUT_CAP, build_prompt

        s = self.settings
        cassette = self._cassette(loaded)
        recorded = self._attempt_costs(cassette) if cassette and with_agent else []
        agent: float | None = 0.0
        basis = "recording"
        if with_agent:
            if recorded:
                agent = statistics.fmean(recorded) * repeat
            else:
                agent, basis = self._unrecorded()
                agent = agent * repeat if agent is not None else None
        judge = 0.0
        if loaded.case.judge is not None:
            votes = loaded.case.judge.votes
            # What its recorded judge answers cost, else its request's size (the recorded
            # session's, or the largest the caps allow) with the longest answer.
            found = self._recorded_judge(loaded)
            if found is None:
                criteria, prompt = loaded.case.judge.criteria, loaded.case.input.prompt
                size = (len(build_prompt(criteria, prompt, cassette.attempts[0])) if cassette
                        else len(criteria) + len(prompt) + OUTPUT_CAP + FILES_CAP)
                found = judge_cost(size, s.judge_model, self.prices)
            if found is None:
                return Estimate(None, f"no price is known for the judge model {s.judge_model} "
                                      "(add it to eval-config `prices`)")
            judge = found * votes * repeat
        if agent is None:
            return Estimate(None, basis)
        return Estimate(round(agent + judge, 6), basis if with_agent else "judge only")

    def _recorded_judge(self, loaded: LoadedCase) -> float | None:
        """The mean cost of the case's recorded judge answers, by the usage they report."""
        import json

        from aam_eval_action.replay import agent_cassette
        from aam_eval_action.replay.judge_cassette import Player
        from aam_eval_action.replay.untrusted import UntrustedFileError

        s = self.settings
        path = agent_cassette.judge_path(s.cassettes, loaded.case.name, s.cassette_stem)
        try:
            player = Player.load(path, s.cassettes)
        except (UntrustedFileError, ValueError, OSError):
            return None
        costs = []
        for _, response in player.interactions:
            try:
                usage = json.loads(response["body"]["string"]).get("usage")
            except (ValueError, TypeError, AttributeError, KeyError):
                continue
            counts = {k: v for k, v in usage.items() if isinstance(v, int)} if isinstance(usage, dict) else {}
            cost = answered_cost(counts, s.judge_model, s.judge_provider, self.prices)
            if cost is not None:
                costs.append(cost)
        return statistics.fmean(costs) if costs else None

    def _cassette(self, loaded: LoadedCase) -> AgentCassette | None:
        """The case's agent cassette, stale or not (None when it has no usable one)."""
        from aam_eval_action.replay import agent_cassette
        from aam_eval_action.replay.agent_cassette import CassetteError

        s = self.settings
        path = agent_cassette.session_path(s.cassettes, loaded.case.name, s.cassette_stem)
        try:
            return agent_cassette.load(path, s.cassettes)
        except CassetteError:
            return None

    def _attempt_costs(self, cassette: AgentCassette) -> list[float]:
        """What each recorded attempt cost, where that can be told."""
        from aam_eval_action.engines.registry import ENGINES

        s = self.settings
        provider = ENGINES[s.engine].provider_for(s.model) if s.engine in ENGINES else "anthropic"
        costs = []
        for session in cassette.attempts:
            cost = session_cost(session, None, s.model, provider, self.prices)
            if cost is not None:
                costs.append(cost)
        return costs

    def _unrecorded(self) -> tuple[float | None, str]:
        """A case with no recording: the median of the engine + model's recorded cases, else a
        typical session at the model's price."""
        with self._lock:
            if self._median is False:
                self._median = self._recorded_median()
            median = self._median
        if isinstance(median, float):
            return median, "similar cases"
        s = self.settings
        price = price_of(s.model, self.prices)
        if price is None:
            return None, f"no price is known for the model {s.model} (add it to eval-config `prices`)"
        return tokens_cost(TYPICAL_SESSION, price, "anthropic"), "prices"

    def _recorded_median(self) -> float | None:
        from aam_eval_action.replay import agent_cassette
        from aam_eval_action.replay.agent_cassette import CassetteError

        s = self.settings
        costs: list[float] = []
        for path in sorted(s.cassettes.glob(f"*/{s.cassette_stem}.session.yaml")):
            try:
                cassette = agent_cassette.load(path, s.cassettes)
            except CassetteError:
                continue
            if cassette is not None:
                costs += self._attempt_costs(cassette)
        return statistics.median(costs) if costs else None


def traffic_cost(session: Session, traffic: ModelTraffic, model: str, prices: dict[str, Price],
                 live_only: bool = False) -> float | None:
    """What a recorded or re-executed session spent: its CLI's own figure (times the live share
    of its tokens when only its live turns count), else the tokens of its (live) exchanges at the
    model's price."""
    from aam_eval_action.engines.registry import engine_of_cli
    from aam_eval_action.replay.traffic import usage

    exchanges = [e for e in traffic.exchanges if e.live or not live_only]
    if not exchanges:
        return 0.0
    counts = usage(exchanges)
    if session.cost_usd is not None and not live_only:
        return session.cost_usd
    if session.cost_usd is not None:
        total = sum(v for k, v in usage(traffic.exchanges).items() if k.endswith("tokens"))
        part = sum(v for k, v in counts.items() if k.endswith("tokens"))
        return session.cost_usd * part / total if total else 0.0
    engine = engine_of_cli(traffic.cli)
    provider = engine.provider_for(model) if engine else "anthropic"
    price = price_of(session.model or model, prices) or price_of(model, prices)
    return tokens_cost(usage_of(counts), price, provider) if price else None
