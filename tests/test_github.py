"""The sticky PR comment, posted through the real PyGitHub to a local GitHub-compatible server.

The server enforces what GitHub enforces (token auth, read-only tokens, Link pagination,
the 65,536-character limit), so these tests exercise the same requests a run on GitHub
makes; the last group checks the server itself against GitHub's pagination rules.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import github
import pytest

from aam_eval_action.github.comments import MAX_COMMENT_CHARS, PostResult, post_comment
from aam_eval_action.testing.github_server import GitHubServer

OWNER, REPO, PR = "octo", "agent-pkg", 7
MARKER = "<!-- aam-eval-action:report -->"
RW_TOKEN, RO_TOKEN = "rw-token", "ro-token"


@pytest.fixture
def server() -> Iterator[GitHubServer]:
    with GitHubServer(tokens={RW_TOKEN: "write", RO_TOKEN: "read"}) as running:
        running.add_pr(OWNER, REPO, PR)
        yield running


def post(server: GitHubServer, body: str, **overrides: Any) -> PostResult:
    arguments: dict[str, Any] = {
        "api_url": server.url,
        "token": RW_TOKEN,
        "repository": f"{OWNER}/{REPO}",
        "pr_number": PR,
        "body": body,
        "marker": MARKER,
    }
    return post_comment(**{**arguments, **overrides})


def report(text: str) -> str:
    return f"{MARKER}\n## Eval report\n{text}\n"


def bodies(server: GitHubServer) -> list[str]:
    return [comment["body"] for comment in server.comments(OWNER, REPO, PR)]


def writes(server: GitHubServer) -> list[tuple[str, int]]:
    return [(r.method, r.status) for r in server.requests if r.method != "GET"]


# -- creating and updating -----------------------------------------------------------


def test_creates_a_comment_when_none_carries_the_marker(server: GitHubServer) -> None:
    server.seed_comments(OWNER, REPO, PR, 3)

    result = post(server, report("pass rate 80%"))

    assert result.created and result.warning is None
    assert bodies(server)[-1] == report("pass rate 80%")
    assert result.url == server.comments(OWNER, REPO, PR)[-1]["html_url"]
    assert writes(server) == [("POST", 201)]


def test_edits_the_marked_comment_found_on_a_later_page(server: GitHubServer) -> None:
    server.seed_comments(OWNER, REPO, PR, 120)
    [old] = server.seed_comments(OWNER, REPO, PR, 1, "github-actions[bot]", report("old"))
    server.seed_comments(OWNER, REPO, PR, 29)

    result = post(server, report("new"))

    assert (result.created, result.warning) == (False, None)
    comments = server.comments(OWNER, REPO, PR)
    assert len(comments) == 150
    assert [c["body"] for c in comments if c["id"] == old] == [report("new")]
    assert result.url == next(c["html_url"] for c in comments if c["id"] == old)
    pages = [r.query for r in server.requests if r.path.endswith(f"/issues/{PR}/comments")]
    assert pages == [{"per_page": "100"}, {"per_page": "100", "page": "2"}]
    assert writes(server) == [("PATCH", 200)]


def test_a_second_run_edits_the_first_runs_comment(server: GitHubServer) -> None:
    first = post(server, report("run 1"))
    second = post(server, report("run 2"))

    assert (first.created, second.created) == (True, False)
    assert first.url == second.url
    assert bodies(server) == [report("run 2")]


def test_a_body_of_exactly_the_limit_is_accepted(server: GitHubServer) -> None:
    body = report("")
    body += "x" * (MAX_COMMENT_CHARS - len(body))

    result = post(server, body)

    assert result.warning is None
    assert bodies(server) == [body]


def test_enterprise_api_url_with_api_v3_prefix(server: GitHubServer) -> None:
    api_url = f"{server.url}/api/v3"

    created = post(server, report("ghe 1"), api_url=api_url)
    edited = post(server, report("ghe 2"), api_url=api_url)

    assert (created.created, edited.created, edited.warning) == (True, False, None)
    assert bodies(server) == [report("ghe 2")]
    assert all(r.path.startswith("/api/v3/") for r in server.requests)
    assert writes(server) == [("POST", 201), ("PATCH", 200)]


# -- failures are warnings, not exceptions -----------------------------------------


def test_read_only_token_warns_instead_of_raising(server: GitHubServer) -> None:
    result = post(server, report("fork"), token=RO_TOKEN)

    assert (result.url, result.created) == (None, False)
    assert result.warning is not None
    assert "403 Resource not accessible by integration" in result.warning
    assert "`pull-requests: write`" in result.warning and "fork" in result.warning
    assert RO_TOKEN not in result.warning
    assert bodies(server) == []


def test_read_only_token_cannot_edit_either(server: GitHubServer) -> None:
    server.seed_comments(OWNER, REPO, PR, 1, "github-actions[bot]", report("old"))

    result = post(server, report("new"), token=RO_TOKEN)

    assert result.warning is not None and "403" in result.warning
    assert bodies(server) == [report("old")]


def test_bad_token_warns_without_leaking_it(server: GitHubServer) -> None:
    secret = "ghp_not-a-real-token-0123456789"

    result = post(server, report("x"), token=secret)

    assert result.url is None and result.warning is not None
    assert "401 Bad credentials" in result.warning and "`github-token`" in result.warning
    assert secret not in result.warning


def test_body_over_the_limit_warns_with_githubs_reason(server: GitHubServer) -> None:
    result = post(server, report("x" * MAX_COMMENT_CHARS))

    assert result.url is None and result.warning is not None
    assert "422 Validation Failed" in result.warning
    assert "maximum is 65536 characters" in result.warning
    assert bodies(server) == []


def test_unknown_pull_request_warns_404(server: GitHubServer) -> None:
    result = post(server, report("x"), pr_number=404)

    assert result.warning is not None
    assert f"{OWNER}/{REPO}#404" in result.warning and "404 Not Found" in result.warning
    assert "GITHUB_API_URL" in result.warning


def test_unreachable_api_warns() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    result = post_comment(
        api_url=f"http://127.0.0.1:{port}",
        token=RW_TOKEN,
        repository=f"{OWNER}/{REPO}",
        pr_number=PR,
        body="x",
        marker=MARKER,
    )

    assert result.url is None and result.warning is not None
    assert f"cannot reach the GitHub API at http://127.0.0.1:{port}" in result.warning


def test_token_is_masked_even_when_echoed_back(server: GitHubServer) -> None:
    secret = "ghs_0123456789abcdef"

    result = post(server, "x", token=secret, api_url=f"ftp://x-access-token:{secret}@ghe")

    assert result.warning is not None and "not an http(s) URL" in result.warning
    assert secret not in result.warning and "x-access-token:***@ghe" in result.warning


def test_missing_token_warns(server: GitHubServer) -> None:
    result = post(server, report("x"), token="")

    assert result.warning is not None and "`github-token`" in result.warning
    assert server.requests == []


def test_pygithub_is_not_imported_with_the_module() -> None:
    code = "import sys, aam_eval_action.github; print('github' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- the server itself -------------------------------------------------------------


def fetch(url: str, token: str | None = RW_TOKEN) -> tuple[int, dict[str, str], Any]:
    request = urllib.request.Request(url)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, dict(response.headers), json.load(response)
    except urllib.error.HTTPError as error:
        with contextlib.closing(error):
            return error.code, dict(error.headers), json.load(error)


def links(headers: dict[str, str]) -> list[tuple[str, str]]:
    """(rel, query) pairs, in the header's order."""
    pairs = []
    for part in headers.get("Link", "").split(", ") if headers.get("Link") else []:
        url, rel = part.split("; ")
        pairs.append((rel.removeprefix('rel="').rstrip('"'), url.strip("<>").split("?")[1]))
    return pairs


