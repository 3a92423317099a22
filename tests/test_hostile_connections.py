"""Hostile input: proxies, protocols and endpoints that never answer, named for what they are.

A dead proxy, a proxy asking for credentials (tinyproxy's own 401 too), NO_PROXY and HTTP_PROXY read
as curl reads them, a socks proxy, a targets file's `proxy: off`, a look-alike loopback host in the
container, h2c through a proxy, HTTP/2 against HTTP/1.1 and back, read timeouts, and a GET that is
not served while waiting for the endpoint. Each call's detail names the right culprit.
docs/faults.md, "Hostile input", says what each case did before its fix.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import free_port, start_tinyproxy
from hostile_data import _answer, _samples
from hostile_kit import (
    CHAT,
    FAST,
    ONE_LOOK,
    Answer,
    action_error,
    chunk,
    http,
    judged,
    one_error,
    paced,
    run_action,
    run_cli,
    sse_pieces,
)

from latency_gate.config import proxy_from_environment
from latency_gate.demo import DemoServer, EndpointSpec, serve_in_thread


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoServer]:
    """A healthy streaming chat endpoint; `records` says whether anything reached it."""
    with serve_in_thread(EndpointSpec(latency=0.0, tokens=2, token_interval=0.0)) as (server,):
        yield server


def _proxy_refusing(status: str, header: str) -> Answer:
    """A proxy that answers every request (a forwarded GET or a CONNECT) with `status`."""
    return lambda _: [http(status, b"proxy says no", "text/plain", header)]


# An HTTP/2 server's first bytes, whatever it was sent: its SETTINGS frame (RFC 9113, 3.4), then
# a GOAWAY for a preface that never came, as nginx's h2c-only port answers HTTP/1.1.
H2_ONLY = bytes.fromhex("000000040000000000" + "0000080700000000000000000000000001")


DEAD_PROXY_ENV = {"HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9"}


IN_CONTAINER = {"LATENCY_GATE_IN_CONTAINER": "1"}


@pytest.fixture
def guarded_proxy(tmp_path: Path) -> Iterator[str]:
    """A real tinyproxy that asks for credentials (user / secretpw); its URL, without them."""
    yield from start_tinyproxy(tmp_path, "BasicAuth user secretpw\n")


def test_dead_proxy_is_named_not_the_endpoint(demo: DemoServer, tmp_path: Path) -> None:
    """Nothing listening at the proxy: each call says it could not reach the proxy, and the
    early stop says the endpoint was never asked (both said the endpoint was not reachable)."""
    proxy = f"http://127.0.0.1:{free_port()}"
    json_path = tmp_path / "r.json"
    result = judged(run_cli("probe", demo.url, "--proxy", proxy, *FAST, "--json", str(json_path)))
    assert {s["error_detail"] for s in _samples(json_path)} == {
        f"could not reach the proxy {proxy}: connection refused (check --proxy or "
        "HTTP(S)_PROXY; NO_PROXY or --proxy off goes direct)"
    }
    assert (
        "warning: stopped after the first 3 calls: all failed to connect (connection_refused) "
        f"to the proxy {proxy}, so the endpoint was never asked" in result.stderr
    )
    assert "not reachable" not in result.output


@pytest.mark.parametrize(
    ("status", "header", "scheme"),
    [
        ("407 Proxy Authentication Required", 'Proxy-Authenticate: Basic realm="p"\r\n', "http"),
        ("407 Proxy Authentication Required", 'Proxy-Authenticate: Basic realm="p"\r\n', "https"),
        ("401 Unauthorized", 'Proxy-Authenticate: Basic realm="p"\r\n', "http"),
    ],
    ids=["407-forwarded", "407-connect", "401-proxy-authenticate"],
)
def test_proxy_asking_for_credentials_is_named(
    tmp_path: Path, status: str, header: str, scheme: str
) -> None:
    """A proxy's 407 (forwarded http, or refusing CONNECT for https) or a 401 carrying
    Proxy-Authenticate names the proxy and where its credentials go (it read as the endpoint's
    `http_4xx`, or `ProxyError: 407 ...`)."""
    with paced(_proxy_refusing(status, header)) as (proxy, _):
        json_path = tmp_path / "r.json"
        url = f"{scheme}://api.example.invalid/v1/chat/completions"
        args = [url, "--prompt", "hi", "--proxy", proxy + "/", *FAST, "--json", str(json_path)]
        judged(run_cli("probe", *args))
    details = {s["error_detail"] for s in _samples(json_path)}
    assert len(details) == 1
    [detail] = details
    assert detail.startswith(
        f"the proxy {proxy}/ wants credentials (in its URL, http://user:password@host:port, in "
        f"--proxy or HTTP(S)_PROXY); it answered HTTP {status[:3]}"
    )


@pytest.mark.parametrize(
    "no_proxy", ["127.0.0.0/8", "10.0.0.0/8,127.0.0.1/32", "::1/128 127.0.0.0/8"]
)
def test_no_proxy_cidr_goes_direct(demo: DemoServer, tmp_path: Path, no_proxy: str) -> None:
    """NO_PROXY in CIDR notation (curl 7.86+), comma- or space-separated, covers 127.0.0.1: the
    calls go direct (the entry was ignored and every call went to the dead proxy)."""
    json_path = tmp_path / "r.json"
    args = [demo.url, *FAST, "--on-undecided", "pass", "--json", str(json_path)]
    judged(run_cli("probe", *args, env={**DEAD_PROXY_ENV, "NO_PROXY": no_proxy}))
    assert all(s["ok"] for s in _samples(json_path))
    assert json.loads(json_path.read_text())["config"]["proxy"] is None


@pytest.mark.parametrize(
    ("url", "environ", "expected"),
    [
        ("http://[::1]:8080/", {"NO_PROXY": "::1/128"}, None),
        ("http://[::1]:8080/", {"NO_PROXY": "[::1]"}, None),
        ("http://[::2]:8080/", {"NO_PROXY": "::1/128"}, "http://p:1"),
        ("http://10.9.8.7/", {"NO_PROXY": "10.0.0.0/8"}, None),
        ("http://11.9.8.7/", {"NO_PROXY": "10.0.0.0/8"}, "http://p:1"),
        ("http://api.example.com./", {"NO_PROXY": "example.com"}, None),
        ("http://api.example.com/", {"NO_PROXY": "other.org example.com"}, None),
        (
            "https://api.example.com/",
            {"HTTPS_PROXY": "", "ALL_PROXY": "http://all:2"},
            "http://all:2",
        ),
    ],
    ids=[
        "ipv6-cidr",
        "ipv6-brackets",
        "ipv6-other",
        "ipv4-cidr",
        "ipv4-outside",
        "trailing-dot",
        "space-separated",
        "all-proxy",
    ],
)
def test_environment_proxy_as_curl_reads_it(
    url: str, environ: dict[str, str], expected: str | None
) -> None:
    """NO_PROXY's CIDR networks (IPv4, IPv6 with or without brackets), a host's trailing dot,
    entries separated by spaces, and ALL_PROXY when the scheme's variable is not set."""
    given = {"HTTP_PROXY": "http://p:1", "HTTPS_PROXY": "http://p:1", **environ}
    assert proxy_from_environment(url, given) == expected


