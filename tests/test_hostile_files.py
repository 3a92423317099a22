"""Hostile input: files that are not what they seem.

FIFOs and devices given as any file option, a body file past 16 MiB, paths the action reads held to
the workspace once links are followed, runner files that are FIFOs, targets files that are alias
bombs, nested deep, huge, or hold numbers no parser takes, YAML surrogate escapes, and event
payloads nested 3,000 deep. docs/faults.md, "Hostile input", says what each case did before its fix.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO_ROOT
from hostile_kit import (
    CHAT,
    FAST,
    ONE_LOOK,
    action_error,
    http,
    judged,
    one_error,
    paced,
    run_action,
    run_cli,
)
from hostile_probe import probe

from latency_gate.demo import DemoServer, EndpointSpec, serve_in_thread
from latency_gate.results.history_folder import append_decision

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


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoServer]:
    """A healthy streaming chat endpoint; `records` says whether anything reached it."""
    with serve_in_thread(EndpointSpec(latency=0.0, tokens=2, token_interval=0.0)) as (server,):
        yield server


def _cli_process(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`python -m latency_gate ARGS` in a process of its own, killed after 30 s (a FIFO used to
    block it forever)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("LATENCY_GATE_")}
    environ["PYTHONPATH"] = str(REPO_ROOT)
    return subprocess.run(
        [sys.executable, "-m", "latency_gate", *args],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def _workspace_with_traps(tmp_path: Path) -> Path:
    """A workspace holding a FIFO, links out of it, and a targets file whose body leaves it."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (tmp_path / "outside.json").write_text('{"messages": []}', encoding="utf-8")
    os.mkfifo(workspace / "fifo")
    (workspace / "environ").symlink_to("/proc/self/environ")
    (workspace / "out.json").symlink_to(tmp_path / "outside.json")
    (workspace / "t.yml").write_text(
        "targets:\n  - name: a\n    url: http://127.0.0.1:9/v1/chat/completions\n"
        "    body: '@../outside.json'\n",
        encoding="utf-8",
    )
    return workspace


OUTSIDE = "is outside the workspace ({workspace}), once links are followed"


DEEP = 3_000  # levels of nesting: past Python's recursion limit for json.loads


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def _targets_file(tmp_path: Path, url: str, prompt_escaped: str) -> str:
    path = tmp_path / "targets.yaml"
    path.write_text(
        f'targets:\n  - name: a\n    url: {url}\n    prompt: "hi {prompt_escaped}"\n',
        encoding="utf-8",
    )
    return str(path)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["merge", "fifo"], "merge: cannot read 'fifo': is a FIFO (named pipe)"),
        (["probe", "{url}", "--baseline", "fifo"], "--baseline: cannot read 'fifo': is a FIFO"),
        (["probe", "{url}", "--json", "fifo"], "--json: cannot write 'fifo': it is a FIFO"),
        (["probe", "{url}", "--markdown", "fifo"], "--markdown: cannot write 'fifo': it is a FIFO"),
        (["probe", "{url}", "-d", "@fifo"], "-d/--body: cannot read body file '{cwd}/fifo': is a"),
        (["probe", "--targets", "fifo"], "targets: cannot read 'fifo': is a FIFO"),
        (
            ["probe", "{url}", "-d", "@/proc/self/environ"],
            "cannot read body file '/proc/self/environ': is a file of the kernel",
        ),
    ],
    ids=["merge", "baseline", "json", "markdown", "body", "targets", "proc-environ"],
)
def test_special_files_are_refused_without_blocking(
    demo: DemoServer, tmp_path: Path, args: list[str], said: str
) -> None:
    """A FIFO given to merge, --baseline, --json, --markdown, -d @ or --targets is exit 2 at
    once (each blocked forever), and /proc/self/environ is no body (the environment, tokens
    included, was sent to the endpoint)."""
    os.mkfifo(tmp_path / "fifo")
    before = len(demo.records)
    given = [a.format(url=demo.url, cwd=tmp_path) for a in args]
    started = time.monotonic()
    done = _cli_process(
        *given, "--no-floor" if given[0] == "probe" else "--json=r.json", cwd=tmp_path
    )
    assert time.monotonic() - started < 20
    assert done.returncode == 2, done.stdout + done.stderr
    assert said.format(cwd=tmp_path) in done.stderr
    assert "Traceback" not in done.stderr
    assert len(demo.records) == before


def test_body_file_past_16_mib_is_refused(tmp_path: Path) -> None:
    """A regular body file over 16 MiB (a sparse file) is still refused by its size."""
    with (tmp_path / "big.json").open("wb") as file:
        file.truncate(17 * 1024 * 1024)
    line = one_error(run_cli("probe", "http://127.0.0.1:9/", "-d", f"@{tmp_path / 'big.json'}"))
    assert "larger than 16 MiB: is it the file you meant?" in line


