"""Running a coroutine so that a cancelled CI job still ends with a report."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_with_signals(coro: Coroutine[Any, Any, T]) -> T:
    """Run coro in a new event loop; SIGINT and SIGTERM cancel it instead of killing us.

    The probe answers a cancellation by returning the calls finished so far, marked
    interrupted, so the edge can still write every report (a cancelled job sends SIGTERM).
    """

    async def runner() -> T:
        loop = asyncio.get_running_loop()
        task = asyncio.ensure_future(coro)
        installed = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            # Not on Windows, and not outside the main thread: then signals act as usual.
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, task.cancel)
                installed.append(sig)
        try:
            return await task
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)

    return asyncio.run(runner())
