"""Hostile input: a key, token or password echoed back in another form reaches no output.

The endpoint (the demo server, or hostile_kit.paced answering fixed bytes) quotes the credential in
base64 of either alphabet at any alignment, percent-encoded in part or with lower-case hex, JSON-
escaped, every character an entity, between zero-width characters, fullwidth, reversed, rot13,
base32; the terminal, the JSON result and the Markdown report show `***`. Also the URL's masked
query and quick's curl line. docs/faults.md, "Hostile input", says what each case did before its
fix.
"""

from __future__ import annotations

import base64
import codecs
import contextlib
import json
import re
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from click.testing import CliRunner
from hostile_data import KEY
from hostile_kit import CHAT, echoed_key_run
from hostile_probe import API_KEY, FAST, PASSWORD, USER, probe, run_action

from latency_gate import cli
from latency_gate.config.secrets import scrub_secrets, secret_forms
from latency_gate.demo import DemoServer, EndpointSpec, Fault, serve_in_thread


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoServer]:
    """A healthy streaming chat endpoint; `records` says whether anything reached it."""
    with serve_in_thread(EndpointSpec(latency=0.0, tokens=2, token_interval=0.0)) as (server,):
        yield server


def _recoverable(text: str, secret: str) -> list[str]:
    """Every base64-looking run of `text` that decodes, at some alignment, to hold `secret`."""
    found = []
    for token in re.findall(r"[A-Za-z0-9+/_-]{6,}=*", text):
        for skip in range(4):
            chunk = token[skip:].rstrip("=")
            chunk = chunk[: len(chunk) - len(chunk) % 4]
            for decode in (base64.b64decode, base64.urlsafe_b64decode):
                with contextlib.suppress(ValueError):
                    if secret.encode() in decode(chunk):
                        found.append(token)
    return found


ECHOED = "sk-echo-AbCdEf0123456789xyz"


def _every_char(key: str) -> dict[str, str]:
    """The key with every character escaped, letters and digits too, as an echo may be."""
    return {
        "HTML decimal": "".join(f"&#{ord(c)};" for c in key),
        "HTML hex": "".join(f"&#x{ord(c):x};" for c in key),
        "HTML zero-padded": "".join(f"&#00{ord(c)};" for c in key),
        "JSON unicode": "".join(f"\\u{ord(c):04x}" for c in key),
        "percent": "".join(f"%{ord(c):02X}" for c in key),
        "percent twice": "".join(f"%25{ord(c):02x}" for c in key),
    }


def _fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


OTHER_FORMS = {
    "zero-width": "\u200b".join(KEY),
    "soft-hyphen": "\u00ad".join(KEY),
    "reversed": KEY[::-1],
    "base32": base64.b32encode(KEY.encode()).decode(),
    "base32 lower unpadded": base64.b32encode(KEY.encode()).decode().rstrip("=").lower(),
    "rot13": codecs.encode(KEY, "rot13"),
    "fullwidth": _fullwidth(KEY),
    "no dashes": KEY.replace("-", ""),
    "spaced": " ".join(KEY),
}


def _as_shown(text: str) -> str:
    """`text` as a reader sees it: NFKC, no format (zero-width) or control characters."""
    text = unicodedata.normalize("NFKC", text)
    return "".join(c for c in text if unicodedata.category(c) not in {"Cf", "Cc"} or c == "\n")


def _readings(text: str) -> list[str]:
    """Every way the key could be read back out of a shown text: as shown, reversed, rot13,
    with spaces and dashes taken out, base32 decoded back to letters (searched as encoded)."""
    shown = _as_shown(text)
    squeezed = "".join(c for c in shown if c not in " -")
    return [shown, shown[::-1], codecs.encode(shown, "rot13"), squeezed, squeezed[::-1]]


