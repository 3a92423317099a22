"""`latency-gate quick URL` against real loopback servers: three calls, curl's phases, the curl
line to repeat one by hand with secrets elided, and the exit code."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from latency_gate.cli import main
from latency_gate.config import build_target
from latency_gate.demo import DemoServer, EndpointSpec, Fault, classic_three, serve_in_thread
from latency_gate.measure.prompts import vary_body
from latency_gate.measure.quick import quick
from latency_gate.report.quick import curl_command

LOCAL = classic_three()[0]
SECONDS = re.compile(r"\b\d+\.\d{6}\b")
PORT = re.compile(r"127\.0\.0\.1:\d+")
NONCE = re.compile(r" \[[0-9a-f]{6}\]")


def _normalize(text: str) -> str:
    """Timings, the port and the prompts' nonces replaced by placeholders."""
    text = SECONDS.sub("S", text)
    text = PORT.sub("127.0.0.1:PORT", text)
    return NONCE.sub(" [NONCE]", text)


@pytest.fixture
def local_url() -> Iterator[str]:
    """The healthy local demo endpoint's URL, served from a thread."""
    with serve_in_thread(LOCAL) as servers:
        yield servers[0].url


def _table(out: str) -> list[list[str]]:
    """The rows of the calls table, split on runs of spaces."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("call  status"))
    rows = []
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        rows.append(line.split())
    return rows


def test_quick_prints_three_calls_and_the_curl_line(local_url: str) -> None:
    """Three successful calls with curl's phases; exact text once timings are normalized."""
    result = CliRunner().invoke(main, ["quick", local_url, "--prompt", "Hello", "--stream"])
    assert result.exit_code == 0, result.output
    assert _normalize(result.output) == (
        "quick check of POST http://127.0.0.1:PORT/v1/chat/completions: 3 calls, each on a new "
        "connection, each with its own prompt\n"
        "\n"
        "call  status  namelookup  connect   appconnect  starttransfer  total     first token\n"
        "1     200     S    S  S    S       S  S\n"
        "2     200     S    S  S    S       S  S\n"
        "3     200     S    S  S    S       S  S\n"
        "\n"
        "Seconds from the start of each call, cumulative like curl -w: namelookup (DNS), "
        "connect (+TCP), appconnect (+TLS; 0 without TLS), starttransfer (the first response "
        "byte), total (the last byte).\n"
        "\n"
        "Repeat one by hand (secrets shown as ***: put yours back):\n"
        "\n"
        "  curl -sS -o /dev/null -w 'namelookup    %{time_namelookup}\\nconnect       "
        "%{time_connect}\\nappconnect    %{time_appconnect}\\nstarttransfer "
        "%{time_starttransfer}\\ntotal         %{time_total}\\n' -X POST -H 'Content-Type: "
        "application/json' -H 'Accept: text/event-stream' --data-raw '{\"messages\": "
        '[{"role": "user", "content": "Hello [NONCE]"}], "max_tokens": 64, '
        '"stream_options": {"include_usage": true}, "stream": true}\' --max-time 30 '
        "http://127.0.0.1:PORT/v1/chat/completions\n"
        "\n"
        "3 of 3 calls succeeded.\n"
    )


def test_quick_phases_are_cumulative_and_plausible(local_url: str) -> None:
    """Each row: connect <= starttransfer <= first token <= total, total 20-500 ms."""
    result = CliRunner().invoke(main, ["quick", local_url, "--prompt", "Hello", "--stream"])
    assert result.exit_code == 0, result.output
    for row in _table(result.output):
        namelookup, connect, appconnect, start, total, token = map(float, row[2:])
        assert namelookup <= connect <= start <= token <= total
        assert appconnect == 0.0
        assert 0.02 <= total <= 0.5


def test_quick_makes_three_calls_on_three_connections() -> None:
    """Three calls, three connections: each call pays its own handshake, as curl's would."""
    with serve_in_thread(LOCAL) as servers:
        result = CliRunner().invoke(main, ["quick", servers[0].url, "--prompt", "Hi"])
        assert result.exit_code == 0, result.output
        assert len(servers[0].records) == 3
        assert [r.connection for r in servers[0].records] == [1, 2, 3]


async def test_quick_sends_three_different_prompts() -> None:
    """The three bodies differ only in the nonce added to the user's prompt."""
    bodies: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(re.search(rb"(?i)content-length: (\d+)", head).group(1))  # type: ignore[union-attr]
        bodies.append(await reader.readexactly(length))
        answer = b'{"choices": [{"message": {"role": "assistant", "content": "hi"}}]}'
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
            b"Content-Length: " + str(len(answer)).encode() + b"\r\n\r\n" + answer
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        target = build_target(
            {"url": f"http://127.0.0.1:{port}/v1/chat/completions", "prompt": "Hello"}
        )
        result = await quick(target)
    assert result.passed
    prompts = [json.loads(body)["messages"][-1]["content"] for body in bodies]
    assert len(set(prompts)) == 3
    assert all(re.fullmatch(r"Hello \[[0-9a-f]{6}\]", prompt) for prompt in prompts)


