"""Reports say an A/B run of two requests as an upgrade (issue 41, item 6): the head the
candidate, both sides named by their model (or the settings that differ), the verdict line
first, then what changed, then the cost.

The words are pinned by the golden files (tests/golden/*_upgrade*.md, *.txt); here the names
each kind of base gets, the untrusted names escaped in every report, and one run through the
CLI against a loopback endpoint that answers each model at its own speed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Iterator

import pytest
from click.testing import CliRunner, Result
from hostile_kit import handler_in_thread
from markdown_it import MarkdownIt
from report_scenarios import HOSTILE_MODEL, scenario_upgrade, scenario_upgrade_hostile
from result_factory import STARTED_AT, URL, make_result, samples_for

from latency_gate import cli
from latency_gate.assess.result import assess_run
from latency_gate.config import build_target
from latency_gate.measurement import Measurement
from latency_gate.models import RunResult, StampSource
from latency_gate.report.markdown import render_comment, render_summary
from latency_gate.report.terminal import render_terminal
from latency_gate.report.upgrade import upgrade_of

MARKER = "<!-- latency-gate:comment:ci/gate:abc123 -->"

# --- the names of the two sides ---------------------------------------------------------------


def _ab(settings: dict[str, str]) -> RunResult:
    """An A/B run of these settings over the same calls on both arms (nothing regressed)."""
    target = build_target({"url": URL, "name": "local", "stream": "true", **settings})
    samples = list(
        samples_for(
            cold=0.3,
            warm=[0.1 + 0.002 * i for i in range(20)],
            concurrent=[0.12 + 0.002 * i for i in range(10)],
            stream=True,
        )
    )
    return assess_run(
        target,
        Measurement(samples, started_at=STARTED_AT, base_samples=samples),
        finished_at=STARTED_AT + 5,
        stamp_source=StampSource.KERNEL,
    )


def test_two_models_are_named_by_their_models() -> None:
    """`--model gpt-b --baseline-model gpt-a`: candidate gpt-b against gpt-a, passed."""
    upgrade = upgrade_of(_ab({"model": "gpt-b", "baseline-model": "gpt-a", "prompt": "Hi"}))
    assert upgrade is not None
    assert (upgrade.candidate, upgrade.base, upgrade.passed) == ("gpt-b", "gpt-a", True)
    assert upgrade.verdict.startswith("candidate gpt-b: PASS against gpt-a: ")
    assert upgrade.against == "candidate gpt-b against gpt-a"


def test_one_model_with_two_prompts_is_named_by_the_prompts() -> None:
    """The same model asked two prompts: each side named by its prompt, as the base's label is."""
    upgrade = upgrade_of(
        _ab({"model": "m", "prompt": "Tell me a story.", "baseline-prompt": "One word only."})
    )
    assert upgrade is not None
    assert (upgrade.candidate, upgrade.base) == (
        "prompt 'Tell me a story.'",
        "prompt 'One word only.'",
    )


def test_another_format_is_named_by_the_formats() -> None:
    """The same model in another dialect: format openai-chat against format anthropic."""
    upgrade = upgrade_of(
        _ab(
            {
                "model": "m",
                "prompt": "Hi",
                "format": "openai-chat",
                "baseline-url": "http://127.0.0.1:9000/v1/messages",
                "baseline-format": "anthropic",
            }
        )
    )
    assert upgrade is not None
    assert (upgrade.candidate, upgrade.base) == ("format openai-chat", "format anthropic")


def test_a_base_sent_the_heads_request_is_no_upgrade() -> None:
    """Today's A/B (another URL, the same request) and a run without a base keep their words."""
    assert upgrade_of(_ab({"baseline-url": "http://127.0.0.1:9000/v1/chat/completions"})) is None
    assert upgrade_of(make_result()) is None


