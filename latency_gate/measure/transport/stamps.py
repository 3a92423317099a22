"""The stamps of one HTTP call, the context variable that carries them, and the kernel's stamps.

`CallStamps` lives in a context variable set by `begin_call` in the call's own task; the network
streams (stream.py, backend.py) fill it in. Times are wall-clock nanoseconds (`now_ns`), the clock
of the kernel's receive timestamps, which `_kernel_stamp` decodes from `recvmsg`'s ancillary data.
"""

from __future__ import annotations

import socket
import struct
import sys
import time
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache

from latency_gate.models import StampSource

# Linux's SO_TIMESTAMPNS (== SCM_TIMESTAMPNS); Python's socket module has no constant for it.
_SO_TIMESTAMPNS = 35
_TIMESPEC = struct.Struct("@qq")  # struct timespec on 64-bit Linux: tv_sec, tv_nsec
_TIMESPEC32 = struct.Struct("@ii")  # the same on 32-bit platforms without 64-bit time
_ANCILLARY_SIZE = socket.CMSG_SPACE(_TIMESPEC.size)


def now_ns() -> int:
    """The clock that matches the stamps: wall-clock nanoseconds (the kernel stamps are too)."""
    return time.time_ns()


@dataclass
class CallStamps:
    """Wall-clock ns stamps of one HTTP call, filled by the network backend in the call's own task.

    `source` says what the call actually got: KERNEL only if every read that returned data
    carried a kernel receive stamp. `start_ns` is the call's first network action: the start of
    `connect_tcp` (DNS included) for a call that opened its connection, else its first write.
    """

    source: StampSource
    start_ns: int | None = None
    dns_start_ns: int | None = None
    dns_end_ns: int | None = None
    connect_start_ns: int | None = None
    connect_end_ns: int | None = None
    tls_start_ns: int | None = None
    tls_end_ns: int | None = None
    first_write_ns: int | None = None
    last_write_ns: int | None = None
    first_read_ns: int | None = None  # receive stamp of the first read that returned data
    last_read_ns: int | None = None  # receive stamp of the newest read that returned data
    reads: int = 0
    bytes_read: int = 0
    new_connection: bool = False  # this call opened its connection (timed)
    preconnected: bool = False  # it used a connection opened ahead, untimed
    # The connection had answered an earlier request when this call began to write on it.
    reused_answered: bool = False

    def _stamp_read(self, nbytes: int, kernel_ns: int | None, returned_ns: int) -> None:
        if kernel_ns is None:
            self.source = StampSource.READ_RETURN
            stamp = returned_ns
        else:
            stamp = kernel_ns
        if self.first_read_ns is None:
            self.first_read_ns = stamp
        self.last_read_ns = stamp
        self.reads += 1
        self.bytes_read += nbytes

    def _stamp_write(self, stamp: int) -> None:
        if self.start_ns is None:
            self.start_ns = stamp
        if self.first_write_ns is None:
            self.first_write_ns = stamp
        self.last_write_ns = stamp


_current: ContextVar[CallStamps | None] = ContextVar("latency_gate_call_stamps", default=None)


@lru_cache(maxsize=1)
def kernel_stamps_supported() -> bool:
    """Whether this platform gives kernel receive timestamps (Linux's SO_TIMESTAMPNS)."""
    # Option numbers differ between systems: 35 means SO_TIMESTAMPNS on Linux only.
    if not sys.platform.startswith("linux"):
        return False
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
    except OSError:
        return False
    return True


# Linux stamps received packets only while some socket in the system asks for stamps, and it
# turns stamping on in a deferred kernel work item (net_enable_timestamp): segments that arrive
# on a new socket before that item runs carry no stamp at all. Measured here with no other
# stamping socket open: 73 of 200 first reads of a fresh loopback connection had none, so a
# cold call lost its kernel stamps about one time in three. One socket held for the life of the
# process keeps stamping on (0 of 100 missing once it was open).
_keeper: list[socket.socket] = []  # the one socket, once opened
_ARM_WAIT_S = 0.05  # enabling took 0.3 to 5 ms here; past this, reads just fall back


def hold_kernel_stamps() -> None:
    """Keep the kernel's receive stamping on for this process, waiting (at most 50 ms, once)
    until a loopback segment comes with a stamp. Blocking, but only on the first call: every
    later call returns at once. Called before a connection's first stamp is taken."""
    if _keeper or not kernel_stamps_supported():
        return
    keeper = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    keeper.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
    _keeper.append(keeper)
    deadline = time.monotonic() + _ARM_WAIT_S
    while time.monotonic() < deadline:
        try:
            if _loopback_segment_stamped():
                return
        except OSError:  # no loopback to try on: reads fall back where a stamp is missing
            return
        time.sleep(0.0005)


def _loopback_segment_stamped() -> bool:
    """Whether one byte sent over a fresh loopback TCP connection arrives with a kernel stamp."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as client:
            client.settimeout(1.0)
            client.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
            client.connect(listener.getsockname())
            accepted, _ = listener.accept()
            with accepted:
                accepted.sendall(b".")
                _data, ancdata, _flags, _addr = client.recvmsg(1, _ANCILLARY_SIZE)
    return _kernel_stamp(ancdata) is not None


def begin_call(source_hint: StampSource | None = None) -> CallStamps:
    """Start the stamps of a new call in the current task (a context variable) and return them.

    Call it inside the task that sends the request: tasks copy the context when created.
    Without a hint the source starts as what this platform can give; a read without a kernel
    stamp lowers it to READ_RETURN.
    """
    if source_hint is None:
        source_hint = StampSource.KERNEL if kernel_stamps_supported() else StampSource.READ_RETURN
    stamps = CallStamps(source=source_hint)
    _current.set(stamps)
    return stamps


def current_call() -> CallStamps | None:
    """The stamps of the call running in this task, or None outside a call."""
    return _current.get()


def _kernel_stamp(ancdata: list[tuple[int, int, bytes]]) -> int | None:
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS:
            layout = _TIMESPEC if len(data) >= _TIMESPEC.size else _TIMESPEC32
            seconds, nanoseconds = layout.unpack_from(data)
            stamp: int = seconds * 1_000_000_000 + nanoseconds
            if stamp:
                return stamp
    return None
