"""Hostile input: what a URL may hold, and how every output shows it.

A redirect's Location that is no URL to call (another scheme, a port out of range), a redirect
target that cannot be reached (refused, no such name, TLS against a plain server), a host written in
Unicode (one origin with its punycode), and the query values that are secrets, masked by one rule in
the terminal, the JSON, the Markdown and quick's curl line. docs/faults.md has a row for each.
"""

from __future__ import annotations

import contextlib
import json
import socketserver
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import Result
from hostile_data import KEY
from hostile_kit import CHAT, FAST, Answer, chunk, http, judged, paced, run_cli, sse_pieces

from latency_gate.config.ab import same_origin
from latency_gate.formatting import md_escape

ANSWER = [chunk({"content": "hello"}), chunk({}, "stop"), "[DONE]"]


def _answer(_: bytes) -> list[bytes]:
    """A healthy streamed chat answer."""
    return sse_pieces(ANSWER)


def _redirect(status: str, location: str) -> Answer:
    """Every request answered with a redirect to `location`."""
    return lambda _: [http(status, b"", extra=f"Location: {location}\r\n")]


def _details(tmp_path: Path, answer: Answer, *args: str) -> tuple[Result, list[str | None]]:
    """A judged run against `answer` (FAST, --json): the result and each call's error detail."""
    json_path = tmp_path / "r.json"
    with paced(answer) as (base, _):
        result = judged(
            run_cli("probe", base + CHAT, "--prompt", "hi", *FAST, "--json", str(json_path), *args)
        )
    samples = json.loads(json_path.read_text())["samples"]
    return result, [s["error_detail"] for s in samples if s["error"] == "redirect"]


@contextlib.contextmanager
def _plain_server() -> Iterator[int]:
    """A loopback server that answers whatever it is sent, a TLS hello too, with a plain
    HTTP 400 and closes; yields its port."""

    class Plain(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            self.request.recv(4096)
            self.request.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), Plain) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield server.server_address[1]
        finally:
            server.shutdown()
            thread.join(5)


IDN = "http://bücher.example"


PUNYCODE = "http://xn--bcher-kva.example"


QUERY = "?ms=50&api_key=q-secret-0123&sig=sv-0123456789&plain="


@pytest.mark.parametrize("follow", [[], ["-L"]], ids=["not-followed", "followed"])
@pytest.mark.parametrize(
    ("location", "named"),
    [
        ("data:text/plain,hi", "a data: URL"),
        ("javascript:alert(1)", "a javascript: URL"),
        ("mailto:ops@example.com", "a mailto: URL"),
        ("about:blank", "an about: URL"),
        ("urn:isbn:0451450523", "a urn: URL"),
        ("ws://127.0.0.1/x", "a ws: URL"),
    ],
)
def test_a_location_of_another_scheme_is_a_redirect_not_followed(
    tmp_path: Path, follow: list[str], location: str, named: str
) -> None:
    """A 302 whose Location is a data:, javascript:, mailto:, about:, urn: or ws: URL fails each
    call as a redirect, named, with or without -L (the run crashed: exit 3, InvalidURL)."""
    result, details = _details(tmp_path, _redirect("302 Found", location), *follow)
    assert details, result.output
    assert set(details) == {f"HTTP 302 redirect to {named}, not followed"}
    assert result.exit_code == 1


@pytest.mark.parametrize("follow", [[], ["-L"]], ids=["not-followed", "followed"])
@pytest.mark.parametrize("port", ["99999", "-1", "65536", "1e3"])
def test_a_location_with_a_port_out_of_range_is_a_redirect_not_followed(
    tmp_path: Path, follow: list[str], port: str
) -> None:
    """A Location whose port is not 0 to 65535 fails each call as a redirect, named (exit 3:
    ValueError, or OverflowError from connect with -L)."""
    location = f"http://127.0.0.1:{port}/v1?api_key=sk-leaked-in-location"
    result, details = _details(tmp_path, _redirect("307 Temporary Redirect", location), *follow)
    assert details, result.output
    assert set(details) == {
        f"HTTP 307 redirect to a URL whose port {port} is not a port (0 to 65535), not followed"
    }
    assert "sk-leaked" not in result.output


@pytest.mark.parametrize(
    ("location", "shown", "kind"),
    [
        ("http://127.0.0.1:1/", "http://127.0.0.1:1/", "connection_refused"),
        ("http://no-such-host.invalid/v1", "http://no-such-host.invalid/v1", "dns"),
        ("http:", "http://127.0.0.1", "connection_refused"),
        ("http:///x", "http://127.0.0.1/x", "connection_refused"),
    ],
)
def test_an_unreachable_redirect_target_is_named_not_the_endpoint(
    tmp_path: Path, location: str, shown: str, kind: str
) -> None:
    """With -L, an endpoint that answers every call with a 307 to a place nobody answers: the
    calls and the stop name the hop ("the endpoint is not reachable from here", though it
    answered every call)."""
    json_path = tmp_path / "r.json"
    redirect = _redirect("307 Temporary Redirect", location)
    with paced(redirect) as (base, seen):
        args = ["--prompt", "hi", "--no-floor", "-L", "--json", str(json_path)]
        result = judged(run_cli("probe", base + CHAT, *args))
    hop = f"the endpoint answered 307; its redirect to {shown} is not reachable from here"
    samples = json.loads(json_path.read_text())["samples"]
    assert len(seen.requests) == len(samples) == 3
    assert {s["error"] for s in samples} == {kind}
    assert all(s["error_detail"].startswith(f"{hop}: ") for s in samples), samples
    stop = f"warning: stopped after the first 3 calls: all failed to connect ({kind}): {hop}"
    assert stop in result.output.splitlines()
    assert "the endpoint is not reachable" not in result.output


