"""The dice in a diff: a case's two sides weighed from the counts the two reports carry.

- A case whose inputs changed is decided by the sequential rule (`sequential.py`): the head's
  attempts under its inputs against the base's history under the base's. The rule is the one
  the live run sampled by, so `aam-eval diff` says what the run said, from the reports alone.
- A case whose inputs did not change and whose verdict went from PASS to FAIL is weighed against
  its history: the head's new runs against the runs the base already had. Within that noise it
  is not blamed (`within-noise`, "flaky: 14/20 over 20 runs"); a rate that really fell is.
- A change of CLI release or served model between the sides is named as the cause it may be.
"""

from __future__ import annotations

import math

from aam_eval_action.dice_model import CaseHistory, Decision, Evidence, HistorySample, RateEstimate
from aam_eval_action.report_model import CaseResult
from aam_eval_action.sequential import CONFIDENCE, MAX_RUNS, Counts, Rule, decide, flip, more_both, more_runs
from aam_eval_action.stats import Z95


def weigh(base: CaseResult | None, head: CaseResult | None) -> Evidence | None:
    """The evidence on one case, or None when there is nothing to weigh (a side missing, not
    graded, or no history on either side)."""
    if base is None or head is None or head.replay_miss or head.api_down or base.replay_miss:
        return None
    if head.verdict not in ("PASS", "FAIL") or base.verdict not in ("PASS", "FAIL"):
        return None
    if _inputs(base) != _inputs(head):
        return _changed(base, head)
    if base.verdict == "PASS" and head.verdict == "FAIL":
        return _flipped(base, head)
    return None


def _inputs(case: CaseResult) -> str | None:
    """What the case's verdict is drawn under: its history's inputs (session and grading), else
    its session's fingerprint."""
    return case.history.inputs if case.history else case.fingerprint


def _counts(history: CaseHistory | None) -> Counts:
    return Counts(history.passes, history.attempts) if history else Counts(0, 0)


def _rule(head: CaseResult) -> Rule:
    found = head.evidence
    return Rule(confidence=found.confidence, cap=found.cap or MAX_RUNS) if found else Rule()


def _changed(base: CaseResult, head: CaseResult) -> Evidence | None:
    before, now = _counts(base.history), _counts(head.history)
    if not now.attempts and head.evidence is not None:
        now = Counts(head.evidence.now_passes, head.evidence.now_attempts)
    if not before.attempts and head.evidence is not None:  # no base report history: the head's own
        before = Counts(head.evidence.before_passes, head.evidence.before_attempts)
    if not before.attempts or not now.attempts:
        return None
    rule = _rule(head)
    found = decide(before, now, rule)
    sampled = head.evidence
    evidence = Evidence(
        decision=found.outcome or "not-shown", now_passes=now.passes, now_attempts=now.attempts,
        before_passes=before.passes, before_attempts=before.attempts, p_value=round(found.p_value, 6),
        level=round(found.level, 6), confidence=rule.confidence, tolerance=rule.tolerance, cap=rule.cap,
        changed=_epoch_change(base.history, head.history), local=_local(head.history),
    )
    if found.outcome is None:
        more, both = more_runs(before, now, rule), None
        if more is None:
            more = both = more_both(before, now, rule)
        each, runs = _cost_each(head), (more or 0) + (both or 0)
        evidence.why = sampled.why if sampled and sampled.why else _why(now, rule)
        evidence.more_runs, evidence.more_base_runs = more, both
        evidence.more_usd = round(runs * each, 2) if runs and each else None
    return evidence


def _why(now: Counts, rule: Rule) -> str:
    if now.attempts >= rule.cap:
        return f"the cap of {rule.cap} runs"
    return f"{now.attempts} run{'s' if now.attempts != 1 else ''} of the head"


