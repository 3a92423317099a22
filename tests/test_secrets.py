"""Canary secrets never leave: every artifact of a run is grepped for each of them.

The canaries sit in the API key, a custom header, the request body, a URL query parameter and
the GitHub token. The endpoint is a live demo server that echoes the key, the header value and
the query value back in its error bodies (as real APIs do: "invalid key sk-..."), so the error
details are exercised too. Artifacts: stdout, stderr, the JSON result, the Markdown report, the
job summary, the outputs file, the PR comment as the fake GitHub received it, the action's log,
and the messages of bad-input errors. `::add-mask::` lines must come before any other line.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO_ROOT
from fake_github import FakeGitHub

from latency_gate import action
from latency_gate.demo import DemoServer, EndpointSpec, Fault, serve_in_thread

API_KEY = "sk-canary-apikey-4f1d9c"
HEADER_VALUE = "hdr-canary-77e0b3"
BODY_CANARY = "body-canary-5a2e61"
QUERY_VALUE = "qry-canary-c3d8aa"
TOKEN = "ghs_canary_token_9b41f0"
CANARIES = (API_KEY, HEADER_VALUE, BODY_CANARY, QUERY_VALUE, TOKEN)
ENDPOINT_CANARIES = CANARIES[:4]

BODY = json.dumps({"messages": [{"role": "user", "content": BODY_CANARY}], "stream": False})
HEADER = f"X-Team-Token: {HEADER_VALUE}"
# Every other call is refused with an error body that quotes the secrets back.
ECHO = Fault(
    kind="status",
    status=401,
    every=2,
    body=f"invalid key Bearer {API_KEY}; header {HEADER_VALUE}; sig={QUERY_VALUE}",
)
SPEC = EndpointSpec(latency=0.0, tokens=3, token_interval=0.001, faults=(ECHO,))
PR = 9


def _leaks(where: str, text: str, canaries: tuple[str, ...] = CANARIES) -> list[str]:
    return [f"{canary} in {where}" for canary in canaries if canary in text]


@pytest.fixture(scope="module")
def server() -> Iterator[DemoServer]:
    with serve_in_thread(SPEC) as (demo,):
        yield demo


def _url(server: DemoServer) -> str:
    return f"{server.url}?sig={QUERY_VALUE}"


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LATENCY_GATE_")}
    env["PYTHONPATH"] = str(REPO_ROOT)
    return subprocess.run(
        [sys.executable, "-m", "latency_gate", "probe", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.slow
def test_cli_run_writes_no_canary_anywhere(tmp_path: Path, server: DemoServer) -> None:
    """stdout, stderr, JSON and Markdown of a run with echoed secrets hold none of them."""
    done = _cli(
        tmp_path,
        _url(server),
        "--api-key",
        API_KEY,
        "-H",
        HEADER,
        "-d",
        BODY,
        "--no-floor",
        "--warm-calls",
        "3",
        "--concurrency",
        "2",
        "--json",
        "r.json",
        "--markdown",
        "r.md",
    )
    assert done.returncode == 1, done.stderr  # half the calls were refused
    result = json.loads((tmp_path / "r.json").read_text())
    details = {s["error_detail"] for s in result["samples"] if not s["ok"]}
    assert details == {"HTTP 401: invalid key Bearer ***; header ***; sig=***"}
    leaks = _leaks("stdout", done.stdout) + _leaks("stderr", done.stderr)
    leaks += _leaks("JSON", (tmp_path / "r.json").read_text())
    leaks += _leaks("Markdown", (tmp_path / "r.md").read_text())
    assert leaks == []


def _action(
    tmp_path: Path, server: DemoServer, github: FakeGitHub, **extra: str
) -> tuple[int, str, dict[str, str]]:
    """Run the action with every canary in its inputs; (exit code, log, artifact texts)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"number": PR, "pull_request": {"number": PR}}))
    summary, output = tmp_path / "summary.md", tmp_path / "output"
    inputs = {
        "url": _url(server),
        "api-key": API_KEY,
        "headers": f"{HEADER}\nAccept: application/json",
        "body": BODY,
        "github-token": TOKEN,
        "comment": "always",
        "warm-calls": "3",
        "concurrency": "2",
        **extra,
    }
    env = {f"INPUT_{k.upper()}": v for k, v in inputs.items()}
    env |= {
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_REPOSITORY": github.repository,
        "GITHUB_API_URL": github.url,
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_OUTPUT": str(output),
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_WORKFLOW": "secrets",
        "GITHUB_JOB": "gate",
    }
    out = io.StringIO()
    code = action.main(env, out=out)
    artifacts = {
        "summary": summary.read_text() if summary.exists() else "",
        "outputs": output.read_text() if output.exists() else "",
    }
    for path in workspace.rglob("*"):
        if path.is_file():
            artifacts[str(path.relative_to(workspace))] = path.read_text()
    for request in github.requests:
        artifacts[f"GitHub {request.method} {request.path}"] = request.body.decode()
    return code, out.getvalue(), artifacts


