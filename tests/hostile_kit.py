"""What the hostile-input tests share: the CLI run in process without
the environment's key or proxies, a tiny paced loopback server answering fixed bytes, HTTP and SSE
answer builders, and the action run as the runner starts it.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import re
import threading
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from latency_gate import action, cli

CHAT = "/v1/chat/completions"
FAST = ["--no-floor", "--warm-calls", "2", "--concurrency", "1", "--max-calls", "4"]
ONE_LOOK = {"warm-calls": "2", "concurrency": "1", "max-calls": "4", "on-undecided": "pass"}


def run_cli(*args: str, env: Mapping[str, str | None] | None = None) -> Result:
    """`latency-gate ARGS` in process, without the environment's key, label or proxies."""
    clean: dict[str, str | None] = {
        name: None
        for name in (
            "LATENCY_GATE_API_KEY",
            "LATENCY_GATE_LABEL",
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "NO_PROXY",
            "http_proxy",
            "https_proxy",
            "no_proxy",
        )
    }
    return CliRunner().invoke(cli.main, list(args), env={**clean, **(env or {})})


def one_error(result: Result) -> str:
    """The one `Error:` line of a run that exited 2 without a traceback."""
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, result.stderr
    return errors[0]


def judged(result: Result) -> Result:
    """A run that was judged (exit 0 or 1), no bug, no traceback."""
    assert result.exit_code in (0, 1), result.output
    assert "Traceback" not in result.output
    assert "this is a bug" not in result.output
    return result


@dataclass
class Seen:
    """What a paced server saw: each request's head and body."""

    requests: list[bytes] = field(default_factory=list)


Answer = Callable[[bytes], Sequence[bytes]]


@contextlib.contextmanager
def paced(answer: Answer, pause: float = 0.02) -> Iterator[tuple[str, Seen]]:
    """A loopback server that answers each request (its head and body, as bytes) with the
    pieces `answer` returns, `pause` seconds apart; yields its base URL and what it saw."""
    seen = Seen()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            for _ in range(10_000):  # requests on one connection, bounded
                head = await reader.readuntil(b"\r\n\r\n")
                length = re.search(rb"(?i)content-length:\s*(\d+)", head)
                body = await reader.readexactly(int(length[1])) if length else b""
                seen.requests.append(head + body)
                for index, piece in enumerate(answer(head + body)):
                    if index:
                        await asyncio.sleep(pause)
                    writer.write(piece)
                    await writer.drain()
        writer.close()

    with handler_in_thread(handle) as port:
        yield f"http://127.0.0.1:{port}", seen


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@contextlib.contextmanager
def handler_in_thread(handle: Handler) -> Iterator[int]:
    """Serve `handle` on 127.0.0.1 (a port the kernel picks) from an event loop on a thread of
    its own, so a test's CLI run in the main thread can call it; yields the port."""
    loop = asyncio.new_event_loop()
    holder: dict[str, asyncio.Server] = {}

    async def start() -> None:
        holder["server"] = await asyncio.start_server(handle, "127.0.0.1", 0)

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(start(), loop).result(5)
    try:
        yield holder["server"].sockets[0].getsockname()[1]
    finally:
        # Closed on its own loop's thread: Server.close is not thread-safe.
        loop.call_soon_threadsafe(holder["server"].close)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()


def http(
    status: str, body: bytes, content_type: str = "application/json", extra: str = ""
) -> bytes:
    """A whole HTTP/1.1 answer with a Content-Length."""
    head = f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
    return (head + extra + "\r\n").encode() + body


def sse_pieces(events: Sequence[str]) -> list[bytes]:
    """A chunked event stream, one chunk per event (each sent after a pause)."""
    pieces = [
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    ]
    for event in events:
        data = f"data: {event}\n\n".encode()
        pieces.append(f"{len(data):x}\r\n".encode() + data + b"\r\n")
    pieces[-1] += b"0\r\n\r\n"
    return pieces


def chunk(delta: dict[str, str], finish: str | None = None) -> str:
    return json.dumps({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


ACTION_TIMEOUT = 60.0


@dataclass(frozen=True)
class ActionRun:
    code: int
    log: str
    summary: str
    outputs: str


def run_action(
    tmp_path: Path, inputs: dict[str, str], raw_env: dict[str, str] | None = None
) -> ActionRun:
    """The action as the runner starts it, on a push event (no PR comment)."""
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    files = tmp_path / f"files{len(list(tmp_path.glob('files*')))}"
    files.mkdir()
    (files / "event.json").write_text('{"ref": "refs/heads/main"}', encoding="utf-8")
    for name in ("summary.md", "output"):
        (files / name).touch()
    given = {"github-token": "ghs_hostile3token", "comment": "never", **inputs}
    env = {
        **{f"INPUT_{name.upper()}": value for name, value in given.items()},
        "GITHUB_EVENT_NAME": "push",
        "GITHUB_EVENT_PATH": str(files / "event.json"),
        "GITHUB_REPOSITORY": "octo/repo",
        "GITHUB_STEP_SUMMARY": str(files / "summary.md"),
        "GITHUB_OUTPUT": str(files / "output"),
        "GITHUB_WORKSPACE": str(workspace),
        **(raw_env or {}),
    }
    out = io.StringIO()
    codes: list[int] = []
    # In a thread, so that an action blocked (on a FIFO, say) fails the test instead of the suite.
    worker = threading.Thread(target=lambda: codes.append(action.main(env, out=out)), daemon=True)
    worker.start()
    worker.join(ACTION_TIMEOUT)
    if not codes:
        pytest.fail(f"the action did not finish within {ACTION_TIMEOUT:.0f} s", pytrace=False)
    return ActionRun(
        code=codes[0],
        log=out.getvalue(),
        summary=(files / "summary.md").read_text(encoding="utf-8"),
        outputs=(files / "output").read_text(encoding="utf-8"),
    )


def action_error(run: ActionRun) -> str:
    """The one ::error of an action run that exited 2 before any call."""
    assert run.code == 2, run.log
    errors = [line for line in run.log.splitlines() if line.startswith("::error")]
    assert len(errors) == 1, run.log
    assert "Nothing was measured." in run.summary
    assert "bug" not in run.log
    return errors[0]


def echoed_key_run(
    tmp_path: Path, key: str, shapes: Sequence[tuple[str, str]], *extra: str
) -> tuple[list[str], str]:
    """A run with `--api-key key` against a server whose every call fails with a 401 echoing
    one shape of the key in turn (`name=text`): each call's error detail, and every output
    (terminal, JSON, Markdown) as one text."""
    served = iter([*shapes] * 2)

    def answer(_: bytes) -> list[bytes]:
        name, text = next(served)
        return [http("401 Unauthorized", f"{name}={text}".encode(), "text/plain")]

    with paced(answer) as (base, _):
        json_path, md_path = tmp_path / "r.json", tmp_path / "r.md"
        args = [base + CHAT, "--api-key", key, "--prompt", "hi", "--no-floor", "--warm-calls"]
        args += [str(len(shapes) - 2), "--concurrency", "1", "--max-calls", str(len(shapes))]
        result = judged(
            run_cli("probe", *args, "--json", str(json_path), "--markdown", str(md_path), *extra)
        )
    details = [s["error_detail"] for s in json.loads(json_path.read_text())["samples"]]
    return details, result.output + json_path.read_text() + md_path.read_text()
