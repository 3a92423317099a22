"""Embedded loopback endpoints that misbehave on purpose, for the demo and every timing test.

A raw asyncio HTTP/1.1 server rather than a web framework, because the point is to decide exactly
when each byte leaves: headers held back, a stream buffered whole by a "layer in front", a reset
before the first byte, a body cut in the middle. Each `EndpointSpec` describes one endpoint's
behaviour; `DemoServer` serves it and keeps `RequestRecord`s, the server-side truth a test holds
the probe's measurements against.

The modules, one job each: `spec` (what an endpoint does: specs, faults, records and the timeline
of one answer), `shapes` (the answer in each stream format), `wire` (reading requests, writing
bytes), `answers` (what goes out for one request, and when), `server` (connections, cold start,
queueing, fault choice; `serve_in_thread`), `presets` (`classic_three`).
"""

from latency_gate.demo.presets import classic_three
from latency_gate.demo.server import DemoServer, serve_in_thread
from latency_gate.demo.spec import (
    INVALID_UTF8,
    PATHS,
    EndpointSpec,
    Fault,
    FaultKind,
    RequestRecord,
    StreamFormat,
)

__all__ = [
    "INVALID_UTF8",
    "PATHS",
    "DemoServer",
    "EndpointSpec",
    "Fault",
    "FaultKind",
    "RequestRecord",
    "StreamFormat",
    "classic_three",
    "serve_in_thread",
]