def test_proxy_without_a_scheme_is_http_as_curl_takes_it(tmp_path: Path) -> None:
    """HTTP_PROXY=host:port (and --proxy host:port) is an http:// proxy, as curl assumes (it
    was refused: "expected an http:// or https:// URL")."""
    with paced(_proxy_refusing("407 Proxy Authentication Required", "")) as (proxy, _):
        bare = proxy.removeprefix("http://")
        url = "http://api.example.invalid/v1/chat/completions"
        for env, extra in (({"HTTP_PROXY": bare}, []), ({}, ["--proxy", bare])):
            json_path = tmp_path / "r.json"
            args = [url, "--prompt", "hi", *extra, *FAST, "--json", str(json_path)]
            judged(run_cli("probe", *args, env=env))
            [detail] = {s["error_detail"] for s in _samples(json_path)}
            assert detail.startswith(f"the proxy http://{bare} wants credentials")


def test_socks_proxy_is_refused_by_name() -> None:
    """A socks5:// proxy (which curl speaks and latency-gate does not) is named as such."""
    line = one_error(run_cli("probe", "http://127.0.0.1:9/", "--proxy", "socks5://u:pw99@p:1"))
    assert line == (
        "Error: invalid input --proxy: socks5:// proxies are not supported; give an http:// or "
        "https:// proxy, got 'socks5://***@p:1'"
    )


@pytest.mark.parametrize("off", ["off", '"off"'], ids=["bare", "quoted"])
def test_targets_file_proxy_off_goes_direct(demo: DemoServer, tmp_path: Path, off: str) -> None:
    """A targets file's `proxy: off` goes direct even with HTTP_PROXY set: bare (YAML reads
    false) it was refused as "expected an http:// or https:// URL, got 'false'"; quoted, the
    environment's proxy was used all the same."""
    path = tmp_path / "t.yml"
    path.write_text(
        f"targets:\n  - name: a\n    url: {demo.url}\n    proxy: {off}\n    warm-calls: 2\n"
        "    concurrency: 1\n    max-calls: 4\n    on-undecided: pass\n",
        encoding="utf-8",
    )
    json_path = tmp_path / "r.json"
    args = ["--targets", str(path), "--no-floor", "--json", str(json_path)]
    judged(run_cli("probe", *args, env=DEAD_PROXY_ENV))
    assert all(s["ok"] for s in _samples(json_path))


