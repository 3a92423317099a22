"""The sticky PR comment: a small client for GitHub's issue-comment endpoints, bounded in retries
and time, that turns every failure into a `CommentOutcome` with a warning instead of raising.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, NoReturn
from urllib.parse import quote, urljoin, urlsplit

import httpx

from latency_gate.version import __version__

COMMENT_LIMIT = 65_536  # characters; GitHub refuses a longer comment body with a 422

# GITHUB_TOKEN is an installation token of the GitHub Actions app: GitHub answers its GET /user
# with 403 "Resource not accessible by integration" (GET /app wants the app's JWT, not this
# token), and the comments it writes are by this bot user.
ACTIONS_BOT_LOGIN = "github-actions[bot]"

PERMISSIONS_HINT = (
    "Give the job `permissions: pull-requests: write`. For pull requests from forks GitHub "
    "hands out a read-only token whatever the workflow asks; post the comment from a second "
    "workflow triggered by `workflow_run` instead (the two-workflow pattern, "
    "https://securitylab.github.com/research/github-actions-preventing-pwn-requests/)."
)


@dataclass(frozen=True)
class CommentOutcome:
    """What happened to the PR comment. `warning` is for the user and never holds the token."""

    action: Literal["created", "updated", "skipped", "failed"]
    url: str | None
    warning: str | None


@dataclass(frozen=True)
class Author:
    """Who the token writes comments as: a user id when GitHub told us, else a login."""

    login: str
    id: int | None = None

    def wrote(self, comment: dict[str, Any]) -> bool:
        """True when `comment` (as the API returns it) was written by this author."""
        user = comment.get("user")
        if not isinstance(user, dict):
            return False
        if self.id is not None:
            return user.get("id") == self.id
        login = user.get("login")
        return isinstance(login, str) and login.lower() == self.login.lower()


class _Failure(Exception):
    """A GitHub call that did not work out; `warning` is the text the user sees."""

    def __init__(
        self, warning: str, *, retryable: bool = False, delay: float | None = None
    ) -> None:
        super().__init__(warning)
        self.warning = warning
        self.retryable = retryable
        self.delay = delay


class GitHubClient:
    """A small client for the issue-comment endpoints, bounded in retries and in total time.

    The token goes only to `api_url`'s scheme, host and port: redirects and pagination links
    elsewhere are refused. Retries (5xx, 429, rate-limited 403, timeouts, connection errors)
    back off exponentially or as Retry-After / x-ratelimit-reset ask, capped at `max_backoff`;
    at most `max_retries` per upsert, and all calls together spend at most `budget_seconds`.
    """

    def __init__(
        self,
        *,
        api_url: str,
        token: str,
        repository: str,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        budget_seconds: float = 60.0,
        max_retries: int = 3,
        request_timeout: float = 10.0,
        backoff_base: float = 1.0,
        max_backoff: float = 30.0,
        max_pages: int = 100,
    ) -> None:
        self._api_url = api_url.rstrip("/")
        self._origin = _origin(self._api_url)
        self._token = token
        self._repository = repository
        self._sleep = sleep
        self._monotonic = monotonic
        self._wall_clock = wall_clock
        self._budget = budget_seconds
        self._spent = 0.0
        self._max_retries = max_retries
        self._retries_left = max_retries
        self._deadline = 0.0
        self._last_problem = ""  # the failure that led to the latest retry, for the final warning
        self._request_timeout = request_timeout
        self._backoff_base = backoff_base
        self._max_backoff = max_backoff
        self._max_pages = max_pages
        self._author: Author | None = None
        # A token with a line break or other control character would make httpx raise an
        # error that quotes the header value; refuse it here instead, without sending it.
        self._token_ok = bool(token) and token.isprintable() and token.strip() == token
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": f"latency-gate/{__version__}",
        }
        if self._token_ok:
            headers["Authorization"] = f"Bearer {token}"
        self._http = httpx.Client(
            transport=transport,
            headers=headers,
            follow_redirects=False,
            timeout=request_timeout,
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> GitHubClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def upsert_comment(
        self, pr_number: int, marker: str, body: str, *, create: bool = True
    ) -> CommentOutcome:
        """Update the PR comment holding `marker` in place, or create it if there is none.

        Pages through every comment of the PR to find the marker, so there is never a second
        one. `body` gets the marker prepended when it lacks it. With `create=False` a missing
        comment is not created: the outcome is "skipped" with no URL (an earlier report is
        kept current without starting a new one). Never raises: any failure is an outcome with
        action "failed" and a warning saying what to do.
        """
        started = self._monotonic()
        self._deadline = started + max(0.0, self._budget - self._spent)
        self._retries_left = self._max_retries
        self._last_problem = ""
        if marker not in body:
            body = f"{marker}\n{body}"
        try:
            return self._upsert(pr_number, marker, body, create=create)
        except _Failure as failure:
            return CommentOutcome("failed", None, self._redact(failure.warning))
        finally:
            self._spent += self._monotonic() - started

    def _upsert(self, pr_number: int, marker: str, body: str, *, create: bool) -> CommentOutcome:
        if not self._token_ok:
            raise _Failure(
                "No usable GitHub token (empty, or with spaces or control characters): "
                "pass `github-token: ${{ github.token }}` to the action."
            )
        api = urlsplit(self._api_url)
        if api.scheme not in ("http", "https") or not api.hostname:
            raise _Failure(
                "The GitHub API URL is not an http(s) URL with a host: check GITHUB_API_URL."
            )
        owner, _, name = self._repository.partition("/")
        if not owner or not name or "/" in name:
            raise _Failure(
                f"The repository {self._repository!r} is not of the form owner/name: check "
                "GITHUB_REPOSITORY."
            )
        repo = "/".join(quote(part, safe="") for part in self._repository.split("/", 1))
        author = self._token_author()
        while True:
            comment_id = self._find_comment(repo, pr_number, marker, author)
            if comment_id is not None:
                url = f"{self._api_url}/repos/{repo}/issues/comments/{comment_id}"
                response = self._send("PATCH", url, {"body": body}, what="update the PR comment")
                return CommentOutcome("updated", _html_url(response), None)
            if not create:
                return CommentOutcome("skipped", None, None)
            url = f"{self._api_url}/repos/{repo}/issues/{pr_number}/comments"
            try:
                # Not retried in place: a POST that timed out or got a 5xx may have created
                # the comment anyway, so look for it again before posting another.
                response = self._send(
                    "POST", url, {"body": body}, what="create the PR comment", retry=False
                )
            except _Failure as failure:
                if not failure.retryable:
                    raise
                self._back_off(failure)
                continue
            return CommentOutcome("created", _html_url(response), None)

    def _token_author(self) -> Author:
        """Who the token writes as, asked of GitHub once per client; raises _Failure.

        A personal token (classic or fine-grained) or an OAuth token gets its user from
        GET /user. An installation token gets 403 there: GitHub Actions' GITHUB_TOKEN is
        one, and writes as github-actions[bot]. (Another GitHub App's installation token
        is taken for the same bot; its comments are then not recognised as ours.)
        """
        if self._author is None:
            response = self._send(
                "GET", f"{self._api_url}/user", None, what="ask GitHub who the token is", keep=403
            )
            if response.status_code == 403:
                self._author = Author(ACTIONS_BOT_LOGIN)
            else:
                data = _decode(response)
                login = data.get("login") if isinstance(data, dict) else None
                user_id = data.get("id") if isinstance(data, dict) else None
                if not isinstance(login, str) or not isinstance(user_id, int):
                    _fail_unreadable(response)
                self._author = Author(login, user_id)
        return self._author

    def _find_comment(self, repo: str, pr_number: int, marker: str, author: Author) -> int | None:
        """The id of `author`'s comment holding the marker; one starting with it is preferred.

        Anyone can type the marker: a comment by someone else is never ours to edit.
        """
        url: str | None = f"{self._api_url}/repos/{repo}/issues/{pr_number}/comments?per_page=100"
        found: int | None = None
        pages = 0
        while url is not None:
            pages += 1
            if pages > self._max_pages:
                raise _Failure(
                    f"The pull request has more than {self._max_pages * 100} comments; stopped "
                    "looking for the report comment rather than risk posting a second one."
                )
            response = self._send("GET", url, None, what="list the PR comments")
            for comment in _json_list(response):
                text = comment.get("body") if isinstance(comment, dict) else None
                comment_id = comment.get("id") if isinstance(comment, dict) else None
                if not isinstance(text, str) or not isinstance(comment_id, int):
                    continue
                if not author.wrote(comment):
                    continue
                if text.startswith(marker):
                    return comment_id
                if marker in text and found is None:
                    found = comment_id
            next_url = response.links.get("next", {}).get("url")
            if next_url is not None:
                next_url = urljoin(url, next_url)
                if _origin(next_url) != self._origin:
                    raise _Failure(
                        f"GitHub's pagination link points to {_origin(next_url)}, not "
                        f"{self._origin}; refused to send the token there."
                    )
            url = next_url
        return found

    def _send(
        self,
        method: str,
        url: str,
        payload: dict[str, str] | None,
        *,
        what: str,
        retry: bool = True,
        keep: int | None = None,
    ) -> httpx.Response:
        """One API call with retries; returns a 2xx response or raises _Failure.

        A response of status `keep` is returned too, unless it is a rate limit (retried).
        """
        redirects = 0
        while True:
            remaining = self._deadline - self._monotonic()
            if remaining <= 0:
                gave_up = (
                    f"Gave up trying to {what}: the {self._budget:g} s allowed for GitHub API "
                    "calls ran out. The verdict is not affected."
                )
                raise _Failure(f"{self._last_problem} {gave_up}".lstrip())
            try:
                response = self._http.request(
                    method, url, json=payload, timeout=min(self._request_timeout, remaining)
                )
            except httpx.TimeoutException:
                failure = _Failure(
                    f"Could not {what}: GitHub did not answer within "
                    f"{min(self._request_timeout, remaining):.3g} s.",
                    retryable=True,
                )
            except httpx.InvalidURL:
                raise _Failure(f"Could not {what}: the request URL is not valid.") from None
            except httpx.TransportError as exc:
                failure = _Failure(
                    f"Could not {what}: connection to {self._origin} failed "
                    f"({type(exc).__name__}).",
                    retryable=True,
                )
            else:
                if response.is_success or (
                    response.status_code == keep and not _rate_limited(response)
                ):
                    return response
                if response.is_redirect and redirects < 3:
                    # GitHub asks for a redirected request to be repeated verbatim; only
                    # within the API's own origin, since the token goes with it.
                    location = urljoin(url, response.headers.get("location", ""))
                    if _origin(location) != self._origin:
                        raise _Failure(
                            f"Could not {what}: GitHub redirected to {_origin(location)}; "
                            f"refused to send the token anywhere but {self._origin}."
                        )
                    url = location
                    redirects += 1
                    continue
                failure = self._classify(response, what)
            if not (retry and failure.retryable):
                raise failure
            self._back_off(failure)

    def _classify(self, response: httpx.Response, what: str) -> _Failure:
        status = response.status_code
        message = _github_message(response)
        if _rate_limited(response) or status >= 500:
            return _Failure(
                f"Could not {what}: GitHub answered {status} ({message}).",
                retryable=True,
                delay=self._asked_delay(response),
            )
        if status == 401:
            return _Failure(
                f"Could not {what}: GitHub rejected the token (401 {message}). "
                "Pass `github-token: ${{ github.token }}` or a valid token."
            )
        if status == 403:
            return _Failure(
                f"Could not {what}: GitHub answered 403 ({message}). {PERMISSIONS_HINT}"
            )
        if status == 404:
            return _Failure(
                f"Could not {what}: GitHub answered 404 ({message}). The repository "
                f"{self._repository} or the pull request does not exist, or the token cannot "
                "see it (a token for another repository, or without `pull-requests: read`)."
            )
        if status == 422:
            return _Failure(
                f"Could not {what}: GitHub refused it (422 {message}). The comment body must "
                f"stay under {COMMENT_LIMIT} characters."
            )
        return _Failure(f"Could not {what}: GitHub answered {status} ({message}).")

    def _asked_delay(self, response: httpx.Response) -> float | None:
        """Seconds GitHub asked us to wait (Retry-After, else x-ratelimit-reset), if any."""
        retry_after = response.headers.get("retry-after", "").strip()
        if retry_after:
            if retry_after.isdigit():
                return float(retry_after)
            try:
                when = email.utils.parsedate_to_datetime(retry_after)
            except (TypeError, ValueError):
                when = None
            if when is not None and when.tzinfo is not None:
                return max(0.0, when.timestamp() - self._wall_clock())
        reset = response.headers.get("x-ratelimit-reset", "").strip()
        if response.headers.get("x-ratelimit-remaining") == "0" and reset.isdigit():
            return max(0.0, float(reset) - self._wall_clock() + 1.0)
        return None

    def _back_off(self, failure: _Failure) -> None:
        """Sleep before a retry, or raise the failure when retries or time have run out."""
        if self._retries_left <= 0:
            raise _Failure(
                f"{failure.warning} Gave up after {self._max_retries} retries; the PR comment "
                "was not written. The verdict is not affected."
            )
        used = self._max_retries - self._retries_left
        delay = failure.delay if failure.delay is not None else self._backoff_base * 2**used
        delay = min(delay, self._max_backoff)
        if self._monotonic() + delay >= self._deadline:
            raise _Failure(
                f"{failure.warning} Waiting {delay:g} s more would pass the {self._budget:g} s "
                "allowed for GitHub API calls; the PR comment was not written. The verdict is "
                "not affected."
            )
        self._retries_left -= 1
        self._last_problem = failure.warning
        self._sleep(delay)

    def _redact(self, text: str) -> str:
        return text.replace(self._token, "***") if self._token else text


def _rate_limited(response: httpx.Response) -> bool:
    return response.status_code == 429 or (
        response.status_code == 403
        and (
            "retry-after" in response.headers
            or response.headers.get("x-ratelimit-remaining") == "0"
        )
    )


def _origin(url: str) -> str:
    parts = urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{port}"


def _decode(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _fail_unreadable(response: httpx.Response) -> NoReturn:
    raise _Failure(
        f"GitHub answered {response.status_code} with a body that is not the JSON expected."
    )


def _json_list(response: httpx.Response) -> list[Any]:
    data = _decode(response)
    if not isinstance(data, list):
        _fail_unreadable(response)
    return data


def _html_url(response: httpx.Response) -> str | None:
    data = _decode(response)
    if not isinstance(data, dict):
        _fail_unreadable(response)
    url = data.get("html_url")
    return url if isinstance(url, str) else None


def _github_message(response: httpx.Response) -> str:
    """GitHub's own words for an error: message plus each validation error, kept short."""
    data = _decode(response)
    parts: list[str] = []
    if isinstance(data, dict):
        if isinstance(data.get("message"), str):
            parts.append(data["message"])
        for error in data.get("errors") or []:
            if isinstance(error, dict) and isinstance(error.get("message"), str):
                parts.append(error["message"])
            elif isinstance(error, str):
                parts.append(error)
    text = ": ".join(parts) or response.reason_phrase or "no message"
    return text if len(text) <= 300 else text[:297] + "..."
