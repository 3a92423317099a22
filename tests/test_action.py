"""The action in-process: `latency_gate.action.main(environ)` as the runner would start it.

Each run gets a mapping of environment variables shaped like the runner's (INPUT_* with hyphens
kept, the GITHUB_* variables, an event file), probes a loopback demo endpoint with few calls,
and talks to the fake GitHub API, which checks every request and response against GitHub's
OpenAPI description: every test ends by asserting it saw no violation.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO_ROOT
from fake_github import BOT_USER, OTHER_USER, FakeGitHub, parse_github_output

from latency_gate.action import main
from latency_gate.action.loopback import is_loopback_host
from latency_gate.demo import EndpointSpec, serve_in_thread
from latency_gate.github import PERMISSIONS_HINT, GitHubClient, comment_marker

REPOSITORY = "octo-org/octo-repo"
TOKEN = "ghs_fake_token"
API_KEY = "sk-action-test-secret-5678"
PR = 42
# 2 ms per answer: over a 1 ms budget whatever the machine (it sleeps 2 ms before answering), far
# inside the default 3 s ones on a noisy machine; a passing run takes about 130 calls.
ENDPOINT = EndpointSpec(name="action-demo", latency=0.002, tokens=3, token_interval=0.001)
# Every output action.yml declares: the action must write each one.
OUTPUT_NAMES = set(
    yaml.safe_load((REPO_ROOT / "action.yml").read_text(encoding="utf-8"))["outputs"]
)
SECONDS = re.compile(r"\d+\.\d{6}")
BREACH = {"max-warm-p95": "1ms"}
MARKER_PREFIX = "<!-- latency-gate:comment:"


@dataclass(frozen=True)
class ActionRun:
    """What one run of the action left behind."""

    code: int
    log: str
    outputs: dict[str, str]
    summary: str
    workspace: Path

    @property
    def lines(self) -> list[str]:
        return self.log.splitlines()


class Runner:
    """Runs the action with the runner's environment; each run gets fresh command files."""

    def __init__(self, tmp_path: Path, url: str, github: FakeGitHub) -> None:
        self.tmp_path = tmp_path
        self.url = url
        self.github = github
        self.workspace = tmp_path / "workspace"
        self.workspace.mkdir()
        self.runs = 0

    def __call__(
        self,
        inputs: Mapping[str, str] | None = None,
        *,
        event_name: str = "pull_request",
        raw_env: Mapping[str, str] | None = None,
    ) -> ActionRun:
        """Run once; `inputs` are the step's `with:` (kebab-case), `raw_env` is added as is."""
        self.runs += 1
        files = self.tmp_path / f"run{self.runs}"
        files.mkdir()
        event: dict[str, Any] = (
            {"action": "synchronize", "number": PR, "pull_request": {"number": PR}}
            if event_name in ("pull_request", "pull_request_target")
            else {"ref": "refs/heads/main"}
        )
        (files / "event.json").write_text(json.dumps(event), encoding="utf-8")
        for name in ("summary.md", "output"):
            (files / name).touch()  # the runner creates both, empty
        given = {
            "url": self.url,
            "prompt": "Say hello.",
            "warm-calls": "3",
            "concurrency": "2",
            "github-token": TOKEN,
            **(inputs or {}),
        }
        env = {
            **{f"INPUT_{name.upper()}": value for name, value in given.items()},
            "GITHUB_EVENT_NAME": event_name,
            "GITHUB_EVENT_PATH": str(files / "event.json"),
            "GITHUB_REPOSITORY": REPOSITORY,
            "GITHUB_API_URL": self.github.url,
            "GITHUB_STEP_SUMMARY": str(files / "summary.md"),
            "GITHUB_OUTPUT": str(files / "output"),
            "GITHUB_WORKSPACE": str(self.workspace),
            "GITHUB_WORKFLOW": "latency",
            "GITHUB_JOB": "gate",
            **(raw_env or {}),
        }
        out = io.StringIO()
        code = main(env, out=out)
        return ActionRun(
            code=code,
            log=out.getvalue(),
            outputs=parse_github_output((files / "output").read_text(encoding="utf-8")),
            summary=(files / "summary.md").read_text(encoding="utf-8"),
            workspace=self.workspace,
        )


