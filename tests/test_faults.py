"""Endpoint faults on real loopback servers, driven through the `latency-gate probe` command.

Each fault runs the real CLI in a subprocess (bounded by a timeout, so a hang fails the test
instead of the suite) against a demo server that misbehaves on purpose, a raw socket, or a TLS
server with a trustme certificate. For each: the run completes, every call is an error of the
expected ErrorKind, the JSON and Markdown reports are written, and the exit code is 1, never 3.
The cases that should work (redirects followed, HTTP/1.0, gzip, a CA bundle, --insecure) exit 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import os
import socket
import ssl
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import trustme
from conftest import REPO_ROOT, free_port
from one_look import one_look, one_look_args, other_warnings

from latency_gate.config import build_target
from latency_gate.demo import EndpointSpec, Fault, serve_in_thread
from latency_gate.models import ErrorKind, RunResult
from latency_gate.run import probe

# Small runs: 1 cold + 1 warm + 2 concurrent calls, each allowed TIMEOUT seconds.
TIMEOUT = 1.0
CALLS = 4
# One look of CALLS calls: these tests are about how a fault is counted, not about sampling
# until the verdict is decided (tests/one_look.py).
SMALL_RUN = (
    "--no-floor",
    "--warm-calls",
    "1",
    "--concurrency",
    "2",
    "--timeout",
    f"{TIMEOUT}s",
    *one_look_args(CALLS),
)
# The hang guard: no run here may take longer (start-up included); a stuck one fails the test.
CLI_TIMEOUT = 60.0
# cold + warm + the burst's pre-connect + the burst: the most --timeout waits a run can add up.
TIMEOUT_WAITS = 4
# What a run does inside its span besides waiting (its requests built, its calls read).
SPAN_SLACK = 3.0


@dataclass(frozen=True)
class CliRun:
    """One finished `latency-gate probe` run: exit code, output and the reports it wrote."""

    code: int
    stdout: str
    stderr: str
    seconds: float
    json_path: Path
    markdown_path: Path

    @property
    def result(self) -> RunResult:
        return RunResult.model_validate_json(self.json_path.read_text(encoding="utf-8"))

    @property
    def markdown(self) -> str:
        return self.markdown_path.read_text(encoding="utf-8")


def cli_env() -> dict[str, str]:
    """The environment for a CLI subprocess: this checkout first on the path, no API key."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LATENCY_GATE_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    return env


def run_probe(tmp_path: Path, url: str, *args: str) -> CliRun:
    """Run `latency-gate probe URL ARGS --json --markdown` in a subprocess, bounded in time."""
    json_path, markdown_path = tmp_path / "result.json", tmp_path / "report.md"
    command = [sys.executable, "-m", "latency_gate", "probe", url, *args]
    command += ["--json", str(json_path), "--markdown", str(markdown_path)]
    started = time.monotonic()
    done = subprocess.run(
        command,
        cwd=tmp_path,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT,
        check=False,
    )
    return CliRun(
        done.returncode,
        done.stdout,
        done.stderr,
        time.monotonic() - started,
        json_path,
        markdown_path,
    )


def assert_breach(run: CliRun, kind: ErrorKind) -> RunResult:
    """Exit 1 with both reports written and every call an error of `kind`."""
    assert "Traceback" not in run.stderr, run.stderr
    assert run.code == 1, run.stderr
    result = run.result
    assert len(result.samples) == CALLS
    assert [s.error for s in result.samples] == [kind] * CALLS
    assert not result.verdict.passed
    assert result.numbers.error_rate == 1.0
    assert "### Errors by kind" in run.markdown
    assert f"| {kind.value} | {CALLS} |" in run.markdown
    # Every wait is bounded by --timeout: the run's own span, from the start of its measuring to
    # its result, the interpreter's start-up and the reports' rendering left out. Those are CPU
    # work, which a busy machine stretches past any bound (issue 42: beside `stress-ng --cpu 2`
    # the whole process took 14.1-14.5 s for 4 waits of 1 s); the process's end is bounded by
    # CLI_TIMEOUT.
    assert result.finished_at - result.started_at < TIMEOUT_WAITS * TIMEOUT + SPAN_SLACK
    return result


