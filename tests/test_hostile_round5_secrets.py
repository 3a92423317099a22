"""Hostile input, round five (issue 38), classes 1 to 4: a key echoed in another form, redirect
Locations that are no URL to call, an unreachable redirect target, and an IDN host; and issue
39's query values, masked only where their names look secret. Each case runs through the real
CLI (in process) against loopback servers of known behaviour (`tests/hostile_kit.py`)."""

from __future__ import annotations

import base64
import codecs
import json
import unicodedata
from pathlib import Path

from hostile_kit import echoed_key_run

from latency_gate.config.secrets import scrub_secrets, secret_forms

KEY = "sk-five-0123456789abcdef-SECRETkey"


# --- 1. a key echoed in another form -----------------------------------------------------------


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
