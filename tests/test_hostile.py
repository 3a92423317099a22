"""Hostile input, round two (issue 13): what used to leak, crash, hang or pass wrongly.

Every case goes through the real CLI (click's CliRunner, or a subprocess where the process
itself matters: argv bytes, resource limits, a working directory that is gone, a terminal) or
the real action entry point (`action.main` with an environ mapping). Endpoints are loopback
servers: the demo server, or hostile_kit.paced, a tiny asyncio server that sends fixed bytes.
docs/faults.md ("Hostile input, round two") has a row for each.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import io
import json
import os
import pty
import re
import resource
import select
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest
from click.testing import CliRunner, Result
from conftest import REPO_ROOT, free_port
from hostile_kit import one_error, paced
from one_look import one_look_args
from result_factory import make_result, samples_for

from latency_gate import action, cli
from latency_gate.demo import DemoServer, EndpointSpec, Fault, serve_in_thread
from latency_gate.measure.engine import Progress
from latency_gate.report.progress import ProgressLog
from latency_gate.report.result_file import dump_runs

CHAT = "/v1/chat/completions"
FAST = ["--no-floor", "--warm-calls", "2", "--concurrency", "1"]


# --- the worlds the tests run against -----------------------------------------------------------


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoServer]:
    """A healthy streaming chat endpoint; `records` says whether anything reached it."""
    with serve_in_thread(EndpointSpec(latency=0.0, tokens=2, token_interval=0.0)) as (server,):
        yield server


def probe(*args: str, env: dict[str, str | None] | None = None) -> tuple[Result, float]:
    """`latency-gate probe ARGS` in process; (result, seconds it took)."""
    started = time.monotonic()
    result = CliRunner().invoke(
        cli.main, ["probe", *args], env={"LATENCY_GATE_API_KEY": None, **(env or {})}
    )
    return result, time.monotonic() - started


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


# --- leaks: credentials echoed back in another form --------------------------------------------

USER, PASSWORD = "alice", "pw-hostile/9+Zq="
API_KEY = "sk-hostile/key+7=x"


def _recoverable(text: str, secret: str) -> list[str]:
    """Every base64-looking run of `text` that decodes, at some alignment, to hold `secret`."""
    found = []
    for token in re.findall(r"[A-Za-z0-9+/_-]{6,}=*", text):
        for skip in range(4):
            chunk = token[skip:].rstrip("=")
            chunk = chunk[: len(chunk) - len(chunk) % 4]
            for decode in (base64.b64decode, base64.urlsafe_b64decode):
                with contextlib.suppress(ValueError):
                    if secret.encode() in decode(chunk):
                        found.append(token)
    return found


def test_echoed_basic_auth_of_url_userinfo_is_scrubbed(tmp_path: Path) -> None:
    """Basic auth of URL userinfo echoed back (base64, percent-encoded) reaches no output."""
    pair = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    echo = f"Authorization: Basic {pair}; pw={quote(PASSWORD, safe='')}"
    spec = EndpointSpec(latency=0.0, faults=(Fault(kind="status", status=401, body=echo),))
    with serve_in_thread(spec) as (server,):
        host = server.base_url.removeprefix("http://")
        url = f"http://{USER}:{quote(PASSWORD, safe='')}@{host}{CHAT}"
        json_path, md_path = tmp_path / "r.json", tmp_path / "r.md"
        result, _ = probe(url, *FAST, "--json", str(json_path), "--markdown", str(md_path))
    assert result.exit_code == 1, result.output
    details = {s["error_detail"] for s in json.loads(json_path.read_text())["samples"]}
    assert details == {"HTTP 401: Authorization: Basic ***; pw=***"}
    everything = result.output + json_path.read_text() + md_path.read_text()
    for leak in (PASSWORD, quote(PASSWORD, safe=""), pair):
        assert leak not in everything
    assert _recoverable(everything, PASSWORD) == []


def test_echoed_api_key_in_base64_and_url_encoding_is_scrubbed(tmp_path: Path) -> None:
    """The key echoed in base64 (any alphabet, any alignment) or percent-encoded is ***."""
    inside = base64.b64encode(b'{"k":"' + API_KEY.encode() + b'"}').decode()
    echo = (
        f"b64 {base64.b64encode(API_KEY.encode()).decode()} "
        f"url-safe {base64.urlsafe_b64encode(API_KEY.encode()).decode()} "
        f"inside {inside} encoded {quote(API_KEY, safe='')}"
    )
    spec = EndpointSpec(latency=0.0, faults=(Fault(kind="status", status=401, body=echo),))
    with serve_in_thread(spec) as (server,):
        json_path, md_path = tmp_path / "r.json", tmp_path / "r.md"
        args = [server.url, "--api-key", API_KEY, *FAST, "--json", str(json_path)]
        result, _ = probe(*args, "--markdown", str(md_path))
    assert result.exit_code == 1, result.output
    everything = result.output + json_path.read_text() + md_path.read_text()
    assert API_KEY not in everything
    assert quote(API_KEY, safe="") not in everything
    assert _recoverable(everything, API_KEY) == []
    detail = json.loads(json_path.read_text())["samples"][0]["error_detail"]
    assert detail.startswith("HTTP 401: b64 *** url-safe *** inside ")
    assert detail.endswith(" encoded ***")


def test_echoed_key_escaped_in_part_or_json_escaped_is_scrubbed(tmp_path: Path) -> None:
    """The key percent-encoded in part (`/` kept) or with lower-case hex, JSON-escaped (`\\/`,
    `\\u002b`), or its base64 percent-encoded, is *** like the plain key."""
    lower_hex = re.sub("%[0-9A-F]{2}", lambda m: m[0].lower(), quote(API_KEY, safe=""))
    echo = (
        f"partly {quote(API_KEY)} lower {lower_hex} "
        f"json {json.dumps(API_KEY).replace('/', chr(92) + '/')} "
        f"unicode {API_KEY.replace('+', chr(92) + 'u002b')} "
        f"b64 {quote(base64.b64encode(API_KEY.encode()).decode(), safe='')}"
    )
    spec = EndpointSpec(latency=0.0, faults=(Fault(kind="status", status=401, body=echo),))
    with serve_in_thread(spec) as (server,):
        json_path = tmp_path / "r.json"
        result, _ = probe(server.url, "--api-key", API_KEY, *FAST, "--json", str(json_path))
    assert result.exit_code == 1, result.output
    detail = json.loads(json_path.read_text())["samples"][0]["error_detail"]
    assert detail == 'HTTP 401: partly *** lower *** json "***" unicode *** b64 ***'
    assert "key" not in result.output.replace("--api-key", "")


def test_token_as_url_user_name_is_masked_and_scrubbed(tmp_path: Path) -> None:
    """`http://TOKEN@host/` (no password): the action masks TOKEN, an echo of it is ***."""
    token = "sk-user-token-42"
    echo = f"unknown user {token}"
    spec = EndpointSpec(latency=0.0, faults=(Fault(kind="status", status=401, body=echo),))
    with serve_in_thread(spec) as (server,):
        url = server.url.replace("http://", f"http://{token}@")
        run = run_action(tmp_path, url)
    assert run.code == 1, run.log
    assert run.log.splitlines()[0] == f"::add-mask::{token}"
    result = (run.workspace / "latency-gate-report" / "result.json").read_text()
    assert "HTTP 401: unknown user ***" in result
    log = [line for line in run.log.splitlines() if not line.startswith("::add-mask::")]
    for text in ("\n".join(log), run.summary, result):
        assert token not in text


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--api-key", API_KEY],
            "Error: invalid input --api-key: contradicts the user:password in URL: give the "
            "credentials once (drop one of them)",
        ),
        (
            ["-H", "Authorization: Bearer x-token-1"],
            "Error: invalid input -H/--header: an Authorization header contradicts the "
            "user:password in URL: give the credentials once (drop one of them)",
        ),
    ],
    ids=["api-key", "authorization-header"],
)
def test_url_userinfo_beside_other_credentials_is_refused(
    demo: DemoServer, extra: list[str], message: str
) -> None:
    """Userinfo was sent and --api-key silently dropped: now exit 2 naming both, nothing sent."""
    before = len(demo.records)
    url = demo.url.replace("http://", f"http://{USER}:pw-1234@")
    result, seconds = probe(url, *extra)
    assert one_error(result) == message
    assert seconds < 1.0
    assert len(demo.records) == before


# --- injection: workflow commands and terminal escapes ------------------------------------------

HOSTILE_NAME = "api\n::error title=pwned::pwned\n::set-output name=verdict::PASS\x1b]0;t\x07\x1b[2J"


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


# --- exit 2 within a second, one message naming the input --------------------------------------

HUGE = "9" * 400

# (id, probe arguments after the URL, the one error line)
EXIT_2_CASES: list[tuple[str, list[str], str]] = [
    (
        "header-not-ascii",
        ["-H", "X-Key: café"],
        "-H/--header: the value of header 'X-Key' holds a character that is not ASCII at "
        "position 4 (HTTP headers carry ASCII only)",
    ),
    (
        "header-control",
        ["-H", "X-Key: a\x01b"],
        "-H/--header: the value of header 'X-Key' holds a control character at position 2 "
        "(HTTP headers carry ASCII only)",
    ),
    (
        "api-key-not-ascii",
        ["--api-key", "clé-secrète"],
        "--api-key: holds a character that is not ASCII at position 3 (HTTP headers carry "
        "ASCII only)",
    ),
    (
        "body-not-utf8",
        ["-d", "\udcff{}"],
        "-d/--body: is not valid UTF-8 text (check the shell's encoding)",
    ),
    (
        "label-not-utf8",
        ["--label", "eu\udcff"],
        "--label: is not valid UTF-8 text (check the shell's encoding)",
    ),
    (
        "content-length",
        ["-d", '{"messages": []}', "-H", "Content-Length: 5"],
        "-H/--header: Content-Length: '5' contradicts the body, which is 16 bytes; leave the "
        "header out and it is set for you",
    ),
    (
        "transfer-encoding",
        ["-H", "Transfer-Encoding: chunked"],
        "-H/--header: Transfer-Encoding is set by latency-gate for the body; leave it out",
    ),
    (
        "timeout-huge",
        ["--timeout", HUGE],
        f"--timeout: expected a duration of at most 24 hours, got '{'9' * 40}…'",
    ),
    (
        "idle-huge",
        ["--idle", HUGE + "m"],
        f"--idle: expected a duration of at most 24 hours, got '{'9' * 40}…'",
    ),
    (
        "budget-huge",
        ["--max-warm-p95", HUGE],
        f"--max-warm-p95: expected a duration of at most 24 hours, got '{'9' * 40}…'",
    ),
    (
        "error-rate-huge",
        ["--max-error-rate", HUGE],
        f"--max-error-rate: expected a fraction between 0 and 1, got '{'9' * 40}…'",
    ),
    (
        "warm-calls-huge",
        ["--warm-calls", "9" * 5000],
        f"--warm-calls: expected a whole number of a sensible size, got '{'9' * 40}…'",
    ),
    (
        "body-dev-zero",
        ["-d", "@/dev/zero"],
        # A device is refused before a byte is read (issue 19); the 16 MiB bound on regular
        # files is tested in tests/test_hostile3.py.
        "-d/--body: cannot read body file '/dev/zero': is a device, not a file",
    ),
]


@pytest.mark.parametrize(
    ("args", "message"), [c[1:] for c in EXIT_2_CASES], ids=[c[0] for c in EXIT_2_CASES]
)
def test_hostile_option_exits_2_within_a_second(
    demo: DemoServer, args: list[str], message: str
) -> None:
    """Exit 2 in under a second, one message naming the option, nothing sent."""
    before = len(demo.records)
    result, seconds = probe(demo.url, *args)
    assert one_error(result) == f"Error: invalid input {message}"
    assert seconds < 1.0
    assert len(demo.records) == before


def test_body_bytes_that_are_not_utf8_on_the_command_line_exit_2() -> None:
    """Raw bytes in argv (a shell in another encoding) are named, not sent or crashed on."""
    done = subprocess_cli("probe", f"http://127.0.0.1:{free_port()}{CHAT}", "-d", b"{\xff}")
    assert done.returncode == 2, done.stdout
    assert done.stdout == (
        "Error: invalid input -d/--body: is not valid UTF-8 text (check the shell's encoding)\n"
    )


BOMB = "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}' if prev else 'x'] * 9)}]\n"
    for prev, name in zip(["", *"abcdefgh"], "abcdefghi", strict=True)
) + ("targets:\n  - name: a\n    url: http://127.0.0.1:1/\n    body: *i\n")

# (id, file name, contents, the one error line)
FILE_CASES: list[tuple[str, str, str | bytes, str]] = [
    (
        "yaml-alias-bomb",
        "bomb.yml",
        BOMB,
        "bomb.yml: expands to more than 100,000 values (YAML aliases?); a targets file needs "
        "far fewer",
    ),
    (
        "yaml-deep-flow",
        "deep.yml",
        "targets: " + "[" * 5000 + "]" * 5000 + "\n",
        "deep.yml: nested deeper than 64 levels; a targets file needs a few",
    ),
    (
        "yaml-deep-block",
        "block.yml",
        "targets:\n" + "".join("  " * i + "- \n" for i in range(300)),
        "block.yml: nested deeper than 64 levels; a targets file needs a few",
    ),
    (
        "json-deep",
        "deep.json",
        '{"targets": ' + "[" * 100_000 + "]" * 100_000 + "}",
        "deep.json: nested deeper than 64 levels; a targets file needs a few",
    ),
    (
        "toml-deep",
        "deep.toml",
        "targets = " + "[" * 100_000 + "]" * 100_000 + "\n",
        "deep.toml: nested deeper than 64 levels; a targets file needs a few",
    ),
    (
        "too-big",
        "big.yml",
        "# " + "x" * (1024 * 1024) + "\n",
        "targets: cannot read '{dir}/big.yml': larger than 1 MiB: is it the file you meant?",
    ),
]


@pytest.mark.parametrize(
    ("name", "text", "message"), [c[1:] for c in FILE_CASES], ids=[c[0] for c in FILE_CASES]
)
def test_hostile_targets_file_exits_2_within_a_second(
    tmp_path: Path, name: str, text: str, message: str
) -> None:
    """Alias bombs, deep nesting and a huge file: bounded work, exit 2, one message."""
    path = tmp_path / name
    path.write_text(text)
    result, seconds = probe("--targets", str(path))
    expected = message.replace("{dir}", str(tmp_path))
    assert one_error(result) == f"Error: invalid input {expected}"
    assert seconds < 1.0


def test_demo_out_that_cannot_be_a_folder_exits_2(tmp_path: Path) -> None:
    """demo --out under a regular file: exit 2 naming --out before any endpoint starts."""
    (tmp_path / "file").write_text("")
    started = time.monotonic()
    result = CliRunner().invoke(cli.main, ["demo", "--out", str(tmp_path / "file" / "out")])
    assert one_error(result) == (
        f"Error: invalid input --out: cannot create the folder '{tmp_path}/file/out': Not a "
        "directory (give --out a writable folder)"
    )
    assert time.monotonic() - started < 1.0


def _vanishing_cwd(folder: Path) -> Callable[[], None]:
    def enter_and_remove() -> None:
        os.chdir(folder)
        os.rmdir(folder)

    return enter_and_remove


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["demo"],
            "Error: invalid input --out: cannot create the folder 'latency-gate-demo': No such "
            "file or directory (give --out a writable folder)",
        ),
        (
            ["probe", "http://127.0.0.1:9/", "--json", "r.json"],
            "Error: invalid input working directory: cannot be read: No such file or directory",
        ),
    ],
    ids=["demo", "probe"],
)
def test_a_working_directory_that_is_gone_exits_2(
    tmp_path: Path, args: list[str], message: str
) -> None:
    """Started in a folder that was then removed: exit 2 saying so, no traceback."""
    gone = tmp_path / "gone"
    gone.mkdir()
    done = subprocess_cli(*args, preexec=_vanishing_cwd(gone))
    assert done.returncode == 2, done.stdout
    assert done.stdout == message + "\n"


def test_concurrency_over_the_open_files_limit_exits_2_before_any_call(demo: DemoServer) -> None:
    """RLIMIT_NOFILE 256 (soft and hard): --concurrency 1000 cannot fit; said before a call."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    before = len(demo.records)
    done = subprocess_cli("probe", demo.url, "--concurrency", "1000", preexec=limit)
    assert done.returncode == 2, done.stdout
    assert done.stdout == (
        "Error: invalid input --concurrency: 1000 concurrent calls need about 1064 open files, "
        "but this machine allows 256 (ulimit -n); lower it, or raise the limit\n"
    )
    assert len(demo.records) == before


