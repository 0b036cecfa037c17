"""The HTML report's routing section, opened in a real headless Chromium: the confusion matrix of
the trigger prompts (which skill each prompt belongs to × which skill it fired), each skill's
recall and precision with their 95% intervals, harness problems, and the trigger prompts listed
by their text.

The reports are built with the project's own models and `summarize` (which computes the matrix
and the Wilson intervals) for three skills and prompts that belong to none, and the pages are
written by the real `aam-eval view`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aam_eval_action.report import (
    AgentInfo,
    Attempt,
    CaseResult,
    Report,
    RunConfig,
    Verdict,
    merge_reports,
    summarize,
    to_json,
)

from conftest import aam_eval
from support.browser import Browser, Page, running_browser, show, texts

C, M, R = "changelog-writer", "commit-message", "release-notes"
XSS = "<img src=x onerror=alert(1)>"
HOSTILE = '<img src=x onerror="window.__pwned=1"></script><script>window.__pwned=2</script>'


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    yield from running_browser()


def prompts_listed(page: Page) -> list[str]:
    return texts(page, "#trigger-rows td.prompt .ptext")


def trigger(name: str, target: str, expected: str, routed: str, rate: float | None, verdict: Verdict,
            fired: list[str], prompt: str, *, should: bool = True, **more: Any) -> CaseResult:
    """A trigger case as `aam-eval run` reports it: three runs, the shown session's skills."""
    runs = [Attempt(verdict=verdict, skills_fired=fired) for _ in range(3)]
    return CaseResult(name=name, target=f"skill:{target}", verdict=verdict, trigger_expected=should,
                      skill_triggered=target in fired, expected_skill=expected, routed_to=routed,
                      fire_rate=rate, skills_fired=fired, prompt=prompt, attempts=runs,
                      error=None if verdict == "PASS" else f"routed wrong: the prompt went to {routed}", **more)


def suite(negative_prompt: str = "Fix the failing unit test in tests/test_parse.py") -> list[CaseResult]:
    """Three skills' trigger prompts and two that belong to no skill (names hashed, as drafted)."""
    return [
        trigger("trg-c-0a1f", C, C, C, 1.0, "PASS", [C], "Use the changelog-writer skill to update CHANGELOG.md", canary=True),
        trigger("trg-c-1b2e", C, C, C, 1.0, "PASS", [C], "Add the commits since v1.2 to the changelog"),
        trigger("trg-c-2c3d", C, C, C, 0.6667, "PASS", [C], "What changed since the last tag? Write it up for CHANGELOG.md"),
        trigger("trg-c-3d4c", C, C, R, 0.3333, "FAIL", [R], "Draft the notes for the 2.0 release from the changelog"),
        trigger("trg-m-0e5b", M, M, M, 1.0, "PASS", [M], "Use the commit-message skill to write a message for the staged diff",
                canary=True),
        trigger("trg-m-1f6a", M, M, M, 1.0, "PASS", [M], "Write a commit message for these staged changes", draft="unreviewed"),
        trigger("trg-m-2a79", M, M, "none", 0.0, "FAIL", [], "Summarise my staged diff in one line"),
        trigger("trg-m-3b88", M, M, "none", None, "ERROR", [], "Describe this change for the git log"),
        trigger("trg-r-0c97", R, R, "none", 0.0, "FAIL", [], "Use the release-notes skill to write the notes for v2.0",
                canary=True),
        trigger("trg-r-1da6", R, R, R, 1.0, "PASS", [C, R], "Write release notes for our customers about 2.0"),
        trigger("trg-r-2eb5", R, R, C, 0.0, "FAIL", [C], "Announce the new version to our users", draft="unreviewed"),
        trigger("near-c-3fc4", C, R, R, 0.0, "PASS", [R], "Write the release announcement for 2.0", should=False,
                draft="reviewed"),
        trigger("neg-m-4ad3", M, "none", "none", 0.0, "PASS", [], negative_prompt, should=False),
        trigger("neg-m-5be2", M, "none", M, 0.6667, "FAIL", [M], "Rename the variable foo to bar in utils.py", should=False),
        CaseResult(name="csv-summary", target="skill:csv-summary", verdict="PASS"),  # not a trigger case
    ]