def test_quick_curl_line_carries_http2_and_the_proxy(demo: DemoServer) -> None:
    """quick's curl line says --http2-prior-knowledge (http://) and --proxy with its password
    masked, and --noproxy '*' for --proxy off, as the calls were made (it said neither)."""
    with paced(_proxy_refusing("407 Proxy Authentication Required", "")) as (proxy, _):
        with_proxy = proxy.replace("http://", "http://user:pw-curl-99@")
        result = run_cli("quick", demo.url, "--http2", "--proxy", with_proxy)
    line = next(x for x in result.stdout.splitlines() if x.strip().startswith("curl "))
    assert " --http2-prior-knowledge " in line
    assert f" --proxy 'http://***@{proxy.removeprefix('http://')}' " in line
    assert "pw-curl-99" not in result.output
    direct = run_cli("quick", demo.url, "--proxy", "off", env=DEAD_PROXY_ENV)
    assert " --noproxy '*' " in direct.stdout


def test_a_proxy_s_own_401_is_named_as_the_proxy_s(guarded_proxy: str, tmp_path: Path) -> None:
    """tinyproxy answers wrong proxy credentials with its own 401 and WWW-Authenticate (not
    407): an answer through a proxy with credentials that no proxy relayed (no Via) names the
    proxy and its credentials, not the endpoint's key (it was counted as the endpoint's 401)."""
    wrong = guarded_proxy.replace("http://", "http://user:not-the-pw@")
    with paced(_answer) as (base, seen):
        json_path = tmp_path / "r.json"
        args = [base + CHAT, "--prompt", "hi", "-x", wrong, *FAST, "--json", str(json_path)]
        judged(run_cli("probe", *args))
        relayed = judged(
            run_cli(
                "probe",
                base + CHAT,
                "--prompt",
                "hi",
                "-x",
                guarded_proxy.replace("http://", "http://user:secretpw@"),
                *FAST,
            )
        )
    detail = json.loads(json_path.read_text())["samples"][0]["error_detail"]
    assert detail.startswith(
        f"the proxy {guarded_proxy.replace('http://', 'http://***@')} refused its credentials "
        "(an answer no proxy relayed: it carries no Via header); check the user:password in "
        "--proxy or HTTP(S)_PROXY; it answered HTTP 401"
    ), detail
    assert seen.requests, "the right credentials reach the endpoint"
    assert relayed.exit_code == 0, relayed.output
    assert "not-the-pw" not in detail


def test_h2c_through_a_proxy_is_said_not_spoken(tmp_path: Path) -> None:
    """--http2 on an http:// URL through a forward proxy: the proxy takes the requests in
    HTTP/1.1, and the run says --http2 was not spoken and how to measure it (nothing said so:
    the calls went out in HTTP/1.1 under an --http2 setting)."""
    with contextlib.ExitStack() as stack:
        proxy = stack.enter_context(contextlib.contextmanager(start_tinyproxy)(tmp_path))
        base, _ = stack.enter_context(paced(_answer))
        json_path = tmp_path / "r.json"
        args = [base + CHAT, "--prompt", "hi", "--http2", "-x", proxy, *FAST]
        result = judged(run_cli("probe", *args, "--json", str(json_path)))
    document = json.loads(json_path.read_text())
    assert {s["http_version"] for s in document["samples"]} == {"HTTP/1.1"}
    said = (
        f"--http2 was not spoken: the calls went through the proxy {proxy}, which takes an "
        "http:// URL's requests in HTTP/1.1 (each call says HTTP/1.1); go direct (--proxy off, "
        "or NO_PROXY) to measure HTTP/2 without TLS"
    )
    assert said in document["warnings"]
    assert said in " ".join(result.output.split())


