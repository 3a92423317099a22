"""The request a target sends, checked before anything is sent: header lines, the body and its
framing, the credentials (an API key, URL userinfo, an Authorization header: one of them), the
answer-length field, and the proxy the environment names.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from pydantic import SecretStr

from latency_gate.config.draft import Draft
from latency_gate.config.json_data import NotJSON, dump_json, load_json
from latency_gate.config.parsing import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_PROMPT,
    TOKEN_LIMIT_FIELDS,
    Format,
    chat_body,
    detect_format,
    looks_like_json,
    parse_proxy,
    proxy_from_environment,
    redact_url,
    token_limit_field,
)
from latency_gate.config.secrets import url_userinfo
from latency_gate.config.target import Header, Target
from latency_gate.errors import ConfigError, InputProblem

__all__ = [
    "PROXY_VARIABLES",
    "check_credentials",
    "check_framing",
    "default_prompt_note",
    "fixed_length_of",
    "header_text_problem",
    "not_utf8",
    "parse_api_key",
    "parse_header",
    "resolve_request",
    "unsent_settings",
    "with_environment_proxy",
]


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


PROXY_VARIABLES = ("HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY")


def with_environment_proxy(target: Target, environ: Mapping[str, str]) -> Target:
    """The target with the proxy the environment names for its URL (HTTPS_PROXY, HTTP_PROXY,
    NO_PROXY, as curl reads them), when it has none of its own and was not told to go direct
    (`--proxy off`, a targets file's `proxy: off`); the same for the base of an A/B run, for the
    base's URL. The edges pass os.environ.

    Raises ConfigError naming the variable when its value is not a proxy URL.
    """
    if target.direct:
        return target
    update: dict[str, str] = {}
    if target.proxy is None and (proxy := _environment_proxy(target.url, environ)) is not None:
        update["proxy"] = proxy
    base_url = target.baseline_url
    if (
        base_url is not None
        and target.baseline_proxy is None
        and (proxy := _environment_proxy(base_url, environ)) is not None
    ):
        update["baseline_proxy"] = proxy
    return target.model_copy(update=update) if update else target


def _environment_proxy(url: str, environ: Mapping[str, str]) -> str | None:
    found = proxy_from_environment(url, environ)
    if found is None:
        return None
    try:
        return parse_proxy(found)
    except ValueError as exc:
        scheme = "HTTPS_PROXY" if url.lower().startswith("https:") else "HTTP_PROXY"
        raise ConfigError.single(scheme, str(exc)) from None


def resolve_request(draft: Draft) -> None:
    """Settle format, body, stream flag and method from what was given, as a user would expect."""
    fields, merged, spelled, problems = draft.fields, draft.merged, draft.spelled, draft.problems
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
            data = load_json(body)
        except NotJSON as exc:
            problems.append(
                InputProblem(spelled("body"), f"the {fmt.value} format needs a JSON body: {exc}")
            )
            return
        except ValueError as exc:  # JSON, but not JSON a server can read back
            problems.append(InputProblem(spelled("body"), str(exc)))
            return
        if isinstance(data, dict):
            if stream is None:
                stream = bool(data.get("stream", False))
            elif data.get("stream") != stream:
                data["stream"] = stream
                body = dump_json(data)
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
    elif (
        body is None
        and fmt is not Format.RAW
        and (fields.get("model") is not None or fields.get("method", "POST") == "POST")
    ):
        # A URL of a known format (or --model) with nothing to send: a short default prompt,
        # said in the settings, never a bodiless GET an LLM endpoint would refuse.
        body = chat_body(fmt, fields.get("model"), DEFAULT_PROMPT, stream, **limits)
        fields["default_prompt"] = DEFAULT_PROMPT
    fields["stream"] = stream
    if fields.get("fixed_length"):
        body = _fixed_length(body, fmt, url or "", draft)
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


def not_utf8(value: str | list[str] | None) -> bool:
    values = [value] if isinstance(value, str) else value or []
    try:
        for text in values:
            text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def parse_api_key(text: str) -> SecretStr | None:
    if (problem := header_text_problem(text.strip())) is not None:
        raise ValueError(problem)
    return SecretStr(text) if text else None


def check_framing(draft: Draft, headers: list[Header]) -> None:
    """The body's framing is the HTTP client's to write: a Content-Length header must match the
    body, and Transfer-Encoding is refused (a mismatch would be a malformed request)."""
    fields, spelled, problems = draft.fields, draft.spelled, draft.problems
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


def check_credentials(draft: Draft, headers: list[Header]) -> None:
    """Credentials are given once. `user:password@` in the URL is sent as Basic auth, which an
    API key or an Authorization header would silently replace (or be replaced by): refused, so
    the user says which one is meant."""
    fields, spelled, problems = draft.fields, draft.spelled, draft.problems
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


def _fixed_length(body: str | None, fmt: Format, url: str, draft: Draft) -> str | None:
    """The body asking for answers of exactly its length: `ignore_eos` (llama.cpp, vLLM) and
    `min_tokens` (vLLM) beside the limit field. Only an openai-chat JSON body with a limit can
    ask it; anything else is refused, naming what is missing."""
    fields, spelled, problems = draft.fields, draft.spelled, draft.problems
    if fmt is not Format.OPENAI_CHAT:
        problems.append(
            InputProblem(
                spelled("fixed-length"),
                f"needs the openai-chat format (ignore_eos and min_tokens, as llama.cpp and vLLM "
                f"take them); the {fmt.value} format has no such field",
            )
        )
        return body
    try:
        data = load_json(body) if body is not None else None
    except ValueError:
        data = None
    if not isinstance(data, dict):
        problems.append(
            InputProblem(spelled("fixed-length"), "needs a JSON request body (give --prompt)")
        )
        return body
    length = data.get(token_limit_field(fmt, url, fields.get("token_limit_field")))
    if not isinstance(length, int) or isinstance(length, bool) or length < 1:
        problems.append(
            InputProblem(
                spelled("fixed-length"),
                f"needs the answer's length: give {spelled('max-tokens')}",
            )
        )
        return body
    data["ignore_eos"] = True
    data["min_tokens"] = length
    return dump_json(data)


def fixed_length_of(target: Target) -> int | None:
    """The length every answer was asked to have (--fixed-length), or None."""
    if not target.fixed_length or target.body is None:
        return None
    try:
        data = load_json(target.body.get_secret_value())
    except ValueError:
        return None
    length = data.get("min_tokens") if isinstance(data, dict) else None
    return length if isinstance(length, int) and not isinstance(length, bool) else None


def _limit_answer(data: dict[str, Any], fmt: Format, url: str, fields: dict[str, Any]) -> str:
    """A JSON body with --max-tokens in the format's limit field (any other limit field dropped)."""
    field = token_limit_field(fmt, url, fields.get("token_limit_field"))
    for other in TOKEN_LIMIT_FIELDS:
        data.pop(other, None)
    data[field] = fields["max_tokens"]
    return dump_json(data)


def default_prompt_note(target: Target) -> list[str]:
    """What a run of a URL of a known format given no --prompt or --body sent instead: the
    default prompt, and when no --model was given, that the body names none (llama.cpp serves
    the one model it loaded; most OpenAI-compatible servers, and Anthropic's, answer 4xx)."""
    if target.default_prompt is None:
        return []
    note = f"no --prompt or --body: each call asked the default prompt {target.default_prompt!r}"
    if target.model is None:
        note += (
            " and named no model (a server of one model, as llama.cpp, answers it; most "
            "OpenAI-compatible servers need --model)"
        )
    return [note]


def unsent_settings(target: Target) -> list[str]:
    """The request settings given that the request does not carry, each said rather than
    dropped in silence: --max-tokens, --stream, --model or --token-limit-field when the body (a
    raw one, one given as written, or none) holds no such field; --http2 on an http:// URL
    through a forward proxy, which takes such requests in HTTP/1.1."""
    text = None if target.body is None else target.body.get_secret_value()
    try:
        body = load_json(text) if text is not None and looks_like_json(text) else None
    except ValueError:
        body = None
    fields: dict[str, Any] = body if isinstance(body, dict) else {}
    why = (
        "the request has no body"
        if text is None
        else "the raw format sends the body as written"
        if target.format is Format.RAW
        else "the body is not a JSON object"
        if not isinstance(body, dict)
        else "the body you gave holds no such field"
    )
    field = token_limit_field(target.format, target.url, target.token_limit_field)
    unsent = []
    if target.max_tokens is not None and fields.get(field) != target.max_tokens:
        unsent.append(f"--max-tokens {target.max_tokens} was not sent ({why})")
    if target.token_limit_field is not None and target.token_limit_field not in fields:
        unsent.append(f"--token-limit-field {target.token_limit_field} was not used ({why})")
    if target.stream and fields.get("stream") is not True:
        unsent.append(
            f"--stream was not sent in the body ({why}); only its Accept: text/event-stream "
            "header was"
        )
    if target.model is not None and fields.get("model") != target.model:
        unsent.append(f"--model was not sent ({why})")
    if target.http2 and target.proxy is not None and urlsplit(target.url).scheme == "http":
        unsent.append(
            f"--http2 was not spoken: the calls went through the proxy {redact_url(target.proxy)}"
            ", which takes an http:// URL's requests in HTTP/1.1 (each call says HTTP/1.1); go "
            "direct (--proxy off, or NO_PROXY) to measure HTTP/2 without TLS"
        )
    return unsent
