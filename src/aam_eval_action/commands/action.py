"""`aam-eval action`, the GitHub Action entry point: head report, base report, diff, comment, outputs.

The environment is read once (`settings.runner_environment()`): the inputs and the run's
context into their objects, the runner's environment (with the key inputs added) into the run
settings. Nothing is written back into the process environment.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from aam_eval_action.diff import ReportDiff, diff_reports, not_blamed
from aam_eval_action.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, AamEvalError, UsageError
from aam_eval_action.fsutil import runner_checkout
from aam_eval_action.github import workflow
from aam_eval_action.github.inputs import ActionInputs, GitHubContext
from aam_eval_action.modes import Mode
from aam_eval_action.pipeline.select import parse_shard
from aam_eval_action.pipeline.suite import RunArgs, execute
from aam_eval_action.providers import PROVIDERS
from aam_eval_action.render.console import Console
from aam_eval_action.replay.outage import NOT_RUN
from aam_eval_action.report import Report, default_report_path, load_report
from aam_eval_action.settings import Overrides, runner_environment

PR_EVENTS = ("pull_request", "pull_request_target")
ANNOTATION_TITLES = {"stale": "stale cassette: ", "diverged": "replay diverged: "}

if TYPE_CHECKING:
    from collections.abc import Callable

    from aam_eval_action.render.html import Page
    from aam_eval_action.spec import EvalConfig


def action(environ: Mapping[str, str] | None = None) -> int:
    """Run the action; the exit code decides the step's status."""
    env = dict(runner_environment() if environ is None else environ)
    try:
        inputs = ActionInputs.from_env(env)
        gh = GitHubContext.from_env(env)
        workflow.mask(inputs.anthropic_api_key, inputs.openai_api_key, inputs.gemini_api_key,
                      inputs.github_token)
        return run_action(inputs, gh, with_key_inputs(inputs, env))
    except AamEvalError as exc:
        # The same message as an annotation, so it shows on the run's summary page.
        workflow.error(str(exc))
        raise


def with_key_inputs(inputs: ActionInputs, env: Mapping[str, str]) -> dict[str, str]:
    """The environment the run settings see: the runner's, with the key inputs as the keys."""
    keys = {"anthropic": inputs.anthropic_api_key, "openai": inputs.openai_api_key,
            "gemini": inputs.gemini_api_key}
    out = dict(env)
    for provider, key in keys.items():
        if key:
            out[PROVIDERS[provider].key_var] = key
    return out


def run_action(inputs: ActionInputs, gh: GitHubContext, environ: Mapping[str, str]) -> int:
    check_live_allowed(inputs, gh)
    inputs = snapshot_only_on_pull_request_target(inputs, gh)
    console = Console(environ=environ, workflow_commands=True)
    checkout = runner_checkout(environ)
    package = (gh.workspace / inputs.package_path).resolve()
    report_path = _report_path(inputs, gh, package)
    if inputs.merge_reports:
        head: Report | None = _merged(inputs, gh, report_path, checkout)
    else:
        run_args = _run_args(inputs, package, inputs.mode, report_path)
        with workflow.commands_stopped():
            head, code = execute(run_args, console, dict(environ))
    if head is None:
        return code
    page = HtmlReport(head, package, gh.summary_file)
    base, changed = _base_report(inputs, gh, console, environ, page.add_base)
    if changed is not None and not inputs.merge_reports:
        mark_rerecorded(head, changed, package, report_path, checkout)
    diff = diff_reports(base, head)
    html_path = page.write(report_path.with_suffix(".html"), base, environ, checkout)
    body = _render(inputs, gh, diff, html_path.name if html_path else None)
    workflow.append(gh.summary_file, body + trend_chart(package))
    _annotate(inputs, diff)
    _annotate_empty(inputs, diff)
    comment_url = _comment(inputs, gh, body)
    _tune(inputs, gh, package)
    matrix = _sensitivity(inputs, gh, package, report_path, environ)
    workflow.set_outputs(gh.output_file, outputs(gh, head, diff, report_path, comment_url, html_path, matrix))
    return exit_code(inputs, diff, bool(head.interrupted))


