from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import pytest

from aam_eval_action.diff import ReportDiff, diff_reports
from aam_eval_action.errors import ConfigError
from aam_eval_action.render.comment import (
    MARKER,
    MAX_COMMENT_CHARS,
    format_markdown,
    marker,
    md,
    render_comment,
)
from aam_eval_action.report import Attempt, CaseResult, JudgeVote, Verdict

from support.golden import assert_golden
from support.reports import case, report

RUN_URL = "https://github.com/my-org/code-review/actions/runs/42"
EVIL = "evil|name <script>alert(1)</script> ```sh\nrm -rf /\n``` @octocat [x](http://e) ![i](http://e/i.png) **bold _it_"


def typical() -> ReportDiff:
    base = report(
        [
            case("pdf-extraction-e2e", cost=0.05),
            case(
                "hook-blocks-protected-write",
                "FAIL",
                target="hook:pre-tool-use",
                checks={"not_contains": "PASS", "agent_blocked": "FAIL"},
                reason="Agent was not blocked — hook script exited 0 instead of 2.",
                error="expected agent-blocked=true but hook exited 0",
                cost=0.03,
            ),
            case("summarize-readme", target="skill:summarize", cost=0.02),
            case("rule-no-secrets", target="rule:no-secrets", cost=0.02),
            case("legacy-format", target="skill:pdf-tools", cost=0.01),
        ],
        duration=87.0,
    )
    head = report(
        [
            case("pdf-extraction-e2e", cost=0.05),
            case("hook-blocks-protected-write", target="hook:pre-tool-use", cost=0.03),
            case("summarize-readme", target="skill:summarize", cost=0.02),
            case("rule-no-secrets", target="rule:no-secrets", cost=0.02),
            case("csv-export", target="skill:csv", cost=0.04),
        ],
        duration=92.4,
    )
    return diff_reports(base, head)


def regression_heavy() -> ReportDiff:
    base = report(
        [
            case("extract-tables"),
            case("extract-images"),
            case("hook-denies-rm", target="hook:pre-tool-use"),
            case("reviewer-finds-bug", target="agent:reviewer", flaky=True),
            case("summarize-long", target="skill:summarize"),
            case("rule-license-header", "FAIL", target="rule:license", reason="No header."),
            case("csv-export", target="skill:csv", replay_miss="no-cassette", verdict="ERROR"),
            case("pdf-metadata"),
        ],
        duration=120.0,
    )
    head = report(
        [
            case(
                "extract-tables",
                "FAIL",
                checks={"contains": "FAIL", "files_created": "PASS"},
                reason="The output drops the second table and invents a 'Total' row.",
            ),
            case(
                "extract-images",
                "ERROR",
                checks={},
                error="agent exited 1: API error 529 overloaded",
            ),
            case(
                "hook-denies-rm",
                "FAIL",
                target="hook:pre-tool-use",
                checks={"agent_blocked": "FAIL"},
                reason="The agent ran `rm -rf build/` and the hook did not block it.",
                error="expected agent-blocked=true",
            ),
            case("reviewer-finds-bug", "FAIL", target="agent:reviewer", reason="Missed the bug."),
            case(
                "summarize-long",
                "ERROR",
                target="skill:summarize",
                replay_miss="stale",
                checks={},
                error="replay miss: skill file skills/summarize/SKILL.md changed since recording",
            ),
            case("rule-license-header", "FAIL", target="rule:license", reason="Still no header."),
            case("csv-export", target="skill:csv"),
            case("pdf-metadata"),
        ],
        duration=131.0,
        mode="replay",
    )
    return diff_reports(base, head)


def escaping() -> ReportDiff:
    base = report([case(EVIL), case("plain")])
    head = report(
        [
            case(EVIL, "FAIL", reason=EVIL, error=EVIL, checks={"a|b": "FAIL"}, target=EVIL),
            case("plain", "ERROR", replay_miss="stale", error=EVIL),
            case(EVIL + "-2", "ERROR", replay_miss="no-cassette", error="x"),
        ],
        package="@octocat/<b>pkg</b>",
    )
    return diff_reports(base, head)


def table_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("| ")]