def assert_pass(run: CliRun) -> RunResult:
    """Exit 0 with both reports written and no failed call."""
    assert "Traceback" not in run.stderr, run.stderr
    assert run.code == 0, run.stderr + run.stdout
    result = run.result
    assert len(result.samples) == CALLS
    assert result.numbers.error_rate == 0.0
    assert "PASS" in run.markdown
    return result


# --- faults a demo server injects -------------------------------------------------------------

STREAM = ("--prompt", "hi", "--stream")
DOCUMENT = ("--prompt", "hi", "--no-stream")

DEMO_FAULTS = [
    pytest.param(
        Fault(kind="hang"),
        DOCUMENT,
        ErrorKind.READ_TIMEOUT,
        id="accept-never-answer",
        marks=pytest.mark.slow,  # waits out the read timeout
    ),
    pytest.param(Fault(kind="reset"), DOCUMENT, ErrorKind.CONNECTION_RESET, id="reset"),
    pytest.param(Fault(kind="cut"), STREAM, ErrorKind.STREAM_CUT, id="close-mid-body"),
    pytest.param(
        Fault(kind="close_before_response"),
        DOCUMENT,
        ErrorKind.CONNECTION_CLOSED,
        id="close-before-answer",
    ),
    pytest.param(
        Fault(kind="slow_drip"),
        STREAM,
        ErrorKind.TOTAL_TIMEOUT,
        id="slow-drip",
        marks=pytest.mark.slow,  # waits out the total timeout
    ),
    pytest.param(Fault(kind="malformed_sse"), STREAM, ErrorKind.MALFORMED, id="malformed-sse"),
    pytest.param(Fault(kind="malformed_sse"), DOCUMENT, ErrorKind.MALFORMED, id="half-json"),
    pytest.param(Fault(kind="invalid_utf8"), STREAM, ErrorKind.MALFORMED, id="invalid-utf8"),
    pytest.param(Fault(kind="error_event"), STREAM, ErrorKind.STREAM_ERROR, id="error-event"),
    pytest.param(Fault(kind="bad_gzip"), DOCUMENT, ErrorKind.MALFORMED, id="bad-gzip"),
    pytest.param(
        Fault(kind="status", status=503), DOCUMENT, ErrorKind.HTTP_5XX, id="burst-of-503s"
    ),
    pytest.param(
        Fault(kind="status", status=404, body="no such model"),
        DOCUMENT,
        ErrorKind.HTTP_4XX,
        id="404",
    ),
]


@pytest.mark.parametrize(("fault", "args", "kind"), DEMO_FAULTS)
def test_endpoint_fault_ends_in_reports_and_exit_1(
    tmp_path: Path, fault: Fault, args: tuple[str, ...], kind: ErrorKind
) -> None:
    """Every call is an error of the fault's kind; JSON and Markdown written; exit 1."""
    spec = EndpointSpec(latency=0.0, tokens=6, token_interval=0.001, faults=(fault,))
    with serve_in_thread(spec) as (server,):
        run = run_probe(tmp_path, server.url, *SMALL_RUN, *args)
    assert_breach(run, kind)


@pytest.mark.slow
def test_429_keeps_retry_after_and_names_the_rate_limit(tmp_path: Path) -> None:
    """A 429 with Retry-After: each call http_429 with Retry-After kept; a rate-limit finding."""
    fault = Fault(kind="status", status=429, retry_after="7")
    with serve_in_thread(EndpointSpec(latency=0.0, faults=(fault,))) as (server,):
        run = run_probe(tmp_path, server.url, *SMALL_RUN, *DOCUMENT)
    result = assert_breach(run, ErrorKind.HTTP_429)
    assert [s.retry_after for s in result.samples] == ["7"] * CALLS
    assert [f.code for f in result.findings] == ["rate-limited"]


@pytest.mark.slow
def test_redirect_is_not_followed_and_says_how(tmp_path: Path) -> None:
    """A 302 is an error that names --follow-redirects, in the JSON and the report."""
    with serve_in_thread(EndpointSpec(latency=0.0, faults=(Fault(kind="redirect"),))) as (server,):
        run = run_probe(tmp_path, server.url, *SMALL_RUN, *DOCUMENT)
    result = assert_breach(run, ErrorKind.REDIRECT)
    assert result.samples[0].error_detail == (
        "HTTP 302 redirect to /elsewhere not followed (use --follow-redirects)"
    )
    assert "follow-redirects" in run.markdown