def check_live_allowed(inputs: ActionInputs, gh: GitHubContext) -> None:
    """Live modes run the PR's hooks and scripts with the API keys: not for untrusted PRs."""
    why = gh.untrusted_pr
    if inputs.mode == "replay" or inputs.merge_reports or why is None or inputs.allow_live_on_pr:
        return
    raise UsageError(
        f"mode {inputs.mode} is refused: {why}, and live modes give the pull request's hooks, "
        "scripts and eval-config the API keys. Use mode: replay for pull requests (no keys "
        "needed), or set allow-live-on-pr: true if you trust every such pull request"
    )


def snapshot_only_on_pull_request_target(inputs: ActionInputs, gh: GitHubContext) -> ActionInputs:
    """Re-execute replay runs the pull request's hooks and scripts for real. On
    `pull_request_target` the job holds the repository's secrets and a write token, so there
    replay reads snapshots only, unless `allow-live-on-pr` says every such PR is trusted."""
    if gh.event_name != "pull_request_target" or inputs.allow_live_on_pr or inputs.mode != "replay":
        return inputs
    if inputs.rerun == "always":
        raise UsageError(
            "rerun: always is refused on pull_request_target: re-executing runs the pull "
            "request's hooks and scripts in a job that holds secrets and a write token. Run the "
            "check on pull_request, or set allow-live-on-pr: true if you trust every such PR"
        )
    print("re-execute replay is off on pull_request_target (it would run the pull request's "
          "hooks and scripts next to this job's secrets): snapshot replay only", flush=True)
    return inputs.model_copy(update={"rerun": "never"})


def exit_code(inputs: ActionInputs, diff: ReportDiff, interrupted: bool) -> int:
    """fail-on and min-pass-rate decide the step's status; a run that selected no case fails it
    too, unless allow-empty.

    Rates count only the cases that were graded. A case that could not be replayed, or that
    the model API kept from running, fails `regression` and `failure` all the same, as an
    error and never a regression: it was not evaluated at all, so it cannot pass.
    """
    if interrupted:
        return EXIT_INTERRUPTED
    head = diff.head
    failed = False
    if head.api_down:
        workflow.error(f"{head.api_down} not run: {NOT_RUN} (not a regression; the next run records "
                       "them again)")
    not_shown = [c for c in diff.cases if c.category == "not-shown"]
    for c in not_shown:
        workflow.warning(f"{c.title or c.name}: {c.evidence_text or 'not shown'}", None)
    if not_shown and inputs.fail_on_not_shown and inputs.fail_on != "never":
        failed = True
    if inputs.fail_on == "regression":
        failed = failed or diff.regressions > 0 or head.not_replayable > 0 or head.api_down > 0
    elif inputs.fail_on == "failure":
        failed = failed or head.passed + head.skipped < head.total
    if diff.empty is not None and diff.empty.fails and not inputs.allow_empty:
        failed = True  # a gate that checks nothing is not green
    if inputs.min_pass_rate is not None and head.pass_rate * 100 < inputs.min_pass_rate:
        workflow.error(f"pass rate {head.pass_rate * 100:.1f}% (of {head.graded} graded cases) is "
                       f"below min-pass-rate {inputs.min_pass_rate:g}%")
        failed = True
    return EXIT_FAILED if failed else EXIT_OK


def _merged(inputs: ActionInputs, gh: GitHubContext, report_path: Path, checkout: Path | None) -> Report:
    """The shard reports of a matrix run, joined into the head report."""
    from aam_eval_action.fsutil import atomic_write
    from aam_eval_action.report import merge_reports, to_json

    pattern = inputs.merge_reports or ""
    paths = sorted(gh.workspace.glob(pattern))
    if not paths:
        raise UsageError(f"merge-reports {pattern!r} matched no report under {gh.workspace}")
    merged = merge_reports([load_report(p) for p in paths])
    atomic_write(report_path, to_json(merged), checkout)
    print(f"merged {len(paths)} shard report(s): {merged.summary.total} case(s)", flush=True)
    return merged