def test_quick_exits_one_when_a_call_fails() -> None:
    """The second call answered 500: exit 1, the failure named under the table."""
    spec = LOCAL.model_copy(update={"faults": (Fault(kind="status", every=3, offset=1),)})
    with serve_in_thread(spec) as servers:
        result = CliRunner().invoke(main, ["quick", servers[0].url, "--prompt", "Hello"])
    assert result.exit_code == 1, result.output
    rows = _table(result.output)
    assert [row[1] for row in rows] == ["200", "500", "200"]
    assert rows[1][6] == "—"  # no total for a failed call
    assert (
        "call 2 failed: http_5xx: HTTP 500: "
        '{"error": {"message": "The server had an error", "type": "server_error", '
        '"code": null}}' in result.output
    )
    assert result.output.endswith("2 of 3 calls succeeded.\n")


def test_quick_exits_one_when_nothing_listens() -> None:
    """A refused connection: three failures, exit 1, no traceback."""
    result = CliRunner().invoke(main, ["quick", "http://127.0.0.1:9/", "--timeout", "2s"])
    assert result.exit_code == 1, result.output
    assert result.output.count("failed: connection_refused") == 3
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "URL: required"),
        (["ftp://127.0.0.1/"], "URL"),
        (["http://127.0.0.1:9/", "--timeout", "soon"], "--timeout"),
    ],
)
def test_quick_bad_input_exits_two(args: list[str], message: str) -> None:
    """Bad input: exit 2 with a message naming the input, no call made."""
    result = CliRunner().invoke(main, ["quick", *args])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output


def test_quick_never_prints_a_secret() -> None:
    """API key, header value and query value are elided everywhere, in the curl line too."""
    with serve_in_thread(LOCAL) as servers:
        url = servers[0].url + "?key=query-secret-1"
        result = CliRunner().invoke(
            main,
            [
                "quick",
                url,
                "--prompt",
                "Hello",
                "--api-key",
                "sk-secret-key-2",
                "-H",
                "X-Team-Token: header-secret-3",
            ],
        )
    assert result.exit_code == 0, result.output
    for secret in ("query-secret-1", "sk-secret-key-2", "header-secret-3"):
        assert secret not in result.output
    assert "-H 'Authorization: Bearer ***'" in result.output
    assert "-H 'X-Team-Token: ***'" in result.output
    assert "/v1/chat/completions?key=***'" in result.output


def test_curl_line_elides_anthropic_key_and_secrets_in_the_body() -> None:
    """x-api-key is elided; a secret that appears in the body is elided there too."""
    target = build_target(
        {
            "url": "https://api.example.invalid/v1/messages",
            "api-key": "sk-ant-secret-4",
            "body": '{"messages": [{"role": "user", "content": "sk-ant-secret-4"}]}',
            "format": "anthropic",
        }
    )
    line = curl_command(target)
    assert "sk-ant-secret-4" not in line
    assert "-H 'x-api-key: ***'" in line
    assert "-H 'anthropic-version: 2023-06-01'" in line
    assert '"content": "***"' in line


def test_raw_endpoint_gets_the_same_request_three_times() -> None:
    """A raw endpoint (no prompt to vary): three plain calls, said so."""
    spec = EndpointSpec(name="raw", latency=0.01, stream_format="raw", tokens=2)
    with serve_in_thread(spec) as servers:
        result = CliRunner().invoke(main, ["quick", servers[0].url])
    assert result.exit_code == 0, result.output
    assert "3 calls, each on a new connection, the same request each time" in result.output
    assert "No prompt found" not in result.output
    assert len(_table(result.output)) == 3


def test_vary_body_marks_the_last_user_message_in_parts() -> None:
    """Content given as parts: the last text part of the last user message gets the mark."""
    body = json.dumps(
        {
            "messages": [
                {"role": "user", "content": "first"},
                {"role": "assistant", "content": "ok"},
                {"role": "user", "content": [{"type": "text", "text": "second"}]},
            ]
        }
    )
    target = build_target({"url": "http://127.0.0.1:9/v1/chat/completions", "body": body})
    varied, ok = vary_body(target, "abc123")
    assert ok
    assert varied is not None
    messages = json.loads(varied)["messages"]
    assert messages[0]["content"] == "first"
    assert messages[2]["content"][0]["text"] == "second [abc123]"


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
async def test_the_curl_line_runs_and_prints_curls_phases() -> None:
    """The printed curl line, run by a shell, reaches the endpoint and prints the five phases."""
    async with DemoServer(LOCAL) as server:
        target = build_target({"url": server.url, "prompt": "Hello", "stream": "true"})
        line = curl_command(target)
        process = await asyncio.create_subprocess_exec(
            "bash", "-c", line, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        out, err = await asyncio.wait_for(process.communicate(), timeout=20)
    assert process.returncode == 0, err
    names = [line.split()[0] for line in out.decode().splitlines()]
    assert names == ["namelookup", "connect", "appconnect", "starttransfer", "total"]
    assert len(server.records) == 1
    assert server.records[0].stream
