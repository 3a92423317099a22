"""Secrets: which values are secrets (one rule), every form they can take in an endpoint's text,
and the scrubbing of those forms from any text that leaves the run.

One mechanism for everything: `find_secrets` names the secrets a run knows (the API key, header
values, URL userinfo and query values, a proxy's credentials, credential-named fields of a JSON
body, a token), `secret_forms` derives what each looks like once a server has echoed it back
(encoded, re-encoded, cut short), and `scrub_secrets` replaces every such form with ***, however
its characters are escaped.
"""

from __future__ import annotations

import base64
import codecs
import functools
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from latency_gate.config.json_data import load_json
from latency_gate.config.parsing import REDACTED, credential_field
from latency_gate.formatting import shown_text

__all__ = [
    "HARMLESS_HEADERS",
    "MIN_FRAGMENT",
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "body_secrets",
    "credential_field",
    "credential_fields",
    "find_secrets",
    "fragment_length",
    "header_credentials",
    "scrub_secrets",
    "secret_forms",
    "url_secrets",
    "url_userinfo",
]

# Header values that carry no secret and help a reader of the report; every other value is masked.
HARMLESS_HEADERS = frozenset(
    {
        "accept",
        "accept-encoding",
        "accept-language",
        "anthropic-version",
        "anthropic-beta",
        "cache-control",
        "content-type",
        "openai-beta",
        "user-agent",
    }
)

# A value shorter than this is not masked: masking "a" or "123" would garble every log line.
MIN_SECRET_LENGTH = 4

MIN_FRAGMENT = 8
"""A secret's first part is scrubbed too when it is at least half the secret and at least this
long: what a cut (ours, or a server's) leaves of it. Whoever sees less than half has the larger
part still to guess; a shorter run (the `sk-proj-` that starts every key, a key's last four
characters that APIs print on purpose) is not a secret and would garble ordinary text."""


def find_secrets(
    *,
    api_key: str | None = None,
    headers: Iterable[tuple[str, str]] = (),
    url: str = "",
    body: str | None = None,
    others: Iterable[str] = (),
) -> list[str]:
    """Every secret among these values, by one rule: the API key, each header value that is not
    plainly harmless, the URL's password and query values, the credential-named fields of a JSON
    `body`, and `others` (a token, an inline body, a proxy's credentials); values shorter than
    MIN_SECRET_LENGTH (after trimming) are left out."""
    values = [api_key or ""]
    for name, value in headers:
        if name.strip().lower() not in HARMLESS_HEADERS:
            values += header_credentials(value)
    values += url_secrets(url)
    values += body_secrets(body) if body else []
    values += others
    return list(dict.fromkeys(v for v in values if len(v.strip()) >= MIN_SECRET_LENGTH))


def header_credentials(value: str) -> list[str]:
    """A header value and the credentials inside it, each a secret on its own (a server echoes
    the token without its scheme): what follows an auth scheme (`Bearer TOKEN`), the
    `user:password` and password a `Basic` value encodes, and each cookie-like `name=value`
    part at least MIN_FRAGMENT long."""
    found = [value]
    scheme, _, rest = value.strip().partition(" ")
    rest = rest.strip()
    if rest and " " not in rest and re.fullmatch(r"[A-Za-z][A-Za-z0-9-]*", scheme):
        found.append(rest)
        if scheme.lower() == "basic":
            try:
                pair = base64.b64decode(rest, validate=True).decode("utf-8")
            except ValueError:
                pair = ""
            found += [pair, pair.partition(":")[2]] if ":" in pair else []
    for piece in re.split(r"[;,\s]+", value):
        part = piece.partition("=")[2]
        if len(part) >= MIN_FRAGMENT:
            found.append(part)
    return found


def url_secrets(url: str) -> list[str]:
    """The parts of a URL that may hold a secret: the userinfo password (or the user name when
    there is no password: `https://TOKEN@host/` carries a token there) and each query value
    whose name looks secret (`credential_field`: `key`, `access_token`, `sig`, ...).

    Works on a URL not yet validated (the action masks secrets before it validates anything).
    """
    try:
        parts = urlsplit(url)
        username, password = parts.username, parts.password
    except ValueError:
        return []
    credential = password or username
    # As typed, and as sent (percent-decoded): a server echoes the decoded one back.
    values = [credential, unquote(credential)] if credential else []
    return values + [v for name, v in parse_qsl(parts.query) if v and credential_field(name)]


