"""The dice: the sequential rule's error rates (exact, and simulated through the sampler the
live run uses), the history file as untrusted input, and the diff's decisions from counts."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from aam_eval_action.dice_model import CaseHistory, Evidence, HistorySample
from aam_eval_action.diff import diff_reports
from aam_eval_action.pipeline.sampling import Plan, sample
from aam_eval_action.render.comment import format_markdown
from aam_eval_action.replay import history
from aam_eval_action.replay.history import HistoryRun
from aam_eval_action.report import CaseResult
from aam_eval_action.sequential import Counts, Rule, decide, error_rates, flip

from support.reports import case, report

# --- the rule's error rates --------------------------------------------------------------


@pytest.mark.parametrize("n_before", [4, 8, 12, 16, 20])
def test_an_unchanged_case_is_blamed_at_most_5_percent_of_the_time(n_before: int) -> None:
    """Exactly, over every base count and every path of head attempts up to the cap."""
    for rate in (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0):
        assert error_rates(rate, rate, n_before).blamed <= 0.05, (rate, n_before)


@pytest.mark.parametrize("n_before", [10, 20])
def test_a_drop_from_90_to_30_percent_is_blamed_at_least_80_percent_of_the_time(n_before: int) -> None:
    found = error_rates(0.9, 0.3, n_before)
    assert found.blamed >= 0.8, found
    assert found.mean_runs <= Rule().cap


def test_a_steady_case_that_still_passes_holds_after_two_runs() -> None:
    assert decide(Counts(20, 20), Counts(2, 2)).outcome == "holds"
    assert decide(Counts(20, 20), Counts(1, 1)).outcome is None
    assert error_rates(1.0, 1.0, 20).mean_runs == pytest.approx(2.0)


def _simulate(base: float, head: float, n_before: int, trials: int, seed: int) -> tuple[float, float]:
    """The sampler the live run uses, with coins for sessions: (blamed share, mean attempts)."""
    rng = random.Random(seed)
    blamed = runs = 0
    for _ in range(trials):
        before = Counts(sum(rng.random() < base for _ in range(n_before)), n_before)
        plan = Plan(before, Counts(0, 0), False, Rule())
        done = sample(plan, lambda n: ["PASS" if rng.random() < head else "FAIL" for _ in range(n)], lambda: None)
        blamed += done.evidence.decision == "regressed"
        runs += len(done.verdicts)
    return blamed / trials, runs / trials


def test_the_sampler_in_batches_keeps_the_rates_seeded() -> None:
    """Batches skip looks, which can only lower the false-blame rate; the seeded simulation of the
    sampler shows it, and the power, within the cap."""
    for rate, n_before in ((0.5, 10), (0.7, 20), (0.9, 10)):
        blamed, _ = _simulate(rate, rate, n_before, 2000, seed=65)
        assert blamed <= 0.05, (rate, n_before, blamed)
    blamed, runs = _simulate(0.9, 0.3, 20, 1000, seed=66)
    assert blamed >= 0.8 and runs < 8, (blamed, runs)


def test_a_flip_is_weighed_against_the_history() -> None:
    assert flip(Counts(14, 20), Counts(0, 1)).outcome == "holds"  # within its noise
    assert flip(Counts(20, 20), Counts(0, 1)).outcome == "regressed"  # p = 1/21
    assert flip(Counts(18, 20), Counts(1, 6)).outcome == "regressed"


# --- the history file ---------------------------------------------------------------------


def _run(at: str, passes: int = 1, attempts: int = 1, inputs: str = "ab" * 16, **more: object) -> HistoryRun:
    return HistoryRun(at=at, engine="claude-code", model="m", inputs=inputs, passes=passes, attempts=attempts,
                      **more)  # type: ignore[arg-type]


def test_history_is_bounded_sorted_and_merges_line_by_line(tmp_path: Path) -> None:
    cassettes = tmp_path / "cassettes"
    for day in range(60, 0, -1):
        history.add(cassettes, "c", _run(f"2026-{1 + day // 28:02d}-{1 + day % 28:02d}T03:00:00Z"), None)
    lines = (cassettes / "c" / "history.jsonl").read_text().splitlines()
    assert len(lines) == history.KEEP
    assert lines == sorted(lines, key=lambda line: json.loads(line)["at"])
    assert (cassettes / ".gitattributes").read_text() == "*/history.jsonl merge=union\n"
    # The same line added twice (a union merge of two branches) is one run.
    history.add(cassettes, "c", HistoryRun.model_validate_json(lines[-1]), None)
    assert len((cassettes / "c" / "history.jsonl").read_text().splitlines()) == history.KEEP


def test_hostile_history_lines_are_skipped_and_named(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    good = _run("2026-11-01T03:00:00Z").line()
    path.write_text("\n".join([
        good, "{not json", "[1, 2]", json.dumps({"at": "yesterday"}),
        _run("2026-11-02T03:00:00Z").line().replace('"passes":1', '"passes":5'),
        json.dumps({**json.loads(good), "inputs": "../../etc/passwd"}), "x" * 5000, good,
    ]) + "\n")
    read = history.read(path)
    assert len(read.runs) == 2
    assert [w.split(": ", 1)[0] for w in read.warnings] == [f"{path}:{n}" for n in (2, 3, 4, 5, 6, 7)]
    assert all("the line is skipped" in w for w in read.warnings)


def test_a_history_outside_the_cassettes_is_neither_read_nor_written(tmp_path: Path) -> None:
    cassettes, outside = tmp_path / "cassettes", tmp_path / "outside"
    outside.mkdir()
    (outside / "history.jsonl").write_text(_run("2026-11-01T03:00:00Z").line() + "\n")
    cassettes.mkdir()
    (cassettes / "c").symlink_to(outside)
    assert history.read(history.path_for(cassettes, "c"), cassettes).runs == []
    with pytest.raises(OSError, match="resolves outside"):
        history.add(cassettes, "c", _run("2026-11-02T03:00:00Z"), None)
    assert len((outside / "history.jsonl").read_text().splitlines()) == 1


def test_a_cli_or_served_model_change_starts_a_new_stretch() -> None:
    runs = [_run("2026-11-01T03:00:00Z", cli="1"), _run("2026-11-02T03:00:00Z", 0, 1, cli="1"),
            _run("2026-11-03T03:00:00Z", cli="2"),
            _run("2026-11-04T03:00:00Z", cli="2", served="m-2026")]
    stretch, changes = history.current(runs, "ab" * 16)
    assert [r.at[:10] for r in stretch.runs] == ["2026-11-04"]
    assert changes == ["CLI 1 → 2 on 2026-11-03", "served model m → m-2026 on 2026-11-04"]


# --- the diff's decisions -----------------------------------------------------------------


def _case(verdict: str, fp: str, samples: list[tuple[int, int]], day0: int = 1, **more: object) -> CaseResult:
    """A case result carrying a history of these (passes, attempts) runs, one a night."""
    found = case("c", verdict)  # type: ignore[arg-type]
    runs = [HistorySample(at=f"2026-11-{day0 + i:02d}T03:00:00Z", passes=p, attempts=n)
            for i, (p, n) in enumerate(samples)]
    found.fingerprint = fp
    found.history = CaseHistory(inputs=fp, passes=sum(p for p, _ in samples), attempts=sum(n for _, n in samples),
                                runs=len(samples), since=runs[0].at if runs else None, samples=runs)
    for key, value in more.items():
        setattr(found, key, value)
    return found


def _one(base: CaseResult, head: CaseResult) -> tuple[str, Evidence | None, str | None]:
    entry = diff_reports(report([base]), report([head])).cases[0]
    return entry.category, entry.evidence, entry.evidence_text


NIGHTS_14_OF_20 = [(1, 1)] * 14 + [(0, 1)] * 6


def test_a_flip_within_a_case_s_noise_is_not_blamed_and_says_flaky() -> None:
    base = _case("PASS", "aa" * 16, NIGHTS_14_OF_20)
    head = _case("FAIL", "aa" * 16, [*NIGHTS_14_OF_20, (0, 1)])
    d = diff_reports(report([base]), report([head]))
    category, evidence, text = _one(base, head)
    assert category == "regressed" and evidence is not None and evidence.decision == "within-noise"
    assert text == "flaky: 14/21 over 21 runs; within noise: 0/1 now, 14/20 before"
    assert d.regressions == 0 and d.noise_regressions == 1
    assert "flaky: 14/21 over 21 runs" in format_markdown(d)


def test_a_flip_of_a_steady_case_is_blamed_with_its_evidence() -> None:
    base = _case("PASS", "aa" * 16, [(1, 1)] * 20)
    head = _case("FAIL", "aa" * 16, [*[(1, 1)] * 20, (0, 1)])
    category, _, text = _one(base, head)
    assert category == "regressed" and text == "regressed: 0/1 now, 20/20 before (p = 0.0476)"
    assert diff_reports(report([base]), report([head])).regressions == 1


def test_a_flip_on_a_short_steady_history_is_not_shown_and_says_what_telling_would_take() -> None:
    base = _case("PASS", "aa" * 16, [(1, 1)] * 3)
    head = _case("FAIL", "aa" * 16, [*[(1, 1)] * 3, (0, 1)])
    category, evidence, text = _one(base, head)
    assert category == "not-shown" and evidence is not None
    assert text is not None and text.startswith("not shown: 0/1 now, 3/3 before; stopped at a history of 3")
    assert "about 2 more runs would decide" in text


def test_a_changed_case_is_decided_from_both_sides_counts() -> None:
    base = _case("PASS", "aa" * 16, [(1, 1)] * 18 + [(0, 1)] * 2)
    broken = _case("FAIL", "bb" * 16, [(1, 6)], day0=21)
    category, _, text = _one(base, broken)
    assert category == "regressed" and text == "regressed: 1/6 now, 18/20 before (p = 0.0018)"
    reworded = _case("PASS", "bb" * 16, [(2, 2)], day0=21)
    category, _, text = _one(base, reworded)
    assert category == "unchanged" and text == "holds: 2/2 now, 18/20 before (not 30 points worse)"


def test_main_s_last_fail_does_not_hide_a_break() -> None:
    """The nightly drew a FAIL last, so one attempt per side reads "still failing"; the history does not."""
    base = _case("FAIL", "aa" * 16, [(1, 1)] * 9 + [(0, 1)])
    broken = _case("FAIL", "bb" * 16, [(0, 5)], day0=21)
    category, evidence, _ = _one(base, broken)
    assert category == "regressed" and evidence is not None and evidence.p_value is not None
    assert evidence.p_value < 0.01


def test_the_served_model_is_read_from_the_answer_where_it_differs_from_the_asked_one() -> None:
    from aam_eval_action.replay.traffic_model import Exchange, ModelTraffic, RecordedResponse, SseEvent

    def traffic(model: str) -> ModelTraffic:
        start = SseEvent(event="message_start", data={"type": "message_start", "message": {"model": model}})
        answer = RecordedResponse(status=200, events=[start])
        return ModelTraffic(cli="claude", provider="anthropic-messages", shared={}, exchanges=[
            Exchange(stream="agent", path="/v1/messages", request={}, response=answer)])

    assert history.served_by(traffic("claude-sonnet-4-6-20261101"), "claude-sonnet-4-6") == "claude-sonnet-4-6-20261101"
    assert history.served_by(traffic("claude-sonnet-4-6"), "claude-sonnet-4-6") is None


def test_a_fall_after_a_cli_release_is_blamed_with_the_release_named() -> None:
    base = _case("PASS", "aa" * 16, [(1, 1)] * 20)
    base.history.cli = "2.1.330"  # type: ignore[union-attr]
    head = _case("FAIL", "aa" * 16, [(0, 1), (0, 1)], day0=21)
    head.history.cli = "2.1.332"  # type: ignore[union-attr]
    category, evidence, text = _one(base, head)
    assert category == "regressed" and evidence is not None
    assert text == "regressed: 0/2 now, 20/20 before (p = 0.0043); CLI 2.1.330 → 2.1.332 between the sides: a cause it may be"


def test_only_a_case_whose_inputs_changed_since_its_last_run_is_sampled(tmp_path: Path) -> None:
    import shutil

    from aam_eval_action.loader import load_repo
    from aam_eval_action.pipeline.context import CaseContext
    from aam_eval_action.pipeline.sampling import plan_for
    from aam_eval_action.settings import Overrides, resolve_matrix

    pkg = shutil.copytree(Path(__file__).parent / "fixtures/dice", tmp_path / "dice")
    settings = resolve_matrix(load_repo(pkg).packages[0], Overrides(), {})[0]
    ctx = CaseContext(settings, settings.redactor)
    old, new = "aa" * 16, "bb" * 16
    for day, inputs in ((1, old), (2, old), (3, old), (4, new), (5, new), (6, new)):
        history.add(settings.cassettes, "roll-nine", HistoryRun(
            at=f"2026-11-0{day}T03:00:00Z", engine=settings.engine, model=settings.model, inputs=inputs,
            passes=1, attempts=1), None)
    assert plan_for(ctx, "roll-nine", new, None) is None  # the nightly of an unchanged case: one run
    plan = plan_for(ctx, "roll-nine", "cc" * 16, None)  # changed since: weighed against the last inputs
    assert plan is not None and plan.before == Counts(3, 3)
    plan = plan_for(ctx, "roll-nine", old, None)  # changed back: against the runs in between
    assert plan is not None and (plan.before, plan.start) == (Counts(3, 3), Counts(3, 3))
    history.add(settings.cassettes, "thin", HistoryRun(
        at="2026-11-01T03:00:00Z", engine=settings.engine, model=settings.model, inputs=old, passes=1,
        attempts=1), None)
    assert plan_for(ctx, "thin", new, None) is None  # one base attempt: run once, the diff says what is missing