@pytest.fixture(scope="module")
def endpoint_url() -> Iterator[str]:
    with serve_in_thread(ENDPOINT) as servers:
        yield servers[0].url


def _start_fake(**options: Any) -> Iterator[FakeGitHub]:
    with FakeGitHub(**options) as fake:
        yield fake
    # Every test: whatever the action sent GitHub, and what GitHub answered, is what the
    # description allows.
    assert fake.violations == []


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    yield from _start_fake()


@pytest.fixture
def run(tmp_path: Path, endpoint_url: str, github: FakeGitHub) -> Runner:
    return Runner(tmp_path, endpoint_url, github)


@pytest.fixture
def read_only_github() -> Iterator[FakeGitHub]:
    yield from _start_fake(read_only=True)


@pytest.fixture
def read_only_run(tmp_path: Path, endpoint_url: str, read_only_github: FakeGitHub) -> Runner:
    return Runner(tmp_path, endpoint_url, read_only_github)


def _writes(github: FakeGitHub) -> list[tuple[str, str]]:
    return [(r.method, r.path) for r in github.requests if r.method in {"POST", "PATCH"}]


def _ours(github: FakeGitHub) -> list[dict[str, Any]]:
    return [c for c in github.all_comments() if c["user"]["login"] == BOT_USER["login"]]


def _errors(result: ActionRun) -> list[str]:
    return [line for line in result.lines if line.startswith("::error")]


CREATE = ("POST", f"/repos/{REPOSITORY}/issues/{PR}/comments")


def _update(comment: Mapping[str, Any]) -> tuple[str, str]:
    return ("PATCH", f"/repos/{REPOSITORY}/issues/comments/{comment['id']}")


# --- the sticky comment ----------------------------------------------------------------------


@pytest.mark.slow
def test_first_run_creates_the_comment(run: Runner) -> None:
    """On a pull request the first run posts one comment, marked, with the verdict."""
    result = run()
    assert result.code == 0, result.log
    comments = _ours(run.github)
    assert len(comments) == 1
    assert _writes(run.github) == [CREATE]
    body = comments[0]["body"]
    assert body.startswith(comment_marker("latency", "gate", ["endpoint"]) + "\n")
    assert "## ✅ latency-gate: PASS\n" in body
    assert result.outputs["comment-url"] == comments[0]["html_url"]
    assert f"latency-gate: PR comment created: {comments[0]['html_url']}" in result.lines


@pytest.mark.slow
def test_comment_links_the_run_for_the_full_report(run: Runner) -> None:
    """In a workflow run, the comment links the run's page, where the job summary is."""
    run(raw_env={"GITHUB_SERVER_URL": "https://github.com", "GITHUB_RUN_ID": "4242"})
    body = _ours(run.github)[0]["body"]
    link = f"(https://github.com/{REPOSITORY}/actions/runs/4242)"
    assert f"[Full report: where the time went, findings and every call]{link}" in body


@pytest.mark.slow
def test_comment_leaves_out_a_run_link_it_cannot_trust(run: Runner) -> None:
    """A run id that is not a number gives no link rather than a broken one."""
    run(raw_env={"GITHUB_SERVER_URL": "https://github.com", "GITHUB_RUN_ID": "1)[x](y"})
    assert "Full report" not in _ours(run.github)[0]["body"]


@pytest.mark.slow
def test_second_run_updates_the_same_comment(run: Runner) -> None:
    """A second run on the same PR edits the first run's comment; there is still exactly one."""
    first = run()
    second = run(BREACH)
    comments = _ours(run.github)
    assert len(comments) == 1
    assert _writes(run.github) == [CREATE, _update(comments[0])]
    assert "## ❌ latency-gate: FAIL\n" in comments[0]["body"]
    assert first.outputs["comment-url"] == second.outputs["comment-url"]
    assert second.outputs["comment-url"] == comments[0]["html_url"]
    assert f"latency-gate: PR comment updated: {comments[0]['html_url']}" in second.lines


