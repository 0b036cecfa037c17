"""The diff of a head report against a base report: what the PR changed, case by case.

Pure functions over report models. The diff reads reports only, so a report from another
machine or an older version diffs as long as it loads.
"""

from __future__ import annotations

from aam_eval_action.dice import estimate, weigh
from aam_eval_action.dice import text as dice_text
from aam_eval_action.diff_model import (
    CATEGORIES,
    NOT_PASSING,
    STALE_MISSES,
    CaseDiff,
    Category,
    DivergedCase,
    Headline,
    LostListing,
    MatrixCell,
    MatrixRow,
    MovedPrompt,
    PairComparison,
    PairDiff,
    PluginDiff,
    ReportDiff,
    RerecordedCase,
    RunTotals,
    StaleCase,
)
from aam_eval_action.report import (
    CaseResult,
    Pair,
    Report,
    plugins_without_cases,
    report_pairs,
    split_by_pair,
    summarize,
    was_graded,
)
from aam_eval_action.stats import ALPHA, fisher_exact, newcombe

__all__ = [
    "CATEGORIES",
    "NOT_PASSING",
    "STALE_MISSES",
    "CaseDiff",
    "Category",
    "DivergedCase",
    "Headline",
    "LostListing",
    "MatrixCell",
    "MatrixRow",
    "MovedPrompt",
    "PairComparison",
    "PairDiff",
    "PluginDiff",
    "ReportDiff",
    "RerecordedCase",
    "RunTotals",
    "StaleCase",
]


def diff_reports(base: Report | None, head: Report) -> ReportDiff:
    """Compare the head report against the base report (None: no baseline at all).

    Reports of several engines or models are compared pair by pair (a single-pair base
    meets the head's pair of the same engine and model), then gathered into one diff.
    """
    matrix = head.pairs or (base is not None and base.pairs)
    diff = _diff_matrix(base, head) if matrix else _diff_pair(base, head)
    diff.labels = head.labels
    from aam_eval_action.render.crowding import lost_listings

    diff.lost_listing = [LostListing(engine=e, model=m, skill=s, base=b, head=h)
                         for e, m, s, b, h in lost_listings(base, head)]
    diff.neighbors = sorted({n for v in head.listings or [] for n in v.neighbor_names})
    for moved in diff.moved:
        moved.neighbor = moved.head in diff.neighbors or None
    diff.empty, diff.plugins_without_cases = head.summary.empty, plugins_without_cases(head)
    plugins = _plugin_names(base, head)
    if len(plugins) > 1:
        diff.plugins = [PluginDiff.of(diff_reports(*_only(base, head, p)), plugin=p) for p in plugins]
    return diff


def _plugin_names(base: Report | None, head: Report) -> list[str]:
    """The plugins of either report, the head's first."""
    names = [p.name for p in head.plugins or []] + [c.plugin for c in head.cases if c.plugin]
    names += [p.name for p in base.plugins or []] + [c.plugin for c in base.cases if c.plugin] if base else []
    return list(dict.fromkeys(names))


def _only(base: Report | None, head: Report, plugin: str) -> tuple[Report | None, Report]:
    """Both reports with only one plugin's cases (no plugin list: not split again)."""
    def part(report: Report) -> Report:
        cases = [c for c in report.cases if c.plugin == plugin]
        return report.model_copy(update={"cases": cases, "plugins": None, "summary": summarize(cases)})

    return (part(base) if base else None), part(head)


def _diff_matrix(base: Report | None, head: Report) -> ReportDiff:
    bases = {report_pairs(b)[0]: b for b in split_by_pair(base)} if base else {}
    heads = split_by_pair(head)
    order = [report_pairs(h)[0] for h in heads]
    diffs = [_diff_pair(bases.get(pair), part) for pair, part in zip(order, heads, strict=True)]
    for (engine, model), d in zip(order, diffs, strict=True):
        entries: list[CaseDiff | StaleCase | DivergedCase | RerecordedCase | MovedPrompt] = [
            *d.cases, *d.stale, *d.diverged, *d.rerecorded, *d.moved]
        for entry in entries:
            entry.engine, entry.model = engine, model
    compared = [cell for pair, part in zip(order, heads, strict=True)
                for cell in _compared(bases.get(pair), part)]
    cases = sorted((c for d in diffs for c in d.cases),
                   key=lambda c: (CATEGORIES.index(c.category), c.name,
                                  order.index((c.engine or "", c.model or ""))))
    gathered = _assemble(base, head, cases, compared, [s for d in diffs for s in d.stale],
                         [v for d in diffs for v in d.diverged], [r for d in diffs for r in d.rerecorded])
    matrix = _matrix(order, diffs)
    return gathered.model_copy(update={
        "moved": [m for d in diffs for m in d.moved],
        "confinement": sorted({c for d in diffs for c in d.confinement}),
        "pairs": [_pair_diff(pair, d) for pair, d in zip(order, diffs, strict=True)],
        "matrix": matrix,
        "pairs_agree": all(row.agree for row in matrix),
        "comparisons": compare_pairs(heads),
    })


