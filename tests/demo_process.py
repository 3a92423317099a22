"""Demo endpoints in processes of their own: `demo_process`, for tests where the client's own
load must not slow the server (the client at a rate it cannot send): it prints its URL, serves
for at most `--seconds`, and stops by itself; and `demo_server`, `latency-gate demo-server` as
a workflow's step starts it, on a port it picks itself."""

from __future__ import annotations

import argparse
import asyncio
import re
import select
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
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
        _stop(process)


@contextmanager
def demo_server(host: str, *options: str) -> Iterator[str]:
    """`latency-gate demo-server` as a process of its own on `host`, with its `options`
    (`--slots 2`); yields its URL. Port 0: the server binds a port the kernel picks and prints
    it, so no other test's server can take it between a guess and the bind."""
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "latency_gate", "demo-server"),
            *("--host", host, "--port", "0", *options),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], 30.0)
        line = process.stdout.readline() if ready else ""
        match = re.match(r"serving \S+ at (\S+) ", line)
        if match is None:
            if process.poll() is not None or line:  # it said something else: say all of it
                with suppress(subprocess.TimeoutExpired):
                    line += process.communicate(timeout=5)[0]
            raise RuntimeError(f"the demo server did not start within 30 s:\n{line}")
        yield match[1]
    finally:
        _stop(process)


def _stop(process: subprocess.Popen[str]) -> None:
    """Stop a process started here, by its PID: SIGTERM, then SIGKILL after 10 s."""
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
