"""A URL whose format is known (chat completions, responses, messages) given no --prompt or
--body is sent a short default prompt, never a bodiless GET, and every report says so: the
settings' prompt row, a warning (with the model it names or not), quick's note."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from latency_gate.action import main as action_main
from latency_gate.cli import main
from latency_gate.config import build_target
from latency_gate.config.parsing import DEFAULT_PROMPT, Format
from latency_gate.demo import DemoServer, EndpointSpec, serve_in_thread

# A chat-completions endpoint of 2 ms a call: a whole default run takes about a second.
CHAT = EndpointSpec(name="chat", latency=0.002, tokens=3, token_interval=0.001)
NO_MODEL = (
    "no --prompt or --body: each call asked the default prompt 'Say hello in five words.' and "
    "named no model (a server of one model, as llama.cpp, answers it; most OpenAI-compatible "
    "servers need --model)"
)


@pytest.fixture(scope="module")
def chat() -> Iterator[DemoServer]:
    with serve_in_thread(CHAT) as (server,):
        yield server


@pytest.mark.parametrize(
    ("path", "fmt", "asked"),
    [
        ("/v1/chat/completions", Format.OPENAI_CHAT, "messages"),
        ("/v1/responses", Format.OPENAI_RESPONSES, "input"),
        ("/v1/messages", Format.ANTHROPIC, "messages"),
    ],
)
def test_a_known_format_alone_is_a_post_of_the_default_prompt(
    path: str, fmt: Format, asked: str
) -> None:
    """The URL alone: POST, a JSON body of the format asking the default prompt, no model."""
    target = build_target({"url": f"http://127.0.0.1:9{path}"})
    assert (target.method, target.format, target.default_prompt) == ("POST", fmt, DEFAULT_PROMPT)
    assert target.body is not None
    body = json.loads(target.body.get_secret_value())
    assert DEFAULT_PROMPT in json.dumps(body[asked])
    assert "model" not in body


def test_the_default_prompt_names_the_model_given() -> None:
    """--model without --prompt: the default prompt, with that model."""
    target = build_target({"url": "http://127.0.0.1:9/v1/chat/completions", "model": "m-1"})
    assert target.body is not None
    assert json.loads(target.body.get_secret_value())["model"] == "m-1"
    assert target.default_prompt == DEFAULT_PROMPT


@pytest.mark.parametrize(
    "raw",
    [
        {"url": "http://127.0.0.1:9/v1/chat/completions", "method": "GET"},
        {"url": "http://127.0.0.1:9/health"},
    ],
)
def test_no_default_prompt_for_a_get_asked_for_or_a_plain_url(raw: dict[str, str]) -> None:
    """-X GET said outright, or a URL of no known format: a GET without a body, as before."""
    target = build_target(raw)
    assert (target.method, target.body, target.default_prompt) == ("GET", None, None)
    assert "default_prompt" not in target.redacted()


def test_quick_of_a_chat_url_alone_posts_the_default_prompt(chat: DemoServer) -> None:
    """`quick URL`: three POSTs with a body, the curl line a POST, and a note saying why."""
    before = len(chat.records)
    done = CliRunner().invoke(main, ["quick", chat.url])
    assert done.exit_code == 0, done.output
    assert [r.method for r in chat.records[before:]] == ["POST"] * 3
    assert " -X POST " in done.output
    assert "-X GET" not in done.output
    assert f"Note: {NO_MODEL}.\n" in done.output


def test_probe_of_a_chat_url_alone_says_the_default_prompt(
    chat: DemoServer, tmp_path: Path
) -> None:
    """`probe URL`: every call a POST; the settings' prompt row says the default, and a warning
    says no model was named."""
    before = len(chat.records)
    summary = tmp_path / "summary.md"
    done = CliRunner().invoke(
        main, ["probe", chat.url, "--no-floor", "--max-calls", "10", "--markdown", str(summary)]
    )
    assert done.exit_code == 0, done.output
    assert {r.method for r in chat.records[before:]} == {"POST"}
    assert f"warning: {NO_MODEL}\n" in done.output
    assert "| prompt | default: Say hello in five words. |\n" in summary.read_text()


def test_the_action_with_url_alone_posts_the_default_prompt(
    chat: DemoServer, tmp_path: Path
) -> None:
    """The action given `url:` alone: every call a POST of the default prompt, a PASS, and the
    summary's settings say the prompt was the default."""
    for name in ("summary.md", "output"):
        (tmp_path / name).touch()
    before = len(chat.records)
    out = io.StringIO()
    code = action_main(
        {
            "INPUT_URL": chat.url,
            "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
            "GITHUB_OUTPUT": str(tmp_path / "output"),
            "GITHUB_WORKSPACE": str(tmp_path),
        },
        out=out,
    )
    assert code == 0, out.getvalue()
    assert {r.method for r in chat.records[before:]} == {"POST"}
    assert NO_MODEL in out.getvalue()
    summary = (tmp_path / "summary.md").read_text()
    assert "| prompt | default: Say hello in five words. |" in summary
