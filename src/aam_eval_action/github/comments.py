"""Posting the eval report as one sticky pull-request comment, through PyGitHub.

The comment carries a hidden marker, so each run edits the comment of the previous
run instead of adding another. Posting is the last step and the least important: a
comment that cannot be posted (typically a fork's read-only token) must not turn a
passing eval into a failed step, so every failure here becomes one warning line.

``github`` (PyGitHub) is imported inside the functions, not at module level: it is
heavy, and ``aam-eval --help`` and offline replays must not pay for it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from github import Github
    from github.GithubException import GithubException
    from github.Issue import Issue
    from github.IssueComment import IssueComment

MAX_COMMENT_CHARS = 65_536
"""GitHub refuses longer comment bodies with a 422."""

_TIMEOUT_SECONDS = 30
_MIN_SECRET_CHARS = 8

_HINTS = {
    401: "GitHub rejected the token: check the `github-token` input",
    403: (
        "the token may not write to the pull request: grant `pull-requests: write` in the "
        "workflow's `permissions:` (pull requests from forks only get a read-only token; "
        "the report is still in the job summary)"
    ),
    404: (
        "check the repository, the pull-request number and `GITHUB_API_URL` "
        "(GitHub Enterprise: `https://HOST/api/v3`), and that the token can read the repository"
    ),
    422: "GitHub refused the body: keep a custom `comment-template` under 65,536 characters",
}
_RATE_LIMIT_HINT = "the GitHub API rate limit is exhausted: re-run the job later"
_DEFAULT_HINT = "GitHub may be unavailable: re-run the job; the report is still in the job summary"


@dataclass(frozen=True)
class PostResult:
    """What became of the comment. Failures are data, for the caller to log as a warning."""

    url: str | None
    """The comment's web address, or None when nothing was posted."""
    created: bool
    """True for a new comment, False when the previous one was edited or nothing was posted."""
    warning: str | None
    """One actionable line saying why nothing was posted, or None on success."""


def post_comment(
    *, api_url: str, token: str, repository: str, pr_number: int, body: str, marker: str
) -> PostResult:
    """Edit the comment on ``repository#pr_number`` containing ``marker``, or create one.

    ``api_url`` is ``GITHUB_API_URL``, so GitHub Enterprise works. Never raises for a
    GitHub or network failure: it returns a PostResult with a warning instead.
    """
    import github

    if not marker:
        raise ValueError("an empty marker would match, and overwrite, any comment")
    if not token:
        return _failed("no GitHub token was given: set the `github-token` input", token)
    if not api_url.startswith(("http://", "https://")):
        reason = f"`GITHUB_API_URL` is not an http(s) URL: {api_url!r}"
        return _failed(f"could not post the PR comment: {reason}", token)
    where = f"{repository}#{pr_number}"
    try:
        with _client(api_url, token) as client:
            issue = client.get_repo(repository).get_issue(pr_number)
            return _upsert(issue, body, marker, lambda: _identity(client))
    except github.GithubException as exc:
        return _failed(f"could not post the PR comment on {where}: {_explain(exc)}", token)
    except OSError as exc:  # requests' errors (connection, timeout) derive from OSError
        reason = f"cannot reach the GitHub API at {api_url} ({type(exc).__name__})"
        return _failed(f"could not post the PR comment on {where}: {reason}", token)


def post_suggestion(
    *, api_url: str, token: str, repository: str, pr_number: int, path: str, line: int, new_line: str,
    body: str, start_line: int | None = None,
) -> PostResult:
    """A review on ``repository#pr_number`` with one comment on ``path``'s ``line`` holding a GitHub
    suggested change (````suggestion``) that replaces that line with ``new_line``. Never raises
    for a GitHub or network failure: it returns a PostResult with a warning instead."""
    import github

    if not token:
        return _failed("no GitHub token was given: set the `github-token` input", token)
    if not api_url.startswith(("http://", "https://")):
        return _failed(f"could not post the suggestion: `GITHUB_API_URL` is not an http(s) URL: {api_url!r}",
                       token)
    import re

    longest = max((len(run) for run in re.findall(r"`+", new_line)), default=0)
    fence = "`" * max(3, longest + 1)  # a fence no backtick run in the suggested line can close
    comment: dict[str, object] = {"path": path, "line": line, "side": "RIGHT",
                                  "body": f"{body}\n\n{fence}suggestion\n{new_line}\n{fence}"}
    if start_line is not None and start_line < line:  # a description over several lines: all of them
        comment |= {"start_line": start_line, "start_side": "RIGHT"}
    where = f"{repository}#{pr_number}"
    try:
        with _client(api_url, token) as client:
            pull = client.get_repo(repository).get_pull(pr_number)
            review = pull.create_review(body="aam-eval tune: a description proven on held-out prompts",
                                        event="COMMENT", comments=[comment])  # type: ignore[list-item]
            return PostResult(url=review.html_url, created=True, warning=None)
    except github.GithubException as exc:
        return _failed(f"could not post the suggestion on {where}: {_explain(exc)}", token)
    except OSError as exc:
        return _failed(f"could not post the suggestion on {where}: cannot reach the GitHub API at {api_url} "
                       f"({type(exc).__name__})", token)