def test_typical_comment() -> None:
    text = render_comment(typical(), run_url=RUN_URL)
    assert "75.0% → 100.0% (+25.0 pp)** (over 4 cases graded on both sides)" in text
    assert_golden("comment_typical.md", text)


def test_regression_heavy_comment() -> None:
    assert_golden("comment_regressions.md", render_comment(regression_heavy()))


def outside_code_blocks(text: str) -> str:
    return "".join(text.split("```")[::2])


def test_escaping_comment() -> None:
    text = render_comment(escaping())
    assert_golden("comment_escaping.md", text)
    prose = outside_code_blocks(text)
    for dangerous in ("<script", "<b>", "@octocat", "](", "![", "**bold", "http://", "rm -rf /\n"):
        assert dangerous not in prose, dangerous
    fences = [line for line in text.splitlines() if line.startswith("```")]
    assert fences == ["```sh", "```"]


def test_stale_command_cannot_close_its_code_block() -> None:
    code = text_between_fences(render_comment(escaping()))
    assert "`" not in code
    assert code.splitlines()[1] == (
        "aam-eval run 'evil|name <script>alert(1)</script> shrm -rf / @octocat [x](http://e)"
        " ![i](http://e/i.png) **bold _it_-2' --record"
    )


def text_between_fences(text: str) -> str:
    return text.split("```sh\n", 1)[1].split("```", 1)[0]


def tables(text: str) -> list[list[str]]:
    """Runs of consecutive table lines."""
    runs: list[list[str]] = [[]]
    for line in text.splitlines():
        if line.startswith("|"):
            runs[-1].append(line)
        elif runs[-1]:
            runs.append([])
    return [run for run in runs if run]


def test_untrusted_text_cannot_add_table_cells() -> None:
    found = tables(render_comment(escaping()))
    assert len(found) >= 3
    for rows in found:
        assert {row.count("|") for row in rows} == {rows[0].count("|")}, rows


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [
        ("a|b", "a&#124;b"),
        ("line1\nline2\r\n\tline3", "line1 line2 line3"),
        ("<img src=x>", "&lt;img src=x&gt;"),
        ("A & B", "A &amp; B"),
        ("```", "&#96;&#96;&#96;"),
        ("hi @octocat", "hi @\u200boctocat"),
        ("[x](y) ![i](j)", "&#91;x&#93;(y) &#33;&#91;i&#93;(j)"),
        ("*a* _b_ ~c~", "&#42;a&#42; &#95;b&#95; &#126;c&#126;"),
        ("$x$", "&#36;x&#36;"),
        ("see https://e.com", "see https\u200b:&#47;&#47;e.com"),
        ("fixes #123 and GH#4", "fixes #\u200b123 and GH#\u200b4"),
        ("www.evil.example", "www\u200b.evil.example"),
        ("rtl\u202eevil", "rtl evil"),
    ],
)
def test_md_filter(raw: str, escaped: str) -> None:
    assert md(raw) == escaped


def test_md_truncates_before_escaping() -> None:
    assert md("x" * 500, 300) == "x" * 299 + "…"
    assert md("<" * 10, 4) == "&lt;" * 3 + "…"