def test_action_run_writes_no_canary_anywhere(
    tmp_path: Path, server: DemoServer, capfd: pytest.CaptureFixture[str]
) -> None:
    """Log, summary, outputs, JSON, report and the PR comment hold no canary."""
    with FakeGitHub(token=TOKEN) as github:
        code, log, artifacts = _action(tmp_path, server, github)
    captured = capfd.readouterr()
    assert code == 1, log
    assert set(artifacts) == {
        "summary",
        "outputs",
        "latency-gate-report/result.json",
        "latency-gate-report/report.md",
        "GitHub GET /user",
        f"GitHub GET /repos/{github.repository}/issues/{PR}/comments",
        f"GitHub POST /repos/{github.repository}/issues/{PR}/comments",
    }
    assert (
        "latency-gate" in artifacts[f"GitHub POST /repos/{github.repository}/issues/{PR}/comments"]
    )
    body_lines = [line for line in log.splitlines() if not line.startswith("::add-mask::")]
    leaks = _leaks("log", "\n".join(body_lines))
    leaks += _leaks("stdout", captured.out) + _leaks("stderr", captured.err)
    for name, text in artifacts.items():
        leaks += _leaks(name, text)
    assert leaks == []
    assert github.violations == []


def test_token_goes_only_to_github(tmp_path: Path, server: DemoServer) -> None:
    """The GitHub token is sent as GitHub's Authorization header and nowhere else."""
    with FakeGitHub(token=TOKEN) as github:
        _action(tmp_path, server, github)
    assert {r.headers.get("authorization") for r in github.requests} == {f"Bearer {TOKEN}"}
    assert all(TOKEN not in r.body.decode() for r in github.requests)


def test_masks_come_before_any_other_line(tmp_path: Path, server: DemoServer) -> None:
    """The log opens with one ::add-mask:: per secret, before anything else is printed."""
    with FakeGitHub(token=TOKEN) as github:
        _, log, _ = _action(tmp_path, server, github)
    lines = log.splitlines()
    masks = [line.removeprefix("::add-mask::") for line in lines[: len(CANARIES)]]
    assert sorted(masks) == sorted([API_KEY, TOKEN, HEADER_VALUE, QUERY_VALUE, BODY])
    assert not any(line.startswith("::add-mask::") for line in lines[len(CANARIES) :])


@pytest.mark.parametrize(
    "bad",
    [
        {"warm-calls": "0"},
        {"headers": f"X-Team-Token={HEADER_VALUE}"},
        {"url": f"ftp://127.0.0.1/?sig={QUERY_VALUE}"},
        {"url": f"http://127.0.0.1:99999/?sig={QUERY_VALUE}"},
        {"body": "{" + BODY_CANARY},
        {"max-warm-p95": API_KEY},
    ],
    ids=[
        "bad-count",
        "header-without-colon",
        "bad-scheme",
        "bad-port",
        "body-not-json",
        "key-in-a-budget",
    ],
)
def test_bad_input_message_holds_no_canary(
    tmp_path: Path, server: DemoServer, bad: dict[str, str]
) -> None:
    """A refused input's annotation and summary name it without quoting any secret."""
    with FakeGitHub(token=TOKEN) as github:
        code, log, artifacts = _action(tmp_path, server, github, **bad)
        assert github.requests == []
    assert code == 2
    body_lines = [line for line in log.splitlines() if not line.startswith("::add-mask::")]
    assert any(line.startswith("::error") for line in body_lines)
    leaks = _leaks("log", "\n".join(body_lines)) + _leaks("summary", artifacts["summary"])
    assert leaks == []


@pytest.mark.parametrize(
    "bad",
    [
        ("-H", f"X-Team-Token={HEADER_VALUE}"),
        ("-d", "{" + BODY_CANARY),
        ("--warm-calls", "0"),
    ],
    ids=["header-without-colon", "body-not-json", "bad-count"],
)
def test_cli_bad_input_message_holds_no_canary(
    tmp_path: Path, server: DemoServer, bad: tuple[str, str]
) -> None:
    """The CLI's exit-2 message names the bad option without quoting a secret value."""
    before = len(server.records)
    done = _cli(tmp_path, _url(server), "--api-key", API_KEY, "-H", HEADER, *bad)
    assert done.returncode == 2
    assert done.stderr.startswith("Error: invalid input ")
    leaks = _leaks("stdout", done.stdout) + _leaks("stderr", done.stderr)
    assert leaks == []
    assert len(server.records) == before
