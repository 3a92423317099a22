"""Request bodies today's LLM APIs accept (issue 14 point 1), and proxies from the environment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from latency_gate.action.settings import parse_settings
from latency_gate.config import build_target, proxy_from_environment, with_environment_proxy
from latency_gate.config.target import comparable_settings
from latency_gate.errors import ConfigError


def _body(raw: dict[str, str]) -> dict[str, object]:
    target = build_target(raw)
    loaded = json.loads(target.request_body() or b"")
    assert isinstance(loaded, dict)
    return loaded


@pytest.mark.parametrize(
    ("url", "limit"),
    [
        ("http://127.0.0.1/v1/chat/completions", {"max_tokens": 64}),
        ("https://api.openai.com/v1/chat/completions", {"max_completion_tokens": 64}),
        ("https://x.openai.azure.com/openai/v1/chat/completions", {"max_completion_tokens": 64}),
        ("https://api.openai.com/v1/responses", {"max_output_tokens": 64}),
        ("https://api.anthropic.com/v1/messages", {"max_tokens": 64}),
    ],
)
def test_prompt_body_limits_the_answer_in_the_formats_field(
    url: str, limit: dict[str, int]
) -> None:
    """Each format's limit field, 64 tokens by default; OpenAI's own hosts get
    max_completion_tokens (its reasoning models refuse max_tokens)."""
    body = _body({"url": url, "prompt": "hi"})
    fields = {k: v for k, v in body.items() if k.startswith("max_")}
    assert fields == limit


def test_max_tokens_sets_the_length_for_every_format() -> None:
    """--max-tokens 200: the same length asked of chat, responses and messages."""
    urls = ["http://h/v1/chat/completions", "http://h/v1/responses", "http://h/v1/messages"]
    limits = [
        {
            k: v
            for k, v in _body({"url": u, "prompt": "hi", "max-tokens": "200"}).items()
            if k.startswith("max_")
        }
        for u in urls
    ]
    assert limits == [{"max_tokens": 200}, {"max_output_tokens": 200}, {"max_tokens": 200}]


def test_token_limit_field_chooses_the_field() -> None:
    """--token-limit-field max_completion_tokens on any host (a reasoning model behind a proxy)."""
    body = _body(
        {
            "url": "http://127.0.0.1/v1/chat/completions",
            "prompt": "hi",
            "token-limit-field": "max_completion_tokens",
        }
    )
    assert (body.get("max_tokens"), body["max_completion_tokens"]) == (None, 64)


def test_max_tokens_rewrites_a_given_body() -> None:
    """A given JSON body keeps its fields; --max-tokens replaces its limit in the right field."""
    body = _body(
        {
            "url": "https://api.openai.com/v1/chat/completions",
            "body": '{"messages": [], "max_tokens": 10, "temperature": 0}',
            "max-tokens": "32",
        }
    )
    assert body == {"messages": [], "temperature": 0, "max_completion_tokens": 32}


def test_bad_token_settings_are_named() -> None:
    """A bad --max-tokens and an unknown limit field are both reported, by name."""
    with pytest.raises(ConfigError) as caught:
        build_target(
            {
                "url": "http://h/v1/chat/completions",
                "prompt": "hi",
                "max-tokens": "0",
                "token-limit-field": "max_len",
            }
        )
    assert [(p.name, p.message) for p in caught.value.problems] == [
        ("max-tokens", "expected a whole number of at least 1, got 0"),
        (
            "token-limit-field",
            "expected auto or one of max_tokens, max_completion_tokens, max_output_tokens; "
            "got 'max_len'",
        ),
    ]


ENV = {
    "HTTPS_PROXY": "http://proxy.corp:3128",
    "http_proxy": "http://plain.corp:8080",
    "NO_PROXY": "localhost,.internal.example,10.0.0.1:8443",
}


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://api.example.com/v1", "http://proxy.corp:3128"),
        ("http://api.example.com/v1", "http://plain.corp:8080"),
        ("http://localhost:8080/", None),
        ("https://svc.internal.example/x", None),
        ("https://internal.example/x", None),
        ("https://10.0.0.1:8443/x", None),
        ("https://10.0.0.1:9443/x", "http://proxy.corp:3128"),
    ],
)
def test_proxy_from_environment_as_curl_reads_it(url: str, expected: str | None) -> None:
    """HTTPS_PROXY for https, http_proxy for http, NO_PROXY hosts, suffixes and host:port."""
    assert proxy_from_environment(url, ENV) == expected


def test_no_proxy_star_and_an_explicit_proxy_win() -> None:
    """NO_PROXY=* turns the environment's proxy off; a target's own proxy is kept."""
    target = build_target({"url": "https://api.example.com/v1"})
    assert with_environment_proxy(target, {**ENV, "NO_PROXY": "*"}).proxy is None
    own = build_target({"url": "https://api.example.com/v1", "proxy": "http://own:1"})
    assert with_environment_proxy(own, ENV).proxy == "http://own:1"
    assert with_environment_proxy(target, ENV).proxy == "http://proxy.corp:3128"


def test_a_bad_environment_proxy_is_named() -> None:
    """HTTPS_PROXY that is no URL: the variable is named."""
    target = build_target({"url": "https://api.example.com/v1"})
    with pytest.raises(ConfigError) as caught:
        with_environment_proxy(target, {"HTTPS_PROXY": "socks5://p:1"})
    assert [p.name for p in caught.value.problems] == ["HTTPS_PROXY"]


def test_proxy_credentials_are_redacted_in_the_settings() -> None:
    """A proxy URL's password never reaches the reports."""
    target = build_target({"url": "http://h/x", "proxy": "http://user:s3cret@proxy:3128"})
    assert target.redacted()["proxy"] == "http://***@proxy:3128"


ADDED = {"max_tokens", "token_limit_field", "vary_prompt", "proxy", "http2", "wait_ready"}


def test_a_baseline_from_before_the_new_settings_still_compares() -> None:
    """A result file written before max-tokens, vary-prompt, proxy and http2 existed matches a
    target that keeps their earlier meaning (--same-prompt), and not one that varies prompts
    (the earlier run measured one prompt)."""
    same = build_target({"url": "http://h/x", "vary-prompt": "false"})
    old = {k: v for k, v in same.redacted().items() if k not in ADDED}
    assert comparable_settings(old) == same.comparable()
    varied = build_target({"url": "http://h/x"})
    assert comparable_settings(old) != varied.comparable()


def test_action_takes_the_proxy_from_its_environment(tmp_path: Path) -> None:
    """The action's HTTPS_PROXY applies to an https URL; the `proxy: off` input overrides it."""
    environ = {"HTTPS_PROXY": "http://proxy.corp:3128"}
    inputs = {"url": "https://api.example.com/v1/chat/completions", "prompt": "hi"}
    settings = parse_settings(inputs, tmp_path, environ)
    assert settings.target.proxy == "http://proxy.corp:3128"
    direct = parse_settings({**inputs, "proxy": "off"}, tmp_path, environ)
    assert direct.target.proxy is None