@pytest.mark.slow
def test_comment_found_among_150_others(run: Runner) -> None:
    """With 150 other comments ours lands on page 2; the next run pages to it and updates it."""
    run.github.seed_comments(PR, 150)
    run()
    run()
    ours = _ours(run.github)
    assert len(ours) == 1
    assert len(list(run.github.all_comments())) == 151
    assert _writes(run.github) == [CREATE, _update(ours[0])]
    pages = [
        r.query.get("page", "1")
        for r in run.github.requests
        if r.method == "GET" and r.path != "/user"
    ]
    assert pages == ["1", "2", "1", "2"]


@pytest.mark.slow
def test_foreign_comment_carrying_the_marker_is_never_edited(run: Runner) -> None:
    """A comment by someone else that holds our marker stays as it was; ours is made beside it."""
    marker = comment_marker("latency", "gate", ["endpoint"])
    run.github.seed_comments(PR, 1, body=f"{marker}\nnot the bot's", user=OTHER_USER)
    run()
    run()
    foreign, ours = list(run.github.all_comments())
    assert (foreign["user"]["login"], foreign["body"]) == ("octocat", f"{marker}\nnot the bot's")
    assert foreign["created_at"] == foreign["updated_at"]
    assert _writes(run.github) == [CREATE, _update(ours)]


@pytest.mark.slow
def test_read_only_token_warns_with_the_permissions_hint(read_only_run: Runner) -> None:
    """A 403 on the write is a warning saying which permission to grant; the run still passes."""
    result = read_only_run()
    assert result.code == 0
    assert result.outputs["passed"] == "true"
    assert result.outputs["comment-url"] == ""
    warnings = [line for line in result.lines if line.startswith("::warning")]
    assert len(warnings) == 1
    assert warnings[0].startswith("::warning title=latency-gate%3A PR comment::")
    assert "GitHub answered 403 (Resource not accessible by integration)" in warnings[0]
    assert PERMISSIONS_HINT in warnings[0]
    assert list(read_only_run.github.all_comments()) == []


def test_read_only_token_keeps_the_breach_exit_code(read_only_run: Runner) -> None:
    """GitHub trouble does not turn a breach into a pass: still exit 1 and FAIL."""
    result = read_only_run(BREACH)
    assert result.code == 1
    assert result.outputs["verdict"] == "FAIL"
    assert any("permissions: pull-requests: write" in line for line in result.lines)


@pytest.mark.slow
def test_over_long_body_422_is_a_warning(run: Runner) -> None:
    """GitHub's 422 for a body over its limit becomes a warning with GitHub's words; exit 0."""
    run.github.fail_next(
        422,
        method="POST",
        body={
            "message": "Validation Failed",
            "errors": [
                {
                    "resource": "IssueComment",
                    "code": "custom",
                    "field": "body",
                    "message": "body is too long (maximum is 65536 characters)",
                }
            ],
            "documentation_url": "https://docs.github.com/rest/issues/comments",
        },
    )
    result = run()
    assert result.code == 0
    assert result.outputs["comment-url"] == ""
    warnings = [line for line in result.lines if line.startswith("::warning")]
    assert warnings == [
        "::warning title=latency-gate%3A PR comment::Could not create the PR comment: GitHub "
        "refused it (422 Validation Failed: body is too long (maximum is 65536 characters)). "
        "The comment body must stay under 65536 characters."
    ]


def test_push_event_makes_no_comment_and_says_so(run: Runner) -> None:
    """On a push there is no PR: no GitHub call, and the log says why."""
    result = run(event_name="push")
    assert result.code == 0
    assert run.github.requests == []
    assert "latency-gate: not a pull request event (push): no PR comment" in result.lines
    assert result.outputs["comment-url"] == ""


@pytest.mark.slow
def test_pull_request_target_event_comments(run: Runner) -> None:
    """pull_request_target events carry a PR too, and get the comment."""
    run(event_name="pull_request_target")
    assert _writes(run.github) == [CREATE]


