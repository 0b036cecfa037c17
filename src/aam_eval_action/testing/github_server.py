"""A GitHub-REST-compatible server on 127.0.0.1 for PyGitHub to talk to in tests.

It serves only what posting a sticky pull-request comment needs, but enforces it the
way GitHub does, so that a test passing here means the code works against GitHub:
a token in ``Authorization`` (``token X`` or ``Bearer X``), 403 "Resource not
accessible by integration" when a read-only token writes, real ``page``/``per_page``
pagination with a ``Link`` header, the 65,536-character comment limit, and the primary
rate limit: every response carries ``X-RateLimit-Limit/Remaining/Reset/Used/Resource``,
each request spends one, and a spent limit (``exhaust_rate_limit``) answers 403 or 429
"API rate limit exceeded" with ``X-RateLimit-Remaining: 0``. Requests may carry a GitHub
Enterprise ``/api/v3`` prefix; URLs in responses keep it.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import math
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

MAX_BODY_CHARS = 65_536
DEFAULT_PER_PAGE = 30
MAX_PER_PAGE = 100
ENTERPRISE_PREFIX = "/api/v3"
BOT_LOGIN = "github-actions[bot]"
DOCS = "https://docs.github.com/rest"
RATE_LIMIT = 5000
"""Requests per hour of a GitHub App installation token (the Actions token's limit is 1,000)."""
RATE_LIMIT_DOCS = "https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api"

Json = dict[str, Any]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # parallel clients must not be reset by a short backlog


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server saw it, for tests that assert on the traffic."""

    method: str
    path: str
    """The path as requested, prefix included, query excluded."""
    query: dict[str, str]
    token: str | None
    status: int


class ApiError(Exception):
    """A GitHub error response: its status and JSON body."""

    def __init__(self, status: int, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.payload: Json = {"message": message, "documentation_url": DOCS, **extra}
        self.payload["status"] = str(status)


@dataclass
class _Issue:
    owner: str
    repo: str
    number: int
    title: str
    author: str
    head: str
    base: str
    created_at: str
    is_pull: bool = True


@dataclass
class _Comment:
    id: int
    owner: str
    repo: str
    number: int
    body: str
    author: str
    created_at: str
    updated_at: str


@dataclass
class _Request:
    """A parsed request: where to build URLs from, what matched, who is asking."""

    method: str
    api: str
    """The API root the client used, e.g. ``http://127.0.0.1:P/api/v3``."""
    html: str
    args: dict[str, str]
    query: dict[str, str]
    permission: str
    body: bytes


@dataclass
class _Response:
    status: int
    payload: Any
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[["GitHubServer", _Request], _Response]
_REPO = r"/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class GitHubServer:
    """The fake GitHub: state, test helpers and the REST endpoints PyGitHub calls."""

    def __init__(self, tokens: Mapping[str, str], rate_limit: int = RATE_LIMIT) -> None:
        """``tokens`` maps each accepted token to ``"write"`` or ``"read"``."""
        self._tokens = dict(tokens)
        self._lock = threading.Lock()
        self.rate_limit = rate_limit
        self._used = 0
        self._limited_status = 403
        self._reset = int(time.time()) + 3600
        self._repos: list[tuple[str, str]] = []
        self._issues: dict[tuple[str, str, int], _Issue] = {}
        self._comments: dict[int, _Comment] = {}
        self._reviews: dict[tuple[str, str, int], list[Json]] = {}
        self._ids = itertools.count(1_000_001)
        self.requests: list[RecordedRequest] = []
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------

    @property
    def url(self) -> str:
        """The server root (github.com style); append ``/api/v3`` for Enterprise style."""
        if self._httpd is None:
            raise RuntimeError("the server is not started")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def start(self) -> GitHubServer:
        handler = type("BoundHandler", (_HttpHandler,), {"app": self})
        self._httpd = _Server(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        serve = functools.partial(self._httpd.serve_forever, poll_interval=0.05)
        self._thread = threading.Thread(target=serve, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None and self._thread is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._thread.join()
        self._httpd = self._thread = None

    def __enter__(self) -> GitHubServer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- test helpers ------------------------------------------------------------

    def add_pr(
        self,
        owner: str,
        repo: str,
        number: int,
        *,
        title: str = "Change the agent",
        author: str = "contributor",
        head: str = "feature",
        base: str = "main",
    ) -> None:
        """Create a pull request (and its repository, on first use)."""
        with self._lock:
            if (owner, repo) not in self._repos:
                self._repos.append((owner, repo))
            issue = _Issue(owner, repo, number, title, author, head, base, _now())
            self._issues[owner, repo, number] = issue

    def seed_comments(
        self,
        owner: str,
        repo: str,
        number: int,
        count: int,
        author: str = "someone",
        body: str | None = None,
    ) -> list[int]:
        """Add ``count`` comments as if people had written them; returns their ids."""
        with self._lock:
            self._issue(owner, repo, number)
            texts = [body or f"Comment {i + 1} by {author}" for i in range(count)]
            return [self._add_comment(owner, repo, number, text, author).id for text in texts]

    def exhaust_rate_limit(self, status: int = 403) -> None:
        """Spend the rest of the hour's requests: every later request gets ``status`` (GitHub
        answers a spent primary limit with 403, sometimes 429) and ``X-RateLimit-Remaining: 0``."""
        if status not in (403, 429):
            raise ValueError("GitHub answers a spent rate limit with 403 or 429")
        with self._lock:
            self._used, self._limited_status = self.rate_limit, status

    def reviews(self, owner: str, repo: str, number: int) -> list[Json]:
        """The PR's reviews as posted (body, event, comments with path, line, side and body)."""
        with self._lock:
            return [dict(r) for r in self._reviews.get((owner, repo, number), [])]

    def comments(self, owner: str, repo: str, number: int) -> list[Json]:
        """The PR's comments in API shape, oldest first."""
        root = self.url
        with self._lock:
            return [self._comment_json(c, root, root) for c in self._on(owner, repo, number)]

    # -- dispatch ----------------------------------------------------------------

    def respond(
        self, method: str, target: str, authorization: str | None, body: bytes
    ) -> _Response:
        """Answer one request; every error is an ApiError in GitHub's JSON shape."""
        path, query = _split(target)
        token = _token(authorization)
        try:
            self._spend_rate_limit()
            response = self._dispatch(method, path, query, token, body)
        except ApiError as error:
            response = _Response(error.status, error.payload)
        response.headers.update(self._rate_limit_headers())
        with self._lock:
            self.requests.append(RecordedRequest(method, path, query, token, response.status))
        return response

    def _spend_rate_limit(self) -> None:
        with self._lock:
            if self._used >= self.rate_limit:
                raise ApiError(
                    self._limited_status,
                    "API rate limit exceeded for installation ID 1. If you reach out to GitHub "
                    "Support for help, please include the request ID.",
                    documentation_url=RATE_LIMIT_DOCS,
                )
            self._used += 1

    def _rate_limit_headers(self) -> dict[str, str]:
        with self._lock:
            used = self._used
        return {
            "X-RateLimit-Limit": str(self.rate_limit),
            "X-RateLimit-Remaining": str(max(self.rate_limit - used, 0)),
            "X-RateLimit-Reset": str(self._reset),
            "X-RateLimit-Used": str(used),
            "X-RateLimit-Resource": "core",
        }

    def _dispatch(
        self, method: str, path: str, query: dict[str, str], token: str | None, body: bytes
    ) -> _Response:
        prefix = ENTERPRISE_PREFIX if path.startswith(ENTERPRISE_PREFIX + "/") else ""
        route = path.removeprefix(prefix).rstrip("/")
        permission = self._authenticate(token)
        for verb, pattern, handler in _ROUTES:
            match = re.fullmatch(pattern, route)
            if match and verb == method:
                request = _Request(
                    method, self.url + prefix, self.url, match.groupdict(), query, permission, body
                )
                with self._lock:
                    return handler(self, request)
        raise ApiError(404, "Not Found")

    def _authenticate(self, token: str | None) -> str:
        if token is None:
            raise ApiError(401, "Requires authentication")
        if token not in self._tokens:
            raise ApiError(401, "Bad credentials")
        return self._tokens[token]

    # -- endpoints ---------------------------------------------------------------

    def _get_user(self, request: _Request) -> _Response:
        return _Response(200, _user_json(BOT_LOGIN, request.api, request.html))

    def _get_repo(self, request: _Request) -> _Response:
        owner, repo = request.args["owner"], request.args["repo"]
        if (owner, repo) not in self._repos:
            raise ApiError(404, "Not Found")
        return _Response(200, self._repo_json(owner, repo, request.api, request.html))

    def _get_pull(self, request: _Request) -> _Response:
        issue = self._issue_from(request)
        return _Response(200, self._pull_json(issue, request.api, request.html))

    def _get_issue(self, request: _Request) -> _Response:
        issue = self._issue_from(request)
        return _Response(200, self._issue_json(issue, request.api, request.html))

    def _list_comments(self, request: _Request) -> _Response:
        issue = self._issue_from(request)
        everything = self._on(issue.owner, issue.repo, issue.number)
        url = f"{request.api}/repos/{issue.owner}/{issue.repo}/issues/{issue.number}/comments"
        chunk, link = _paginate(everything, request.query, url)
        payload = [self._comment_json(c, request.api, request.html) for c in chunk]
        return _Response(200, payload, {"Link": link} if link else {})

    def _create_comment(self, request: _Request) -> _Response:
        issue = self._issue_from(request)
        _require_write(request)
        text = _comment_body(request.body)
        comment = self._add_comment(issue.owner, issue.repo, issue.number, text, BOT_LOGIN)
        payload = self._comment_json(comment, request.api, request.html)
        return _Response(201, payload, {"Location": payload["url"]})

    def _create_review(self, request: _Request) -> _Response:
        """A review with line comments; each comment needs a path, a line (and a RIGHT or LEFT side)
        and a body, as GitHub asks."""
        issue = self._issue_from(request)
        _require_write(request)
        try:
            data = json.loads(request.body or b"{}")
        except ValueError:
            raise ApiError(400, "Problems parsing JSON") from None
        comments = data.get("comments") or []
        for c in comments:
            if not (isinstance(c, dict) and isinstance(c.get("path"), str) and isinstance(c.get("line"), int)
                    and isinstance(c.get("body"), str) and c.get("side", "RIGHT") in ("RIGHT", "LEFT")):
                raise _invalid("invalid", "comments", "a review comment needs a path, a line and a body")
        review = {"id": next(self._ids), "body": data.get("body", ""), "event": data.get("event", "PENDING"),
                  "comments": comments, "user": {"login": BOT_LOGIN}, "commit_id": data.get("commit_id")}
        self._reviews.setdefault((issue.owner, issue.repo, issue.number), []).append(review)
        url = f"{request.api}/repos/{issue.owner}/{issue.repo}/pulls/{issue.number}/reviews/{review['id']}"
        payload = {"id": review["id"], "body": review["body"], "state": "COMMENTED",
                   "user": _user_json(BOT_LOGIN, request.api, request.html), "html_url": url, "url": url,
                   "pull_request_url": f"{request.api}/repos/{issue.owner}/{issue.repo}/pulls/{issue.number}",
                   "commit_id": review["commit_id"], "submitted_at": _now()}
        return _Response(200, payload)

    def _get_comment(self, request: _Request) -> _Response:
        comment = self._comment_from(request)
        return _Response(200, self._comment_json(comment, request.api, request.html))

    def _edit_comment(self, request: _Request) -> _Response:
        comment = self._comment_from(request)
        _require_write(request)
        comment.body = _comment_body(request.body)
        comment.updated_at = _now()
        return _Response(200, self._comment_json(comment, request.api, request.html))

    # -- state -------------------------------------------------------------------

    def _issue(self, owner: str, repo: str, number: int) -> _Issue:
        issue = self._issues.get((owner, repo, number))
        if issue is None:
            raise ApiError(404, "Not Found")
        return issue

    def _issue_from(self, request: _Request) -> _Issue:
        args = request.args
        return self._issue(args["owner"], args["repo"], int(args["number"]))

    def _comment_from(self, request: _Request) -> _Comment:
        comment = self._comments.get(int(request.args["comment_id"]))
        if comment is None or (comment.owner, comment.repo) != (
            request.args["owner"],
            request.args["repo"],
        ):
            raise ApiError(404, "Not Found")
        return comment

    def _on(self, owner: str, repo: str, number: int) -> list[_Comment]:
        where = (owner, repo, number)
        return [c for c in self._comments.values() if (c.owner, c.repo, c.number) == where]

    def _add_comment(self, owner: str, repo: str, number: int, body: str, author: str) -> _Comment:
        stamp = _now()
        comment = _Comment(next(self._ids), owner, repo, number, body, author, stamp, stamp)
        self._comments[comment.id] = comment
        return comment

    # -- JSON shapes -------------------------------------------------------------

    def _repo_json(self, owner: str, repo: str, api: str, html: str) -> Json:
        url = f"{api}/repos/{owner}/{repo}"
        return {
            "id": self._repos.index((owner, repo)) + 1,
            "node_id": f"R_{owner}_{repo}",
            "name": repo,
            "full_name": f"{owner}/{repo}",
            "private": False,
            "visibility": "public",
            "owner": _user_json(owner, api, html),
            "html_url": f"{html}/{owner}/{repo}",
            "url": url,
            "issues_url": f"{url}/issues{{/number}}",
            "pulls_url": f"{url}/pulls{{/number}}",
            "issue_comment_url": f"{url}/issues/comments{{/number}}",
            "default_branch": "main",
            "fork": False,
        }

    def _issue_json(self, issue: _Issue, api: str, html: str) -> Json:
        url = f"{api}/repos/{issue.owner}/{issue.repo}/issues/{issue.number}"
        pull_url = f"{api}/repos/{issue.owner}/{issue.repo}/pulls/{issue.number}"
        page = f"{html}/{issue.owner}/{issue.repo}/pull/{issue.number}"
        return {
            "id": issue.number * 1000 + 7,
            "node_id": f"I_{issue.number}",
            "url": url,
            "repository_url": f"{api}/repos/{issue.owner}/{issue.repo}",
            "comments_url": f"{url}/comments",
            "events_url": f"{url}/events",
            "html_url": page,
            "number": issue.number,
            "state": "open",
            "title": issue.title,
            "body": "",
            "user": _user_json(issue.author, api, html),
            "labels": [],
            "assignees": [],
            "locked": False,
            "comments": len(self._on(issue.owner, issue.repo, issue.number)),
            "pull_request": {"url": pull_url, "html_url": page, "merged_at": None},
            "created_at": issue.created_at,
            "updated_at": issue.created_at,
            "closed_at": None,
            "author_association": "CONTRIBUTOR",
        }

    def _pull_json(self, issue: _Issue, api: str, html: str) -> Json:
        shape = self._issue_json(issue, api, html)
        url = shape["pull_request"]["url"]
        repo = self._repo_json(issue.owner, issue.repo, api, html)
        del shape["pull_request"], shape["labels"], shape["repository_url"]
        return {
            **shape,
            "url": url,
            "issue_url": shape["url"],
            "diff_url": f"{shape['html_url']}.diff",
            "patch_url": f"{shape['html_url']}.patch",
            "commits_url": f"{url}/commits",
            "review_comments_url": f"{url}/comments",
            "head": _branch_json(issue.owner, issue.head, repo, api, html),
            "base": _branch_json(issue.owner, issue.base, repo, api, html),
            "draft": False,
            "merged": False,
            "mergeable": True,
            "merged_at": None,
            "merge_commit_sha": None,
        }

    def _comment_json(self, comment: _Comment, api: str, html: str) -> Json:
        repo = f"{comment.owner}/{comment.repo}"
        return {
            "id": comment.id,
            "node_id": f"IC_{comment.id}",
            "url": f"{api}/repos/{repo}/issues/comments/{comment.id}",
            "html_url": f"{html}/{repo}/pull/{comment.number}#issuecomment-{comment.id}",
            "issue_url": f"{api}/repos/{repo}/issues/{comment.number}",
            "body": comment.body,
            "user": _user_json(comment.author, api, html),
            "created_at": comment.created_at,
            "updated_at": comment.updated_at,
            "author_association": "NONE" if comment.author == BOT_LOGIN else "CONTRIBUTOR",
            "performed_via_github_app": None,
        }


def _user_json(login: str, api: str, html: str) -> Json:
    bot = login.endswith("[bot]")
    return {
        "login": login,
        "id": sum(map(ord, login)),
        "node_id": f"U_{login}",
        "avatar_url": f"{html}/avatars/{login}",
        "gravatar_id": "",
        "url": f"{api}/users/{login}",
        "html_url": f"{html}/{login}",
        "type": "Bot" if bot else "User",
        "site_admin": False,
    }


def _branch_json(owner: str, ref: str, repo: Json, api: str, html: str) -> Json:
    return {
        "label": f"{owner}:{ref}",
        "ref": ref,
        "sha": hashlib.sha1(ref.encode()).hexdigest(),
        "user": _user_json(owner, api, html),
        "repo": repo,
    }


# -- request helpers ---------------------------------------------------------------


def _split(target: str) -> tuple[str, dict[str, str]]:
    parts = urlsplit(target)
    return parts.path, dict(parse_qsl(parts.query))


def _token(header: str | None) -> str | None:
    """GitHub accepts both schemes, case-insensitively."""
    scheme, _, value = (header or "").partition(" ")
    if scheme.lower() in ("token", "bearer") and value.strip():
        return value.strip()
    return None


def _require_write(request: _Request) -> None:
    if request.permission != "write":
        raise ApiError(403, "Resource not accessible by integration")


def _comment_body(raw: bytes) -> str:
    try:
        data = json.loads(raw or b"{}")
    except ValueError:
        raise ApiError(400, "Problems parsing JSON") from None
    body = data.get("body") if isinstance(data, dict) else None
    if not isinstance(body, str):
        raise _invalid("missing_field", "body", "body wasn't supplied.")
    if len(body) > MAX_BODY_CHARS:
        raise _invalid("unprocessable", "data", "Body is too long (maximum is 65536 characters)")
    return body


def _invalid(code: str, field_name: str, message: str) -> ApiError:
    error = {"resource": "IssueComment", "code": code, "field": field_name, "message": message}
    return ApiError(422, "Validation Failed", errors=[error])


def _number(raw: str | None, default: int) -> int:
    try:
        return int(raw) if raw is not None else default
    except ValueError:
        return default


def _paginate(items: list[_Comment], query: dict[str, str], url: str) -> tuple[list[_Comment], str]:
    """One page of ``items`` and its Link header, as GitHub computes them."""
    per_page = min(_number(query.get("per_page"), DEFAULT_PER_PAGE), MAX_PER_PAGE)
    per_page = per_page if per_page > 0 else DEFAULT_PER_PAGE
    page = max(_number(query.get("page"), 1), 1)
    last = max(math.ceil(len(items) / per_page), 1)
    chunk = items[(page - 1) * per_page : page * per_page]
    return chunk, _link_header(url, query, page, last, per_page)


def _link_header(url: str, query: dict[str, str], page: int, last: int, per_page: int) -> str:
    """GitHub's order: prev, next, last, first; none at all for a single page."""
    others = {k: v for k, v in query.items() if k not in ("page", "per_page")}
    rels: list[tuple[str, int]] = []
    if page > 1:
        rels.append(("prev", min(page - 1, last)))
    if page < last:
        rels += [("next", page + 1), ("last", last)]
    if page > 1:
        rels.append(("first", 1))
    links = []
    for rel, number in rels:
        params = urlencode({**others, "per_page": per_page, "page": number})
        links.append(f'<{url}?{params}>; rel="{rel}"')
    return ", ".join(links)


_ROUTES: list[tuple[str, str, Handler]] = [
    ("GET", r"/user", GitHubServer._get_user),
    ("GET", _REPO, GitHubServer._get_repo),
    ("GET", _REPO + r"/pulls/(?P<number>\d+)", GitHubServer._get_pull),
    ("POST", _REPO + r"/pulls/(?P<number>\d+)/reviews", GitHubServer._create_review),
    ("GET", _REPO + r"/issues/(?P<number>\d+)", GitHubServer._get_issue),
    ("GET", _REPO + r"/issues/(?P<number>\d+)/comments", GitHubServer._list_comments),
    ("POST", _REPO + r"/issues/(?P<number>\d+)/comments", GitHubServer._create_comment),
    ("GET", _REPO + r"/issues/comments/(?P<comment_id>\d+)", GitHubServer._get_comment),
    ("PATCH", _REPO + r"/issues/comments/(?P<comment_id>\d+)", GitHubServer._edit_comment),
]


class _HttpHandler(BaseHTTPRequestHandler):
    """Turns HTTP into ``GitHubServer.respond`` calls; ``app`` is bound per server."""

    app: GitHubServer

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        authorization = self.headers.get("Authorization")
        response = self.app.respond(self.command, self.path, authorization, body)
        data = json.dumps(response.payload).encode()
        self.send_response(response.status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-GitHub-Media-Type", "github.v3; format=json")
        for name, value in response.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the request log is ``GitHubServer.requests``."""
