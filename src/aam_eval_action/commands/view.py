"""`aam-eval view REPORT.json [--base BASE.json] [--history REPORT.json ...] -o report.html`."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from aam_eval_action.errors import EXIT_OK
from aam_eval_action.report import Report, load_report

if TYPE_CHECKING:
    from aam_eval_action.render.html import Side

REPORTS_DIR = ("evals", "reports")


def view(
    report_path: Path, output: Path, base_path: Path | None = None, history: Sequence[Path] = (),
    package: Path | None = None, base_package: Path | None = None,
) -> int:
    """Write one self-contained HTML file for a report, its transcripts read from the cassettes
    beside it; with a base report, base beside head; with history, the trends."""
    from aam_eval_action.commands.run import write_file
    from aam_eval_action.fsutil import runner_checkout
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


def side(report: Report, package_dir: Path | None, *, strict: bool) -> Side:
    """A report with its package (prompts) and its cassettes (transcripts), when found."""
    from aam_eval_action.render import html

    packages, note = html.package_lookup(package_dir)
    lookup = None
    if packages:
        from aam_eval_action.settings import cassette_stem

        config = packages[0].config
        cassettes = (packages[0].layout.evals_dir / config.cassettes).resolve()  # `<plugin>/<case>` below
        lookup = html.cassette_lookup(cassettes, strict=strict, stem=lambda e, m: cassette_stem(config, e, m))
    return html.Side(report, lookup, packages, note)


def find_package(report: Report, report_path: Path) -> Path | None:
    """The report's `--package` as recorded, else the package whose `evals/reports/` the report
    file sits in; nowhere else (a parent folder such as /tmp may hold anybody's package)."""
    candidates = [Path(report.config.package_path)] if report.config.package_path else []
    folder = report_path.resolve().parent
    if folder.parts[-len(REPORTS_DIR):] == tuple(REPORTS_DIR):
        candidates.append(folder.parents[len(REPORTS_DIR) - 1])
    from aam_eval_action.layouts.detect import is_package

    return next((p for p in candidates if is_package(p)), None)


def default_history(head: Side) -> list[Path]:
    """The reports kept under the package's `evals/reports/`."""
    if head.package is None:
        return []
    folder = head.package.layout.root.joinpath(*REPORTS_DIR)
    return sorted(folder.glob("*.json")) if folder.is_dir() else []
