"""Hostile input: options and action inputs refused before any call, with one message naming them.

Every case goes through the real CLI (click's CliRunner, or a subprocess where the process itself
matters: argv bytes, resource limits, a working directory that is gone) or the real action entry
point (`action.main` with an environ mapping): exit 2 within a second, one `Error: invalid input
<name>: <why>` line or one `::error` annotation, nothing sent. Report files are checked before the
first call. docs/faults.md, "Hostile input", says what each case did before its fix.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import REPO_ROOT, free_port
from hostile_data import _answer
from hostile_kit import CHAT, one_error, paced, run_cli
from hostile_probe import FAST, _errors, probe, run_action, runner_commands, subprocess_cli
from one_look import one_look_args

from latency_gate import cli
from latency_gate.demo import DemoServer, EndpointSpec, serve_in_thread


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoServer]:
    """A healthy streaming chat endpoint; `records` says whether anything reached it."""
    with serve_in_thread(EndpointSpec(latency=0.0, tokens=2, token_interval=0.0)) as (server,):
        yield server


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
        # files is tested in tests/test_hostile_files.py.
        "-d/--body: cannot read body file '/dev/zero': is a device, not a file",
    ),
]


def _vanishing_cwd(folder: Path) -> Callable[[], None]:
    def enter_and_remove() -> None:
        os.chdir(folder)
        os.rmdir(folder)

    return enter_and_remove


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


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--max-warm-p95", "nan"),
        ("--max-warm-p95", "inf"),
        ("--max-error-rate", "nan"),
        ("--max-error-rate", "-inf"),
        ("--timeout", "inf"),
        ("--wait-ready", "nan"),
        ("--max-regression", "nan%"),
    ],
)
def test_nan_and_infinity_in_numeric_options_are_exit_2(option: str, value: str) -> None:
    """NaN and infinity are no budget, duration or share: exit 2 naming the option (kept)."""
    args = ["probe", "http://127.0.0.1:9/", option, value]
    if option == "--max-regression":
        args += ["--baseline", "absent.json"]
    assert one_error(run_cli(*args)).startswith(f"Error: invalid input {option}: ")


@pytest.mark.parametrize("value", ["1", "100%", "0.99999999999999999", "99.999999999999999999%"])
def test_error_budget_of_everything_says_use_off(value: str) -> None:
    """An error-rate budget of 1 (or one that reads as 1.0) gates nothing: exit 2, "use off"
    (it was taken, and the run could not be decided)."""
    line = one_error(run_cli("probe", "http://127.0.0.1:9/", "--max-error-rate", value))
    assert line.startswith("Error: invalid input --max-error-rate: ")
    assert "lets every call fail, so it gates nothing: use off" in line
    assert ("reads as 1.0" in line) == ("9999" in value)


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("99999999999999999999", "99,999,999,999,999,999,999"),
        ("2147483648", "2,147,483,648"),
    ],
)
def test_max_tokens_beyond_what_a_server_reads_is_exit_2(value: str, said: str) -> None:
    """--max-tokens of 20 digits (or just past 2^31 - 1) is bad input naming the option (it was
    sent as written, and every call failed with the server's 400)."""
    with paced(_answer) as (base, seen):
        line = one_error(run_cli("probe", base + CHAT, "--prompt", "hi", "--max-tokens", value))
    assert seen.requests == []
    assert line == (
        "Error: invalid input --max-tokens: expected at most 2,147,483,647 (servers read it as "
        f"a 32-bit integer), got {said}"
    )


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
