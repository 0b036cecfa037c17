"""What the action does on a run: head report, base report, diff, comment, outputs."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from aam_eval_action.action import ActionInputs, GitHubContext, exit_code
from aam_eval_action.commands.run import RunArgs, execute
from aam_eval_action.config import Mode
from aam_eval_action.console import Console
from aam_eval_action.diff import ReportDiff, diff_reports
from aam_eval_action.errors import AamEvalError
from aam_eval_action.report import Report, load_report
from aam_eval_action.settings import Overrides

PR_EVENTS = ("pull_request", "pull_request_target")


def run_action(inputs: ActionInputs, gh: GitHubContext) -> int:
    console = Console()
    package = (gh.workspace / inputs.package_path).resolve()
    report_path = _report_path(inputs, gh, package)
    if inputs.merge_reports:
        head: Report | None = _merged(inputs, gh, report_path)
    else:
        head, code = execute(_run_args(inputs, package, inputs.mode, report_path), console)
    if head is None:
        return code
    base = _base_report(inputs, gh, console)
    diff = diff_reports(base, head)
    body = _render(inputs, gh, diff)
    _append(gh.summary_file, body)
    _annotate(inputs, diff)
    comment_url = _comment(inputs, gh, body)
    _outputs(gh, head, diff, report_path, comment_url)
    return exit_code(inputs, head, diff.regressions, bool(head.interrupted), diff.counts["stale"])


def _merged(inputs: ActionInputs, gh: GitHubContext, report_path: Path) -> Report:
    """The shard reports of a matrix run, joined into the head report."""
    from aam_eval_action.commands.merge import merge_reports
    from aam_eval_action.errors import UsageError
    from aam_eval_action.fsutil import atomic_write
    from aam_eval_action.report import to_json

    pattern = inputs.merge_reports or ""
    paths = sorted(gh.workspace.glob(pattern))
    if not paths:
        raise UsageError(f"merge-reports {pattern!r} matched no report under {gh.workspace}")
    merged = merge_reports([load_report(p) for p in paths])
    atomic_write(report_path, to_json(merged))
    print(f"merged {len(paths)} shard report(s): {merged.summary.total} case(s)", flush=True)
    return merged


def _run_args(inputs: ActionInputs, package: Path, mode: Mode, output: Path | None) -> RunArgs:
    from aam_eval_action.main import parse_shard

    overrides = Overrides(engine=inputs.engine, model=inputs.model, judge=inputs.judge,
                          mode=mode, jobs=inputs.jobs)
    return RunArgs(
        package=package, cases=inputs.cases, overrides=overrides, target=inputs.target,
        output=output, shard=parse_shard(inputs.shard) if inputs.shard else None,
    )


def _report_path(inputs: ActionInputs, gh: GitHubContext, package: Path) -> Path:
    if inputs.report_path:
        return gh.workspace / inputs.report_path
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H-%M-%SZ")
    return package / "evals" / "reports" / f"{stamp}.json"


def _base_report(inputs: ActionInputs, gh: GitHubContext, console: Console) -> Report | None:
    """The report to compare against: base-report, or the base commit replayed; None if neither."""
    if inputs.base_report:
        return load_report(gh.workspace / inputs.base_report)
    ref = inputs.base_ref or _pr_base_sha(gh)
    if not ref:
        return None
    from aam_eval_action.gitbase import BaseCheckout, resolve_commit

    try:
        commit = resolve_commit(gh.workspace, ref)
        console.line(f"base: replaying {ref} ({commit[:12]}) in a worktree")
        with BaseCheckout(gh.workspace, commit) as tree:
            package = tree / inputs.package_path
            if not (package / "package.agent.json").is_file():
                console.line(f"base: no package at {inputs.package_path}; everything is new")
                return None
            report, _ = execute(_run_args(inputs, package, "replay", None), console)
            return report
    except AamEvalError as exc:
        _warn(gh, f"no base report to compare against: {exc}")
        return None


def _pr_base_sha(gh: GitHubContext) -> str | None:
    pr = gh.pull_request
    base = pr.get("base") if pr else None
    if isinstance(base, dict):
        sha, ref = base.get("sha"), base.get("ref")
        return str(sha or ref) if (sha or ref) else None
    return None


def _render(inputs: ActionInputs, gh: GitHubContext, diff: ReportDiff) -> str:
    from aam_eval_action.comment import render_comment

    template = gh.workspace / inputs.comment_template if inputs.comment_template else None
    return render_comment(diff, template=template, marker_id=inputs.comment_id, run_url=gh.run_url)


def _comment(inputs: ActionInputs, gh: GitHubContext, body: str) -> str | None:
    pr = gh.pull_request
    wanted = inputs.comment if inputs.comment is not None else gh.event_name in PR_EVENTS
    if not wanted or pr is None:
        return None
    if not inputs.github_token:
        _warn(gh, "no github-token: the PR comment was not posted; pass github-token")
        return None
    from aam_eval_action.comment import marker
    from aam_eval_action.github import post_comment

    result = post_comment(
        api_url=gh.api_url, token=inputs.github_token, repository=gh.repository,
        pr_number=int(str(pr.get("number") or gh.event.get("number") or 0)), body=body,
        marker=marker(inputs.comment_id),
    )
    if result.warning:
        _warn(gh, result.warning)
    return result.url


def _annotate(inputs: ActionInputs, diff: ReportDiff) -> None:
    """An `::error` annotation on the case file of each regression and stale cassette."""
    for c in diff.cases:
        if c.category not in ("regressed", "stale") or c.flaky:
            continue
        why = c.judge_reason or c.error or f"{c.base_verdict} → {c.head_verdict}"
        title = ("stale cassette: " if c.category == "stale" else "eval regression: ") + c.name
        props = f"title={_prop(title)}"
        if c.file:
            path = (Path(inputs.package_path) / c.file).as_posix().removeprefix("./")
            props = f"file={_prop(path)},line={c.line or 1}," + props
        print(f"::error {props}::{_data(why)}", flush=True)


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def _warn(gh: GitHubContext, message: str) -> None:
    print(f"::warning::{_data(message)}", flush=True)
    _append(gh.summary_file, f"> [!WARNING]\n> {message}\n")


def _append(path: Path | None, text: str) -> None:
    if path is None:
        return
    with path.open("a", encoding="utf-8") as f:
        f.write(text if text.endswith("\n") else text + "\n")


def _outputs(
    gh: GitHubContext, head: Report, diff: ReportDiff, report_path: Path, comment_url: str | None
) -> None:
    s = head.summary
    delta = diff.pass_rate_delta_pp
    try:
        shown = report_path.relative_to(gh.workspace.resolve()).as_posix()
    except ValueError:
        shown = report_path.as_posix()
    values = {
        "pass-rate": f"{s.pass_rate * 100:.1f}",
        "pass-rate-delta": "" if delta is None else f"{delta:+.1f}",
        "passed": str(s.passed), "failed": str(s.failed), "errored": str(s.errored),
        "total": str(s.total), "regressions": str(diff.regressions),
        "report-path": shown, "comment-url": comment_url or "",
    }
    lines = "".join(f"{k}={v}\n" for k, v in values.items())
    if gh.output_file is not None:
        _append(gh.output_file, lines)
    else:
        print(lines, end="")