@pytest.mark.parametrize(
    ("host", "seen_as"),
    [
        ("127\u30020\u30020\u30021", "127.0.0.1"),  # ideographic full stops
        ("127\uff0e0\uff0e0\uff0e1", "127.0.0.1"),  # full-width full stops
        ("127\uff610\uff610\uff611", "127.0.0.1"),  # half-width ideographic full stops
        ("LOCALHOST\uff61", "localhost."),
        ("127.0.0.1\u3002", "127.0.0.1."),
        ("api.example\\@127.0.0.1", "127.0.0.1"),  # httpx ends the authority at the backslash
        ("[::ffff:7f00:1]", "::ffff:7f00:1"),
        ("0x7f.1", "0x7f.1"),
        ("2130706433", "2130706433"),
    ],
    ids=[
        "ideographic-dots",
        "full-width-dots",
        "half-width-dots",
        "localhost-dot",
        "trailing-ideographic-dot",
        "backslash",
        "ipv4-mapped-hex",
        "hex-short",
        "decimal",
    ],
)
def test_look_alike_loopback_is_refused_in_the_container(
    tmp_path: Path, host: str, seen_as: str
) -> None:
    """In the Docker action, a URL whose host the client turns into loopback (IDNA maps
    full-width and other dots to ".") is refused like 127.0.0.1 (the full-width spellings
    reached the container's own loopback)."""
    url = f"http://{host}:8080/v1/chat/completions"
    run = run_action(tmp_path, {"url": url, **ONE_LOOK}, IN_CONTAINER)
    assert f" points at {seen_as}, the machine the call starts on;" in action_error(run)


def test_look_alike_loopback_proxy_is_refused_in_the_container(tmp_path: Path) -> None:
    """The same for the proxy: `proxy: http://127。0。0。1:3128` is the container's loopback."""
    inputs = {"url": "http://api.example.com/", "proxy": "http://127\u30020\u30020\u30021:3128"}
    run = run_action(tmp_path, {**inputs, **ONE_LOOK}, IN_CONTAINER)
    assert "invalid input proxy: " in action_error(run)


def test_read_timeouts_are_not_called_unreachable(tmp_path: Path) -> None:
    """A server that takes the request and never answers: the early stop says the calls timed
    out waiting and which --timeout to raise, not that the endpoint is not reachable."""
    with paced(lambda _: []) as (base, _):
        result = judged(run_cli("probe", base + "/", "--timeout", "0.3s", *FAST))
    assert (
        "warning: stopped after the first 3 calls: all timed out waiting for the answer "
        "(read_timeout); the endpoint took the request but answered none within the 0.3 s "
        "--timeout: raise it if the endpoint is that slow" in result.stderr
    )
    assert "not reachable" not in result.output


def test_http2_against_an_http1_server_says_drop_http2(demo: DemoServer, tmp_path: Path) -> None:
    """--http2 on an http:// URL of an HTTP/1.1 server: each call says why and to drop --http2
    (it said "Server disconnected" or "Broken pipe")."""
    json_path = tmp_path / "r.json"
    judged(run_cli("probe", demo.url, "--http2", *FAST, "--json", str(json_path)))
    for sample in _samples(json_path):
        assert sample["error_detail"].endswith(
            "(--http2 speaks HTTP/2 from the first byte on an http:// URL, which a server of "
            "HTTP/1.1 only cannot read: drop --http2)"
        )


def test_http1_against_an_http2_only_server_says_try_http2(tmp_path: Path) -> None:
    """HTTP/1.1 to a server of HTTP/2 only: each call says its answer is not HTTP/1.1 and to try
    --http2 (it said "illegal request line")."""
    with paced(lambda _: [H2_ONLY]) as (base, _):
        json_path = tmp_path / "r.json"
        judged(run_cli("probe", base + CHAT, "--prompt", "hi", *FAST, "--json", str(json_path)))
    assert {s["error_detail"] for s in _samples(json_path)} == {
        "illegal request line (the answer does not start like HTTP/1.1: a server of HTTP/2 only? "
        "try --http2)"
    }


def test_wait_ready_uses_the_real_method_when_get_is_not_served(tmp_path: Path) -> None:
    """GET answers 405 at once while the POST gets 503 for 0.6 s: the wait goes on with POST
    until it is served, so the cold call succeeds (GET's 405 was taken for ready, and every
    call then got 503)."""
    started = time.monotonic()
    stream = sse_pieces([chunk({"content": "hi"}), chunk({}, "stop"), "[DONE]"])

    def answer(request: bytes) -> list[bytes]:
        if request.startswith(b"GET "):
            return [http("405 Method Not Allowed", b"{}")]
        if time.monotonic() - started < 0.6:
            return [http("503 Service Unavailable", b'{"error": "loading"}')]
        return stream

    with paced(answer) as (base, seen):
        json_path = tmp_path / "r.json"
        args = [base + CHAT, "--prompt", "hi", "--wait-ready", "10s", *FAST, "--on-undecided"]
        judged(run_cli("probe", *args, "pass", "--json", str(json_path)))
    samples = _samples(json_path)
    assert [s["ok"] for s in samples] == [True] * len(samples)
    assert json.loads(json_path.read_text())["ready_after"] >= 0.5
    assert sum(r.startswith(b"POST ") for r in seen.requests) > len(samples)