def _run_args(inputs: ActionInputs, package: Path, mode: Mode, output: Path | None) -> RunArgs:
    overrides = Overrides(engine=inputs.engine, model=inputs.model, judge=inputs.judge,
                          mode=mode, jobs=inputs.jobs, baseline=inputs.baseline, rerun=inputs.rerun,
                          max_usd=inputs.max_usd, judge_gate=inputs.judge_gate,
                          sandbox_enforce=inputs.sandbox_enforce, threshold=inputs.threshold,
                          ablation=inputs.ablation, repeat=inputs.runs, scaffold=inputs.scaffold,
                          allow_real_servers=inputs.allow_real_servers, allow_tools=tuple(inputs.allow_tools),
                          mocks=inputs.mocks, max_runs=inputs.max_runs, confidence=inputs.confidence)
    return RunArgs(
        package=package, cases=inputs.cases, overrides=overrides, target=inputs.target,
        output=output, shard=parse_shard(inputs.shard) if inputs.shard else None,
        plugins=inputs.plugin or None, strict=inputs.strict, tags=inputs.tags, suite=inputs.suite,
        allow_empty=inputs.allow_empty,
    )


def _report_path(inputs: ActionInputs, gh: GitHubContext, package: Path) -> Path:
    if inputs.report_path:
        return gh.workspace / inputs.report_path
    from datetime import UTC, datetime

    return default_report_path(package / "evals", datetime.now(UTC))


Changed = dict[str, list[str]]
"""Case name → its cassette files the pull request added or changed."""


def _base_report(
    inputs: ActionInputs, gh: GitHubContext, console: Console, environ: Mapping[str, str],
    on_base: Callable[[Report, Path], None] | None = None,
) -> tuple[Report | None, Changed | None]:
    """The report to compare against (base-report, or the base commit replayed; None if
    neither), and the cassettes the head changed (None when no base commit was checked out).
    `on_base` sees a replayed base report with its package while the worktree still exists."""
    if inputs.base_report:
        return load_report(gh.workspace / inputs.base_report), None
    ref = inputs.base_ref or _pr_base_sha(gh)
    if not ref:
        return None, None
    from aam_eval_action.github.base_checkout import BaseCheckout, changed_cassettes, resolve_commit
    from aam_eval_action.layouts.detect import is_package

    head_cassettes = _cassettes_dir((gh.workspace / inputs.package_path).resolve())
    try:
        commit = resolve_commit(gh.workspace, ref)
        console.line(f"base: replaying {ref} ({commit[:12]}) in a worktree")
        with BaseCheckout(gh.workspace, commit) as tree:
            package = tree / inputs.package_path
            if not is_package(package):
                console.line(f"base: no package at {inputs.package_path}; everything is new")
                return None, changed_cassettes(head_cassettes, None) if head_cassettes else None
            changed = changed_cassettes(head_cassettes, _cassettes_dir(package)) if head_cassettes else None
            with workflow.commands_stopped():
                report, _ = execute(_run_args(inputs, package, "replay", None), console,
                                    dict(environ))
            if report is not None and on_base is not None:
                on_base(report, package)
            return report, changed
    except AamEvalError as exc:
        workflow.warning(f"no base report to compare against: {exc}", gh.summary_file)
        return None, None


def _cassettes_dir(package: Path) -> Path | None:
    """The package's cassettes folder as its eval-config names it (None when it cannot load)."""
    found = _cassettes_and_config(package)
    return found[0] if found else None


def _cassettes_and_config(package: Path) -> tuple[Path, EvalConfig] | None:
    """The cassettes folder and the eval-config (None when the package cannot load)."""
    from aam_eval_action.loader import load_package

    try:
        loaded = load_package(package)
    except AamEvalError:
        return None
    return (loaded.layout.evals_dir / loaded.config.cassettes).resolve(), loaded.config


