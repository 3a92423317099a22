"""Hostile input: secrets nested inside something else reach no output.

A key percent-encoded twice or three times, in hex, as base64 of its percent-encoding; a key quoted
across the 200th character of an error detail; a credential in a JSON body field (`api_key`); the
token of an `Authorization` header, a `Basic` header's password, a proxy's password, each echoed
alone. Through the real CLI and action entry point against loopback servers. docs/faults.md,
"Hostile input", says what each case did before its fix.
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from urllib.parse import quote

from hostile_data import _samples
from hostile_kit import (
    CHAT,
    FAST,
    ONE_LOOK,
    chunk,
    echoed_key_run,
    http,
    judged,
    paced,
    run_action,
    run_cli,
    sse_pieces,
)

from latency_gate.config.secrets import scrub_secrets, secret_forms

KEY = "sk-h3/Key+ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def _echoes(key: str) -> dict[str, str]:
    """The key as servers have been seen to echo it, each shape by name."""
    raw = key.encode()
    return {
        "percent-encoded twice": quote(quote(key, safe=""), safe=""),
        "percent-encoded three times": quote(quote(quote(key, safe=""), safe=""), safe=""),
        "hex": raw.hex(),
        "HEX": raw.hex().upper(),
        "base64 of base64": base64.b64encode(base64.b64encode(raw)).decode(),
        "url-safe base64 of base64": base64.urlsafe_b64encode(base64.b64encode(raw)).decode(),
        "first half": key[: len(key) // 2],
        "first half in hex": raw[: len(raw) // 2].hex(),
        "HTML entities": key.replace("+", "&#43;").replace("/", "&#x2F;"),
        "JSON-escaped twice": json.dumps(key.replace("/", "\\/"))[1:-1],
    }


BODY_KEY = "sk-body-field-0123456789abcdef"


def _echo_body_field(request: bytes) -> list[bytes]:
    """A 401 that quotes the body's api_key field back."""
    found = re.search(rb'"api_key": "([^"]+)"', request)
    quoted = found[1] if found else b"none"
    return [http("401 Unauthorized", b"invalid api_key " + quoted, "text/plain")]


HEADER_TOKEN = "hdr-token-0123456789abcdefXYZ"


BASIC_PASSWORD = "basic-pw-9876543210"


PROXY_PASSWORD = "proxy-pw-1357924680"


def _echo_credentials(request: bytes) -> list[bytes]:
    """A 401 quoting back, each alone: the bearer token without its scheme, the password a
    Basic header encodes, the Proxy-Authorization pair, and the token shouted; relayed by a
    proxy (its Via header), as the endpoint's answer through one is."""
    auth = re.search(rb"(?i)proxy-authorization: basic (\S+)", request)
    proxy_pair = auth[1] if auth else b"-"
    body = (
        f"token {HEADER_TOKEN} pw {BASIC_PASSWORD} shouted {HEADER_TOKEN.upper()} "
        f"proxy-auth {proxy_pair.decode()}"
    )
    return [http("401 Unauthorized", body.encode(), "text/plain", "Via: 1.1 relay\r\n")]


def test_key_echoed_in_other_shapes_reaches_no_output(tmp_path: Path) -> None:
    """The API key echoed in a 401 percent-encoded twice or three times, in hex, as base64 of
    base64, cut to its first half, as HTML entities or JSON-escaped twice is *** in the JSON,
    the report and the terminal (each used to pass through); a four-character tail (what APIs
    print on purpose) stays."""
    shapes = [*_echoes(KEY).items(), ("tail", "…" + KEY[-4:])]
    details, everything = echoed_key_run(tmp_path, KEY, shapes)
    assert details == [f"HTTP 401: {name}=***" for name, _ in shapes[:-1]] + [
        f"HTTP 401: tail=…{KEY[-4:]}"
    ]
    for _, text in shapes[:-1]:
        assert text not in everything


