"""The one parser behind CLI options, action inputs and targets files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from latency_gate.config import (
    Format,
    build_target,
    detect_format,
    parse_duration,
    parse_fraction,
    redact_url,
)
from latency_gate.errors import ConfigError


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("3s", 3.0), ("250ms", 0.25), ("3.0", 3.0), (" 1.5 s ", 1.5), ("2m", 120.0), (".5", 0.5)],
)
def test_durations(text: str, seconds: float) -> None:
    """Durations accept 3s, 250ms, 3.0 and minutes."""
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "fast", "-1s", "3 hours", "1e3"])
def test_bad_durations(text: str) -> None:
    """Anything else is refused with the accepted forms in the message."""
    with pytest.raises(ValueError, match=r"expected a duration such as 3s, 250ms or 3\.0"):
        parse_duration(text)


def test_fraction_accepts_percent() -> None:
    """1% and 0.01 are the same error rate."""
    assert parse_fraction("1%") == pytest.approx(0.01)
    assert parse_fraction("0.01") == pytest.approx(0.01)


def test_minimal_target_has_default_budget() -> None:
    """A URL alone probes with GET, 20 warm calls, 10 concurrent, p95 under 3 s."""
    target = build_target({"url": "http://127.0.0.1:8080/health"})
    assert (target.method, target.warm_calls, target.concurrency) == ("GET", 20, 10)
    assert target.budget.max_warm_p95 == 3.0
    assert target.budget.max_error_rate == 0.01
    assert target.format is Format.RAW


def test_prompt_builds_an_openai_chat_body() -> None:
    """--prompt with a chat URL gives a POST with a messages body and streaming options."""
    target = build_target(
        {
            "url": "http://127.0.0.1/v1/chat/completions",
            "prompt": "hi",
            "model": "m",
            "stream": "true",
        }
    )
    body = json.loads(target.request_body() or b"")
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert body["stream"] is True
    assert body["model"] == "m"
    assert target.method == "POST"
    assert target.format is Format.OPENAI_CHAT


def test_stream_flag_rewrites_the_body_stream_field() -> None:
    """--stream overrides "stream": false in a given JSON body."""
    target = build_target(
        {
            "url": "http://h/v1/chat/completions",
            "body": '{"messages": [], "stream": false}',
            "stream": "true",
        }
    )
    assert json.loads(target.request_body() or b"")["stream"] is True
    assert target.stream


def test_stream_follows_the_body_when_not_given() -> None:
    """A body that asks for a stream makes the probe expect one."""
    target = build_target({"url": "http://h/v1/messages", "body": '{"stream": true}'})
    assert target.stream
    assert target.format is Format.ANTHROPIC


def test_api_key_is_a_bearer_token_and_never_in_the_redacted_config() -> None:
    """The key goes out as Authorization: Bearer and is *** in the JSON config."""
    target = build_target(
        {"url": "http://h/v1/chat/completions", "api-key": "sk-canary-123", "prompt": "x"}
    )
    assert ("Authorization", "Bearer sk-canary-123") in target.request_headers()
    assert "sk-canary-123" not in json.dumps(target.redacted())
    assert target.redacted()["api_key"] == "***"


def test_anthropic_key_goes_in_x_api_key() -> None:
    """Anthropic wants x-api-key and an anthropic-version header."""
    target = build_target({"url": "http://h/v1/messages", "api-key": "k-1234", "prompt": "x"})
    headers = dict(target.request_headers())
    assert headers["x-api-key"] == "k-1234"
    assert headers["anthropic-version"] == "2023-06-01"


def test_header_values_are_masked_unless_harmless() -> None:
    """A custom header value is a secret; Content-Type is not."""
    target = build_target(
        {
            "url": "http://h/",
            "headers": ["X-Secret: hunter2-canary", "Content-Type: application/json"],
        }
    )
    assert target.redacted()["headers"] == ["X-Secret: ***", "Content-Type: application/json"]
    assert target.secrets() == ["hunter2-canary"]


def test_url_query_values_and_userinfo_are_redacted() -> None:
    """Secret query values and credentials in a URL never reach a report; a value whose name
    looks harmless stays, so that the URL shown can be called again (issue 39)."""
    assert (
        redact_url("https://u:pw@h.io:8443/p?key=abc&x=1") == "https://***@h.io:8443/p?key=***&x=1"
    )


def test_body_from_file(tmp_path: Path) -> None:
    """-d @file reads the body from a file."""
    (tmp_path / "b.json").write_text('{"messages": []}')
    target = build_target(
        {"url": "http://h/v1/chat/completions", "body": "@b.json"}, base_dir=tmp_path
    )
    assert target.request_body() == b'{"messages": []}'


@pytest.mark.parametrize(
    ("url", "fmt"),
    [
        ("http://h/v1/chat/completions", Format.OPENAI_CHAT),
        ("http://h/v1/responses", Format.OPENAI_RESPONSES),
        ("http://h/v1/messages", Format.ANTHROPIC),
        ("http://h/generate", Format.RAW),
    ],
)
def test_format_detected_from_path(url: str, fmt: Format) -> None:
    """The path tells the format for the usual APIs."""
    assert detect_format(url, None) is fmt


def _spelled(key: str) -> str:
    return "URL" if key == "url" else f"--{key}"


BAD_INPUTS = [
    ({"url": "ftp://h/"}, "URL: expected an http:// or https:// URL"),
    ({"url": "http://"}, "URL: the URL has no host"),
    ({"url": "http://h:99999/"}, "URL: not a valid URL"),
    ({}, "URL: required: the endpoint to probe"),
    ({"url": "http://h/", "format": "grpc"}, "--format: expected one of auto, openai-chat"),
    ({"url": "http://h/", "max-warm-p95": "-1s"}, "--max-warm-p95: expected a duration"),
    ({"url": "http://h/", "max-warm-p95": "0"}, "--max-warm-p95: expected a duration above zero"),
    (
        {"url": "http://h/", "max-error-rate": "2"},
        "--max-error-rate: expected a fraction between 0 and 1",
    ),
    (
        {"url": "http://h/", "concurrency": "0"},
        "--concurrency: expected a whole number of at least 1",
    ),
    ({"url": "http://h/", "warm-calls": "many"}, "--warm-calls: expected a whole number"),
    (
        {"url": "http://h/", "headers": ["NoColonHere"]},
        "--headers: expected 'Name: value' with a colon",
    ),
    (
        {"url": "http://h/", "headers": ["Bad Name: v"]},
        "--headers: 'Bad…' is not a valid header name",
    ),
    ({"url": "http://h/", "body": "@/nonexistent/file.json"}, "--body: cannot read body file"),
    ({"url": "http://h/", "stream": "maybe"}, "--stream: expected true or false"),
    ({"url": "http://h/", "timeout": "0s"}, "--timeout: expected a duration above zero"),
    (
        {"url": "http://h/v1/chat/completions", "body": "{not json"},
        "--body: the openai-chat format needs a JSON body",
    ),
    (
        {"url": "http://h/v1/chat/completions", "body": "plain"},
        "--body: the openai-chat format needs a JSON object body",
    ),
    ({"url": "http://h/", "body": "x", "prompt": "y"}, "--prompt: give either --body or a prompt"),
    ({"url": "http://h/", "ca-bundle": "/nonexistent.pem"}, "--ca-bundle: no readable file"),
    ({"url": "http://h/", "method": "GET /x"}, "--method: expected an HTTP method"),
    ({"url": "http://h/", "colour": "red"}, "--colour: unknown setting"),
]


@pytest.mark.parametrize(("raw", "message"), BAD_INPUTS)
def test_bad_input_names_the_input(raw: dict[str, str | list[str]], message: str) -> None:
    """Each bad input is refused with a message that names it and says what was expected."""
    with pytest.raises(ConfigError) as caught:
        build_target(raw, _spelled)
    assert message in str(caught.value)


def test_all_bad_inputs_are_reported_together() -> None:
    """Three bad inputs give one error listing all three."""
    with pytest.raises(ConfigError) as caught:
        build_target({"url": "nope", "concurrency": "0", "max-warm-p95": "soon"})
    assert len(caught.value.problems) == 3
    assert str(caught.value).startswith("3 invalid inputs:")


def test_secret_header_value_is_not_echoed_in_errors() -> None:
    """A header with a bad shape is described without its value."""
    with pytest.raises(ConfigError) as caught:
        build_target({"url": "http://h/", "headers": ["Authorization=Bearer sk-canary"]})
    assert "sk-canary" not in str(caught.value)