def test_an_https_hop_to_a_plain_server_is_named(tmp_path: Path) -> None:
    """With -L, a 307 to https:// on a server that speaks plain HTTP: each call's failure names
    the hop and TLS (it read "TLS failed: …" as if the endpoint's own TLS had failed)."""
    with _plain_server() as port:
        hop = f"https://127.0.0.1:{port}/v1"
        result, _ = _details(tmp_path, _redirect("307 Temporary Redirect", hop), "-L")
    samples = json.loads((tmp_path / "r.json").read_text())["samples"]
    assert {s["error"] for s in samples} == {"tls"}
    sentence = f"the endpoint answered 307; its redirect to {hop} is not reachable from here: TLS"
    assert all(s["error_detail"].startswith(sentence) for s in samples), samples
    assert result.exit_code == 1


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [
        (f"{IDN}/v1", f"{PUNYCODE}/v2", True),
        (f"{PUNYCODE}:80/v1", f"{IDN}/v1", True),
        ("http://BÜCHER.example/", f"{PUNYCODE}/", True),
        (f"{IDN}:8080/", f"{PUNYCODE}/", False),
        (f"{IDN}/", "http://bucher.example/", False),
    ],
)
def test_origins_are_compared_as_their_hosts_are_sent(first: str, second: str, same: bool) -> None:
    """A host spelled in Unicode and the same host in punycode (what httpx puts in a request's
    URL) are one origin; another port or another name is not (they were two origins)."""
    assert same_origin(first, second) is same
    assert same_origin(second, first) is same


def test_an_idn_endpoint_gets_its_credentials(tmp_path: Path) -> None:
    """`--api-key` for a URL whose host is written in Unicode reaches it (here through a
    forward proxy on loopback, which sees the request as sent): the key was stripped from the
    first request as if it went to another origin, and every call was a 401."""

    def answer(request: bytes) -> list[bytes]:
        if f"Authorization: Bearer {KEY}".encode() in request:
            return _answer(request)
        return [http("401 Unauthorized", b'{"error": "no key"}')]

    with paced(answer) as (proxy, seen):
        args = [f"{IDN}{CHAT}", "--api-key", KEY, "--prompt", "hi", "-x", proxy, *FAST]
        result = judged(run_cli("probe", *args))
    assert seen.requests[0].startswith(f"POST {PUNYCODE}{CHAT} HTTP/1.1".encode())
    assert result.exit_code == 0, result.output
    assert "401" not in result.output


def test_quick_s_curl_line_keeps_the_query_values_that_are_no_secret() -> None:
    """quick's curl line repeats the call: `?ms=50` stays as it is, a value whose name looks
    secret and the --api-key value wherever it appears are *** (every value was ***)."""
    with paced(_answer) as (base, _):
        url = f"{base}{CHAT}{QUERY}&model_key_copy={KEY}"
        result = run_cli("quick", url, "--prompt", "hi", "--api-key", KEY)
    assert result.exit_code == 0, result.output
    shown = f"{CHAT}?ms=50&api_key=***&sig=***&plain=&model_key_copy=***'"
    curl = [line for line in result.output.splitlines() if line.strip().startswith("curl ")]
    assert len(curl) == 1, result.output
    assert curl[0].endswith(shown), curl[0]
    assert "q-secret" not in result.output
    assert "sv-0123" not in result.output
    assert KEY[:12] not in result.output


def test_every_report_shows_the_url_by_the_same_rule(tmp_path: Path) -> None:
    """The terminal, the JSON result and the Markdown show `?ms=50` and mask the rest, the key
    in the URL's path included (every query value was ***)."""
    json_path, md_path = tmp_path / "r.json", tmp_path / "r.md"
    with paced(_answer) as (base, _):
        url = f"{base}/v1/{KEY}/chat/completions{QUERY}"
        args = [url, "--api-key", KEY, "--prompt", "hi", *FAST, "--json", str(json_path)]
        result = judged(run_cli("probe", *args, "--markdown", str(md_path), "-v"))
    shown = f"{base}/v1/***/chat/completions?ms=50&api_key=***&sig=***&plain="
    assert json.loads(json_path.read_text())["config"]["url"] == shown
    assert md_escape(shown) in md_path.read_text() or f"`{shown}`" in md_path.read_text()
    everything = result.output + json_path.read_text() + md_path.read_text()
    for secret in ("q-secret", "sv-0123", KEY[:12]):
        assert secret not in everything
