"""The part that failed: a failed call's detail names the proxy, or the HTTP version, when it is
they and not the endpoint that failed, with the option that fixes it.

A call through a proxy connects to the proxy, so a refused or timed-out connection is the
proxy's, and a 407 (or any answer carrying Proxy-Authenticate, or a refused CONNECT) is the
proxy's answer; the endpoint was never asked. `--http2` on an http:// URL speaks HTTP/2 from the
first byte (prior knowledge), which a server of HTTP/1.1 only cannot read; HTTP/1.1 sent to a
server of HTTP/2 only gets back binary frames, which no HTTP/1.1 parser reads as a status line.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from latency_gate.config import Target, redact_url
from latency_gate.config.secrets import url_userinfo
from latency_gate.models import ErrorKind

__all__ = ["PROXY_OPTIONS", "name_the_part"]

PROXY_OPTIONS = "--proxy or HTTP(S)_PROXY; NO_PROXY or --proxy off goes direct"

# Failures to open the connection: through a proxy, that connection is the proxy's.
_CONNECTING = frozenset({ErrorKind.CONNECTION_REFUSED, ErrorKind.CONNECT_TIMEOUT, ErrorKind.DNS})
# A connection that ended before any answer: what an HTTP/1.1 server does with HTTP/2 bytes.
_NO_ANSWER = frozenset(
    {ErrorKind.CONNECTION_CLOSED, ErrorKind.CONNECTION_RESET, ErrorKind.PROTOCOL}
)
# How h11 names an answer that does not start like HTTP/1.1 (binary HTTP/2 frames).
_NOT_HTTP1 = ("illegal request line", "illegal status line", "no response line")


def name_the_part(
    error: ErrorKind | None,
    detail: str | None,
    *,
    target: Target,
    status: int | None,
    from_proxy: bool,
) -> str | None:
    """The failure's detail, saying which part failed when it is not the endpoint: the proxy
    (`from_proxy`: the answer was the proxy's own), or an HTTP version the server does not speak.
    A detail that points at the endpoint is returned as it is."""
    if error is None or detail is None:
        return detail
    if target.proxy is not None:
        proxy = redact_url(target.proxy)
        if error in _CONNECTING:
            return f"could not reach the proxy {proxy}: {detail} (check {PROXY_OPTIONS})"
        if from_proxy:
            if status in (401, 407) and url_userinfo(target.proxy) is not None:
                return (
                    f"the proxy {proxy} refused its credentials (an answer no proxy relayed: it "
                    "carries no Via header); check the user:password in --proxy or "
                    f"HTTP(S)_PROXY; it answered {detail}"
                )
            if status in (401, 407) or detail.startswith(("HTTP 401", "HTTP 407")):
                return (
                    f"the proxy {proxy} wants credentials (in its URL, http://user:password@"
                    f"host:port, in --proxy or HTTP(S)_PROXY); it answered {detail}"
                )
            return f"the proxy {proxy} answered, not the endpoint: {detail} ({PROXY_OPTIONS})"
    if status is None and error in _NO_ANSWER:
        if target.http2 and urlsplit(target.url).scheme == "http":
            return (
                f"{detail} (--http2 speaks HTTP/2 from the first byte on an http:// URL, which a "
                "server of HTTP/1.1 only cannot read: drop --http2)"
            )
        if not target.http2 and any(mark in detail for mark in _NOT_HTTP1):
            return (
                f"{detail} (the answer does not start like HTTP/1.1: a server of HTTP/2 only? "
                "try --http2)"
            )
    return detail
