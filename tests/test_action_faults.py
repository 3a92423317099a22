"""The action facing a hostile endpoint and a failing GitHub, end to end.

`latency_gate.action.main(environ)` runs as the runner starts it, against a live demo server and
the fake GitHub API (which checks every request and answer against GitHub's description).

- Untrusted text: an endpoint whose error bodies, Retry-After values and our own settings carry
  `|`, backticks, `<script>`, HTML comments (a fake copy of our marker too), `@mentions`, `#123`
  and newlines. The summary and the PR comment must show it escaped, parsed by markdown-it: no
  HTML from the input, tables with every row as wide as the header, one real marker.
- GitHub faults (403, 404, 422, 5xx, 429 with Retry-After, a hanging connection): the verdict,
  exit code and outputs stay what the probe decided; retries and time are bounded; one
  ::warning says what went wrong and what to do.
"""

from __future__ import annotations

import io
import json
import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
from fake_github import FakeGitHub, parse_github_output
from markdown_it import MarkdownIt
from markdown_it.token import Token

from latency_gate import action
from latency_gate.demo import DemoServer, EndpointSpec, Fault, serve_in_thread
from latency_gate.github import PERMISSIONS_HINT, comment_marker
from latency_gate.models import ErrorKind

PR = 17
# Characters a reader cannot see: none may be inserted into (or survive in) a report.
INVISIBLE = re.compile("[\u200b-\u200f\u2060-\u2064\ufeff\u202a-\u202e]")
# What GitHub would turn into a notification or an issue link in rendered text.
REFERENCE = re.compile(r"@[A-Za-z0-9]|#[0-9]|\bGH-[0-9]", re.IGNORECASE)
FAKE_MARKER = "<!-- latency-gate:comment:0123456789 -->"
HOSTILE_BODY = (
    "upstream | failed `rm -rf /` <script>alert(1)</script>\n"
    f"<!-- hidden --> {FAKE_MARKER}\n@octocat see #123 **now**"
)
HOSTILE_RETRY_AFTER = "`7` | <b>soon</b> @octocat #45"
HOSTILE_NAME = "prod|<b>x</b>\n@team #7 <!-- latency-gate:comment:x -->"
HOSTILE_HEADER = "User-Agent: @octocat #123 | <script>x</script> `tick`"
# Substrings of the input that must never reach the summary or the comment raw.
RAW_FORBIDDEN = (
    "<script>",
    "<b>",
    "<!-- hidden",
    FAKE_MARKER,
    "<!-- latency-gate:comment:x",
    "`rm -rf /`",
    "`7`",
    "`tick`",
)

# 2 ms answers (the server sleeps 2 ms first): a 1 ms warm p95 budget makes a breach, the default
# budget a pass; a passing run goes on to about 130 calls, 0.3 s here rather than 1.3 s at 10 ms.
FAST = EndpointSpec(name="fast", latency=0.002, tokens=2, token_interval=0.001)
BREACH = {"max-warm-p95": "1ms"}


@dataclass(frozen=True)
class ActionRun:
    code: int
    log: str
    outputs: dict[str, str]
    summary: str
    seconds: float

    @property
    def warnings(self) -> list[str]:
        return [line for line in self.log.splitlines() if line.startswith("::warning")]


def run_action(
    tmp_path: Path, url: str, github: FakeGitHub, inputs: Mapping[str, str] | None = None
) -> ActionRun:
    """One action run on a pull_request event, comment: always; timed."""
    files = tmp_path / f"run-{time.monotonic_ns()}"
    files.mkdir()
    (files / "event.json").write_text(json.dumps({"number": PR, "pull_request": {"number": PR}}))
    (files / "summary.md").touch()
    (files / "output").touch()
    given = {
        "url": url,
        "prompt": "hi",
        "warm-calls": "3",
        "concurrency": "2",
        "comment": "always",
        "github-token": github.token,
        **(inputs or {}),
    }
    env = {f"INPUT_{name.upper()}": value for name, value in given.items()}
    env |= {
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(files / "event.json"),
        "GITHUB_REPOSITORY": github.repository,
        "GITHUB_API_URL": github.url,
        "GITHUB_STEP_SUMMARY": str(files / "summary.md"),
        "GITHUB_OUTPUT": str(files / "output"),
        "GITHUB_WORKSPACE": str(files),
        "GITHUB_WORKFLOW": "faults",
        "GITHUB_JOB": "gate",
    }
    out = io.StringIO()
    started = time.monotonic()
    code = action.main(env, out=out)
    return ActionRun(
        code,
        out.getvalue(),
        parse_github_output((files / "output").read_text(encoding="utf-8")),
        (files / "summary.md").read_text(encoding="utf-8"),
        time.monotonic() - started,
    )


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        yield fake
    assert fake.violations == []


# --- untrusted text -----------------------------------------------------------------------------


def _parse(markdown: str) -> list[Token]:
    return MarkdownIt("gfm-like", {"linkify": False}).parse(markdown)


