"""A report as the HTML page shows it: with its package (prompts) and its cassettes (transcripts),
and the reports kept beside it for the trends."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from aam_eval_action.report import Report

if TYPE_CHECKING:
    from aam_eval_action.render.html import Side

REPORTS_DIR = ("evals", "reports")


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