@pytest.mark.slow
def test_redirect_is_followed_when_asked(tmp_path: Path) -> None:
    """--follow-redirects: the 302 leads to an answer and every call passes."""
    with serve_in_thread(EndpointSpec(latency=0.0, faults=(Fault(kind="redirect"),))) as (server,):
        run = run_probe(tmp_path, server.url, *SMALL_RUN, *DOCUMENT, "--follow-redirects")
        paths = [r.path for r in server.records]
    assert_pass(run)
    assert paths.count("/elsewhere") == CALLS


@pytest.mark.slow
def test_http10_without_keep_alive_opens_a_connection_per_call(tmp_path: Path) -> None:
    """An HTTP/1.0 server closing after each answer: streams end at the close, all calls ok."""
    spec = EndpointSpec(latency=0.0, tokens=4, http10=True, keep_alive=False)
    with serve_in_thread(spec) as (server,):
        run = run_probe(tmp_path, server.url, *SMALL_RUN, *STREAM)
        connections = server.connections
    result = assert_pass(run)
    assert [s.tokens for s in result.samples] == [4] * CALLS
    assert result.samples[1].new_connection  # the warm call could not reuse the cold one's
    assert connections == CALLS


def test_gzip_document_is_decoded_and_counted(tmp_path: Path) -> None:
    """A gzip-compressed answer is decoded: tokens found, every call ok."""
    spec = EndpointSpec(latency=0.0, tokens=5, gzip=True)
    with serve_in_thread(spec) as (server,):
        run = run_probe(tmp_path, server.url, *SMALL_RUN, *DOCUMENT)
    result = assert_pass(run)
    assert [s.tokens for s in result.samples] == [5] * CALLS


# --- faults below HTTP ------------------------------------------------------------------------


@pytest.mark.slow
def test_connection_refused(tmp_path: Path) -> None:
    """Nothing listening: every call connection_refused, exit 1."""
    run = run_probe(tmp_path, f"http://127.0.0.1:{free_port()}/", *SMALL_RUN)
    result = assert_breach(run, ErrorKind.CONNECTION_REFUSED)
    assert result.samples[0].error_detail == "connection refused"


