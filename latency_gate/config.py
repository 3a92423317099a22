"""What to probe and the budget: typed, frozen models and the one parser that builds them.

The CLI, the action's INPUT_* variables and (later) a targets file all hand `build_target` a
mapping of raw strings keyed by the canonical kebab-case input name; every bad value is collected
and reported together in one `ConfigError` that names each input as the user spelled it. The
string parsers it uses live in latency_gate.parsing; the public ones are re-exported here.
"""

from __future__ import annotations

import hashlib
import json
import re
import ssl
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from latency_gate.errors import ConfigError, InputProblem
from latency_gate.parsing import (
    REDACTED,
    Format,
    chat_body,
    detect_format,
    looks_like_json,
    parse_bool,
    parse_count,
    parse_duration,
    parse_fraction,
    parse_url,
    read_body,
    redact_url,
)

# The parsers and Format are re-exported: they lived here before parsing.py was split out.
__all__ = [
    "BUDGET_KEYS",
    "HARMLESS_HEADERS",
    "NOT_COMPARED",
    "REDACTED",
    "TARGET_KEYS",
    "Budget",
    "Format",
    "Header",
    "Target",
    "build_target",
    "chat_body",
    "detect_format",
    "parse_bool",
    "parse_count",
    "parse_duration",
    "parse_fraction",
    "parse_header",
    "parse_url",
    "read_body",
    "redact_url",
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


def url_secrets(url: str) -> list[str]:
    """The parts of a URL that may hold a secret: the userinfo password and every query value.

    Works on a URL not yet validated (the action masks secrets before it validates anything).
    """
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return []
    values = [password] if password else []
    return values + [v for _, v in parse_qsl(parts.query) if v]


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
    fresh_connections: bool = False
    follow_redirects: bool = False
    ca_bundle: str | None = None
    insecure: bool = False
    budget: Budget = Budget()
    cost: str | None = Field(default=None, description="a note on its price, from a targets file")

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
        """Every secret value this target holds, to mask in CI logs and to grep reports for."""
        values: list[str] = []
        if self.api_key is not None:
            values.append(self.api_key.get_secret_value())
        values += [h.value.get_secret_value() for h in self.headers if not h.harmless]
        values += url_secrets(self.url)
        return [v for v in values if len(v) >= 4]

    def redacted(self) -> dict[str, object]:
        """The settings as a JSON-ready mapping with every secret replaced by ***."""
        data: dict[str, Any] = self.model_dump(mode="json", exclude={"headers", "body", "api_key"})
        data["url"] = self.display_url
        data["headers"] = [
            f"{h.name}: {h.value.get_secret_value() if h.harmless else REDACTED}"
            for h in self.headers
        ]
        data["body"] = None if self.body is None else _body_fingerprint(self.body)
        data["api_key"] = None if self.api_key is None else REDACTED
        return data

    def comparable(self) -> dict[str, object]:
        """The settings that decide whether two runs measured the same thing (for baselines)."""
        data = self.redacted()
        for key in NOT_COMPARED:
            data.pop(key, None)
        return data


# Settings that do not change what a run measures: a baseline with other values still compares.
NOT_COMPARED = ("budget", "name", "idle", "cost")


# --- parsing a header line -------------------------------------------------------------------

_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")


def parse_header(text: str) -> Header:
    name, sep, value = text.partition(":")
    if not sep:
        raise ValueError(f"expected 'Name: value' with a colon, got {_elide(text)!r}")
    name = name.strip()
    if not _HEADER_NAME.match(name):
        raise ValueError(f"{_elide(name)!r} is not a valid header name")
    if "\n" in value or "\r" in value:
        raise ValueError(f"the value of header {name!r} holds a line break")
    return Header(name=name, value=SecretStr(value.strip()))


def _elide(text: str) -> str:
    """Show the shape of a bad header without its value, which may be a secret."""
    return text if len(text) <= 3 else text[:3] + "…"


# --- the builder ----------------------------------------------------------------------------

BUDGET_KEYS = {
    "max-cold-start": "max_cold_start",
    "max-warm-p50": "max_warm_p50",
    "max-warm-p95": "max_warm_p95",
    "max-concurrent-p95": "max_concurrent_p95",
    "max-error-rate": "max_error_rate",
    "max-ttft-p95": "max_ttft_p95",
}

TARGET_KEYS = (
    "name",
    "url",
    "method",
    "headers",
    "body",
    "api-key",
    "model",
    "prompt",
    "format",
    "stream",
    "timeout",
    "idle",
    "warm-calls",
    "concurrency",
    "fresh-connections",
    "follow-redirects",
    "ca-bundle",
    "insecure",
    *BUDGET_KEYS,
)

_OFF = {"", "none", "off"}


def build_target(
    raw: Mapping[str, str | list[str] | None],
    spelled: Callable[[str], str] = lambda key: key,
    base_dir: Path | None = None,
    defaults: Mapping[str, str | list[str] | None] | None = None,
) -> Target:
    """Build a Target from raw strings keyed by canonical kebab-case name.

    `headers` is a list of "Name: value" strings; every other value is a string or None (not
    given). `spelled` maps a key to the name the user wrote (`--max-warm-p95`, `max-warm-p95`).
    `defaults` fills keys that `raw` leaves out (a targets file's shared settings).

    Raises ConfigError naming every bad input at once.
    """
    merged: dict[str, str | list[str] | None] = dict(defaults or {})
    merged.update({k: v for k, v in raw.items() if v is not None})
    problems: list[InputProblem] = []
    fields: dict[str, Any] = {}
    budget: dict[str, float | None] = {}

    def take(key: str, parse: Callable[[str], Any], field: str | None = None) -> None:
        value = merged.get(key)
        if value is None:
            return
        if isinstance(value, list):
            problems.append(InputProblem(spelled(key), "expected a single value, not a list"))
            return
        try:
            fields[field or key.replace("-", "_")] = parse(value)
        except ValueError as exc:
            problems.append(InputProblem(spelled(key), str(exc)))

    unknown = sorted(set(merged) - set(TARGET_KEYS))
    problems += [InputProblem(spelled(key), "unknown setting") for key in unknown]

    take("url", parse_url)
    if merged.get("url") in (None, ""):
        problems.append(InputProblem(spelled("url"), "required: the endpoint to probe"))
        fields.pop("url", None)
    take("name", lambda s: _nonempty(s, "a name"))
    take("method", _parse_method)
    take("body", lambda s: read_body(s, base_dir))
    take("api-key", lambda s: SecretStr(s) if s else None)
    take("model", lambda s: s or None)
    take("prompt", lambda s: s or None)
    take("format", _parse_format)
    take("stream", parse_bool)
    take("timeout", _positive_duration)
    take("idle", parse_duration)
    take("warm-calls", parse_count)
    take("concurrency", parse_count)
    take("fresh-connections", parse_bool)
    take("follow-redirects", parse_bool)
    take("ca-bundle", lambda s: _ca_bundle(s, base_dir))
    take("insecure", parse_bool)
    for key, field in BUDGET_KEYS.items():
        value = merged.get(key)
        if value is None or isinstance(value, list):
            continue
        try:
            if value.strip().lower() in _OFF:
                budget[field] = None
            elif key == "max-error-rate":
                budget[field] = parse_fraction(value)
            else:
                budget[field] = _positive_duration(value)
        except ValueError as exc:
            problems.append(InputProblem(spelled(key), str(exc)))

    headers: list[Header] = []
    raw_headers = merged.get("headers") or []
    for line in [raw_headers] if isinstance(raw_headers, str) else raw_headers:
        if not line.strip():
            continue
        try:
            headers.append(parse_header(line))
        except ValueError as exc:
            problems.append(InputProblem(spelled("headers"), str(exc)))

    _resolve_request(fields, merged, spelled, problems)
    if problems:
        raise ConfigError(problems)

    fields["headers"] = tuple(headers)
    fields["budget"] = Budget(**budget)
    try:
        return Target(**fields)
    except ValidationError as exc:
        raise ConfigError(
            [
                InputProblem(spelled(_kebab(err["loc"])), err["msg"])
                for err in exc.errors(include_url=False)
            ]
        ) from None


def _resolve_request(
    fields: dict[str, Any],
    merged: Mapping[str, str | list[str] | None],
    spelled: Callable[[str], str],
    problems: list[InputProblem],
) -> None:
    """Settle format, body, stream flag and method from what was given, as a user would expect."""
    body: str | None = fields.get("body")
    prompt: str | None = fields.get("prompt")
    stream: bool | None = fields.get("stream")
    url: str | None = fields.get("url")
    if body is not None and prompt is not None:
        problems.append(
            InputProblem(spelled("prompt"), f"give either {spelled('body')} or a prompt, not both")
        )
        return
    fmt: Format = fields.get("format", Format.AUTO)
    if fmt is Format.AUTO and url is not None:
        fmt = detect_format(url, body)
    if prompt is not None and fmt is Format.RAW:
        fmt = Format.OPENAI_CHAT
    fields["format"] = fmt

    if body is not None and fmt is not Format.RAW and looks_like_json(body):
        try:
            data = json.loads(body)
        except ValueError as exc:
            problems.append(
                InputProblem(spelled("body"), f"the {fmt.value} format needs a JSON body: {exc}")
            )
            return
        if isinstance(data, dict):
            if stream is None:
                stream = bool(data.get("stream", False))
            elif data.get("stream") != stream:
                data["stream"] = stream
                body = json.dumps(data)
    elif body is not None and fmt is not Format.RAW:
        problems.append(
            InputProblem(spelled("body"), f"the {fmt.value} format needs a JSON object body")
        )
        return
    stream = bool(stream)
    if prompt is not None:
        body = chat_body(fmt, fields.get("model"), prompt, stream)
    elif fields.get("model") is not None and body is None and fmt is not Format.RAW:
        body = chat_body(fmt, fields.get("model"), "Say hello in five words.", stream)
    fields["stream"] = stream
    if body is not None:
        fields["body"] = SecretStr(body)
    fields.pop("prompt", None)
    fields["prompt"] = prompt
    if "method" not in fields:
        fields["method"] = "POST" if body is not None else "GET"
    if merged.get("ca-bundle") and fields.get("insecure"):
        problems.append(
            InputProblem(spelled("insecure"), f"contradicts {spelled('ca-bundle')}: pick one")
        )


def _kebab(loc: tuple[int | str, ...]) -> str:
    last = str(loc[-1]) if loc else "input"
    return last.replace("_", "-")


def _nonempty(text: str, what: str) -> str:
    if not text.strip():
        raise ValueError(f"expected {what}, got an empty string")
    return text.strip()


def _positive_duration(text: str) -> float:
    value = parse_duration(text)
    if value <= 0:
        raise ValueError(f"expected a duration above zero, got {text!r}")
    return value


def _parse_method(text: str) -> str:
    method = text.strip().upper()
    if not re.fullmatch(r"[A-Z]+", method):
        raise ValueError(f"expected an HTTP method such as GET or POST, got {text!r}")
    return method


def _parse_format(text: str) -> Format:
    try:
        return Format(text.strip().lower())
    except ValueError:
        choices = ", ".join(f.value for f in Format)
        raise ValueError(f"expected one of {choices}; got {text!r}") from None


def _readable_file(text: str, base_dir: Path | None) -> str:
    path = Path(text).expanduser()
    if base_dir is not None and not path.is_absolute():
        path = base_dir / path
    if not path.is_file():
        raise ValueError(f"no readable file at {str(path)!r}")
    return str(path)


def _ca_bundle(text: str, base_dir: Path | None) -> str:
    """A readable PEM file that holds at least one CA certificate."""
    path = _readable_file(text, base_dir)
    try:
        ssl.create_default_context(cafile=path)
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise ValueError(f"{path!r} holds no usable PEM certificate ({exc})") from None
    return path


def _body_fingerprint(body: SecretStr) -> str:
    """The body hidden, with a short digest so a baseline can tell a changed body from the same.

    12 hex digits of SHA-256 of the whole body: enough to tell bodies apart, and a body holding a
    secret cannot be recovered from it.
    """
    digest = hashlib.sha256(body.get_secret_value().encode()).hexdigest()[:12]
    return f"{REDACTED} (sha256 {digest})"