@pytest.mark.slow
def test_concurrency_within_the_hard_limit_raises_the_soft_one(demo: DemoServer) -> None:
    """Soft 256, hard 2048: the soft limit is raised and 300 concurrent calls all succeed."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 2048))

    done = subprocess_cli(
        "probe",
        demo.url,
        "--no-floor",
        "--warm-calls",
        "1",
        "--concurrency",
        "300",
        # one warm call cannot decide warm p95: this test is about open files, not the verdict
        *one_look_args(302),
        "-v",  # the counts are the detail of a passing run
        preexec=limit,
    )
    assert done.returncode == 0, done.stdout
    assert "0 of 1 cold" not in done.stdout
    assert "n: 1 cold, 1 warm, 300 concurrent calls." in done.stdout


# --- the action: the same inputs, and outputs that cannot be written ---------------------------


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


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        (
            {"INPUT_API-KEY": "clé-secrète"},
            "api-key: holds a character that is not ASCII at position 3 (HTTP headers carry "
            "ASCII only)",
        ),
        (
            # GET: no body (a chat URL alone gets the default prompt's).
            {"INPUT_HEADERS": "Content-Length: 9", "INPUT_METHOD": "GET"},
            "headers: Content-Length: '9' contradicts the body, which is 0 bytes; leave the "
            "header out and it is set for you",
        ),
        (
            {"INPUT_TIMEOUT": HUGE},
            f"timeout: expected a duration of at most 24 hours, got '{'9' * 40}…'",
        ),
        ({"INPUT_BODY": "@/dev/zero"}, "body: '/dev/zero' is outside the workspace"),
        ({"INPUT_LABEL": "eu\udcff"}, "label: is not valid UTF-8 text"),
        (
            {"INPUT_GITHUB-TOKEN": "ghs_é"},
            "github-token: holds a character that is not ASCII at position 5",
        ),
    ],
    ids=[
        "api-key-not-ascii",
        "content-length",
        "timeout-huge",
        "body-dev-zero",
        "label-not-utf8",
        "token-not-ascii",
    ],
)
def test_action_hostile_input_exits_2_with_one_annotation(
    tmp_path: Path, demo: DemoServer, inputs: dict[str, str], message: str
) -> None:
    """The action meets the same hostile inputs with exit 2 and one ::error naming the input."""
    before = len(demo.records)
    run = run_action(tmp_path, demo.url, **inputs)
    assert run.code == 2, run.log
    errors = _errors(run.log)
    assert len(errors) == 1, run.log
    assert errors[0].startswith(
        f"::error title=latency-gate%3A invalid input::invalid input {message}"
    )
    assert "Nothing was measured." in run.summary
    assert len(demo.records) == before


def test_action_github_output_a_directory_exits_2_before_any_call(
    tmp_path: Path, demo: DemoServer
) -> None:
    """GITHUB_OUTPUT that names a folder: exit 2 naming it, nothing measured."""
    (tmp_path / "outdir").mkdir()
    before = len(demo.records)
    run = run_action(tmp_path, demo.url, GITHUB_OUTPUT=str(tmp_path / "outdir"))
    assert run.code == 2, run.log
    assert _errors(run.log) == [
        "::error title=latency-gate%3A invalid input::invalid input GITHUB_OUTPUT: cannot write "
        f"'{tmp_path}/outdir': it is a directory"
    ]
    assert "Nothing was measured." in run.summary
    assert len(demo.records) == before


def test_action_json_path_under_a_file_exits_2_before_any_call(
    tmp_path: Path, demo: DemoServer
) -> None:
    """json-path whose folder is a regular file: exit 2 naming json-path, nothing measured."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "blocker").write_text("")
    before = len(demo.records)
    run = run_action(tmp_path, demo.url, **{"INPUT_JSON-PATH": "blocker/result.json"})
    assert run.code == 2, run.log
    assert _errors(run.log) == [
        "::error title=latency-gate%3A invalid input::invalid input json-path: cannot write "
        f"'{tmp_path}/ws/blocker/result.json': '{tmp_path}/ws/blocker' is a file, not a folder"
    ]
    assert len(demo.records) == before


