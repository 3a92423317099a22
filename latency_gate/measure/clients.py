"""The HTTP clients a run calls through: one client with one connection for the sequential
calls, one small client per burst call with its connection opened ahead (one big pool costs
12-14 ms of CPU per request and stamps late: docs/design.md, "The clock"), the TLS context the
target asked for, and each call's body (a fresh mark in the prompt with --vary-prompt).

A `ClientKit` is all of it for one arm of a run, worked out once from its Target (the TLS
context, the HTTP versions to offer, the timeouts, the credential rule of its redirects) and
handed out from there: `client()`, `send()`, `burst()`, `preconnect()`.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import ssl
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import httpcore
import httpx

from latency_gate.config import Target
from latency_gate.measure import transport
from latency_gate.measure.calls import call
from latency_gate.measure.prompts import Marks, vary_body
from latency_gate.measure.redirects import CredentialRule
from latency_gate.models import CallPhase, Sample

__all__ = ["ClientKit", "ssl_context_for", "versions"]


def ssl_context_for(target: Target) -> ssl.SSLContext:
    """The TLS settings the target asked for: default trust, a CA bundle, or none (insecure)."""
    if target.insecure:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    if target.ca_bundle is not None:
        return transport.make_ssl_context(target.ca_bundle)
    if urlsplit(target.url).scheme == "http" and not target.follow_redirects:
        # Never used for plain http; loading the CA bundle would cost ~40 ms of start-up.
        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    return transport.make_ssl_context(True)


def _body(target: Target, marks: Marks, kind: CallPhase, index: int) -> tuple[bytes | None, bool]:
    """This call's body: the target's, with the run's mark of this call (by kind and index) at
    the start of its prompt when --vary-prompt is on; and whether the prompt was varied."""
    if not target.vary_prompt:
        return None, False
    body, varied = vary_body(target, marks.mark(kind.value, index), where="start")
    return (body.encode(), True) if varied and body is not None else (None, False)


def versions(target: Target) -> dict[str, bool]:
    """HTTP versions to offer: 1.1; with --http2 also 2 over TLS, and only 2 (prior knowledge)
    for an http:// URL, which has no handshake to agree on it."""
    if not target.http2:
        return {"http1": True, "http2": False}
    return {"http1": urlsplit(target.url).scheme == "https", "http2": True}