@pytest.mark.parametrize(
    ("inputs", "said"),
    [
        ({"body": "@/proc/self/environ"}, "body: '/proc/self/environ' " + OUTSIDE),
        ({"body": "@environ"}, "body: '{workspace}/environ' " + OUTSIDE),
        ({"body": "@out.json"}, "body: '{workspace}/out.json' " + OUTSIDE),
        ({"body": "@../outside.json"}, "body: '{workspace}/../outside.json' " + OUTSIDE),
        ({"body": "@fifo"}, "body: cannot read body file '{workspace}/fifo': is a FIFO"),
        ({"ca-bundle": "/etc/ssl/certs/ca-certificates.crt"}, "ca-bundle: '/etc/ssl/certs/"),
        ({"baseline": "../outside.json"}, "baseline: '{workspace}/../outside.json' " + OUTSIDE),
        ({"baseline": "fifo"}, "baseline: cannot read '{workspace}/fifo': is a FIFO"),
        ({"json-path": "fifo"}, "json-path: 'fifo' is not a regular file (a FIFO or a device?)"),
        ({"targets": "t.yml", "url": ""}, "t.yml:4: target 'a', body: '{workspace}/../outside"),
        ({"targets": "fifo", "url": ""}, "targets: cannot read '{workspace}/fifo': is a FIFO"),
    ],
    ids=[
        "proc",
        "link-to-proc",
        "link-out",
        "dot-dot",
        "fifo-body",
        "ca-bundle",
        "baseline-out",
        "baseline-fifo",
        "json-path-fifo",
        "targets-body",
        "targets-fifo",
    ],
)
def test_action_reads_only_regular_files_in_the_workspace(
    demo: DemoServer, tmp_path: Path, inputs: dict[str, str], said: str
) -> None:
    """Every path the action reads is held to the workspace after links are followed, and a
    FIFO is refused at once: exit 2, one ::error, nothing sent (`body: @/proc/self/environ`
    sent the runner's environment to the endpoint; a FIFO blocked the job)."""
    workspace = _workspace_with_traps(tmp_path)
    before = len(demo.records)
    given = {"url": demo.url, **ONE_LOOK, **inputs}
    started = time.monotonic()
    run = run_action(tmp_path, {k: v for k, v in given.items() if v})
    assert time.monotonic() - started < 10
    assert said.format(workspace=workspace.resolve()) in action_error(run)
    assert len(demo.records) == before


def test_action_output_file_that_is_a_fifo_is_refused_before_any_call(
    demo: DemoServer, tmp_path: Path
) -> None:
    """GITHUB_OUTPUT naming a FIFO is exit 2 before the first call (the run blocked at its end)."""
    os.mkfifo(tmp_path / "out-fifo")
    before = len(demo.records)
    run = run_action(
        tmp_path, {"url": demo.url, **ONE_LOOK}, {"GITHUB_OUTPUT": str(tmp_path / "out-fifo")}
    )
    assert run.code == 2, run.log
    assert "GITHUB_OUTPUT: cannot write" in run.log
    assert "it is a FIFO (named pipe), which could block the run" in run.log
    assert len(demo.records) == before


