"""What to probe and the budget: the typed, frozen models (`Target`, `Budget`, `Header`).

They are built from raw strings by `latency_gate.config.build.build_target`; this module holds
what a target is and how it shows itself safely: its redacted settings, the secrets it carries,
the settings that decide whether two runs measured the same thing.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal
from urllib.parse import parse_qsl, unquote, urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from latency_gate.config.parsing import REDACTED, Format, looks_like_json, redact_url

__all__ = [
    "HARMLESS_HEADERS",
    "NOT_COMPARED",
    "Budget",
    "Header",
    "Target",
    "comparable_settings",
    "find_secrets",
    "scrub_secrets",
    "secret_forms",
    "url_secrets",
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


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Budget(_Frozen):
    """The limits each number is held against; None means reported, not gated.

    A number passes when it is at or under its limit.
    """

    max_cold_start: float | None = Field(default=None, gt=0)
    max_warm_p50: float | None = Field(default=None, gt=0)
    max_warm_p95: float | None = Field(default=3.0, gt=0)
    max_concurrent_p95: float | None = Field(default=3.0, gt=0)
    max_error_rate: float | None = Field(default=0.01, ge=0, le=1)
    max_ttft_p95: float | None = Field(default=None, gt=0)


class Header(_Frozen):
    name: str
    value: SecretStr

    @property
    def harmless(self) -> bool:
        return self.name.lower() in HARMLESS_HEADERS


# A value shorter than this is not masked: masking "a" or "123" would garble every log line.
MIN_SECRET_LENGTH = 4


def find_secrets(
    *,
    api_key: str | None = None,
    headers: Iterable[tuple[str, str]] = (),
    url: str = "",
    others: Iterable[str] = (),
) -> list[str]:
    """Every secret among these values, by one rule: the API key, each header value that is not
    plainly harmless, the URL's password and query values, and `others` (a token, an inline
    body); values shorter than MIN_SECRET_LENGTH (after trimming) are left out."""
    values = [api_key or ""]
    values += [value for name, value in headers if name.strip().lower() not in HARMLESS_HEADERS]
    values += url_secrets(url)
    values += others
    return [v for v in values if len(v.strip()) >= MIN_SECRET_LENGTH]


def url_secrets(url: str) -> list[str]:
    """The parts of a URL that may hold a secret: the userinfo password (or the user name when
    there is no password: `https://TOKEN@host/` carries a token there) and every query value.

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
    return values + [v for _, v in parse_qsl(parts.query) if v]


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


def secret_forms(secrets: Iterable[str], pairs: Iterable[str] = ()) -> list[str]:
    """Every form a secret can take in an endpoint's text, longest first: as given, and base64
    (standard and URL-safe alphabets, at any of the three byte alignments it can have inside a
    longer encoded text). `pairs` are texts such as `user:password` that are sent only encoded
    (Basic auth) and are scrubbed in the same forms. `scrub_secrets` also finds each form with
    any of its characters escaped (percent-encoded, `+` for a space, JSON's `\\/` and `\\u00XX`).

    A form shorter than MIN_SECRET_LENGTH is left out: it would garble ordinary text.
    """
    forms: set[str] = set()
    for secret in [*secrets, *pairs]:
        if len(secret.strip()) < MIN_SECRET_LENGTH:
            continue
        forms.add(secret)
        forms |= set(_base64_cores(secret.encode("utf-8")))
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


def scrub_secrets(text: str, forms: Iterable[str]) -> str:
    """`text` with every form (from `secret_forms`) replaced by ***, however much of it is
    escaped: a server echoes a key percent-encoded in full (`quote(key, safe="")`), in part
    (`quote(key)` keeps `/`), with lower-case hex digits, or JSON-escaped (`\\/`)."""
    ordered = tuple(sorted(set(forms), key=lambda f: (-len(f), f)))
    if not ordered:
        return text
    if not any(mark in text for mark in _ESCAPE_MARKS):
        # Nothing escaped: plain replacing is the same, and far quicker on a long body.
        for form in ordered:
            text = text.replace(form, REDACTED)
        return text
    return _forms_pattern(ordered).sub(REDACTED, text)


# A text holding none of these has no escaped spelling of anything.
_ESCAPE_MARKS = ("%", "\\", "+")


