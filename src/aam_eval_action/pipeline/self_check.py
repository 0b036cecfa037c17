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

import re

from aam_eval_action.fsutil import runner_checkout
from aam_eval_action.loader import LoadedCase
from aam_eval_action.package import PackageLayout
from aam_eval_action.pipeline.context import CaseContext
from aam_eval_action.pipeline.live import DUMMY_KEY, ModelRoute, run_session
from aam_eval_action.replay import traffic_store
from aam_eval_action.replay.decision import not_reexecutable
from aam_eval_action.replay.divergence import first_difference
from aam_eval_action.replay.proxy import ReplayProxy
from aam_eval_action.replay.traffic import ModelTraffic, Normaliser, TrafficError, full_requests
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


def check_attempts(
    ctx: CaseContext, loaded: LoadedCase, runs: list[tuple[Session, ModelTraffic]],
    layout: PackageLayout | None = None,
) -> list[SelfCheck]:
    """Each attempt's check: the first re-executed, then each later one re-executed only when its
    recording differs from every one checked so far (under the masks known then); an attempt
    recorded the same as an earlier one would re-execute the same, so that check stands for it."""
    s = ctx.settings
    checks: list[SelfCheck] = []
    checked: list[int] = []
    for i, (session, traffic) in enumerate(runs):
        if checked:
            try:
                known = traffic_store.load_masks(s.cassettes, traffic.cli, traffic.cli_version)
            except TrafficError:
                known = []
            ignore = [*s.rerun_ignore, *compile_masks(known)]
            twin = next((j for j in checked if same_recording(runs[j][1], traffic, ignore)), None)
            if twin is not None:
                checks.append(checks[twin].model_copy(update={"runs": 0, "learnt": [], "same_as": twin + 1}))
                continue
        checks.append(self_check(ctx, loaded, traffic, layout, session))
        checked.append(i)
    return checks


def same_recording(a: ModelTraffic, b: ModelTraffic, ignore: list[re.Pattern[str]]) -> bool:
    """Two recordings that a re-execution cannot tell apart: the same CLI, the same exchanges in
    the same conversations, every request equal under `ignore` and every answer equal."""
    if (a.cli, a.cli_version, len(a.exchanges)) != (b.cli, b.cli_version, len(b.exchanges)):
        return False
    pairs = zip(a.exchanges, b.exchanges, full_requests(a), full_requests(b), strict=True)
    return all(x.stream == y.stream and x.conversation == y.conversation and x.response == y.response
               and first_difference(rx, ry, x.stream, ignore) is None for x, y, rx, ry in pairs)


def _rerun(
    ctx: CaseContext, loaded: LoadedCase, traffic: ModelTraffic, layout: PackageLayout | None,
    masks: list[Mask], recorded: Session | None, learn_as: str | None = None,
) -> ReplayProxy:
    ignore = [*ctx.settings.rerun_ignore, *compile_masks(masks)]

    def replay_proxy(normaliser: Normaliser) -> ReplayProxy:
        return ReplayProxy(traffic, normaliser, ignore, learn_as=learn_as)

    route = ModelRoute(replay_proxy, key=DUMMY_KEY, recorded=recorded, later=True)
    _, proxy = run_session(ctx, loaded, route, layout)
    assert isinstance(proxy, ReplayProxy)
    return proxy
