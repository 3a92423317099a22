"""The GitHub side: workflow commands, output files, and the sticky PR comment (fake API)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from fake_github import BOT_USER, OTHER_USER, PERSONAL_USER, FakeGitHub, parse_github_output

from latency_gate.github import (
    CommentOutcome,
    GitHubClient,
    add_mask,
    annotation,
    comment_marker,
    escape_data,
    escape_property,
    format_outputs,
    pull_request_number,
    step_summary_text,
)

TOKEN = "ghs_fake_token"
PERSONAL_TOKEN = "ghp_fake_personal_token"
MARKER = comment_marker("ci", "gate", ["api"])
PR = 7

# --- workflow commands ---------------------------------------------------------------------------


def test_escape_data_escapes_percent_and_line_breaks() -> None:
    """%, CR and LF are percent-encoded; colons and commas are left alone in data."""
    assert escape_data("50% done\r\nnext: a,b") == "50%25 done%0D%0Anext: a,b"


def test_escape_property_also_escapes_colon_and_comma() -> None:
    """A property value escapes : and , as well, so it cannot end the property list."""
    assert escape_property("p95: 3%, cold\n") == "p95%3A 3%25%2C cold%0A"


def test_annotation_with_title() -> None:
    """An annotation with a title puts it in an escaped title property."""
    assert (
        annotation("error", "warm p95 3.4 s > budget 3.0 s\nsee summary", "warm p95: over budget")
        == "::error title=warm p95%3A over budget::warm p95 3.4 s > budget 3.0 s%0Asee summary"
    )


def test_annotation_without_title() -> None:
    """Without a title there is no property list at all."""
    assert annotation("warning", "comment not posted") == "::warning::comment not posted"


def test_add_mask_single_line() -> None:
    """A one-line secret is one add-mask line, escaped like command data."""
    assert add_mask("sk-a%b") == "::add-mask::sk-a%25b"


def test_add_mask_masks_each_line_of_a_multiline_secret() -> None:
    """Each non-blank line of a multi-line secret is masked on its own."""
    assert add_mask("line-one\r\n\n  \nline-two\n") == (
        "::add-mask::line-one\n::add-mask::line-two"
    )


def test_add_mask_of_nothing_is_empty() -> None:
    """An empty or blank secret yields no line (the runner warns on an empty mask)."""
    assert add_mask("") == ""
    assert add_mask(" \n ") == ""


# --- files ---------------------------------------------------------------------------------------


def test_format_outputs_single_line_values() -> None:
    """Single-line values become name=value lines."""
    assert format_outputs({"passed": "true", "warm-p95": "0.123"}) == (
        "passed=true\nwarm-p95=0.123\n"
    )


def test_format_outputs_multiline_value_uses_a_fresh_delimiter() -> None:
    """A multi-line value is a heredoc block whose delimiter is not in the value."""
    value = "line 1\nghadelimiter_\nline 3"
    text = format_outputs({"report": value, "verdict": "FAIL"})
    lines = text.split("\n")
    assert re.fullmatch(r"report<<ghadelimiter_[0-9a-f-]{36}", lines[0])
    delimiter = lines[0].removeprefix("report<<")
    assert delimiter not in value
    assert lines[1:] == ["line 1", "ghadelimiter_", "line 3", delimiter, "verdict=FAIL", ""]
    assert parse_github_output(text) == {"report": value, "verdict": "FAIL"}


def test_format_outputs_refuses_a_name_the_runner_cannot_parse() -> None:
    """An output name with = or a line break raises ValueError."""
    with pytest.raises(ValueError, match="output name"):
        format_outputs({"a=b": "1"})


def test_step_summary_text_ends_with_a_newline() -> None:
    """The summary text to append ends with a newline."""
    assert step_summary_text("## latency-gate: PASS", existing_size=9) == "## latency-gate: PASS\n"


def test_step_summary_over_the_limit_raises() -> None:
    """Growing the file past the limit (in bytes, existing ones counted) raises ValueError."""
    with pytest.raises(ValueError, match="over the limit of 100"):
        step_summary_text("é" * 5, existing_size=91, limit=100)  # 91 + 10 bytes + newline


# --- marker and event ---------------------------------------------------------------------------


def test_comment_marker_is_a_hidden_comment_with_a_stable_key() -> None:
    """The marker is an HTML comment whose key is a fixed hash of workflow, job and targets."""
    marker = comment_marker("CI", "latency", ["chat", "search"])
    assert re.fullmatch(r"<!-- latency-gate:comment:[0-9a-f]{10} -->", marker)
    assert marker == comment_marker("CI", "latency", ["search", "chat"])
    assert marker == "<!-- latency-gate:comment:ef4742f298 -->"


def test_comment_marker_differs_per_job() -> None:
    """Another job (or workflow, or target set) gets its own comment."""
    base = comment_marker("CI", "latency", ["chat"])
    assert base != comment_marker("CI", "latency-2", ["chat"])
    assert base != comment_marker("CD", "latency", ["chat"])
    assert base != comment_marker("CI", "latency", ["chat", "search"])


@pytest.mark.parametrize(
    ("event_name", "event", "expected"),
    [
        ("pull_request", {"number": 12, "pull_request": {"number": 12}}, 12),
        ("pull_request_target", {"pull_request": {"number": 34}}, 34),
        ("pull_request", {"number": 56}, 56),
        ("push", {"ref": "refs/heads/main"}, None),
        ("issue_comment", {"issue": {"number": 12, "pull_request": {}}}, None),
        ("workflow_run", {"workflow_run": {"pull_requests": [{"number": 9}]}}, None),
        ("pull_request", {}, None),
        ("pull_request", {"pull_request": {"number": True}}, None),
        ("pull_request", {"pull_request": {"number": "12"}}, None),
    ],
)
def test_pull_request_number(event_name: str, event: dict[str, Any], expected: int | None) -> None:
    """Only pull_request and pull_request_target events with an integer number give a PR."""
    assert pull_request_number(event_name, event) == expected


# --- the sticky comment against the fake API ------------------------------------------------------


class FakeClock:
    """monotonic, wall clock and sleep in one: sleeping advances time and is recorded."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def wall(self) -> float:
        return 1_700_000_000.0 + self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub(token=TOKEN) as fake:
        yield fake
        assert fake.violations == []


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


