"""The kill matrix: which checks tell the package from no package, and from each mutant.

Per engine, from the reports of its arms and mutants:

* a mutant is **killed** when a check that passes with the package fails with the mutant (a
  case that errored or was not run under it is not measured); its kill rate is the share of the
  measured cases that passed with the package and fail with it; a mutant nothing kills is
  **uncovered guidance**;
* a check **discriminates** when its verdict differs between the arm without the package and
  the arm with it; it is **flipped** by the mutants that make it fail; a check that passes with
  the package, does not discriminate and no mutant flips is **weak**, once mutants of both
  directions were measured on its case: those that remove what the package gives, and those
  that make a skill over-claim (the only ones a guard against a false trigger can notice); one
  that passes only without the package is **backwards**.

With repeated runs, a check's pass counts in each arm give a 95% interval of the difference
(Newcombe); one run per arm cannot show a difference, and the interval says so.

The models it builds are in `sensitivity_model.py`, beside the report's.
"""

from __future__ import annotations

from collections.abc import Collection

from aam_eval_action.report_model import Attempt, CaseResult, CheckResult, Report
from aam_eval_action.sensitivity.mutants import Mutant
from aam_eval_action.sensitivity_model import (
    DIRECTIONS,
    CaseRow,
    CheckRef,
    CheckRow,
    Cost,
    Direction,
    MutantRow,
    Sensitivity,
    SessionRef,
)
from aam_eval_action.stats import newcombe


def checks_of(case: CaseResult) -> dict[str, CheckResult]:
    """A case's checks with the package, and `judge` when the judge gave a verdict."""
    found: dict[str, CheckResult] = {k: v for k, v in case.deterministic_checks.items()
                                     if v in ("PASS", "FAIL")}
    judge = case.judge_verdict
    if judge is not None and judge.result in ("PASS", "FAIL"):
        found["judge"] = "PASS" if judge.result == "PASS" else "FAIL"
    return found


def measured(case: CaseResult | None) -> bool:
    return case is not None and case.verdict in ("PASS", "FAIL")


def cost_of(report: Report | None) -> Cost:
    out = Cost()
    for case in report.cases if report else []:
        if not measured(case) and case.verdict != "ERROR":
            continue
        judge_live = case.judge_verdict is not None and case.judge_verdict.replayed is False
        if case.replay_kind == "live" or case.live_from_turn is not None:
            out.live += 1
        elif case.replay_kind == "rerun":
            out.re_executed += 1
        elif case.replay_kind == "snapshot":
            out.replayed += 1
        out.model_calls |= case.replay_kind == "live" or case.live_from_turn is not None or judge_live
        out.cost_usd = round(out.cost_usd + (case.run_cost_usd or 0.0), 6)
    if report is not None and report.summary.spent_usd is not None:  # all it charged, priced per CLI
        out.cost_usd = round(report.summary.spent_usd, 6)
    return out


def _runs(attempts: list[Attempt] | None, check: str, shown: CheckResult | None) -> tuple[int, int] | None:
    if attempts:
        seen = [a.checks.get(check) for a in attempts if a.checks and a.checks.get(check) in ("PASS", "FAIL")]
        return (sum(v == "PASS" for v in seen), len(seen)) if seen else None
    return (int(shown == "PASS"), 1) if shown is not None else None


def build(package: str, engine: str, with_report: Report,
          mutants: list[tuple[Mutant, Report | None, str | None]],
          forced: Report | None = None,
          directions: Collection[Direction] = DIRECTIONS) -> tuple[list[MutantRow], list[CheckRow]]:
    """One engine's rows: every mutant (with its report, or None and why it was not run), and
    every check of every case with the package. `directions`: those the package has a mutant
    of (whether chosen or not); a check is weak only once a mutant of each was measured on its
    case."""
    cases = {c.name: c for c in with_report.cases}
    forced_cases = {c.name: c for c in forced.cases} if forced else {}
    mutant_rows: list[MutantRow] = []
    flips: dict[tuple[str, str], list[str]] = {}
    tried: dict[str, set[Direction]] = {}
    for mutant, report, why in mutants:
        mrow = MutantRow(id=mutant.id, kind=mutant.kind, direction=mutant.direction, what=mutant.what,
                         file=mutant.file, line=mutant.line, engine=engine, status="not-run",
                         graded=cost_of(report), note=why)
        if report is not None:
            under = {c.name: c for c in report.cases}
            _kills(mrow, cases, under, flips)
            for name in (n for n, c in under.items() if measured(c)):
                tried.setdefault(name, set()).add(mutant.direction)
        mutant_rows.append(mrow)
    check_rows: list[CheckRow] = []
    for name, case in sorted(cases.items()):
        if not measured(case):
            continue
        with_checks = checks_of(case)
        without = case.baseline_checks or {}
        forced_case = forced_cases.get(name)
        forced_checks = checks_of(forced_case) if forced_case and measured(forced_case) else {}
        untried = [d for d in DIRECTIONS if d in directions and d not in tried.get(name, ())]
        for check, verdict in with_checks.items():
            other = without.get(check)
            row = CheckRow(case=name, check=check, engine=engine, file=case.file or "", line=case.line,
                           with_package=verdict, without_package=other, forced=forced_checks.get(check),
                           flipped_by=flips.get((name, check), []),
                           untried=list(untried))
            if other in ("PASS", "FAIL"):
                row.discriminates = other != verdict
                row.backwards = other == "PASS" and verdict == "FAIL"
            row.weak = verdict == "PASS" and not row.discriminates and not row.flipped_by and not row.untried
            row.passes_with = _runs(case.attempts, check, verdict)
            row.passes_without = _runs(case.baseline_attempts, check, other)
            if row.passes_with and row.passes_without:
                lo, hi = newcombe(row.passes_without[0], row.passes_without[1], *row.passes_with)
                row.difference = (round(lo, 4), round(hi, 4))
            check_rows.append(row)
    return mutant_rows, check_rows


