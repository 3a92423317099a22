"""A/B at the same work on a real stack: two llama.cpp servers of one model side by side (issue 26).

    python bench/llm_ab.py --runs 3                   # every pair, 3 runs each
    python bench/llm_ab.py --pair threads --runs 1    # one pair

Each pair is a base server and a head server (PyPI xllamacpp, SmolLM2-135M-Instruct Q4_1, each
in a process of its own, 2 slots), probed by `latency-gate probe --baseline-url` as a user
would: streamed chat answers at temperature 0 to a prompt whose answer runs past the
servers' length caps (each call's prompt unique, the same on both arms call by call), the
default budgets off so that only the comparison is judged, at most --max-calls calls an arm.
The pairs:

- same: the same settings on both (2 threads, answers up to 64 tokens): should end
  "not regressed", decided;
- threads: the head on 1 thread against 2 (a slower decode): should be caught and named as
  time per token;
- longer: the head answering up to 80 tokens where the base stops at 64 (the server's
  n_predict, the request naming no length; the prompt runs past both): should be named as
  length;
- prompt: one server, one model, two requests (issue 41: `--baseline-body`): the head's system
  prompt asks for detail, the base's for one word, both up to 128 tokens: should be named as
  length, the time per token not blamed.

Writes bench/results/llm_ab.json (every run's comparison) and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from latency_gate.config import build_target  # noqa: E402
from latency_gate.models import RunResult  # noqa: E402
from latency_gate.run import probe  # noqa: E402

# An answer that runs past both servers' n_predict, so that the cap sets its length: at
# temperature 0 SmolLM2 answered "Say something about the sea" in 16 tokens on every call, under
# both caps, and the "longer" pair compared the same answers (bench/results/llm_ab_40b.json).
PROMPT = "Count from one to two hundred, one number a line."
OUT = ROOT / "bench" / "results" / "llm_ab.json"


@dataclass(frozen=True)
class Settings:
    threads: int = 2
    n_predict: int = 64
    slots: int = 2


PAIRS: dict[str, tuple[Settings, Settings | None]] = {
    "same": (Settings(), Settings()),
    "threads": (Settings(threads=1), Settings()),
    "longer": (Settings(n_predict=80), Settings()),
    "prompt": (Settings(n_predict=128), None),  # None: the base is the head's server
}
# The "prompt" pair's two requests: a question the model can answer in a word or at length.
QUESTION = "What is the sea?"
SYSTEMS = {
    "head": "Answer in detail, in at least five full sentences.",
    "base": "Answer in one word.",
}


def serve(model: str, port: int, threads: int, n_predict: int, slots: int) -> None:
    """The llama.cpp server in this process until SIGTERM (`--serve MODEL PORT THREADS N SLOTS`)."""
    import xllamacpp

    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    params = xllamacpp.CommonParams()
    params.model.path = model
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.n_ctx = 4096
    params.n_parallel = slots
    params.n_predict = n_predict
    params.cpuparams.n_threads = threads
    server = xllamacpp.Server(params)
    signal.sigwait({signal.SIGTERM, signal.SIGINT})
    del server


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def server(model: str, settings: Settings) -> Iterator[str]:
    """A llama.cpp server of these settings in a process of its own; its base URL."""
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            __file__,
            "--serve",
            model,
            str(port),
            str(settings.threads),
            str(settings.n_predict),
            str(settings.slots),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"llama.cpp exited {proc.returncode}")
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(f"{base}/health", timeout=2) as response,
            ):
                if response.status == 200:
                    break
            time.sleep(0.2)
        else:
            raise RuntimeError("llama.cpp not healthy after 120 s")
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def _body(system: str | None, *, ignore_eos: bool) -> dict[str, object]:
    """A streamed chat request at temperature 0: PROMPT alone, or QUESTION under `system`."""
    messages = [{"role": "user", "content": PROMPT if system is None else QUESTION}]
    if system is not None:
        messages.insert(0, {"role": "system", "content": system})
    body: dict[str, object] = {"messages": messages, "stream": True, "temperature": 0}
    if ignore_eos:
        body["ignore_eos"] = True
    return body


def one_run(
    head: str, base: str, max_calls: int, *, ignore_eos: bool = False, systems: bool = False
) -> RunResult:
    """One A/B run; `ignore_eos` asks each server for answers of its whole n_predict (SmolLM2
    stopped "count to two hundred" after 14 tokens, under both caps); `systems`: each arm its
    own request (SYSTEMS), the base's given as `--baseline-body`."""
    settings = {
        "url": f"{head}/v1/chat/completions",
        "baseline-url": f"{base}/v1/chat/completions",
        "body": json.dumps(_body(SYSTEMS["head"] if systems else None, ignore_eos=ignore_eos)),
    }
    if systems:
        settings["baseline-body"] = json.dumps(_body(SYSTEMS["base"], ignore_eos=ignore_eos))
    target = build_target(
        {
            **settings,
            "concurrency": "4",
            "max-calls": str(max_calls),
            "timeout": "60s",
            "max-warm-p95": "off",
            "max-concurrent-p95": "off",
            "max-error-rate": "off",
        }
    )
    return asyncio.run(probe(target, measure_floor=False))


def summary(pair: str, run: int, result: RunResult, seconds: float) -> dict[str, object]:
    check = result.baseline
    assert check is not None
    outcomes = {d.number: d.outcome for d in check.deltas if d.outcome is not None}
    intervals = {d.number: d.interval for d in check.deltas if d.interval is not None}
    parts = {p.part: (p.moved, p.ratio, p.interval) for p in check.parts}
    cause = next((d.cause for d in check.deltas if d.cause), "")
    return {
        "pair": pair,
        "run": run,
        "verdict": result.verdict.label,
        "outcomes": outcomes,
        "intervals": intervals,
        "parts": parts,
        "length": None if check.length is None else check.length.model_dump(),
        "cause": cause,
        "calls_per_arm": len(result.samples),
        "seconds": round(seconds, 1),
        "load_average": os.getloadavg()[0],
        "failed": sum(not s.ok for s in (*result.samples, *result.base_samples)),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--model", default=os.environ.get("LATENCY_GATE_TEST_MODEL"))
    parser.add_argument("--pair", choices=sorted(PAIRS), action="append")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--max-calls", type=int, default=200)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument(
        "--ignore-eos", action="store_true", help="answers of each server's whole n_predict"
    )
    args = parser.parse_args()
    if not args.model:
        raise SystemExit("--model (or LATENCY_GATE_TEST_MODEL) is needed")
    rows = []
    for pair in args.pair or list(PAIRS):
        head_settings, base_settings = PAIRS[pair]
        with contextlib.ExitStack() as servers:
            head = servers.enter_context(server(args.model, head_settings))
            base = (
                head
                if base_settings is None
                else servers.enter_context(server(args.model, base_settings))
            )
            for run in range(1, args.runs + 1):
                began = time.monotonic()
                result = one_run(
                    head,
                    base,
                    args.max_calls,
                    ignore_eos=args.ignore_eos,
                    systems=base_settings is None,
                )
                row = summary(pair, run, result, time.monotonic() - began)
                rows.append(row)
                print(json.dumps(row, default=str), flush=True)
                # Written after every run: a run takes minutes, and the machine may be needed.
                args.out.write_text(
                    json.dumps(rows, indent=1, default=str) + "\n", encoding="utf-8"
                )
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--serve":
        model, port, threads, n_predict, slots = sys.argv[2:7]
        serve(model, int(port), int(threads), int(n_predict), int(slots))
        raise SystemExit(0)
    raise SystemExit(main())
