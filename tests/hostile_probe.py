"""What several hostile-input files (tests/test_hostile_*.py) share: the runs they make.

`latency-gate probe` run in process and timed, the CLI in a process of its own (argv bytes, resource
limits, a working directory that is gone), the action on a push event with its `::error` lines, the
commands a runner would read from a log, and the URL credentials they plant. FAST here is the short
run without a cap on calls that these tests were written with (hostile_kit.FAST caps it at 4 calls).
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner, Result
from conftest import REPO_ROOT
from machine_pace import queued_seconds

from latency_gate import action, cli

FAST = ["--no-floor", "--warm-calls", "2", "--concurrency", "1"]


def probe(*args: str, env: dict[str, str | None] | None = None) -> tuple[Result, float]:
    """`latency-gate probe ARGS` in process; (result, seconds it took). The seconds leave out
    the time the machine kept the run waiting for a core (tests/machine_pace.py): the tests
    bound the work and the waits a hostile input causes, and on cores busy with something else
    (issue 42: beside `stress-ng --cpu 2` a refused targets file took 1.23 s, three 0.3 s
    timeouts 3.20 s) that queueing is the machine's, not the run's."""
    started, queued = time.monotonic(), queued_seconds()
    result = CliRunner().invoke(
        cli.main, ["probe", *args], env={"LATENCY_GATE_API_KEY": None, **(env or {})}
    )
    return result, time.monotonic() - started - (queued_seconds() - queued)


def subprocess_cli(
    *args: str | bytes,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    preexec: Callable[[], None] | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """`python -m latency_gate ARGS` in a process of its own, stderr merged into stdout."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("LATENCY_GATE_")}
    environ["PYTHONPATH"] = str(REPO_ROOT)
    environ |= env or {}
    return subprocess.run(
        [sys.executable, "-m", "latency_gate", *args],
        cwd=cwd,
        env=environ,
        preexec_fn=preexec,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
        check=False,
    )


USER, PASSWORD = "alice", "pw-hostile/9+Zq="


USER, PASSWORD = "alice", "pw-hostile/9+Zq="


API_KEY = "sk-hostile/key+7=x"


def runner_commands(log: str) -> list[str]:
    """The lines a GitHub runner would run as workflow commands, honouring ::stop-commands::.

    The runner trims leading white space before it looks for `::`.
    """
    commands: list[str] = []
    stopped: str | None = None
    for line in log.splitlines():
        text = line.lstrip()
        if stopped is not None:
            if text == f"::{stopped}::":
                stopped = None
            continue
        if text.startswith("::stop-commands::"):
            stopped = text.removeprefix("::stop-commands::")
        elif text.startswith("::"):
            commands.append(text)
    return commands


@dataclass
class ActionRun:
    code: int
    log: str
    summary: str
    workspace: Path


def run_action(tmp_path: Path, url: str, **env: str) -> ActionRun:
    """The action on a push event (no comment) with a small run against `url`."""
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    summary = tmp_path / "summary.md"
    summary.touch()
    environ = {
        "INPUT_URL": url,
        "INPUT_WARM-CALLS": "2",
        "INPUT_CONCURRENCY": "1",
        "INPUT_COMMENT": "never",
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_OUTPUT": str(tmp_path / "output"),
        **env,
    }
    out = io.StringIO()
    code = action.main(environ, out=out)
    return ActionRun(code, out.getvalue(), summary.read_text(), workspace)


def _errors(log: str) -> list[str]:
    return [line for line in log.splitlines() if line.startswith("::error")]