def _client(api_url: str, token: str) -> Github:
    """A client tuned for a few sequential requests whose failure is only a warning."""
    import github

    return github.Github(
        base_url=api_url.rstrip("/"),
        auth=github.Auth.Token(token),
        per_page=100,  # the most GitHub allows: fewest round trips to find the marker
        timeout=_TIMEOUT_SECONDS,
        # No retries with backoff: a failed post is a warning, not worth holding up the job.
        retry=None,
        # A handful of sequential requests cannot trip GitHub's rate limits: no throttling.
        seconds_between_requests=None,
        seconds_between_writes=None,
        # Only the PR's comments are needed: don't fetch the repository and the PR first.
        lazy=True,
    )


ACTIONS_BOT = "github-actions[bot]"
"""Who the workflow's own token (`GITHUB_TOKEN`) posts as; GET /user is refused for it."""


def _identity(client: Github) -> str:
    """The login the token posts as: GET /user, else (a GitHub App or Actions token, for
    which /user answers 403) `github-actions[bot]`."""
    import github

    try:
        return client.get_user().login
    except github.RateLimitExceededException:
        raise
    except github.GithubException:
        return ACTIONS_BOT


def _upsert(issue: Issue, body: str, marker: str, author: Callable[[], str]) -> PostResult:
    previous = _find_marked(issue, marker, author)
    if previous is None:
        created = issue.create_comment(body)
        return PostResult(url=created.html_url, created=True, warning=None)
    previous.edit(body)
    return PostResult(url=previous.html_url, created=False, warning=None)


def _find_marked(issue: Issue, marker: str, author: Callable[[], str]) -> IssueComment | None:
    """The oldest comment with the marker written by `author()`; PaginatedList follows every
    ``Link: next``. Anyone can paste the marker into a comment: only our own is adopted.
    Who we are is asked only when a marked comment exists."""
    login: str | None = None
    for c in issue.get_comments():
        if marker not in (c.body or ""):
            continue
        login = login or author()
        if c.user.login == login:
            return c
    return None


def _explain(exc: GithubException) -> str:
    """``<status> <GitHub's message>; <what to do>`` on one line."""
    import github

    if isinstance(exc, github.RateLimitExceededException) or _rate_limited(exc):
        hint = _RATE_LIMIT_HINT
    else:
        hint = _HINTS.get(exc.status, _DEFAULT_HINT)
    return f"{exc.status} {_message(exc.data)}; {hint}"


def _rate_limited(exc: GithubException) -> bool:
    """PyGitHub only recognises a 403; GitHub also answers a spent limit with a 429."""
    headers = {k.lower(): v for k, v in (exc.headers or {}).items()}
    return exc.status == 429 or (exc.status == 403 and headers.get("x-ratelimit-remaining") == "0")


def _message(data: object) -> str:
    """GitHub's message plus any validation details, flattened and bounded."""
    if not isinstance(data, dict):
        return _one_line(str(data or "no message"))
    details = [e.get("message", "") for e in data.get("errors", []) if isinstance(e, dict)]
    parts = [str(data.get("message", "no message")), *filter(None, details)]
    return _one_line(": ".join(parts))


def _one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _failed(warning: str, token: str) -> PostResult:
    """The token must never reach a log, whatever an error message echoes back.

    Only real-looking secrets are masked: masking a 1-letter test token would garble text.
    """
    safe = warning.replace(token, "***") if len(token) >= _MIN_SECRET_CHARS else warning
    return PostResult(url=None, created=False, warning=safe)