def test_action_json_path_with_a_line_break_exits_2_before_any_call(
    tmp_path: Path, demo: DemoServer
) -> None:
    """A json-path holding `\\n::error ...` is refused: it was written, then printed in the
    log's "wrote" line after commands resume, where the runner ran it."""
    before = len(demo.records)
    path = "a\n::error title=pwned::pwned\nb.json"
    run = run_action(tmp_path, demo.url, **{"INPUT_JSON-PATH": path})
    assert run.code == 2, run.log
    assert _errors(run.log) == [
        "::error title=latency-gate%3A invalid input::invalid input json-path: holds a control "
        "character at position 2 (a line break?); give a plain file name"
    ]
    assert [c for c in runner_commands(run.log) if "pwned" in c] == []
    assert list(run.workspace.iterdir()) == []
    assert len(demo.records) == before


def test_action_github_output_that_fails_late_keeps_every_other_output(
    tmp_path: Path, demo: DemoServer
) -> None:
    """GITHUB_OUTPUT on a full disk: other outputs and the verdict written, exit 2."""
    run = run_action(tmp_path, demo.url, GITHUB_OUTPUT="/dev/full")
    assert run.code == 2, run.log
    assert _errors(run.log) == [
        "::error title=latency-gate%3A output not written::GITHUB_OUTPUT: could not write "
        "'/dev/full': No space left on device; the verdict and the other outputs were written"
    ]
    assert "latency-gate: verdict PASS" in run.log
    assert "latency-gate: PASS" in run.summary
    result = json.loads((run.workspace / "latency-gate-report" / "result.json").read_text())
    assert result["verdict"]["passed"] is True


