"""The HTML report's benchmark: prints a table of numbers (not a test).

    python bench/bench_html.py

For the bench packages of 10, 100 and 1,000 cases (`bench.py` builds them once under
$AAM_BENCH_DIR), replayed to a report: the HTML file's size, the time `aam-eval view` takes
to write it (whole process, and the rendering alone in this process), what `--html` adds to
`run --replay`, and, in the real headless Chromium of the tests, the time from navigation
until the case table is drawn and answers clicks, and until an opened case is drawn.

The bench packages' sessions are small (one answer, no tool call), so a heavier row follows:
1,000 cases that each carry the shipped example's csv-summary-e2e session with its model
traffic (three turns, a skill call, a script run and its output).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "tests")]

from bench import BENCH_DIR, CLI, package  # noqa: E402

from aam_eval_action.render import html  # noqa: E402
from aam_eval_action.report import CaseResult, Report, load_report  # noqa: E402

from support.browser import Browser, launched  # noqa: E402


def wall(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def usable(browser: Browser, page_path: Path) -> tuple[float, float, float]:
    """(ms until the table is drawn as the page measures it, wall ms until then from the
    navigation, ms to open the last case)."""
    page = browser.page(1400, 1000)
    start = time.perf_counter()
    page.send("Page.navigate", {"url": page_path.as_uri()})
    page.wait_for("document.body && document.body.dataset.ready", timeout=60)
    walled = (time.perf_counter() - start) * 1000
    drawn = float(page.js("document.body.dataset.ready"))
    last = page.js("document.querySelectorAll('#case-rows tr').length") - 1
    start = time.perf_counter()
    page.js(f"document.querySelector('tr[data-case=\"{last}\"]').click()")
    page.wait_for(f"document.querySelector('tr.open')?.dataset.case === '{last}'")
    opened = (time.perf_counter() - start) * 1000
    page.send("Target.closeTarget", {"targetId": page.target})
    return drawn, walled, opened


def in_browser(browser: Browser, page_path: Path) -> list[tuple[str, str]]:
    drawn, walled, opened = usable(browser, page_path)
    return [("  table usable (page's clock / wall from navigate)", f"{drawn:.0f} ms / {walled:.0f} ms"),
            ("  open the last case", f"{opened:.0f} ms")]


def heavy_page(n: int, out: Path) -> float:
    """n cases, each with the example's csv-summary-e2e recording (traffic included); the
    seconds page_data + render took."""
    from aam_eval_action.replay.agent_cassette import load
    from aam_eval_action.replay.traffic_store import load_traffic

    cassettes = ROOT / "cassettes"
    recorded = load(cassettes / "csv-summary-e2e" / "claude-code.session.yaml", cassettes)
    assert recorded is not None
    recording = html.Recording(recorded.attempts, list(load_traffic(cassettes, recorded.model_traffic or [])),
                               "cassettes/csv-summary-e2e/claude-code.session.yaml")
    example = load_report(BENCH_DIR / "r1000.json")
    report = example.model_copy(update={"cases": [
        CaseResult(name=f"case-{i:04d}", verdict="PASS", deterministic_checks={"contains": "PASS"},
                   agent_output_snippet=recorded.attempts[0].output[:500], duration_seconds=1.0)
        for i in range(n)]})

    def lookup(case: CaseResult, key: html.Key, variant: str) -> html.Recording | str:
        return recording if not variant else "none"

    start = time.perf_counter()
    out.write_text(html.render(html.page_data(html.Side(report, lookup))))
    return time.perf_counter() - start


def render_only(report_path: Path, pkg: Path) -> float:
    """Seconds to load the report and its cassettes, build the page and render it, in-process."""
    from aam_eval_action.render.sides import side

    start = time.perf_counter()
    report: Report = load_report(report_path)
    html.render(html.page_data(side(report, pkg, strict=False)))
    return time.perf_counter() - start


def main() -> int:
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    rows: list[tuple[str, str]] = []
    tmp = Path(tempfile.mkdtemp(prefix="aam-bench-html-"))
    with launched() as browser:
        for n in (10, 100, 1000):
            pkg = package(n)
            report_path = BENCH_DIR / f"r{n}.json"
            plain = wall([*CLI, "run", "--replay", "--package", str(pkg), "-o", str(report_path)])
            with_html = wall([*CLI, "run", "--replay", "--package", str(pkg), "-o", str(tmp / "x.json"),
                              "--html", str(tmp / f"run{n}.html")])
            page_path = tmp / f"view{n}.html"
            written = wall([*CLI, "view", str(report_path), "--package", str(pkg), "-o", str(page_path)])
            rendered = render_only(report_path, pkg)
            rows.append((f"{n} cases: HTML size", f"{page_path.stat().st_size / 1e6:.2f} MB"))
            rows.append(("  aam-eval view, whole process / rendering alone",
                         f"{written:.2f} s / {rendered:.2f} s"))
            rows.append(("  run --replay, without / with --html", f"{plain:.2f} s / {with_html:.2f} s"))
            rows += in_browser(browser, page_path)
        heavy = tmp / "heavy1000.html"
        seconds = heavy_page(1000, heavy)
        rows.append(("1000 cases x example session with traffic: size",
                     f"{heavy.stat().st_size / 1e6:.2f} MB"))
        rows.append(("  page built and rendered", f"{seconds:.2f} s"))
        rows += in_browser(browser, heavy)
    width = max(len(r[0]) for r in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    print(json.dumps({"pages": str(tmp)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