ClientFactory = Callable[..., GitHubClient]


@pytest.fixture
def make_client(github: FakeGitHub, clock: FakeClock) -> Iterator[ClientFactory]:
    clients: list[GitHubClient] = []

    def make(**overrides: Any) -> GitHubClient:
        options: dict[str, Any] = {
            "api_url": github.url,
            "token": TOKEN,
            "repository": github.repository,
            "sleep": clock.sleep,
            "monotonic": clock.monotonic,
            "wall_clock": clock.wall,
        }
        options.update(overrides)
        client = GitHubClient(**options)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


def ours(github: FakeGitHub, pr: int = PR) -> list[dict[str, Any]]:
    return [c for c in github.comments.get(pr, []) if MARKER in c["body"]]


def test_first_upsert_creates_the_comment(github: FakeGitHub, make_client: ClientFactory) -> None:
    """With no marked comment on the PR, one is created and its URL returned."""
    outcome = make_client().upsert_comment(PR, MARKER, f"{MARKER}\nPASS")
    [comment] = github.comments[PR]
    assert outcome == CommentOutcome("created", comment["html_url"], None)
    assert comment["body"] == f"{MARKER}\nPASS"
    assert comment["user"]["login"] == BOT_USER["login"]


def test_second_upsert_updates_the_same_comment(
    github: FakeGitHub, make_client: ClientFactory
) -> None:
    """A second run edits the comment in place; the PR still has exactly one."""
    client = make_client()
    first = client.upsert_comment(PR, MARKER, f"{MARKER}\nrun 1")
    second = client.upsert_comment(PR, MARKER, f"{MARKER}\nrun 2")
    [comment] = github.comments[PR]
    assert (first.action, second.action) == ("created", "updated")
    assert second.url == first.url == comment["html_url"]
    assert comment["body"] == f"{MARKER}\nrun 2"
    # Who the token is, asked once per client; then list and create, list and update.
    assert [(r.method, r.path) for r in github.requests][:1] == [("GET", "/user")]
    assert [r.method for r in github.requests] == ["GET", "GET", "POST", "GET", "PATCH"]


