"""Raw strings to values: durations, fractions, counts, flags, URLs, bodies and answer formats.

Each parser takes the text a user wrote and returns a plain value, or raises ValueError with a
message saying what was expected; `latency_gate.config.build_target` collects those messages,
names the input each came from, and builds the models. Nothing here imports the models.
"""

from __future__ import annotations

import json
import math
import re
from enum import StrEnum
from pathlib import Path
from urllib.parse import SplitResult, parse_qsl, urlencode, urlsplit, urlunsplit

import httpx

from latency_gate.config.files import read_input_file

REDACTED = "***"

_DURATION = re.compile(r"^\s*(?P<num>\d+(?:\.\d*)?|\.\d+)\s*(?P<unit>ms|s|m)?\s*$")
# Longer than any wait a CI job has: a bigger duration is a typo (and 9999...9 s overflows).
MAX_DURATION = 86_400.0
_SHOWN = 40


def shown(text: str) -> str:
    """`text` quoted for a message, cut to its first characters when long."""
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN] + "…")


class Format(StrEnum):
    """How the answer is shaped, so the probe can find first token, end marker and errors."""

    AUTO = "auto"
    OPENAI_CHAT = "openai-chat"
    OPENAI_RESPONSES = "openai-responses"
    ANTHROPIC = "anthropic"
    RAW = "raw"


def redact_url(url: str) -> str:
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if ":" in netloc:
        netloc = f"[{netloc}]"
    if parts.port is not None:
        netloc += f":{parts.port}"
    if parts.username or parts.password:
        netloc = f"{REDACTED}@{netloc}"
    # `***` as typed: urlencode would print it as %2A%2A%2A.
    query = urlencode(
        [(k, REDACTED) for k, _ in parse_qsl(parts.query, keep_blank_values=True)], safe="*"
    )
    return urlunsplit(SplitResult(parts.scheme, netloc, parts.path, query, ""))


def parse_duration(text: str) -> float:
    """`3s`, `250ms`, `1.5` (seconds) or `2m` to seconds; ValueError says what was expected."""
    match = _DURATION.match(text)
    if match is None:
        raise ValueError(
            f"expected a duration such as 3s, 250ms or 3.0 (seconds), got {shown(text)}"
        )
    value = float(match["num"])
    unit = match["unit"] or "s"
    seconds = value * {"ms": 0.001, "s": 1.0, "m": 60.0}[unit]
    if not seconds <= MAX_DURATION:
        raise ValueError(f"expected a duration of at most 24 hours, got {shown(text)}")
    return seconds


def parse_fraction(text: str) -> float:
    """`0.01` or `1%` to a fraction between 0 and 1."""
    stripped = text.strip()
    try:
        value = float(stripped[:-1]) / 100 if stripped.endswith("%") else float(stripped)
    except ValueError:
        raise ValueError(f"expected a fraction such as 0.01 or 1%, got {shown(text)}") from None
    if not 0 <= value <= 1 or math.isnan(value):
        raise ValueError(f"expected a fraction between 0 and 1, got {shown(text)}")
    return value


def parse_count(text: str, minimum: int = 1) -> int:
    stripped = text.strip()
    if len(stripped) > _SHOWN:  # int() of thousands of digits is slow, and no count is that long
        raise ValueError(f"expected a whole number of a sensible size, got {shown(text)}")
    try:
        value = int(stripped)
    except ValueError:
        raise ValueError(f"expected a whole number, got {shown(text)}") from None
    if value < minimum:
        raise ValueError(f"expected a whole number of at least {minimum}, got {value}")
    return value


_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


def parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError(f"expected true or false, got {shown(text)}")


def parse_url(text: str) -> str:
    stripped = text.strip()
    try:
        parts = urlsplit(stripped)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        raise ValueError(f"not a valid URL: {exc}") from None
    if parts.scheme not in {"http", "https"}:
        raise ValueError(f"expected an http:// or https:// URL, got {redact_url(stripped)!r}")
    if not parts.hostname:
        raise ValueError(f"the URL has no host: {redact_url(stripped)!r}")
    if any(c.isspace() for c in stripped):
        raise ValueError("the URL contains white space")
    try:  # the HTTP client's own rules (control characters, IDNA hosts, length)
        httpx.URL(stripped)
    except httpx.InvalidURL as exc:
        raise ValueError(f"not a valid URL: {exc}") from None
    return stripped


def read_body(text: str, base_dir: Path | None = None) -> str:
    """A body as given, or the contents of a file for `@path`."""
    if not text.startswith("@"):
        return text
    path = Path(text[1:]).expanduser()
    if base_dir is not None and not path.is_absolute():
        path = base_dir / path
    return read_input_file(path, "body file ")


def looks_like_json(text: str) -> bool:
    """Whether a body starts like a JSON object or array (it is not parsed)."""
    return text.lstrip()[:1] in {"{", "["}


def detect_format(url: str, body: str | None) -> Format:
    """Guess the answer format from the path, then from the body's shape."""
    path = urlsplit(url).path.rstrip("/")
    if path.endswith("/chat/completions"):
        return Format.OPENAI_CHAT
    if path.endswith("/responses"):
        return Format.OPENAI_RESPONSES
    if path.endswith("/messages"):
        return Format.ANTHROPIC
    if body is not None and looks_like_json(body):
        try:
            data = json.loads(body)
        except ValueError:
            return Format.RAW
        if isinstance(data, dict):
            if "messages" in data:
                return Format.OPENAI_CHAT
            if "input" in data:
                return Format.OPENAI_RESPONSES
    return Format.RAW


def chat_body(fmt: Format, model: str | None, prompt: str, stream: bool) -> str:
    """The smallest request body for a prompt in the given format."""
    message = [{"role": "user", "content": prompt}]
    body: dict[str, object]
    if fmt is Format.OPENAI_RESPONSES:
        body = {"input": prompt}
    elif fmt is Format.ANTHROPIC:
        body = {"messages": message, "max_tokens": 64}
    else:
        body = {"messages": message, "max_tokens": 64}
        if stream:
            body["stream_options"] = {"include_usage": True}
    if model is not None:
        body["model"] = model
    body["stream"] = stream
    return json.dumps(body)


def parse_label(text: str) -> str | None:
    """Where a run ran (`--label`), trimmed; None when blank. Text that is not UTF-8 (bytes
    from a shell in another encoding) cannot be stored in a result file."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("is not valid UTF-8 text (check the shell's encoding)") from None
    return text.strip() or None
