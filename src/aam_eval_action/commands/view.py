"""`aam-eval view REPORT.json [--base BASE.json] [--history REPORT.json ...] -o report.html`."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from aam_eval_action.errors import EXIT_OK
from aam_eval_action.render.sides import default_history, find_package, side
from aam_eval_action.report import load_report


def view(
    report_path: Path, output: Path, base_path: Path | None = None, history: Sequence[Path] = (),
    package: Path | None = None, base_package: Path | None = None,
) -> int:
    """Write one self-contained HTML file for a report, its transcripts read from the cassettes
    beside it; with a base report, base beside head; with history, the trends."""
    from aam_eval_action.fsutil import runner_checkout
    from aam_eval_action.pipeline.suite import write_file
    from aam_eval_action.redact import Redactor
    from aam_eval_action.render import html
    from aam_eval_action.settings import runner_environment

    environ = runner_environment()
    head = load_report(report_path)
    head_side = side(head, package or find_package(head, report_path), strict=False)
    base_side = None
    if base_path is not None:
        base = load_report(base_path)
        base_side = side(base, base_package or find_package(base, base_path), strict=True)
    paths = list(history) or default_history(head_side)
    reports, warnings = html.history_reports(paths)
    page = html.page_data(head_side, base_side, reports, warnings=warnings)
    redactor = Redactor.from_environment({}, environ)
    write_file(output, html.render(page, redactor), "HTML report", runner_checkout(environ))
    print(f"HTML report written to {output}", file=sys.stdout)
    return EXIT_OK
