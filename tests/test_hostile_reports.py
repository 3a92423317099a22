"""Hostile input: what reaches the terminal, the log, a workflow command or a comment.

A target name holding workflow commands, OSC and CSI sequences (the action's log and the CLI under
GITHUB_ACTIONS), NO_COLOR and TERM=dumb on a pseudo-terminal, a value over its budget never printed
equal to it, the terminal and the annotations saying why calls failed, progress lines in a log, and
a personal token's owner's comment that only quotes the marker. docs/faults.md, "Hostile input",
says what each case did before its fix.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import REPO_ROOT, free_port
from fake_github import PERSONAL_USER, FakeGitHub
from hostile_kit import CHAT
from hostile_probe import FAST, _errors, probe, run_action, runner_commands, subprocess_cli
from result_factory import make_result, samples_for

from latency_gate import action, cli
from latency_gate.demo import DemoServer, EndpointSpec, Fault, serve_in_thread
from latency_gate.github import GitHubClient, comment_marker
from latency_gate.measure.engine import Progress
from latency_gate.report.progress import ProgressLog
from latency_gate.results.json_file import dump_runs


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoServer]:
    """A healthy streaming chat endpoint; `records` says whether anything reached it."""
    with serve_in_thread(EndpointSpec(latency=0.0, tokens=2, token_interval=0.0)) as (server,):
        yield server


HOSTILE_NAME = "api\n::error title=pwned::pwned\n::set-output name=verdict::PASS\x1b]0;t\x07\x1b[2J"


def _targets_file(folder: Path, url: str) -> Path:
    path = folder / "targets.yml"
    path.write_text(
        "targets:\n"
        f"  - name: {json.dumps(HOSTILE_NAME)}\n"
        f"    url: {url}\n"
        "    warm-calls: 2\n"
        "    concurrency: 1\n"
    )
    return path


def _tty_run(args: list[str], env: dict[str, str]) -> str:
    """Run the CLI with stdout and stderr on a pseudo-terminal; everything it printed."""
    main_fd, child_fd = pty.openpty()
    environ = {k: v for k, v in os.environ.items() if k not in {"NO_COLOR", "TERM"}}
    environ |= {"PYTHONPATH": str(REPO_ROOT), **env}
    process = subprocess.Popen(
        [sys.executable, "-m", "latency_gate", *args],
        stdout=child_fd,
        stderr=child_fd,
        env=environ,
    )
    os.close(child_fd)
    chunks = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([main_fd], [], [], 1)
        if not ready:
            if process.poll() is not None:
                break
            continue
        try:
            data = os.read(main_fd, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    process.wait(10)
    os.close(main_fd)
    return b"".join(chunks).decode()


def test_action_log_runs_no_command_from_a_target_name(tmp_path: Path, demo: DemoServer) -> None:
    """A target name with ::error lines runs no workflow command in the action's log."""
    targets = _targets_file(tmp_path, demo.url)
    out = io.StringIO()
    environ = {
        "INPUT_TARGETS": str(targets),
        "INPUT_COMMENT": "never",
        "GITHUB_WORKSPACE": str(tmp_path),
    }
    code = action.main(environ, out=out)
    log = out.getvalue()
    assert code == 0, log
    assert "pwned" in log  # it was printed, as text
    assert [c for c in runner_commands(log) if "pwned" in c or "set-output" in c] == []
    assert "\x1b" not in log
    assert "\x07" not in log


@pytest.mark.slow
def test_cli_in_a_workflow_runs_no_command_from_a_target_name(
    tmp_path: Path, demo: DemoServer
) -> None:
    """Under GITHUB_ACTIONS=true the CLI's output runs no command from a target name."""
    targets = _targets_file(tmp_path, demo.url)
    done = subprocess_cli(
        "probe", "--targets", str(targets), "--no-floor", env={"GITHUB_ACTIONS": "true"}
    )
    assert done.returncode == 0, done.stdout
    assert runner_commands(done.stdout) == []
    assert done.stdout.startswith("::stop-commands::")
    assert "\x1b" not in done.stdout


def test_terminal_escapes_in_a_name_are_stripped_whole(demo: DemoServer) -> None:
    """--name with OSC and CSI sequences prints as the plain name, no bytes of the sequences."""
    result, _ = probe(demo.url, *FAST, "--name", "ok\x1b]0;title\x07\x1b[31mred\x1b[0m")
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output
    assert "okred: done in" in result.stderr


@pytest.mark.parametrize(
    ("env", "escapes"),
    [
        ({"TERM": "xterm"}, True),
        ({"NO_COLOR": "1", "TERM": "xterm"}, False),
        ({"TERM": "dumb"}, False),
    ],
    ids=["colour", "no-color", "term-dumb"],
)
@pytest.mark.slow
def test_no_color_and_term_dumb_print_no_escape_sequence(
    demo: DemoServer, env: dict[str, str], escapes: bool
) -> None:
    """On a terminal the verdict is coloured and progress redrawn; NO_COLOR or TERM=dumb: none."""
    output = _tty_run(["probe", demo.url, *FAST], env)
    assert "PASS" in output
    assert ("\x1b[" in output) is escapes


