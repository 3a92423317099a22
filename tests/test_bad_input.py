"""Bad input at every edge: CLI options, action inputs (INPUT_*) and targets files.

Each case must end with exit 2 and one message that names the input and says what was
expected: no traceback, no request to the endpoint (a live demo server counts them) and no
request to GitHub (a live fake GitHub counts them). tests/test_config.py checks the parser's
messages one by one; this table checks the same promise end to end, through each surface.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import trustme
from click.testing import CliRunner
from fake_github import FakeGitHub

from latency_gate import action, cli
from latency_gate.demo import DemoServer, EndpointSpec, serve_in_thread

CHAT = "/v1/chat/completions"


@dataclass(frozen=True)
class World:
    """The live endpoint and GitHub a bad input must never reach, and a folder of files."""

    server: DemoServer
    github: FakeGitHub
    files: Path

    @property
    def url(self) -> str:
        return self.server.base_url + CHAT

    def touched(self) -> list[str]:
        """Every request either side saw, described; empty when nothing was measured or posted."""
        seen = [f"endpoint {r.method} {r.path}" for r in self.server.records]
        seen += [f"github {r.method} {r.path}" for r in self.github.requests]
        seen += [f"endpoint connection {n}" for n in range(self.server.connections)]
        return seen


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    files = tmp_path_factory.mktemp("inputs")
    trustme.CA().cert_pem.write_to_path(str(files / "ca.pem"))
    (files / "garbage.pem").write_text("not a certificate, but a readable file\n")
    (files / "latin1.json").write_bytes(b'{"messages": "caf\xe9"}')
    (files / "folder").mkdir()
    for name, text in TARGETS_FILES.items():
        (files / name).write_bytes(text.encode() if isinstance(text, str) else text)
    spec = EndpointSpec(stream_format="openai-chat")
    with serve_in_thread(spec) as (server,), FakeGitHub() as github:
        yield World(server, github, files)


# Targets files, one fault each (the URLs are never reached: nothing may be measured).
TARGETS_FILES: dict[str, str | bytes] = {
    "unclosed.yml": "targets: [\n",
    "not-a-list.yml": "targets: {a: 1}\n",
    "no-url.yml": "targets:\n  - name: a\n    prompt: hi\n",
    "negative.yml": "targets:\n  - name: a\n    url: http://127.0.0.1:1/\n    warm-calls: -2\n",
    "unknown-key.yml": "targets:\n  - name: a\n    url: http://127.0.0.1:1/\n    colour: red\n",
    "unset-env.yml": (
        "targets:\n  - name: a\n    url: http://127.0.0.1:1/\n    api-key: ${LG_UNSET_VAR_X}\n"
    ),
    "empty.yml": "targets: []\n",
    "broken.json": '{"targets": [',
    "targets.ini": "x = 1\n",
    "number.toml": "targets = 3\n",
    "same-name.yml": (
        "targets:\n  - name: a\n    url: http://127.0.0.1:1/\n"
        "  - name: a\n    url: http://127.0.0.1:2/\n"
    ),
    "binary.yml": b"\xff\xfe",
}

# (id, file, the message expected, naming the file and where in it)
TARGETS_CASES: list[tuple[str, str, str]] = [
    ("yaml-syntax", "unclosed.yml", "unclosed.yml:2: not valid YAML"),
    ("not-a-list", "not-a-list.yml", "not-a-list.yml:1: targets: expected a list of targets"),
    ("no-url", "no-url.yml", "no-url.yml:2: target 'a', url: required: the endpoint to probe"),
    (
        "negative-count",
        "negative.yml",
        "negative.yml:4: target 'a', warm-calls: expected a whole number of at least 1, got -2",
    ),
    ("unknown-key", "unknown-key.yml", "unknown-key.yml:4: target 'a', colour: unknown setting"),
    (
        "unset-env",
        "unset-env.yml",
        "unset-env.yml:4: target 'a', api-key: environment variable LG_UNSET_VAR_X is not set",
    ),
    ("empty-list", "empty.yml", "empty.yml:1: targets: expected a list of targets"),
    ("json-syntax", "broken.json", "broken.json:1: not valid JSON"),
    ("unknown-suffix", "targets.ini", "expected a .yml, .yaml, .toml or .json file, got '.ini'"),
    ("toml-number", "number.toml", "number.toml:1: targets: expected a list of targets"),
    ("same-name", "same-name.yml", "same-name.yml:4: target 'a', name: the name is already used"),
    ("not-utf8", "binary.yml", "codec can't decode byte 0xff"),
    ("missing", "absent.yml", "No such file or directory"),
]


# --- the CLI ----------------------------------------------------------------------------------

# (id, arguments after `probe`, with {url} and {files} filled in, the message expected on stderr)
CLI_CASES: list[tuple[str, list[str], str]] = [
    ("warm-calls-word", ["{url}", "--warm-calls", "abc"], "--warm-calls: expected a whole number"),
    (
        "warm-calls-zero",
        ["{url}", "--warm-calls", "0"],
        "--warm-calls: expected a whole number of at least 1, got 0",
    ),
    (
        "concurrency-negative",
        ["{url}", "--concurrency", "-3"],
        "--concurrency: expected a whole number of at least 1, got -3",
    ),
    (
        "concurrency-fraction",
        ["{url}", "--concurrency", "1.5"],
        "--concurrency: expected a whole number, got '1.5'",
    ),
    ("timeout-zero", ["{url}", "--timeout", "0"], "--timeout: expected a duration above zero"),
    ("timeout-negative", ["{url}", "--timeout", "-1s"], "--timeout: expected a duration such as"),
    ("timeout-hours", ["{url}", "--timeout", "3h"], "--timeout: expected a duration such as"),
    ("idle-word", ["{url}", "--idle", "soon"], "--idle: expected a duration such as"),
    ("budget-word", ["{url}", "--max-warm-p95", "fast"], "--max-warm-p95: expected a duration"),
    (
        "ttft-zero",
        ["{url}", "--max-ttft-p95", "0ms"],
        "--max-ttft-p95: expected a duration above zero",
    ),
    (
        "error-rate-over-100",
        ["{url}", "--max-error-rate", "150%"],
        "--max-error-rate: expected a fraction between 0 and 1",
    ),
    (
        "error-rate-negative",
        ["{url}", "--max-error-rate", "-0.1"],
        "--max-error-rate: expected a fraction between 0 and 1",
    ),
    ("format-unknown", ["{url}", "--format", "grpc"], "--format: expected one of auto, "),
    ("url-ftp", ["ftp://127.0.0.1/x"], "URL: expected an http:// or https:// URL"),
    ("url-no-host", ["http://"], "URL: the URL has no host"),
    ("url-bad-port", ["http://127.0.0.1:99999/"], "URL: not a valid URL"),
    ("url-space", ["http://127.0.0.1/a b"], "URL: the URL contains white space"),
    ("url-missing", ["--warm-calls", "2"], "URL: required: the endpoint to probe"),
    ("header-no-colon", ["{url}", "-H", "NoColon"], "-H/--header: expected 'Name: value'"),
    ("header-bad-name", ["{url}", "-H", "Bad Name: v"], "-H/--header: 'Bad…' is not a valid"),
    ("body-missing-file", ["{url}", "-d", "@{files}/absent.json"], "-d/--body: cannot read body"),
    ("body-folder", ["{url}", "-d", "@{files}/folder"], "-d/--body: cannot read body file"),
    ("body-not-utf8", ["{url}", "-d", "@{files}/latin1.json"], "-d/--body: cannot read body"),
    ("body-not-json", ["{url}", "-d", "{not json"], "-d/--body: the openai-chat format needs"),
    ("body-not-object", ["{url}", "-d", "plain"], "-d/--body: the openai-chat format needs a JSON"),
    ("body-and-prompt", ["{url}", "-d", "{}", "--prompt", "hi"], "--prompt: give either -d/--b"),
    (
        "ca-bundle-missing",
        ["{url}", "--ca-bundle", "{files}/absent.pem"],
        "--ca-bundle: no readable file",
    ),
    ("ca-bundle-folder", ["{url}", "--ca-bundle", "{files}"], "--ca-bundle: no readable file"),
    (
        "ca-bundle-not-pem",
        ["{url}", "--ca-bundle", "{files}/garbage.pem"],
        "--ca-bundle: '{files}/garbage.pem' holds no usable PEM certificate",
    ),
    (
        "ca-bundle-and-insecure",
        ["{url}", "--ca-bundle", "{files}/ca.pem", "--insecure"],
        "--insecure: contradicts --ca-bundle: pick one",
    ),
    ("method-with-path", ["{url}", "-X", "GET /x"], "-X/--method: expected an HTTP method"),
    ("name-empty", ["{url}", "--name", " "], "--name: expected a name, got an empty string"),
    (
        "json-folder-missing",
        ["{url}", "--json", "{files}/absent/out.json"],
        "--json: folder ",
    ),
    (
        "markdown-folder-missing",
        ["{url}", "--markdown", "{files}/absent/report.md"],
        "--markdown: folder ",
    ),
    ("unknown-option", ["{url}", "--colour", "red"], "No such option '--colour'"),
    ("flag-with-value", ["{url}", "--insecure=yes"], "Option '--insecure' does not take a value"),
]


@pytest.mark.parametrize(
    ("args", "message"), [c[1:] for c in CLI_CASES], ids=[c[0] for c in CLI_CASES]
)
def test_bad_cli_input_exits_2_with_one_message(
    world: World, args: list[str], message: str
) -> None:
    """Exit 2, stderr names the option and what was expected, nothing measured."""
    filled = [a.replace("{url}", world.url).replace("{files}", str(world.files)) for a in args]
    result = CliRunner().invoke(cli.main, ["probe", *filled], env={"LATENCY_GATE_API_KEY": None})
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, result.stderr
    assert message.replace("{files}", str(world.files)) in errors[0]
    assert world.touched() == []


@pytest.mark.parametrize(
    ("name", "message"), [c[1:] for c in TARGETS_CASES], ids=[c[0] for c in TARGETS_CASES]
)
def test_bad_targets_file_exits_2_naming_file_and_line(
    world: World, name: str, message: str
) -> None:
    """--targets FILE with a fault: exit 2, one message with the file and line, nothing run."""
    args = ["probe", "--targets", str(world.files / name), "--no-floor"]
    result = CliRunner().invoke(cli.main, args, env={"LG_UNSET_VAR_X": None})
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("Error: invalid input ")
    assert message in result.stderr
    assert world.touched() == []


def test_targets_file_and_url_together_is_refused(world: World) -> None:
    """A URL beside --targets contradicts it: exit 2 naming both."""
    args = ["probe", world.url, "--targets", str(world.files / "negative.yml")]
    result = CliRunner().invoke(cli.main, args)
    assert result.exit_code == 2
    assert result.stderr == "Error: invalid input --targets: give URL or --targets, not both\n"
    assert world.touched() == []


def test_several_bad_options_are_one_message_listing_each(world: World) -> None:
    """Three bad options: one message, one line per option, still exit 2."""
    args = ["probe", world.url, "--warm-calls", "0", "--timeout", "x", "--format", "grpc"]
    result = CliRunner().invoke(cli.main, args)
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "Error: 3 invalid inputs:",
        "  - --format: expected one of auto, openai-chat, openai-responses, anthropic, raw; "
        "got 'grpc'",
        "  - --timeout: expected a duration such as 3s, 250ms or 3.0 (seconds), got 'x'",
        "  - --warm-calls: expected a whole number of at least 1, got 0",
    ]
    assert world.touched() == []


# --- the action -----------------------------------------------------------------------------

# (id, INPUT_* values given beside url and github-token, the message expected)
ACTION_CASES: list[tuple[str, dict[str, str], str]] = [
    ("warm-calls-word", {"warm-calls": "zero"}, "warm-calls: expected a whole number"),
    ("concurrency-zero", {"concurrency": "0"}, "concurrency: expected a whole number of at least"),
    (
        "comment-mode",
        {"comment": "sometimes"},
        "comment: expected one of auto, always, on-failure, never; got 'sometimes'",
    ),
    ("summary-yes-no", {"summary": "maybe"}, "summary: expected true or false, got 'maybe'"),
    ("fail-on-breach", {"fail-on-breach": "2"}, "fail-on-breach: expected true or false"),
    ("url-not-url", {"url": "not a url"}, "url: expected an http:// or https:// URL"),
    ("header-no-colon", {"headers": "Authorization Bearer x"}, "headers: expected 'Name: value'"),
    ("budget-negative", {"max-concurrent-p95": "-2s"}, "max-concurrent-p95: expected a duration"),
    ("body-missing-file", {"body": "@absent.json"}, "body: cannot read body file"),
    ("format-unknown", {"format": "xml"}, "format: expected one of auto, openai-chat"),
    ("timeout-zero", {"timeout": "0s"}, "timeout: expected a duration above zero"),
    ("unknown-input", {"colour": "red"}, "colour: unknown input"),
    (
        "insecure-and-ca",
        {"insecure": "true", "ca-bundle": "{files}/ca.pem"},
        "insecure: contradicts ca-bundle: pick one",
    ),
    ("error-rate-2", {"max-error-rate": "2"}, "max-error-rate: expected a fraction between 0"),
    ("stream-word", {"stream": "sometimes"}, "stream: expected true or false"),
    ("body-not-json", {"body": "{oops"}, "body: the openai-chat format needs a JSON body"),
    (
        "targets-and-url",
        {"targets": "{files}/negative.yml"},
        "targets: give `url` or `targets`, not both",
    ),
    ("targets-yaml", {"targets": "{files}/unclosed.yml", "url": ""}, "unclosed.yml:2: not valid"),
    (
        "targets-count",
        {"targets": "{files}/negative.yml", "url": ""},
        "negative.yml:4: target 'a', warm-calls: expected a whole number of at least 1",
    ),
]


def _run_action(world: World, tmp_path: Path, inputs: dict[str, str]) -> tuple[int, str, str]:
    """The action on a pull_request event with these inputs; (exit code, log, summary)."""
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"number": 7, "pull_request": {"number": 7}}))
    summary, output = tmp_path / "summary.md", tmp_path / "output"
    summary.touch()
    output.touch()
    given = {"url": world.url, "github-token": world.github.token, **inputs}
    env = {f"INPUT_{k.upper()}": v.replace("{files}", str(world.files)) for k, v in given.items()}
    env |= {
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_REPOSITORY": world.github.repository,
        "GITHUB_API_URL": world.github.url,
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_OUTPUT": str(output),
        # The files the inputs name are in the workspace: the action reads no other.
        "GITHUB_WORKSPACE": str(world.files),
    }
    out = io.StringIO()
    code = action.main(env, out=out)
    assert output.read_text() == ""  # no outputs for a run that never happened
    return code, out.getvalue(), summary.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("inputs", "message"), [c[1:] for c in ACTION_CASES], ids=[c[0] for c in ACTION_CASES]
)
def test_bad_action_input_exits_2_with_one_annotation(
    world: World, tmp_path: Path, inputs: dict[str, str], message: str
) -> None:
    """Exit 2, one ::error naming the input, the summary says nothing was measured."""
    code, log, summary = _run_action(world, tmp_path, inputs)
    assert code == 2, log
    assert "Traceback" not in log
    errors = [line for line in log.splitlines() if line.startswith("::error")]
    assert len(errors) == 1, log
    assert errors[0].startswith("::error title=latency-gate%3A invalid input::invalid input ")
    assert message in errors[0]
    assert "Nothing was measured." in summary
    assert message in summary
    assert world.touched() == []