def _pair_diff(pair: Pair, d: ReportDiff) -> PairDiff:
    diff: PairDiff = PairDiff.of(d, engine=pair[0], model=pair[1])
    return diff


def _matrix(order: list[Pair], diffs: list[ReportDiff]) -> list[MatrixRow]:
    """Case × pair, in case-name order."""
    by_pair = [{c.name: c for c in d.cases} for d in diffs]
    names = sorted({name for cells in by_pair for name in cells})
    rows = []
    for name in names:
        found = [cells.get(name) for cells in by_pair]
        first = next(c for c in found if c is not None)
        graded = {c.head_verdict for c in found
                  if c is not None and c.head_verdict in ("PASS", "FAIL") and not c.replay_miss}
        rows.append(MatrixRow(
            name=name, file=first.file, line=first.line, agree=len(graded) <= 1,
            cells=[MatrixCell(base_verdict=c.base_verdict, head_verdict=c.head_verdict,
                              category=c.category) if c else None for c in found],
        ))
    return rows


def compare_pairs(parts: list[Report]) -> list[PairComparison]:
    """Each pair of a run against its first: pass rates over the cases both graded, the
    interval of the change and, when both repeated their cases, Fisher's exact test on the
    passing attempts (the question "did the other model do better?")."""
    if len(parts) < 2:
        return []
    ref = parts[0]
    ref_pair = report_pairs(ref)[0]
    found = []
    for part in parts[1:]:
        pair = report_pairs(part)[0]
        mine = {c.name: c for c in part.cases if was_graded(c)}
        both = [(c, mine[c.name]) for c in ref.cases if was_graded(c) and c.name in mine]
        ref_rate, rate = _rate([a for a, _ in both]), _rate([b for _, b in both])
        comparison = PairComparison(
            engine=pair[0], model=pair[1], reference_engine=ref_pair[0], reference_model=ref_pair[1],
            compared=len(both), reference_rate=ref_rate, rate=rate,
            delta_pp=None if rate is None or ref_rate is None else round_value((rate - ref_rate) * 100),
            delta_ci_pp=_delta_interval(both),
            better=[a.name for a, b in both if a.verdict != "PASS" and b.verdict == "PASS"],
            worse=[a.name for a, b in both if a.verdict == "PASS" and b.verdict != "PASS"],
        )
        counts = [(pass_counts(a), pass_counts(b)) for a, b in both]
        if counts and all(na > 1 and nb > 1 for (_, na), (_, nb) in counts):
            rp, rn = sum(c[0][0] for c in counts), sum(c[0][1] for c in counts)
            op, on = sum(c[1][0] for c in counts), sum(c[1][1] for c in counts)
            p = fisher_exact(rp, rn - rp, op, on - op)
            comparison.reference_passes, comparison.passes = f"{rp}/{rn}", f"{op}/{on}"
            comparison.p_value, comparison.significant = round(p, 4), p < ALPHA
        found.append(comparison)
    return found


def _diff_pair(base: Report | None, head: Report) -> ReportDiff:
    """The diff of one engine + model."""
    diff = _assemble(
        base, head, _case_diffs(base, head), _compared(base, head),
        [_stale(c) for c in head.cases if c.replay_miss in STALE_MISSES],
        [_diverged(c) for c in head.cases if c.replay_miss == "diverged"],
        _rerecorded(head),
    )
    diff.moved = moved_prompts(base, head)
    diff.confinement = sorted({c.confinement for c in head.cases if c.confinement})
    return diff


def moved_prompts(base: Report | None, head: Report) -> list[MovedPrompt]:
    """The trigger prompts graded on both sides whose fired skill changed, by name."""
    if base is None:
        return []
    before = {c.name: c for c in base.cases if c.routed_to is not None and c.verdict != "ERROR"}
    return [
        MovedPrompt(name=c.name, prompt=c.prompt or "", base=before[c.name].routed_to or "none",
                    head=c.routed_to, expected=c.expected_skill, file=c.file, line=c.line)
        for c in head.cases
        if c.routed_to is not None and c.verdict != "ERROR" and c.name in before
        and before[c.name].routed_to != c.routed_to
    ]