def test_runner_files_that_are_fifos_never_block_the_action(
    demo: DemoServer, tmp_path: Path
) -> None:
    """GITHUB_EVENT_PATH and GITHUB_STEP_SUMMARY naming FIFOs nothing writes or reads: the run
    ends, the event is read as no event and the summary is a warning (each blocked for ever)."""
    os.mkfifo(tmp_path / "event-fifo")
    os.mkfifo(tmp_path / "summary-fifo")
    fifos = {
        "GITHUB_EVENT_PATH": str(tmp_path / "event-fifo"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary-fifo"),
    }
    run = run_action(tmp_path, {"url": demo.url, "comment": "auto", **ONE_LOOK}, fifos)
    assert run.code == 0, run.log
    assert "latency-gate: not a pull request event (push): no PR comment" in run.log
    assert "::warning::could not write the job summary" in run.log


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


@pytest.mark.parametrize(
    ("name", "text", "said"),
    [
        (
            "t.json",
            '{"targets": [{"name": "a", "url": "http://127.0.0.1:9/", "warm-calls": '
            + "9" * 5000
            + "}]}",
            "t.json: holds a number of more than 4,300 digits",
        ),
        (
            "t.yml",
            "targets:\n  - name: a\n    url: http://127.0.0.1:9/\n    warm-calls: "
            + "9" * 5000
            + "\n",
            "t.yml: holds a number of more than 4,300 digits",
        ),
        (
            "t.toml",
            '[[targets]]\nname = "a"\nurl = "http://127.0.0.1:9/"\nwarm-calls = ' + "9" * 5000,
            "t.toml: holds a number of more than 4,300 digits",
        ),
        (
            "t.yml",
            "targets:\n  - name: a\n    url: http://127.0.0.1:9/v1/chat/completions\n"
            "    body: {messages: [{role: user, content: hi}], temperature: .nan}\n",
            "t.yml:4: target 'a', body: holds NaN or an infinite number",
        ),
        (
            "t.toml",
            '[[targets]]\nname = "a"\nurl = "http://127.0.0.1:9/v1/chat/completions"\n'
            'body = {messages = [{role = "user", content = "hi"}], top_p = inf}\n',
            "t.toml:4: target 'a', body: holds NaN or an infinite number",
        ),
    ],
    ids=["json-digits", "yaml-digits", "toml-digits", "yaml-nan-body", "toml-inf-body"],
)
def test_targets_file_numbers_no_parser_takes_are_exit_2(
    tmp_path: Path, name: str, text: str, said: str
) -> None:
    """A targets file with a 5,000-digit number (JSON, YAML, TOML: exit 3 from Python's int()
    limit) or a body holding .nan/inf (sent as NaN/Infinity) is exit 2 naming the file."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    assert said in one_error(run_cli("probe", "--targets", str(path), "--no-floor"))


def test_a_yaml_surrogate_pair_escape_is_the_character_it_encodes(tmp_path: Path) -> None:
    """`"\\uD83D\\uDE00"` in a YAML targets file was refused as "not valid UTF-8 text (check the
    shell's encoding)": PyYAML leaves the two halves apart, as JSON's reader does not. The pair
    is now the one character it encodes, and that is what is sent."""

    def answer(_: bytes) -> list[bytes]:
        return [http("200 OK", b'{"choices": [{"message": {"content": "ok"}}]}')]

    with paced(answer) as (base, seen):
        path = _targets_file(tmp_path, base + CHAT, "\\uD83D\\uDE00")
        judged(run_cli("probe", "--targets", path, *FAST, "--on-undecided", "pass"))
    assert seen.requests
    assert all('hi \\ud83d\\ude00"' in r.decode() for r in seen.requests), seen.requests[0]


def test_half_a_surrogate_pair_in_a_file_names_the_file_not_the_shell(tmp_path: Path) -> None:
    """A lone `\\uD83D` in a targets file is named as what it is, at its line."""
    path = _targets_file(tmp_path, "http://127.0.0.1:9/v1/chat/completions", "\\uD83D")
    assert one_error(run_cli("probe", "--targets", path)) == (
        "Error: invalid input targets.yaml:4: targets[0].prompt: holds \\uD83D, half of a UTF-16 "
        "surrogate pair, which is no character: write the character itself, or both halves of "
        "its pair"
    )


@pytest.mark.parametrize(
    ("event", "payload"),
    [
        ("push", '{"repository": {"default_branch": "main"}, "x": ' + _nested(DEEP) + "}"),
        (
            "repository_dispatch",
            '{"action": "go", "client_payload": ' + _nested(DEEP) + "}",
        ),
    ],
    ids=["push", "repository-dispatch"],
)
def test_a_deep_event_payload_is_ignored_and_the_outputs_written(
    demo: DemoServer, tmp_path: Path, event: str, payload: str
) -> None:
    """An event payload nested 3,000 deep exited 3 after a PASS with $GITHUB_OUTPUT empty: the
    readers caught only OSError and ValueError. It is now ignored as invalid JSON is."""
    path = tmp_path / "deep.json"
    path.write_text(payload, encoding="utf-8")
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": event,
        "GITHUB_EVENT_PATH": str(path),
        "GITHUB_REF": "refs/heads/main",
    }
    inputs = {"url": demo.url, "prompt": "Hi", **ONE_LOOK}
    inputs |= {"history": "h", "history-append": "auto", "comment": "always"}
    run = run_action(tmp_path, inputs, env)
    assert run.code == 0, run.log
    assert "verdict=PASS" in run.outputs
    assert "passed=true" in run.outputs
    assert "bug" not in run.log
    assert "latency-gate: history not appended: " in run.log


def test_a_deep_payload_names_no_default_branch(tmp_path: Path) -> None:
    """The history's reader alone: a deep payload reads as no payload."""
    path = tmp_path / "deep.json"
    path.write_text('{"repository": {"default_branch": "main"}, "x": ' + _nested(DEEP) + "}")
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "push",
        "GITHUB_EVENT_PATH": str(path),
        "GITHUB_REF": "refs/heads/main",
    }
    assert append_decision("auto", env) == (
        False,
        "not appended: the event payload names no default branch",
    )
