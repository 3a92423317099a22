"""Hostile input: answers that are not what they claim.

An HTML page sent with 200 at a chat URL (small, and over 1 MiB), an explicit `--format raw` beside
a prompt, and a stream's usage count that contradicts its deltas (a billion tokens, too few, and one
that agrees). docs/faults.md, "Hostile input", says what each case did before its fix.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hostile_kit import CHAT, chunk, judged, paced, run_cli, sse_pieces
from hostile_probe import FAST, probe

from latency_gate.demo import DemoServer, EndpointSpec, serve_in_thread


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoServer]:
    """A healthy streaming chat endpoint; `records` says whether anything reached it."""
    with serve_in_thread(EndpointSpec(latency=0.0, tokens=2, token_interval=0.0)) as (server,):
        yield server


def _response(status: str, content_type: str, body: bytes) -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
    return head.encode() + b"\r\n" + body


def _six_deltas_claiming(tokens: int) -> Callable[[bytes], list[bytes]]:
    """A chat stream of six deltas 20 ms apart whose usage claims `tokens` output tokens."""
    usage = json.dumps({"choices": [], "usage": {"completion_tokens": tokens}})
    events = [chunk({"content": f"w{i} "}) for i in range(6)]
    events += [chunk({}, "stop"), usage, "[DONE]"]
    return lambda _: sse_pieces(events)


TPOT_RUN = ["--prompt", "hi", "--stream", "--no-floor", "--warm-calls", "6", "--concurrency", "1"]


TPOT_RUN += ["--max-calls", "8", "--on-undecided", "estimate"]


@pytest.mark.parametrize("size", [2_000, 1_300_000], ids=["small", "over-1MiB"])
def test_html_page_with_status_200_at_an_llm_endpoint_is_a_failed_call(
    tmp_path: Path, size: int
) -> None:
    """An HTML error page sent with 200 at a chat URL fails every call, whatever its size."""
    page = b"<!DOCTYPE html><html><body>" + b"x" * size + b"</body></html>"
    json_path = tmp_path / "r.json"
    # hostile_kit.paced closes its server on its own loop's thread (this test's own copy closed
    # it from the test's thread, and Server.close raced the loop: a TypeError in asyncio).
    with paced(lambda _request: [_response("200 OK", "text/html", page)]) as (base, _seen):
        result, _ = probe(base + CHAT, "--prompt", "hi", *FAST, "--json", str(json_path))
    assert result.exit_code == 1, result.output
    samples = json.loads(json_path.read_text())["samples"]
    assert {s["error"] for s in samples} == {"malformed"}
    assert "1 malformed" not in result.stdout  # every call, counted
    assert f"{len(samples)} malformed: the body" in result.stdout


def test_explicit_format_raw_is_kept_with_a_prompt(tmp_path: Path, demo: DemoServer) -> None:
    """--format raw --prompt: the prompt builds the body, the answer is not read as a chat."""
    json_path = tmp_path / "r.json"
    result, _ = probe(
        demo.url, "--format", "raw", "--prompt", "hi", *FAST, "--json", str(json_path)
    )
    assert result.exit_code == 0, result.output
    assert json.loads(json_path.read_text())["config"]["format"] == "raw"


def test_usage_claiming_a_billion_tokens_does_not_make_tokens_free() -> None:
    """Six deltas 20 ms apart with usage claiming 10**9 tokens passed `--max-tpot-p95 5ms`
    ("per token p95 0.0 ms"); the deltas are counted (about 20 ms a token) and it fails, saying
    usage disagreed."""
    with paced(_six_deltas_claiming(10**9)) as (base, _):
        done = judged(run_cli("probe", base + CHAT, *TPOT_RUN, "--max-tpot-p95", "5ms"))
    assert done.exit_code == 1, done.output
    row = next(line for line in done.output.splitlines() if line.startswith("per token p95"))
    assert row.split()[-1] == "FAIL", row
    assert "Usage disagreed with the stream: the deltas were counted" in done.output
    assert "said their answer had 1,000,000,000 tokens (usage) where 6 deltas arrived" in (
        done.output
    )


@pytest.mark.parametrize("claimed", [0, 1])
def test_usage_claiming_too_few_tokens_leaves_the_time_per_token_measured(claimed: int) -> None:
    """Usage claiming 0 or 1 token FAILed "no successful warm call carried a streamed answer's
    timing" though every call streamed six deltas; the deltas are counted and it passes."""
    with paced(_six_deltas_claiming(claimed)) as (base, _):
        done = judged(run_cli("probe", base + CHAT, *TPOT_RUN, "--max-tpot-p95", "1s"))
    assert done.exit_code == 0, done.output
    assert "carried a streamed answer's timing" not in done.output
    assert "Usage disagreed with the stream" in done.output


def test_usage_that_agrees_with_the_stream_is_taken(tmp_path: Path) -> None:
    """Usage of 12 tokens over six deltas (two tokens a delta) is the count (kept)."""
    path = tmp_path / "r.json"
    with paced(_six_deltas_claiming(12)) as (base, _):
        done = judged(
            run_cli("probe", base + CHAT, *TPOT_RUN, "--json", str(path), "--max-tpot-p95", "1s")
        )
    assert "Usage disagreed" not in done.output
    calls = json.loads(path.read_text())["samples"]
    assert {(c["tokens"], c["tokens_source"], c["usage_ignored"]) for c in calls} == {
        (12, "usage", None)
    }
