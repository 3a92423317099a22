"""Embedded loopback endpoints that misbehave on purpose, for the demo and every timing test."""

from latency_gate.demo.server import (
    INVALID_UTF8,
    PATHS,
    DemoServer,
    EndpointSpec,
    Fault,
    FaultKind,
    RequestRecord,
    StreamFormat,
    classic_three,
    serve_in_thread,
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
