"""The HTML report on a wide screen, in a real headless Chromium: the case list shows every
column without scrolling sideways, a run of several engines is a case × engine grid whose cells
open that engine's session, and the trends tell two runs of one day apart.

Reports come from replaying the shipped example (its cassettes hold four engines' sessions) with
the real CLI, and from the project's own report models and `merge_reports`; the pages are
written by the real `aam-eval run --html` and `aam-eval view`.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aam_eval_action.commands.action import trend_chart
from aam_eval_action.render.html import run_labels
from aam_eval_action.report import (
    AgentInfo,
    CaseResult,
    Report,
    RunConfig,
    load_report,
    merge_reports,
    summarize,
    to_json,
)

from conftest import EXAMPLE, aam_eval, example_repository
from support.browser import Browser, Page, running_browser, show, texts

SCREENS = [(1400, 900), (1920, 1080)]
LONG_NAME = "a-case-whose-name-goes-on-and-on-" * 4 + "x" * 90
HOSTILE = '<img src=x onerror="window.__pwned=1"></script><script>window.__pwned=2</script> javascript:window.__pwned=3'
FOUR = [("claude-code", "claude-sonnet-4-6"), ("codex", "gpt-5.5"), ("copilot", "claude-sonnet-4-6"),
        ("gemini-cli", "gemini-2.5-pro")]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    yield from running_browser()


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository holding a copy of the shipped example and its cassettes."""
    return example_repository(tmp_path_factory.mktemp("repo"))


def replay(package: Path, out: Path, *extra: str) -> Path:
    result = aam_eval("run", "--replay", "--package", str(package), "-o", str(out), *extra)
    assert result.code in (0, 1), result.out + result.err
    return out


