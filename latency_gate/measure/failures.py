"""A failed call named once: httpx's exception tree and its cause -> an `ErrorKind` and a
detail (calls.py scrubs the target's secrets from it), a refused proxy tunnel by its status, and
the hop of a followed redirect that could not be reached named as the hop, not the endpoint.
"""

from __future__ import annotations

import httpx

from latency_gate.config import Target, redact_url
from latency_gate.errors import MachineLimitError, machine_limit_message
from latency_gate.measure.redirects import REDIRECTED_BY, RedirectRefused
from latency_gate.models import ErrorKind

__all__ = ["classify", "failed_hop", "hop_failure", "proxy_refusal"]

_HOP_START, _HOP_END = "the endpoint answered ", " is not reachable from here"


def failed_hop(detail: str | None) -> str | None:
    """The sentence naming the hop of a followed redirect that a call could not reach, when its
    detail starts with one ("the endpoint answered 307; its redirect to … is not reachable from
    here"); else None."""
    if detail is None or not detail.startswith(_HOP_START) or _HOP_END not in detail:
        return None
    return detail[: detail.index(_HOP_END) + len(_HOP_END)]


def hop_failure(exc: httpx.HTTPError, target: Target) -> str | None:
    """ "the endpoint answered 307; its redirect to URL is not reachable from here" when `exc`
    failed a hop of a followed redirect, not the request sent to the target; else None."""
    try:
        request = exc.request
    except RuntimeError:  # an error raised before any request was made
        return None
    status = request.extensions.get(REDIRECTED_BY)
    if status is None or request.url == httpx.URL(target.url):
        return None
    return f"{_HOP_START}{status}; its redirect to {redact_url(str(request.url))}{_HOP_END}"


def proxy_refusal(message: str) -> tuple[ErrorKind, str]:
    """A refused CONNECT ("407 Proxy Authentication Required") by its status, when it has one."""
    code = message.split(" ", 1)[0]
    if code.isdigit() and len(code) == 3:
        status = int(code)
        kind = ErrorKind.HTTP_5XX if status >= 500 else ErrorKind.HTTP_4XX
        return (ErrorKind.HTTP_429 if status == 429 else kind), f"HTTP {message}"
    return ErrorKind.PROTOCOL, f"the proxy refused the tunnel: {message}"


def classify(exc: httpx.HTTPError) -> tuple[ErrorKind, str]:
    """Name a transport failure once, from httpx's exception tree and its cause."""
    message = str(exc) or type(exc).__name__
    lowered = message.lower()
    if "too many open files" in lowered or "cannot allocate memory" in lowered:
        # The machine's limit, not the endpoint's failure: the run stops and says so.
        what = "memory" if "memory" in lowered else "open files"
        raise MachineLimitError(machine_limit_message(what)) from exc
    if isinstance(exc, RedirectRefused):
        return ErrorKind.REDIRECT, message
    if isinstance(exc, httpx.ConnectTimeout):
        return ErrorKind.CONNECT_TIMEOUT, "timed out while connecting"
    if isinstance(exc, httpx.ReadTimeout):
        return ErrorKind.READ_TIMEOUT, "timed out waiting for the answer"
    if isinstance(exc, httpx.WriteTimeout):
        return ErrorKind.WRITE_TIMEOUT, "timed out sending the request"
    if isinstance(exc, httpx.TimeoutException):
        return ErrorKind.TOTAL_TIMEOUT, message
    if isinstance(exc, httpx.ConnectError):
        if "ssl" in lowered or "certificate" in lowered or "tls" in lowered:
            return ErrorKind.TLS, f"TLS failed: {message}"
        if "refused" in lowered or "errno 111" in lowered:  # 111: ECONNREFUSED on Linux
            return ErrorKind.CONNECTION_REFUSED, "connection refused"
        if "name or service" in lowered or "nodename" in lowered or "getaddrinfo" in lowered:
            return ErrorKind.DNS, f"name lookup failed: {message}"
        return ErrorKind.CONNECTION_REFUSED, f"could not connect: {message}"
    if isinstance(exc, httpx.RemoteProtocolError):
        if "without sending" in lowered or "disconnected" in lowered or "incomplete" in lowered:
            return ErrorKind.CONNECTION_CLOSED, message
        return ErrorKind.PROTOCOL, message
    if isinstance(exc, httpx.ReadError | httpx.WriteError):
        if "reset" in lowered or "errno 104" in lowered:
            return ErrorKind.CONNECTION_RESET, "connection reset by the server"
        return ErrorKind.CONNECTION_CLOSED, message or "the connection closed"
    if isinstance(exc, httpx.DecodingError):
        return ErrorKind.MALFORMED, message
    if isinstance(exc, httpx.TooManyRedirects):
        return ErrorKind.REDIRECT, message
    return ErrorKind.OTHER, f"{type(exc).__name__}: {message}"
