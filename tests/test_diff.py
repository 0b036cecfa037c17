from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from aam_eval_action.commands.diff import diff as diff_command
from aam_eval_action.diff import CATEGORIES, ReportDiff, diff_reports
from aam_eval_action.errors import ConfigError, UsageError
from aam_eval_action.render.comment import format_markdown
from aam_eval_action.render.text import format_json, format_text
from aam_eval_action.report import CaseResult, ReplayDivergence, ReplayMiss, load_report, to_json

from support.reports import case, report

# The seed's example report, with only the seed's fields.
SEED_REPORT = {
    "version": 1,
    "id": "eval-run-2026-02-22T14-30-00Z",
    "timestamp": "2026-02-22T14:30:00Z",
    "duration_seconds": 87,
    "config": {
        "engine": "claude-code",
        "engine_version": "1.4.2",
        "judge": "claude-sonnet-4-20250514",
        "timeout": 120,
    },
    "agent": {"runtime": "claude-code", "model": "claude-sonnet-4-20250514"},
    "judge": {"model": "claude-sonnet-4-20250514", "model_provider": "anthropic"},
    "environment": {"os": "linux", "arch": "x86_64", "aam_version": "0.5.0"},
    "package": {"name": "@my-org/code-review", "version": "1.0.0"},
    "summary": {"total": 2, "passed": 1, "failed": 1, "skipped": 0, "pass_rate": 0.5},
    "cases": [
        {
            "name": "pdf-extraction-e2e",
            "target": "skill:pdf-tools",
            "verdict": "PASS",
            "duration_seconds": 18,
            "deterministic_checks": {"contains": "PASS", "files_created": "PASS"},
            "judge_verdict": {"result": "PASS", "reason": "All text.", "model": "m"},
            "agent_output_snippet": "Extracted text from sample.pdf",
        },
        {
            "name": "hook-blocks-protected-write",
            "target": "hook:pre-tool-use",
            "verdict": "FAIL",
            "duration_seconds": 12,
            "deterministic_checks": {"not_contains": "PASS", "agent_blocked": "FAIL"},
            "judge_verdict": {"result": "FAIL", "reason": "Agent was not blocked.", "model": "m"},
            "agent_output_snippet": "I'll write the file...",
            "error": "expected agent-blocked=true but hook exited 0",
        },
    ],
}


def categories(d: ReportDiff) -> dict[str, str]:
    return {c.name: c.category for c in d.cases}


def test_each_case_lands_in_its_category() -> None:
    base = report(
        [
            case("same"),
            case("breaks"),
            case("errors"),
            case("heals", "FAIL"),
            case("heals-from-error", "ERROR"),
            case("still", "FAIL"),
            case("fail-to-error", "FAIL"),
            case("gone"),
            case("unreplayable", replay_miss="no-cassette", verdict="ERROR"),
            case("skipped", "SKIP"),
            case("changed-input"),
        ]
    )
    head = report(
        [
            case("same"),
            case("breaks", "FAIL"),
            case("errors", "ERROR"),
            case("heals"),
            case("heals-from-error"),
            case("still", "FAIL"),
            case("fail-to-error", "ERROR"),
            case("fresh"),
            case("unreplayable", "FAIL"),
            case("skipped", "SKIP"),
            case("changed-input", "ERROR", replay_miss="stale"),
        ]
    )
    d = diff_reports(base, head)
    assert categories(d) == {
        "breaks": "regressed",
        "errors": "regressed",
        "heals": "fixed",
        "heals-from-error": "fixed",
        "fresh": "new",
        "gone": "removed",
        "unreplayable": "no-baseline",
        "changed-input": "stale",
        "still": "still-failing",
        "fail-to-error": "still-failing",
        "same": "unchanged",
        "skipped": "unchanged",
    }
    assert d.counts == {
        "regressed": 2,
        "stale": 1,
        "diverged": 0,
        "not-shown": 0,
        "not-run": 0,
        "fixed": 2,
        "new": 1,
        "removed": 1,
        "no-baseline": 1,
        "still-failing": 2,
        "unchanged": 2,
    }
    assert d.regressions == 2


def test_cases_are_ordered_by_category_then_name() -> None:
    base = report([case("b"), case("a"), case("z", "FAIL")])
    head = report([case("b", "FAIL"), case("a", "FAIL"), case("z"), case("m")])
    d = diff_reports(base, head)
    assert [(c.category, c.name) for c in d.cases] == [
        ("regressed", "a"),
        ("regressed", "b"),
        ("fixed", "z"),
        ("new", "m"),
    ]
    assert list(d.counts) == list(CATEGORIES)


def test_pass_rate_cost_and_duration_deltas() -> None:
    base = report([case(n, cost=0.1) for n in "abcd"] + [case("e", "FAIL", cost=0.1)], duration=80.0)
    head = report([case(n, cost=0.2) for n in "abcde"], duration=95.5)
    d = diff_reports(base, head)
    assert d.base is not None
    assert (d.base.pass_rate, d.head.pass_rate) == (0.8, 1.0)
    assert d.pass_rate_delta_pp == 20.0
    assert d.cost_delta_usd == pytest.approx(0.5)
    assert d.duration_delta_seconds == 15.5
    assert "80.0% → 100.0% (+20.0 pp)" in format_text(d)


