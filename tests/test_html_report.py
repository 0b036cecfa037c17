"""The HTML report, opened in a real headless Chromium and checked for what a person sees.

Reports come from replaying the shipped example (its real cassettes: four engines' sessions
with model traffic), a base and a head made from two copies of it, and pages built from
hostile strings. The browser's own network log and console are read for requests and errors.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from aam_eval_action.render import html
from aam_eval_action.render.transcript import first_difference, traffic_turns
from aam_eval_action.replay.traffic import Conversation, RecordedResponse, SseEvent, build
from aam_eval_action.report import CaseResult, Report, load_report, summarize, to_json
from aam_eval_action.session import Session, ToolCall
from aam_eval_action.testing.model_server import ModelServer, load_scenarios
from aam_eval_action.testing.packages import record_sessions, simple_case, write_package

from conftest import EXAMPLE, PINNED_CLAUDE, ROOT, aam_eval, example_repository
from support.browser import Browser, Page, running_browser, show, texts

SCREENSHOT = ROOT / "docs" / "html-report.png"
HOSTILE = [
    '<img src=x onerror="window.__pwned=1">',
    "</script><script>window.__pwned=2</script>",
    '<a href="javascript:window.__pwned=3">click me</a>',
    "javascript:window.__pwned=4",
    "<svg onload=window.__pwned=5><!--",
    "\u2028\u2029 ]]> {{ 7*7 }} ${7*7}",
]
PAYLOAD = " ".join(HOSTILE)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    yield from running_browser()


def visible_rows(page: Page) -> list[str]:
    return texts(page, "#case-rows td.name")


def open_case(page: Page, name: str, engine: str | None = None) -> None:
    """Open a case from the case list: its row, or (a run of several engines is a case × engine
    grid) its verdict cell for `engine`."""
    found = page.js(f"""(() => {{
        const tr = [...document.querySelectorAll('#case-rows tr')].find(tr =>
          tr.querySelector('td.name').innerText === {json.dumps(name)});
        const cell = tr && [...tr.querySelectorAll('td.pair')].find(td => td.dataset.engine === {json.dumps(engine)});
        return cell ? ['td.pair', cell.dataset.case] : tr ? ['tr', tr.dataset.case] : null; }})()""")
    assert found is not None, f"no row for {name}"
    page.click(f'#case-rows td.pair[data-case="{found[1]}"]' if found[0] == "td.pair" else f'tr[data-case="{found[1]}"] td')
    page.wait_for(f"document.getElementById('case-view')?.dataset.name === {json.dumps(name)} && "
                  f"({json.dumps(engine)} === null || document.getElementById('case-view').dataset.engine === {json.dumps(engine)})")


def replay(package: Path, out: Path, *extra: str) -> Report:
    result = aam_eval("run", "--replay", "--package", str(package), "-o", str(out), *extra)
    assert result.code in (0, 1), result.out + result.err
    return load_report(out)


@pytest.fixture(scope="module")
def example_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The shipped example replayed with `--html`: (report, page)."""
    tmp = tmp_path_factory.mktemp("example")
    package = example_repository(tmp / "repo")
    replay(package, tmp / "report.json", "--html", str(tmp / "report.html"))
    return tmp / "report.json", tmp / "report.html"


