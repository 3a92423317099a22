"""Record the latency shape of a real LLM server, for bench/statsim.py's "real shape" rows.

    python bench/llama_shape.py --model .cache/models/SmolLM2-135M-Instruct.Q4_1.gguf

Starts llama.cpp's server (PyPI xllamacpp) with the test model on 127.0.0.1, 2 slots and 2
threads as in CI, and probes it with latency-gate's own engine: streamed chat answers of varied
length (the model samples, and stops when it is done, at most `--max-tokens`), `--warm` calls
one at a time and `--bursts` bursts of `--concurrency` calls (more calls than slots: the
later ones queue, as real users do). Writes bench/data/llama_shape.json: every successful
call's latency by kind, the answer lengths, and how they were recorded. The simulation scales
these latencies to the p95 it needs; only their shape is used.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import socket
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from latency_gate.assess.numbers import work  # noqa: E402
from latency_gate.config import build_target  # noqa: E402
from latency_gate.measure.engine import Measurement, MoreCalls, measure  # noqa: E402
from latency_gate.models import CallPhase, Sample  # noqa: E402

OUT = ROOT / "bench" / "data" / "llama_shape.json"
PROMPT = "Say something about the sea, as long or as short as you like."


class _OneMore:
    """A looks sampler (latency_gate/measure/sampler.py): `bursts` more bursts once, then none."""

    def __init__(self, bursts: int) -> None:
        self.bursts: int | None = bursts

    def next(self, _: Sequence[Sample], /) -> MoreCalls | None:
        bursts, self.bursts = self.bursts, None
        return None if bursts is None else MoreCalls(0, bursts, "recording the shape")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_healthy(base: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/health", timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"llama.cpp at {base} not healthy after {timeout:.0f} s")


def _rounded(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 6)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=os.environ.get("LATENCY_GATE_TEST_MODEL"))
    parser.add_argument("--warm", type=int, default=400)
    parser.add_argument("--bursts", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    if not args.model:
        raise SystemExit("--model (or LATENCY_GATE_TEST_MODEL) is needed")
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(args.model)
    params.hostnames = ["127.0.0.1"]
    params.port = port = _free_port()
    params.n_ctx = 2048
    params.n_parallel = 2
    params.cpuparams.n_threads = 2
    server = xllamacpp.Server(params)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(base)
        target = build_target(
            {
                "url": f"{base}/v1/chat/completions",
                "prompt": PROMPT,
                "model": "smollm2",
                "stream": "true",
                "max-tokens": str(args.max_tokens),
                "warm-calls": str(args.warm),
                "concurrency": str(args.concurrency),
                "max-calls": "100000",
                "on-undecided": "pass",
            }
        )
        into = Measurement()
        started = time.time()
        asyncio.run(measure(target, into, more=_OneMore(args.bursts - 1)))
        seconds = time.time() - started
    finally:
        del server
        gc.collect()
    ok = [s for s in into.samples if s.ok and s.latency is not None]
    data = {
        "warm": [round(s.latency or 0.0, 6) for s in ok if s.phase is CallPhase.WARM],
        "concurrent": [round(s.latency or 0.0, 6) for s in ok if s.phase is CallPhase.CONCURRENT],
        "tokens": {
            kind.value: [s.tokens for s in ok if s.phase is kind]
            for kind in (CallPhase.WARM, CallPhase.CONCURRENT)
        },
        # Each call's first token and time per token after it (issue 41: the spread the
        # same-work simulations give the first token is measured here, not assumed).
        "first_token": {
            kind.value: [_rounded(s.timings.first_token) for s in ok if s.phase is kind]
            for kind in (CallPhase.WARM, CallPhase.CONCURRENT)
        },
        "per_token": {
            kind.value: [_rounded(work.per_token(s)) for s in ok if s.phase is kind]
            for kind in (CallPhase.WARM, CallPhase.CONCURRENT)
        },
        "recorded": {
            "what": "latency-gate's engine against llama.cpp (xllamacpp) serving "
            "SmolLM2-135M-Instruct Q4_1, 2 slots, 2 threads, streamed chat answers",
            "prompt": PROMPT + " (varied per call)",
            "max_tokens": args.max_tokens,
            "concurrency": args.concurrency,
            "failed_calls": sum(not s.ok for s in into.samples),
            "seconds": round(seconds, 1),
            "date": time.strftime("%Y-%m-%d", time.gmtime()),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores",
            "xllamacpp": getattr(xllamacpp, "__version__", "unknown"),
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
            "niceness": os.nice(0),
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}: {len(data['warm'])} warm, {len(data['concurrent'])} concurrent")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
