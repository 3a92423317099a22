"""Credentials on a followed redirect: every hop held to the rule of the first request.

Credentials stay at the target's origin (scheme, host and port), as for the base of an A/B run
(config/ab.py). httpx drops only `Authorization` on a redirect to another origin; a hop there
here loses every header that may hold a secret (the key, in `Authorization` or `x-api-key`, a
cookie, and each -H value that is not plainly harmless), and a hop that would also resend a
body holding a credential field (a 307 or 308 keeps the body) is not made: the call fails
saying why, as an unfollowed redirect does.

A Location that names no URL a call can go to (`data:`, `javascript:`, another scheme, a port
out of range) fails the call the same way, followed or not: httpx builds the next request from
it in both cases, and the errors that raises (InvalidURL, ValueError, OverflowError on connect)
are no failure of a call. Each hop httpx makes is marked with the status that sent it there
(`REDIRECTED_BY`), so that a hop that cannot be reached is named as the hop, not the endpoint.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

import httpx

from latency_gate.config import Target
from latency_gate.config.ab import origin_text, same_origin
from latency_gate.config.secrets import HARMLESS_HEADERS, credential_fields

__all__ = ["REDIRECTED_BY", "CredentialRule", "RedirectRefused", "unusable_location"]

REDIRECTED_BY = "latency_gate.redirected_by"
"""A hop's request extension: the status of the answer whose Location it follows."""

Hook = Callable[[httpx.Request], Awaitable[None]] | Callable[[httpx.Response], Awaitable[None]]


class RedirectRefused(httpx.RequestError):
    """A redirect not followed: the hop would carry a credential to another origin."""


class CredentialRule:
    """What a target's requests carry that must not leave its origin, worked out once (a burst
    shares it); `hooks()` gives a client the event hooks that apply it to each hop."""

    def __init__(self, target: Target) -> None:
        self.origin_url = target.url
        self.secret_headers = frozenset({"authorization", "cookie"}) | {
            name.lower()
            for name, _ in target.request_headers()
            if name.lower() not in HARMLESS_HEADERS
        }
        body = target.request_body()
        self.body_fields = credential_fields(body.decode("utf-8", "replace")) if body else []

    def hooks(self) -> dict[str, list[Hook]]:
        """Event hooks for one client (they remember the status of its last answer, so that a
        refusal names the redirect it did not follow)."""
        last_status: list[int] = []

        async def on_response(response: httpx.Response) -> None:
            last_status[:] = [response.status_code]
            if response.has_redirect_location:
                why = unusable_location(response.headers["location"])
                if why is not None:
                    raise RedirectRefused(
                        f"HTTP {response.status_code} redirect to {why}, not followed",
                        request=response.request,
                    )

        async def on_request(request: httpx.Request) -> None:
            if last_status and 300 <= last_status[0] < 400:
                # A hop (or, after a hop that failed, the next call's first request: its URL
                # is the target's, which is how a failure tells the two apart).
                request.extensions[REDIRECTED_BY] = last_status[0]
            if same_origin(self.origin_url, str(request.url)):
                return
            for name in self.secret_headers & {name.lower() for name in request.headers}:
                del request.headers[name]
            carries_body = request.headers.get("content-length", "0") != "0" or (
                "transfer-encoding" in request.headers
            )
            if self.body_fields and carries_body:
                status = f"HTTP {last_status[0]} " if last_status else ""
                raise RedirectRefused(
                    f"{status}redirect to {origin_text(str(request.url))} not followed: it is "
                    "another origin, and the request body holds a credential "
                    f"({', '.join(self.body_fields)})",
                    request=request,
                )

        return {"request": [on_request], "response": [on_response]}


def unusable_location(location: str) -> str | None:
    """Why a redirect's Location names no URL a call can go to, as "a data: URL" or "a URL whose
    port 99999 is not a port (0 to 65535)"; None for an http(s) URL or a relative one."""
    try:
        parts = urlsplit(location.strip())
    except ValueError as exc:  # an unclosed [ of an IPv6 address
        return f"an invalid URL ({exc})"
    scheme = parts.scheme.lower()
    if scheme and scheme not in ("http", "https"):
        article = "an" if scheme[0] in "aeio" else "a"  # a urn: URL
        return f"{article} {scheme}: URL"
    try:
        parts.port  # noqa: B018 (read for its check: ValueError when out of range)
    except ValueError:
        return f"a URL whose port {parts.netloc.rpartition(':')[2]} is not a port (0 to 65535)"
    try:
        httpx.URL(location)
    except httpx.InvalidURL as exc:
        return f"an invalid URL ({exc})"
    return None