def _html(markdown: str) -> list[str]:
    """Every piece of HTML a renderer would pass through: blocks and inline tags."""
    found: list[str] = []
    for token in _parse(markdown):
        if token.type == "html_block":
            found.append(token.content.strip())
        for child in token.children or []:
            if child.type == "html_inline":
                found.append(child.content)
    return found


def _tables(markdown: str) -> list[list[int]]:
    """Each table as its rows' cell counts, header first."""
    found: list[list[int]] = []
    for token in _parse(markdown):
        if token.type == "table_open":
            found.append([])
        elif token.type == "tr_open":
            found[-1].append(0)
        elif token.type in {"th_open", "td_open"}:
            found[-1][-1] += 1
    return found


@pytest.fixture(scope="module")
def hostile_endpoint() -> Iterator[DemoServer]:
    """Every 3rd call a 502 with a hostile body, every 3rd (offset 1) a 429 with a hostile
    Retry-After; the rest answer."""
    faults = (
        Fault(kind="status", status=502, every=3, offset=1, body=HOSTILE_BODY),
        Fault(kind="status", status=429, every=3, offset=2, retry_after=HOSTILE_RETRY_AFTER),
    )
    spec = EndpointSpec(latency=0.0, tokens=2, token_interval=0.001, faults=faults)
    with serve_in_thread(spec) as (server,):
        yield server


@pytest.fixture
def hostile_run(
    tmp_path: Path, hostile_endpoint: DemoServer, github: FakeGitHub
) -> tuple[ActionRun, str]:
    """The action against the hostile endpoint with a hostile name and header: run and comment."""
    inputs = {"name": HOSTILE_NAME, "headers": HOSTILE_HEADER}
    run = run_action(tmp_path, hostile_endpoint.url, github, inputs)
    (comment,) = list(github.all_comments())
    return run, comment["body"]


def test_hostile_run_still_reports_the_errors(hostile_run: tuple[ActionRun, str]) -> None:
    """The hostile endpoint's errors are counted: FAIL, exit 1, both kinds in the summary."""
    run, _ = hostile_run
    assert run.code == 1, run.log
    assert run.outputs["verdict"] == "FAIL"
    assert f"| {ErrorKind.HTTP_5XX.value} |" in run.summary
    assert f"| {ErrorKind.HTTP_429.value} |" in run.summary


@pytest.mark.parametrize("where", ["summary", "comment"])
def test_hostile_text_never_reaches_markdown_raw(
    hostile_run: tuple[ActionRun, str], where: str
) -> None:
    """No tag, HTML comment or code span from the input survives raw."""
    run, comment = hostile_run
    text = run.summary if where == "summary" else comment
    assert [needle for needle in RAW_FORBIDDEN if needle in text] == []


@pytest.mark.parametrize("where", ["summary", "comment"])
def test_hostile_mentions_render_only_inside_code(
    hostile_run: tuple[ActionRun, str], where: str
) -> None:
    """Rendered, every @mention and #123 is in <code>; no invisible character inserted."""
    run, comment = hostile_run
    text = run.summary if where == "summary" else comment
    rendered = MarkdownIt("gfm-like", {"linkify": False}).render(text)
    outside_code = re.sub(r"<code>[^<]*</code>", "", rendered)
    assert REFERENCE.findall(outside_code) == []
    assert "<code>@team</code>" in rendered
    assert INVISIBLE.findall(text) == []


@pytest.mark.parametrize("where", ["summary", "comment"])
def test_hostile_text_makes_no_html(hostile_run: tuple[ActionRun, str], where: str) -> None:
    """Parsed, the only HTML is our own: the real marker and the details/summary wrappers."""
    run, comment = hostile_run
    text = run.summary if where == "summary" else comment
    marker = comment_marker("faults", "gate", [HOSTILE_NAME])
    for html in _html(text):
        assert html == marker or html.startswith(("<details>", "</details>")), html


def test_comment_has_exactly_one_marker_and_it_is_ours(
    hostile_run: tuple[ActionRun, str],
) -> None:
    """The comment opens with the real marker; the fake copy in the error body is defused."""
    _, comment = hostile_run
    assert comment.count("<!-- latency-gate:comment:") == 1
    assert comment.startswith("<!-- latency-gate:comment:")
    assert comment.splitlines()[0] != FAKE_MARKER


@pytest.mark.parametrize("where", ["summary", "comment"])
def test_hostile_text_keeps_every_table_intact(
    hostile_run: tuple[ActionRun, str], where: str
) -> None:
    """Every table row has as many cells as its header: no pipe or newline split a cell."""
    run, comment = hostile_run
    text = run.summary if where == "summary" else comment
    tables = _tables(text)
    assert tables
    for rows in tables:
        assert set(rows) == {rows[0]}, rows


def test_hostile_error_body_is_shown_escaped_in_one_cell(
    hostile_run: tuple[ActionRun, str],
) -> None:
    """The 502's body is visible in its cell as one line, with its words intact."""
    run, _ = hostile_run
    rows = [
        token.content
        for token in _parse(run.summary)
        if token.type == "inline" and "upstream" in token.content
    ]
    assert rows
    shown = "".join(
        child.content
        for token in _parse(run.summary)
        if token.type == "inline" and "upstream" in token.content
        for child in token.children or []
        if child.type in {"text", "code_inline"}
    )
    assert "upstream | failed `rm -rf /` <script>alert(1)</script>" in shown
    assert "@octocat see #123" in shown