def test_server_paginates_with_githubs_link_header(server: GitHubServer) -> None:
    server.seed_comments(OWNER, REPO, PR, 150)
    url = f"{server.url}/repos/{OWNER}/{REPO}/issues/{PR}/comments"

    _, first, page1 = fetch(url)
    _, middle, page3 = fetch(f"{url}?page=3")
    _, last, page5 = fetch(f"{url}?page=5")

    assert (len(page1), len(page3), len(page5)) == (30, 30, 30)
    assert links(first) == [("next", "per_page=30&page=2"), ("last", "per_page=30&page=5")]
    assert [rel for rel, _ in links(middle)] == ["prev", "next", "last", "first"]
    assert links(last) == [("prev", "per_page=30&page=4"), ("first", "per_page=30&page=1")]
    assert page3[0]["body"] == "Comment 61 by someone"


def test_server_caps_per_page_at_100_and_omits_link_on_one_page(server: GitHubServer) -> None:
    server.seed_comments(OWNER, REPO, PR, 150)
    url = f"{server.url}/repos/{OWNER}/{REPO}/issues/{PR}/comments"

    _, capped, big = fetch(f"{url}?per_page=500")
    _, single, everything = fetch(f"{url}?per_page=100&page=2")
    _, _, beyond = fetch(f"{url}?per_page=100&page=3")

    assert len(big) == 100
    assert links(capped)[0] == ("next", "per_page=100&page=2")
    assert len(everything) == 50 and [rel for rel, _ in links(single)] == ["prev", "first"]
    assert beyond == []


