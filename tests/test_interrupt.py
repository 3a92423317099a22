"""SIGTERM and SIGINT in the middle of a run, as a cancelled CI job sends them.

The CLI and the action's entry point run in subprocesses against a slow demo server; once the
server has answered a few calls, the signal arrives. The samples so far must be written (JSON,
Markdown, job summary), the report must say the run was interrupted, the exit code must be 1
(a failed gate, not a bug) and no traceback may be printed. Every wait is bounded.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO_ROOT

from latency_gate.demo import DemoServer, EndpointSpec, serve_in_thread
from latency_gate.models import RunResult

pytestmark = pytest.mark.slow  # each test lets a run go for a while before it signals it

# 100 ms per answer and 200 warm calls: over 20 s if nobody stopped it.
SLOW = EndpointSpec(name="slow", latency=0.1, tokens=2, token_interval=0.001)
CALLS_BEFORE_SIGNAL = 4
WAIT_FOR_CALLS = 30.0
WAIT_FOR_EXIT = 20.0
# STOPPED: a run signalled stops calling; the ~150 calls left (over 15 s) are not made. That is
# read from the server's records, the calls it got after the signal: the time the run then takes
# to write its reports is the machine's (5.6 s beside a loaded suite, stop 47, where 5 s was
# once the bound), and WAIT_FOR_EXIT bounds it.
SIGNALS = [pytest.param(signal.SIGTERM, id="SIGTERM"), pytest.param(signal.SIGINT, id="SIGINT")]


@pytest.fixture
def slow_server() -> Iterator[DemoServer]:
    with serve_in_thread(SLOW) as (server,):
        yield server


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATENCY_GATE_", "INPUT_"))}
    env["PYTHONPATH"] = str(REPO_ROOT)
    return env | (extra or {})


def _interrupt(
    command: list[str], cwd: Path, env: dict[str, str], server: DemoServer, sig: signal.Signals
) -> tuple[int, str, str, int]:
    """Start command, signal it once the server has answered a few calls; (code, out, err, the
    calls the server got after the signal)."""
    process = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + WAIT_FOR_CALLS
        while len(server.records) < CALLS_BEFORE_SIGNAL and process.poll() is None:
            assert time.monotonic() < deadline, "the run never reached the server"
            time.sleep(0.05)
        assert process.poll() is None, "the run ended before the signal"
        time.sleep(0.3)  # in the middle of a call, not between two
        signalled = time.time_ns()  # the clock of the server's records
        process.send_signal(sig)
        out, err = process.communicate(timeout=WAIT_FOR_EXIT)
        after = sum(record.received_ns > signalled for record in list(server.records))
        return process.returncode, out, err, after
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


@pytest.mark.parametrize("sig", SIGNALS)
def test_cli_interrupted_writes_the_calls_so_far(
    tmp_path: Path, slow_server: DemoServer, sig: signal.Signals
) -> None:
    """The CLI, signalled mid-run: JSON and Markdown with the calls made, interrupted, exit 1."""
    command = [sys.executable, "-m", "latency_gate", "probe", slow_server.url, "--prompt", "hi"]
    command += ["--warm-calls", "200", "--json", "r.json", "--markdown", "r.md"]
    code, out, err, after = _interrupt(command, tmp_path, _env(), slow_server, sig)
    assert code == 1, err
    assert "Traceback" not in err
    assert "warning: the run was interrupted" in err
    result = RunResult.model_validate_json((tmp_path / "r.json").read_text())
    assert result.interrupted
    assert CALLS_BEFORE_SIGNAL <= len(result.samples) < 201
    assert all(s.ok for s in result.samples)  # the call in flight is dropped, not an error
    assert not result.verdict.passed
    assert "the run was interrupted" in result.verdict.reasons
    assert "**Interrupted**" in (tmp_path / "r.md").read_text()
    assert "interrupted" in out
    assert after <= 1  # the call in flight at the signal, at most: see STOPPED


@pytest.mark.parametrize("sig", SIGNALS)
def test_action_interrupted_writes_the_calls_so_far(
    tmp_path: Path, slow_server: DemoServer, sig: signal.Signals
) -> None:
    """The action's entry point, signalled mid-run: result, report, summary, outputs; exit 1."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    summary, output = tmp_path / "summary.md", tmp_path / "output"
    summary.touch()
    output.touch()
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"ref": "refs/heads/main"}))
    env = _env(
        {
            "INPUT_URL": slow_server.url,
            "INPUT_PROMPT": "hi",
            "INPUT_WARM-CALLS": "200",
            "INPUT_GITHUB-TOKEN": "ghs_unused_token",
            "GITHUB_EVENT_NAME": "push",
            "GITHUB_EVENT_PATH": str(event),
            "GITHUB_REPOSITORY": "octo-org/octo-repo",
            "GITHUB_API_URL": "http://127.0.0.1:9",  # never called: not a pull request
            "GITHUB_STEP_SUMMARY": str(summary),
            "GITHUB_OUTPUT": str(output),
            "GITHUB_WORKSPACE": str(workspace),
        }
    )
    command = [sys.executable, str(REPO_ROOT / "entrypoint.py")]
    code, out, err, after = _interrupt(command, workspace, env, slow_server, sig)
    assert code == 1, out + err
    assert "Traceback" not in out + err
    result = RunResult.model_validate_json(
        (workspace / "latency-gate-report" / "result.json").read_text()
    )
    assert result.interrupted
    assert CALLS_BEFORE_SIGNAL <= len(result.samples) < 201
    assert "**Interrupted**" in summary.read_text()
    assert "**Interrupted**" in (workspace / "latency-gate-report" / "report.md").read_text()
    assert "::warning title=latency-gate::the run was interrupted" in out
    assert "verdict=FAIL" in output.read_text()
    assert after <= 1  # the call in flight at the signal, at most: see STOPPED
