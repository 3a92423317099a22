"""Where the probe's timestamps come from: an httpcore network backend that stamps at the socket.

Every HTTP call gets a `CallStamps` in a context variable (`begin_call`), set in the call's own
task; the backend's streams fill it in as they act on the socket, since httpcore does all the I/O
of a request in the task that sent it. Stamps are wall-clock nanoseconds (`time.time_ns()`),
because that is the clock of the kernel's receive timestamps:

- a write is stamped just before the bytes go to `send()`;
- a read is stamped with the kernel's receive time of the data (`SO_TIMESTAMPNS`, read through
  `recvmsg`), which does not depend on when the event loop got round to the socket. Where the
  kernel gives no stamp (not Linux, or it was not asked for) the read is stamped when `recvmsg`
  returned, in the reader callback, and the call says so (`StampSource.READ_RETURN`).

TLS runs on `ssl.MemoryBIO` over the raw socket, so https keeps the kernel stamps too.

The kernel stamps the newest packet a read consumed, and it merges queued packets (a 1-byte read
of two queued packets 50 ms apart still carries the newer one's stamp), so reads must happen
promptly: each read waits with `loop.add_reader` and calls `recvmsg` in the callback itself.
See ../shared/TIMING.md for the measurements behind this design.

The package: `stamps` (CallStamps, the context variable, the kernel stamps' decoding), `stream`
(one connection: reads, writes, TLS), `backend` (the network backend and the httpx transport).
"""

from latency_gate.measure.transport.backend import (
    StampingBackend,
    build_transport,
    make_ssl_context,
)
from latency_gate.measure.transport.stamps import (
    CallStamps,
    begin_call,
    current_call,
    hold_kernel_stamps,
    kernel_stamps_supported,
    now_ns,
)

__all__ = [
    "CallStamps",
    "StampingBackend",
    "begin_call",
    "build_transport",
    "current_call",
    "hold_kernel_stamps",
    "kernel_stamps_supported",
    "make_ssl_context",
    "now_ns",
]