def test_a_drop_is_a_negative_delta() -> None:
    d = diff_reports(report([case("a"), case("b")]), report([case("a"), case("b", "FAIL")]))
    assert d.pass_rate_delta_pp == -50.0
    assert "100.0% → 50.0% (-50.0 pp)" in format_text(d)


def test_cost_delta_is_none_when_a_side_has_no_cost() -> None:
    d = diff_reports(report([case("a")]), report([case("a", cost=0.3)]))
    assert d.head.cost_usd == pytest.approx(0.3)
    assert d.cost_delta_usd is None


def test_without_base_everything_is_new() -> None:
    d = diff_reports(None, report([case("a"), case("b", "FAIL")]))
    assert set(categories(d).values()) == {"new"}
    assert d.base is None
    assert d.pass_rate_delta_pp is None
    assert d.duration_delta_seconds is None
    assert d.regressions == 0
    assert "50.0% (no baseline)" in format_text(d)


@pytest.mark.parametrize(("base_flaky", "head_flaky"), [(True, None), (None, True)])
def test_flaky_regression_is_not_blamed(base_flaky: bool | None, head_flaky: bool | None) -> None:
    base = report([case("wobbly", flaky=base_flaky), case("solid")])
    head = report([case("wobbly", "FAIL", flaky=head_flaky), case("solid", "FAIL")])
    d = diff_reports(base, head)
    wobbly = next(c for c in d.cases if c.name == "wobbly")
    assert (wobbly.category, wobbly.flaky) == ("regressed", True)
    assert (d.regressions, d.flaky_regressions) == (1, 1)
    assert "Regressed (2, 1 flaky on base)" in format_text(d)


def test_a_base_that_could_not_replay_is_never_a_regression() -> None:
    base = report([case("a", replay_miss="stale")])
    head = report([case("a", "FAIL")])
    d = diff_reports(base, head)
    assert d.cases[0].category == "no-baseline"
    assert d.cases[0].base_replay_miss == "stale"
    assert d.regressions == 0


def test_entry_carries_what_the_comment_shows() -> None:
    base = report([case("a", cost=0.01)])
    head = report(
        [
            case(
                "a",
                "FAIL",
                target="hook:pre-tool-use",
                checks={"contains": "PASS", "agent_blocked": "FAIL", "files_created": "FAIL"},
                reason="Agent was not blocked.",
                error="hook exited 0",
                cost=0.02,
                line=7,
            )
        ]
    )
    entry = diff_reports(base, head).cases[0]
    assert entry.model_dump(exclude_none=True) == {
        "name": "a",
        "category": "regressed",
        "target": "hook:pre-tool-use",
        "base_verdict": "PASS",
        "head_verdict": "FAIL",
        "file": "evals/cases/a.yaml",
        "line": 7,
        "failed_checks": ["agent_blocked", "files_created"],
        "judge_reason": "Agent was not blocked.",
        "error": "hook exited 0",
        "cost_usd": 0.02,
        "flaky": False,
    }


def test_removed_case_keeps_the_base_details() -> None:
    base = report([case("old", "FAIL", reason="was bad", line=3)])
    entry = diff_reports(base, report([])).cases[0]
    assert (entry.category, entry.base_verdict, entry.head_verdict) == ("removed", "FAIL", None)
    assert (entry.file, entry.line, entry.judge_reason) == ("evals/cases/old.yaml", 3, "was bad")
    assert entry.failed_checks == []


def test_stale_lists_head_cases_to_re_record() -> None:
    head = report(
        [
            case("s", "ERROR", replay_miss="stale"),
            case("n", "ERROR", replay_miss="no-cassette"),
            case("d", "ERROR", replay_miss="damaged"),
            case("ok"),
        ]
    )
    d = diff_reports(report([]), head)
    assert [(s.name, s.reason) for s in d.stale] == [("s", "stale"), ("n", "no-cassette")]


def test_stale_reason_is_the_miss_explanation_without_the_command() -> None:
    err = "replay miss: the prompt changed since recording (2026-01-01T00:00:00Z); re-record: aam-eval run s --record"
    d = diff_reports(report([case("s")]), report([case("s", "ERROR", replay_miss="stale", error=err)]))
    assert d.cases[0].category == "stale" and d.regressions == 0
    assert d.stale[0].reason == "the prompt changed since recording (2026-01-01T00:00:00Z)"
    assert "aam-eval run s --record" in format_text(d)