@functools.lru_cache(maxsize=64)
def _forms_pattern(ordered: tuple[str, ...]) -> re.Pattern[str]:
    """One pattern for all the forms, longest first (the longest match at a place wins).

    The lookahead for a form's first character or an escape lets the engine skip quickly over
    text that cannot start a match.
    """
    starts = {form[0] for form in ordered} | set(_ESCAPE_MARKS)
    first = "(?=[" + "".join(re.escape(c) for c in sorted(starts)) + "])"
    return re.compile(
        first + "(?:" + "|".join("".join(map(_char_pattern, f)) for f in ordered) + ")"
    )


def _char_pattern(char: str) -> str:
    """A character as it is, or as any escaping that decodes to it."""
    spellings = [re.escape(char)]
    hex_digits = "".join(f"%{byte:02X}" for byte in char.encode("utf-8"))
    spellings.append("".join(f"[{c}{c.lower()}]" if c.isalpha() else c for c in hex_digits))
    if char == " ":
        spellings.append(r"\+")
    if char == "/":
        spellings.append(r"\\/")
    units = char.encode("utf-16-be")
    json_escape = "".join(
        rf"\\u{int.from_bytes(units[i : i + 2], 'big'):04x}" for i in range(0, len(units), 2)
    )
    spellings.append(
        "".join(f"[{c}{c.upper()}]" if c.isalpha() and c != "u" else c for c in json_escape)
    )
    return "(?:" + "|".join(spellings) + ")"


class Target(_Frozen):
    """One endpoint and how to probe it."""

    name: str = "endpoint"
    url: str
    method: str = "GET"
    headers: tuple[Header, ...] = ()
    body: SecretStr | None = None
    api_key: SecretStr | None = None
    model: str | None = None
    prompt: str | None = None
    format: Format = Format.RAW
    stream: bool = False
    timeout: float = Field(default=30.0, gt=0)
    idle: float = Field(default=0.0, ge=0)
    warm_calls: int = Field(default=20, ge=1, le=100_000)
    concurrency: int = Field(default=10, ge=1, le=10_000)
    # Sequential sampling (docs/statistics.md): while a gated check is undecided, more warm
    # calls or bursts, up to max_calls calls in all; what is still undecided then passes or
    # fails by on_undecided.
    max_calls: int = Field(default=300, ge=1, le=100_000)
    on_undecided: Literal["fail", "pass"] = "fail"
    fresh_connections: bool = False
    follow_redirects: bool = False
    ca_bundle: str | None = None
    insecure: bool = False
    max_tokens: int | None = Field(
        default=None, ge=1, description="answer length asked for; None: 64 for a prompt"
    )
    token_limit_field: str | None = Field(
        default=None, description="the body field that carries max_tokens; None: the format's"
    )
    vary_prompt: bool = True
    wait_ready: float = Field(default=0.0, ge=0)
    proxy: str | None = Field(default=None, description="forward proxy URL; None: direct")
    http2: bool = False
    budget: Budget = Budget()
    cost: str | None = Field(default=None, description="a note on its price, from a targets file")
    # A/B in one run: the base endpoint, probed beside this one (the head) with the same
    # request, its calls interleaved with the head's (docs/design.md, "A/B in one run").
    baseline_url: str | None = Field(
        default=None, description="the base endpoint measured beside this one; None: no A/B"
    )
    baseline_api_key: SecretStr | None = None
    baseline_headers: tuple[Header, ...] = ()
    baseline_proxy: str | None = Field(default=None, description="the base's proxy; None: direct")

    def request_headers(self) -> list[tuple[str, str]]:
        """Headers to send, auth included. Values are secrets: never log this list."""
        headers = [(h.name, h.value.get_secret_value()) for h in self.headers]
        names = {name.lower() for name, _ in headers}
        if self.api_key is not None:
            key = self.api_key.get_secret_value()
            if self.format is Format.ANTHROPIC:
                if "x-api-key" not in names:
                    headers.append(("x-api-key", key))
                if "anthropic-version" not in names:
                    headers.append(("anthropic-version", "2023-06-01"))
            elif "authorization" not in names:
                headers.append(("Authorization", f"Bearer {key}"))
        if (
            self.body is not None
            and "content-type" not in names
            and looks_like_json(self.body.get_secret_value())
        ):
            headers.append(("Content-Type", "application/json"))
        if self.stream and "accept" not in names:
            headers.append(("Accept", "text/event-stream"))
        return headers

    def request_body(self) -> bytes | None:
        return None if self.body is None else self.body.get_secret_value().encode()

    @property
    def display_url(self) -> str:
        """The URL with any userinfo and every query value masked: safe to print."""
        return redact_url(self.url)

    def secrets(self) -> list[str]:
        """Every secret value this target holds, to mask in CI logs and to grep reports for
        (the base's of an A/B run too)."""
        found = find_secrets(
            api_key=None if self.api_key is None else self.api_key.get_secret_value(),
            headers=[(h.name, h.value.get_secret_value()) for h in self.headers],
            url=self.url,
            others=url_secrets(self.proxy) if self.proxy else (),
        )
        if self.baseline_url is None:
            return found
        key = self.baseline_api_key
        return found + find_secrets(
            api_key=None if key is None else key.get_secret_value(),
            headers=[(h.name, h.value.get_secret_value()) for h in self.baseline_headers],
            url=self.baseline_url,
            others=url_secrets(self.baseline_proxy) if self.baseline_proxy else (),
        )

    def secret_forms(self) -> list[str]:
        """Every form the secrets can take in an endpoint's answer (see `secret_forms`)."""
        pairs = [url_userinfo(url) for url in (self.url, self.baseline_url) if url is not None]
        return secret_forms(self.secrets(), [pair for pair in pairs if pair])

    def redacted(self) -> dict[str, object]:
        """The settings as a JSON-ready mapping with every secret replaced by ***."""
        data: dict[str, Any] = self.model_dump(
            mode="json", exclude={"headers", "body", "api_key", "baseline_api_key"}
        )
        data["url"] = self.display_url
        data["headers"] = [
            f"{h.name}: {h.value.get_secret_value() if h.harmless else REDACTED}"
            for h in self.headers
        ]
        data["body"] = None if self.body is None else _body_fingerprint(self.body)
        data["api_key"] = None if self.api_key is None else REDACTED
        data["proxy"] = None if self.proxy is None else redact_url(self.proxy)
        for key in ("baseline_url", "baseline_api_key", "baseline_headers", "baseline_proxy"):
            data.pop(key, None)  # a run without a base keeps the settings it always had
        if self.baseline_url is not None:
            data["baseline_url"] = redact_url(self.baseline_url)
            data["baseline_api_key"] = None if self.baseline_api_key is None else REDACTED
            data["baseline_headers"] = [
                f"{h.name}: {h.value.get_secret_value() if h.harmless else REDACTED}"
                for h in self.baseline_headers
            ]
            data["baseline_proxy"] = (
                None if self.baseline_proxy is None else redact_url(self.baseline_proxy)
            )
        return data

    def comparable(self) -> dict[str, object]:
        """The settings that decide whether two runs measured the same thing (for baselines)."""
        return comparable_settings(self.redacted())