def report_of(cases: list[CaseResult], engine: str = "claude-code", model: str = "claude-sonnet-4-6") -> Report:
    report = Report(version=1, id="eval-run-2026-11-23T10-00-00Z", timestamp="2026-11-23T10:00:00Z",
                    duration_seconds=12.5, config=RunConfig(engine=engine, model=model, mode="replay"),
                    agent=AgentInfo(runtime=engine, model=model), summary=summarize(cases),
                    cases=sorted(cases, key=lambda c: c.name))
    assert report.summary.routing is not None
    report.summary.routing.threshold = 0.5
    return report


def view(report: Report, folder: Path) -> Path:
    """The page `aam-eval view` writes for this report."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "report.json").write_text(to_json(report))
    result = aam_eval("view", str(folder / "report.json"), "-o", str(folder / "page.html"))
    assert result.code == 0, result.out + result.err
    return folder / "page.html"


@pytest.fixture(scope="module")
def routed_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return view(report_of(suite()), tmp_path_factory.mktemp("routing"))


# --- the matrix -------------------------------------------------------------------------------


def test_the_matrix_counts_where_each_prompt_went(browser: Browser, routed_page: Path) -> None:
    page = show(browser, routed_page)
    assert page.js("document.querySelector('#routing h2').innerText") == "Routing"
    assert texts(page, "#confusion-0 thead th.col") == [C, M, R, "none"]
    assert texts(page, "#confusion-0 tbody th.row") == [C, M, R, "none"]
    cells = page.js("[...document.querySelectorAll('#confusion-0 tbody tr')].map(tr => "
                    "[...tr.querySelectorAll('td.cell')].map(td => td.innerText))")
    assert cells == [["3", "0", "1", "0"],   # changelog-writer: one prompt went to release-notes
                     ["0", "2", "0", "1"],   # commit-message: one fired nothing (the errored one is not counted)
                     ["1", "0", "2", "1"],   # release-notes: its canary fired nothing; one went to changelog-writer
                     ["0", "1", "0", "1"]]   # no skill: one fired commit-message
    diagonal = page.js("[...document.querySelectorAll('#confusion-0 td.diag')].map(td => td.dataset.row + '=' + td.dataset.col)")
    assert diagonal == [f"{C}={C}", f"{M}={M}", f"{R}={R}", "none=none"]
    flagged = page.js("[...document.querySelectorAll('#confusion-0 td.off')].map(td => td.dataset.row + '>' + td.dataset.col)")
    assert flagged == [f"{C}>{R}", f"{M}>none", f"{R}>{C}", f"{R}>none", f"none>{M}"]
    # Each cell shaded by its distance from what it should be: the diagonal by its recall, the
    # others by their leak (their share of the row); an empty cell off the diagonal unshaded.
    shades = page.js("[...document.querySelectorAll('#confusion-0 tbody tr')].map(tr => "
                     "[...tr.querySelectorAll('td.cell')].map(td => (td.className.match(/ d(\\d)/) || ['', '-'])[1]))")
    assert shades == [["1", "-", "1", "-"],   # 3 of 4 reached it; 1 of 4 leaked
                      ["-", "2", "-", "2"],   # 2 of 3; 1 of 3
                      ["1", "-", "2", "1"],   # 2 of 4; 1 of 4 each way
                      ["-", "2", "-", "2"]]   # 1 of 2 fired nothing, as it should; 1 of 2 fired a skill
    style = page.js("""(() => { const css = s => getComputedStyle(document.querySelector(s));
        return [css('#confusion-0 td.diag').fontWeight, css('#confusion-0 td.off').backgroundColor,
                css('#confusion-0 td.zero').backgroundColor]; })()""")
    assert style[0] == "700" and style[1] == "rgb(255, 248, 197)" and style[2] != style[1]
    assert page.js(f"document.querySelector('#confusion-0 td[data-row=\"{M}\"][data-col=\"{M}\"]').title") == (
        "2 prompts that belong to commit-message fired commit-message (recall 67% of 3) (click to list them)")
    # Recall on each skill's row, precision under each skill's column, with their 95% intervals.
    assert texts(page, "#confusion-0 td.recall") == [
        "75% (30–95%) of 4", "67% (21–94%) of 3 · 1 errored, not counted", "50% (15–85%) of 4", "–"]
    assert texts(page, "#confusion-0 td.precision") == [
        "75% (30–95%) of 4 fired", "67% (21–94%) of 3 fired", "67% (21–94%) of 3 fired", "–"]
    about = page.js("document.querySelector('.routing-pair > p.muted').innerText")
    assert about.startswith("3 runs per prompt; a prompt fired a skill when the skill loaded in at least 50% of its runs")
    assert page.requests() == [routed_page.as_uri()]
    assert page.problems() == []


def test_a_skill_no_prompt_reaches_is_shaded_as_far_off_as_it_is(browser: Browser, tmp_path: Path) -> None:
    """A 0 on the diagonal (none of the skill's 16 prompts reached it) is the reddest cell, a
    perfect skill's the greenest; in the page and in the PR comment's matrix."""
    from aam_eval_action.diff import diff_reports
    from aam_eval_action.render.comment import render_comment

    cases = [trigger(f"trg-r-{i:02d}", R, R, "none", 0.0, "FAIL", [], f"Write the notes for release {i}")
             for i in range(16)]
    cases += [trigger(f"trg-c-{i:02d}", C, C, C, 1.0, "PASS", [C], f"Add commit {i} to the changelog") for i in range(2)]
    report = report_of(cases)
    page = show(browser, view(report, tmp_path / "lost"))
    cell = "#confusion-0 td[data-row='{}'][data-col='{}']"
    colours = page.js(f"""(() => [{", ".join(
        f"[getComputedStyle(document.querySelector(`{cell.format(a, b)}`)).backgroundColor, "
        f"document.querySelector(`{cell.format(a, b)}`).innerText]" for a, b in ((R, R), (R, "none"), (C, C), (C, R)))}])()""")
    red, green = "rgb(207, 34, 46)", "rgb(218, 251, 225)"
    assert colours[0] == [red, "0"] and colours[1] == [red, "16"]   # 0 of 16 reached it: all 16 fired nothing
    assert colours[2] == [green, "2"]                               # 2 of 2
    assert colours[3][0] not in (red, green) and colours[3][1] == "0"  # nothing leaked: unshaded
    assert page.problems() == []
    comment = render_comment(diff_reports(None, report))
    assert f"| {R} | 0 | 🟥 0 | 🟥 16 |" in comment.replace("\\-", "-")
    assert f"| {C} | 🟩 **2** | 0 | 0 |" in comment.replace("\\-", "-")


def test_a_canary_that_did_not_fire_is_a_harness_warning_above_the_numbers(browser: Browser, routed_page: Path) -> None:
    page = show(browser, routed_page)
    warnings = texts(page, "#routing .warn.harness")
    assert len(warnings) == 1
    assert warnings[0].startswith(f"Harness problem, {R}: its canary, which names {R} outright, did not fire it")
    assert "a harness fault, not its description" in warnings[0]
    above = page.js("!!(document.querySelector('#routing .warn.harness').compareDocumentPosition("
                    "document.getElementById('confusion-0')) & Node.DOCUMENT_POSITION_FOLLOWING)")
    assert above
    # Its numbers stay in the table, shown as not to be trusted.
    suspect = page.js("[...document.querySelectorAll('#confusion-0 td.suspect')].map(td => td.dataset.skill)")
    assert suspect == [R, R]


# --- the trigger prompts ----------------------------------------------------------------------


def test_the_trigger_table_lists_each_prompt_by_its_text(browser: Browser, routed_page: Path) -> None:
    page = show(browser, routed_page)
    expected = [c for c in suite() if c.expected_skill is not None]
    assert sorted(prompts_listed(page)) == sorted(c.prompt or "" for c in expected)
    assert page.js("document.getElementById('trigger-count').innerText") == "14 of 14 trigger prompts"
    row = {c.name: c for c in expected}
    shown = page.js("""[...document.querySelectorAll('#trigger-rows tr')].map(tr => ({
        name: tr.querySelector('.case-ref').innerText, belongs: tr.querySelector('td.expected').innerText,
        fired: tr.querySelector('td.fired').innerText, rate: tr.querySelector('td.rate').innerText,
        verdict: tr.querySelector('td.verdict').innerText,
        tags: [...tr.querySelectorAll('.tag')].map(t => t.innerText)}))""")
    assert {s["name"] for s in shown} == set(row)  # the case name, small, under its prompt
    by_name = {s["name"]: s for s in shown}
    assert by_name["trg-c-3d4c"] | {"tags": None} == {
        "name": "trg-c-3d4c", "belongs": C, "fired": R, "rate": "33.3%\nof 3 runs", "verdict": "FAIL", "tags": None}
    assert by_name["trg-r-1da6"]["fired"] == f"{R}\nsession loaded {C} → {R}"  # what the shown session loaded
    assert by_name["trg-m-2a79"]["fired"] == "none"
    assert by_name["near-c-3fc4"]["rate"] == f"0.0%\nof 3 runs\nof {C}"  # a near miss: its target's rate
    assert by_name["trg-m-3b88"]["verdict"] == "ERROR"
    assert by_name["trg-m-3b88"]["fired"] == "–\nevery run errored: not counted"
    assert {n for n, s in by_name.items() if "canary" in s["tags"]} == {"trg-c-0a1f", "trg-m-0e5b", "trg-r-0c97"}
    assert {n for n, s in by_name.items() if "drafted, not reviewed" in s["tags"]} == {"trg-m-1f6a", "trg-r-2eb5"}
    assert page.js("document.getElementById('drafted-unreviewed').innerText").startswith(
        "2 cases drafted by aam-eval init have not been reviewed by a person yet")


def test_the_trigger_table_filters_sorts_and_follows_the_matrix(browser: Browser, routed_page: Path) -> None:
    page = show(browser, routed_page)
    page.click('#trigger-filters button[data-filter="misrouted"]')
    assert sorted(prompts_listed(page)) == sorted([
        "Draft the notes for the 2.0 release from the changelog", "Summarise my staged diff in one line",
        "Use the release-notes skill to write the notes for v2.0", "Announce the new version to our users",
        "Rename the variable foo to bar in utils.py"])
    page.click('#trigger-filters button[data-filter="canary"]')
    assert len(prompts_listed(page)) == 3
    page.click('#trigger-filters button[data-filter="all"]')
    page.type("#trigger-search", "staged")
    assert sorted(prompts_listed(page)) == sorted([
        "Use the commit-message skill to write a message for the staged diff",
        "Write a commit message for these staged changes", "Summarise my staged diff in one line"])
    page.js("(() => { const s = document.getElementById('trigger-search'); s.value = ''; s.dispatchEvent(new Event('input')); })()")
    page.click('#trigger-table th[data-sort="rate"]')
    page.click('#trigger-table th[data-sort="rate"]')
    assert texts(page, "#trigger-rows td.rate")[0].startswith("100.0%")
    assert texts(page, "#trigger-rows td.rate")[-1].startswith("–")  # the errored prompt: no rate
    # A flagged cell of the matrix lists the prompts it counts.
    page.click(f'#confusion-0 td[data-row="{R}"][data-col="{C}"]')
    assert prompts_listed(page) == ["Announce the new version to our users"]
    assert page.js("document.getElementById('trigger-cell').innerText").startswith(
        f"Only the prompts that belong to {R} and fired {C}")
    page.click("#trigger-cell button")
    assert len(prompts_listed(page)) == 14


def test_choosing_a_prompt_opens_its_case(browser: Browser, routed_page: Path) -> None:
    page = show(browser, routed_page)
    index = page.js("""[...document.querySelectorAll('#trigger-rows tr')].find(tr =>
        tr.querySelector('.case-ref').innerText === 'trg-r-1da6').dataset.case""")
    page.click(f'#trigger-rows tr[data-case="{index}"] td.prompt')
    page.wait_for("document.getElementById('case-view')?.dataset.name === 'trg-r-1da6'")
    assert page.js(f"document.querySelector('#trigger-rows tr[data-case=\"{index}\"]').classList.contains('open')")
    verdict = page.js("document.getElementById('verdict').innerText")
    assert f"belongs to\n{R}" in verdict and f"went to\n{R} · target fired in 100.0% of its runs" in verdict
    assert f"session loaded\n{C} → {R}" in verdict
    assert texts(page, "#case-view .attempts li")[0].endswith(f"loaded {C} → {R}")
    # No package beside the report: the prompt the report kept is shown, and said to be from it.
    assert page.js("document.querySelector('#prompt pre').innerText") == "Write release notes for our customers about 2.0"
    assert page.js("document.getElementById('prompt-from-report').innerText").startswith("from the report")
    assert page.problems() == []


# --- untrusted text ---------------------------------------------------------------------------


def test_hostile_prompts_skill_and_case_names_stay_text(browser: Browser, tmp_path: Path) -> None:
    cases = suite(negative_prompt=XSS)
    cases.append(trigger(HOSTILE, C, HOSTILE, HOSTILE, 0.0, "PASS", [HOSTILE], HOSTILE + " " + XSS, should=False))
    page_path = view(report_of(cases), tmp_path)
    text = page_path.read_text()
    assert "<img" not in text and "</script><script>window" not in text
    page = show(browser, page_path)
    assert page.js("typeof window.__pwned") == "undefined"
    assert page.events("Page.javascriptDialogOpening") == []  # alert(1) never ran
    assert page.js("document.querySelectorAll('img, a, iframe, object, embed, svg, script:not([type])').length") == 1
    assert page.js("[...document.querySelectorAll('*')].filter(e => [...e.attributes].some(a => a.name.startsWith('on'))).length") == 0
    listed = prompts_listed(page)
    assert XSS in listed and f"{HOSTILE} {XSS}" in listed
    assert HOSTILE in texts(page, "#confusion-0 thead th.col") and HOSTILE in texts(page, "#confusion-0 tbody th.row")
    assert HOSTILE in texts(page, "#trigger-rows .case-ref")
    index = page.js(f"[...document.querySelectorAll('#trigger-rows tr')].find(tr => tr.querySelector('.case-ref').innerText === "
                    f"{json.dumps(HOSTILE)}).dataset.case")
    page.click(f'#trigger-rows tr[data-case="{index}"] td.prompt')
    page.wait_for(f"document.getElementById('case-view')?.dataset.name === {json.dumps(HOSTILE)}")
    assert page.js("typeof window.__pwned") == "undefined"
    assert page.requests() == [page_path.as_uri()]
    assert page.problems() == []


# --- several engines and models ----------------------------------------------------------------


def test_each_engine_and_model_has_its_own_matrix(browser: Browser, tmp_path: Path) -> None:
    gemini = suite()
    for case in gemini:
        if case.name in ("trg-r-0c97", "trg-c-3d4c"):  # on Gemini both reach their own skill
            skill = (case.target or "").removeprefix("skill:")
            case.routed_to, case.skills_fired, case.fire_rate, case.verdict, case.error = skill, [skill], 1.0, "PASS", None
    merged = merge_reports([report_of(suite()), report_of(gemini, "gemini-cli", "gemini-2.5-pro")])
    assert merged.pairs is not None and len(merged.pairs) == 2
    page = show(browser, view(merged, tmp_path))
    assert texts(page, "#routing .routing-pair h3") == ["claude-code · claude-sonnet-4-6", "gemini-cli · gemini-2.5-pro"]
    diagonal = [texts(page, f"#confusion-{k} td.diag") for k in (0, 1)]
    assert diagonal == [["3", "2", "2", "1"], ["4", "2", "3", "1"]]
    assert len(texts(page, "#routing .warn.harness")) == 1  # only Claude Code's canary missed
    assert page.js("document.querySelector('#routing .warn.harness').closest('.routing-pair').dataset.pair") == "0"
    assert len(prompts_listed(page)) == 28
    page.click(f'#confusion-1 td[data-row="{R}"][data-col="{R}"]')
    rows = texts(page, "#trigger-rows tr")
    assert len(rows) == 3 and all("gemini-cli · gemini-2.5-pro" in r for r in rows)


def test_a_report_without_trigger_cases_has_no_routing_section(browser: Browser, tmp_path: Path) -> None:
    cases = [CaseResult(name="csv-summary", target="skill:csv-summary", verdict="PASS")]
    report = Report(version=1, id="eval-run-x", timestamp="2026-11-23T10:00:00Z", duration_seconds=1,
                    config=RunConfig(engine="claude-code"), summary=summarize(cases), cases=cases)
    page = show(browser, view(report, tmp_path))
    assert page.js("document.getElementById('routing')") is None
    assert len(texts(page, "#case-rows tr")) == 1
    assert page.problems() == []


def test_with_a_base_the_prompts_that_moved_are_listed(browser: Browser, tmp_path: Path) -> None:
    base = suite()
    for case in base:
        if case.name == "trg-c-3d4c":  # on the base it still reached its own skill
            case.routed_to, case.skills_fired, case.fire_rate, case.verdict, case.error = C, [C], 1.0, "PASS", None
    (tmp_path / "base.json").write_text(to_json(report_of(base)))
    (tmp_path / "head.json").write_text(to_json(report_of(suite())))
    result = aam_eval("view", str(tmp_path / "head.json"), "--base", str(tmp_path / "base.json"),
                      "-o", str(tmp_path / "page.html"))
    assert result.code == 0, result.out + result.err
    page = show(browser, tmp_path / "page.html")
    page.click('#trigger-filters button[data-filter="moved"]')
    assert prompts_listed(page) == ["Draft the notes for the 2.0 release from the changelog"]
    assert texts(page, "#trigger-rows td.fired") == [f"{R}\non base: {C}"]
    assert page.problems() == []