def test_a_value_over_its_budget_never_prints_equal_to_it(tmp_path: Path) -> None:
    """warm p95 3.004 s against 3 s: shown as 3.004 s, not "3.00 s FAIL (budget 3.00 s)".

    The calls themselves took 3.004 s: `merge` judges a file from its calls (issue 19).
    """
    samples = samples_for(
        cold=0.42, warm=[3.004] * 40, concurrent=[0.150 + 0.005 * i for i in range(40)]
    )
    (tmp_path / "r.json").write_text(dump_runs([make_result("api", samples=samples)]))
    done = CliRunner().invoke(cli.main, ["merge", str(tmp_path / "r.json")])
    assert done.exit_code == 1, done.output
    assert done.stdout.splitlines()[0] == "FAIL: warm p95 3.004 s, over its 3.00 s budget"
    assert re.search(r"^warm p95 +3\.004 s +\S.* +3\.00 s +FAIL$", done.stdout, re.M)


def test_probe_says_why_calls_failed_and_stops_early_when_nothing_connects(
    tmp_path: Path,
) -> None:
    """Nothing listening: 3 refused calls, then a stop; the terminal names the kind."""
    url = f"http://127.0.0.1:{free_port()}{CHAT}"
    json_path = tmp_path / "r.json"
    result, _ = probe(url, "--no-floor", "--json", str(json_path))
    assert result.exit_code == 1
    assert "  3 connection_refused: connection refused\n" in result.stdout
    assert "n: 0 of 1 cold, 0 of 2 warm calls." in result.stdout
    assert result.stderr.endswith(
        "warning: stopped after the first 3 calls: all failed to connect "
        "(connection_refused): the endpoint is not reachable from here\n"
    )
    assert len(json.loads(json_path.read_text())["samples"]) == 3


def test_fail_fast_on_timeouts_ends_after_three_timeouts() -> None:
    """A server that never answers: the run ends after three 0.3 s timeouts."""
    spec = EndpointSpec(faults=(Fault(kind="hang"),))
    with serve_in_thread(spec) as (server,):
        result, seconds = probe(server.url, "--no-floor", "--timeout", "0.3s")
    assert result.exit_code == 1
    assert "  3 read_timeout: no answer within the 0.3 s timeout\n" in result.stdout
    assert seconds < 3.0


def test_action_annotates_why_calls_failed(tmp_path: Path) -> None:
    """The action's annotations say the same as the terminal: the kinds, with an example."""
    run = run_action(tmp_path, f"http://127.0.0.1:{free_port()}{CHAT}")
    assert run.code == 1
    assert (
        "::error title=latency-gate%3A why calls failed::failed calls (endpoint) by kind: "
        "3 connection_refused: connection refused"
    ) in _errors(run.log)


def test_progress_in_a_log_prints_counts_at_least_every_interval() -> None:
    """A stage that goes on past the interval gets a line with its counts and time so far."""
    clock = [0.0]
    stream = io.StringIO()
    log = ProgressLog(stream, every=10.0, clock=lambda: clock[0])
    show = log.printer("api\n::error::x")

    show(Progress("warm", 3, 20))
    for now in (5.0, 10.0, 15.0, 21.0):
        clock[0] = now
        log.beat()
    assert stream.getvalue().splitlines() == [
        "api ::error::x: warm calls 3/20",
        "api ::error::x: warm calls 3/20, 10 s so far",
        "api ::error::x: warm calls 3/20, 21 s so far",
    ]


async def test_progress_beats_while_a_call_hangs() -> None:
    """`beating` prints while the awaited work makes no progress of its own."""
    stream = io.StringIO()
    log = ProgressLog(stream, every=0.1)

    log.printer("api")(Progress("cold", 0, 1))
    await log.beating(asyncio.sleep(0.45))
    beats = [line for line in stream.getvalue().splitlines() if "so far" in line]
    assert len(beats) >= 3


def test_a_personal_tokens_owner_keeps_a_comment_quoting_the_marker() -> None:
    """A comment by the token's own user that merely holds the marker (a note quoting it) is
    theirs: a new report comment is created beside it (it was adopted and overwritten)."""
    marker = comment_marker("ci", "gate", ["api"])
    note = f"Note to self: the report below carries {marker}, keep it."
    with FakeGitHub(tokens={"ghp_personal_h3": PERSONAL_USER}) as fake:
        fake.seed_comments(7, 1, body=note, user=PERSONAL_USER)
        with GitHubClient(
            api_url=fake.url, token="ghp_personal_h3", repository=fake.repository
        ) as client:
            outcome = client.upsert_comment(7, marker, f"{marker}\nPASS")
        assert fake.violations == []
    assert outcome.action == "created"
    assert [c["body"] for c in fake.comments[7]] == [note, f"{marker}\nPASS"]