# --- comment modes ---------------------------------------------------------------------------


def test_comment_never_calls_no_api(run: Runner) -> None:
    """comment: never leaves GitHub alone, even on a pull request with a breach."""
    result = run({"comment": "never", **BREACH})
    assert result.code == 1
    assert run.github.requests == []
    assert result.outputs["comment-url"] == ""


@pytest.mark.slow
def test_comment_always_comments_on_a_pass(run: Runner) -> None:
    """comment: always posts the report on a pull request whatever the verdict."""
    run({"comment": "always"})
    assert _writes(run.github) == [CREATE]


@pytest.mark.slow
def test_comment_always_warns_on_a_push(run: Runner) -> None:
    """comment: always on an event without a PR is a warning, not a silent skip."""
    result = run({"comment": "always"}, event_name="push")
    assert run.github.requests == []
    assert (
        "::warning title=latency-gate::not a pull request event (push): no PR comment"
        in result.lines
    )


def test_comment_auto_on_a_breach(run: Runner) -> None:
    """comment: auto (the default) posts on a pull request on a breach as well."""
    run({"comment": "auto", **BREACH})
    assert _writes(run.github) == [CREATE]


@pytest.mark.slow
def test_on_failure_pass_creates_nothing(run: Runner) -> None:
    """comment: on-failure with a pass and no earlier report looks, posts nothing, says so."""
    result = run({"comment": "on-failure"})
    assert result.code == 0
    assert _writes(run.github) == []
    assert [(r.method, r.path) for r in run.github.requests] == [
        ("GET", "/user"),
        ("GET", f"/repos/{REPOSITORY}/issues/{PR}/comments"),
    ]
    assert result.outputs["comment-url"] == ""
    assert (
        "latency-gate: the budget held and there is no earlier report to update, "
        "so no PR comment (comment: on-failure)"
    ) in result.lines


def test_on_failure_breach_creates_the_comment(run: Runner) -> None:
    """comment: on-failure with a breach posts the report."""
    result = run({"comment": "on-failure", **BREACH})
    assert result.code == 1
    assert _writes(run.github) == [CREATE]
    assert "## ❌ latency-gate: FAIL\n" in _ours(run.github)[0]["body"]


@pytest.mark.slow
def test_on_failure_pass_updates_an_earlier_failure(run: Runner) -> None:
    """comment: on-failure keeps an earlier failure's comment current, so it never shows a
    stale FAIL after the endpoint recovered."""
    run({"comment": "on-failure", **BREACH})
    result = run({"comment": "on-failure"})
    ours = _ours(run.github)
    assert len(ours) == 1
    assert _writes(run.github) == [CREATE, _update(ours[0])]
    assert "## ✅ latency-gate: PASS\n" in ours[0]["body"]
    assert result.outputs["comment-url"] == ours[0]["html_url"]


# --- outputs, annotations, summary, exit codes -----------------------------------------------


@pytest.mark.slow
def test_outputs_file(run: Runner) -> None:
    """Every output is written: the verdict, the numbers in seconds, the paths."""
    result = run()
    outputs = result.outputs
    assert set(outputs) == OUTPUT_NAMES
    assert outputs["passed"] == "true"
    assert outputs["verdict"] == "PASS"
    for name in ("cold-start", "warm-p50", "warm-p95", "concurrent-p95", "error-rate"):
        assert SECONDS.fullmatch(outputs[name]), (name, outputs[name])
    assert outputs["error-rate"] == "0.000000"
    assert outputs["report-path"] == "latency-gate-report/result.json"
    numbers = json.loads((result.workspace / outputs["report-path"]).read_text())["numbers"]
    for output, number in (
        ("cold-start", "cold_start"),
        ("warm-p50", "warm_p50"),
        ("warm-p95", "warm_p95"),
        ("concurrent-p95", "concurrent_p95"),
    ):
        assert float(outputs[output]) == pytest.approx(numbers[number], abs=1e-6)
        assert 0.005 < numbers[number] < 3.0  # seconds, not milliseconds