def test_every_echo_shape_is_scrubbed_whole() -> None:
    """Each shape of the key, alone in a text, is *** (the scrubber, without a 200-char cut)."""
    forms = secret_forms([KEY])
    for name, text in _echoes(KEY).items():
        assert scrub_secrets(f"<{text}>", forms) == "<***>", name
    assert scrub_secrets(f"<{KEY[:10]}>", forms) == f"<{KEY[:10]}>"  # a quarter is no secret


def test_key_across_the_detail_cut_leaves_no_fragment(tmp_path: Path) -> None:
    """A stream error quoting the key across the 200th character: the detail was cut first and
    the key's first characters (less than half of it) stayed; now it is scrubbed, then cut."""
    message = "x" * 190 + KEY + " y"
    events = [chunk({"content": "a"}), json.dumps({"error": {"message": message}})]
    with paced(lambda _: sse_pieces(events)) as (base, _):
        json_path = tmp_path / "r.json"
        args = [base + CHAT, "--api-key", KEY, "--prompt", "hi", "--stream", *FAST]
        judged(run_cli("probe", *args, "--json", str(json_path)))
    detail = json.loads(json_path.read_text())["samples"][0]["error_detail"]
    assert detail == "x" * 190 + "*** y"


def test_body_field_named_like_a_credential_is_a_secret(tmp_path: Path) -> None:
    """A credential in a JSON body field (`api_key`) echoed in a 401 is *** in every output of
    the CLI (it was printed: only the whole body was a secret)."""
    body = json.dumps({"messages": [{"role": "user", "content": "hi"}], "api_key": BODY_KEY})
    with paced(_echo_body_field) as (base, _):
        json_path = tmp_path / "r.json"
        args = [base + CHAT, "-d", body, *FAST, "--json", str(json_path)]
        result = judged(run_cli("probe", *args))
    detail = json.loads(json_path.read_text())["samples"][0]["error_detail"]
    assert detail == "HTTP 401: invalid api_key ***"
    assert BODY_KEY not in result.output + json_path.read_text()


def test_body_field_credential_is_masked_in_the_action(tmp_path: Path) -> None:
    """In the action, inline and as a body file: `::add-mask::` for the field's value before any
    other line, and neither log nor summary holds it."""
    body = json.dumps({"messages": [{"role": "user", "content": "hi"}], "api_key": BODY_KEY})
    (tmp_path / "workspace").mkdir()
    (tmp_path / "workspace" / "body.json").write_text(body, encoding="utf-8")
    with paced(_echo_body_field) as (base, _):
        for given in (body, "@body.json"):
            run = run_action(tmp_path, {"url": base + CHAT, "body": given, **ONE_LOOK})
            assert run.code == 1, run.log
            lines = run.log.splitlines()
            assert f"::add-mask::{BODY_KEY}" in lines
            unmasked = [line for line in lines if not line.startswith("::add-mask::")]
            assert BODY_KEY not in "\n".join(unmasked) + run.summary + run.outputs
            assert "invalid api_key ***" in run.log


def test_credentials_inside_header_values_are_secrets(tmp_path: Path) -> None:
    """`Authorization: Bearer T` echoed as T alone, a `Basic` header's password alone, the token
    upper-cased, and a proxy's Basic pair (from its URL) echoed back are all *** (only the whole
    header value, and the endpoint URL's pair, were secrets)."""
    basic = base64.b64encode(f"carol:{BASIC_PASSWORD}".encode()).decode()
    with paced(_echo_credentials) as (base, _):
        proxy = base.replace("http://", f"http://dave:{PROXY_PASSWORD}@")
        json_path = tmp_path / "r.json"
        args = ["http://api.example.invalid/x", "-H", f"Authorization: Bearer {HEADER_TOKEN}"]
        args += ["-H", f"X-Basic: Basic {basic}", "--proxy", proxy, *FAST, "--json", str(json_path)]
        result = judged(run_cli("probe", *args))
    detail = _samples(json_path)[0]["error_detail"]
    assert detail == "HTTP 401: token *** pw *** shouted *** proxy-auth ***"
    everything = result.output + json_path.read_text()
    for secret in (HEADER_TOKEN, BASIC_PASSWORD, PROXY_PASSWORD, HEADER_TOKEN.upper()):
        assert secret not in everything
