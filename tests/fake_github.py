"""A stateful fake of GitHub's issue-comment API on 127.0.0.1, checked against GitHub's own words.

A real HTTP server (ThreadingHTTPServer in a thread), so clients talk to it over a socket exactly
as they talk to api.github.com: the library's tests, the action's tests, the container test
(the action in Docker with --network host, GITHUB_API_URL pointed at `url`) and the act test
(the action on the Docker bridge, the fake on the bridge's address) all use it.

Comments have authors: each token maps to an identity (GITHUB_TOKEN's github-actions[bot], or
a user for a personal token), answers GET /user as GitHub does for it, and writes as it.

Every request and every response is checked with openapi-core against GitHub's OpenAPI
description (tests/fixtures/github/api.github.com.subset.json, cut with trim_spec.py beside it
from @octokit/openapi 23.0.2 to the issue-comment, pulls, check-run and artifact paths and
/user); each problem is appended to `violations`, and tests assert it stays empty. GitHub's
description lists only some error statuses per operation, while GitHub answers any operation
with 401, 403, 404, 429 or 5xx in its basic-error shape; the fake's copy of the description says
so with a `default` response of that shape, so those answers are checked too rather than waved
through.
"""

from __future__ import annotations

import copy
import functools
import json
import re
import socketserver
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from openapi_core import OpenAPI
from openapi_core.testing import MockRequest, MockResponse

SPEC_PATH = Path(__file__).parent / "fixtures" / "github" / "api.github.com.subset.json"
# Requests and responses are checked as if they went to the real API.
SPEC_HOST = "https://api.github.com"
DOCS = "https://docs.github.com/rest/issues/comments"
MAX_BODY = 65_536

# Who a token is: a "Bot" is an installation token's identity (GITHUB_TOKEN writes as
# github-actions[bot], and GitHub answers its GET /user with 403); a "User" is a personal
# token's, and GET /user gives that user.
BOT_USER = {"login": "github-actions[bot]", "id": 41898282, "type": "Bot"}
OTHER_USER = {"login": "octocat", "id": 583231, "type": "User"}
PERSONAL_USER = {"login": "release-captain", "id": 7654321, "type": "User"}
USERS_DOCS = "https://docs.github.com/rest/users/users#get-the-authenticated-user"

_LIST_OR_CREATE = re.compile(
    r"^/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)/issues/(?P<pr>\d+)/comments$"
)
_ONE_COMMENT = re.compile(r"^/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)/issues/comments/(?P<id>\d+)$")


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the fake saw it; header names lower-cased, query values last-wins."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True)
class _Fault:
    status: int | None  # None: hang until stop()
    method: str | None = None  # None: whatever the next request is
    retry_after: str | None = None
    body: dict[str, Any] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass
class _Reply:
    status: int
    body: Any = None  # JSON-able, or None for no body
    headers: dict[str, str] = field(default_factory=dict)


@functools.lru_cache(maxsize=4)
def _openapi(spec_path: str) -> OpenAPI:
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    basic_error = {"schema": {"$ref": "#/components/schemas/basic-error"}}
    default = {
        "description": "Any status the operation does not list, in GitHub's basic-error shape",
        "content": {"application/json": basic_error, "application/vnd.github+json": basic_error},
    }
    for operations in spec["paths"].values():
        for operation in operations.values():
            if isinstance(operation, dict) and "responses" in operation:
                operation["responses"].setdefault("default", copy.deepcopy(default))
    return OpenAPI.from_dict(spec)