def mark_rerecorded(
    head: Report, changed: Changed, package: Path, report_path: Path, checkout: Path | None
) -> None:
    """Flag the head cases whose cassettes the PR changed, with the provenance they carry,
    so the comment lists them ("re-recorded in this PR"); the report file is rewritten."""
    from aam_eval_action.fsutil import atomic_write
    from aam_eval_action.report import case_pair, to_json
    from aam_eval_action.settings import cassette_stem

    found = _cassettes_and_config(package)
    if not changed or found is None:
        return
    cassettes, cfg = found
    for case in head.cases:
        stem = cassette_stem(cfg, *case_pair(head, case))
        # In a matrix, each engine + model has its own files: only the changed ones count.
        if any(_of_stem(name, stem) for name in changed.get(case.name, [])):
            case.cassette_changed = True
            case.cassette_provenance = _provenance(cassettes, case.name, stem)
    if report_path.is_file():
        atomic_write(report_path, to_json(head), checkout)


def _of_stem(file_name: str, stem: str) -> bool:
    """`<stem>.session.yaml`, `<stem>.judge.yaml` and their `.baseline` variants."""
    rest = file_name.removeprefix(stem + ".")
    return rest != file_name and rest.removeprefix("baseline.") in ("session.yaml", "judge.yaml")


def _provenance(cassettes: Path, name: str, stem: str) -> str:
    """What the case's agent cassette says about where it was recorded."""
    from aam_eval_action.replay import agent_cassette

    path = agent_cassette.session_path(cassettes, name, stem)
    try:
        recorded = agent_cassette.load(path, cassettes)
    except agent_cassette.CassetteError:
        return "unknown (the cassette is damaged)"
    if recorded is None:
        return "unknown (only the judge cassette changed)"
    return recorded.provenance or "unknown (no provenance recorded)"


def _pr_base_sha(gh: GitHubContext) -> str | None:
    pr = gh.pull_request
    base = pr.get("base") if pr else None
    if isinstance(base, dict):
        sha, ref = base.get("sha"), base.get("ref")
        return str(sha or ref) if (sha or ref) else None
    return None


def _render(inputs: ActionInputs, gh: GitHubContext, diff: ReportDiff, html_name: str | None) -> str:
    from aam_eval_action.render.comment import render_comment

    template = gh.workspace / inputs.comment_template if inputs.comment_template else None
    return render_comment(diff, template=template, marker_id=inputs.comment_id, run_url=gh.run_url,
                          html_report=html_name)


class HtmlReport:
    """The HTML report beside the JSON one: base beside head (the base's transcripts read while
    its worktree exists), transcripts from the head's cassettes, trends from the reports kept
    under `evals/reports/`. A failure costs the page only (a warning), never the check."""

    def __init__(self, head: Report, package: Path, summary_file: Path | None) -> None:
        self.head, self.package, self.summary_file = head, package, summary_file
        self._page: Page | None = None

    def add_base(self, base: Report, base_package: Path) -> None:
        self._page = self._build(base, base_package)

    def write(self, path: Path, base: Report | None, environ: Mapping[str, str],
              checkout: Path | None) -> Path | None:
        from aam_eval_action.pipeline.suite import write_file
        from aam_eval_action.redact import Redactor
        from aam_eval_action.render import html

        page = self._page or self._build(base, None)
        if page is None:
            return None
        try:
            write_file(path, html.render(page, Redactor.from_environment({}, environ)), "HTML report",
                       checkout)
        except (AamEvalError, OSError) as exc:
            workflow.warning(f"the HTML report was not written: {exc}", self.summary_file)
            return None
        return path

    def _build(self, base: Report | None, base_package: Path | None) -> Page | None:
        from aam_eval_action.render import html
        from aam_eval_action.render.sides import default_history, side

        try:
            head_side = side(self.head, self.package, strict=False)
            base_side = side(base, base_package, strict=True) if base is not None else None
            reports, warnings = html.history_reports(default_history(head_side))
            return html.page_data(head_side, base_side, reports, warnings=warnings)
        except (AamEvalError, OSError) as exc:
            workflow.warning(f"the HTML report was not written: {exc}", self.summary_file)
            return None


