"""Waiting for a starting server (--wait-ready): GET the URL until it answers anything but
502, 503 or 504, within a deadline. Costs no tokens and warms no cache."""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Awaitable, Callable

import httpx

from latency_gate.config import Target
from latency_gate.measure import transport
from latency_gate.measure.clients import versions

__all__ = ["wait_ready"]


# Statuses a starting server or a gateway in front of one answers until it is ready.
_NOT_READY = frozenset({502, 503, 504})


_READY_POLL = 0.25


async def wait_ready(
    target: Target,
    context: ssl.SSLContext,
    *,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> float | None:
    """Poll the target's URL (GET, a new connection each time) until it answers with any status
    but 502, 503 or 504, for at most `target.wait_ready` seconds; the seconds it took, or None.

    GET costs no tokens and warms no cache: the cold call stays the first real call. A starting
    llama.cpp refuses connections, then answers 503 while it loads the model.
    """
    began = time.monotonic()
    deadline = began + target.wait_ready
    for _ in range(100_000):  # bounded by the deadline; the count only guards the loop
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        backend = transport.StampingBackend(kernel_stamps=False)
        async with httpx.AsyncClient(
            transport=transport.build_transport(
                backend, verify=context, proxy=target.proxy, **versions(target)
            ),
            timeout=min(target.timeout, 5.0, remaining),
            trust_env=False,
        ) as client:
            try:
                response = await client.get(target.url, headers=target.request_headers())
            except httpx.HTTPError:
                pass
            else:
                if response.status_code not in _NOT_READY:
                    return time.monotonic() - began
            finally:
                await backend.aclose()
        await sleep(min(_READY_POLL, max(deadline - time.monotonic(), 0.0)))
    return None