def url_userinfo(url: str) -> str | None:
    """`user:password` as sent in Basic auth for a URL with userinfo, else None."""
    try:
        parts = urlsplit(url)
        username, password = parts.username, parts.password
    except ValueError:
        return None
    if not username and not password:
        return None
    return f"{unquote(username or '')}:{unquote(password or '')}"


def body_secrets(body: str) -> list[str]:
    """The string values held under credential-named fields of a JSON body (at any depth, a
    nested object or list under such a field included); none for a body that is not JSON."""
    return [value for _, value in _credential_values(body)]


def credential_fields(body: str) -> list[str]:
    """The names of the credential-named fields of a JSON body that hold a secret, each once,
    in the body's order (`api_key`): what a message may say instead of the value."""
    pairs = _credential_values(body)
    return list(dict.fromkeys(n for n, v in pairs if len(v.strip()) >= MIN_SECRET_LENGTH))


def _credential_values(body: str) -> list[tuple[str, str]]:
    """(field name, value) for each string under a credential-named field, at any depth."""
    try:
        data = load_json(body)
    except ValueError:
        return []
    found: list[tuple[str, str]] = []
    stack: list[tuple[Any, str | None]] = [(data, None)]
    while stack:
        value, field = stack.pop()
        if isinstance(value, dict):
            stack += [
                (v, field or (str(k) if credential_field(str(k)) else None))
                for k, v in reversed(value.items())
            ]
        elif isinstance(value, list):
            stack += [(item, field) for item in reversed(value)]
        elif field is not None and isinstance(value, str):
            found.append((field, value))
    return found


# --- the forms of a secret --------------------------------------------------------------------


def secret_forms(secrets: Iterable[str], pairs: Iterable[str] = ()) -> list[str]:
    """Every form a secret can take in an endpoint's text, longest first: as given, reversed,
    in rot13, without its dashes and with a space between its characters, each upper- and
    lower-cased; its bytes in hex (either case); base64 (standard and URL-safe alphabets, at
    any of the three byte alignments it can have inside a longer encoded text); base32 (either
    case, at any of its five alignments); and base64 of its base64 (a token wrapped twice).
    `pairs` are texts such as `user:password` that are sent only encoded (Basic auth) and are
    scrubbed in the same forms. `scrub_secrets` also finds each form with any of its characters
    escaped (percent-encoded, once or more, `+` for a space, JSON's `\\/` and `\\u00XX`, HTML's
    `&#NN;`), in the text as it is shown (fullwidth letters, zero-width characters), and its
    first part alone (see MIN_FRAGMENT).

    A form shorter than MIN_SECRET_LENGTH is left out: it would garble ordinary text.
    """
    forms: set[str] = set()
    for secret in [*secrets, *pairs]:
        if len(secret.strip()) < MIN_SECRET_LENGTH:
            continue
        data = secret.encode("utf-8")
        # As given and without its dashes, shouted or lowered (some error pages change a quoted
        # value's case); and in the other simple invertible spellings an echo may use.
        for spelling in {secret, secret.replace("-", "")}:
            forms |= {spelling, spelling.upper(), spelling.lower()}
        forms |= {secret[::-1], codecs.encode(secret, "rot13"), " ".join(secret)}
        forms |= {data.hex(), data.hex().upper()}
        forms |= set(_base64_cores(data))
        forms |= {core for core in _base32_cores(data) for core in (core, core.lower())}
        for wrapped in {base64.b64encode(data), base64.urlsafe_b64encode(data)}:
            forms |= set(_base64_cores(wrapped)) | set(_base64_cores(wrapped.rstrip(b"=")))
    return sorted((f for f in forms if len(f) >= MIN_SECRET_LENGTH), key=lambda f: (-len(f), f))