def test_report_with_only_the_seed_fields_diffs(tmp_path: Path) -> None:
    base_path = tmp_path / "base.json"
    base_path.write_text(json.dumps(SEED_REPORT), encoding="utf-8")
    head = load_report(base_path).model_copy(deep=True)
    head.cases[0].verdict = "FAIL"
    head.summary.passed, head.summary.failed, head.summary.pass_rate = 0, 2, 0.0
    head_path = tmp_path / "head.json"
    head_path.write_text(to_json(head), encoding="utf-8")

    out = io.StringIO()
    assert diff_command(base_path, head_path, "json", out) == 0
    d = ReportDiff.model_validate_json(out.getvalue())
    assert categories(d) == {
        "pdf-extraction-e2e": "regressed",
        "hook-blocks-protected-write": "still-failing",
    }
    assert d.pass_rate_delta_pp == -50.0
    assert d.head.errored == 0
    assert d.cases[0].file is None
    assert d.cases[1].failed_checks == ["agent_blocked"]


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_command_prints_each_format(tmp_path: Path, fmt: str) -> None:
    base_path, head_path = tmp_path / "base.json", tmp_path / "head.json"
    base_path.write_text(to_json(report([case("a"), case("b", "FAIL")])), encoding="utf-8")
    head_path.write_text(to_json(report([case("a", "FAIL"), case("b")])), encoding="utf-8")
    out = io.StringIO()
    assert diff_command(base_path, head_path, fmt, out) == 0
    d = diff_reports(load_report(base_path), load_report(head_path))
    expected = {"text": format_text, "markdown": format_markdown, "json": format_json}[fmt](d)
    assert out.getvalue() == expected


def test_command_names_a_broken_report(tmp_path: Path) -> None:
    good, broken = tmp_path / "good.json", tmp_path / "broken-head.json"
    good.write_text(to_json(report([case("a")])), encoding="utf-8")
    broken.write_text('{"version": 1, "id": "x"', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"broken-head\.json"):
        diff_command(good, broken, "text", io.StringIO())


def test_command_names_a_report_of_the_wrong_shape(tmp_path: Path) -> None:
    good, wrong = tmp_path / "good.json", tmp_path / "not-a-report.json"
    good.write_text(to_json(report([case("a")])), encoding="utf-8")
    wrong.write_text('{"cases": "nope"}', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"not-a-report\.json: .*aam-eval report"):
        diff_command(wrong, good, "text", io.StringIO())


def test_command_refuses_an_unknown_format(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text(to_json(report([case("a")])), encoding="utf-8")
    with pytest.raises(UsageError, match="--format yaml"):
        diff_command(path, path, "yaml", io.StringIO())


def test_json_format_is_stable_and_sorted() -> None:
    d = diff_reports(report([case("a")]), report([case("a", "FAIL"), case("b")]))
    text = format_json(d)
    assert text == format_json(ReportDiff.model_validate_json(text))
    data = json.loads(text)
    assert list(data) == sorted(data)
    assert text.endswith("}\n")


# --- conversations ---


def _talk(name: str, turns: int) -> CaseResult:
    c = case(name)
    c.turns, c.stopped = turns, "turns-done"
    return c


def test_a_conversation_entry_carries_its_turns_on_both_sides_and_where_it_changed() -> None:
    head_case = _talk("setup", 4)
    head_case.replay_kind, head_case.changed_at_turn, head_case.live_from_turn = "rerun", 2, 5
    entry = diff_reports(report([_talk("setup", 3)]), report([head_case])).cases[0]
    assert (entry.turns, entry.base_turns, entry.changed_at_turn, entry.live_from_user_turn) == (4, 3, 2, 2)


def test_a_conversation_re_executed_without_going_live_is_not_said_to_have() -> None:
    head_case = _talk("setup", 3)
    head_case.replay_kind, head_case.changed_at_turn = "rerun", 2
    entry = diff_reports(report([_talk("setup", 3)]), report([head_case])).cases[0]
    assert (entry.changed_at_turn, entry.live_from_user_turn) == (2, None)


def test_a_one_turn_case_that_went_live_has_no_conversation_turn() -> None:
    head_case = case("a")
    head_case.replay_kind, head_case.live_from_turn = "rerun", 3
    entry = diff_reports(report([case("a")]), report([head_case])).cases[0]
    assert (entry.turns, entry.base_turns, entry.changed_at_turn, entry.live_from_user_turn) == (None,) * 4


def test_a_diverged_conversation_names_its_turn_from_the_miss() -> None:
    """A report that keeps the turn only in `miss.divergence.user_turn` diffs the same."""
    head_case = case("delete", "ERROR", replay_miss="diverged", error="replay diverged: …")
    head_case.miss = ReplayMiss(kind="diverged", reason="…", divergence=ReplayDivergence(
        turn=3, path="messages[4]", tool="Bash", tool_input="rm -r build", user_turn=2))
    d = diff_reports(report([_talk("delete", 2)]), report([head_case]))
    assert d.cases[0].category == "diverged" and d.cases[0].changed_at_turn == 2
    assert [(v.name, v.turn, v.user_turn) for v in d.diverged] == [("delete", 3, 2)]


def test_a_removed_conversation_keeps_its_base_turns() -> None:
    entry = diff_reports(report([_talk("gone", 3)]), report([])).cases[0]
    assert (entry.category, entry.turns, entry.base_turns) == ("removed", 3, None)
