"""GitHub's REST API as the comment client calls it: one request at a time, the token sent only
to the API's own origin, retries and their backoff bounded in number and in total time, and every
failure a `GitHubFailure` whose warning says what went wrong and what to do.
"""

from __future__ import annotations

import email.utils
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx

from latency_gate.version import __version__

COMMENT_LIMIT = 65_536  # characters; GitHub refuses a longer comment body with a 422

PERMISSIONS_HINT = (
    "Give the job `permissions: pull-requests: write`. For pull requests from forks GitHub "
    "hands out a read-only token whatever the workflow asks; post the comment from a second "
    "workflow triggered by `workflow_run` instead (the two-workflow pattern, "
    "https://securitylab.github.com/research/github-actions-preventing-pwn-requests/)."
)


class GitHubFailure(Exception):
    """A GitHub call that did not work out; `warning` is the text the user sees."""

    def __init__(
        self, warning: str, *, retryable: bool = False, delay: float | None = None
    ) -> None:
        super().__init__(warning)
        self.warning = warning
        self.retryable = retryable
        self.delay = delay


class GitHubApi:
    """Requests to `api_url` with `token`, bounded in retries and in total time.

    The token goes only to `api_url`'s scheme, host and port: redirects elsewhere are refused
    (and `origin` is there for the caller to hold pagination links to the same rule). Retries
    (5xx, 429, rate-limited 403, timeouts, connection errors) back off exponentially or as
    Retry-After / x-ratelimit-reset ask, capped at `max_backoff`; at most `max_retries` per
    `allowance`, and all allowances together spend at most `budget_seconds`.
    """

    def __init__(
        self,
        *,
        api_url: str,
        token: str,
        repository: str,
        transport: httpx.BaseTransport | None,
        sleep: Callable[[float], None],
        monotonic: Callable[[], float],
        wall_clock: Callable[[], float],
        budget_seconds: float,
        max_retries: int,
        request_timeout: float,
        backoff_base: float,
        max_backoff: float,
    ) -> None:
        self.url = api_url.rstrip("/")
        self.origin = origin(self.url)
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
        # A token with a line break or other control character would make httpx raise an
        # error that quotes the header value; refuse it here instead, without sending it.
        self.token_ok = bool(token) and token.isprintable() and token.strip() == token
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": f"latency-gate/{__version__}",
        }
        if self.token_ok:
            headers["Authorization"] = f"Bearer {token}"
        self._http = httpx.Client(
            transport=transport,
            headers=headers,
            follow_redirects=False,
            timeout=request_timeout,
        )

    def close(self) -> None:
        self._http.close()

    @contextmanager
    def allowance(self) -> Iterator[None]:
        """One piece of work's share: `max_retries` retries, and what is left of the budget."""
        started = self._monotonic()
        self._deadline = started + max(0.0, self._budget - self._spent)
        self._retries_left = self._max_retries
        self._last_problem = ""
        try:
            yield
        finally:
            self._spent += self._monotonic() - started

    def send(
        self,
        method: str,
        url: str,
        payload: dict[str, str] | None,
        *,
        what: str,
        retry: bool = True,
        keep: int | None = None,
    ) -> httpx.Response:
        """One API call with retries; returns a 2xx response or raises GitHubFailure.

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
                raise GitHubFailure(f"{self._last_problem} {gave_up}".lstrip())
            try:
                response = self._http.request(
                    method, url, json=payload, timeout=min(self._request_timeout, remaining)
                )
            except httpx.TimeoutException:
                failure = GitHubFailure(
                    f"Could not {what}: GitHub did not answer within "
                    f"{min(self._request_timeout, remaining):.3g} s.",
                    retryable=True,
                )
            except httpx.InvalidURL:
                raise GitHubFailure(f"Could not {what}: the request URL is not valid.") from None
            except httpx.TransportError as exc:
                failure = GitHubFailure(
                    f"Could not {what}: connection to {self.origin} failed ({type(exc).__name__}).",
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
                    if origin(location) != self.origin:
                        raise GitHubFailure(
                            f"Could not {what}: GitHub redirected to {origin(location)}; "
                            f"refused to send the token anywhere but {self.origin}."
                        )
                    url = location
                    redirects += 1
                    continue
                failure = self._classify(response, what)
            if not (retry and failure.retryable):
                raise failure
            self.back_off(failure)

    def _classify(self, response: httpx.Response, what: str) -> GitHubFailure:
        status = response.status_code
        message = _github_message(response)
        if _rate_limited(response) or status >= 500:
            return GitHubFailure(
                f"Could not {what}: GitHub answered {status} ({message}).",
                retryable=True,
                delay=self._asked_delay(response),
            )
        if status == 401:
            return GitHubFailure(
                f"Could not {what}: GitHub rejected the token (401 {message}). "
                "Pass `github-token: ${{ github.token }}` or a valid token."
            )
        if status == 403:
            return GitHubFailure(
                f"Could not {what}: GitHub answered 403 ({message}). {PERMISSIONS_HINT}"
            )
        if status == 404:
            return GitHubFailure(
                f"Could not {what}: GitHub answered 404 ({message}). The repository "
                f"{self._repository} or the pull request does not exist, or the token cannot "
                "see it (a token for another repository, or without `pull-requests: read`)."
            )
        if status == 422:
            return GitHubFailure(
                f"Could not {what}: GitHub refused it (422 {message}). The comment body must "
                f"stay under {COMMENT_LIMIT} characters."
            )
        return GitHubFailure(f"Could not {what}: GitHub answered {status} ({message}).")

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

    def back_off(self, failure: GitHubFailure) -> None:
        """Sleep before a retry, or raise the failure when retries or time have run out."""
        if self._retries_left <= 0:
            raise GitHubFailure(
                f"{failure.warning} Gave up after {self._max_retries} retries; the PR comment "
                "was not written. The verdict is not affected."
            )
        used = self._max_retries - self._retries_left
        delay = failure.delay if failure.delay is not None else self._backoff_base * 2**used
        delay = min(delay, self._max_backoff)
        if self._monotonic() + delay >= self._deadline:
            raise GitHubFailure(
                f"{failure.warning} Waiting {delay:g} s more would pass the {self._budget:g} s "
                "allowed for GitHub API calls; the PR comment was not written. The verdict is "
                "not affected."
            )
        self._retries_left -= 1
        self._last_problem = failure.warning
        self._sleep(delay)

    def redact(self, text: str) -> str:
        """`text` with the token starred out, for a warning the user sees."""
        return text.replace(self._token, "***") if self._token else text


def origin(url: str) -> str:
    """The scheme, host and port of `url`, the port spelt out: what the token is tied to."""
    parts = urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{port}"


def decode_json(response: httpx.Response) -> Any:
    """The response's JSON, or None when its body is not JSON."""
    try:
        return response.json()
    except ValueError:
        return None


def _rate_limited(response: httpx.Response) -> bool:
    return response.status_code == 429 or (
        response.status_code == 403
        and (
            "retry-after" in response.headers
            or response.headers.get("x-ratelimit-remaining") == "0"
        )
    )


def _github_message(response: httpx.Response) -> str:
    """GitHub's own words for an error: message plus each validation error, kept short."""
    data = decode_json(response)
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