def _assemble(
    base: Report | None, head: Report, cases: list[CaseDiff], compared: list[tuple[CaseResult, CaseResult]],
    stale: list[StaleCase], diverged: list[DivergedCase], rerecorded: list[RerecordedCase],
) -> ReportDiff:
    """The diff from its entries: counts, regressions and rates over `cases` and `compared`."""
    regressed = [c for c in cases if c.category == "regressed"]
    base_rate, head_rate = _rate([b for b, _ in compared]), _rate([h for _, h in compared])
    noise = [c for c in regressed if c.significant is False]
    flaky = [c for c in regressed if not_blamed(c) and c.significant is None]
    return ReportDiff(
        package=head.package.name,
        engine=head.config.engine,
        model=head.config.model or head.agent.model,
        judge=head.config.judge or head.judge.model,
        mode=head.config.mode,
        interrupted=bool(head.interrupted),
        base=_totals(base) if base else None,
        head=_totals(head),
        compared=len(compared),
        base_compared_rate=base_rate,
        head_compared_rate=head_rate,
        pass_rate_delta_pp=None if base_rate is None or head_rate is None
        else round_value((head_rate - base_rate) * 100),
        cost_delta_usd=_cost_delta(base, head),
        duration_delta_seconds=round_value(head.duration_seconds - base.duration_seconds) if base else None,
        counts={cat: sum(c.category == cat for c in cases) for cat in CATEGORIES},
        regressions=len(regressed) - len(noise) - len(flaky),
        flaky_regressions=len(flaky),
        noise_regressions=len(noise),
        repeated=any(c.significant is not None for c in cases),
        pass_rate_delta_ci_pp=_delta_interval(compared),
        cases=cases,
        stale=stale,
        diverged=diverged,
        package_path=head.config.package_path,
        rerecorded=rerecorded,
    )


def _rerecorded(head: Report) -> list[RerecordedCase]:
    return [
        RerecordedCase(name=c.name, provenance=c.cassette_provenance or "unknown",
                       head_verdict=c.verdict)
        for c in head.cases if c.cassette_changed
    ]


def _case_diffs(base: Report | None, head: Report) -> list[CaseDiff]:
    base_cases = {c.name: c for c in base.cases} if base else {}
    head_cases = {c.name: c for c in head.cases}
    names = list(head_cases) + [n for n in base_cases if n not in head_cases]
    diffs = [_case_diff(base_cases.get(n), head_cases.get(n)) for n in names]
    return sorted(diffs, key=lambda d: (CATEGORIES.index(d.category), d.name))


def _case_diff(base: CaseResult | None, head: CaseResult | None) -> CaseDiff:
    """One entry; the head's details win, the base's fill in for a removed case; where the two
    sides' counts were weighed (`dice.py`), the decision on them."""
    found = _plain_diff(base, head)
    evidence = weigh(base, head)
    history = head.history if head else None
    if history is not None and history.attempts:
        found.history = history.text
    if evidence is None:
        return found
    found.evidence, found.evidence_text = evidence, dice_text(evidence)
    found.base_passes = f"{evidence.before_passes}/{evidence.before_attempts}"
    found.head_passes = f"{evidence.now_passes}/{evidence.now_attempts}"
    found.p_value = round(evidence.p_value, 4) if evidence.p_value is not None else None
    found.significant = evidence.decision == "regressed"
    if evidence.decision == "regressed":
        found.category = "regressed"
    elif evidence.decision == "not-shown":
        found.category = "not-shown"
    elif found.category == "regressed" and evidence.decision == "holds":
        found.category = "unchanged"
    return found


def _plain_diff(base: CaseResult | None, head: CaseResult | None) -> CaseDiff:
    main = head or base
    assert main is not None  # every name comes from one of the two reports
    return CaseDiff(
        name=main.name,
        title=main.title,
        category=categorize(base, head),
        target=main.target,
        base_verdict=base.verdict if base else None,
        head_verdict=head.verdict if head else None,
        file=main.file,
        line=main.line,
        failed_checks=_failed_checks(head),
        judge_reason=_judge_reason(main),
        error=main.error,
        cost_usd=main.cost_usd,
        flaky=bool((base and base.flaky) or (head and head.flaky)),
        replay_miss=head.replay_miss if head else None,
        base_replay_miss=base.replay_miss if base else None,
        **_repeats(base, head),
        judge_votes=_votes(head),
        baseline_verdict=head.baseline_verdict if head else None,
        skill_not_needed=head.skill_not_needed if head else None,
        source=main.source,
        skipped_checks=main.skipped_checks or None,
        label=_label_note(head),
        judge_advisory=head.judge_advisory if head else None,
        budget=head.error if head and head.budget else None,
        unstable=head.self_check.unstable if head and head.self_check else None,
        **_conversation(base, head),
        base_score=base.score if base else None,
        head_score=head.score if head else None,
        score_without=head.score_without if head else None,
        base_delta=base.delta if base else None,
        head_delta=head.delta if head else None,
    )