def test_the_verdict_line_comes_first_then_what_changed_then_the_cost() -> None:
    """The terminal's first lines: the candidate's FAIL with the regressed rows and their
    intervals, against the base; what changed names the time per token; then the cost."""
    text = render_terminal(scenario_upgrade())
    lines = text.splitlines()
    assert re.match(r"candidate gpt-b: FAIL: warm p95 \d+ % slower \(x\d\.\d\d to x", lines[0])
    first = " ".join(lines[: next(i for i, ln in enumerate(lines) if "what changed" in ln)])
    assert "than gpt-a" in " ".join(first.split())
    assert "time per token p95 38 % slower" in " ".join(first.split())  # tested by default
    said = [i for i, ln in enumerate(lines) if ln.lstrip().startswith(("what changed", "cost"))]
    assert [lines[i].split(":")[0].strip() for i in said] == ["what changed", "cost"]
    assert "time per token 4" in " ".join(lines[said[0] : said[1]])  # 40 % slower, as drawn
    assert "candidate gpt-b against gpt-a, measured side by side" in " ".join(text.split())


# --- untrusted names ---------------------------------------------------------------------------


@pytest.mark.parametrize("render", ["summary", "comment"])
def test_a_hostile_model_name_is_text_in_markdown(render: str) -> None:
    """A model named with HTML, a code span, a mention and a link shows as text: no HTML, no
    link, the mention in a code element, the table rows whole."""
    results = scenario_upgrade_hostile()
    text = (
        render_summary(results) if render == "summary" else render_comment(results, marker=MARKER)
    )
    assert "gpt-b</b>" not in text
    assert "[a](http" not in text
    html = MarkdownIt("gfm-like", {"linkify": False}).render(text)
    assert "<b>" not in html
    assert "<a " not in html
    assert "<code>@team</code>" in html
    assert re.search(r"@team(?!</code>)", re.sub(r"<code>[^<]*</code>", "", html)) is None
    assert "Candidate" in text
    assert "::error::pwned" in text  # shown as text: a Markdown file runs no workflow command


def test_a_hostile_model_name_is_one_line_in_the_terminal() -> None:
    """In the terminal each name is on one line (the base's line break gone) and the verdict
    line starts with the candidate; a GitHub log reads none of it as a workflow command, for
    the CLI and the action print reports with the runner's commands stopped (tested below)."""
    text = render_terminal(scenario_upgrade_hostile())
    assert text.startswith(f"candidate {HOSTILE_MODEL}: FAIL: ")
    assert "gpt-a\n" not in text
    assert "gpt-a ::warning::x" in " ".join(text.split())


# --- through the CLI ---------------------------------------------------------------------------

# model -> (first token, time per token): gpt-b 40 % slower per token than gpt-a.
SPEEDS = {
    "gpt-a": (0.02, 0.005),
    "gpt-b": (0.02, 0.007),
    "gpt-c": (0.02, 0.005),
    "gpt-long": (0.02, 0.005),
}
# model -> its answers' length against the others': gpt-long's 60 % longer at gpt-a's speed.
LENGTHS = {"gpt-long": 1.6}


