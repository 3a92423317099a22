"""Waiting for a starting server (--wait-ready): GET the URL until it answers anything but
502, 503 or 504, within a deadline. Costs no tokens and warms no cache. A URL that refuses
GET (405, 501) says nothing about readiness that way: the wait goes on with the target's own
request (its method and body), of which only the status is read."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import httpx

from latency_gate.config import Target
from latency_gate.measure import transport
from latency_gate.measure.clients import ClientKit

__all__ = ["wait_ready"]


# Statuses a starting server or a gateway in front of one answers until it is ready.
_NOT_READY = frozenset({502, 503, 504})
# A GET answered so says only that this URL takes no GET (an LLM's POST-only route), not that
# the model behind it is ready: a server still loading answers GET 405 and POST 503. A 404
# still counts as ready: many servers answer a GET on a POST-only path with 404 once they are
# up, and polling those with the real request would spend an answer before every cold call.
_NO_GET = frozenset({405, 501})


_READY_POLL = 0.25


async def wait_ready(
    kit: ClientKit,
    *,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> float | None:
    """Poll the URL of the kit's target (GET, a new connection each time) until it answers with
    any status but 502, 503 or 504, for at most `target.wait_ready` seconds; the seconds it
    took, or None.

    GET costs no tokens and warms no cache: the cold call stays the first real call. A starting
    llama.cpp refuses connections, then answers 503 while it loads the model. When GET gets
    405 or 501 (and the target's method is not GET) the polls send the target's own request
    instead and read only its status: a ready server may then start one answer, so the cold
    call may find the model's first inference done.
    """
    target = kit.target
    began = time.monotonic()
    deadline = began + target.wait_ready
    method = "GET"
    for _ in range(100_000):  # bounded by the deadline; the count only guards the loop
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        backend = transport.StampingBackend(kernel_stamps=False)
        async with httpx.AsyncClient(
            transport=transport.build_transport(
                backend, verify=kit.context, proxy=target.proxy, **kit.versions
            ),
            timeout=min(target.timeout, 5.0, remaining),
            trust_env=False,
        ) as client:
            try:
                status = await _status(client, target, method)
            except httpx.HTTPError:
                pass
            else:
                if method == "GET" and status in _NO_GET and target.method != "GET":
                    method = target.method  # and poll again at once
                    continue
                if status not in _NOT_READY:
                    return time.monotonic() - began
            finally:
                await backend.aclose()
        await sleep(min(_READY_POLL, max(deadline - time.monotonic(), 0.0)))
    return None


async def _status(client: httpx.AsyncClient, target: Target, method: str) -> int:
    """The status of `method` to the target's URL; with the target's own method its body is
    sent, and the answer is not read past its headers."""
    body = target.request_body() if method == target.method else None
    async with client.stream(
        method, target.url, headers=target.request_headers(), content=body
    ) as response:
        return response.status_code