TREND_RUNS = 30
"""Reports the job summary's trend chart shows, the newest."""


def trend_chart(package: Path) -> str:
    """A Mermaid chart of the pass rate over the reports kept under `evals/reports/` (GitHub
    renders it in the job summary); '' with fewer than two. Each run is labelled by its start,
    date and time in UTC (`11-25 14:03`), so two runs on one day are told apart; the labels are
    built from the parsed time (`html.run_labels`): a report is a file of the repository."""
    from aam_eval_action.render.html import run_labels

    folder = package / "evals" / "reports"
    found = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            report = load_report(path)
        except AamEvalError:
            continue
        graded = report.summary.graded if report.summary.graded is not None else report.summary.total
        if graded:
            found.append((report.timestamp, report.summary.passed / graded * 100))
    found = sorted(found)[-TREND_RUNS:]
    if len(found) < 2:
        return ""
    labels = ", ".join(f'"{label}"' for label in run_labels([stamp for stamp, _ in found]))
    points = ", ".join(f"{rate:.1f}" for _, rate in found)
    return ("\n### Pass rate over the last runs\n\n```mermaid\nxychart-beta\n"
            f'    x-axis [{labels}]\n    y-axis "graded pass rate (%)" 0 --> 100\n'
            f"    line [{points}]\n```\n\nEach run by the time it started (UTC).\n")


def _comment(inputs: ActionInputs, gh: GitHubContext, body: str) -> str | None:
    pr = gh.pull_request
    wanted = inputs.comment if inputs.comment is not None else gh.event_name in PR_EVENTS
    if not wanted or pr is None:
        return None
    if not inputs.github_token:
        workflow.warning("no github-token: the PR comment was not posted; pass github-token",
                         gh.summary_file)
        return None
    from aam_eval_action.github.comments import post_comment
    from aam_eval_action.render.comment import marker

    result = post_comment(
        api_url=gh.api_url, token=inputs.github_token, repository=gh.repository,
        pr_number=int(str(pr.get("number") or gh.event.get("number") or 0)), body=body,
        marker=marker(inputs.comment_id),
    )
    if result.warning:
        workflow.warning(result.warning, gh.summary_file)
    return result.url


def _tune(inputs: ActionInputs, gh: GitHubContext, package: Path) -> None:
    """`tune: suggest`: each `tune-skill` tuned (replayed in replay mode) and a winner posted as a
    suggested change on the pull request; a failure is a warning, never the check's verdict."""
    pr = gh.pull_request
    if inputs.tune != "suggest" or pr is None:
        return
    if not inputs.tune_skill:
        workflow.warning("tune: suggest needs tune-skill: the skill(s) to tune", gh.summary_file)
        return
    from aam_eval_action.tuning.run import TuneArgs, tune

    number = int(str(pr.get("number") or gh.event.get("number") or 0))
    for skill in inputs.tune_skill:
        args = TuneArgs(package=package, skill=skill, replay=inputs.mode == "replay", max_usd=inputs.max_usd,
                        engines=_names(inputs.engine), models=_names(inputs.model),
                        plugins=inputs.plugin or None, suggest=f"{gh.repository}#{number}",
                        api_url=gh.api_url, token=inputs.github_token)
        try:
            with workflow.commands_stopped():
                tune(args)
        except AamEvalError as exc:
            workflow.warning(f"tune {skill}: {exc}", gh.summary_file)