def test_marker_is_added_to_a_body_without_it(
    github: FakeGitHub, make_client: ClientFactory
) -> None:
    """A body lacking the marker gets it prepended, so the next run finds the comment."""
    make_client().upsert_comment(PR, MARKER, "PASS")
    assert [c["body"] for c in github.comments[PR]] == [f"{MARKER}\nPASS"]


def test_comment_of_another_job_is_left_alone(
    github: FakeGitHub, make_client: ClientFactory
) -> None:
    """A comment with another job's marker is not ours: a new one is created beside it."""
    other = comment_marker("ci", "other-job", ["api"])
    github.seed_comments(PR, 1, body=f"{other}\nold report", user=BOT_USER)
    outcome = make_client().upsert_comment(PR, MARKER, f"{MARKER}\nnew")
    assert outcome.action == "created"
    assert [c["body"] for c in github.comments[PR]] == [f"{other}\nold report", f"{MARKER}\nnew"]


# --- only our own comment: the marker is a hint, the author decides -------------------------------


def test_foreign_comment_with_the_marker_is_left_alone(
    github: FakeGitHub, make_client: ClientFactory
) -> None:
    """Someone else's comment starting with our marker is never edited; ours is created beside."""
    github.seed_comments(PR, 1, body=f"{MARKER}\nI typed the marker", user=OTHER_USER)
    outcome = make_client().upsert_comment(PR, MARKER, f"{MARKER}\nPASS")
    assert outcome.action == "created"
    assert [(c["user"]["login"], c["body"]) for c in github.comments[PR]] == [
        ("octocat", f"{MARKER}\nI typed the marker"),
        ("github-actions[bot]", f"{MARKER}\nPASS"),
    ]
    assert [r.method for r in github.requests] == ["GET", "GET", "POST"]


def test_github_token_updates_the_bots_own_comment(
    github: FakeGitHub, make_client: ClientFactory
) -> None:
    """GITHUB_TOKEN gets 403 from GET /user, so github-actions[bot]'s marked comment is ours."""
    github.seed_comments(PR, 1, body=f"{MARKER}\nforged", user=OTHER_USER)
    github.seed_comments(PR, 1, body=f"{MARKER}\nrun 1", user=BOT_USER)
    outcome = make_client().upsert_comment(PR, MARKER, f"{MARKER}\nrun 2")
    [forged, own] = github.comments[PR]
    assert outcome == CommentOutcome("updated", own["html_url"], None)
    assert (forged["body"], own["body"]) == (f"{MARKER}\nforged", f"{MARKER}\nrun 2")
    assert (github.requests[0].method, github.requests[0].path) == ("GET", "/user")


def test_personal_token_updates_its_users_comment_only(make_client: ClientFactory) -> None:
    """A personal token is its user (GET /user): the bot's marked comment is not its own."""
    with FakeGitHub(token=TOKEN, tokens={PERSONAL_TOKEN: PERSONAL_USER}) as github:
        github.seed_comments(PR, 1, body=f"{MARKER}\nby the bot", user=BOT_USER)
        github.seed_comments(PR, 1, body=f"{MARKER}\nrun 1", user=PERSONAL_USER)
        client = make_client(api_url=github.url, token=PERSONAL_TOKEN)
        outcome = client.upsert_comment(PR, MARKER, f"{MARKER}\nrun 2")
        assert github.violations == []
    [bots, own] = github.comments[PR]
    assert outcome == CommentOutcome("updated", own["html_url"], None)
    assert (bots["body"], own["body"]) == (f"{MARKER}\nby the bot", f"{MARKER}\nrun 2")