# --- wrong verdicts from bad answers -------------------------------------------------------------


def _response(status: str, content_type: str, body: bytes) -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
    return head.encode() + b"\r\n" + body


@pytest.mark.parametrize("size", [2_000, 1_300_000], ids=["small", "over-1MiB"])
def test_html_page_with_status_200_at_an_llm_endpoint_is_a_failed_call(
    tmp_path: Path, size: int
) -> None:
    """An HTML error page sent with 200 at a chat URL fails every call, whatever its size."""
    page = b"<!DOCTYPE html><html><body>" + b"x" * size + b"</body></html>"
    json_path = tmp_path / "r.json"
    # hostile_kit.paced closes its server on its own loop's thread (this test's own copy closed
    # it from the test's thread, and Server.close raced the loop: a TypeError in asyncio).
    with paced(lambda _request: [_response("200 OK", "text/html", page)]) as (base, _seen):
        result, _ = probe(base + CHAT, "--prompt", "hi", *FAST, "--json", str(json_path))
    assert result.exit_code == 1, result.output
    samples = json.loads(json_path.read_text())["samples"]
    assert {s["error"] for s in samples} == {"malformed"}
    assert "1 malformed" not in result.stdout  # every call, counted
    assert f"{len(samples)} malformed: the body" in result.stdout


