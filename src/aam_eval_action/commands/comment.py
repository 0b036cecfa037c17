"""`aam-eval comment`: render the PR comment for two reports, print it or post/update it."""

from __future__ import annotations

import sys
from pathlib import Path

from aam_eval_action.errors import EXIT_FAILED, EXIT_OK, UsageError
from aam_eval_action.report import load_report


def comment(
    head: Path, base: Path | None, template: Path | None, comment_id: str | None,
    repo: str | None, pr: int | None, api_url: str,
) -> int:
    """Without --repo/--pr the Markdown is printed; with them it is posted (token: GITHUB_TOKEN)."""
    from aam_eval_action.diff import diff_reports
    from aam_eval_action.render.comment import marker, render_comment

    body = render_comment(
        diff_reports(load_report(base) if base else None, load_report(head)),
        template=template, marker_id=comment_id,
    )
    if repo is None and pr is None:
        sys.stdout.write(body)
        return EXIT_OK
    if not (repo and pr):
        raise UsageError("posting needs both --repo OWNER/NAME and --pr NUMBER")
    from aam_eval_action.settings import runner_environment

    token = runner_environment().get("GITHUB_TOKEN", "")
    if not token:
        raise UsageError("set GITHUB_TOKEN to post the comment (it is never taken as a flag)")
    from aam_eval_action.github.comments import post_comment

    result = post_comment(api_url=api_url, token=token, repository=repo, pr_number=pr, body=body,
                          marker=marker(comment_id))
    if result.warning:
        print(f"aam-eval: warning: {result.warning}", file=sys.stderr)
        return EXIT_FAILED
    print(f"{'created' if result.created else 'updated'} {result.url}")
    return EXIT_OK