def _leaks(text: str) -> list[str]:
    """The readings of `text` that hold the key (or its first half), its dashless spelling, or
    its base32 (either case)."""
    wanted = [KEY[: len(KEY) // 2], KEY.replace("-", "")[:16]]
    b32 = base64.b32encode(KEY.encode()).decode()
    found = [w for r in _readings(text) for w in wanted if w.lower() in r.lower()]
    return found + ([b32[:24]] if b32[:24].lower() in _as_shown(text).lower() else [])


def test_echoed_basic_auth_of_url_userinfo_is_scrubbed(tmp_path: Path) -> None:
    """Basic auth of URL userinfo echoed back (base64, percent-encoded) reaches no output."""
    pair = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    echo = f"Authorization: Basic {pair}; pw={quote(PASSWORD, safe='')}"
    spec = EndpointSpec(latency=0.0, faults=(Fault(kind="status", status=401, body=echo),))
    with serve_in_thread(spec) as (server,):
        host = server.base_url.removeprefix("http://")
        url = f"http://{USER}:{quote(PASSWORD, safe='')}@{host}{CHAT}"
        json_path, md_path = tmp_path / "r.json", tmp_path / "r.md"
        result, _ = probe(url, *FAST, "--json", str(json_path), "--markdown", str(md_path))
    assert result.exit_code == 1, result.output
    details = {s["error_detail"] for s in json.loads(json_path.read_text())["samples"]}
    assert details == {"HTTP 401: Authorization: Basic ***; pw=***"}
    everything = result.output + json_path.read_text() + md_path.read_text()
    for leak in (PASSWORD, quote(PASSWORD, safe=""), pair):
        assert leak not in everything
    assert _recoverable(everything, PASSWORD) == []


def test_echoed_api_key_in_base64_and_url_encoding_is_scrubbed(tmp_path: Path) -> None:
    """The key echoed in base64 (any alphabet, any alignment) or percent-encoded is ***."""
    inside = base64.b64encode(b'{"k":"' + API_KEY.encode() + b'"}').decode()
    echo = (
        f"b64 {base64.b64encode(API_KEY.encode()).decode()} "
        f"url-safe {base64.urlsafe_b64encode(API_KEY.encode()).decode()} "
        f"inside {inside} encoded {quote(API_KEY, safe='')}"
    )
    spec = EndpointSpec(latency=0.0, faults=(Fault(kind="status", status=401, body=echo),))
    with serve_in_thread(spec) as (server,):
        json_path, md_path = tmp_path / "r.json", tmp_path / "r.md"
        args = [server.url, "--api-key", API_KEY, *FAST, "--json", str(json_path)]
        result, _ = probe(*args, "--markdown", str(md_path))
    assert result.exit_code == 1, result.output
    everything = result.output + json_path.read_text() + md_path.read_text()
    assert API_KEY not in everything
    assert quote(API_KEY, safe="") not in everything
    assert _recoverable(everything, API_KEY) == []
    detail = json.loads(json_path.read_text())["samples"][0]["error_detail"]
    assert detail.startswith("HTTP 401: b64 *** url-safe *** inside ")
    assert detail.endswith(" encoded ***")


def test_echoed_key_escaped_in_part_or_json_escaped_is_scrubbed(tmp_path: Path) -> None:
    """The key percent-encoded in part (`/` kept) or with lower-case hex, JSON-escaped (`\\/`,
    `\\u002b`), or its base64 percent-encoded, is *** like the plain key."""
    lower_hex = re.sub("%[0-9A-F]{2}", lambda m: m[0].lower(), quote(API_KEY, safe=""))
    echo = (
        f"partly {quote(API_KEY)} lower {lower_hex} "
        f"json {json.dumps(API_KEY).replace('/', chr(92) + '/')} "
        f"unicode {API_KEY.replace('+', chr(92) + 'u002b')} "
        f"b64 {quote(base64.b64encode(API_KEY.encode()).decode(), safe='')}"
    )
    spec = EndpointSpec(latency=0.0, faults=(Fault(kind="status", status=401, body=echo),))
    with serve_in_thread(spec) as (server,):
        json_path = tmp_path / "r.json"
        result, _ = probe(server.url, "--api-key", API_KEY, *FAST, "--json", str(json_path))
    assert result.exit_code == 1, result.output
    detail = json.loads(json_path.read_text())["samples"][0]["error_detail"]
    assert detail == 'HTTP 401: partly *** lower *** json "***" unicode *** b64 ***'
    assert "key" not in result.output.replace("--api-key", "")


def test_token_as_url_user_name_is_masked_and_scrubbed(tmp_path: Path) -> None:
    """`http://TOKEN@host/` (no password): the action masks TOKEN, an echo of it is ***."""
    token = "sk-user-token-42"
    echo = f"unknown user {token}"
    spec = EndpointSpec(latency=0.0, faults=(Fault(kind="status", status=401, body=echo),))
    with serve_in_thread(spec) as (server,):
        url = server.url.replace("http://", f"http://{token}@")
        run = run_action(tmp_path, url)
    assert run.code == 1, run.log
    assert run.log.splitlines()[0] == f"::add-mask::{token}"
    result = (run.workspace / "latency-gate-report" / "result.json").read_text()
    assert "HTTP 401: unknown user ***" in result
    log = [line for line in run.log.splitlines() if not line.startswith("::add-mask::")]
    for text in ("\n".join(log), run.summary, result):
        assert token not in text


def test_key_echoed_with_every_character_escaped_reaches_no_output(tmp_path: Path) -> None:
    """The key echoed with every character as an HTML entity (decimal, hex), a JSON \\u escape
    or percent-encoded, letters and digits included, is *** in the JSON, the Markdown and the
    terminal (decimal entities reached the terminal and the JSON)."""
    shapes = list(_every_char(ECHOED).items())
    details, everything = echoed_key_run(tmp_path, ECHOED, shapes, "-v")
    assert details == [f"HTTP 401: {name}=***" for name, _ in shapes]
    for _, text in shapes:
        assert text[:24] not in everything


def test_key_echoed_in_other_forms_reaches_no_output(tmp_path: Path) -> None:
    """A 401 quoting the key between zero-width characters, reversed, in base32, rot13,
    fullwidth, without its dashes or spaced out: the key is in no output (terminal with -v,
    Markdown, JSON), however it is read (all of these reached the terminal and the Markdown)."""
    shapes = list(OTHER_FORMS.items())
    details, everything = echoed_key_run(tmp_path, KEY, shapes, "-v")
    for (name, _), detail in zip(shapes, details, strict=True):
        assert detail == f"HTTP 401: {name}=***", (name, detail)
    json_text = everything[everything.index("{") :]
    decoded = json.dumps(json.loads(json_text[: json_text.rindex("}") + 1]), ensure_ascii=False)
    assert _leaks(everything) == []
    assert _leaks(decoded) == []


def test_text_without_the_key_keeps_its_own_characters() -> None:
    """A text that holds no key, read as shown or not, comes back as it was: its line breaks,
    zero-width joiners and fullwidth letters kept (only a text that hid a key is given back as
    it is shown)."""
    forms = secret_forms([KEY])
    text = "line one\nline\u200dtwo \uff41\uff42 sk-five- (a key's start, too short)"
    assert scrub_secrets(text, forms) == text
    assert scrub_secrets(f"a\n{OTHER_FORMS['zero-width']}\n", forms) == "a ***"


def test_masked_query_values_read_as_stars_everywhere(tmp_path: Path, demo: DemoServer) -> None:
    """?key=... is shown as ?key=*** in the JSON and the report, never %2A%2A%2A."""
    json_path, md_path = tmp_path / "r.json", tmp_path / "r.md"
    url = demo.url + "?key=sk-query-secret"
    result, _ = probe(url, *FAST, "--json", str(json_path), "--markdown", str(md_path))
    assert result.exit_code == 0, result.output
    everything = json_path.read_text() + md_path.read_text() + result.output
    assert "%2A" not in everything
    assert "sk-query-secret" not in everything
    assert json.loads(json_path.read_text())["config"]["url"] == demo.url + "?key=***"


def test_quick_hides_credentials_in_the_body_of_its_curl_line(demo: DemoServer) -> None:
    """A body with an api_key field and the key itself in base64: the curl line shows ***."""
    body = json.dumps(
        {
            "messages": [{"role": "user", "content": "hi"}],
            "api_key": "sk-body-secret-1",
            "note": base64.b64encode(b"sk-flag-key-22").decode(),
        }
    )
    result = CliRunner().invoke(
        cli.main, ["quick", demo.url, "-d", body, "--api-key", "sk-flag-key-22"]
    )
    assert result.exit_code == 0, result.output
    assert "sk-body-secret-1" not in result.output
    assert _recoverable(result.output, "sk-flag-key-22") == []
    assert '"api_key": "***"' in result.output
    assert '"note": "***"' in result.output