def test_explicit_format_raw_is_kept_with_a_prompt(tmp_path: Path, demo: DemoServer) -> None:
    """--format raw --prompt: the prompt builds the body, the answer is not read as a chat."""
    json_path = tmp_path / "r.json"
    result, _ = probe(
        demo.url, "--format", "raw", "--prompt", "hi", *FAST, "--json", str(json_path)
    )
    assert result.exit_code == 0, result.output
    assert json.loads(json_path.read_text())["config"]["format"] == "raw"


def test_env_reference_in_an_inline_yaml_body_is_substituted_before_serialising(
    tmp_path: Path, demo: DemoServer
) -> None:
    """${VAR} with a quote and a line break stays one JSON string of an inline body."""
    prompt = 'say "hi"\nthen stop'
    path = tmp_path / "t.yml"
    path.write_text(
        "targets:\n  - name: a\n"
        f"    url: {demo.url}\n"
        "    body:\n      messages:\n        - role: user\n          content: ${LG_PROMPT}\n"
    )
    json_path = tmp_path / "r.json"
    result, _ = probe(
        "--targets", str(path), *FAST, "--json", str(json_path), env={"LG_PROMPT": prompt}
    )
    assert result.exit_code == 0, result.output
    body = json.dumps({"messages": [{"role": "user", "content": prompt}]})
    digest = hashlib.sha256(body.encode()).hexdigest()[:12]
    assert json.loads(json_path.read_text())["config"]["body"] == f"*** (sha256 {digest})"


