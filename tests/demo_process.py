"""A demo endpoint in a process of its own, for tests where the client's own load must not slow
the server (the client at a rate it cannot send): it prints its URL, serves for at most
`--seconds`, and stops by itself."""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from latency_gate.demo import DemoServer, EndpointSpec  # noqa: E402


async def _serve(latency: float, seconds: float) -> None:
    spec = EndpointSpec(latency=latency, tokens=1, token_interval=0, stream_format="raw")
    async with DemoServer(spec) as server:
        print(server.url, flush=True)
        await asyncio.sleep(seconds)


@contextmanager
def demo_process(latency: float, seconds: float = 120.0) -> Iterator[str]:
    """The URL of a demo endpoint answering after `latency` s, served by a child process."""
    process = subprocess.Popen(
        [sys.executable, __file__, "--latency", str(latency), "--seconds", str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        if not url:
            raise RuntimeError("the demo process did not start")
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, required=True)
    parser.add_argument("--seconds", type=float, default=120.0)
    args = parser.parse_args()
    asyncio.run(_serve(args.latency, args.seconds))