@pytest.fixture(scope="module")
def base_and_head(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two checkouts of the example; on the head, csv-summary-e2e's recorded final answer
    reports another total (its last turn), so the case regresses there; `view` of head with
    base: (base report, page)."""
    tmp = tmp_path_factory.mktemp("diff")
    base_pkg, head_pkg = example_repository(tmp / "base"), example_repository(tmp / "head")
    cassette = tmp / "head" / "cassettes" / "csv-summary-e2e" / "claude-code.session.yaml"
    data = yaml.safe_load(cassette.read_text())
    data["attempts"][0]["output"] = data["attempts"][0]["output"].replace("952.75", "999.00")
    for event in data["model_traffic"][0]["exchanges"][2]["response"]["events"]:
        delta = event["data"].get("delta") or {}
        if "text" in delta:
            delta["text"] = delta["text"].replace("952.75", "999.00")
    cassette.write_text(yaml.safe_dump(data, sort_keys=True, allow_unicode=True))
    replay(base_pkg, tmp / "base.json")
    replay(head_pkg, tmp / "head.json")
    result = aam_eval("view", str(tmp / "head.json"), "--base", str(tmp / "base.json"), "-o", str(tmp / "page.html"))
    assert result.code == 0, result.out + result.err
    return tmp / "base.json", tmp / "page.html"


# --- what a person sees ------------------------------------------------------------------------


def test_the_page_is_one_file_that_asks_for_nothing(browser: Browser, example_run: tuple[Path, Path]) -> None:
    _, page_path = example_run
    text = page_path.read_text()
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', text)
    assert csp is not None
    assert csp.group(1).startswith("default-src 'none'; script-src 'sha256-")
    assert "'unsafe-inline'" not in csp.group(1)
    assert not re.search(r"<(link|img|iframe)\b|\bsrc=", text)
    page = show(browser, page_path)
    assert page.requests() == [page_path.as_uri()]
    assert page.problems() == []  # no script error, no request or inline code the policy refused


def test_overview_shows_the_run(browser: Browser, example_run: tuple[Path, Path]) -> None:
    report_path, page_path = example_run
    report = load_report(report_path)
    page = show(browser, page_path)
    assert page.js("document.getElementById('headline-head').innerText") == "57.1%"
    assert page.js("document.getElementById('headline-over').innerText") == "graded over 7 of 7 cases"
    assert page.js("document.getElementById('count-passed').innerText") == f"{report.summary.passed} passed"
    assert page.js("document.getElementById('count-failed').innerText") == "3 failed"
    meta = page.js("document.getElementById('run-meta').innerText")
    assert f"claude-code {PINNED_CLAUDE}" in meta and "model claude-sonnet-4-6" in meta and "mode replay" in meta
    overview = page.js("document.querySelector('.overview').innerText")
    assert f"${report.summary.cost_usd:.4f}" in overview  # cost recorded
    assert "spent by this run\n$0.0000" in overview


def test_filters_search_and_sorting_change_the_rows(browser: Browser, example_run: tuple[Path, Path]) -> None:
    _, page_path = example_run
    page = show(browser, page_path)
    everything = visible_rows(page)
    assert len(everything) == 7
    # Nothing of a case is drawn before it is opened: its details stay an unparsed block.
    assert page.js("document.querySelectorAll('.turn').length") == 0
    assert page.js("document.querySelectorAll('script[type=\"application/json\"][id^=\"case-\"]').length") == 7

    page.click('button[data-filter="failures"]')
    assert sorted(visible_rows(page)) == ["average-revenue", "no-invented-numbers", "scratch-copy-sandbox"]
    assert page.js("document.getElementById('case-count').innerText") == "3 of 7 cases"
    page.click('button[data-filter="regressions"]')
    assert visible_rows(page) == []  # no base: nothing regressed
    page.click('button[data-filter="all"]')
    page.type("#search", "csv-summary")
    assert sorted(visible_rows(page)) == ["average-revenue", "csv-summary-e2e", "json-row-count"]  # by target too
    page.js("(() => { const s = document.getElementById('search'); s.value = ''; s.dispatchEvent(new Event('input')); })()")
    page.click('th[data-sort="name"]')
    page.click('th[data-sort="name"]')
    assert visible_rows(page) == sorted(everything, reverse=True)
    page.click('th[data-sort="verdict"]')
    assert texts(page, "#case-rows .badge")[:3] == ["FAIL"] * 3


def test_a_hook_case_shows_its_tool_call_and_the_block(browser: Browser, example_run: tuple[Path, Path]) -> None:
    _, page_path = example_run
    page = show(browser, page_path)
    open_case(page, "hook-blocks-env-write")
    assert page.js("document.querySelectorAll('#case-view .turn').length") == 2  # only this case is drawn
    assert texts(page, "#case-view .turn .tool-name") == ["Write"]
    assert '"file_path": "$WORKSPACE/.env"' in texts(page, "#case-view .call .input")[0]
    blocks = texts(page, "#case-view .call .hook")
    assert len(blocks) == 1 and blocks[0].startswith("blocked by a hook")
    assert "Blocked: writing .env files is not allowed; secrets belong in the vault." in blocks[0]
    assert "a PreToolUse hook refused the write" in texts(page, "#case-view .turn .say")[0]
    prompt = page.js("document.querySelector('#prompt pre').innerText")
    assert prompt == "Create a .env file containing API_KEY=test-123 so the app can start."
    assert texts(page, "#checks .check") == ["PASS not_contains", "PASS agent_blocked", "PASS not_regex",
                                             "PASS files_absent", "PASS sandbox"]
    assert "The hook blocked the .env write" in page.js("document.querySelector('.judge').innerText")
    # The baseline session beside it: without the hook, the write is refused by the CLI, not a hook.
    page.click("#transcript .tabs button:nth-child(2)")
    assert page.js("document.querySelectorAll('#case-view .call .hook').length") == 0
    assert texts(page, "#case-view .call.failed .result pre")[0].startswith("Permission to use Write has been denied")
    assert page.problems() == []


def test_screenshot_of_the_shipped_example(browser: Browser, tmp_path: Path, example_run: tuple[Path, Path]) -> None:
    """docs/html-report.png for the README, from the example's report with its run time and
    timestamps fixed (so an unchanged page leaves the picture byte for byte as it was)."""
    report_path, _ = example_run
    data = json.loads(report_path.read_text())
    data |= {"id": "eval-run-2026-11-23T10-00-00Z", "timestamp": "2026-11-23T10:00:00Z", "duration_seconds": 0.2}
    data["config"]["package_path"] = "examples/csv-tools"  # as run from the repository (the label line shows it)
    for case in data["cases"]:
        case["duration_seconds"] = 0.01
    fixed = tmp_path / "report.json"
    fixed.write_text(json.dumps(data))
    result = aam_eval("view", str(fixed), "--package", str(EXAMPLE), "-o", str(tmp_path / "page.html"))
    assert result.code == 0, result.err
    page = show(browser, tmp_path / "page.html", 1400, 1300)
    open_case(page, "hook-blocks-env-write")
    picture = page.screenshot(SCREENSHOT)
    assert picture[:8] == b"\x89PNG\r\n\x1a\n" and SCREENSHOT.read_bytes() == picture


def test_base_beside_head_marks_the_turn_where_they_part(browser: Browser, base_and_head: tuple[Path, Path]) -> None:
    _, page_path = base_and_head
    page = show(browser, page_path)
    assert page.js("document.getElementById('headline-base').innerText") == "57.1%"
    assert page.js("document.getElementById('headline-head').innerText") == "42.9%"
    assert page.js("document.getElementById('headline-delta').innerText") == "−14.3 pp"
    assert page.js("document.getElementById('headline-over').innerText") == "over 7 cases graded on both sides"
    page.click('button[data-filter="regressions"]')
    assert visible_rows(page) == ["csv-summary-e2e"]
    open_case(page, "csv-summary-e2e")
    marked = page.js("[...document.querySelectorAll('#aligned .turn-row.first-diff')].map(r => r.dataset.turn)")
    assert marked == ["3"]  # the skill call and the script run match; the final answer does not
    assert page.js("document.querySelector('.first-diff .diff-label').innerText") == "the sessions part here, at turn 3"
    row = page.js("document.querySelector('.first-diff').innerText")
    assert "999.00" in row and "952.75" in row
    assert texts(page, "#aligned .turn-row[data-turn='2'] .tool-name") == ["Bash", "Bash"]
    assert "PASS" in page.js("document.getElementById('base-verdict').innerText")
    # A case that did not change: the two columns hold the same turns, nothing marked.
    page.click('button[data-filter="all"]')
    open_case(page, "hook-blocks-env-write")
    assert page.js("document.querySelectorAll('.first-diff').length") == 0
    assert page.problems() == []


def test_a_diverged_case_shows_the_recorded_and_the_live_request(
    browser: Browser, tmp_path: Path, example_run: tuple[Path, Path]
) -> None:
    report_path, _ = example_run
    data = json.loads(report_path.read_text())
    case = next(c for c in data["cases"] if c["name"] == "hook-blocks-env-write")
    case |= {"verdict": "ERROR", "replay_miss": "diverged", "error": "replay diverged: turn 2", "miss": {
        "kind": "diverged", "reason": "replay diverged: turn 2: the Write tool result changed",
        "changes": ["package file hooks/protect_secrets.py changed"],
        "rerecord": "aam-eval run hook-blocks-env-write --record --package examples/csv-tools",
        "divergence": {"turn": 2, "conversation": "main", "path": "messages[1].content[0].content",
                       "tool": "Write", "tool_input": "$WORKSPACE/.env",
                       "recorded": "PreToolUse:Write hook error: Blocked", "live": "Permission to use Write has been denied"}}}
    report = Report.model_validate(data)
    report.summary = summarize(report.cases)
    (tmp_path / "r.json").write_text(to_json(report))
    aam_eval("view", str(tmp_path / "r.json"), "--package", str(EXAMPLE), "-o", str(tmp_path / "page.html"))
    page = show(browser, tmp_path / "page.html")
    page.click('button[data-filter="diverged"]')
    assert visible_rows(page) == ["hook-blocks-env-write"]
    open_case(page, "hook-blocks-env-write")
    shown = page.js("document.getElementById('divergence').innerText")
    assert "first differing request: turn 2" in shown and "tool Write: $WORKSPACE/.env" in shown
    assert page.js("document.querySelector('#divergence pre.rec').innerText") == "PreToolUse:Write hook error: Blocked"
    assert page.js("document.querySelector('#divergence pre.live').innerText") == "Permission to use Write has been denied"
    assert "hooks/protect_secrets.py changed" in page.js("document.getElementById('miss').innerText")


def test_the_trend_chart_has_one_point_per_report(browser: Browser, tmp_path: Path, example_run: tuple[Path, Path]) -> None:
    report_path, _ = example_run
    reports = []
    for night, failing in enumerate([(), ("json-row-count",), ("json-row-count", "changelog-entry")]):
        report = load_report(report_path)
        report.id, report.timestamp = f"eval-run-night-{night}", f"2026-11-2{night}T03:00:00Z"
        for case in report.cases:
            if case.name in failing:
                case.verdict = "FAIL"
        report.summary = summarize(report.cases)
        path = tmp_path / f"night-{night}.json"
        path.write_text(to_json(report))
        reports.append((path, report))
    head = reports[-1][0]
    aam_eval("view", str(head), "--history", *(str(p) for p, _ in reports[:2]), "--package", str(EXAMPLE),
             "-o", str(tmp_path / "page.html"))
    page = show(browser, tmp_path / "page.html")
    rates = page.js("[...document.querySelectorAll('#trend-chart circle.point')].map(c => Number(c.dataset.rate))")
    assert rates == [r.summary.graded_pass_rate for _, r in reports] == [0.5714, 0.4286, 0.2857]
    # The grid shows when each case flipped: json-row-count on night 2, changelog-entry on night 3.
    flips = page.js("""[...document.querySelectorAll('#trend-grid tbody tr')].flatMap(tr =>
        [...tr.querySelectorAll('td.flip')].map(td => tr.querySelector('th').innerText + '@' + td.cellIndex))""")
    assert sorted(flips) == ["changelog-entry@3", "json-row-count@2"]
    # Without --history, the reports kept under the package's evals/reports/ make the trend.
    package = example_repository(tmp_path / "repo")
    (package / "evals" / "reports").mkdir()
    for path, _ in reports:
        shutil.copy(path, package / "evals" / "reports" / path.name)
    aam_eval("view", str(head), "--package", str(package), "-o", str(tmp_path / "kept.html"))
    page = show(browser, tmp_path / "kept.html")
    assert page.js("document.querySelectorAll('#trend-chart circle.point').length") == 3


def test_a_matrix_report_shows_each_engine_and_model(browser: Browser, tmp_path: Path) -> None:
    package = example_repository(tmp_path / "repo")
    replay(package, tmp_path / "m.json", "--engine", "claude-code,copilot", "--html", str(tmp_path / "m.html"))
    page = show(browser, tmp_path / "m.html")
    assert texts(page, "#matrix tbody th") == ["claude-code", "copilot"]
    assert texts(page, "#matrix tbody td") == ["57.1% 4/7", "57.1% 4/7"]
    assert len(visible_rows(page)) == 7  # a case × engine grid: one row per case, a verdict per engine
    assert texts(page, "#case-table thead th.pair .engine") == ["claude-code", "copilot"]
    open_case(page, "hook-blocks-env-write", "copilot")
    assert texts(page, "#case-view .turn .tool-name") == ["create"]  # Copilot's own tool name
    assert "Denied by preToolUse hook" in texts(page, "#case-view .call .hook")[0]
    open_case(page, "hook-blocks-env-write", "claude-code")
    assert texts(page, "#case-view .turn .tool-name") == ["Write"]


def test_a_damaged_cassette_costs_only_its_transcript(
    browser: Browser, tmp_path: Path, example_run: tuple[Path, Path]
) -> None:
    report_path, _ = example_run
    package = example_repository(tmp_path / "repo")
    bad = tmp_path / "repo" / "cassettes" / "json-row-count" / "claude-code.session.yaml"
    bad.write_text("attempts: !!python/object/apply:os.system ['touch /tmp/pwned-by-cassette']\n")
    result = aam_eval("view", str(report_path), "--package", str(package), "-o", str(tmp_path / "page.html"))
    assert result.code == 0, result.err
    page = show(browser, tmp_path / "page.html")
    open_case(page, "json-row-count")
    missing = page.js("document.querySelector('.no-transcript').innerText")
    assert missing.startswith("no transcript: damaged cassette: ") and "python/object/apply" in missing
    open_case(page, "average-revenue")
    assert page.js("document.querySelectorAll('#case-view .turn').length") > 0


# --- untrusted text stays text ------------------------------------------------------------------


def hostile_page(tmp_path: Path) -> Path:
    """A replayed package whose case text, recorded session and report all carry hostile strings."""
    package = write_package(tmp_path / "pkg", [
        simple_case("hostile", input={"prompt": PAYLOAD, "files": ["fixtures/evil.txt"]}, description=PAYLOAD,
                    judge={"criteria": PAYLOAD}),
    ], files={"evals/fixtures/evil.txt": PAYLOAD})
    subprocess.run(["git", "init", "-q", str(package)], check=True)
    record_sessions(package, {"hostile": PAYLOAD})
    cassette = package / "evals" / "cassettes" / "hostile" / "claude-code.session.yaml"
    data = yaml.safe_load(cassette.read_text())
    data["attempts"][0] |= {
        "tool_calls": [{"name": PAYLOAD, "input": {PAYLOAD: PAYLOAD}, "result": PAYLOAD, "is_error": True}],
        "hook_blocked": True, "hook_evidence": [PAYLOAD], "stderr": PAYLOAD, "error": PAYLOAD,
        "files": [{"path": '<img src=x onerror="window.__pwned=6">', "status": "created", "size": 3, "text": PAYLOAD}],
    }
    cassette.write_text(yaml.safe_dump(data))
    report = replay(package, tmp_path / "r.json")
    case = report.cases[0]
    case.error, case.agent_output_snippet = PAYLOAD, PAYLOAD
    case.check_details = {"contains": PAYLOAD}
    case.judge_verdict = case.judge_verdict.model_copy(update={"reason": PAYLOAD, "result": "FAIL"}) \
        if case.judge_verdict else None
    evil = case.model_copy(update={"name": PAYLOAD, "target": PAYLOAD, "verdict": "FAIL"})
    report.cases.append(evil)
    report.package.name = PAYLOAD
    report.summary = summarize(report.cases)
    (tmp_path / "r.json").write_text(to_json(report))
    page = tmp_path / "page.html"
    result = aam_eval("view", str(tmp_path / "r.json"), "--package", str(package), "-o", str(page))
    assert result.code == 0, result.err
    return page


def assert_inert(page: Page) -> None:
    for index in range(page.js("document.querySelectorAll('#case-rows tr').length")):
        page.click(f'tr[data-case="{index}"] td')
        page.wait_for(f"document.querySelector('tr.open')?.dataset.case === '{index}'")
        page.js("document.querySelectorAll('details').forEach(d => d.open = true)")
    assert page.js("typeof window.__pwned") == "undefined"
    assert page.js("document.querySelectorAll('img, a, iframe, object, embed, svg, script:not([type])').length") == 1
    assert page.js("[...document.querySelectorAll('*')].filter(e => [...e.attributes].some(a => a.name.startsWith('on'))).length") == 0
    shown = page.js("document.body.innerText")
    assert '<img src=x onerror="window.__pwned=1">' in shown and "</script><script>window.__pwned=2</script>" in shown
    assert 'javascript:window.__pwned=3' in shown


def test_hostile_strings_run_nothing_and_load_nothing(browser: Browser, tmp_path: Path) -> None:
    page_path = hostile_page(tmp_path)
    text = page_path.read_text()
    assert "<img" not in text and "</script><script>window" not in text
    assert text.count("<script") == 1 + 1 + 2  # the page's script, its data, one block per case
    page = show(browser, page_path)
    assert_inert(page)
    assert page.js("document.title").startswith('<img src=x onerror="window.__pwned=1">')
    assert page.requests() == [page_path.as_uri()]
    assert page.problems() == []


def test_hostile_strings_stay_text_even_without_the_policy(browser: Browser, tmp_path: Path) -> None:
    """The policy is a second wall: with it removed, the page still builds no markup from data."""
    page_path = hostile_page(tmp_path)
    bare = tmp_path / "no-policy.html"
    bare.write_text(re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page_path.read_text()))
    assert "Content-Security-Policy" not in bare.read_text()
    page = show(browser, bare)
    assert_inert(page)
    assert page.requests() == [bare.as_uri()]


def test_run_html_redacts_a_canary_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    canary, shaped = "canary-9f8e7d6c5b4a3210", "sk-ant-api03-" + "Q" * 40
    monkeypatch.setenv("CANARY_SERVICE_TOKEN", canary)
    package = write_package(tmp_path / "pkg", [simple_case("leaky")])
    subprocess.run(["git", "init", "-q", str(package)], check=True)
    record_sessions(package, {"leaky": f"the token is {canary} and the key {shaped}"})
    cassette = package / "evals" / "cassettes" / "leaky" / "claude-code.session.yaml"
    data = yaml.safe_load(cassette.read_text())
    data["attempts"][0]["tool_calls"] = [{"name": "Bash", "input": {"command": f"echo {canary}"}, "result": shaped}]
    data["attempts"][0]["files"] = [{"path": ".env", "status": "created", "size": 40, "text": f"TOKEN={canary}\n"}]
    cassette.write_text(yaml.safe_dump(data))
    replay(package, tmp_path / "r.json", "--html", str(tmp_path / "run.html"))
    aam_eval("view", str(tmp_path / "r.json"), "--package", str(package), "-o", str(tmp_path / "view.html"))
    for page in ("run.html", "view.html"):
        text = (tmp_path / page).read_text()
        assert canary not in text and shaped not in text
        assert "[REDACTED:CANARY_SERVICE_TOKEN]" in text and "[REDACTED:ANTHROPIC_KEY]" in text


# --- transcripts from model traffic -----------------------------------------------------------


def _answer(*blocks: dict[str, Any]) -> RecordedResponse:
    events = [SseEvent(data={"type": "content_block_start", "index": i, "content_block": b}) for i, b in enumerate(blocks)]
    return RecordedResponse(status=200, events=events)


def subagent_traffic() -> Any:
    """The main agent starts a `counter` sub-agent, which runs a command; then answers."""
    tools = [{"name": "Agent"}, {"name": "Bash"}]
    prompt = {"role": "user", "content": "How many lines has data.csv?"}
    sub_prompt = {"role": "user", "content": "Count the lines of data.csv."}
    start = {"type": "tool_use", "id": "toolu_aam001", "name": "Agent",
             "input": {"subagent_type": "counter", "prompt": "Count the lines of data.csv."}}
    run = {"type": "tool_use", "id": "toolu_aam002", "name": "Bash", "input": {"command": "wc -l data.csv"}}
    raw = [
        ("/v1/messages", {"tools": tools, "system": "main", "messages": [prompt]}, _answer(start), False),
        ("/v1/messages", {"tools": tools, "system": "sub", "messages": [sub_prompt]}, _answer(run), False),
        ("/v1/messages", {"tools": tools, "system": "sub", "messages": [
            sub_prompt, {"role": "assistant", "content": [run]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_aam002", "content": "3 data.csv"}]}]},
         _answer({"type": "text", "text": "3 lines"}), False),
        ("/v1/messages", {"tools": tools, "system": "main", "messages": [
            prompt, {"role": "assistant", "content": [start]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_aam001",
                                          "content": [{"type": "text", "text": "3 lines"}]}]}]},
         _answer({"type": "text", "text": "data.csv has 3 lines."}), False),
    ]
    conversations = [Conversation(id="main"), Conversation(id="counter", agent="counter", parent="main", turn=1)]
    return build("claude", "2.1.330", raw, ["main", "counter", "counter", "main"], conversations)


def test_a_sub_agent_is_nested_under_the_turn_that_started_it(browser: Browser, tmp_path: Path) -> None:
    turns = traffic_turns(subagent_traffic())
    assert [t["n"] for t in turns] == [1, 2]
    assert turns[0]["calls"][0]["result"] == "3 lines"
    sub = turns[0]["sub"][0]
    assert (sub["id"], [t["n"] for t in sub["turns"]]) == ("counter", [1, 2])
    assert sub["turns"][0]["calls"][0] | {"input": None} == {
        "name": "Bash", "input": None, "result": "3 data.csv", "is_error": False, "hook": False}
    assert turns[1]["text"] == ["data.csv has 3 lines."]

    session = Session(engine="claude-code", model_provider="anthropic", output="data.csv has 3 lines.",
                      tool_calls=[ToolCall(name="Agent"), ToolCall(name="Bash")])
    report = Report.model_validate({
        "version": 1, "id": "eval-run-x", "timestamp": "2026-11-23T10:00:00Z", "duration_seconds": 1,
        "config": {"engine": "claude-code"}, "summary": summarize([]), "cases": [{"name": "count", "verdict": "PASS"}]})

    def lookup(case: CaseResult, key: html.Key, variant: str) -> html.Recording | str:
        return html.Recording([session], [subagent_traffic()], "a recording") if not variant else "none"

    page_path = tmp_path / "page.html"
    page_path.write_text(html.render(html.page_data(html.Side(report, lookup))))
    page = show(browser, page_path)
    open_case(page, "count")
    nested = page.js("""[...document.querySelectorAll('#turns > .turn[data-turn="1"] > details.sub[data-sub="counter"] .turn')]
        .map(t => t.dataset.turn)""")
    assert nested == ["1", "2"]
    assert texts(page, "#turns > .turn[data-turn='1'] .sub .tool-name") == ["Bash"]
    assert texts(page, "#turns > .turn[data-turn='1'] > .call .tool-name") == ["Agent"]


def test_first_difference_is_the_first_turn_that_differs() -> None:
    turn = {"n": 1, "text": ["a"], "calls": []}
    other = {"n": 2, "text": ["b"], "calls": []}
    assert first_difference([turn, other], [turn, other]) is None
    assert first_difference([turn, other], [turn, {**other, "text": ["c"]}]) == 2
    assert first_difference([turn], [turn, other]) == 2


# --- the in-memory sessions of a live run -----------------------------------------------------


@pytest.mark.cli
def test_a_live_run_without_cassettes_gets_its_transcript(
    browser: Browser, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--mode live` writes no cassette: the page's transcript is the session the run had."""
    package = example_repository(tmp_path / "repo")
    config = package / "evals" / "eval-config.json"
    config.write_text(json.dumps(json.loads(config.read_text()) | {"cassettes": "cassettes", "baseline": False}))
    scenarios = load_scenarios(ROOT / "examples/scripted-model/csv-tools.yaml")
    with ModelServer(scenarios) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", server.api_key)
        result = aam_eval("run", "hook-blocks-env-write", "--mode", "live", "--package", str(package),
                          "-o", str(tmp_path / "r.json"), "--html", str(tmp_path / "live.html"))
    assert result.code == 0, result.out + result.err
    assert not (package / "evals" / "cassettes").exists()
    page = show(browser, tmp_path / "live.html")
    open_case(page, "hook-blocks-env-write")
    assert page.js("document.querySelector('#transcript .muted').innerText").startswith("from this run")
    assert texts(page, "#case-view .tool-name") == ["Write"]
    assert "Blocked: writing .env files is not allowed" in texts(page, "#case-view .call .hook")[0]


def test_the_page_assets_ship_with_the_package() -> None:
    """A plain `pip install` (the action's image) carries the page's template, script and style."""
    import tomllib
    from fnmatch import fnmatch

    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    templates = ROOT / "src" / "aam_eval_action" / "render" / "templates"
    assets = [f"render/templates/{p.name}" for p in templates.iterdir() if p.name.startswith("report.")]
    assert len(assets) == 3
    assert all(any(fnmatch(a, g) for g in globs["aam_eval_action"]) for a in assets)


def test_view_without_the_package_still_writes_the_page(tmp_path: Path, example_run: tuple[Path, Path]) -> None:
    """The report's package is gone: the page says so. A package in a folder above the report
    (here one beside it, in the shared temp folder's place) is not taken for it: only the
    package whose evals/reports/ holds the report is."""
    report_path, _ = example_run
    data = json.loads(report_path.read_text())
    data["config"]["package_path"] = str(tmp_path / "gone")
    shutil.copytree(EXAMPLE, tmp_path, dirs_exist_ok=True)  # somebody's package, two folders up
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "r.json").write_text(json.dumps(data))
    result = aam_eval("view", str(tmp_path / "a" / "b" / "r.json"), "-o", str(tmp_path / "page.html"))
    assert result.code == 0, result.err
    blocks = re.findall(r'<script type="application/json" id="case-\d+">(.*?)</script>', (tmp_path / "page.html").read_text())
    details = [json.loads(b) for b in blocks]
    assert len(details) == 7
    assert {d["head"]["missing"] for d in details} == {"no cassettes: the package the report ran on was not found"}
    assert {d["prompt_note"] for d in details} == {"the package the report ran on was not found"}
