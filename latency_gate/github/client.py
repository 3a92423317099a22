"""The sticky PR comment: find the report comment the token wrote on the pull request and update
it in place, or create it; every failure becomes a `CommentOutcome` with a warning instead of
raising. The requests themselves, their retries and their time go through `api.GitHubApi`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, NoReturn
from urllib.parse import quote, urljoin, urlsplit

import httpx

from latency_gate.github.api import GitHubApi, GitHubFailure, decode_json, origin

# GITHUB_TOKEN is an installation token of the GitHub Actions app: GitHub answers its GET /user
# with 403 "Resource not accessible by integration" (GET /app wants the app's JWT, not this
# token), and the comments it writes are by this bot user.
ACTIONS_BOT_LOGIN = "github-actions[bot]"


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
        self._api = GitHubApi(
            api_url=api_url,
            token=token,
            repository=repository,
            transport=transport,
            sleep=sleep,
            monotonic=monotonic,
            wall_clock=wall_clock,
            budget_seconds=budget_seconds,
            max_retries=max_retries,
            request_timeout=request_timeout,
            backoff_base=backoff_base,
            max_backoff=max_backoff,
        )
        self._api_url = self._api.url
        self._repository = repository
        self._max_pages = max_pages
        self._author: Author | None = None

    def close(self) -> None:
        self._api.close()

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
        with self._api.allowance():
            if marker not in body:
                body = f"{marker}\n{body}"
            try:
                return self._upsert(pr_number, marker, body, create=create)
            except GitHubFailure as failure:
                return CommentOutcome("failed", None, self._api.redact(failure.warning))

    def _upsert(self, pr_number: int, marker: str, body: str, *, create: bool) -> CommentOutcome:
        if not self._api.token_ok:
            raise GitHubFailure(
                "No usable GitHub token (empty, or with spaces or control characters): "
                "pass `github-token: ${{ github.token }}` to the action."
            )
        parts = urlsplit(self._api_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise GitHubFailure(
                "The GitHub API URL is not an http(s) URL with a host: check GITHUB_API_URL."
            )
        owner, _, name = self._repository.partition("/")
        if not owner or not name or "/" in name:
            raise GitHubFailure(
                f"The repository {self._repository!r} is not of the form owner/name: check "
                "GITHUB_REPOSITORY."
            )
        repo = "/".join(quote(part, safe="") for part in self._repository.split("/", 1))
        author = self._token_author()
        while True:
            comment_id = self._find_comment(repo, pr_number, marker, author)
            if comment_id is not None:
                url = f"{self._api_url}/repos/{repo}/issues/comments/{comment_id}"
                response = self._api.send(
                    "PATCH", url, {"body": body}, what="update the PR comment"
                )
                return CommentOutcome("updated", _html_url(response), None)
            if not create:
                return CommentOutcome("skipped", None, None)
            url = f"{self._api_url}/repos/{repo}/issues/{pr_number}/comments"
            try:
                # Not retried in place: a POST that timed out or got a 5xx may have created
                # the comment anyway, so look for it again before posting another.
                response = self._api.send(
                    "POST", url, {"body": body}, what="create the PR comment", retry=False
                )
            except GitHubFailure as failure:
                if not failure.retryable:
                    raise
                self._api.back_off(failure)
                continue
            return CommentOutcome("created", _html_url(response), None)

    def _token_author(self) -> Author:
        """Who the token writes as, asked of GitHub once per client; raises GitHubFailure.

        A personal token (classic or fine-grained) or an OAuth token gets its user from
        GET /user. An installation token gets 403 there: GitHub Actions' GITHUB_TOKEN is
        one, and writes as github-actions[bot]. (Another GitHub App's installation token
        is taken for the same bot; its comments are then not recognised as ours.)
        """
        if self._author is None:
            response = self._api.send(
                "GET", f"{self._api_url}/user", None, what="ask GitHub who the token is", keep=403
            )
            if response.status_code == 403:
                self._author = Author(ACTIONS_BOT_LOGIN)
            else:
                data = decode_json(response)
                login = data.get("login") if isinstance(data, dict) else None
                user_id = data.get("id") if isinstance(data, dict) else None
                if not isinstance(login, str) or not isinstance(user_id, int):
                    _fail_unreadable(response)
                self._author = Author(login, user_id)
        return self._author

    def _find_comment(self, repo: str, pr_number: int, marker: str, author: Author) -> int | None:
        """The id of `author`'s comment that starts with the marker, or None.

        Anyone can type the marker: a comment by someone else is never ours to edit.
        """
        url: str | None = f"{self._api_url}/repos/{repo}/issues/{pr_number}/comments?per_page=100"
        pages = 0
        while url is not None:
            pages += 1
            if pages > self._max_pages:
                raise GitHubFailure(
                    f"The pull request has more than {self._max_pages * 100} comments; stopped "
                    "looking for the report comment rather than risk posting a second one."
                )
            response = self._api.send("GET", url, None, what="list the PR comments")
            for comment in _json_list(response):
                text = comment.get("body") if isinstance(comment, dict) else None
                comment_id = comment.get("id") if isinstance(comment, dict) else None
                if not isinstance(text, str) or not isinstance(comment_id, int):
                    continue
                if not author.wrote(comment):
                    continue
                # Ours start with the marker; a comment that only quotes it somewhere (a
                # person's note about the report) is that person's, even with their token.
                if text.startswith(marker):
                    return comment_id
            next_url = response.links.get("next", {}).get("url")
            if next_url is not None:
                next_url = urljoin(url, next_url)
                if origin(next_url) != self._api.origin:
                    raise GitHubFailure(
                        f"GitHub's pagination link points to {origin(next_url)}, not "
                        f"{self._api.origin}; refused to send the token there."
                    )
            url = next_url
        return None


def _fail_unreadable(response: httpx.Response) -> NoReturn:
    raise GitHubFailure(
        f"GitHub answered {response.status_code} with a body that is not the JSON expected."
    )


def _json_list(response: httpx.Response) -> list[Any]:
    data = decode_json(response)
    if not isinstance(data, list):
        _fail_unreadable(response)
    return data


def _html_url(response: httpx.Response) -> str | None:
    data = decode_json(response)
    if not isinstance(data, dict):
        _fail_unreadable(response)
    url = data.get("html_url")
    return url if isinstance(url, str) else None