def test_server_requires_a_known_token(server: GitHubServer) -> None:
    url = f"{server.url}/repos/{OWNER}/{REPO}"

    assert fetch(url, token=None)[0::2] == (
        401,
        {
            "message": "Requires authentication",
            "documentation_url": "https://docs.github.com/rest",
            "status": "401",
        },
    )
    assert fetch(url, token="nope")[2]["message"] == "Bad credentials"
    assert fetch(url, token=RO_TOKEN)[2]["full_name"] == f"{OWNER}/{REPO}"


def test_pygithub_reads_every_page_and_the_pull_request(server: GitHubServer) -> None:
    server.seed_comments(OWNER, REPO, PR, 75)
    auth = github.Auth.Token(RW_TOKEN)
    with github.Github(base_url=server.url, auth=auth, seconds_between_requests=None) as client:
        pull = client.get_repo(f"{OWNER}/{REPO}").get_pull(PR)
        comments = list(pull.get_issue_comments())
        created = pull.create_issue_comment("hello")
        fetched = client.get_repo(f"{OWNER}/{REPO}").get_issue(PR).get_comments().reversed[0]

    assert len(comments) == 75 and comments[-1].body == "Comment 75 by someone"
    assert (pull.head.ref, pull.base.ref) == ("feature", "main")
    assert (fetched.id, fetched.body) == (created.id, "hello")
    assert fetched.user.login == created.user.login == "github-actions[bot]"


# -- the rate limit -------------------------------------------------------------------


def test_every_response_carries_the_rate_limit_and_pygithub_reads_it(server: GitHubServer) -> None:
    status, headers, _ = fetch(f"{server.url}/repos/{OWNER}/{REPO}")
    assert status == 200
    assert {k: headers[k] for k in ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Used",
                                    "X-RateLimit-Resource")} == {
        "X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "4999", "X-RateLimit-Used": "1",
        "X-RateLimit-Resource": "core"}
    assert int(headers["X-RateLimit-Reset"]) > time.time()
    with github.Github(base_url=server.url, auth=github.Auth.Token(RW_TOKEN)) as client:
        client.get_repo(f"{OWNER}/{REPO}")
        assert client.rate_limiting == (4998, 5000)


@pytest.mark.parametrize("status", [403, 429])
def test_an_exhausted_rate_limit_warns_to_rerun_later(server: GitHubServer, status: int) -> None:
    server.exhaust_rate_limit(status)

    result = post(server, report("too many requests"))

    assert (result.url, result.created) == (None, False)
    assert result.warning == (
        f"could not post the PR comment on {OWNER}/{REPO}#{PR}: {status} API rate limit exceeded for "
        "installation ID 1. If you reach out to GitHub Support for help, please include the request ID.; "
        "the GitHub API rate limit is exhausted: re-run the job later")
    assert [r.status for r in server.requests] == [status]
    assert bodies(server) == []


def test_an_exhausted_limit_answers_as_github_does(server: GitHubServer) -> None:
    server.exhaust_rate_limit()
    status, headers, payload = fetch(f"{server.url}/repos/{OWNER}/{REPO}")
    assert status == 403
    assert (headers["X-RateLimit-Remaining"], headers["X-RateLimit-Used"]) == ("0", "5000")
    assert payload["message"].startswith("API rate limit exceeded")