def test_personal_token_creates_its_comment_as_its_user(make_client: ClientFactory) -> None:
    """With only another identity's marked comment, a personal token creates its own."""
    with FakeGitHub(token=TOKEN, tokens={PERSONAL_TOKEN: PERSONAL_USER}) as github:
        github.seed_comments(PR, 1, body=f"{MARKER}\nby the bot", user=BOT_USER)
        client = make_client(api_url=github.url, token=PERSONAL_TOKEN)
        first = client.upsert_comment(PR, MARKER, f"{MARKER}\nrun 1")
        second = client.upsert_comment(PR, MARKER, f"{MARKER}\nrun 2")
        assert github.violations == []
    assert (first.action, second.action) == ("created", "updated")
    assert [(c["user"]["login"], c["body"]) for c in github.comments[PR]] == [
        ("github-actions[bot]", f"{MARKER}\nby the bot"),
        ("release-captain", f"{MARKER}\nrun 2"),
    ]
    assert [r.path for r in github.requests].count("/user") == 1


def test_identity_failure_posts_nothing(github: FakeGitHub, make_client: ClientFactory) -> None:
    """When GitHub cannot say who the token is (a 404 on GET /user), nothing is written."""
    github.fail_next(404, method="GET")
    outcome = make_client().upsert_comment(PR, MARKER, f"{MARKER}\nPASS")
    assert outcome.action == "failed"
    assert outcome.warning is not None
    assert outcome.warning.startswith("Could not ask GitHub who the token is: GitHub answered 404")
    assert [(r.method, r.path) for r in github.requests] == [("GET", "/user")]


def test_comment_starting_with_the_marker_is_preferred(
    github: FakeGitHub, make_client: ClientFactory
) -> None:
    """A person quoting our marker mid-comment is left alone; the comment it heads is updated."""
    github.seed_comments(PR, 1, body=f"Why does the bot write {MARKER} here?")
    github.seed_comments(PR, 1, body=f"{MARKER}\nrun 1", user=BOT_USER)
    outcome = make_client().upsert_comment(PR, MARKER, f"{MARKER}\nrun 2")
    assert outcome.action == "updated"
    assert [c["body"] for c in github.comments[PR]] == [
        f"Why does the bot write {MARKER} here?",
        f"{MARKER}\nrun 2",
    ]


def test_pagination_finds_the_comment_on_page_two(
    github: FakeGitHub, make_client: ClientFactory
) -> None:
    """With 150 other comments ours is on page 2; it is found and updated, never duplicated."""
    github.seed_comments(PR, 150)
    client = make_client()
    assert client.upsert_comment(PR, MARKER, f"{MARKER}\nrun 1").action == "created"
    assert client.upsert_comment(PR, MARKER, f"{MARKER}\nrun 2").action == "updated"
    assert [c["body"] for c in ours(github)] == [f"{MARKER}\nrun 2"]
    assert len(github.comments[PR]) == 151
    pages = [
        (r.method, r.query.get("page", "1"), r.query.get("per_page"))
        for r in github.requests
        if r.path != "/user"
    ]
    assert pages == [
        ("GET", "1", "100"),
        ("GET", "2", "100"),
        ("POST", "1", None),
        ("GET", "1", "100"),
        ("GET", "2", "100"),
        ("PATCH", "1", None),
    ]


def test_read_only_token_fails_with_the_permissions_hint(make_client: ClientFactory) -> None:
    """A 403 on a fork PR's read-only token says how to fix it and posts nothing."""
    with FakeGitHub(token=TOKEN, read_only=True) as github:
        client = make_client(api_url=github.url)
        outcome = client.upsert_comment(PR, MARKER, f"{MARKER}\nPASS")
        assert github.violations == []
    assert outcome.action == "failed"
    assert outcome.url is None
    assert outcome.warning is not None
    assert "403 (Resource not accessible by integration)" in outcome.warning
    assert "`permissions: pull-requests: write`" in outcome.warning
    assert "`workflow_run`" in outcome.warning
    assert github.comments == {}