def _flipped(base: CaseResult, head: CaseResult) -> Evidence | None:
    """PASS on the base, FAIL on the head, the same inputs: the head's new runs against the
    runs the base already had (or, where the CLI or served model changed, against the runs of
    the base's stretch)."""
    history = head.history
    if history is None or base.history is None or not base.history.attempts:
        return None
    known = {_key(s) for s in base.history.samples}
    new = [s for s in history.samples if _key(s) not in known]
    now = Counts(sum(s.passes for s in new), sum(s.attempts for s in new)) if new else _verdicts(head)
    changed = _epoch_change(base.history, history)
    before = _counts(base.history)
    if not changed:  # the same stretch: the runs before the new ones
        old = [s for s in history.samples if _key(s) in known]
        before = Counts(sum(s.passes for s in old), sum(s.attempts for s in old)) if old else before
    found = flip(before, now, CONFIDENCE)
    # Blamed when the rate fell beyond its noise; within noise when the history has failed
    # before; else (a steady history too short to tell) not shown, with what telling would take.
    noisy = before.passes < before.attempts or 0 < now.passes < now.attempts
    decision: Decision = "regressed" if found.outcome == "regressed" \
        else "within-noise" if noisy else "not-shown"
    runs = (len(history.samples) - len(new) if new else base.history.runs) + (len(new) or 1)
    evidence = Evidence(decision=decision, now_passes=now.passes, now_attempts=now.attempts,
                        before_passes=before.passes, before_attempts=before.attempts,
                        p_value=round(found.p_value, 6), level=found.level, confidence=CONFIDENCE,
                        changed=changed, local=any(s.where == "local" for s in new),
                        flaky=_over(before.passes + now.passes, before.attempts + now.attempts, runs))
    if decision == "not-shown":
        evidence.why = f"a history of {before.attempts} attempt{'s' if before.attempts != 1 else ''}"
        evidence.more_runs = _more_nights(before, now)
        each = _cost_each(head)
        evidence.more_usd = round(evidence.more_runs * each, 2) if evidence.more_runs and each else None
    return evidence


def _more_nights(before: Counts, now: Counts, most: int = 48) -> int | None:
    """Runs of the head at the rate it shows that would make the fall significant."""
    rate = now.passes / now.attempts
    for extra in range(1, most + 1):
        projected = Counts(now.passes + round(rate * extra), now.attempts + extra)
        if flip(before, projected).outcome == "regressed":
            return extra
    return None


def _key(sample: HistorySample) -> tuple[str, int, int]:
    return sample.at, sample.passes, sample.attempts


def _verdicts(case: CaseResult) -> Counts:
    if case.attempts:
        return Counts(sum(a.verdict == "PASS" for a in case.attempts), len(case.attempts))
    return Counts(int(case.verdict == "PASS"), 1)


def _epoch_change(base: CaseHistory | None, head: CaseHistory | None) -> str | None:
    if base is None or head is None or not base.runs or not head.runs:
        return None
    parts = []
    if base.cli != head.cli:
        parts.append(f"CLI {base.cli or '?'} → {head.cli or '?'}")
    if base.served != head.served:
        parts.append(f"served model {base.served or 'as asked'} → {head.served or 'as asked'}")
    return f"{' and '.join(parts)} between the sides: a cause it may be" if parts else None


def _local(history: CaseHistory | None) -> bool:
    return bool(history and any(s.where == "local" for s in history.samples))


def _cost_each(case: CaseResult) -> float | None:
    attempts = len(case.attempts) if case.attempts else 1
    return case.cost_usd / attempts if case.cost_usd else None


def _over(passes: int, attempts: int, runs: int) -> str:
    return f"{passes}/{attempts} over {runs} run{'s' if runs != 1 else ''}"


def text(evidence: Evidence) -> str:
    """What a person reads: `flaky: 14/20 over 20 runs; within noise: 0/1 now, 14/19 before`."""
    if evidence.decision == "within-noise" and evidence.flaky:
        return f"flaky: {evidence.flaky}; {evidence.text}"
    return evidence.text


# --- the headline rate ----------------------------------------------------------------------


def estimate(cases: list[CaseResult]) -> RateEstimate | None:
    """The mean of each graded case's rate (its history's, else this run's attempts), with a
    95% interval from each rate's binomial variance; None when no case has a history."""
    rates: list[tuple[int, int]] = []
    for case in cases:
        if case.verdict not in ("PASS", "FAIL") or case.replay_miss or case.api_down:
            continue
        history = case.history
        rates.append((history.passes, history.attempts) if history and history.attempts
                     else (_verdicts(case).passes, _verdicts(case).attempts))
    if not rates or not any(c.history and c.history.attempts for c in cases):
        return None
    k = len(rates)
    mean = sum(p / n for p, n in rates) / k
    # Each rate shrunk half a pass toward 1/2 for its variance, so a 5/5 case still counts some.
    variance = sum(((p + 0.5) / (n + 1)) * (1 - (p + 0.5) / (n + 1)) / n for p, n in rates) / k**2
    half = Z95 * math.sqrt(variance)
    return RateEstimate(rate=round(mean, 4), low=round(max(0.0, mean - half), 4),
                        high=round(min(1.0, mean + half), 4), cases=k, attempts=sum(n for _, n in rates))