def test_outputs_on_a_breach(run: Runner) -> None:
    """A breach writes passed=false and verdict=FAIL."""
    result = run(BREACH)
    assert (result.outputs["passed"], result.outputs["verdict"]) == ("false", "FAIL")


@pytest.mark.slow
def test_json_path_input(run: Runner) -> None:
    """json-path puts the result (and report-path) where it says, relative to the workspace."""
    result = run({"json-path": "out/latency.json"})
    assert result.outputs["report-path"] == "out/latency.json"
    document = json.loads((result.workspace / "out" / "latency.json").read_text())
    assert document["schema_version"] == 1


# --- files the action writes -----------------------------------------------------------------


@pytest.mark.slow
def test_default_files_are_the_actions_own_folder_and_said(run: Runner) -> None:
    """Without json-path the action writes result.json and report.md in its folder, and says so."""
    result = run()
    folder = result.workspace / "latency-gate-report"
    assert sorted(path.name for path in folder.iterdir()) == ["report.md", "result.json"]
    assert (folder / "report.md").read_text().startswith("## ✅ latency-gate: PASS\n")
    assert (
        "latency-gate: wrote latency-gate-report/result.json, latency-gate-report/report.md"
        in result.lines
    )


@pytest.mark.slow
def test_named_json_path_is_the_only_file_written(run: Runner) -> None:
    """A named json-path gets that one file: a report.md of the user's beside it is untouched."""
    out = run.workspace / "out"
    out.mkdir()
    (out / "report.md").write_text("the user's own notes\n", encoding="utf-8")
    result = run({"json-path": "out/latency.json"})
    assert result.code == 0, result.log
    assert sorted(path.name for path in out.iterdir()) == ["latency.json", "report.md"]
    assert (out / "report.md").read_text(encoding="utf-8") == "the user's own notes\n"
    assert not (run.workspace / "latency-gate-report").exists()
    assert "latency-gate: wrote out/latency.json" in result.lines


@pytest.mark.slow
def test_absolute_json_path_inside_the_workspace_is_taken(run: Runner) -> None:
    """An absolute json-path inside the workspace is fine; report-path is still relative."""
    result = run({"json-path": str(run.workspace / "abs" / "result.json")})
    assert result.code == 0, result.log
    assert result.outputs["report-path"] == "abs/result.json"
    assert (run.workspace / "abs" / "result.json").is_file()


def _refused_json_path(result: ActionRun, shown: str, reason: str) -> None:
    assert result.code == 2
    assert _errors(result) == [
        f"::error title=latency-gate%3A invalid input::invalid input json-path: '{shown}' {reason}"
    ]
    assert result.outputs == {}


@pytest.mark.parametrize("where", ["../escaped.json", "out/../../escaped.json", "ABSOLUTE"])
def test_json_path_leaving_the_workspace_is_refused(run: Runner, where: str) -> None:
    """A json-path outside the workspace (.., or absolute elsewhere) is exit 2, nothing written."""
    path = str(run.tmp_path / "escaped.json") if where == "ABSOLUTE" else where
    result = run({"json-path": path})
    _refused_json_path(
        result,
        path,
        f"is outside the workspace ({run.workspace.resolve()}); the action writes only inside "
        "it: give a path relative to the workspace, such as latency/result.json",
    )
    assert not (run.tmp_path / "escaped.json").exists()
    assert run.github.requests == []


def test_json_path_through_a_symlink_out_of_the_workspace_is_refused(run: Runner) -> None:
    """A folder link pointing out of the workspace does not let json-path leave it."""
    outside = run.tmp_path / "outside"
    outside.mkdir()
    (run.workspace / "link").symlink_to(outside, target_is_directory=True)
    result = run({"json-path": "link/result.json"})
    _refused_json_path(
        result,
        "link/result.json",
        f"is outside the workspace ({run.workspace.resolve()}); the action writes only inside "
        "it: give a path relative to the workspace, such as latency/result.json",
    )
    assert list(outside.iterdir()) == []