def _conversation(base: CaseResult | None, head: CaseResult | None) -> dict[str, int | None]:
    """A conversation's turns on both sides and, on the head, the turn where a re-execution first
    differed from its recording, and whether it went on live from there (all None for one turn)."""
    main = head or base
    changed = changed_turn(head) if head else None
    live = changed if head is not None and head.live_from_turn is not None else None
    return {"turns": main.turns if main else None, "base_turns": base.turns if base and head else None,
            "changed_at_turn": changed, "live_from_user_turn": live}


def changed_turn(case: CaseResult) -> int | None:
    """The conversation turn where a re-executed conversation first differed from its recording."""
    if case.changed_at_turn is not None:
        return case.changed_at_turn
    found = case.miss.divergence if case.miss else None
    return found.user_turn if found else None


def _label_note(case: CaseResult | None) -> str | None:
    """`overruled by a person (alice): PASS, the judge said FAIL: <reason>`, or a stale label."""
    label = case.label if case else None
    if case is None or label is None:
        return None
    if label.stale:
        return f"label by {label.by} is stale ({label.why_stale}): it no longer decides"
    judge = case.judge_verdict.result if case.judge_verdict else None
    if judge == label.verdict:
        return f"confirmed by a person ({label.by}): {label.reason}"
    return f"overruled by a person ({label.by}): {label.verdict}, the judge said {judge}: {label.reason}"


def not_blamed(c: CaseDiff) -> bool:
    """A regression not blamed on the PR: within noise, or flaky where significance is unknown."""
    return c.significant is False or (c.significant is None and c.flaky)


def pass_counts(case: CaseResult) -> tuple[int, int]:
    """(passing attempts, attempts) of a case: its attempts when repeated, else its verdict."""
    if case.attempts:
        return sum(a.verdict == "PASS" for a in case.attempts), len(case.attempts)
    return int(case.verdict == "PASS"), 1


def _repeats(base: CaseResult | None, head: CaseResult | None) -> dict[str, object]:
    """Pass counts on both sides and, when both were repeated, Fisher's exact test on them."""
    if base is None or head is None:
        return {}
    (bp, bn), (hp, hn) = pass_counts(base), pass_counts(head)
    if bn == 1 and hn == 1:
        return {}
    found: dict[str, object] = {"base_passes": f"{bp}/{bn}", "head_passes": f"{hp}/{hn}"}
    if bn > 1 and hn > 1 and not base.replay_miss and not head.replay_miss:
        p = fisher_exact(bp, bn - bp, hp, hn - hp)
        found |= {"p_value": round(p, 4), "significant": p < ALPHA}
    return found


def _votes(case: CaseResult | None) -> str | None:
    votes = case.judge_verdict.votes if case and case.judge_verdict else None
    if not votes:
        return None
    passes = sum(v.result == "PASS" for v in votes)
    return f"{passes} PASS · {len(votes) - passes} FAIL"


def _delta_interval(compared: list[tuple[CaseResult, CaseResult]]) -> list[float] | None:
    """95% interval of the head-minus-base pass rate over the cases graded on both sides, in
    percentage points."""
    if not compared:
        return None
    n = len(compared)
    base_passed = sum(b.verdict == "PASS" for b, _ in compared)
    head_passed = sum(h.verdict == "PASS" for _, h in compared)
    low, high = newcombe(base_passed, n, head_passed, n)
    return [round_value(low * 100, 1), round_value(high * 100, 1)]


def categorize(base: CaseResult | None, head: CaseResult | None) -> Category:
    """The category of one case; a SKIP on either side is `unchanged` (nothing to compare)."""
    if base is None:
        return "new"
    if head is None:
        return "removed"
    if base.replay_miss:
        return "no-baseline"
    if head.replay_miss in STALE_MISSES:
        # Not evaluated at all: the PR changed an input without re-recording. That is its own
        # finding (re-record), not a regression of the agent.
        return "stale"
    if head.api_down:
        # The model API kept answering errors: nothing was measured, so nothing regressed.
        return "not-run"
    if head.replay_miss == "diverged":
        # Re-executed against the recording, the agent met a different tool result or request:
        # a finding about the change, reported apart, neither a pass nor a regression.
        return "diverged"
    before, after = base.verdict, head.verdict
    if before == "PASS" and after in NOT_PASSING:
        return "regressed"
    if before in NOT_PASSING and after == "PASS":
        return "fixed"
    if before in NOT_PASSING and after in NOT_PASSING:
        return "still-failing"
    return "unchanged"