def case_rows(engine: str, with_report: Report, forced: Report | None) -> list[CaseRow]:
    """Each case's verdict in the three arms, and the two differences the forced arm shows."""
    forced_cases = {c.name: c for c in forced.cases} if forced else {}
    rows = []
    for case in sorted(with_report.cases, key=lambda c: c.name):
        row = CaseRow(case=case.name, engine=engine, with_package=case.verdict,
                      without_package=case.baseline_verdict)
        f = forced_cases.get(case.name)
        if f is not None:
            row.forced = f.verdict
            row.forced_how = f.forced or f.error
            if measured(f):
                row.content = _compare(f.verdict, case.baseline_verdict, ("helps", "hurts"))
                row.routing = _compare(f.verdict, case.verdict, ("loses", "gains"))
        rows.append(row)
    return rows


def _compare(forced: str, other: str | None, words: tuple[str, str]) -> str | None:
    if other not in ("PASS", "FAIL"):
        return None
    if forced == other:
        return "no difference"
    return words[0] if forced == "PASS" else words[1]


def _kills(row: MutantRow, cases: dict[str, CaseResult], under: dict[str, CaseResult],
           flips: dict[tuple[str, str], list[str]]) -> None:
    passed_with = [n for n, c in cases.items() if c.verdict == "PASS"]
    measured_cases = [n for n in passed_with if measured(under.get(n))]
    errored = [n for n in cases if n in under and not measured(under[n])]
    for name in sorted(cases):
        mine, theirs = cases[name], under.get(name)
        if not measured(mine) or not measured(theirs):
            continue
        assert theirs is not None
        now = checks_of(theirs)
        killed = [check for check, verdict in checks_of(mine).items()
                  if verdict == "PASS" and now.get(check) == "FAIL"]
        for check in killed:
            row.killed_by.append(CheckRef(case=name, check=check))
            flips.setdefault((name, check), []).append(row.id)
        if mine.verdict == "PASS" and theirs.verdict != "PASS":
            row.cases_failed.append(name)
    if measured_cases:
        hit = [n for n in row.cases_failed if n in measured_cases]
        row.kill_rate = round(len(hit) / len(measured_cases), 4)
    skipped = [c for c in under.values() if c.verdict == "SKIP" and c.budget is not None]
    unmeasured = [n for n in passed_with if n not in measured_cases]
    if row.killed_by:
        row.status = "killed"
    elif measured_cases and not unmeasured:  # every case that could tell was measured
        row.status = "survived"
    elif skipped:  # the cap left no room for (some of) the cases that could tell
        row.status = "not-run"
        row.note = f"did not fit: {len(skipped)} case(s) not run: {skipped[0].error}"
        return
    else:
        row.status = "not-measured"
    if errored and row.note is None:
        first = under[errored[0]]
        row.note = f"{len(errored)} case(s) not measured: {errored[0]}: {first.error or first.verdict}"


def sessions_of(engine: str, variant: str, report: Report | None, without: bool = False) -> list[SessionRef]:
    """Each case of a variant's report as a matrix cell shows it (`without`: the baseline run of
    a report made with `--baseline`)."""
    out = []
    for case in report.cases if report else []:
        if without:
            out.append(SessionRef(engine=engine, variant=variant, case=case.name,
                                  verdict=case.baseline_verdict, checks=case.baseline_checks or {},
                                  error=case.baseline_error))
            continue
        graded = ("live" if case.replay_kind == "live" or case.live_from_turn is not None else
                  "re-executed" if case.replay_kind == "rerun" else "replayed" if case.replay_kind else None)
        out.append(SessionRef(engine=engine, variant=variant, case=case.name, verdict=case.verdict,
                              checks=checks_of(case) if measured(case) else {},
                              output=case.agent_output_snippet or "",
                              error=case.error if case.verdict != "PASS" else None, graded=graded))
    return out


def finish(result: Sensitivity) -> Sensitivity:
    """The lists a reader looks at first: uncovered mutants, weak checks, the cost."""
    result.uncovered = [f"{m.engine}: {m.id}" for m in result.mutants if m.status == "survived"]
    result.weak = [f"{c.engine}: {c.case} / {c.check}" for c in result.checks if c.weak]
    result.cost_usd = round(sum(m.graded.cost_usd for m in result.mutants)
                            + sum(a.graded.cost_usd for a in result.arms), 6)
    return result