# --- outputs before work -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--json", "{dir}/" + "x" * 300 + ".json"],
            "--json: cannot write '{dir}/" + "x" * 300 + ".json': File name too long",
        ),
        (
            ["--markdown", "r\x00.md"],
            "Invalid value for '--markdown': 'r\\x00.md' holds a NUL byte, which no file name can",
        ),
        (
            ["--json", "{dir}/same", "--markdown", "{dir}/same"],
            "--markdown: '{dir}/same' is also given to --json: give each its own file",
        ),
        (["--json", "{dir}"], "Invalid value for '--json': File '{dir}' is a directory."),
        (
            ["--markdown", "{dir}/file/r.md"],
            "--markdown: folder '{dir}/file' does not exist",
        ),
    ],
    ids=["name-too-long", "nul-byte", "same-file", "json-directory", "under-a-file"],
)
def test_report_files_are_checked_before_the_first_call(
    tmp_path: Path, demo: DemoServer, args: list[str], message: str
) -> None:
    """A report file that cannot be written is exit 2 before any call."""
    (tmp_path / "file").write_text("")
    before = len(demo.records)
    filled = [a.replace("{dir}", str(tmp_path)) for a in args]
    result, seconds = probe(demo.url, *filled)
    expected = message.replace("{dir}", str(tmp_path))
    if not expected.startswith("Invalid value"):  # click's own check comes first
        expected = f"invalid input {expected}"
    assert one_error(result) == f"Error: {expected}"
    assert seconds < 1.0
    assert len(demo.records) == before