def test_unknown_repository_fails_with_404_warning(
    github: FakeGitHub, make_client: ClientFactory, clock: FakeClock
) -> None:
    """A 404 names the repository and says the token may not see it; no retry."""
    outcome = make_client(repository="octo-org/elsewhere").upsert_comment(PR, MARKER, "PASS")
    assert outcome.action == "failed"
    assert outcome.warning is not None
    assert "404 (Not Found)" in outcome.warning
    assert "octo-org/elsewhere" in outcome.warning
    assert "token cannot see it" in outcome.warning
    assert clock.sleeps == []


def test_wrong_token_fails_with_401_warning(github: FakeGitHub, make_client: ClientFactory) -> None:
    """A 401 says the token was rejected, without quoting it."""
    outcome = make_client(token="ghs_wrong").upsert_comment(PR, MARKER, "PASS")
    assert outcome.action == "failed"
    assert outcome.warning is not None
    assert "401 Bad credentials" in outcome.warning
    assert "ghs_wrong" not in outcome.warning


def test_over_long_body_gives_githubs_422_message(
    github: FakeGitHub, make_client: ClientFactory
) -> None:
    """A body over 65,536 characters fails with GitHub's own validation message."""
    outcome = make_client().upsert_comment(PR, MARKER, f"{MARKER}\n" + "x" * 70_000)
    assert outcome.action == "failed"
    assert outcome.warning is not None
    assert "body is too long (maximum is 65536 characters)" in outcome.warning
    assert github.comments == {}


def test_server_errors_are_retried_with_exponential_backoff(
    github: FakeGitHub, make_client: ClientFactory, clock: FakeClock
) -> None:
    """Two 500s, then success: waits 1 s and 2 s, and the comment is created once."""
    github.fail_next(500, count=2)
    outcome = make_client().upsert_comment(PR, MARKER, f"{MARKER}\nPASS")
    assert outcome.action == "created"
    assert clock.sleeps == [1.0, 2.0]
    assert len(github.comments[PR]) == 1


def test_persistent_server_errors_give_up_after_max_retries(
    github: FakeGitHub, make_client: ClientFactory, clock: FakeClock
) -> None:
    """503 on every call: three retries with backoff, then a warning; nothing posted."""
    github.fail_next(503, count=10)
    outcome = make_client().upsert_comment(PR, MARKER, "PASS")
    assert outcome.action == "failed"
    assert outcome.warning is not None
    assert "503 (Service Unavailable)" in outcome.warning
    assert "Gave up after 3 retries" in outcome.warning
    assert clock.sleeps == [1.0, 2.0, 4.0]
    assert len(github.requests) == 4


def test_rate_limit_retry_after_is_honoured(
    github: FakeGitHub, make_client: ClientFactory, clock: FakeClock
) -> None:
    """A 429 with Retry-After: 7 waits exactly 7 s before trying again."""
    github.fail_next(429, retry_after="7")
    assert make_client().upsert_comment(PR, MARKER, "PASS").action == "created"
    assert clock.sleeps == [7.0]


def test_retry_after_is_capped(
    github: FakeGitHub, make_client: ClientFactory, clock: FakeClock
) -> None:
    """A Retry-After beyond max_backoff waits only max_backoff."""
    github.fail_next(429, retry_after="120")
    client = make_client(max_backoff=5.0)
    assert client.upsert_comment(PR, MARKER, "PASS").action == "created"
    assert clock.sleeps == [5.0]


def test_rate_limit_reset_header_is_honoured(
    github: FakeGitHub, make_client: ClientFactory, clock: FakeClock
) -> None:
    """A 403 with x-ratelimit-remaining 0 waits until x-ratelimit-reset (plus a second)."""
    reset = str(int(clock.wall()) + 20)
    github.fail_next(
        403,
        body={"message": "API rate limit exceeded", "documentation_url": "https://docs.github.com"},
        headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": reset},
    )
    assert make_client().upsert_comment(PR, MARKER, "PASS").action == "created"
    assert clock.sleeps == [21.0]