def _base64_cores(data: bytes) -> list[str]:
    """The base64 characters that depend on `data` alone, wherever it starts in a longer text.

    Data starting at byte k of an encoded text: character i (6 bits from bit 6i) is fixed by
    the data when 8k <= 6i and 6i + 6 <= 8(k + n). Padded whole encodings are kept too.
    """
    cores = [base64.b64encode(data).decode(), base64.urlsafe_b64encode(data).decode()]
    n = len(data)
    for k in range(3):
        encoded = base64.b64encode(bytes(k) + data).decode().rstrip("=")
        first = -(-8 * k // 6)
        last = (8 * (k + n) - 6) // 6
        core = encoded[first : last + 1]
        cores += [core, core.replace("+", "-").replace("/", "_")]
    return cores


def _base32_cores(data: bytes) -> list[str]:
    """The base32 characters that depend on `data` alone, wherever it starts in a longer text
    (5 bits a character, 5 bytes a group), and the padded whole encoding."""
    cores = [base64.b32encode(data).decode()]
    n = len(data)
    for k in range(5):
        encoded = base64.b32encode(bytes(k) + data).decode().rstrip("=")
        first = -(-8 * k // 5)
        last = (8 * (k + n) - 5) // 5
        cores.append(encoded[first : last + 1])
    return cores


def fragment_length(form: str) -> int:
    """The shortest first part of `form` that is scrubbed on its own (the whole form when it is
    too short to have a fragment that is a secret): half of it, at least MIN_FRAGMENT."""
    return min(len(form), max(MIN_FRAGMENT, -(-len(form) // 2)))


# --- scrubbing ----------------------------------------------------------------------------------


def scrub_secrets(text: str, forms: Iterable[str]) -> str:
    """`text` with every form (from `secret_forms`) replaced by ***, and every first part of a
    form that is at least `fragment_length` long, however much of it is escaped: a server echoes
    a key percent-encoded in full (`quote(key, safe="")`), in part (`quote(key)` keeps `/`),
    twice (`%252F`), with lower-case hex digits, JSON-escaped (`\\/`) or as HTML entities; and a
    text cut short (ours or the server's) keeps the first part of a key. A form found only in
    the text as it is shown (`shown_text`: one line, NFKC, no zero-width or control character)
    is scrubbed there, and that text is given back.

    The letters, digits and `-._~` of a form are matched as themselves only: no encoder escapes
    them (RFC 3986's unreserved characters), and matching their escapes would slow every scrub.
    """
    ordered = tuple(sorted(set(forms), key=lambda f: (-len(f), f)))
    if not ordered:
        return text
    scrubbed = _scrub_forms(text, ordered)
    # Then the text as it is shown: a key spelled apart by what a report removes (zero-width
    # characters, escape sequences, line breaks) or in lookalikes (fullwidth) is whole there.
    # Only when that finds more is the text given back as shown, so that nothing later can
    # put a key back together.
    shown = shown_text(scrubbed)
    if shown == scrubbed:
        return scrubbed
    rescrubbed = _scrub_forms(shown, ordered)
    return scrubbed if rescrubbed == shown else rescrubbed


def _scrub_forms(text: str, ordered: tuple[str, ...]) -> str:
    """`scrub_secrets` on the text as it is, the forms longest first."""
    if not any(mark in text for mark in _ESCAPE_MARKS):
        # Nothing escaped: plain searching is the same, and far quicker on a long body.
        return _scrub_plain(text, ordered)
    return _forms_pattern(ordered).sub(REDACTED, _unescape_unreserved(text))


# An escaped letter, digit or -._~ (an HTML entity, a JSON \u escape, percent-encoded once or
# more): no encoder writes one, but an echo may escape every character of a key.
_UNRESERVED_HEX = r"(?:3[0-9]|[46][1-9a-fA-F]|[57][0-9aA]|2[dDeE]|5[fF]|7[eE])"
_ESCAPED_UNRESERVED = re.compile(
    r"&#(?:0*(\d{1,7})|[xX]0*([0-9a-fA-F]{1,6}));"
    rf"|\\+u(00{_UNRESERVED_HEX})|%(?:25)*({_UNRESERVED_HEX})"
)


def _unescape_unreserved(text: str) -> str:
    """`text` with every escaped letter, digit or `-._~` written as itself, so that the forms'
    patterns, which match those characters only as themselves, find a key whose every
    character was escaped (`&#115;&#107;…`). Other escapes are left for the patterns."""

    def plain(match: re.Match[str]) -> str:
        decimal, *hexes = match.groups()
        code = int(decimal) if decimal else int(next(h for h in hexes if h), 16)
        char = chr(code) if code < 0x110000 else ""
        return char if char in _UNRESERVED else match[0]

    return _ESCAPED_UNRESERVED.sub(plain, text)


# A text holding none of these has no escaped spelling of anything.
_ESCAPE_MARKS = ("%", "\\", "+", "&")
_UNRESERVED = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")


def _scrub_plain(text: str, ordered: tuple[str, ...]) -> str:
    """`scrub_secrets` for a text with no escaped character: each form's first part found with
    str.find, then extended while it goes on like the form."""
    for form in ordered:
        stem = form[: fragment_length(form)]
        start = text.find(stem)
        if start < 0:
            continue
        pieces: list[str] = []
        done = 0
        while start >= 0:
            end = start + len(stem)
            while end - start < len(form) and end < len(text) and text[end] == form[end - start]:
                end += 1
            pieces += [text[done:start], REDACTED]
            done = end
            start = text.find(stem, end)
        text = "".join([*pieces, text[done:]])
    return text


@functools.lru_cache(maxsize=64)
def _forms_pattern(ordered: tuple[str, ...]) -> re.Pattern[str]:
    """One pattern for all the forms, longest first (the longest match at a place wins): each
    form's first `fragment_length` characters, then as much of the rest as follows.

    The lookahead for a form's first character or an escape lets the engine skip quickly over
    text that cannot start a match.
    """
    starts = {form[0] for form in ordered} | {"%", "\\", "+", "&"}
    first = "(?=[" + "".join(re.escape(c) for c in sorted(starts)) + "])"
    return re.compile(first + "(?:" + "|".join(_form_pattern(f) for f in ordered) + ")")


def _form_pattern(form: str) -> str:
    """The form's first part, then each further character optional in turn (nested, so that
    only a run that goes on like the form is taken)."""
    stem = fragment_length(form)
    tail = ""
    for char in reversed(form[stem:]):
        tail = f"(?:{_char_pattern(char)}{tail})?"
    return "".join(map(_char_pattern, form[:stem])) + tail


@functools.lru_cache(maxsize=4096)
def _char_pattern(char: str) -> str:
    """A character as it is, or as any escaping that decodes to it."""
    if char in _UNRESERVED:
        return re.escape(char)
    spellings = [re.escape(char)]
    # Percent-encoded, once or more (`%2F`, `%252F`), either case of hex digit.
    spellings.append(
        "".join(
            "%(?:25)*" + "".join(f"[{c}{c.lower()}]" if c.isalpha() else c for c in f"{byte:02X}")
            for byte in char.encode("utf-8")
        )
    )
    if char == " ":
        spellings.append(r"\+")
    if char == "/":
        spellings.append(r"\\+/")
    units = char.encode("utf-16-be")
    json_escape = "".join(
        r"\\+u" + "".join(f"[{c}{c.upper()}]" if c.isalpha() else c for c in f"{unit:04x}")
        for unit in (int.from_bytes(units[i : i + 2], "big") for i in range(0, len(units), 2))
    )
    spellings.append(json_escape)
    code = ord(char)
    hex_code = "".join(f"[{c}{c.upper()}]" if c.isalpha() else c for c in f"{code:x}")
    spellings.append(f"&#(?:0*{code}|[xX]0*{hex_code});")
    named = {"&": "amp", "<": "lt", ">": "gt", '"': "quot", "'": "(?:apos|#39)"}.get(char)
    if named is not None:
        spellings.append(f"&{named};")
    return "(?:" + "|".join(spellings) + ")"