def _judge_reason(case: CaseResult) -> str | None:
    """What the judge said; nothing when it was not asked (a SKIP says why not, not what it thought)."""
    jv = case.judge_verdict
    return (jv.reason or None) if jv and jv.result != "SKIP" else None


def _failed_checks(case: CaseResult | None) -> list[str]:
    if case is None:
        return []
    return [name for name, result in case.deterministic_checks.items() if result == "FAIL"]


def _stale(case: CaseResult) -> StaleCase:
    """Why the case missed, without the re-record command the comment shows on its own."""
    why = case.miss.reason if case.miss else _legacy_reason(case)
    return StaleCase(name=case.name, reason=why, file=case.file, line=case.line)


def _diverged(case: CaseResult) -> DivergedCase:
    found = case.miss.divergence if case.miss else None
    changes = case.miss.changes if case.miss else []
    if found is None:
        return DivergedCase(name=case.name, title=case.title, recorded=case.error, changes=changes,
                            file=case.file, line=case.line, user_turn=case.changed_at_turn)
    return DivergedCase(
        name=case.name, title=case.title, turn=found.turn, tool=found.tool, tool_input=found.tool_input,
        path=found.path or None, recorded=found.recorded, live=found.live, changes=changes,
        file=case.file, line=case.line, user_turn=changed_turn(case),
    )


def _legacy_reason(case: CaseResult) -> str:
    """Reports from before misses were data carry the reason only inside `error`."""
    why = (case.error or case.replay_miss or "").split("; re-record", 1)[0].split("; record it", 1)[0]
    return why.removeprefix("judge replay miss: ").removeprefix("replay miss: ")


def _totals(report: Report) -> RunTotals:
    """One side's numbers, computed from its cases (reports of older versions lack some counts)."""
    s = report.summary
    graded = [c for c in report.cases if was_graded(c)]
    return RunTotals(
        total=s.total,
        passed=s.passed,
        failed=s.failed,
        errored=s.errored,
        skipped=s.skipped,
        pass_rate=_rate(graded) or 0.0,
        graded=len(graded),
        not_replayable=sum(c.replay_miss is not None for c in report.cases),
        api_down=sum(bool(c.api_down) for c in report.cases),
        cost_usd=s.cost_usd,
        run_cost_usd=s.run_cost_usd,
        duration_seconds=report.duration_seconds,
        replayed=s.replayed,
        baseline_pass_rate=s.baseline_pass_rate,
        lift_pp=s.lift_pp,
        skill_not_needed=s.skill_not_needed,
        trigger_precision=s.trigger_precision,
        trigger_recall=s.trigger_recall,
        trigger_cases=s.trigger_cases,
        over_budget=sum(c.budget is not None for c in report.cases) or None,
        max_usd=s.max_usd,
        spent_usd=s.spent_usd,
        unstable=sum(bool(c.self_check and c.self_check.unstable) for c in report.cases) or None,
        routing=s.routing,
        drafted_unreviewed=s.drafted_unreviewed,
        score=s.score,
        mean_delta=s.mean_delta,
        estimate=s.estimate or estimate(report.cases),
    )


def _compared(base: Report | None, head: Report) -> list[tuple[CaseResult, CaseResult]]:
    """(base, head) pairs of the cases both sides graded: the headline compares only these."""
    if base is None:
        return []
    base_cases = {c.name: c for c in base.cases if was_graded(c)}
    return [(base_cases[c.name], c) for c in head.cases if was_graded(c) and c.name in base_cases]


def _rate(cases: list[CaseResult]) -> float | None:
    """Share of passing cases, rounded as the report rounds; None for no case."""
    return round(sum(c.verdict == "PASS" for c in cases) / len(cases), 4) if cases else None


def _cost_delta(base: Report | None, head: Report) -> float | None:
    if base is None or base.summary.cost_usd is None or head.summary.cost_usd is None:
        return None
    return round_value(head.summary.cost_usd - base.summary.cost_usd, 6)


def round_value(value: float, digits: int = 2) -> float:
    """Round away float noise (0.1 + 0.2) and negative zero."""
    return round(value, digits) + 0.0