def test_wait_beyond_the_budget_gives_up_at_once(
    github: FakeGitHub, make_client: ClientFactory, clock: FakeClock
) -> None:
    """When GitHub asks for a wait longer than the time left, the client stops without sleeping."""
    github.fail_next(429, retry_after="20")
    outcome = make_client(budget_seconds=10.0).upsert_comment(PR, MARKER, "PASS")
    assert outcome.action == "failed"
    assert outcome.warning is not None
    assert "10 s allowed for GitHub API calls" in outcome.warning
    assert clock.sleeps == []


def test_failed_create_looks_again_before_posting_again(
    github: FakeGitHub, make_client: ClientFactory, clock: FakeClock
) -> None:
    """A POST answered 502 may have landed: the comments are listed again before a new POST."""
    github.fail_next(502, method="POST")
    outcome = make_client().upsert_comment(PR, MARKER, "PASS")
    assert outcome.action == "created"
    methods = [r.method for r in github.requests if r.path != "/user"]
    assert methods == ["GET", "POST", "GET", "POST"]
    assert clock.sleeps == [1.0]
    assert len(ours(github)) == 1


@pytest.mark.slow
def test_hanging_connection_is_bounded_by_the_budget(github: FakeGitHub) -> None:
    """Requests that never get an answer end by the time budget, with a warning."""
    github.hang_next(count=20)
    started = time.monotonic()
    with GitHubClient(
        api_url=github.url,
        token=TOKEN,
        repository=github.repository,
        budget_seconds=1.5,
        request_timeout=0.4,
        backoff_base=0.05,
        max_retries=10,
    ) as client:
        outcome = client.upsert_comment(PR, MARKER, "PASS")
    elapsed = time.monotonic() - started
    assert outcome.action == "failed"
    assert outcome.warning is not None
    assert "did not answer within" in outcome.warning
    assert elapsed < 4.0
    assert github.comments == {}


def test_budget_is_shared_across_calls(
    github: FakeGitHub, make_client: ClientFactory, clock: FakeClock
) -> None:
    """Time spent backing off in one call is not available to the next."""
    client = make_client(budget_seconds=10.0)
    github.fail_next(429, retry_after="8")
    assert client.upsert_comment(PR, MARKER, "run 1").action == "created"
    github.fail_next(429, retry_after="3")
    outcome = client.upsert_comment(PR, MARKER, "run 2")
    assert outcome.action == "failed"
    assert clock.sleeps == [8.0]


# --- the token ---------------------------------------------------------------------------------


def test_every_request_carries_githubs_headers(
    github: FakeGitHub, make_client: ClientFactory
) -> None:
    """Bearer token, GitHub's JSON media type, the pinned API version and our User-Agent."""
    make_client().upsert_comment(PR, MARKER, "PASS")
    assert len(github.requests) == 3
    for request in github.requests:
        assert request.headers["authorization"] == f"Bearer {TOKEN}"
        assert request.headers["accept"] == "application/vnd.github+json"
        assert request.headers["x-github-api-version"] == "2022-11-28"
        assert request.headers["user-agent"].startswith("latency-gate/")


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (403, f"token {TOKEN} lacks scope"),
        (404, f"Not Found for {TOKEN}"),
        (422, f"Validation Failed: {TOKEN}"),
        (500, f"upstream said {TOKEN}"),
    ],
)
def test_token_never_appears_in_a_warning(
    github: FakeGitHub, make_client: ClientFactory, status: int, message: str
) -> None:
    """Even when GitHub's message quotes the token, the warning shows *** instead."""
    github.fail_next(status, count=10, body={"message": message})
    outcome = make_client().upsert_comment(PR, MARKER, "PASS")
    assert outcome.action == "failed"
    assert outcome.warning is not None
    assert TOKEN not in outcome.warning
    assert "***" in outcome.warning


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"api_url": ""}, "not an http(s) URL with a host: check GITHUB_API_URL"),
        (
            {"api_url": "ftp://api.github.com"},
            "not an http(s) URL with a host: check GITHUB_API_URL",
        ),
        ({"repository": "octo-repo"}, "not of the form owner/name: check GITHUB_REPOSITORY"),
        ({"repository": "a/b/c"}, "not of the form owner/name: check GITHUB_REPOSITORY"),
    ],
)
def test_bad_settings_fail_at_once_without_retrying(
    github: FakeGitHub,
    make_client: ClientFactory,
    clock: FakeClock,
    overrides: dict[str, str],
    expected: str,
) -> None:
    """A malformed API URL or repository is reported, not retried as a network fault."""
    outcome = make_client(**overrides).upsert_comment(PR, MARKER, "PASS")
    assert outcome.action == "failed"
    assert outcome.warning is not None
    assert expected in outcome.warning
    assert clock.sleeps == []
    assert github.requests == []


