"""latency-gate beside aiperf and guidellm on a real LLM: the llama.cpp test server, 3 rounds.

    python bench/llm_peers.py                  # build the peers' venv if missing, then measure
    python bench/llm_peers.py --sequential 20 --burst 4 --max-tokens 64 --rounds 3
    python bench/llm_peers.py --peers-venv DIR # where aiperf and guidellm live [see --help]
    python bench/llm_peers.py --name llm_peers_run5   # bench/results/llm_peers_run5.{json,md}

Before each round it waits (every 30 s, at most --wait-quiet) until no pytest, bench/run.py or
statsim runs and the 1-minute load average is below --max-load, and records that load: on 2
cores, any other busy process slows llama.cpp's 2 threads many times over. Each round starts a
new server and runs the tools in a rotated order; the report gives each round and the medians.

Run by hand, not by CI: aiperf and guidellm are not dependencies of this project. They are
installed from PyPI into a virtualenv of their own (`--peers-venv`, made with pip on first use),
never into the environment that runs the project's tests (they pin other httpx/pydantic
versions). Their tokenizer is built offline from the GGUF model file (transformers + gguf in
that venv), since no model hub is reachable.

The server is llama.cpp's own HTTP server (PyPI xllamacpp) with SmolLM2-135M-Instruct Q4_1 on
2 threads, 4 slots, in a process of its own; its log gives, per request, the prompt's eval time
(the server's time to the first token), the generation time and the total: the reference. Every
tool makes the same calls in the same run: 1 call that is not counted (cold / warm-up), N
sequential streamed calls, then a burst of B calls at once, each prompt unique (a random mark
before the same text, as latency-gate's --vary-prompt does) and asking for --max-tokens tokens.

Per tool: its own reported first-token p50, latency p50/p95 and inter-token latency (from its
per-request records, the same percentile for all), its wall and CPU time (os.wait4 of the tool
and its waited children), its start-up (exec to its first request in the server's log) and the
server's CPU while it ran. Then each tool's numbers minus the server's for the same requests.

The second reference is the wire: tcpdump on lo, the server's port only, during each tool's
turn (needs tcpdump and root; --no-capture goes without). Per TCP connection each request is
paired with its response; wire latency is the packet completing `data: [DONE]` minus the
request's last byte, wire first token the first packet carrying a content delta minus the same.
Each call of a tool is matched to its exchange by identity (aiperf's X-Request-ID, guidellm's
prompt mark, latency-gate's answer size), then by time; the report gives per tool the median
and p95 of (tool - wire) per call, and per sequential call the wire minus the server's log.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import secrets
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))

from latency_gate.assess.numbers.stats import percentile  # noqa: E402 - after the path is set

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
PROMPT = "Write a long story about a lighthouse keeper and the storm."
PEERS = ("aiperf==0.13.0", "guidellm==0.8.1", "gguf")
DEFAULT_VENV = Path(tempfile.gettempdir()) / "latency-gate-peers-venv"
SLOTS = 4
# aiperf's sequential phase: a request rate (per s) well above the server's pace, so that with a
# concurrency limit of 1 each call starts within one tick of the last one's end (see below).
AIPERF_POLL_RATE = 50
CLK_TCK = os.sysconf("SC_CLK_TCK")

# llama.cpp's log: "M.SS.mmm.uuu I slot print_timing: id  3 | task 195 | prompt eval time = ..."
LOG_TIME = r"^(\d+)\.(\d+)\.(\d+)\.(\d+) "
TIMING = re.compile(
    LOG_TIME + r".*task (\d+) \|\s+(prompt eval|eval|total) time =\s+([\d.]+) ms /\s+(\d+) tokens"
)
LAUNCH = re.compile(LOG_TIME + r".*launch_slot_: .*task (\d+) \| processing task")


def log_seconds(match: re.Match[str]) -> float:
    minutes, seconds, millis, micros = (int(match.group(i)) for i in range(1, 5))
    return minutes * 60 + seconds + millis / 1e3 + micros / 1e6


def pct(values: Sequence[float], q: float) -> float | None:
    return percentile(values, q) if values else None


# --- the server -----------------------------------------------------------------------------


def serve(model: str, port: int, slots: int) -> None:
    """The llama.cpp server in this process until SIGTERM (run as `--serve MODEL PORT SLOTS`)."""
    import xllamacpp

    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    params = xllamacpp.CommonParams()
    params.model.path = model
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.n_ctx = 2048
    params.n_parallel = slots
    params.cpuparams.n_threads = 2
    server = xllamacpp.Server(params)
    print("serving", flush=True)
    signal.sigwait({signal.SIGTERM, signal.SIGINT})
    del server


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Task:
    """One request as the server logged it (ms)."""

    task: int
    launched: float  # seconds on the server log's clock
    prompt_ms: float = 0.0
    prompt_tokens: int = 0
    eval_ms: float = 0.0
    eval_tokens: int = 0
    total_ms: float = 0.0

    @property
    def gap_ms(self) -> float | None:
        """The mean gap between generated tokens: eval time over the gaps it spans."""
        return self.eval_ms / (self.eval_tokens - 1) if self.eval_tokens > 1 else None


class LlamaServer:
    """llama.cpp with `slots` slots in a process of its own (this file's --serve), healthy
    once built."""

    def __init__(self, model: Path, log: Path, slots: int = SLOTS) -> None:
        self.log = log
        self.port = free_port()
        self._log_file = log.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(model), str(self.port), str(slots)],
            stdout=subprocess.DEVNULL,
            stderr=self._log_file,
        )
        self.base = f"http://127.0.0.1:{self.port}"
        self.offset = 0.0  # wall time (time.time()) minus the log's clock
        self._wait_healthy(120.0)

    def _wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama.cpp server exited {self.proc.returncode}: {self.log}")
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(f"{self.base}/health", timeout=2) as response,
            ):
                if response.status == 200:
                    return
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"llama.cpp server not healthy after {timeout:.0f} s")

    def calibrate(self) -> None:
        """Map the log's clock to wall time: a 1-token request sent at a known time."""
        before = len(self.tasks())
        body = json.dumps(
            {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1}
        ).encode()
        request = urllib.request.Request(
            f"{self.base}/v1/chat/completions",
            data=body,
            headers={"Content-Type": "application/json"},
        )
        sent = time.time()
        with urllib.request.urlopen(request, timeout=60) as response:
            response.read()
        time.sleep(0.3)
        tasks = self.tasks()[before:]
        if not tasks:
            raise RuntimeError("calibration request not in the server's log")
        self.offset = sent - tasks[0].launched

    def tasks(self) -> list[Task]:
        by_id: dict[int, Task] = {}
        for line in self.log.read_text(errors="replace").splitlines():
            if m := LAUNCH.match(line):
                by_id[int(m.group(5))] = Task(int(m.group(5)), log_seconds(m))
            elif (m := TIMING.match(line)) and int(m.group(5)) in by_id:
                task = by_id[int(m.group(5))]
                kind, value, tokens = m.group(6), float(m.group(7)), int(m.group(8))
                if kind == "prompt eval":
                    task.prompt_ms, task.prompt_tokens = value, tokens
                elif kind == "eval":
                    task.eval_ms, task.eval_tokens = value, tokens
                else:
                    task.total_ms = value
        return [t for t in sorted(by_id.values(), key=lambda t: t.launched) if t.total_ms]

    def cpu_s(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log_file.close()


# --- the peers' venv and tokenizer ----------------------------------------------------------


def peers_venv(path: Path, timeout: float) -> Path:
    """The venv holding aiperf and guidellm (made with pip if missing); its bin directory."""
    bin_dir = path / "bin"
    if not (bin_dir / "aiperf").exists() or not (bin_dir / "guidellm").exists():
        subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=timeout)
        subprocess.run(
            [str(bin_dir / "python"), "-m", "pip", "install", "-q", *PEERS],
            check=True,
            timeout=max(timeout, 1800),
        )
    return bin_dir


TOKENIZER_SCRIPT = """
import sys
from transformers import AutoTokenizer
model = sys.argv[1]
folder, name = model.rsplit("/", 1)
AutoTokenizer.from_pretrained(folder, gguf_file=name).save_pretrained(sys.argv[2])
"""


def build_tokenizer(bin_dir: Path, model: Path, out: Path, timeout: float) -> Path:
    """A local Hugging Face tokenizer made from the GGUF file's own vocabulary."""
    if not (out / "tokenizer.json").exists():
        subprocess.run(
            [str(bin_dir / "python"), "-c", TOKENIZER_SCRIPT, str(model), str(out)],
            check=True,
            timeout=timeout,
            capture_output=True,
        )
    return out


def peer_versions(bin_dir: Path) -> dict[str, str]:
    code = (
        "import importlib.metadata as m\n"
        "for n in ('aiperf','guidellm','transformers','gguf','httpx','aiohttp'):\n"
        "    print(n, m.version(n))"
    )
    out = subprocess.run(
        [str(bin_dir / "python"), "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return dict(line.split(" ", 1) for line in out.stdout.splitlines() if " " in line)


# --- running a tool -------------------------------------------------------------------------


@dataclass
class Ran:
    wall_s: float
    cpu_s: float
    started: float  # time.time() just before exec
    returncode: int
    timed_out: bool


def run_tool(cmd: Sequence[str], log: Path, timeout: float, env: dict[str, str]) -> Ran:
    """Run cmd with a deadline (killed, with its process group, on expiry); wall and CPU."""
    with log.open("ab") as out:
        out.write(f"\n$ {' '.join(cmd)}\n".encode())
        out.flush()
        started = time.time()
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            list(cmd), stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        deadline = time.monotonic() + timeout
        timed_out = False
        try:
            while True:
                pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
                if pid == proc.pid:
                    break
                if time.monotonic() > deadline and not timed_out:
                    timed_out = True
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
                time.sleep(0.02)
        except BaseException:  # this script stopped (SIGTERM, ^C): the tool's group with it
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
            raise
        wall = time.perf_counter() - t0
    return Ran(
        wall_s=wall,
        cpu_s=rusage.ru_utime + rusage.ru_stime,
        started=started,
        returncode=os.waitstatus_to_exitcode(status),
        timed_out=timed_out,
    )


@dataclass
class Record:
    """One counted call: its phase, start on the wall clock, first token and latency (s), and
    what identifies it on the wire: a string its request carries (aiperf's X-Request-ID,
    guidellm's prompt mark) or the size of its answer's body (latency-gate's bytes_received)."""

    phase: str
    start: float
    ttft: float | None
    latency: float
    ident: str | int | None = None


@dataclass
class Calls:
    """What a tool reported per request, in seconds, by phase."""

    ttft: dict[str, list[float]] = field(default_factory=dict)
    latency: dict[str, list[float]] = field(default_factory=dict)
    itl: dict[str, list[float]] = field(default_factory=dict)  # each call's mean gap
    errors: list[str] = field(default_factory=list)  # calls the tool counted as failed
    # Each counted call, for matching to the packet capture (see match_wire).
    records: list[Record] = field(default_factory=list)

    def add(
        self,
        phase: str,
        ttft: float | None,
        latency: float,
        itl: float | None,
        *,
        start: float | None = None,
        ident: str | int | None = None,
    ) -> None:
        if start is not None:
            self.records.append(Record(phase, start, ttft, latency, ident))
        if ttft is not None:
            self.ttft.setdefault(phase, []).append(ttft)
        self.latency.setdefault(phase, []).append(latency)
        if itl is not None:
            self.itl.setdefault(phase, []).append(itl)


PROMPT_MARK = re.compile(r"\[[0-9a-f]{8}\] ")  # prompts_file's mark, unique per prompt


def prompts_file(path: Path, count: int, column: str, prompt: str = PROMPT) -> Path:
    """`count` rows of {column: prompt}, each prompt marked apart (PROMPT_MARK) so that no
    server's prompt cache answers one from another."""
    with path.open("w") as out:
        for _ in range(count):
            out.write(json.dumps({column: f"[{secrets.token_hex(4)}] {prompt}"}) + "\n")
    return path


def measure_gate(
    base: str, opts: argparse.Namespace, work: Path, runs: list[Ran], env: dict[str, str]
) -> Calls:
    out = work / "latency-gate.json"
    cmd = [
        sys.executable,
        "-m",
        "latency_gate",
        "probe",
        f"{base}/v1/chat/completions",
        "--prompt",
        PROMPT,
        "--model",
        "smollm2",
        "--stream",
        "--max-tokens",
        str(opts.max_tokens),
        "--warm-calls",
        str(opts.sequential),
        "--concurrency",
        str(opts.burst),
        "--max-calls",
        str(1 + opts.sequential + opts.burst),  # the first look, no more (one under it is refused)
        "--on-undecided",
        "pass",
        "--json",
        str(out),
    ]
    runs.append(run_tool(cmd, work / "latency-gate.log", opts.tool_timeout, env))
    calls = Calls()
    result = json.loads(out.read_text())
    for sample in result["samples"]:
        if not sample["ok"]:
            calls.errors.append(str(sample.get("error")))
            continue
        phase = {"warm": "sequential", "concurrent": "burst"}.get(sample["phase"])
        if phase is None:
            continue
        gaps = sample.get("token_gaps")
        calls.add(
            phase,
            (sample.get("timings") or {}).get("first_token"),
            sample["latency"],
            gaps["mean"] if gaps else None,
            start=sample["started_at"],
            ident=sample.get("bytes_received"),
        )
    return calls


def measure_aiperf(
    base: str, opts: argparse.Namespace, work: Path, runs: list[Ran], bin_dir: Path
) -> Calls:
    calls = Calls()
    env = dict(os.environ, PYTHONPATH="")
    for phase, concurrency, count, warmup, pacing in (
        # aiperf's --concurrency mode alone busy-waits: its timing_manager retries for a free
        # slot with a bare yield to the event loop (timing/strategies/request_rate.py, interval
        # 0) for as long as a request is in flight, one core at 100% for the whole sequential
        # phase. On 2 cores that core is taken from llama.cpp's 2 threads, whose generation
        # then slowed 10-40 times: 20 calls of 64 tokens outlasted the timeout (the "hang" of
        # the first two runs). A constant request rate above the server's pace with the same
        # concurrency limit sends the same calls one after another, each as soon as the last
        # ended (within one 20 ms tick), and sleeps on a timer in between.
        ("sequential", 1, opts.sequential, 1, AIPERF_POLL_RATE),
        # The burst sends its calls at once and has none left to wait for: no busy wait.
        ("burst", opts.burst, opts.burst, 0, None),
    ):
        artifacts = work / f"aiperf-{phase}"
        # A file of fresh prompts per phase: aiperf takes each phase's prompts from the top of
        # its file, so one shared file made the burst resend the first prompts, and llama.cpp
        # answered them from its prompt cache (1 prompt token evaluated; third run).
        data = prompts_file(work / f"aiperf-{phase}.jsonl", count + warmup, "text")
        cmd = [
            str(bin_dir / "aiperf"),
            "profile",
            "--model",
            "smollm2",
            "--url",
            base,
            "--endpoint-type",
            "chat",
            "--streaming",
            "--tokenizer",
            str(opts.tokenizer),
            "--input-file",
            str(data),
            "--custom-dataset-type",
            "single_turn",
            "--concurrency",
            str(concurrency),
            "--request-count",
            str(count),
            "--extra-inputs",
            f"max_tokens:{opts.max_tokens}",
            # This llama.cpp server closes the connection after each streamed answer (while
            # announcing keep-alive); aiperf's pool may reuse the closed connection before it
            # sees the close, and aiohttp does not retry a POST: ServerDisconnectedError, one
            # call counted as failed. A new connection per request is what every tool gets
            # from this server anyway.
            "--connection-reuse-strategy",
            "never",
            # No GPU and no Prometheus endpoint here: these optional services only probe, miss
            # heartbeats on a busy machine and are dropped; they are not started at all.
            "--no-gpu-telemetry",
            "--no-server-metrics",
            # One worker per concurrent call and one record processor: fewer processes taking
            # CPU from the server on 2 cores (aiperf sizes both from the core count otherwise).
            "--workers-max",
            str(concurrency),
            "--record-processors",
            "1",
            "--ui",
            "none",
            "--artifact-dir",
            str(artifacts),
        ]
        if pacing:
            cmd += ["--request-rate", str(pacing), "--arrival-pattern", "constant"]
        if warmup:  # aiperf refuses a warm-up count of 0
            cmd += ["--warmup-request-count", str(warmup)]
        ran = run_tool(cmd, work / "aiperf.log", opts.tool_timeout, env)
        runs.append(ran)
        if ran.timed_out or ran.returncode != 0:
            raise RuntimeError(f"aiperf {phase}: exit {ran.returncode}, timed out {ran.timed_out}")
        for line in (artifacts / "profile_export.jsonl").read_text().splitlines():
            record = json.loads(line)
            if record["metadata"].get("benchmark_phase") != "profiling":
                continue
            if record.get("error"):
                calls.errors.append(str(record["error"].get("message")))
                continue
            metrics = record["metrics"]

            def ms(name: str, metrics: dict[str, Any] = metrics) -> float | None:
                value = metrics.get(name, {}).get("value")
                return float(value) / 1000 if isinstance(value, int | float) else None

            latency = ms("request_latency")
            if latency is not None:
                calls.add(
                    phase,
                    ms("time_to_first_token"),
                    latency,
                    ms("inter_token_latency"),
                    start=record["metadata"]["request_start_ns"] / 1e9,
                    ident=record["metadata"].get("x_request_id"),  # its X-Request-ID header
                )
    return calls


def measure_guidellm(
    base: str, opts: argparse.Namespace, work: Path, runs: list[Ran], bin_dir: Path
) -> Calls:
    calls = Calls()
    env = dict(os.environ, PYTHONPATH="")
    for phase, profile, count in (
        ("sequential", "kind=synchronous", opts.sequential + 1),
        ("burst", f"kind=concurrent,streams={opts.burst}", opts.burst),
    ):
        data = prompts_file(work / f"guidellm-{phase}.jsonl", count, "prompt")
        out = work / f"guidellm-{phase}.json"
        cmd = [
            str(bin_dir / "guidellm"),
            "run",
            "--backend",
            f"kind=openai_http,target={base},model=smollm2,max_tokens={opts.max_tokens}",
            "--profile",
            profile,
            "--constraint",
            f"kind=max_requests,count={count}",
            "--data",
            f"kind=json_file,path={data}",
            "--tokenizer",
            f"kind=huggingface_auto,model={opts.tokenizer}",
            "--output",
            f"kind=json,path={out}",
            "--disable-console-interactive",
        ]
        ran = run_tool(cmd, work / "guidellm.log", opts.tool_timeout, env)
        runs.append(ran)
        if ran.timed_out or ran.returncode != 0:
            raise RuntimeError(
                f"guidellm {phase}: exit {ran.returncode}, timed out {ran.timed_out}"
            )
        outcome = json.loads(out.read_text())["benchmarks"][0]["requests"]
        for failed in outcome.get("errored") or []:
            calls.errors.append(str((failed.get("info") or {}).get("error")))
        requests = outcome["successful"]
        requests.sort(key=lambda r: r["info"]["timings"]["request_start"])
        if phase == "sequential":
            requests = requests[1:]  # the call not counted, as the other tools' warm-up
        for request in requests:
            t = request["info"]["timings"]
            first, last = t.get("first_token_iteration"), t.get("last_token_iteration")
            tokens = (request.get("output_metrics") or {}).get("text_tokens") or 0
            args = str(request.get("request_args") or "")  # its body: the prompt and its mark
            itl = (last - first) / (tokens - 1) if first and last and tokens > 1 else None
            calls.add(
                phase,
                first - t["request_start"] if first else None,
                t["request_end"] - t["request_start"],
                itl,
                start=t["request_start"],
                ident=mark.group(0) if (mark := PROMPT_MARK.search(args)) else None,
            )
    return calls


# --- the wire: a packet capture on loopback as the reference --------------------------------

# Classic pcap: the file's magic gives the byte order and the time unit (tcpdump writes
# nanoseconds with --time-stamp-precision nano); the link type gives the header before IP.
PCAP_MAGIC = {
    b"\xd4\xc3\xb2\xa1": ("<", 1e-6),
    b"\xa1\xb2\xc3\xd4": (">", 1e-6),
    b"\x4d\x3c\xb2\xa1": ("<", 1e-9),
    b"\xa1\xb2\x3c\x4d": (">", 1e-9),
}
LINK_HEADER = {0: 4, 1: 14, 12: 0, 101: 0, 113: 16, 276: 20}  # null, Ethernet, raw, SLL, SLL2


def read_pcap(path: Path) -> Iterator[tuple[float, bytes]]:
    """Each captured packet's time (seconds since the epoch) and its bytes from the IP header."""
    data = path.read_bytes()
    if len(data) < 24:
        return
    order, unit = PCAP_MAGIC[data[:4]]
    skip = LINK_HEADER[struct.unpack(order + "I", data[20:24])[0] & 0xFFFF]
    pos = 24
    while pos + 16 <= len(data):
        seconds, fraction, caplen, _ = struct.unpack(order + "IIII", data[pos : pos + 16])
        pos += 16
        yield seconds + fraction * unit, data[pos + skip : pos + caplen]
        pos += caplen


@dataclass
class Segment:
    time: float
    client: int  # the client's port
    from_client: bool
    syn: bool
    seq: int
    payload: bytes


def tcp_segments(path: Path, server_port: int) -> list[Segment]:
    """The IPv4 TCP segments to or from server_port (the server listens on 127.0.0.1 only)."""
    out = []
    for when, packet in read_pcap(path):
        if len(packet) < 20 or packet[0] >> 4 != 4 or packet[9] != 6:
            continue
        total = struct.unpack("!H", packet[2:4])[0]
        tcp = packet[(packet[0] & 15) * 4 : total]
        if len(tcp) < 20:
            continue
        sport, dport, seq = struct.unpack("!HHI", tcp[:8])
        from_client = dport == server_port
        if not from_client and sport != server_port:
            continue
        syn = bool(tcp[13] & 0x02) and not tcp[13] & 0x10  # SYN without ACK: a new connection
        out.append(
            Segment(
                when,
                sport if from_client else dport,
                from_client,
                syn,
                seq,
                tcp[(tcp[12] >> 4) * 4 :],
            )
        )
    return out


def dechunk(body: bytes) -> bytes:
    """The data of an HTTP/1.1 chunked body as far as it has arrived."""
    out = bytearray()
    pos = 0
    while (eol := body.find(b"\r\n", pos)) >= 0:
        try:
            size = int(body[pos:eol].split(b";")[0] or b"0", 16)
        except ValueError:
            break
        if size == 0:
            break
        start = eol + 2
        out += body[start : start + size]
        if start + size + 2 > len(body):
            break
        pos = start + size + 2
    return bytes(out)


def has_content(raw: bytes) -> bool:
    """Whether the response bytes so far hold a complete SSE `data:` line whose JSON carries a
    non-empty content delta (the first token the user sees; role-only deltas do not count)."""
    head_end = raw.find(b"\r\n\r\n")
    if head_end < 0:
        return False
    body = raw[head_end + 4 :]
    if b"transfer-encoding: chunked" in raw[:head_end].lower():
        body = dechunk(body)
    for line in body.split(b"\n")[:-1]:  # complete lines only
        if not line.startswith(b"data:"):
            continue
        with contextlib.suppress(ValueError, TypeError, KeyError, IndexError, AttributeError):
            if json.loads(line[5:])["choices"][0]["delta"].get("content"):
                return True
    return False


@dataclass
class Exchange:
    """One HTTP request and its response as they crossed the wire (seconds since the epoch)."""

    client: int
    opened: (
        float  # the connection's SYN if this is its first request, else the request's first byte
    )
    request_first: float
    request_last: float
    request: bytes = b""  # its first 8 KiB
    response_first: float | None = None
    first_token: float | None = None
    response_last: float | None = None  # the last response byte captured (HTTP framing too)
    done: float | None = None  # the packet that completed the stream's `data: [DONE]`
    raw: bytearray = field(default_factory=bytearray, repr=False)
    tail: bytes = field(default=b"", repr=False)

    @property
    def complete(self) -> bool:
        return self.done is not None

    @property
    def body_bytes(self) -> int:
        """The size of the response's body (dechunked), as latency-gate counts it."""
        head_end = self.raw.find(b"\r\n\r\n")
        body = bytes(self.raw[head_end + 4 :])
        return len(dechunk(body)) if b"chunked" in self.raw[:head_end].lower() else len(body)

    @property
    def latency(self) -> float | None:
        """The answer's last byte: `data: [DONE]`, the end of the stream the tools read. The
        chunked body's terminator follows it (within 0.02 ms mostly); a client that has read
        [DONE] need not wait for it, and some close the connection first (guidellm)."""
        return None if self.done is None else self.done - self.request_last

    @property
    def ttft(self) -> float | None:
        return None if self.first_token is None else self.first_token - self.request_last


def wire_exchanges(path: Path, server_port: int) -> list[Exchange]:
    """Per TCP connection, each request (client bytes up to the first response byte) paired
    with its response (server bytes until the next request or the connection's end); only
    POSTs (the tools' calls, not health checks), in the order they were sent. `complete` says
    whether the stream's end (`data: [DONE]`) is in the capture."""
    exchanges: list[Exchange] = []
    current: dict[int, Exchange] = {}
    syn_at: dict[int, float] = {}
    seen: set[tuple[int, bool, int, int]] = set()
    for seg in sorted(tcp_segments(path, server_port), key=lambda s: s.time):
        if seg.syn:
            syn_at[seg.client] = seg.time
            current.pop(seg.client, None)
            seen = {k for k in seen if k[0] != seg.client}
            continue
        key = (seg.client, seg.from_client, seg.seq, len(seg.payload))
        if not seg.payload or key in seen:  # ACKs, FINs and retransmissions
            continue
        seen.add(key)
        now = current.get(seg.client)
        if seg.from_client:
            if now is None or now.response_first is not None:
                now = Exchange(
                    seg.client,
                    syn_at.pop(seg.client, seg.time),
                    seg.time,
                    seg.time,
                    seg.payload[:8192],
                )
                current[seg.client] = now
                exchanges.append(now)
            else:
                now.request_last = seg.time
                now.request = (now.request + seg.payload)[:8192]
        elif now is not None:
            now.response_first = now.response_first or seg.time
            now.response_last = seg.time
            window = now.tail + seg.payload
            if now.done is None and b"data: [DONE]" in window:
                now.done = seg.time
            now.tail = window[-16:]
            now.raw += seg.payload
            if now.first_token is None and has_content(bytes(now.raw)):
                now.first_token = seg.time
    return [e for e in exchanges if e.request.startswith(b"POST ") and e.response_last is not None]


def complete_exchanges(exchanges: list[Exchange]) -> tuple[list[Exchange], int]:
    """The exchanges whose whole response was captured, and how many were not."""
    done = [e for e in exchanges if e.complete]
    return done, len(exchanges) - len(done)


def identifies(ident: str | int | None, ex: Exchange) -> bool:
    if isinstance(ident, int):
        return ex.body_bytes == ident
    return ident is not None and ident.encode() in ex.request


def match_wire(calls: Calls, exchanges: list[Exchange]) -> tuple[list[tuple[int, int, float]], int]:
    """Each counted call of the tool paired with the exchange on the wire that it made, and how
    many pairs its identity settled. A call whose identity (Record.ident) fits exactly one
    exchange is paired with it. The others (latency-gate's calls whose answers have the same
    size) are paired by time, among the exchanges their identity fits if any: the pairs with
    the smallest |request start difference| + |first token difference| + |end difference|
    first (greedy, one to one), after moving the tool's times by the median offset of the pairs
    identity settled in the same phase (latency-gate's started_at + offsets ran 2.2 ms before
    the wire in a burst where two of its answers had the same size and ended 1.5 ms apart: raw
    times swapped them). Time alone is not enough in a burst: it paired 6 of aiperf's 12 burst
    calls wrongly in a first run (aiperf's start stamps come up to 17 ms before its requests
    reach the wire).
    (call index, exchange index, the pair's |difference| in s)."""
    recs = calls.records

    def ends(i: int, j: int) -> tuple[float, float, float]:
        rec, ex = recs[i], exchanges[j]
        return (
            ex.request_first - rec.start,
            (ex.first_token or 0.0) - (rec.start + (rec.ttft or 0.0)),
            (ex.done or 0.0) - (rec.start + rec.latency),
        )

    fits = {
        i: [j for j, ex in enumerate(exchanges) if identifies(rec.ident, ex)]
        for i, rec in enumerate(recs)
    }
    pairs: list[tuple[int, int, float]] = []
    used_calls: set[int] = set()
    used_ex: set[int] = set()
    for i, js in fits.items():
        if len(js) == 1 and js[0] not in used_ex:
            pairs.append((i, js[0], 0.0))
            used_calls.add(i)
            used_ex.add(js[0])
    by_identity = len(pairs)
    shifts: dict[str, tuple[float, ...]] = {}
    for phase in {rec.phase for rec in recs}:
        settled = [ends(i, j) for i, j, _ in pairs if recs[i].phase == phase]
        shifts[phase] = tuple(pct([e[k] for e in settled], 50) or 0.0 for k in range(3))

    def cost(i: int, j: int) -> float:
        shift = shifts[recs[i].phase]
        return sum(abs(d - s) for d, s in zip(ends(i, j), shift, strict=True))

    pairs = [(i, j, cost(i, j)) for i, j, _ in pairs]
    costs = sorted(
        (cost(i, j), i, j)
        for i in range(len(recs))
        if i not in used_calls
        for j in (fits[i] or range(len(exchanges)))
        if j not in used_ex
    )
    for c, i, j in costs:
        if i not in used_calls and j not in used_ex and c < 1.0:
            used_calls.add(i)
            used_ex.add(j)
            pairs.append((i, j, c))
    return sorted(pairs), by_identity


def wire_summary(
    calls: Calls, exchanges: list[Exchange], tasks: list[Task], dropped: int | None
) -> dict[str, Any]:
    """Per phase, each call's (tool - wire) for latency and first token (ms), and their median
    and p95. Beside them, per call: `sent`, the tool's start to its request's last byte on the
    wire (connect and send, inside every tool's latency), and `server_latency` /
    `server_ttft`, the wire's figure minus the server log's for the same request (the server's
    work outside its timers; requests paired with the log's tasks in order, when the counts
    agree)."""
    pairs, by_identity = match_wire(calls, exchanges)
    by_order = sorted(range(len(exchanges)), key=lambda j: exchanges[j].request_last)
    task_of = {j: tasks[k] for k, j in enumerate(by_order)} if len(tasks) == len(by_order) else {}
    per_call: dict[str, dict[str, list[float]]] = {}
    for i, j, _ in pairs:
        rec, ex = calls.records[i], exchanges[j]
        phase, start, ttft, latency = rec.phase, rec.start, rec.ttft, rec.latency
        got = per_call.setdefault(
            phase, {"latency": [], "ttft": [], "sent": [], "server_latency": [], "server_ttft": []}
        )
        got["sent"].append(round((ex.request_last - start) * 1000, 3))
        if ex.latency is not None:
            got["latency"].append(round((latency - ex.latency) * 1000, 3))
        if ttft is not None and ex.ttft is not None:
            got["ttft"].append(round((ttft - ex.ttft) * 1000, 3))
        if (task := task_of.get(j)) is not None:
            if ex.latency is not None:
                got["server_latency"].append(round(ex.latency * 1000 - task.total_ms, 3))
            if ex.ttft is not None:
                got["server_ttft"].append(round(ex.ttft * 1000 - task.prompt_ms, 3))
    return {
        "exchanges": len(exchanges),
        "calls": len(calls.records),
        "matched": len(pairs),
        "matched_by_identity": by_identity,
        "max_match_ms": round(max((c for _, _, c in pairs), default=0.0) * 1000, 2),
        "dropped_packets": dropped,
        "diff_ms": per_call,
        **wire_stats(per_call),
    }


def wire_stats(per_call: dict[str, dict[str, list[float]]]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for phase in ("sequential", "burst"):
        for kind in ("latency", "ttft", "sent", "server_latency", "server_ttft"):
            values = per_call.get(phase, {}).get(kind, [])
            for q in (50, 95):
                got = pct(values, q)
                out[f"{phase}_{kind}_p{q}"] = None if got is None else round(got, 2)
    return out


class Capture:
    """tcpdump on loopback for the server's port while one tool runs; stopped by its PID (and
    bounded by `timeout` should this script die first)."""

    def __init__(self, path: Path, port: int, limit_s: float) -> None:
        self.path = path
        self.log = path.with_suffix(".tcpdump.log")
        with self.log.open("wb") as err:
            self.proc = subprocess.Popen(
                [
                    "timeout",
                    f"{limit_s:.0f}",
                    "tcpdump",
                    "-i",
                    "lo",
                    "-n",
                    # A whole packet on lo (MTU 65536), and a buffer of 128 MiB: in immediate
                    # mode each packet takes a slot of the snap length, and the default 2 MiB
                    # (8 slots of 256 KiB) dropped 31 packets in a turn of guidellm.
                    "-s",
                    "65550",
                    "-B",
                    "131072",
                    "-U",
                    "--time-stamp-precision",
                    "nano",
                    # Each packet to the file as it comes: without it, packets wait in the
                    # kernel's ring for a block to fill, and those still waiting when tcpdump
                    # is stopped are lost (a first try lost the last 260 ms of every burst).
                    "--immediate-mode",
                    "-w",
                    str(path),
                    f"tcp port {port}",
                ],
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        deadline = time.monotonic() + 10
        while b"listening on" not in self.log.read_bytes():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"tcpdump did not start: {self.log.read_text()}")
            time.sleep(0.05)

    def stop(self) -> int | None:
        """Stop the capture; the packets the kernel dropped, as tcpdump counted them."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # timeout passes it on to tcpdump
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        m = re.search(r"(\d+) packets? dropped by kernel", self.log.read_text(errors="replace"))
        return int(m.group(1)) if m else None


# --- waiting for a quiet machine ------------------------------------------------------------


def busy() -> list[str]:
    """Other test runs or benchmarks on this machine (pytest, bench/run.py, statsim), not ours."""
    mine = {os.getpid(), os.getppid()}
    found: list[str] = []
    for pattern in ("pytest", "bench/run.py", "statsim"):
        out = subprocess.run(
            ["pgrep", "-af", pattern], capture_output=True, text=True, timeout=10, check=False
        )
        for line in out.stdout.splitlines():
            pid, _, cmd = line.partition(" ")
            if int(pid) not in mine and "pgrep" not in cmd and line not in found:
                found.append(line)
    return found


def wait_quiet(
    limit_s: float, max_load: float, every_s: float = 30.0
) -> tuple[float, list[str], float]:
    """Wait (bounded) until busy() finds nothing and the 1-minute load average is below
    max_load; seconds waited, what was still running and the load average at the end."""
    t0 = time.monotonic()
    while True:
        others, load = busy(), os.getloadavg()[0]
        if (not others and load < max_load) or time.monotonic() - t0 >= limit_s:
            return time.monotonic() - t0, others, load
        print(
            f"waiting for a quiet machine: load {load:.2f}, {others[:3]}",
            file=sys.stderr,
            flush=True,
        )
        time.sleep(every_s)


# --- the report -----------------------------------------------------------------------------


def summary(
    calls: Calls, tasks: list[Task], runs: list[Ran], server_cpu: float, opts: argparse.Namespace
) -> dict[str, Any]:
    """The tool's numbers (ms), the server's for the same requests, and their differences."""
    expected = 1 + opts.sequential + opts.burst - len(calls.errors)
    note = "" if len(tasks) == expected else f"server saw {len(tasks)} requests, not {expected}"
    burst_ok = len(calls.latency.get("burst", []))  # failed calls never reached the server
    seq_tasks = tasks[1 : len(tasks) - burst_ok]
    burst_tasks = tasks[len(tasks) - burst_ok :]

    def ms(value: float | None) -> float | None:
        return None if value is None else round(value * 1000, 2)

    def ref(values: list[float], q: float) -> float | None:
        got = pct(values, q)
        return None if got is None else round(got, 2)

    seq_gaps = [g for t in seq_tasks if (g := t.gap_ms) is not None]
    out: dict[str, Any] = {
        "tool": {
            "ttft_p50": ms(pct(calls.ttft.get("sequential", []), 50)),
            "latency_p50": ms(pct(calls.latency.get("sequential", []), 50)),
            "latency_p95": ms(pct(calls.latency.get("sequential", []), 95)),
            "itl_p50": ms(pct(calls.itl.get("sequential", []), 50)),
            "burst_ttft_p95": ms(pct(calls.ttft.get("burst", []), 95)),
            "burst_latency_p95": ms(pct(calls.latency.get("burst", []), 95)),
            "calls": {k: len(v) for k, v in calls.latency.items()},
            "errors": len(calls.errors),
            "error_messages": sorted(set(calls.errors)),
        },
        "server": {
            "ttft_p50": ref([t.prompt_ms for t in seq_tasks], 50),
            "latency_p50": ref([t.total_ms for t in seq_tasks], 50),
            "latency_p95": ref([t.total_ms for t in seq_tasks], 95),
            "itl_p50": ref(seq_gaps, 50),
            "burst_ttft_p95": ref([t.prompt_ms for t in burst_tasks], 95),
            "burst_latency_p95": ref([t.total_ms for t in burst_tasks], 95),
            "tokens_generated": [t.eval_tokens for t in tasks],
            "requests": len(tasks),
            "cpu_s": round(server_cpu, 2),
        },
        "wall_s": round(sum(r.wall_s for r in runs), 2),
        "cpu_s": round(sum(r.cpu_s for r in runs), 2),
        "processes": len(runs),
        "startup_s": None,
        "note": note,
    }
    out["error"] = {
        key: round(out["tool"][key] - out["server"][key], 2)
        if out["tool"][key] is not None and out["server"][key] is not None
        else None
        for key in out["server"]
        if key in out["tool"]
    }
    return out


def cell(value: float | None, unit: str = "") -> str:
    return "n/a" if value is None else f"{value:.1f}{unit}"


TOOLS = ("latency-gate", "aiperf", "guidellm")
COST_ROWS = (
    ("wall time of the tool (s)", "wall_s"),
    ("CPU time of the tool (s)", "cpu_s"),
    ("start-up: exec to first request (s)", "startup_s"),
)


def rows(burst: int) -> list[tuple[str, str]]:
    return [
        ("first token p50, sequential (ms)", "ttft_p50"),
        ("latency p50, sequential (ms)", "latency_p50"),
        ("latency p95, sequential (ms)", "latency_p95"),
        ("inter-token latency p50 of per-call means (ms)", "itl_p50"),
        (f"first token p95, burst of {burst} (ms)", "burst_ttft_p95"),
        (f"latency p95, burst of {burst} (ms)", "burst_latency_p95"),
    ]


def wire_rows(burst: int) -> list[tuple[str, str]]:
    return [
        ("latency, sequential", "sequential_latency"),
        ("first token, sequential", "sequential_ttft"),
        (f"latency, burst of {burst}", "burst_latency"),
        (f"first token, burst of {burst}", "burst_ttft"),
        (
            "the tool's start stamp to its last request byte on the wire, sequential",
            "sequential_sent",
        ),
        ("wire minus server log: latency, sequential", "sequential_server_latency"),
        ("wire minus server log: first token, sequential", "sequential_server_ttft"),
    ]


def render_wire(wires: dict[str, dict[str, Any] | None], burst: int) -> list[str]:
    """Each tool's per-call difference from the packet capture: median / p95 (ms)."""
    names = list(wires)
    lines = [
        "| tool minus wire, per call: median / p95 (ms) | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]

    def signed(value: float | None) -> str:
        return "n/a" if value is None else f"{value:+.2f}"

    for label, key in wire_rows(burst):
        cells = [
            "n/a" if w is None else f"{signed(w[key + '_p50'])} / {signed(w[key + '_p95'])}"
            for w in wires.values()
        ]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    cells = [
        "n/a"
        if w is None
        else f"{w['matched']} of {w['calls']} ({w.get('matched_by_identity')} by identity; "
        f"{w['exchanges']} requests on the wire)"
        for w in wires.values()
    ]
    lines.append("| calls matched to the wire | " + " | ".join(cells) + " |")
    cells = [
        "n/a" if w is None else f"{w.get('dropped_packets')}, {w.get('incomplete')}"
        for w in wires.values()
    ]
    lines.append(
        "| packets the kernel dropped, responses not captured to their end | "
        + " | ".join(cells)
        + " |"
    )
    return lines


def render_round(tools: dict[str, Any], burst: int) -> list[str]:
    """One round's table: each tool's numbers and how far they are from the server's."""
    names = list(tools)
    lines = ["| | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for label, key in rows(burst):
        cells = []
        for tool in names:
            got = tools[tool]
            if "failed" in got:
                cells.append("failed")
                continue
            err = got["error"].get(key)
            err_text = "" if err is None else f" ({err:+.1f} vs server {got['server'][key]:.1f})"
            cells.append(cell(got["tool"][key]) + err_text)
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    cells = ["failed" if "failed" in got else str(got["tool"]["errors"]) for got in tools.values()]
    lines.append("| calls the tool counted as failed | " + " | ".join(cells) + " |")
    for label, key in COST_ROWS:
        cells = ["failed" if "failed" in got else cell(got[key]) for got in tools.values()]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    cells = [
        "failed" if "failed" in got else cell(got["server"]["cpu_s"]) for got in tools.values()
    ]
    lines.append("| server CPU while the tool ran (s) | " + " | ".join(cells) + " |")
    if any("others_cpu_s" in got for got in tools.values()):
        cells = [cell(got.get("others_cpu_s")) for got in tools.values()]
        lines.append("| other processes' CPU meanwhile (s) | " + " | ".join(cells) + " |")
        cells = [cell(got.get("steal_s")) for got in tools.values()]
        lines.append("| CPU stolen by the hypervisor meanwhile (s) | " + " | ".join(cells) + " |")
    for tool, got in tools.items():
        if got.get("failed"):
            lines.append(f"\n{tool} failed: {got['failed']}")
        elif got.get("note"):
            lines.append(f"\n{tool}: {got['note']}")
    if any("wire" in got for got in tools.values()):
        lines += ["", *render_wire({t: got.get("wire") for t, got in tools.items()}, burst)]
    return lines


def med(values: Sequence[float | None]) -> float | None:
    """The median of the values that are there (2 decimals), None if none is."""
    got = pct([v for v in values if v is not None], 50)
    return None if got is None else round(got, 2)


def medians(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Per tool, the median over the rounds it completed of each number and each difference."""
    out: dict[str, Any] = {}
    for tool in TOOLS:
        done = [
            r["tools"][tool] for r in rounds if "failed" not in r["tools"].get(tool, {"failed": 1})
        ]
        if not done:
            continue

        keys = [key for _, key in rows(0)]
        out[tool] = {
            "rounds": len(done),
            "tool": {k: med([d["tool"][k] for d in done]) for k in keys},
            "server": {k: med([d["server"][k] for d in done]) for k in keys},
            "error": {k: med([d["error"][k] for d in done]) for k in keys},
            "errors": sum(d["tool"]["errors"] for d in done),
            "server_cpu_s": med([d["server"]["cpu_s"] for d in done]),
            **{k: med([d[k] for d in done]) for _, k in COST_ROWS},
        }
        wired = [d["wire"] for d in done if "wire" in d]
        if wired:
            # Every round's calls pooled: the median and p95 over all matched calls.
            pooled: dict[str, dict[str, list[float]]] = {}
            for w in wired:
                for phase, kinds in w["diff_ms"].items():
                    for kind, values in kinds.items():
                        pooled.setdefault(phase, {}).setdefault(kind, []).extend(values)
            out[tool]["wire"] = {
                "rounds": len(wired),
                "calls": sum(w["calls"] for w in wired),
                "matched": sum(w["matched"] for w in wired),
                "matched_by_identity": sum(w.get("matched_by_identity", 0) for w in wired),
                "exchanges": sum(w["exchanges"] for w in wired),
                "max_match_ms": max(w["max_match_ms"] for w in wired),
                "dropped_packets": sum(w["dropped_packets"] or 0 for w in wired),
                "incomplete": sum(w.get("incomplete", 0) for w in wired),
                **wire_stats(pooled),
            }
    return out


def render_medians(med: dict[str, Any], burst: int, rounds: int) -> list[str]:
    names = list(med)
    lines = [
        "| | " + " | ".join(f"{t} ({med[t]['rounds']} of {rounds})" for t in names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for label, key in rows(burst):
        cells = []
        for tool in names:
            err = med[tool]["error"][key]
            cells.append(cell(med[tool]["tool"][key]) + ("" if err is None else f" ({err:+.1f})"))
        lines.append(f"| {label} (difference from the server) | " + " | ".join(cells) + " |")
    cells = [str(med[t]["errors"]) for t in names]
    lines.append("| calls the tool counted as failed (all rounds) | " + " | ".join(cells) + " |")
    base = med.get("latency-gate", {})
    for label, key in (*COST_ROWS, ("server CPU while the tool ran (s)", "server_cpu_s")):
        cells = []
        for tool in names:
            value, ref = med[tool][key], base.get(key)
            ratio = (
                f" (x{value / ref:.1f})"
                if value is not None and ref and tool != "latency-gate"
                else ""
            )
            cells.append(cell(value) + ratio)
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    if any("wire" in med[t] for t in names):
        lines += [
            "",
            "Against the packet capture (every round's calls pooled; latency: the packet that "
            "completes `data: [DONE]` minus the request's last byte on the wire; first token: the "
            "first packet with a content delta minus the request's last byte):",
            "",
            *render_wire({t: med[t].get("wire") for t in names}, burst),
        ]
    return lines


def render(results: dict[str, Any]) -> str:
    burst, rounds = results["burst"], results["rounds"]
    lines = [
        f"Medians over {len(rounds)} rounds (ratios: against latency-gate's median):",
        "",
        *render_medians(results["medians"], burst, len(rounds)),
    ]
    for i, got in enumerate(rounds, 1):
        lines += [
            "",
            f"Round {i} (order: {', '.join(got['tools'])}; 1-minute load average before the round "
            f"{got['load_before']:.2f}, before each tool {got['loadavg']}; waited "
            f"{got['waited_s']:.0f} s for a quiet machine"
            + (f", still running: {got['still_busy']}" if got["still_busy"] else "")
            + "):",
            "",
            *render_round(got["tools"], burst),
        ]
    lines += ["", f"Versions: {results['versions']}. Machine: {results['machine']}."]
    return "\n".join(lines) + "\n"


def machine() -> str:
    cpu = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return f"{cpu}, {os.cpu_count()} cores, Linux {platform.release()}"


def machine_cpu_s() -> tuple[float, float]:
    """CPU seconds all processes on this machine have used (/proc/stat: user, nice, system, irq,
    softirq) and the seconds the hypervisor gave to others (steal), since boot."""
    user, nice, system, _idle, _iowait, irq, softirq, steal = (
        int(v) for v in Path("/proc/stat").read_text().split(maxsplit=9)[1:9]
    )
    return (user + nice + system + irq + softirq) / CLK_TCK, steal / CLK_TCK


def find_model(given: str | None) -> Path:
    for candidate in (
        given,
        os.environ.get("LATENCY_GATE_TEST_MODEL"),
        str(ROOT / ".cache" / "models" / MODEL_FILE),
    ):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    fetched = subprocess.run(
        ["bash", str(ROOT / ".ci" / "fetch-model.sh"), str(Path(tempfile.gettempdir()) / "models")],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return Path(fetched.stdout.strip())


@contextlib.contextmanager
def llama(model: Path, log: Path) -> Iterator[LlamaServer]:
    server = LlamaServer(model, log)
    try:
        yield server
    finally:
        server.stop()


def main(argv: Sequence[str] | None = None) -> int:
    args_in = list(argv if argv is not None else sys.argv[1:])
    if args_in[:1] == ["--serve"]:
        serve(args_in[1], int(args_in[2]), int(args_in[3]))
        return 0
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    parser.add_argument("--sequential", type=int, default=20, help="counted sequential calls")
    parser.add_argument("--burst", type=int, default=4, help="calls started together")
    parser.add_argument("--max-tokens", type=int, default=64, help="answer length asked for")
    parser.add_argument("--model", help="the GGUF file [fetched like .ci/fetch-model.sh]")
    parser.add_argument("--peers-venv", default=str(DEFAULT_VENV), help="[%(default)s]")
    parser.add_argument("--tool-timeout", type=float, default=600.0, help="s per tool process")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of all the tools [3]")
    parser.add_argument(
        "--wait-quiet", type=float, default=2400.0, help="s at most before each round [2400]"
    )
    parser.add_argument(
        "--max-load", type=float, default=1.0, help="quiet: 1-minute load average below [1.0]"
    )
    parser.add_argument("--out", default=str(BENCH / "results"), help="[bench/results]")
    parser.add_argument(
        "--name",
        default=time.strftime("llm_peers_%Y%m%d_%H%M", time.gmtime()),
        help="results file names [llm_peers_ and the UTC time: never an earlier run's]",
    )
    parser.add_argument("--tools", default=",".join(TOOLS))
    parser.add_argument(
        "--start-by",
        type=lambda text: datetime.fromisoformat(text).timestamp(),
        help="no round starts after this time (ISO 8601, e.g. 2026-12-01T12:05+00:00)",
    )
    parser.add_argument(
        "--no-capture",
        dest="capture",
        action="store_false",
        help="no packet capture (tcpdump on lo, needs root) as the second reference",
    )
    opts = parser.parse_args(args_in)
    # SIGTERM unwinds like ^C, so the server, the capture and the running tool are stopped too
    # (started in the background, this script inherits SIGINT ignored).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    if opts.capture and not shutil.which("tcpdump"):
        parser.error("tcpdump not found (apt-get install tcpdump), or --no-capture")
    model = find_model(opts.model)
    bin_dir = peers_venv(Path(opts.peers_venv), 600)
    work = Path(tempfile.mkdtemp(prefix="llm-peers-"))
    opts.tokenizer = build_tokenizer(bin_dir, model, Path(opts.peers_venv) / "tokenizer", 600)
    gate_env = dict(os.environ)
    gate_env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), gate_env.get("PYTHONPATH")) if p
    )
    results: dict[str, Any] = {
        "sequential": opts.sequential,
        "burst": opts.burst,
        "max_tokens": opts.max_tokens,
        "prompt": PROMPT,
        "slots": SLOTS,
        "aiperf_poll_rate": AIPERF_POLL_RATE,
        "rounds": [],
        "medians": {},
        "machine": machine(),
        "command": " ".join(["python", "bench/llm_peers.py", *args_in]),
        "work_dir": str(work),
    }
    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    tools = opts.tools.split(",")
    for index in range(opts.rounds):
        # Each round a new server, and the tools in a rotated order: no tool always goes first
        # on a fresh server or last on a warm one.
        order = tools[index % len(tools) :] + tools[: index % len(tools)]
        limit = opts.wait_quiet
        if opts.start_by is not None:
            limit = min(limit, opts.start_by - time.time())
        waited, still, load = wait_quiet(max(limit, 0.0), opts.max_load)
        if opts.start_by is not None and time.time() > opts.start_by:
            print(f"round {index + 1} not started: past --start-by", file=sys.stderr, flush=True)
            break
        round_dir = work / f"round{index + 1}"
        round_dir.mkdir()
        got_round: dict[str, Any] = {
            "waited_s": round(waited, 1),
            "still_busy": still,
            "load_before": round(load, 2),
            "loadavg": [],
            "tools": {},
        }
        results["rounds"].append(got_round)
        with llama(model, round_dir / "llama-server.log") as server:
            server.calibrate()
            for tool in order:
                print(f"round {index + 1}: {tool} ...", file=sys.stderr, flush=True)
                got_round["loadavg"].append(round(os.getloadavg()[0], 2))
                got_round["tools"][tool] = measure_tool(
                    tool, server, opts=opts, work=round_dir, bin_dir=bin_dir, gate_env=gate_env
                )
        results["medians"] = medians(results["rounds"])
        # Written after every round: a round that ran is kept even if a later one is stopped.
        (out / f"{opts.name}.json").write_text(json.dumps(results, indent=2) + "\n")
    versions = peer_versions(bin_dir)
    with contextlib.suppress(Exception):
        import xllamacpp

        versions["xllamacpp"] = getattr(xllamacpp, "__version__", "?")
    versions["python"] = platform.python_version()
    results["versions"] = versions
    (out / f"{opts.name}.json").write_text(json.dumps(results, indent=2) + "\n")
    text = render(results)
    (out / f"{opts.name}.md").write_text(text)
    print(text)
    return 0


def measure_tool(
    tool: str,
    server: LlamaServer,
    *,
    opts: argparse.Namespace,
    work: Path,
    bin_dir: Path,
    gate_env: dict[str, str],
) -> dict[str, Any]:
    """One tool's run against the server: its summary, or why it failed."""
    before_tasks = len(server.tasks())
    cpu_before, machine_before = server.cpu_s(), machine_cpu_s()
    runs: list[Ran] = []
    pcap = work / f"{tool}.pcap"
    # The capture covers this tool's turn only: started before the tool, stopped after it.
    capture = Capture(pcap, server.port, 3 * opts.tool_timeout) if opts.capture else None
    dropped = None
    try:
        if tool == "latency-gate":
            calls = measure_gate(server.base, opts, work, runs, gate_env)
        elif tool == "aiperf":
            calls = measure_aiperf(server.base, opts, work, runs, bin_dir)
        else:
            calls = measure_guidellm(server.base, opts, work, runs, bin_dir)
    except (RuntimeError, OSError, ValueError, KeyError) as exc:
        timed_out = any(r.timed_out for r in runs)
        print(f"{tool} failed: {exc!r}", file=sys.stderr, flush=True)
        return {"failed": f"{exc!r}" + (" (killed at the timeout)" if timed_out else "")}
    finally:
        if capture:
            time.sleep(1.0)  # the connections' last packets
            dropped = capture.stop()
    time.sleep(0.5)  # the last task's log lines
    tasks = server.tasks()[before_tasks:]
    got = summary(calls, tasks, runs, server.cpu_s() - cpu_before, opts)
    # Everything else the machine ran meanwhile (other people's work, this script): what slowed
    # the server in this tool's turn that the tool did not cause.
    busy, steal = machine_cpu_s()
    got["others_cpu_s"] = round(busy - machine_before[0] - got["server"]["cpu_s"] - got["cpu_s"], 2)
    got["steal_s"] = round(steal - machine_before[1], 2)
    if tasks and runs:
        got["startup_s"] = round(tasks[0].launched + server.offset - runs[0].started, 3)
    got["runs"] = [r.__dict__ for r in runs]
    if capture:
        exchanges, incomplete = complete_exchanges(wire_exchanges(pcap, server.port))
        got["wire"] = wire_summary(calls, exchanges, tasks, dropped)
        got["wire"]["incomplete"] = incomplete
    return got


if __name__ == "__main__":
    sys.exit(main())