def test_json_path_naming_a_directory_is_refused(run: Runner) -> None:
    """json-path must name a file: an existing directory is exit 2, not a crash."""
    (run.workspace / "results").mkdir()
    result = run({"json-path": "results"})
    _refused_json_path(result, "results", "is a directory; name the file to write")


def test_annotation_for_each_breached_number(run: Runner) -> None:
    """Each breached number gets its own ::error annotation with the actual and the budget.
    Three concurrent calls: all three over the budget is what decides a p95 FAIL (two could be
    the 5 % tail's luck, and that check would stay undecided, not breached)."""
    result = run(
        {
            "max-cold-start": "1ms",
            "max-warm-p95": "1ms",
            "max-concurrent-p95": "1ms",
            "concurrency": "3",
        }
    )
    assert result.code == 1
    errors = [line for line in result.lines if line.startswith("::error")]
    duration = r"[\d.]+ (?:ms|s)"
    patterns = [
        rf"::error title=latency-gate%3A {label} over budget::{label} is {duration}, "
        rf"over its budget of 1 ms \(endpoint\)"
        for label in ("cold start", "warm p95", "concurrent p95")
    ]
    assert len(errors) == 3, errors
    for line, pattern in zip(errors, patterns, strict=True):
        assert re.fullmatch(pattern, line), line


@pytest.mark.slow
def test_no_annotation_on_a_pass(run: Runner) -> None:
    """A pass prints no ::error annotation."""
    result = run()
    assert [line for line in result.lines if line.startswith("::error")] == []


def test_fail_on_breach_false_exits_zero(run: Runner) -> None:
    """fail-on-breach: false reports the breach but exits 0."""
    result = run({"fail-on-breach": "false", **BREACH})
    assert result.code == 0
    assert result.outputs["passed"] == "false"
    assert "latency-gate: budget breached, but fail-on-breach is false" in result.lines
    assert any(line.startswith("::error title=latency-gate%3A warm p95") for line in result.lines)


def test_breach_exits_one(run: Runner) -> None:
    """A breach exits 1 by default."""
    assert run(BREACH).code == 1


@pytest.mark.slow
def test_summary_written(run: Runner) -> None:
    """The job summary is the Markdown report with the verdict first."""
    result = run()
    assert result.summary.startswith("## ✅ latency-gate: PASS\n")
    assert re.search(
        r"^\| warm p95 \| [\d.]+ ms \| [^|]+ \| 3\.00 s \| ✅ PASS \| \d+ \|$", result.summary, re.M
    )


@pytest.mark.slow
def test_summary_false_writes_none(run: Runner) -> None:
    """summary: false leaves the job summary file empty."""
    assert run({"summary": "false"}).summary == ""


def test_underscore_input_spelling_accepted(run: Runner) -> None:
    """INPUT_MAX_WARM_P95 (underscores) is read like INPUT_MAX-WARM-P95."""
    result = run(raw_env={"INPUT_MAX_WARM_P95": "1ms"})
    assert result.code == 1
    assert re.search(
        r"^\| warm p95 \| [\d.]+ ms \| [^|]+ \| 1 ms \| ❌ FAIL \| 3 \|$", result.summary, re.M
    )


@pytest.mark.slow
def test_hyphen_spelling_wins_over_underscore(run: Runner) -> None:
    """When both spellings are set, the runner's own (hyphens) is the one used."""
    result = run({"max-warm-p95": "10s"}, raw_env={"INPUT_MAX_WARM_P95": "1ms"})
    assert result.code == 0
    assert re.search(
        r"^\| warm p95 \| [\d.]+ ms \| [^|]+ \| 10\.0 s \| ✅ PASS \| \d+ \|$", result.summary, re.M
    )


