"""Hostile input: a credential goes only to its own origin.

A redirect to another origin carries neither the key nor a secret header nor a body credential; one
within the origin keeps them; an A/B base keeps its own key; a body credential or URL userinfo
refuses a base at another origin; quick's curl line never lets curl carry a credential away; URL
userinfo beside `--api-key` or an Authorization header is refused. Loopback servers of
tests/hostile_kit.py see what was sent. docs/faults.md, "Hostile input", says what each case did
before its fix.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from hostile_data import ANSWER, _answer
from hostile_kit import CHAT, FAST, Answer, http, judged, one_error, paced, run_cli, sse_pieces
from hostile_probe import API_KEY, USER, probe

from latency_gate.demo import DemoServer, EndpointSpec, serve_in_thread


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoServer]:
    """A healthy streaming chat endpoint; `records` says whether anything reached it."""
    with serve_in_thread(EndpointSpec(latency=0.0, tokens=2, token_interval=0.0)) as (server,):
        yield server


KEY = "sk-head-0123456789abcdefSECRET"


HEADER_TOKEN = "org-token-9876543210zyxwvu"


BASE_KEY = "sk-base-abcdef0123456789BASEKEY"


def _redirect(status: str, location: str) -> Answer:
    """Every request answered with a redirect to `location`."""
    return lambda _: [http(status, b"", extra=f"Location: {location}\r\n")]


def _secrets_seen(requests: list[bytes], *secrets: str) -> list[str]:
    """The secrets found anywhere in the requests a server received (heads and bodies)."""
    text = b"\n".join(requests).decode("latin-1")
    return [secret for secret in secrets if secret in text]


@pytest.mark.parametrize(
    "status", ["302 Found", "307 Temporary Redirect", "308 Permanent Redirect"]
)
@pytest.mark.parametrize("fmt", ["openai-chat", "anthropic"])
def test_redirect_to_another_origin_carries_no_credential(status: str, fmt: str) -> None:
    """With -L, a redirect to another port gets neither the key (x-api-key for anthropic) nor a
    secret -H header; httpx dropped only Authorization, so both reached the other origin."""
    with (
        paced(_answer) as (elsewhere, seen),
        paced(_redirect(status, elsewhere + CHAT)) as (head, _),
    ):
        args = ["--api-key", KEY, "-H", f"X-Org-Token: {HEADER_TOKEN}", "--format", fmt]
        judged(run_cli("probe", head + CHAT, "-L", "--prompt", "hi", *args, *FAST))
    assert seen.requests, "the redirect was followed"
    assert _secrets_seen(seen.requests, KEY, HEADER_TOKEN) == []


def test_redirect_within_the_origin_keeps_the_credentials() -> None:
    """A redirect to another path of the same origin is the same endpoint: it keeps the key and
    the secret headers (a rule that dropped them would break every versioned API)."""
    moves = {"n": 0}

    def answer(request: bytes) -> list[bytes]:
        if request.startswith(b"POST /old"):
            moves["n"] += 1
            return [http("307 Temporary Redirect", b"", extra=f"Location: {CHAT}\r\n")]
        return sse_pieces(ANSWER)

    with paced(answer) as (base, seen):
        args = ["--api-key", KEY, "-H", f"X-Org-Token: {HEADER_TOKEN}", *FAST]
        result = judged(run_cli("probe", base + "/old", "-L", "--prompt", "hi", *args))
    assert result.exit_code == 0, result.output
    followed = [r for r in seen.requests if r.startswith(f"POST {CHAT}".encode())]
    assert len(followed) == moves["n"] > 0
    assert all(_secrets_seen([r], KEY, HEADER_TOKEN) == [KEY, HEADER_TOKEN] for r in followed)


def test_base_redirected_to_another_origin_keeps_its_own_key() -> None:
    """The base of an A/B run with its own key, redirected (-L) to another origin: the other
    origin gets neither the base's key nor the head's (the base's x-api-key travelled)."""
    with (
        paced(_answer) as (elsewhere, seen),
        paced(_redirect("307 Temporary Redirect", elsewhere + "/v1/messages")) as (base, _),
        paced(_answer) as (head, _),
    ):
        args = [
            "--format",
            "anthropic",
            "--api-key",
            KEY,
            "--baseline-url",
            base + "/v1/messages",
            "--baseline-api-key",
            BASE_KEY,
        ]
        judged(run_cli("probe", head + "/v1/messages", "-L", "--prompt", "hi", *args, *FAST))
    assert seen.requests, "the base's redirect was followed"
    assert _secrets_seen(seen.requests, KEY, BASE_KEY) == []


def test_body_credential_is_not_resent_to_another_origin(tmp_path: Path) -> None:
    """A 307 to another origin would resend the body, with its credential field: the call is
    not followed and says why; a 302 (the body dropped, GET) may be followed."""
    body = json.dumps({"messages": [{"role": "user", "content": "hi"}], "api_key": KEY})
    with (
        paced(_answer) as (elsewhere, seen),
        paced(_redirect("307 Temporary Redirect", elsewhere + CHAT)) as (head, _),
    ):
        json_path = tmp_path / "r.json"
        args = [head + CHAT, "-L", "-d", body, *FAST, "--json", str(json_path)]
        result = judged(run_cli("probe", *args))
    assert seen.requests == []
    detail = json.loads(json_path.read_text())["samples"][0]["error_detail"]
    assert re.fullmatch(
        r"HTTP 307 redirect to http://127\.0\.0\.1:\d+ not followed: it is another origin, and "
        r"the request body holds a credential \(api_key\)",
        detail,
    ), detail
    assert KEY not in result.output


def test_body_credential_refuses_a_base_at_another_origin() -> None:
    """-d with a field named like a key and a --baseline-url at another origin: refused before
    any call (the body was sent to the base), even when the base brings its own key."""
    body = json.dumps({"messages": [{"role": "user", "content": "hi"}], "api_key": KEY})
    with paced(_answer) as (head, head_seen), paced(_answer) as (base, base_seen):
        args = ["-d", body, "--baseline-url", base + CHAT, "--baseline-api-key", BASE_KEY]
        line = one_error(run_cli("probe", head + CHAT, *args, *FAST))
    assert head_seen.requests == base_seen.requests == []
    assert "--baseline-url" in line
    assert "the request body holds a credential (api_key)" in line
    assert KEY not in line


def test_userinfo_of_the_head_refuses_a_base_at_another_origin() -> None:
    """user:password@ in the head's URL is the head's credential: a base at another origin with
    none of its own is refused (it was not, and the base answered without them)."""
    with paced(_answer) as (head, head_seen), paced(_answer) as (base, base_seen):
        url = head.replace("http://", "http://user:pa55word-secret@") + CHAT
        line = one_error(run_cli("probe", url, "--baseline-url", base + CHAT, *FAST))
    assert head_seen.requests == base_seen.requests == []
    assert "so the head's credentials (the user:password in URL) are not sent there" in line
    assert "pa55word-secret" not in line


@pytest.mark.parametrize(
    ("args", "location"),
    [
        (["--api-key", KEY], True),  # Bearer: curl drops Authorization on another host itself
        (["--api-key", KEY, "--format", "anthropic"], False),  # x-api-key would travel
        (["-H", f"X-Org-Token: {HEADER_TOKEN}"], False),
        (["-d", json.dumps({"messages": [], "token": KEY})], False),
    ],
    ids=["bearer", "x-api-key", "secret-header", "body-credential"],
)
def test_quick_curl_line_never_lets_curl_carry_credentials_away(
    args: list[str], location: bool
) -> None:
    """quick's curl line with -L: --location only where curl would keep every credential at its
    origin (curl sends -H values to every host a redirect names); otherwise left out, saying why."""
    with paced(_answer) as (base, _):
        result = judged(run_cli("quick", base + CHAT, "-L", *args))
    curl = next(line for line in result.output.splitlines() if line.lstrip().startswith("curl "))
    assert ("--location" in curl) is location
    said = "--location is left out: curl would send the request's credentials to the other origin"
    assert (said in result.output) is not location
    assert KEY not in result.output
    assert HEADER_TOKEN not in result.output


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--api-key", API_KEY],
            "Error: invalid input --api-key: contradicts the user:password in URL: give the "
            "credentials once (drop one of them)",
        ),
        (
            ["-H", "Authorization: Bearer x-token-1"],
            "Error: invalid input -H/--header: an Authorization header contradicts the "
            "user:password in URL: give the credentials once (drop one of them)",
        ),
    ],
    ids=["api-key", "authorization-header"],
)
def test_url_userinfo_beside_other_credentials_is_refused(
    demo: DemoServer, extra: list[str], message: str
) -> None:
    """Userinfo was sent and --api-key silently dropped: now exit 2 naming both, nothing sent."""
    before = len(demo.records)
    url = demo.url.replace("http://", f"http://{USER}:pw-1234@")
    result, seconds = probe(url, *extra)
    assert one_error(result) == message
    assert seconds < 1.0
    assert len(demo.records) == before
