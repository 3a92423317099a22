"""The one parser from raw strings to a `Target`: every bad value named at once.

The CLI, the action's INPUT_* variables and a targets file all hand `build_target` a mapping of
raw strings keyed by the canonical kebab-case input name; every bad value is collected and
reported together in one `ConfigError` that names each input as the user spelled it. The string
parsers it uses live in latency_gate.config.parsing.
"""

from __future__ import annotations

import json
import re
import ssl
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import SecretStr, ValidationError

from latency_gate.config.files import input_file
from latency_gate.config.parsing import (
    DEFAULT_MAX_TOKENS,
    TOKEN_LIMIT_FIELDS,
    Format,
    chat_body,
    detect_format,
    looks_like_json,
    parse_bool,
    parse_count,
    parse_duration,
    parse_fraction,
    parse_proxy,
    parse_token_limit_field,
    parse_url,
    proxy_from_environment,
    read_body,
    token_limit_field,
)
from latency_gate.config.target import Budget, Header, Target, url_userinfo
from latency_gate.errors import ConfigError, InputProblem

__all__ = [
    "BUDGET_KEYS",
    "PROXY_VARIABLES",
    "TARGET_KEYS",
    "build_target",
    "header_text_problem",
    "parse_header",
    "with_environment_proxy",
]

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
    value = value.strip()
    if (problem := header_text_problem(value)) is not None:
        raise ValueError(f"the value of header {name!r} {problem}")
    return Header(name=name, value=SecretStr(value))


def header_text_problem(value: str) -> str | None:
    """Why `value` cannot go in an HTTP header as it is (named without quoting it: it may be a
    secret), or None. Header values are ASCII: printable characters, spaces and tabs."""
    for position, char in enumerate(value, start=1):
        if char == "\t" or " " <= char <= "~":
            continue
        what = "a control character" if ord(char) < 0x80 else "a character that is not ASCII"
        return f"holds {what} at position {position} (HTTP headers carry ASCII only)"
    return None


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
    "max-calls",
    "on-undecided",
    "fresh-connections",
    "follow-redirects",
    "ca-bundle",
    "insecure",
    "max-tokens",
    "token-limit-field",
    "vary-prompt",
    "wait-ready",
    "proxy",
    "http2",
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
    # Bytes that are not UTF-8 on a command line arrive as lone surrogates: not text to send.
    for key in [k for k, v in merged.items() if _not_utf8(v)]:
        problems.append(
            InputProblem(spelled(key), "is not valid UTF-8 text (check the shell's encoding)")
        )
        del merged[key]
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
    take("api-key", _api_key)
    take("model", lambda s: s or None)
    take("prompt", lambda s: s or None)
    take("format", _parse_format)
    take("stream", parse_bool)
    take("timeout", _positive_duration)
    take("idle", parse_duration)
    take("warm-calls", parse_count)
    take("concurrency", parse_count)
    take("max-calls", parse_count)
    take("on-undecided", _parse_on_undecided)
    take("fresh-connections", parse_bool)
    take("follow-redirects", parse_bool)
    take("ca-bundle", lambda s: _ca_bundle(s, base_dir))
    take("insecure", parse_bool)
    take("max-tokens", parse_count)
    take("token-limit-field", parse_token_limit_field)
    take("vary-prompt", parse_bool)
    take("wait-ready", _wait_duration)
    take("proxy", parse_proxy)
    take("http2", parse_bool)
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
    _check_credentials(fields, headers, spelled, problems)
    _check_framing(fields, headers, spelled, problems)
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


PROXY_VARIABLES = ("HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY")


def with_environment_proxy(target: Target, environ: Mapping[str, str]) -> Target:
    """The target with the proxy the environment names for its URL (HTTPS_PROXY, HTTP_PROXY,
    NO_PROXY, as curl reads them), when it has none of its own. The edges pass os.environ.

    Raises ConfigError naming the variable when its value is not a proxy URL.
    """
    if target.proxy is not None:
        return target
    found = proxy_from_environment(target.url, environ)
    if found is None:
        return target
    try:
        proxy = parse_proxy(found)
    except ValueError as exc:
        scheme = "HTTPS_PROXY" if target.url.lower().startswith("https:") else "HTTP_PROXY"
        raise ConfigError.single(scheme, str(exc)) from None
    return target.model_copy(update={"proxy": proxy})


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
    if prompt is not None and fmt is Format.RAW and fields.get("format") is not Format.RAW:
        fmt = Format.OPENAI_CHAT  # detected raw; an explicit --format raw is honoured
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
            if fields.get("max_tokens") is not None:
                body = _limit_answer(data, fmt, url or "", fields)
    elif body is not None and fmt is not Format.RAW:
        problems.append(
            InputProblem(spelled("body"), f"the {fmt.value} format needs a JSON object body")
        )
        return
    stream = bool(stream)
    limits: dict[str, Any] = {
        "max_tokens": fields.get("max_tokens") or DEFAULT_MAX_TOKENS,
        "limit_field": token_limit_field(fmt, url or "", fields.get("token_limit_field")),
    }
    if prompt is not None:
        body = chat_body(fmt, fields.get("model"), prompt, stream, **limits)
    elif fields.get("model") is not None and body is None and fmt is not Format.RAW:
        body = chat_body(fmt, fields.get("model"), "Say hello in five words.", stream, **limits)
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