@pytest.mark.slow
def test_masks_come_first(run: Runner) -> None:
    """Secrets are masked before any other line, and never printed again."""
    header = "X-Custom-Auth: custom-secret-value"
    result = run({"api-key": API_KEY, "headers": f"Content-Type: application/json\n{header}"})
    assert result.lines[:3] == [
        f"::add-mask::{API_KEY}",
        "::add-mask::custom-secret-value",
        f"::add-mask::{TOKEN}",
    ]
    rest = "\n".join(result.lines[3:])
    for secret in (API_KEY, TOKEN, "custom-secret-value"):
        assert secret not in rest
        assert secret not in result.summary
    assert not any(line.startswith("::add-mask::") for line in result.lines[3:])


def test_bad_inputs_reported_together(run: Runner) -> None:
    """Every bad input is named in one error annotation, exit 2, nothing measured or posted."""
    result = run({"concurrency": "0", "comment": "sometimes"})
    assert result.code == 2
    errors = [line for line in result.lines if line.startswith("::error")]
    assert errors == [
        "::error title=latency-gate%3A invalid input::2 invalid inputs:%0A"
        "  - comment: expected one of auto, always, on-failure, never; got 'sometimes'%0A"
        "  - concurrency: expected a whole number of at least 1, got 0"
    ]
    assert result.outputs == {}
    assert result.summary.startswith("## ❌ latency-gate: invalid input\n")
    assert run.github.requests == []


# --- GitHubClient: update only ---------------------------------------------------------------

MARKER = comment_marker("latency", "gate", ["endpoint"])


def _client(github: FakeGitHub) -> GitHubClient:
    return GitHubClient(
        api_url=github.url, token=TOKEN, repository=REPOSITORY, sleep=lambda _: None
    )


def test_update_only_without_a_comment_skips(github: FakeGitHub) -> None:
    """upsert_comment(create=False) with no marked comment posts nothing: outcome skipped."""
    github.seed_comments(PR, 3)
    with _client(github) as client:
        outcome = client.upsert_comment(PR, MARKER, "report", create=False)
    assert (outcome.action, outcome.url, outcome.warning) == ("skipped", None, None)
    assert _writes(github) == []


def test_update_only_updates_a_marked_comment(github: FakeGitHub) -> None:
    """upsert_comment(create=False) still updates the marked comment in place."""
    with _client(github) as client:
        created = client.upsert_comment(PR, MARKER, "first")
        updated = client.upsert_comment(PR, MARKER, "second", create=False)
    (comment,) = list(github.all_comments())
    assert (created.action, updated.action) == ("created", "updated")
    assert updated.url == comment["html_url"]
    assert comment["body"] == f"{MARKER}\nsecond"


# --- the localhost trap: loopback inside the Docker action's container ------------------------

IN_CONTAINER = {"LATENCY_GATE_IN_CONTAINER": "1"}
LOOPBACK_HELP = (
    "this Docker action runs in a container with a network of its own, so that is the "
    "container, not the runner where your endpoint listens. What works: serve the endpoint on "
    "0.0.0.0 and call the runner's docker0 bridge address (`ip -4 -o addr show docker0`, "
    "usually 172.17.0.1), as latency-gate's self-test workflow does; or call a service "
    "container by its name; or run latency-gate on the runner itself with "
    "`uses: latency-gate/latency-gate/host@main`, which reaches localhost."
)


def test_loopback_url_is_refused_in_the_container(run: Runner) -> None:
    """In the Docker action a localhost `url` is bad input: exit 2, why and what works."""
    url = "http://localhost:8080/v1/chat/completions"
    result = run({"url": url}, raw_env=IN_CONTAINER)
    assert result.code == 2
    assert _errors(result) == [
        "::error title=latency-gate%3A invalid input::invalid input url: "
        f"{url} points at localhost, the machine the call starts on; {LOOPBACK_HELP}"
    ]
    assert result.outputs == {}
    assert run.github.requests == []
    assert not (result.workspace / "latency-gate-report").exists()


def test_loopback_url_message_hides_the_urls_secrets(run: Runner) -> None:
    """The refusal shows the URL with its query values masked, never the key in it."""
    result = run({"url": "http://127.0.0.1:8080/v1?key=sk-in-the-url-1234"}, raw_env=IN_CONTAINER)
    assert result.code == 2
    [error] = _errors(result)
    # display_url's *** is percent-encoded in the URL, and % again in the workflow command.
    assert "url: http://127.0.0.1:8080/v1?key=*** points at 127.0.0.1," in error
    assert "url: http://127.0.0.1:8080/v1?key=*** points at 127.0.0.1," in result.summary
    assert "sk-in-the-url-1234" not in error
    assert "sk-in-the-url-1234" not in result.summary