@pytest.fixture(scope="module")
def one_engine(example: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example on Claude Code: its report."""
    return replay(example, tmp_path_factory.mktemp("one") / "report.json")


@pytest.fixture(scope="module")
def widest_single(example: Path, one_engine: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-engine page with every column it can have beside a base (Base, Change), and a case
    whose name, target and failed checks run long (a name without a break among them)."""
    tmp = tmp_path_factory.mktemp("widest")
    report = load_report(one_engine)
    long = report.cases[0].model_copy(update={
        "name": LONG_NAME, "target": "skill:" + "csv-summary-" * 6, "verdict": "FAIL",
        "deterministic_checks": {f"check_number_{n}_of_a_long_list": "FAIL" for n in range(6)}})
    report.cases = sorted([*report.cases, long], key=lambda c: c.name)
    report.summary = summarize(report.cases)
    (tmp / "head.json").write_text(to_json(report))
    result = aam_eval("view", str(tmp / "head.json"), "--base", str(one_engine), "--package", str(example),
                      "-o", str(tmp / "page.html"))
    assert result.code == 0, result.out + result.err
    return tmp / "page.html"


@pytest.fixture(scope="module")
def four_engines(example: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`run --replay --engine <all four> --html`: the page."""
    tmp = tmp_path_factory.mktemp("four")
    replay(example, tmp / "report.json", "--engine", ",".join(e for e, _ in FOUR), "--html", str(tmp / "page.html"))
    return tmp / "page.html"


@pytest.fixture(scope="module")
def two_engines(example: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`run --replay --engine claude-code,codex --html`: the page."""
    tmp = tmp_path_factory.mktemp("two")
    replay(example, tmp / "report.json", "--engine", "claude-code,codex", "--html", str(tmp / "page.html"))
    return tmp / "page.html"


def case_list(page: Page) -> dict[str, Any]:
    """Where the case list's column headers are once the list is scrolled to, and its widths."""
    found: dict[str, Any] = page.js("""(() => {
        const list = document.getElementById('case-list');
        list.scrollIntoView({block: 'start'});
        const heads = [...document.querySelectorAll('#case-table thead th')].map(th => {
          const r = th.getBoundingClientRect();
          return {text: th.innerText, left: r.left, right: r.right, top: r.top, bottom: r.bottom}; });
        return {heads, scroll: list.scrollWidth, client: list.clientWidth,
                page: document.documentElement.scrollWidth, width: innerWidth, height: innerHeight}; })()""")
    return found


def assert_every_column_shows(page: Page, headers: list[str]) -> None:
    found = case_list(page)
    assert [h["text"] for h in found["heads"]] == headers
    for head in found["heads"]:
        assert head["left"] >= 0 and head["right"] <= found["width"], (head, found["width"])
        assert head["top"] >= 0 and head["bottom"] <= found["height"], (head, found["height"])
    assert found["scroll"] <= found["client"], found  # the list does not scroll sideways
    assert found["page"] <= found["width"], found  # nor does the page


# --- every column in view -----------------------------------------------------------------------


@pytest.mark.parametrize(("width", "height"), SCREENS)
def test_the_case_list_shows_every_column_without_scrolling_sideways(
    browser: Browser, widest_single: Path, four_engines: Path, width: int, height: int
) -> None:
    single = ["Verdict", "Case", "Target", "Base", "Change", "Failed", "Time", "Cost"]
    page = show(browser, widest_single, width, height)
    # Nothing opened yet: no empty case pane beside the list, which has the page's width.
    assert page.js("getComputedStyle(document.getElementById('case')).display") == "none"
    assert page.js("document.getElementById('case-list').clientWidth") > width * 0.9
    assert_every_column_shows(page, single)
    assert page.js("document.querySelector('#case-rows td.name').title") == LONG_NAME  # cut short, named in full
    # A case opened: the pane beside the list, and still every column of the list in view.
    page.click('#case-rows tr[data-case="0"] td')
    page.wait_for(f"document.getElementById('case-view')?.dataset.name === {json.dumps(LONG_NAME)}")
    assert page.js("document.getElementById('case').getBoundingClientRect().left") > width / 3
    assert_every_column_shows(page, single)
    # Closed again, the list has the width back.
    page.click("#close-case")
    assert page.js("document.getElementById('case-view')") is None
    assert page.js("getComputedStyle(document.getElementById('case')).display") == "none"

    grid = ["Case", "Target", *(f"{e}\n{m}" for e, m in FOUR), "Passed"]
    page = show(browser, four_engines, width, height)
    assert_every_column_shows(page, grid)
    page.click('#case-rows tr[data-row="0"] td.pair[data-engine="gemini-cli"]')
    page.wait_for("document.getElementById('case-view')?.dataset.engine === 'gemini-cli'")
    assert_every_column_shows(page, grid)
    assert page.requests() == [four_engines.as_uri()]
    assert page.problems() == []


# --- several engines: a case × engine grid ------------------------------------------------------


def open_cell(page: Page, name: str, engine: str) -> str:
    """Click the verdict of `name` on `engine`; the opened case's text."""
    row = page.js(f"""[...document.querySelectorAll('#case-rows tr')].find(tr =>
        tr.querySelector('td.name').innerText === {json.dumps(name)})?.dataset.row""")
    assert row is not None, f"no row for {name}"
    page.click(f'#case-rows tr[data-row="{row}"] td.pair[data-engine="{engine}"]')
    page.wait_for(f"document.getElementById('case-view')?.dataset.name === {json.dumps(name)} && "
                  f"document.getElementById('case-view').dataset.engine === {json.dumps(engine)}")
    return str(page.js("document.getElementById('case-view').innerText"))


def grid_rows(page: Page) -> dict[str, list[str]]:
    """Each listed case and its verdict per engine · model, in the order shown."""
    found: list[list[str]] = page.js("""[...document.querySelectorAll('#case-rows tr')].map(tr =>
        [tr.querySelector('td.name').innerText, ...[...tr.querySelectorAll('td.pair')].map(td => td.innerText)])""")
    return {row[0]: row[1:] for row in found}


def test_a_two_engine_run_is_a_grid_whose_cells_open_that_engines_session(
    browser: Browser, two_engines: Path, four_engines: Path
) -> None:
    page = show(browser, two_engines)
    heads = page.js("""[...document.querySelectorAll('#case-table thead th.pair')].map(th =>
        [th.querySelector('.engine').innerText, th.querySelector('.model').innerText])""")
    assert heads == [["claude-code", "claude-sonnet-4-6"], ["codex", "gpt-5.5"]]
    assert texts(page, "#case-table thead th") == ["Case", "Target", "claude-code\nclaude-sonnet-4-6", "codex\ngpt-5.5", "Passed"]
    rows = grid_rows(page)
    assert list(rows) == ["average-revenue", "changelog-entry", "csv-summary-e2e", "hook-blocks-env-write",
                          "json-row-count", "no-invented-numbers", "scratch-copy-sandbox"]  # one row per case, not 14
    assert all(len(verdicts) == 2 and set(verdicts) <= {"PASS", "FAIL"} for verdicts in rows.values())
    assert rows["hook-blocks-env-write"] == ["PASS", "PASS"] and rows["average-revenue"] == ["FAIL", "FAIL"]
    assert page.js("document.getElementById('case-count').innerText") == "7 of 7 cases × 2 engine · model pairs"
    assert texts(page, "#case-rows td.passed")[:2] == ["0/2", "2/2"]

    # A cell opens that engine's session: Codex ran a command the hook refused, Claude Code a Write.
    shown = open_cell(page, "hook-blocks-env-write", "codex")
    assert "hook:pre-tool-use · codex · gpt-5.5" in shown
    assert texts(page, "#case-pairs button[aria-pressed='true']") == ["PASS codex · gpt-5.5"]
    assert page.js("document.querySelector('#transcript .muted').innerText").endswith("hook-blocks-env-write/codex.session.yaml")
    assert texts(page, "#case-view .turn .tool-name") == ["exec_command"]
    assert "Command blocked by PreToolUse hook" in texts(page, "#case-view .call .hook")[0]
    assert texts(page, "#case-rows td.pair.open") == ["PASS"]
    assert page.js("document.querySelector('#case-rows td.pair.open').dataset.engine") == "codex"
    assert page.js("location.hash") == "#case-" + page.js("document.querySelector('#case-rows td.pair.open').dataset.case")

    shown = open_cell(page, "hook-blocks-env-write", "claude-code")
    assert "hook:pre-tool-use · claude-code · claude-sonnet-4-6" in shown
    assert texts(page, "#case-view .turn .tool-name") == ["Write"]
    assert page.js("document.querySelector('#case-rows td.pair.open').dataset.engine") == "claude-code"
    assert page.js("document.querySelectorAll('#case-rows td.pair.open').length") == 1
    # The same case on the other engine, from the case itself.
    page.click('#case-pairs button[data-engine="codex"]')
    page.wait_for("document.getElementById('case-view').dataset.engine === 'codex'")
    assert texts(page, "#case-view .turn .tool-name") == ["exec_command"]

    # Filters list the cases with a matching result somewhere and dim the other cells (on four
    # engines, only Gemini CLI fails hook-blocks-env-write); search and sorting work on the rows.
    page.click('button[data-filter="failures"]')
    failing = grid_rows(page)
    assert set(failing) == {name for name, verdicts in rows.items() if "FAIL" in verdicts}
    assert page.js("document.querySelectorAll('#case-rows td.pair.dim').length") == 0  # both engines fail the same
    assert page.js("document.getElementById('case-count').innerText") == (
        f"{len(failing)} of 7 cases × 2 engine · model pairs · "
        f"{sum(v.count('FAIL') for v in rows.values())} of 14 results")
    four = show(browser, four_engines)
    four.click('button[data-filter="failures"]')
    assert grid_rows(four)["hook-blocks-env-write"] == ["PASS", "PASS", "PASS", "FAIL"]
    dimmed = four.js("""[...document.querySelectorAll('#case-rows td.pair.dim')].map(td =>
        td.closest('tr').querySelector('td.name').innerText + ' ' + td.dataset.engine)""")
    assert dimmed == [f"hook-blocks-env-write {e}" for e in ("claude-code", "codex", "copilot")]
    assert four.js("document.querySelector('button[data-filter=\"failures\"] .n').innerText") == str(len(grid_rows(four)))
    page = show(browser, two_engines)
    page.click('button[data-filter="all"]')
    page.type("#search", "hook")
    assert list(grid_rows(page)) == ["hook-blocks-env-write"]
    page.js("(() => { const s = document.getElementById('search'); s.value = ''; s.dispatchEvent(new Event('input')); })()")
    page.click('th[data-sort="name"]')
    page.click('th[data-sort="name"]')
    assert list(grid_rows(page)) == sorted(rows, reverse=True)
    page.click('#case-table th.pair[data-engine="codex"]')
    assert [v[1] for v in grid_rows(page).values()] == sorted(v[1] for v in rows.values())
    assert page.requests() == [two_engines.as_uri()]
    assert page.problems() == []


def test_a_single_engine_run_keeps_its_table(browser: Browser, one_engine: Path, tmp_path: Path) -> None:
    aam_eval("view", str(one_engine), "--package", str(EXAMPLE), "-o", str(tmp_path / "page.html"))
    page = show(browser, tmp_path / "page.html")
    assert texts(page, "#case-table thead th") == ["Verdict", "Case", "Target", "Failed", "Time", "Cost"]
    assert page.js("document.querySelectorAll('#case-table td.pair, #case-pairs').length") == 0
    assert len(texts(page, "#case-rows tr")) == 7


def hostile_grid(tmp_path: Path) -> Path:
    """A report of two pairs, built with the real models and merged, whose case names, targets,
    checks, errors and second model are hostile strings."""
    def run(engine: str, model: str) -> Report:
        cases = [CaseResult(name=HOSTILE, target=HOSTILE, verdict="FAIL", error=HOSTILE,
                            deterministic_checks={HOSTILE: "FAIL"}),
                 CaseResult(name="plain", verdict="PASS")]
        return Report(version=1, id=f"eval-run-{engine}", timestamp="2026-11-25T14:03:00Z", duration_seconds=1,
                      config=RunConfig(engine=engine, model=model, mode="replay"), agent=AgentInfo(runtime=engine, model=model),
                      summary=summarize(cases), cases=cases)

    merged = merge_reports([run("claude-code", "claude-sonnet-4-6"), run("codex", HOSTILE)])
    assert merged.pairs is not None and len(merged.pairs) == 2
    (tmp_path / "r.json").write_text(to_json(merged))
    result = aam_eval("view", str(tmp_path / "r.json"), "-o", str(tmp_path / "page.html"))
    assert result.code == 0, result.out + result.err
    return tmp_path / "page.html"


def test_hostile_names_in_the_grid_stay_text(browser: Browser, tmp_path: Path) -> None:
    page_path = hostile_grid(tmp_path)
    assert "<img" not in page_path.read_text()
    page = show(browser, page_path)
    assert HOSTILE in texts(page, "#case-table thead th.pair .model")
    assert HOSTILE in texts(page, "#case-rows td.name")
    for cell in range(page.js("document.querySelectorAll('#case-rows td.pair').length")):
        page.click(f'#case-rows td.pair[data-case="{cell}"]')
        page.wait_for(f"document.querySelector('#case-rows td.pair.open')?.dataset.case === '{cell}'")
        page.js("document.querySelectorAll('details').forEach(d => d.open = true)")
        assert page.js("typeof window.__pwned") == "undefined"
    assert page.js("document.querySelectorAll('img, a, iframe, object, embed, svg, script:not([type])').length") == 1
    assert page.js("[...document.querySelectorAll('*')].filter(e => [...e.attributes].some(a => a.name.startsWith('on'))).length") == 0
    assert f"codex · {HOSTILE}" in page.js("document.getElementById('case-pairs').innerText")
    assert page.requests() == [page_path.as_uri()]
    assert page.problems() == []


# --- the trends tell two runs of one day apart ----------------------------------------------------


def test_two_runs_on_one_day_have_their_own_labels(browser: Browser, one_engine: Path, tmp_path: Path) -> None:
    stamps = ["2026-11-25T09:05:00Z", "2026-11-25T14:03:00Z", "2026-11-26T03:00:00Z"]
    paths = []
    for n, stamp in enumerate(stamps):
        report = load_report(one_engine)
        report.id, report.timestamp = f"eval-run-{n}", stamp
        if n == 1:
            report.cases[0].verdict = "PASS"
            report.summary = summarize(report.cases)
        paths.append(tmp_path / f"run-{n}.json")
        paths[-1].write_text(to_json(report))
    result = aam_eval("view", str(paths[-1]), "--history", *(str(p) for p in paths[:2]), "--package", str(EXAMPLE),
                      "-o", str(tmp_path / "page.html"))
    assert result.code == 0, result.err
    page = show(browser, tmp_path / "page.html")
    labels = page.js("""[...document.querySelectorAll('#trend-chart text.run')].map(t =>
        [...t.querySelectorAll('tspan')].map(s => s.textContent).join(' '))""")
    assert labels == ["11-25 09:05", "11-25 14:03", "11-26 03:00"]
    assert texts(page, "#trend-grid thead th.run") == ["11-25\n09:05", "11-25\n14:03", "11-26\n03:00"]
    assert page.requests() == [(tmp_path / "page.html").as_uri()]

    # The job summary's Mermaid chart, over the same reports kept under evals/reports/.
    folder = tmp_path / "pkg" / "evals" / "reports"
    folder.mkdir(parents=True)
    for path in paths:
        shutil.copy(path, folder / path.name)
    chart = trend_chart(tmp_path / "pkg")
    assert 'x-axis ["11-25 09:05", "11-25 14:03", "11-26 03:00"]' in chart


def test_run_labels_stay_apart_and_stay_digits() -> None:
    assert run_labels(["2026-11-25T14:03:00Z", "2026-11-25T14:03:41Z"]) == ["11-25 14:03:00", "11-25 14:03:41"]
    assert run_labels(["2025-12-31T23:00:00Z", "2026-01-01T08:00:00+02:00"]) == ["2025-12-31 23:00", "2026-01-01 06:00"]
    assert run_labels(["2026-11-25T14:03:00Z", "2026-11-25T14:03:00Z"]) == ["11-25 14:03:00 run 1", "11-25 14:03:00 run 2"]
    # A report is a file of the repository: what is not a time never reaches the chart.
    assert run_labels(['2026-11-22"] ] %%{init}T03:17:00Z', "</script>", "2026-11-23T03:17:00Z"]) == [
        "11-22", "run 2", "11-23 03:17"]
