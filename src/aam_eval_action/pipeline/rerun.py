"""A re-executed agent session: the real CLI run again, its model calls answered from the recording.

The workspace, the package install and the CLI are exactly those of a live session
(`live.run_session`); only the model is a `ReplayProxy` on 127.0.0.1 with no upstream, and
the CLI holds a dummy key. Tools, hooks, skills and scripts run for real, so the session's
outcome is graded as it is, not read back.

When the CLI asks something the recording cannot answer, the proxy refuses with the
divergence. Under `auto` with a key, the proxy instead sends that request and everything
after it to the real upstream (continue-live): the session completes, its new traffic
replaces the recording, and only the live turns are charged to this run.
"""

from __future__ import annotations

from dataclasses import dataclass

from aam_eval_action.loader import LoadedCase
from aam_eval_action.pipeline.context import CaseContext
from aam_eval_action.pipeline.live import DUMMY_KEY, ModelRoute, run_session
from aam_eval_action.replay import traffic_store
from aam_eval_action.replay.agent_cassette import CassetteError
from aam_eval_action.replay.cli_version import CliVersionError, check_installed
from aam_eval_action.replay.decision import not_reexecutable
from aam_eval_action.replay.divergence import Divergence
from aam_eval_action.replay.proxy import ReplayProxy, Upstream, upstream_for
from aam_eval_action.replay.traffic import ModelTraffic, Normaliser, TrafficError, usage
from aam_eval_action.replay.volatile import compile_masks
from aam_eval_action.session import Session


@dataclass(frozen=True)
class Rerun:
    """One re-executed attempt."""

    session: Session
    """What the CLI produced (graded as is when it did not diverge, or went on live)."""
    divergence: Divergence | None
    """The first request the recording could not answer."""
    traffic: ModelTraffic
    """The session's traffic: the recording's answers, then any live ones (marked `live`)."""
    live_requests: int
    """Model requests sent to the upstream after the divergence."""

    @property
    def live_from_turn(self) -> int | None:
        """The first live model turn, when the session went on live."""
        return self.divergence.turn if self.divergence and self.live_requests else None

    @property
    def live_share(self) -> float:
        """The live turns' share of the session's tokens (to charge only them to this run)."""
        total = _tokens(usage(self.traffic.exchanges))
        live = _tokens(usage(e for e in self.traffic.exchanges if e.live))
        return live / total if total else 0.0


def continue_upstream(ctx: CaseContext) -> Upstream | None:
    """Where a diverged session goes on: the real upstream, under `auto` with a key; else nowhere."""
    from aam_eval_action.engines.registry import ENGINES

    s = ctx.settings
    provider = ENGINES[s.engine].provider_for(s.model)
    key = s.api_key(provider)
    if s.mode != "auto" or not key:
        return None
    return upstream_for(s.engine, s.agent_env, key, network=s.network_env, model=s.model)


def rerun_session(ctx: CaseContext, loaded: LoadedCase, traffic: ModelTraffic, live: bool = True) -> Rerun:
    """The case run by the real CLI against `traffic` (CliVersionError for another CLI version,
    or for a recording that cannot be re-executed at all), the volatile values learnt for that
    CLI version masked (CassetteError when its store is damaged). `live=False`: a divergence
    never goes on live (nothing may be spent)."""
    unusable = not_reexecutable(traffic)
    if unusable:
        raise CliVersionError(f"cannot re-execute: {unusable}")
    check_installed(traffic, ctx.settings.runner_env)
    upstream = continue_upstream(ctx) if live else None
    try:
        masks = traffic_store.load_masks(ctx.settings.cassettes, traffic.cli, traffic.cli_version)
    except TrafficError as exc:
        raise CassetteError(str(exc)) from None
    ignore = [*ctx.settings.rerun_ignore, *compile_masks(masks)]

    def replay_proxy(normaliser: Normaliser) -> ReplayProxy:
        return ReplayProxy(traffic, normaliser, ignore, continue_upstream=upstream)

    session, proxy = run_session(ctx, loaded, ModelRoute(replay_proxy, key=DUMMY_KEY))
    assert isinstance(proxy, ReplayProxy)
    if proxy.failures:
        session.error = session.error or f"replay proxy failed: {proxy.failures[0]}"
    return Rerun(session, proxy.divergence, proxy.traffic(), proxy.live_requests)


def live_cost(runs: list[Rerun]) -> float | None:
    """What the live turns cost: each session's reported cost times its live share of tokens."""
    costs = [r.session.cost_usd * r.live_share for r in runs if r.session.cost_usd is not None]
    return round(sum(costs), 6) if costs else None


def _tokens(counts: dict[str, int]) -> int:
    return sum(v for k, v in counts.items() if k.endswith("tokens"))
