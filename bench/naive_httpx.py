"""The obvious httpx probe, as a blog post would write it: the peer latency-gate is measured beside.

One AsyncClient, `time.perf_counter()` around each `await client.get()`, `asyncio.gather` for a
burst. Prints one JSON object: {"sequential": [s, ...], "bursts": {"10": [s, ...]}, ...}, where the
first sequential call is the cold one (it opens the connection).

    python bench/naive_httpx.py URL --sequential 21 --burst 10 --burst 100
    python bench/naive_httpx.py URL --stream 6     # seconds to the first body chunk, per call
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

import httpx


async def _timed_get(client: httpx.AsyncClient, url: str) -> float:
    start = time.perf_counter()
    response = await client.get(url)
    elapsed = time.perf_counter() - start
    response.raise_for_status()
    return elapsed


async def _first_chunk(client: httpx.AsyncClient, url: str) -> float:
    start = time.perf_counter()
    first: float | None = None
    async with client.stream("GET", url) as response:
        async for chunk in response.aiter_bytes():
            if first is None and chunk:
                first = time.perf_counter() - start
    if first is None:
        raise RuntimeError("empty stream")
    return first


async def _main(url: str, sequential: int, bursts: list[int], stream: int) -> dict[str, object]:
    out: dict[str, object] = {}
    async with httpx.AsyncClient(timeout=30.0) as client:
        if stream:
            out["first_chunk"] = [await _first_chunk(client, url) for _ in range(stream)]
            return out
        out["sequential"] = [await _timed_get(client, url) for _ in range(sequential)]
        results: dict[str, list[float]] = {}
        for size in bursts:
            results[str(size)] = list(
                await asyncio.gather(*(_timed_get(client, url) for _ in range(size)))
            )
        out["bursts"] = results
    return out


def main() -> None:
    """Parse the arguments, run, print the JSON."""
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--sequential", type=int, default=21)
    parser.add_argument("--burst", type=int, action="append", default=[])
    parser.add_argument("--stream", type=int, default=0)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(_main(args.url, args.sequential, args.burst, args.stream))))


if __name__ == "__main__":
    main()