def _describe(error: BaseException) -> str:
    """openapi-core's error with the schema errors that caused it, on one line."""
    cause = error.__cause__
    details = getattr(cause, "schema_errors", None) or getattr(error, "schema_errors", None)
    if details:
        return f"{error} -- " + "; ".join(
            f"{'/'.join(str(p) for p in detail.absolute_path) or '(body)'}: {detail.message}"
            for detail in details
        )
    return f"{error}" + (f" ({cause})" if cause is not None else "")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # hung and kept-alive handlers must not hold up stop()
    fake: FakeGitHub

    def server_bind(self) -> None:
        # HTTPServer.server_bind looks its address up with socket.getfqdn: for an address
        # other than loopback (the Docker bridge's) that is a DNS query leaving the machine.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as GitHub does; every reply has Content-Length
    server: _Server
    timeout = 30  # an idle kept-alive connection's thread ends by itself

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_PATCH(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read `requests`, not stderr."""

    def _handle(self) -> None:
        fake = self.server.fake
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        parts = urlsplit(self.path)
        request = RecordedRequest(
            method=self.command,
            path=parts.path,
            query=dict(parse_qsl(parts.query, keep_blank_values=True)),
            headers={name.lower(): value for name, value in self.headers.items()},
            body=body,
        )
        reply = fake._serve(request)
        if reply is None:  # hang: hold the connection open, answer nothing
            fake._stopping.wait()
            self.close_connection = True
            return
        data = b"" if reply.body is None else json.dumps(reply.body).encode("utf-8")
        headers = dict(reply.headers)
        if reply.body is not None:
            headers["Content-Type"] = "application/json; charset=utf-8"
        fake._check_response(request, reply.status, headers, data)
        self.send_response(reply.status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class FakeGitHub:
    """GitHub's issue-comment endpoints for one repository, in memory, and GET /user.

    GET/POST /repos/{owner}/{repo}/issues/{n}/comments (per_page up to 100, page, Link headers)
    and GET/PATCH/DELETE /repos/{owner}/{repo}/issues/comments/{id}. Each token stands for an
    identity: `token` for GITHUB_TOKEN's bot, `tokens` maps more (a "User" for a personal
    token). A comment is written as the identity of the token that posts it; GET /user answers
    a personal token with its user and an installation token (a "Bot") with 403, as GitHub does.
    401 for an unknown token, 404 for another repository, 403 "Resource not accessible by
    integration" for writes with a `read_only` token, 422 for a body over 65,536 characters.
    `fail_next` and `hang_next` inject faults into the next requests, whatever they are. It
    listens on `host`, 127.0.0.1 unless a container on a bridge must reach it (tests/test_act.py
    gives the bridge's address).
    """

    def __init__(
        self,
        spec_path: Path = SPEC_PATH,
        *,
        token: str = "ghs_fake_token",
        tokens: Mapping[str, Mapping[str, Any]] | None = None,
        read_only: bool = False,
        repository: str = "octo-org/octo-repo",
        host: str = "127.0.0.1",
    ) -> None:
        self.token = token
        self.tokens: dict[str, Mapping[str, Any]] = {token: BOT_USER, **(tokens or {})}
        self.host = host
        self.read_only = read_only
        self.repository = repository
        self.comments: dict[int, list[dict[str, Any]]] = {}
        self.requests: list[RecordedRequest] = []
        self.violations: list[str] = []
        self._openapi = _openapi(str(spec_path))
        self._lock = threading.Lock()
        self._faults: list[_Fault] = []
        self._next_id = 1_000_000_001
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        server = _Server((self.host, 0), _Handler)
        server.fake = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, args=(0.05,), name="fake-github", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> FakeGitHub:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The API base URL, as https://api.github.com is for the real one."""
        assert self._server is not None, "start() the fake first"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    # --- arranging a test ---------------------------------------------------------------------

    def seed_comments(
        self, pr: int, n: int, body: str = "Looks good to me.", user: Mapping[str, Any] = OTHER_USER
    ) -> None:
        """Add `n` comments to PR `pr`, by default by another user."""
        with self._lock:
            for i in range(n):
                self._add_comment(pr, body if n == 1 else f"{body} ({i + 1})", user)

    def fail_next(
        self,
        status: int,
        count: int = 1,
        retry_after: str | None = None,
        body: dict[str, Any] | None = None,
        *,
        headers: Mapping[str, str] | None = None,
        method: str | None = None,
    ) -> None:
        """Answer the next `count` requests (of `method`, if given) with `status`.

        The body is GitHub's basic-error shape unless `body` is given.
        """
        fault = _Fault(status, method, retry_after, body, dict(headers or {}))
        with self._lock:
            self._faults.extend([fault] * count)

    def hang_next(self, count: int = 1, method: str | None = None) -> None:
        """Accept the next `count` requests (of `method`, if given); answer none until `stop`."""
        with self._lock:
            self._faults.extend([_Fault(None, method)] * count)

    def all_comments(self) -> Iterator[dict[str, Any]]:
        with self._lock:
            snapshot = [c for comments in self.comments.values() for c in comments]
        yield from snapshot

    # --- serving ------------------------------------------------------------------------------

    def _serve(self, request: RecordedRequest) -> _Reply | None:
        with self._lock:
            self.requests.append(request)
            fault = next((f for f in self._faults if f.method in (None, request.method)), None)
            if fault is not None:
                self._faults.remove(fault)
        self._check_request(request)
        if fault is not None:
            if fault.status is None:
                return None
            return self._fault_reply(fault)
        with self._lock:
            return self._route(request)

    def _fault_reply(self, fault: _Fault) -> _Reply:
        assert fault.status is not None
        phrase = HTTPStatus(fault.status).phrase
        body = fault.body or {
            "message": phrase,
            "documentation_url": "https://docs.github.com/rest",
        }
        headers = dict(fault.headers)
        if fault.retry_after is not None:
            headers["Retry-After"] = fault.retry_after
        return _Reply(fault.status, body, headers)

    def _route(self, request: RecordedRequest) -> _Reply:
        auth = request.headers.get("authorization", "")
        scheme, _, token = auth.partition(" ")
        identity = self.tokens.get(token) if scheme in ("Bearer", "token") else None
        if identity is None:
            return _error(401, "Bad credentials", "https://docs.github.com/rest")
        method = request.method
        if request.path == "/user" and method == "GET":
            if identity["type"] == "Bot":
                return _error(403, "Resource not accessible by integration", USERS_DOCS)
            return _Reply(200, _public_user(identity))
        if match := _LIST_OR_CREATE.match(request.path):
            if not self._is_our_repo(match):
                return _error(404, "Not Found", f"{DOCS}#list-issue-comments")
            pr = int(match["pr"])
            if method == "GET":
                return self._list(request, match, pr)
            if method == "POST":
                return self._create(request, pr, identity)
        elif match := _ONE_COMMENT.match(request.path):
            if not self._is_our_repo(match):
                return _error(404, "Not Found", f"{DOCS}#get-an-issue-comment")
            comment = self._find(int(match["id"]))
            if comment is None:
                return _error(404, "Not Found", f"{DOCS}#get-an-issue-comment")
            if method == "GET":
                return _Reply(200, comment)
            if method == "PATCH":
                return self._update(request, comment)
            if method == "DELETE":
                if self.read_only:
                    return _error(403, "Resource not accessible by integration", DOCS)
                for comments in self.comments.values():
                    if comment in comments:
                        comments.remove(comment)
                return _Reply(204)
        return _error(404, "Not Found", "https://docs.github.com/rest")

    def _is_our_repo(self, match: re.Match[str]) -> bool:
        return f"{match['owner']}/{match['repo']}".lower() == self.repository.lower()

    def _list(self, request: RecordedRequest, match: re.Match[str], pr: int) -> _Reply:
        try:
            per_page = min(100, max(1, int(request.query.get("per_page", "30"))))
            page = max(1, int(request.query.get("page", "1")))
        except ValueError:
            return _error(422, "Invalid request: per_page and page must be integers", DOCS)
        comments = self.comments.get(pr, [])
        last = max(1, -(-len(comments) // per_page))
        headers: dict[str, str] = {}
        if last > 1:
            base = f"{self.url}/repos/{match['owner']}/{match['repo']}/issues/{pr}/comments"

            def link(number: int, rel: str) -> str:
                return f'<{base}?{urlencode({"per_page": per_page, "page": number})}>; rel="{rel}"'

            rels = []
            if page > 1:
                rels += [link(page - 1, "prev")]
            if page < last:
                rels += [link(page + 1, "next"), link(last, "last")]
            if page > 1:
                rels += [link(1, "first")]
            headers["Link"] = ", ".join(rels)
        start = (page - 1) * per_page
        return _Reply(200, comments[start : start + per_page], headers)

    def _create(self, request: RecordedRequest, pr: int, identity: Mapping[str, Any]) -> _Reply:
        if self.read_only:
            return _error(
                403, "Resource not accessible by integration", f"{DOCS}#create-an-issue-comment"
            )
        text = _body_of(request)
        if isinstance(text, _Reply):
            return text
        comment = self._add_comment(pr, text, identity)
        return _Reply(201, comment, {"Location": comment["url"]})

    def _update(self, request: RecordedRequest, comment: dict[str, Any]) -> _Reply:
        if self.read_only:
            return _error(
                403, "Resource not accessible by integration", f"{DOCS}#update-an-issue-comment"
            )
        text = _body_of(request)
        if isinstance(text, _Reply):
            return text
        comment["body"] = text
        comment["updated_at"] = _now()
        return _Reply(200, comment)

    def _find(self, comment_id: int) -> dict[str, Any] | None:
        for comments in self.comments.values():
            for comment in comments:
                if comment["id"] == comment_id:
                    return comment
        return None

    def _add_comment(self, pr: int, body: str, user: Mapping[str, Any]) -> dict[str, Any]:
        comment_id = self._next_id
        self._next_id += 1
        api = f"{self.url}/repos/{self.repository}"
        stamp = _now()
        comment = {
            "id": comment_id,
            "node_id": f"IC_kwDOFake{comment_id}",
            "url": f"{api}/issues/comments/{comment_id}",
            "html_url": f"https://github.com/{self.repository}/pull/{pr}#issuecomment-{comment_id}",
            "issue_url": f"{api}/issues/{pr}",
            "body": body,
            "user": _simple_user(user),
            "created_at": stamp,
            "updated_at": stamp,
            "author_association": "NONE" if user["type"] == "Bot" else "CONTRIBUTOR",
            "performed_via_github_app": None,
        }
        self.comments.setdefault(pr, []).append(comment)
        return comment

    # --- checking against the description -----------------------------------------------------

    def _mock_request(self, request: RecordedRequest) -> MockRequest:
        return MockRequest(
            SPEC_HOST,
            request.method,
            request.path,
            args=request.query,
            headers=request.headers,
            data=request.body or None,
            content_type=request.headers.get("content-type", "application/json"),
        )

    def _check_request(self, request: RecordedRequest) -> None:
        problems = [
            _describe(error)
            for error in self._openapi.iter_request_errors(self._mock_request(request))
        ]
        self._add_violations(f"request {request.method} {request.path}", problems)

    def _check_response(
        self, request: RecordedRequest, status: int, headers: dict[str, str], data: bytes
    ) -> None:
        response = MockResponse(
            data,
            status_code=status,
            headers=headers,
            content_type=headers.get("Content-Type", ""),
        )
        problems = [
            _describe(error)
            for error in self._openapi.iter_response_errors(self._mock_request(request), response)
        ]
        self._add_violations(f"response {status} to {request.method} {request.path}", problems)

    def _add_violations(self, where: str, problems: list[str]) -> None:
        if problems:
            with self._lock:
                self.violations.extend(f"{where}: {problem}" for problem in problems)


def _simple_user(user: Mapping[str, Any]) -> dict[str, Any]:
    login = user["login"]
    api = f"https://api.github.com/users/{login}"
    return {
        "login": login,
        "id": user["id"],
        "node_id": f"MDQ6VXNlcj{user['id']}",
        "avatar_url": f"https://avatars.githubusercontent.com/u/{user['id']}?v=4",
        "gravatar_id": "",
        "url": api,
        "html_url": f"https://github.com/{login}",
        "followers_url": f"{api}/followers",
        "following_url": f"{api}/following{{/other_user}}",
        "gists_url": f"{api}/gists{{/gist_id}}",
        "starred_url": f"{api}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{api}/subscriptions",
        "organizations_url": f"{api}/orgs",
        "repos_url": f"{api}/repos",
        "events_url": f"{api}/events{{/privacy}}",
        "received_events_url": f"{api}/received_events",
        "type": user["type"],
        "site_admin": False,
    }


def _public_user(user: Mapping[str, Any]) -> dict[str, Any]:
    """GET /user's answer for a personal token: the user's public profile."""
    return {
        **_simple_user(user),
        "user_view_type": "public",
        "name": None,
        "company": None,
        "blog": "",
        "location": None,
        "email": None,
        "hireable": None,
        "bio": None,
        "public_repos": 3,
        "public_gists": 0,
        "followers": 1,
        "following": 0,
        "created_at": "2020-01-01T00:00:00Z",
        "updated_at": "2026-01-01T00:00:00Z",
    }


def _error(status: int, message: str, documentation_url: str) -> _Reply:
    return _Reply(
        status, {"message": message, "documentation_url": documentation_url, "status": str(status)}
    )


def _body_of(request: RecordedRequest) -> str | _Reply:
    """The comment body of a POST/PATCH, or GitHub's error reply for a bad one."""
    try:
        payload = request.json()
    except ValueError:
        return _error(400, "Problems parsing JSON", DOCS)
    text = payload.get("body") if isinstance(payload, dict) else None
    if not isinstance(text, str):
        return _error(422, 'Invalid request.\n\n"body" wasn\'t supplied.', DOCS)
    if len(text) > MAX_BODY:
        return _Reply(
            422,
            {
                "message": "Validation Failed",
                "errors": [
                    {
                        "resource": "IssueComment",
                        "code": "custom",
                        "field": "body",
                        "message": f"body is too long (maximum is {MAX_BODY} characters)",
                    }
                ],
                "documentation_url": DOCS,
                "status": "422",
            },
        )
    return text


def parse_github_output(text: str) -> dict[str, str]:
    """Read a $GITHUB_OUTPUT file as the runner does: `name=value` and `name<<DELIM` blocks."""
    outputs: dict[str, str] = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line:
            continue
        equals, heredoc = line.find("="), line.find("<<")
        if equals >= 0 and (heredoc < 0 or equals < heredoc):
            outputs[line[:equals]] = line[equals + 1 :]
            continue
        name, delimiter = line[:heredoc], line[heredoc + 2 :]
        value: list[str] = []
        while lines[i] != delimiter:  # IndexError: an unterminated block, as the runner fails
            value.append(lines[i])
            i += 1
        i += 1
        outputs[name] = "\n".join(value)
    return outputs
