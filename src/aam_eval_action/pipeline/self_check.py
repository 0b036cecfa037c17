"""A recording checks itself: re-executed once against its own traffic, right after it was made.

Nothing changed between the two runs (same package, same CLI, the model's answers served from
the recording), so any request that comes out differently carries a value the CLI makes up
per run. The first re-execution learns such values (`replay/volatile.py`): a difference a
narrow mask explains is masked from then on and the run goes on; when it learnt something, a
second re-execution confirms the masks. The masks go to the CLI version's shared store, so
re-execution and every later recording of that version treat those values as volatile.

A difference no narrow mask explains (free text, a changed structure) leaves the recording
*unstable*: it is kept, reported with the request that differed, and not re-executed later,
where it would diverge on every pull request. No model is called: it costs CLI time only.
"""

from __future__ import annotations

from aam_eval_action.fsutil import runner_checkout
from aam_eval_action.loader import LoadedCase
from aam_eval_action.package import PackageLayout
from aam_eval_action.pipeline.context import CaseContext
from aam_eval_action.pipeline.live import DUMMY_KEY, ModelRoute, run_session
from aam_eval_action.replay import traffic_store
from aam_eval_action.replay.decision import not_reexecutable
from aam_eval_action.replay.proxy import ReplayProxy
from aam_eval_action.replay.traffic import ModelTraffic, Normaliser, TrafficError
from aam_eval_action.replay.volatile import Mask, compile_masks, merge
from aam_eval_action.session import SelfCheck, Session


def self_check(
    ctx: CaseContext, loaded: LoadedCase, traffic: ModelTraffic, layout: PackageLayout | None = None,
    recorded: Session | None = None,
) -> SelfCheck:
    """Re-execute a fresh recording (`recorded`: its session) against itself; learnt masks are
    saved in the store."""
    s = ctx.settings
    unusable = not_reexecutable(traffic)
    if unusable:
        return SelfCheck(clean=False, skipped=unusable)
    try:
        known = traffic_store.load_masks(s.cassettes, traffic.cli, traffic.cli_version)
    except TrafficError:
        known = []  # a damaged store is repaired by this recording's masks
    name = s.package.qualified(loaded.case.name)
    proxy = _rerun(ctx, loaded, traffic, layout, known, recorded, learn_as=name)
    runs, learnt = 1, proxy.learnt
    if proxy.divergence is None and learnt:
        proxy = _rerun(ctx, loaded, traffic, layout, merge(known, learnt), recorded)
        runs += 1
    if learnt:
        traffic_store.add_masks(s.cassettes, traffic.cli, traffic.cli_version, learnt,
                                runner_checkout(s.runner_env))
    unstable = proxy.divergence.message if proxy.divergence else None
    if unstable is None and proxy.failures:
        unstable = f"the replay proxy failed: {proxy.failures[0]}"
    described = [mask.describe() for mask in learnt]
    return SelfCheck(clean=unstable is None, runs=runs, learnt=described,
                     unstable=ctx.redactor.text(unstable) if unstable else None)


def _rerun(
    ctx: CaseContext, loaded: LoadedCase, traffic: ModelTraffic, layout: PackageLayout | None,
    masks: list[Mask], recorded: Session | None, learn_as: str | None = None,
) -> ReplayProxy:
    ignore = [*ctx.settings.rerun_ignore, *compile_masks(masks)]

    def replay_proxy(normaliser: Normaliser) -> ReplayProxy:
        return ReplayProxy(traffic, normaliser, ignore, learn_as=learn_as)

    _, proxy = run_session(ctx, loaded, ModelRoute(replay_proxy, key=DUMMY_KEY, recorded=recorded), layout)
    assert isinstance(proxy, ReplayProxy)
    return proxy