@pytest.fixture
def full_backlog() -> Iterator[int]:
    """A port whose listening socket never accepts and whose backlog is full: SYNs are dropped."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    fillers: list[socket.socket] = []
    try:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port: int = listener.getsockname()[1]
        for _ in range(4):
            filler = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            filler.setblocking(False)
            fillers.append(filler)
            # The later fillers wait in SYN_SENT: the queue is full.
            with contextlib.suppress(BlockingIOError):
                filler.connect(("127.0.0.1", port))
        time.sleep(0.2)
        yield port
    finally:
        for filler in fillers:
            filler.close()
        listener.close()


@pytest.mark.slow
def test_listener_that_never_accepts_is_a_connect_timeout(
    tmp_path: Path, full_backlog: int
) -> None:
    """A full accept queue: connect_timeout (not read_timeout), within the timeouts."""
    run = run_probe(tmp_path, f"http://127.0.0.1:{full_backlog}/", *SMALL_RUN)
    result = assert_breach(run, ErrorKind.CONNECT_TIMEOUT)
    assert result.samples[0].error_detail == "timed out while connecting (1 s)"


@pytest.mark.slow
def test_server_that_accepts_and_never_answers_is_a_read_timeout(tmp_path: Path) -> None:
    """Accepted, request read, no answer: read_timeout, with the detail saying no answer came."""
    with serve_in_thread(EndpointSpec(faults=(Fault(kind="hang"),))) as (server,):
        run = run_probe(tmp_path, server.url, *SMALL_RUN)
    result = assert_breach(run, ErrorKind.READ_TIMEOUT)
    assert result.samples[0].error_detail == "no answer within the 1 s timeout"


# --- TLS ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def _server_context(cert: trustme.LeafCert) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(context)
    return context


def _tls_run(tmp_path: Path, cert: trustme.LeafCert, *args: str) -> CliRun:
    spec = EndpointSpec(latency=0.0, tokens=2)
    with serve_in_thread(spec, ssl_context=_server_context(cert)) as (server,):
        assert server.url.startswith("https://127.0.0.1:")
        return run_probe(tmp_path, server.url, *SMALL_RUN, *DOCUMENT, *args)


def test_untrusted_certificate_is_a_clear_tls_error(tmp_path: Path, ca: trustme.CA) -> None:
    """A certificate from a private CA: tls errors naming the failed verification."""
    run = _tls_run(tmp_path, ca.issue_cert("127.0.0.1"))
    result = assert_breach(run, ErrorKind.TLS)
    detail = result.samples[0].error_detail or ""
    assert detail.startswith("TLS failed: [SSL: CERTIFICATE_VERIFY_FAILED]")
    assert "unable to get local issuer certificate" in detail


def test_ca_bundle_makes_the_private_certificate_work(tmp_path: Path, ca: trustme.CA) -> None:
    """--ca-bundle with the private CA: every call passes over TLS, no warning."""
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    run = _tls_run(tmp_path, ca.issue_cert("127.0.0.1"), "--ca-bundle", str(bundle))
    result = assert_pass(run)
    assert other_warnings(result.warnings) == ()
    assert all(s.timings.tls is not None for s in result.samples if s.new_connection)


def test_wrong_host_name_is_a_tls_error(tmp_path: Path, ca: trustme.CA) -> None:
    """A trusted certificate for another name: tls errors naming the mismatch."""
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    run = _tls_run(tmp_path, ca.issue_cert("other.example"), "--ca-bundle", str(bundle))
    result = assert_breach(run, ErrorKind.TLS)
    assert "IP address mismatch" in (result.samples[0].error_detail or "")


def test_expired_certificate_is_a_tls_error(tmp_path: Path, ca: trustme.CA) -> None:
    """A trusted certificate that expired yesterday: tls errors saying it expired."""
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    now = datetime.datetime.now(datetime.UTC)
    cert = ca.issue_cert(
        "127.0.0.1",
        not_before=now - datetime.timedelta(days=30),
        not_after=now - datetime.timedelta(days=1),
    )
    run = _tls_run(tmp_path, cert, "--ca-bundle", str(bundle))
    result = assert_breach(run, ErrorKind.TLS)
    assert "certificate has expired" in (result.samples[0].error_detail or "")


@pytest.mark.slow
def test_insecure_only_when_asked_and_said_in_the_report(tmp_path: Path, ca: trustme.CA) -> None:
    """--insecure accepts the untrusted certificate and the report warns that checks were off."""
    run = _tls_run(tmp_path, ca.issue_cert("127.0.0.1"), "--insecure")
    result = assert_pass(run)
    assert other_warnings(result.warnings) == (
        "TLS certificate checks were turned off (--insecure)",
    )
    assert "TLS certificate checks were turned off" in run.markdown
    assert "warning: TLS certificate checks were turned off (--insecure)" in run.stderr


# --- a huge body ----------------------------------------------------------------------------

BIG_BODY = 100 * 1024 * 1024
_BLOCK = b"x" * (256 * 1024)


async def _serve_big_bodies(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Answer every request with 100 MB, one reused block at a time (keeps our memory flat)."""
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            if not head:
                return
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                + f"Content-Length: {BIG_BODY}\r\n\r\n".encode()
            )
            for _ in range(BIG_BODY // len(_BLOCK)):
                writer.write(_BLOCK)
                await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


@pytest.mark.slow
async def test_hundred_megabyte_body_is_counted_not_kept() -> None:
    """Three 100 MB answers: every byte counted, the probe's peak memory stays under 16 MB."""
    server = await asyncio.start_server(_serve_big_bodies, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    target = build_target(
        {
            "url": f"http://127.0.0.1:{port}/blob",
            "warm-calls": "1",
            "concurrency": "1",
            "timeout": "60s",
            "max-warm-p95": "off",
            "max-concurrent-p95": "off",
            **one_look(3),  # three 100 MB bodies are enough
        }
    )
    tracemalloc.start()
    try:
        result = await asyncio.wait_for(probe(target, measure_floor=False), timeout=120)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        server.close()
        await server.wait_closed()
    assert [s.bytes_received for s in result.samples] == [BIG_BODY] * 3
    assert all(s.ok for s in result.samples)
    assert peak < 16 * 1024 * 1024, f"peak {peak / 2**20:.1f} MiB"