# Settings that do not change what a run measures: a baseline with other values still compares.
NOT_COMPARED = (
    "budget",
    "name",
    "idle",
    "cost",
    "wait_ready",
    "max_calls",
    "on_undecided",
    # Where an A/B run's base was: not what the head measured.
    "baseline_url",
    "baseline_api_key",
    "baseline_headers",
    "baseline_proxy",
)

# Settings added later, with the value that means what a result file without them measured:
# left out when they hold it, so a baseline from before they existed still compares.
ADDED_WITH_DEFAULT: tuple[tuple[str, object], ...] = (
    ("max_tokens", None),
    ("token_limit_field", None),
    ("vary_prompt", False),
    ("proxy", None),
    ("http2", False),
)


def comparable_settings(config: Mapping[str, object]) -> dict[str, object]:
    """A result's (or a target's redacted) settings as baselines compare them: without the
    NOT_COMPARED ones, and without later settings that hold their earlier meaning."""
    data = {k: v for k, v in config.items() if k not in NOT_COMPARED}
    for key, earlier in ADDED_WITH_DEFAULT:
        if key in data and data[key] == earlier:
            del data[key]
    return data


def _body_fingerprint(body: SecretStr) -> str:
    """The body hidden, with a short digest so a baseline can tell a changed body from the same.

    12 hex digits of SHA-256 of the whole body: enough to tell bodies apart, and a body holding a
    secret cannot be recovered from it.
    """
    digest = hashlib.sha256(body.get_secret_value().encode()).hexdigest()[:12]
    return f"{REDACTED} (sha256 {digest})"