def test_a_report_file_that_fails_after_the_run_still_shows_the_verdict(
    tmp_path: Path, demo: DemoServer
) -> None:
    """--json on a full disk (/dev/full): the verdict is printed, --markdown written, exit 2."""
    md_path = tmp_path / "r.md"
    result, _ = probe(demo.url, *FAST, "--json", "/dev/full", "--markdown", str(md_path))
    assert one_error(result) == (
        "Error: invalid input --json: could not write '/dev/full': No space left on device"
    )
    assert result.stdout.startswith("PASS: every gated number within budget")
    assert "PASS" in md_path.read_text()


# --- a terminal that says why, and a run that does not waste time --------------------------------


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


def test_masked_query_values_read_as_stars_everywhere(tmp_path: Path, demo: DemoServer) -> None:
    """?key=... is shown as ?key=*** in the JSON and the report, never %2A%2A%2A."""
    json_path, md_path = tmp_path / "r.json", tmp_path / "r.md"
    url = demo.url + "?key=sk-query-secret"
    result, _ = probe(url, *FAST, "--json", str(json_path), "--markdown", str(md_path))
    assert result.exit_code == 0, result.output
    everything = json_path.read_text() + md_path.read_text() + result.output
    assert "%2A" not in everything
    assert "sk-query-secret" not in everything
    assert json.loads(json_path.read_text())["config"]["url"] == demo.url + "?key=***"