def test_loopback_target_in_a_targets_file_is_named(run: Runner) -> None:
    """A targets file's loopback target is refused by its name; the other target is fine."""
    (run.workspace / "targets.yml").write_text(
        "targets:\n"
        "  - name: local\n"
        "    url: http://[::1]:8080/v1/chat/completions\n"
        "  - name: paid\n"
        "    url: https://api.example.com/v1/chat/completions\n",
        encoding="utf-8",
    )
    result = run({"url": "", "targets": "targets.yml"}, raw_env=IN_CONTAINER)
    assert result.code == 2
    assert _errors(result) == [
        "::error title=latency-gate%3A invalid input::invalid input targets (targets.yml): "
        "target 'local', url: http://[::1]:8080/v1/chat/completions points at ::1, the machine "
        f"the call starts on; {LOOPBACK_HELP}"
    ]
    assert run.github.requests == []


def test_loopback_proxy_is_refused_in_the_container(run: Runner) -> None:
    """A loopback `proxy` is the same trap as a loopback URL: in the container it is the
    container. Refused with the same help, its credentials masked; nothing is called."""
    result = run(
        {"url": "http://api.example.com/v1", "proxy": "http://user:pw-1234@127.0.0.1:3128"},
        raw_env=IN_CONTAINER,
    )
    assert result.code == 2
    assert _errors(result) == [
        "::error title=latency-gate%3A invalid input::invalid input proxy: "
        f"http://***@127.0.0.1:3128 points at 127.0.0.1, the machine the call starts on; "
        f"{LOOPBACK_HELP}"
    ]
    # Masked for the runner before anything else, and nowhere else in the log.
    assert "::add-mask::pw-1234" in result.lines
    assert "pw-1234" not in "\n".join(result.lines).replace("::add-mask::pw-1234", "")
    assert run.github.requests == []


def test_loopback_proxy_from_the_environment_is_refused_in_the_container(run: Runner) -> None:
    """HTTPS_PROXY given to the step names a proxy on loopback: refused the same way."""
    result = run(
        {"url": "https://api.example.com/v1"},
        raw_env={**IN_CONTAINER, "HTTPS_PROXY": "http://localhost:3128"},
    )
    assert result.code == 2
    [error] = _errors(result)
    assert "invalid input proxy: http://localhost:3128 points at localhost," in error


@pytest.mark.slow
def test_loopback_url_is_probed_outside_the_container(run: Runner) -> None:
    """Without the Docker action's variable (the CLI, the action on the runner) loopback works."""
    result = run(raw_env={"LATENCY_GATE_IN_CONTAINER": ""})
    assert run.url.startswith("http://127.0.0.1:")
    assert result.code == 0, result.log
    assert result.outputs["verdict"] == "PASS"


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("localhost", True),
        ("LOCALHOST.", True),
        ("api.localhost", True),
        ("localhost.localdomain", True),
        ("ip6-localhost", True),
        ("ip6-loopback", True),
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("127.1", True),
        ("2130706433", True),
        ("0x7f.0.0.1", True),
        ("0.0.0.0", True),
        ("::1", True),
        ("::", True),
        ("::ffff:127.0.0.1", True),
        ("172.17.0.1", False),
        ("10.0.0.5", False),
        ("::ffff:172.17.0.1", False),
        ("fe80::1", False),
        ("llm", False),
        ("localhost.example.com", False),
        ("mylocalhost", False),
        ("api.example.com", False),
        ("128.0.0.1", False),
    ],
)
def test_is_loopback_host(host: str, loopback: bool) -> None:
    """Loopback names, addresses and their other spellings are caught; bridge and LAN ones not."""
    assert is_loopback_host(host) is loopback