def _sensitivity(inputs: ActionInputs, gh: GitHubContext, package: Path, report_path: Path,
                 environ: Mapping[str, str]) -> Path | None:
    """`sensitivity: on`: the kill matrix of the package's suite (in replay mode, from the
    recordings a nightly `aam-eval sensitivity` made) into the job summary, its JSON and page
    beside the report; the JSON's path, or None. A failure is a warning, never the check's
    verdict."""
    if inputs.sensitivity != "on":
        return None
    from aam_eval_action.fsutil import atomic_write
    from aam_eval_action.render.sensitivity import console_lines, markdown
    from aam_eval_action.render.sensitivity_html import render_html
    from aam_eval_action.sensitivity.run import SensitivityArgs, measure

    output = report_path.with_name(report_path.stem + ".sensitivity.json")
    args = SensitivityArgs(package=package, engines=_names(inputs.engine) or None,
                           mutants=inputs.sensitivity_mutants, max_usd=inputs.max_usd,
                           replay=inputs.mode == "replay", output=output, tags=inputs.tags,
                           plugins=inputs.plugin or None,
                           model=inputs.model, judge=inputs.judge, scaffold=inputs.scaffold or None,
                           allow_tools=tuple(inputs.allow_tools), mocks=inputs.mocks,
                           allow_real_servers=inputs.allow_real_servers or None, rerun=inputs.rerun)
    console = Console(environ=environ)
    try:
        with workflow.commands_stopped():
            measured = measure(args, console, environ)
            if measured is None:  # only with --list
                return None
            for text, style in console_lines(measured[0]):
                console.line(text, style)
    except AamEvalError as exc:
        workflow.warning(f"sensitivity: {exc}", gh.summary_file)
        return None
    workflow.append(gh.summary_file, markdown(measured[0]))
    atomic_write(output.with_suffix(".html"), render_html(measured[0]), None)
    return output if output.is_file() else None


def _shown(gh: GitHubContext, path: Path | None) -> str:
    """A path as the workflow sees it: relative to the workspace when inside it ("" for None)."""
    if path is None:
        return ""
    try:
        return path.relative_to(gh.workspace.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _names(value: str | None) -> list[str]:
    return [part.strip() for part in (value or "").split(",") if part.strip()]


def _annotate(inputs: ActionInputs, diff: ReportDiff) -> None:
    """An `::error` annotation on the case file of each regression and stale cassette."""
    for c in diff.cases:
        blamed = not not_blamed(c) if c.category == "regressed" else not c.flaky
        if c.category not in ("regressed", "stale", "diverged") or not blamed:
            continue
        why = c.judge_reason or c.error or f"{c.base_verdict} → {c.head_verdict}"
        title = ANNOTATION_TITLES.get(c.category, "eval regression: ") + c.name
        path = (Path(inputs.package_path) / c.file).as_posix().removeprefix("./") if c.file else None
        workflow.error(why, file=path, line=c.line, title=title)


def _annotate_empty(inputs: ActionInputs, diff: ReportDiff) -> None:
    """A run that selected no case: an `::error` annotation (a `::warning` with allow-empty)
    saying why and what to do. An idle shard of a suite with cases says nothing here."""
    empty = diff.empty
    if empty is None or not empty.fails:
        return
    said = f"no eval case ran: {empty.reason}; {empty.todo}"
    if inputs.allow_empty:
        workflow.warning(f"{said} (passing: allow-empty is true)", None)
    else:
        workflow.error(f"{said}. Set allow-empty: true to let an empty run pass", title="no eval case ran")


def outputs(
    gh: GitHubContext, head: Report, diff: ReportDiff, report_path: Path, comment_url: str | None,
    html_path: Path | None = None, sensitivity_path: Path | None = None,
) -> dict[str, str]:
    """The action's outputs, as action.yml declares them."""
    s = diff.head
    delta = diff.pass_rate_delta_pp

    return {
        "pass-rate": f"{s.pass_rate * 100:.1f}",
        "pass-rate-delta": "" if delta is None else f"{delta:+.1f}",
        "passed": str(s.passed), "failed": str(s.failed), "errored": str(s.errored),
        "total": str(s.total), "graded": str(s.graded), "not-graded": str(s.total - s.graded),
        "regressions": str(diff.regressions), "not-shown": str(diff.counts.get("not-shown", 0)),
        "estimated-pass-rate": "" if s.estimate is None else f"{s.estimate.rate * 100:.1f}",
        "report-path": _shown(gh, report_path), "html-path": _shown(gh, html_path),
        "comment-url": comment_url or "", "sensitivity-path": _shown(gh, sensitivity_path),
    }