@contextlib.contextmanager
def _models_server(speeds: dict[str, tuple[float, float]]) -> Iterator[str]:
    """A loopback OpenAI-chat endpoint that streams the model each request names at that model's
    speed: its first delta after the first token's time, then 20-30 tokens (usage counts them;
    times LENGTHS for a model named there) at the time per token, in five deltas. Yields its
    URL."""
    count: dict[str, int] = {}

    async def answer(writer: asyncio.StreamWriter, model: str) -> None:
        first, per = speeds[model]
        n = count[model] = count.get(model, -1) + 1
        tokens = round((20 + n % 11) * LENGTHS.get(model, 1.0))
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )

        async def send(event: dict[str, object] | str) -> None:
            text = event if isinstance(event, str) else json.dumps(event)
            data = f"data: {text}\n\n".encode()
            writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            await writer.drain()

        await asyncio.sleep(first)
        chunks = 5
        for i in range(chunks):
            if i:
                await asyncio.sleep((tokens - 1) * per / (chunks - 1))
            delta = {"content": "x " * (tokens // chunks)}
            await send({"choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
        usage = {"prompt_tokens": 5, "completion_tokens": tokens, "total_tokens": 5 + tokens}
        await send({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        await send({"choices": [], "usage": usage})
        await send("[DONE]")
        writer.write(b"0\r\n\r\n")
        await writer.drain()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            for _ in range(10_000):  # requests on one connection, bounded
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").lower()
                size = next(
                    (
                        int(line.split(":", 1)[1])
                        for line in head.split("\r\n")
                        if line.startswith("content-length:")
                    ),
                    0,
                )
                body = json.loads(await reader.readexactly(size))
                await answer(writer, body["model"])
        writer.close()

    with handler_in_thread(handle) as port:
        yield f"http://127.0.0.1:{port}/v1/chat/completions"


FEW = ("--warm-calls", "12", "--concurrency", "4", "--max-calls", "80", "--no-floor")


def _probe(url: str, *args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(
        cli.main,
        ["probe", url, *FEW, "--stream", "--prompt", "Hi", *args],
        prog_name="latency-gate",
        env=env,
    )


@pytest.mark.slow  # two arms streamed at their speeds: a few seconds
def test_cli_a_model_slower_per_token_fails_named_as_the_candidate() -> None:
    """`--model gpt-b --baseline-model gpt-a`, gpt-b 40 % slower per token at answers of the same
    lengths: exit 1, the first line "candidate gpt-b: FAIL: warm p95 ... slower (x... to x...)",
    against gpt-a, then what changed naming the time per token slower."""
    with _models_server(SPEEDS) as url:
        done = _probe(url, "--model", "gpt-b", "--baseline-model", "gpt-a")
    assert done.exit_code == 1, done.output
    lines = done.stdout.splitlines()
    assert re.match(
        r"candidate gpt-b: FAIL: (warm|concurrent) p95 \d+ % slower \(x\d\.\d\d to x", lines[0]
    ), done.output
    verdict = " ".join(lines[: next(i for i, ln in enumerate(lines) if "what changed" in ln)])
    assert "than gpt-a" in verdict
    changed = next(ln for ln in lines if ln.lstrip().startswith("what changed"))
    assert "time per token" in changed
    assert "slower" in changed


@pytest.mark.slow  # two arms streamed at their speeds: a few seconds
def test_cli_two_models_of_one_speed_pass_named_as_the_candidate() -> None:
    """gpt-c against gpt-a at the same speed: exit 0, "candidate gpt-c: PASS against gpt-a"."""
    with _models_server(SPEEDS) as url:
        done = _probe(url, "--model", "gpt-c", "--baseline-model", "gpt-a")
    assert done.exit_code == 0, done.output
    assert done.stdout.startswith("candidate gpt-c: PASS against gpt-a: "), done.output


@pytest.mark.slow  # two arms streamed at their speeds: a few seconds
def test_cli_a_hostile_model_name_prints_inside_stopped_workflow_commands() -> None:
    """A model named like a workflow command, in GitHub Actions: the report that names it is
    printed between ::stop-commands:: and its resume, so the runner reads none of it."""
    speeds = {**SPEEDS, "::error::pwned": SPEEDS["gpt-a"]}
    with _models_server(speeds) as url:
        done = _probe(
            url,
            *("--model", "::error::pwned", "--baseline-model", "gpt-a"),
            env={"GITHUB_ACTIONS": "true"},
        )
    assert done.exit_code == 0, done.output
    lines = done.stdout.splitlines()
    stop = re.fullmatch(r"::stop-commands::([0-9a-f]{32})", lines[0])
    assert stop is not None, lines[0]
    assert lines[-1] == f"::{stop.group(1)}::"
    assert lines[1].startswith("candidate ::error::pwned: PASS against gpt-a")


@pytest.mark.slow  # two arms streamed at their speeds: a few seconds
def test_cli_a_model_with_longer_answers_fails_on_the_length_not_the_time_per_token() -> None:
    """gpt-long answers 60 % longer at gpt-a's speed: exit 1, what changed names the answers
    longer, and neither the time per token nor the first token is called slower or regressed."""
    with _models_server(SPEEDS) as url:
        done = _probe(url, "--model", "gpt-long", "--baseline-model", "gpt-a")
    assert done.exit_code == 1, done.output
    assert done.stdout.startswith("candidate gpt-long: FAIL: "), done.output
    changed = next(ln for ln in done.stdout.splitlines() if ln.lstrip().startswith("what changed"))
    assert re.search(r"answers [5-7]\d % longer", changed), changed
    assert "time per token" not in changed.split(";")[0]
    flat = " ".join(done.stdout.split())
    assert "time per token p95" not in flat.split("what changed")[0], done.output
    assert "slower" not in changed, changed