def test_token_with_a_line_break_is_refused_without_sending(
    github: FakeGitHub, make_client: ClientFactory
) -> None:
    """A token that cannot be a header value fails cleanly, is not quoted, and nothing is sent."""
    outcome = make_client(token="ghs_abc\nX-Evil: 1").upsert_comment(PR, MARKER, "PASS")
    assert outcome.action == "failed"
    assert outcome.warning is not None
    assert "ghs_abc" not in outcome.warning
    assert github.requests == []


def upsert_against(
    answer: Callable[[httpx.Request], httpx.Response], repository: str = "octo-org/octo-repo"
) -> tuple[CommentOutcome, list[httpx.Request]]:
    """Upsert once against a scripted API at api.github.com; the outcome and every request sent.

    GET /user is answered as GitHub answers GITHUB_TOKEN (403) and not recorded.
    """
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/user":
            return httpx.Response(403, json={"message": "Resource not accessible by integration"})
        seen.append(request)
        return answer(request)

    with GitHubClient(
        api_url="https://api.github.com",
        token=TOKEN,
        repository=repository,
        transport=httpx.MockTransport(handler),
    ) as client:
        return client.upsert_comment(PR, MARKER, "PASS"), seen


def test_redirect_to_another_host_is_refused() -> None:
    """A redirect off the API host is not followed: the token never reaches the other host."""

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(307, headers={"Location": "https://evil.example/steal"})

    outcome, seen = upsert_against(answer)
    assert outcome.action == "failed"
    assert outcome.warning is not None
    assert "https://evil.example:443" in outcome.warning
    assert [request.url.host for request in seen] == ["api.github.com"]


def test_redirect_within_the_api_host_is_followed() -> None:
    """A same-host redirect (a renamed repository) is repeated verbatim at the new address."""

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path.startswith("/repos/old/"):
            new = str(request.url).replace("/repos/old/", "/repos/new/")
            return httpx.Response(301, headers={"Location": new})
        if request.method == "GET":
            return httpx.Response(200, json=[])
        return httpx.Response(201, json={"html_url": "https://github.com/new/repo/pull/7#c"})

    outcome, seen = upsert_against(answer, repository="old/repo")
    assert outcome == CommentOutcome("created", "https://github.com/new/repo/pull/7#c", None)
    assert [(r.method, r.url.path) for r in seen] == [
        ("GET", "/repos/old/repo/issues/7/comments"),
        ("GET", "/repos/new/repo/issues/7/comments"),
        ("POST", "/repos/old/repo/issues/7/comments"),
        ("POST", "/repos/new/repo/issues/7/comments"),
    ]


def test_pagination_link_to_another_host_is_refused() -> None:
    """A Link rel="next" pointing off the API host is not followed."""

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, json=[], headers={"Link": '<https://evil.example/page2>; rel="next"'}
        )

    outcome, seen = upsert_against(answer)
    assert outcome.action == "failed"
    assert outcome.warning is not None
    assert "refused to send the token there" in outcome.warning
    assert [request.url.host for request in seen] == ["api.github.com"]


# --- the fake itself ---------------------------------------------------------------------------


def test_fake_reports_a_request_that_breaks_the_description() -> None:
    """The fake's check is live: a comment without `body` is recorded as a violation."""
    with FakeGitHub(token=TOKEN) as github:
        httpx.post(
            f"{github.url}/repos/{github.repository}/issues/{PR}/comments",
            headers={"Authorization": f"Bearer {TOKEN}"},
            json={"text": "hi"},
        )
    assert len(github.violations) == 1
    assert "'body' is a required property" in github.violations[0]