class ClientKit:
    """What one arm's calls go through, worked out once from its `target`: the TLS `context`
    (the target's own when None), the HTTP versions, the timeouts, the credential rule of a
    followed redirect (a burst's clients share it), and whether to take kernel stamps."""

    def __init__(
        self, target: Target, kernel_stamps: bool = True, context: ssl.SSLContext | None = None
    ) -> None:
        self.target = target
        self.kernel_stamps = kernel_stamps
        self.context = ssl_context_for(target) if context is None else context
        self.versions = versions(target)
        self.timeout = httpx.Timeout(target.timeout, connect=min(target.timeout, 10.0))
        self.credentials = CredentialRule(target)

    def _new_client(self, backend: transport.StampingBackend) -> httpx.AsyncClient:
        """A client with one connection on `backend`."""
        return httpx.AsyncClient(
            transport=transport.build_transport(
                backend,
                verify=self.context,
                max_connections=1,
                proxy=self.target.proxy,
                **self.versions,
            ),
            timeout=self.timeout,
            follow_redirects=self.target.follow_redirects,
            event_hooks=self.credentials.hooks(),
            trust_env=False,
        )

    @contextlib.asynccontextmanager
    async def client(self) -> AsyncIterator[tuple[httpx.AsyncClient, transport.StampingBackend]]:
        """A client with one connection on a stamping backend of its own, closed on exit."""
        backend = transport.StampingBackend(kernel_stamps=self.kernel_stamps)
        async with self._new_client(backend) as client:
            try:
                yield client, backend
            finally:
                await backend.aclose()

    async def send(
        self,
        client: httpx.AsyncClient,
        phase: CallPhase,
        index: int,
        marks: Marks | None = None,
        *,
        due_ns: int | None = None,
    ) -> Sample:
        """One call of `phase` on `client`, the `index`-th of its kind; its prompt marked by
        `marks` (a new run's own when None); `due_ns`: when a call at a rate was due (its send
        lag)."""
        body, varied = _body(self.target, marks or Marks(), phase, index)
        sample = await call(client, self.target, phase, index, body=body, due_ns=due_ns)
        return sample.model_copy(update={"prompt_varied": True}) if varied else sample

    async def burst(
        self,
        into: list[Sample],
        *,
        concurrency: int | None = None,
        first_index: int = 0,
        marks: Marks | None = None,
    ) -> None:
        """`concurrency` calls at once (the target's by default), one small client each;
        connections opened first unless asked not to, and each closed as its call ends. The
        samples land in `into` in index order, also when cancelled. Prompts are marked by
        `marks` (a new run's own when None)."""
        target = self.target
        size = target.concurrency if concurrency is None else concurrency
        marks = marks or Marks()
        backend = transport.StampingBackend(kernel_stamps=self.kernel_stamps)
        clients = [self._new_client(backend) for _ in range(size)]
        tasks: list[asyncio.Task[Sample]] = []
        try:
            if not target.fresh_connections:
                await self.preconnect(backend, size)
            go = asyncio.Event()
            # When the burst was told to go: each call's send lag is from it.
            went_ns: list[int] = []

            async def one(client: httpx.AsyncClient, index: int) -> Sample:
                body, varied = _body(target, marks, CallPhase.CONCURRENT, index)
                await go.wait()
                sample = await call(
                    client, target, CallPhase.CONCURRENT, index, body=body, due_ns=went_ns[0]
                )
                # Its connection goes as its answer ends, as an independent user's would: a
                # server that gives each connection a thread (llama.cpp's) would otherwise keep
                # the later calls of the burst waiting for a thread until a keep-alive timeout.
                await client.aclose()
                return sample.model_copy(update={"prompt_varied": True}) if varied else sample

            tasks = [asyncio.create_task(one(c, first_index + i)) for i, c in enumerate(clients)]
            await asyncio.sleep(0)  # every task reaches go.wait() before the burst starts
            gc_was_enabled = gc.isenabled()
            gc.disable()  # a collection inside the burst would delay every stamp taken in Python
            try:
                went_ns.append(transport.now_ns())
                go.set()
                await asyncio.gather(*tasks)
            finally:
                if gc_was_enabled:
                    gc.enable()
        finally:
            # Finished calls are kept whatever happened to the others (an interrupt, say).
            into += [
                t.result() for t in tasks if t.done() and not t.cancelled() and not t.exception()
            ]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for client in clients:
                await client.aclose()
            await backend.aclose()

    async def preconnect(self, backend: transport.StampingBackend, count: int) -> None:
        """`count` connections opened ahead on `backend` (untimed): the burst's, or one for a
        call at a rate."""
        target = self.target
        parts = urlsplit(target.url)
        https = parts.scheme == "https"
        if target.proxy is not None:
            # Every connection goes to the proxy, TLS (if any) inside its CONNECT tunnel: open
            # the TCP connections to the proxy ahead, and leave the rest to the calls.
            parts, https = urlsplit(target.proxy), False
        with contextlib.suppress(OSError, httpcore.NetworkError, httpcore.TimeoutException):
            # A failed pre-connect is not a measurement: the calls will meet the same trouble on
            # their own connections and report it.
            await backend.preconnect(
                parts.hostname or "",
                parts.port or (443 if https else 80),
                count,
                ssl_context=self.context if https else None,
                server_hostname=parts.hostname if https else None,
                timeout=min(target.timeout, 10.0),
                http2=target.http2,
            )