def _not_utf8(value: str | list[str] | None) -> bool:
    values = [value] if isinstance(value, str) else value or []
    try:
        for text in values:
            text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _api_key(text: str) -> SecretStr | None:
    if (problem := header_text_problem(text.strip())) is not None:
        raise ValueError(problem)
    return SecretStr(text) if text else None


def _check_framing(
    fields: Mapping[str, Any],
    headers: list[Header],
    spelled: Callable[[str], str],
    problems: list[InputProblem],
) -> None:
    """The body's framing is the HTTP client's to write: a Content-Length header must match the
    body, and Transfer-Encoding is refused (a mismatch would be a malformed request)."""
    body: SecretStr | str | None = fields.get("body")  # a str when the body was refused
    text = body.get_secret_value() if isinstance(body, SecretStr) else body or ""
    size = len(text.encode("utf-8"))
    for header in headers:
        name = header.name.lower()
        value = header.value.get_secret_value().strip()
        if name == "content-length" and value != str(size):
            problems.append(
                InputProblem(
                    spelled("headers"),
                    f"Content-Length: {value[:20]!r} contradicts the body, which is {size} "
                    "bytes; leave the header out and it is set for you",
                )
            )
        elif name == "transfer-encoding":
            problems.append(
                InputProblem(
                    spelled("headers"),
                    "Transfer-Encoding is set by latency-gate for the body; leave it out",
                )
            )


def _check_credentials(
    fields: Mapping[str, Any],
    headers: list[Header],
    spelled: Callable[[str], str],
    problems: list[InputProblem],
) -> None:
    """Credentials are given once. `user:password@` in the URL is sent as Basic auth, which an
    API key or an Authorization header would silently replace (or be replaced by): refused, so
    the user says which one is meant."""
    url = fields.get("url")
    if url is None or url_userinfo(url) is None:
        return
    if fields.get("api_key") is not None:
        problems.append(
            InputProblem(
                spelled("api-key"),
                f"contradicts the user:password in {spelled('url')}: give the credentials once "
                "(drop one of them)",
            )
        )
    if any(h.name.lower() == "authorization" for h in headers):
        problems.append(
            InputProblem(
                spelled("headers"),
                f"an Authorization header contradicts the user:password in {spelled('url')}: "
                "give the credentials once (drop one of them)",
            )
        )


def _limit_answer(data: dict[str, Any], fmt: Format, url: str, fields: dict[str, Any]) -> str:
    """A JSON body with --max-tokens in the format's limit field (any other limit field dropped)."""
    field = token_limit_field(fmt, url, fields.get("token_limit_field"))
    for other in TOKEN_LIMIT_FIELDS:
        data.pop(other, None)
    data[field] = fields["max_tokens"]
    return json.dumps(data)


def _wait_duration(text: str) -> float:
    """A duration, or off/0 for no readiness wait."""
    return 0.0 if text.strip().lower() in _OFF else parse_duration(text)


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


def _parse_on_undecided(text: str) -> str:
    choice = text.strip().lower()
    if choice not in {"fail", "pass"}:
        raise ValueError(f"expected fail or pass, got {text!r}")
    return choice


def _parse_format(text: str) -> Format:
    try:
        return Format(text.strip().lower())
    except ValueError:
        choices = ", ".join(f.value for f in Format)
        raise ValueError(f"expected one of {choices}; got {text!r}") from None


def _ca_bundle(text: str, base_dir: Path | None) -> str:
    """A readable PEM file that holds at least one CA certificate."""
    path = input_file(text, base_dir)
    try:
        ssl.create_default_context(cafile=path)
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise ValueError(f"{path!r} holds no usable PEM certificate ({exc})") from None
    return path