def test_md_skips_only_substitutions_that_would_change_nothing() -> None:
    """md runs each substitution only where it can match: the text is that of running them all."""
    import random

    from aam_eval_action.render import comment as c

    def every_substitution(text: str, limit: int | None) -> str:
        text = c._WHITESPACE.sub(" ", c._INVISIBLE.sub(" ", text))
        if limit is not None and len(text) > limit:
            text = text[: max(limit - 1, 0)].rstrip() + "…"
        text = c._REFERENCE.sub("#\u200b", c._WWW.sub("\\g<0>\u200b", text))
        text = c._SCHEME.sub("\\g<1>\u200b://", text)
        return text.translate(c._MARKDOWN_ESCAPES).replace("://", ":&#47;&#47;")

    pieces = [*"aw.#:/ |`@_", "\t", "\n", "\x0b", "\x1c", "\x85", "\xa0", "\u2000", "\u2028", "\u202e",
              "\u3000", "\x00", "\x7f", "  ", "www.", "WwW.", "x://", "#1"]
    rng = random.Random(0)
    for _ in range(20_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        limit = rng.choice([None, 1, 4, 8])
        assert md(text, limit) == every_substitution(text, limit), repr(text)


def test_long_reasons_are_truncated() -> None:
    d = diff_reports(report([case("a")]), report([case("a", "FAIL", reason="why " * 200)]))
    row = next(r for r in table_rows(render_comment(d)) if r.startswith("| a<br>"))
    assert "…" in row
    assert len(row) < 500


def many_cases(regressed: int, total: int, failing_reason: str = "") -> ReportDiff:
    """Every third case fails on base (and on head unless it regressed)."""
    reason = "The judge explains at length what went wrong. " * 10
    names = [f"case-{i:04d}" for i in range(total)]
    base = report([case(n) if i % 3 else case(n, "FAIL") for i, n in enumerate(names)])
    head = report(
        [
            case(n, "FAIL", reason=reason, error=reason)
            if i < regressed
            else (case(n) if i % 3 else case(n, "FAIL", reason=failing_reason))
            for i, n in enumerate(names)
        ]
    )
    return diff_reports(base, head)


def listed_regressions(text: str) -> list[str]:
    section = text.split("### Regressions", 1)[1].split("\n### ", 1)[0]
    return re.findall(r"^\| (case-\d{4})<br>", section, flags=re.MULTILINE)


def test_3000_cases_fit_and_keep_every_regression() -> None:
    d = many_cases(regressed=150, total=3000, failing_reason="x " * 200)
    text = render_comment(d)
    assert len(text) <= MAX_COMMENT_CHARS
    assert text.startswith(MARKER)
    assert d.regressions == 100  # every third regressed case was failing on base
    assert len(listed_regressions(text)) == d.regressions
    assert "Shortened to stay under GitHub's 65,536-character comment limit" in text
    assert "Not listed: unchanged cases" in text
    assert f"Unchanged ({d.counts['unchanged']})" in text


def test_3000_regressions_keep_as_many_as_fit() -> None:
    d = many_cases(regressed=3000, total=3000)
    text = render_comment(d)
    assert len(text) <= MAX_COMMENT_CHARS
    listed = len(listed_regressions(text))
    cut = d.regressions - listed
    assert 100 < listed < d.regressions
    assert f"{cut} of {d.regressions} regressions" in text
    assert f"*{cut} more not listed here.*" in text
    assert len(render_comment(d, max_chars=len(text) + 400)) <= len(text) + 400


def test_trimming_drops_unchanged_before_anything_else() -> None:
    d = many_cases(regressed=0, total=1200)
    assert len(render_comment(d, max_chars=10**6)) > MAX_COMMENT_CHARS
    text = render_comment(d)
    assert len(text) <= MAX_COMMENT_CHARS
    assert "Not listed: unchanged cases." in text
    still_failing = text.split("<summary>Still failing (400)</summary>", 1)[1]
    assert len(re.findall(r"^\| case-\d{4}<br>", still_failing, flags=re.MULTILINE)) == 400


def test_a_small_diff_is_not_shortened() -> None:
    assert "Shortened" not in render_comment(typical())


def test_user_template_extends_the_builtin(tmp_path: Path) -> None:
    template = tmp_path / "comment.md.j2"
    template.write_text(
        '{% extends "comment.md.j2" %}\n'
        "{% block footer %}Custom footer: {{ diff.head.total }} cases, "
        "first is {{ diff.cases[0].name }}.\n{% endblock %}\n",
        encoding="utf-8",
    )
    d = escaping()
    text = render_comment(d, template=template)
    assert text.startswith(MARKER)
    assert "### Regressions (1)" in text
    assert "Custom footer: 3 cases, first is evil&#124;name &lt;script&gt;" in text
    assert "mode replay" not in text


def test_marker_is_added_when_a_user_template_forgets_it(tmp_path: Path) -> None:
    template = tmp_path / "bare.md.j2"
    template.write_text("Pass rate {{ diff | pass_rate }}\n", encoding="utf-8")
    text = render_comment(typical(), template=template, marker_id="nightly-2")
    assert text == "<!-- aam-eval-action:comment id=nightly-2 -->\nPass rate 75.0% → 100.0% (+25.0 pp)\n"


def test_builtin_template_carries_the_marker_once() -> None:
    assert format_markdown(typical()).count(MARKER) == 1
    text = render_comment(typical(), marker_id="docs")
    assert text.startswith(marker("docs"))
    assert MARKER not in text


def test_a_marker_id_cannot_close_the_html_comment() -> None:
    with pytest.raises(ConfigError, match="marker id"):
        marker("x --> <script>")


def test_a_template_too_long_on_its_own_is_cut(tmp_path: Path) -> None:
    template = tmp_path / "huge.md.j2"
    template.write_text("{% for i in range(5000) %}line {{ i }}\n{% endfor %}", encoding="utf-8")
    text = render_comment(typical(), template=template, max_chars=2000)
    assert len(text) <= 2000
    assert text.startswith(MARKER)
    assert text.endswith("This comment was cut to fit GitHub's size limit.\n")


def test_user_template_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    template = tmp_path / "broken.md.j2"
    template.write_text("ok\n{% if %}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"broken\.md\.j2:2: comment template"):
        render_comment(typical(), template=template)


def test_user_template_is_sandboxed(tmp_path: Path) -> None:
    template = tmp_path / "escape.md.j2"
    template.write_text("{{ diff.__class__.__init__.__globals__ }}", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"escape\.md\.j2"):
        render_comment(typical(), template=template)


def test_missing_user_template_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.md\.j2"):
        render_comment(typical(), template=tmp_path / "nope.md.j2")


def test_only_http_run_urls_are_linked() -> None:
    assert f"[workflow run]({RUN_URL})" in render_comment(typical(), run_url=RUN_URL)
    text = render_comment(typical(), run_url="javascript:alert(1)")
    assert "workflow run" not in text


# -- hand-written expectations: what a reader must see, worked out from the reports above --


def headings(text: str) -> list[str]:
    return re.findall(r"^### (.+)$", text, flags=re.MULTILINE)


def folded(text: str) -> list[str]:
    return re.findall(r"^<summary>(.+)</summary>$", text, flags=re.MULTILINE)


def rows_under(text: str, title: str) -> dict[str, list[str]]:
    """The table rows of one section (a `###` heading or a `<summary>`), by case name."""
    start = text.index(f"### {title}\n") if f"### {title}\n" in text else text.index(f"<summary>{title}</summary>")
    body = re.split(r"^(?:### |<summary>)", text[start:].split("\n", 1)[1], maxsplit=1, flags=re.MULTILINE)[0]
    rows = [line.strip("|").split(" | ") for line in table_rows(body)[2:]]
    return {cells[0].split("<br>")[0].strip(): [c.strip() for c in cells[1:]] for cells in rows}


def test_typical_comment_by_hand() -> None:
    lines = render_comment(typical(), run_url=RUN_URL).splitlines()
    text = "\n".join(lines)
    assert lines[0] == "<!-- aam-eval-action:comment -->"
    assert lines[1] == "## ✅ Agent evals: @\u200bmy-org/code-review"
    # The 4 cases on both sides: base 3 of 4 pass (hook-blocks-protected-write fails), head 4 of 4.
    # legacy-format (removed) and csv-export (new) are listed, not counted in the headline.
    assert lines[3].startswith("**Pass rate 75.0% → 100.0% (+25.0 pp)** (over 4 cases graded on both sides)"
                               " · 5 passed · 0 failed · 0 errored")
    assert "| Pass rate | 75.0% | 100.0% | +25.0 pp |" in lines
    assert "No regressions." in lines
    assert headings(text) == ["Fixed (1)", "New (1)", "Removed (1)"]
    assert folded(text) == ["Unchanged (3)"]
    assert rows_under(text, "Fixed (1)") == {"hook-blocks-protected-write": ["hook:pre-tool-use", "FAIL → PASS"]}
    assert list(rows_under(text, "New (1)")) == ["csv-export"]
    assert rows_under(text, "Removed (1)") == {"legacy-format": ["skill:pdf-tools", "PASS"]}
    assert sorted(rows_under(text, "Unchanged (3)")) == ["pdf-extraction-e2e", "rule-no-secrets", "summarize-readme"]


@pytest.mark.parametrize(("base", "head", "headline"), [
    (["PASS", "PASS"], ["PASS", "FAIL"], "100.0% → 50.0% (-50.0 pp)"),
    (["PASS", "PASS", "FAIL"], ["PASS", "FAIL", "FAIL"], "66.7% → 33.3% (-33.3 pp)"),
    (["FAIL", "FAIL", "FAIL"], ["PASS", "FAIL", "FAIL"], "0.0% → 33.3% (+33.3 pp)"),
    (["PASS", "FAIL"], ["FAIL", "PASS"], "50.0% → 50.0% (+0.0 pp)"),
])  # fmt: skip
def test_headline_and_delta_by_hand(base: list[str], head: list[str], headline: str) -> None:
    names = [f"case-{i}" for i in range(len(base))]
    d = diff_reports(report([case(n, v) for n, v in zip(names, base, strict=True)]),
                     report([case(n, v) for n, v in zip(names, head, strict=True)]))
    text = render_comment(d)
    assert f"**Pass rate {headline}**" in text
    rate_row = next(line for line in text.splitlines() if line.startswith("| Pass rate |"))
    assert rate_row == "| Pass rate | {} | {} | {} |".format(*re.fullmatch(r"(.+) → (.+) \((.+)\)", headline).groups())
    regressed = sum(b == "PASS" and h == "FAIL" for b, h in zip(base, head, strict=True))
    assert text.splitlines()[1].startswith("## ❌" if regressed else "## ✅")


def test_regression_heavy_sections_by_hand() -> None:
    text = render_comment(regression_heavy())
    assert text.splitlines()[1].startswith("## ❌ Agent evals:")
    assert "**3 regressions** in this pull request." in text
    assert headings(text) == ["Regressions (3)", "Regressed, flaky on base (1)", "No baseline (1)",
                              "Stale cassettes (1)"]
    assert folded(text) == ["Still failing (1)", "Unchanged (1)"]
    regressions = rows_under(text, "Regressions (3)")
    assert sorted(regressions) == ["extract-images", "extract-tables", "hook-denies-rm"]
    assert regressions["extract-images"][1] == "PASS → ERROR"
    assert regressions["extract-images"][-1] == "agent exited 1: API error 529 overloaded"
    assert regressions["extract-tables"][1:3] == ["PASS → FAIL", "contains"]
    assert list(rows_under(text, "Regressed, flaky on base (1)")) == ["reviewer-finds-bug"]
    assert "- summarize-long: skill file skills/summarize/SKILL.md changed since recording" in text
    assert "```sh\naam-eval run summarize-long --record\n```" in text
    assert list(rows_under(text, "Still failing (1)")) == ["rule-license-header"]


def test_escaping_by_hand() -> None:
    text = render_comment(escaping())
    assert text.splitlines()[1] == "## ❌ Agent evals: @\u200boctocat/&lt;b&gt;pkg&lt;/b&gt;"
    name, cells = next(iter(rows_under(text, "Regressions (1)").items()))
    assert name.startswith("evil&#124;name &lt;script&gt;alert(1)&lt;/script&gt; &#96;&#96;&#96;sh rm -rf / "
                           "&#96;&#96;&#96; @\u200boctocat &#91;x&#93;(http\u200b:&#47;&#47;e) ")
    assert cells[2] == "a&#124;b"  # the failed check's name cannot split the cell
    assert "&#42;&#42;bold &#95;it&#95;" in cells[3]  # the judge reason: no bold, no italics
    prose = outside_code_blocks(text)
    assert re.search(r"@(?!\u200b)octocat", prose) is None  # nobody is pinged
    assert "<" not in prose.replace("<!-- aam-eval-action:comment -->", "").replace("<br>", "").replace(
        "<sub>", "").replace("</sub>", "").replace("<details>", "").replace("</details>", "").replace(
        "<summary>", "").replace("</summary>", "")
# --- issue 11: lift, trigger accuracy, judge votes, significance ---


def _measured(name: str, verdict: Verdict = "PASS", *, passes: int | None = None,
              baseline: Verdict | None = None, fired: bool | None = None, should: bool | None = None,
              votes: list[Literal["PASS", "FAIL"]] | None = None) -> CaseResult:
    """A case with repeats, a baseline verdict, trigger data and judge votes, as a run records them."""
    c = case(name, verdict, target="skill:pdf-tools")
    if passes is not None:
        c.attempts = [Attempt(verdict="PASS" if i < passes else "FAIL") for i in range(5)]
        c.flaky = 0 < passes < 5
    if baseline is not None:
        c.baseline_verdict = baseline
        c.skill_not_needed = verdict == "PASS" and baseline == "PASS"
    c.trigger_expected, c.skill_triggered = should, fired
    if votes and c.judge_verdict:
        c.judge_verdict.reason = "the majority's first reason"
        c.judge_verdict.votes = [JudgeVote(result=v, reason=f"vote {i + 1}") for i, v in enumerate(votes)]
    return c


def measured() -> ReportDiff:
    base = report([
        _measured("extract-text", passes=5, baseline="FAIL", fired=True, should=True),
        _measured("extract-tables", passes=5, baseline="FAIL", fired=True, should=True),
        _measured("ocr-scan", passes=5, baseline="PASS", fired=False, should=False),
        _measured("merge-pdfs", "FAIL", passes=0, baseline="FAIL", fired=True, should=False),
        _measured("split-pages", passes=5, baseline="PASS"),
    ])
    head = report([
        _measured("extract-text", passes=5, baseline="FAIL", fired=True, should=True),
        _measured("extract-tables", "FAIL", passes=1, baseline="FAIL", fired=True, should=True),
        _measured("ocr-scan", "FAIL", passes=4, baseline="FAIL", fired=False, should=False,
                  votes=["FAIL", "PASS", "FAIL"]),
        _measured("merge-pdfs", "FAIL", passes=0, baseline="FAIL", fired=False, should=True,
                  votes=["PASS", "FAIL", "FAIL"]),
        _measured("split-pages", passes=5, baseline="PASS"),
    ])
    return diff_reports(base, head)


def test_measured_comment_golden() -> None:
    assert_golden("comment_measured.md", render_comment(measured(), run_url=RUN_URL))


def test_measured_comment_shows_lift_triggers_votes_and_noise() -> None:
    diff = measured()
    text = render_comment(diff)
    # Lift: head 2/5 with the skill vs 1/5 without (+20 pp); base 4/5 vs 2/5 (+40 pp).
    assert "**skill lift +20.0 pp (was +40.0 pp) · pass rate without the skill 20.0% · 1 skill not needed**" in text
    assert "Skill not needed (these pass as well without it): split-pages\n" in text
    # Triggers on the head: fired in extract-text and extract-tables (both should) → precision 1;
    # should fire in those two and merge-pdfs, which did not → recall 2/3.
    assert "**trigger precision 100.0% · recall 66.7% (4 cases)**" in text
    assert "| contains | (1 PASS · 2 FAIL) the majority's first reason |" in text
    regressions = text.split("### Regressions (1)")[1].split("###")[0]
    noise = text.split("### Within noise (1)")[1].split("###")[0]
    assert "extract-tables" in regressions and "5/5 → 1/5, p = 0.048" in regressions
    assert "ocr-scan" in noise and "5/5 → 4/5, p = 1.000" in noise
    assert "1 case regressed within noise (not counted, see below)." in text
    assert "95% interval of the change:" in text
    assert "Significance needs" not in text
    assert diff.regressions == 1 and diff.noise_regressions == 1


# --- conversations: at which turn a conversation changed ---


def _talk(name: str, verdict: Verdict = "PASS", *, turns: int, changed: int | None = None,
          live_from: int | None = None, reason: str | None = None, stopped: str = "turns-done",
          checks: dict[str, Literal["PASS", "FAIL"]] | None = None) -> CaseResult:
    """A conversation case as a run records it: its turns and, re-executed, where it changed
    (`live_from`: the first live model turn, when it went on live from there)."""
    c = case(name, verdict, target="skill:project-setup", reason=reason, checks=checks)
    c.turns, c.stopped = turns, stopped
    if changed is not None:
        c.replay_kind, c.changed_at_turn, c.live_from_turn = "rerun", changed, live_from
        c.replayed = live_from is None
    return c


def _note(row: str) -> str:
    """What a table row's case cell says under the case name."""
    found = re.search(r"<br><sub>(.*?)</sub>", row)
    assert found, row
    return found.group(1)


def _diverged_talk() -> CaseResult:
    """Re-executed under replay, the conversation diverged in its second turn (model turn 3)."""
    from aam_eval_action.report import ReplayDivergence, ReplayMiss

    c = case("delete-confirmed", "ERROR", target="skill:tidy-build", replay_miss="diverged",
             error="replay diverged: conversation turn 2 (model turn 3): …")
    c.changed_at_turn = 2
    c.miss = ReplayMiss(
        kind="diverged", reason="conversation turn 2 (model turn 3): …",
        changes=["skill file skills/tidy-build/SKILL.md changed"],
        divergence=ReplayDivergence(turn=3, path="messages[4].content[0].content", tool="Bash",
                                    tool_input="rm -r build", recorded="(no output)",
                                    live="rm: build: Directory not empty", user_turn=2),
    )
    return c


def conversations() -> ReportDiff:
    base = report([
        _talk("setup-scripted", turns=3),
        _talk("setup-simulated", turns=3),
        _talk("setup-endless", "FAIL", turns=3, stopped="max-turns", checks={"user_goal": "FAIL"}),
        _talk("delete-confirmed", turns=2),
        case("summarize-readme", target="skill:summarize"),
    ])
    head = report([
        _talk("setup-scripted", turns=3, changed=2, live_from=4),
        _talk("setup-simulated", "FAIL", turns=4, changed=2, live_from=3,
              reason="The agent asked for a license nobody needs."),
        _talk("setup-endless", "FAIL", turns=3, stopped="max-turns", checks={"user_goal": "FAIL"}),
        _diverged_talk(),
        case("summarize-readme", target="skill:summarize"),
    ], mode="auto")
    return diff_reports(base, head)


def test_conversation_comment_golden() -> None:
    assert_golden("comment_conversation.md", render_comment(conversations()))


def test_the_comment_says_at_which_turn_a_conversation_changed_and_that_it_went_live_from_there() -> None:
    text = render_comment(conversations())
    unchanged = text.split("<summary>Unchanged (2)</summary>", 1)[1]
    scripted = next(line for line in unchanged.splitlines() if line.startswith("| setup-scripted<br>"))
    assert _note(scripted) == (
        "evals/cases/setup-scripted.yaml:1 · conversation changed at turn 2; turns from 2 on were run live")
    regressed = rows_under(text, "Regressions (1)")
    assert list(regressed) == ["setup-simulated"]
    simulated = next(line for line in text.splitlines() if line.startswith("| setup-simulated<br>"))
    assert "conversation changed at turn 2; turns from 2 on were run live; it took 4 turns, 3 on base" in simulated
    # Diverged, it did not go on live: the turn it changed at, not "run live".
    diverged = next(line for line in text.split("### Diverged on re-execution (1)", 1)[1].splitlines()
                    if line.startswith("| delete-confirmed<br>"))
    assert _note(diverged) == (
        "evals/cases/delete-confirmed.yaml:1 · conversation changed at turn 2")
    assert "| 3 | Bash tool result: rm -r build |" in diverged  # the Turn column stays the model turn
    assert "run live" not in diverged


def test_a_conversation_that_went_as_recorded_and_one_turn_cases_get_no_note() -> None:
    text = render_comment(conversations())
    for name in ("setup-endless", "summarize-readme"):
        row = next(line for line in text.splitlines() if line.startswith(f"| {name}<br>"))
        assert row.split(" | ")[0] == f"| {name}<br><sub>evals/cases/{name}.yaml:1</sub>"


def test_a_changed_turn_count_alone_is_said() -> None:
    d = diff_reports(report([_talk("setup-simulated", turns=2)]), report([_talk("setup-simulated", turns=5)]))
    row = next(line for line in render_comment(d).splitlines() if line.startswith("| setup-simulated<br>"))
    assert "<sub>evals/cases/setup-simulated.yaml:1 · conversation took 5 turns, 2 on base</sub>" in row
    one = diff_reports(report([_talk("s", turns=2)]), report([_talk("s", turns=1)]))
    assert "conversation took 1 turn, 2 on base" in render_comment(one)


def test_the_conversation_note_keeps_every_table_row_whole() -> None:
    for rows in tables(render_comment(conversations())):
        assert {row.count("|") for row in rows} == {rows[0].count("|")}, rows