# --- GitHub faults -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fast_endpoint() -> Iterator[str]:
    with serve_in_thread(FAST) as (server,):
        yield server.url


@dataclass(frozen=True)
class GitHubFault:
    """How GitHub misbehaves, what the one warning must say, the most seconds a run may take."""

    arrange: Callable[[FakeGitHub], None]
    says: tuple[str, ...]
    bound: float


GITHUB_FAULTS = [
    pytest.param(
        GitHubFault(
            lambda gh: gh.fail_next(403, method="POST"),
            ("GitHub answered 403", PERMISSIONS_HINT),
            15.0,
        ),
        id="403",
    ),
    pytest.param(
        GitHubFault(
            lambda gh: gh.fail_next(404),
            ("GitHub answered 404", "does not exist, or the token cannot see it"),
            15.0,
        ),
        id="404",
    ),
    pytest.param(
        GitHubFault(
            lambda gh: gh.fail_next(422, method="POST"),
            ("GitHub refused it (422", "must stay under 65536 characters"),
            15.0,
        ),
        id="422",
    ),
    pytest.param(
        GitHubFault(
            lambda gh: gh.fail_next(502, count=10),
            ("GitHub answered 502", "Gave up after 3 retries", "The verdict is not affected."),
            25.0,  # back-off 1 + 2 + 4 s between four tries
        ),
        id="5xx-for-good",
        marks=pytest.mark.slow,  # the back-off waits out its retries
    ),
    pytest.param(
        GitHubFault(
            lambda gh: gh.fail_next(429, count=10, retry_after="1"),
            ("GitHub answered 429", "Gave up after 3 retries", "The verdict is not affected."),
            20.0,  # Retry-After: 1 between four tries
        ),
        id="429-for-good",
        marks=pytest.mark.slow,  # the back-off waits out its retries
    ),
]


@pytest.mark.parametrize("fault", GITHUB_FAULTS)
# A passing run goes on to about 130 calls; a breach is decided in a few, with the same warning.
@pytest.mark.parametrize("budget", [pytest.param("pass", marks=pytest.mark.slow), "breach"])
def test_github_fault_leaves_the_verdict_and_warns(
    tmp_path: Path, fast_endpoint: str, github: FakeGitHub, fault: GitHubFault, budget: str
) -> None:
    """Verdict, exit code and outputs as without GitHub; one warning saying what to do."""
    fault.arrange(github)
    run = run_action(tmp_path, fast_endpoint, github, BREACH if budget == "breach" else {})
    expected = (0, "PASS") if budget == "pass" else (1, "FAIL")
    assert (run.code, run.outputs["verdict"]) == expected, run.log
    assert run.outputs["comment-url"] == ""
    assert len(run.warnings) == 1, run.log
    assert run.warnings[0].startswith("::warning title=latency-gate%3A PR comment::")
    for words in fault.says:
        assert words in run.warnings[0]
    assert "Traceback" not in run.log
    assert run.seconds < fault.bound
    assert len(github.requests) <= 4 + 1  # at most 3 retries of one call, and one more call


@pytest.mark.slow
def test_429_retry_after_is_waited_then_the_comment_is_posted(
    tmp_path: Path, fast_endpoint: str, github: FakeGitHub
) -> None:
    """One 429 with Retry-After: 2 is waited out; the comment is then created, no warning."""
    github.fail_next(429, retry_after="2")
    run = run_action(tmp_path, fast_endpoint, github)
    assert run.code == 0
    assert run.warnings == []
    assert run.outputs["comment-url"] != ""
    assert 2.0 <= run.seconds < 15.0
    assert len(list(github.all_comments())) == 1


@pytest.mark.slow
def test_one_hanging_call_is_retried_and_the_comment_posted(
    tmp_path: Path, fast_endpoint: str, github: FakeGitHub
) -> None:
    """A connection that never answers times out after 10 s; the retry posts the comment."""
    github.hang_next(1)
    run = run_action(tmp_path, fast_endpoint, github, BREACH)
    assert (run.code, run.outputs["verdict"]) == (1, "FAIL")
    assert run.warnings == []
    assert len(list(github.all_comments())) == 1
    assert 10.0 <= run.seconds < 25.0


@pytest.mark.slow
def test_github_that_hangs_for_good_is_bounded(
    tmp_path: Path, fast_endpoint: str, github: FakeGitHub
) -> None:
    """Every call hangs: 4 tries of 10 s and back-offs, under the 60 s budget; verdict kept."""
    github.hang_next(10)
    run = run_action(tmp_path, fast_endpoint, github, BREACH)
    assert (run.code, run.outputs["verdict"]) == (1, "FAIL")
    assert len(run.warnings) == 1
    assert "GitHub did not answer within 10 s" in run.warnings[0]
    assert "The verdict is not affected." in run.warnings[0]
    assert len(github.requests) == 4
    assert run.seconds < 70.0