def test_quick_hides_credentials_in_the_body_of_its_curl_line(demo: DemoServer) -> None:
    """A body with an api_key field and the key itself in base64: the curl line shows ***."""
    body = json.dumps(
        {
            "messages": [{"role": "user", "content": "hi"}],
            "api_key": "sk-body-secret-1",
            "note": base64.b64encode(b"sk-flag-key-22").decode(),
        }
    )
    result = CliRunner().invoke(
        cli.main, ["quick", demo.url, "-d", body, "--api-key", "sk-flag-key-22"]
    )
    assert result.exit_code == 0, result.output
    assert "sk-body-secret-1" not in result.output
    assert _recoverable(result.output, "sk-flag-key-22") == []
    assert '"api_key": "***"' in result.output
    assert '"note": "***"' in result.output


def test_readme_lists_every_option_quick_takes() -> None:
    """The CLI reference's paragraph on quick names each of its options, and only those (it was
    the README's until issue 39 moved it to docs/cli.md)."""
    readme = (REPO_ROOT / "docs" / "cli.md").read_text()
    paragraph = readme[readme.index("`latency-gate quick URL`") :].split("\n\n")[0]
    command = cli.main.commands["quick"]
    options = [
        param.opts[0] for param in command.params if param.opts[0].startswith("-") and param.name
    ]
    missing = [o for o in options if o not in paragraph and o.split("/")[0] not in paragraph]
    assert missing == []


def test_merge_of_the_same_file_twice_says_so(tmp_path: Path) -> None:
    """merge a.json a.json: exit 2 naming the file (each run would count twice)."""
    (tmp_path / "a.json").write_text(dump_runs([make_result("api")]))
    result = CliRunner().invoke(
        cli.main, ["merge", str(tmp_path / "a.json"), str(tmp_path / "a.json")]
    )
    assert one_error(result) == (
        f"Error: invalid input merge: '{tmp_path}/a.json' is given twice: each run would be "
        "counted twice"
    )


def test_merge_of_a_copied_file_warns(tmp_path: Path) -> None:
    """Two files with the very same run: merged, with a warning that it counts twice."""
    text = dump_runs([make_result("api")])
    (tmp_path / "a.json").write_text(text)
    (tmp_path / "b.json").write_text(text)
    result = CliRunner().invoke(
        cli.main, ["merge", str(tmp_path / "a.json"), str(tmp_path / "b.json")]
    )
    assert result.exit_code == 0, result.output
    assert result.stderr == (
        f"warning: '{tmp_path}/a.json' and '{tmp_path}/b.json' hold the same run of 'api' "
        "(a copied file?): it is counted twice\n"
    )
