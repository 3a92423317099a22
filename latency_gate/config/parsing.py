"""Raw strings to values: durations, fractions, counts, flags, URLs, bodies, answer formats and
rates.

Each parser takes the text a user wrote and returns a plain value, or raises ValueError with a
message saying what was expected; `latency_gate.config.build_target` collects those messages,
names the input each came from, and builds the models. Nothing here imports the models.
"""

from __future__ import annotations

import ipaddress
import json
import math
import re
from collections.abc import Iterable, Mapping
from enum import StrEnum
from pathlib import Path
from urllib.parse import SplitResult, parse_qsl, urlencode, urlsplit, urlunsplit

import httpx

from latency_gate.config.files import read_input_file
from latency_gate.config.json_data import load_json
from latency_gate.config.plan.levels import RATE_LEVEL_CALLS

REDACTED = "***"

# Words that make a JSON body field or a URL's query parameter a credential (api_key,
# accessToken, client-secret, sig, ...).
_CREDENTIAL_WORDS = frozenset(
    {
        "apikey",
        "auth",
        "authorization",
        "bearer",
        "credential",
        "credentials",
        "key",
        "keys",
        "passphrase",
        "passwd",
        "password",
        "pwd",
        "secret",
        "secrets",
        "sig",
        "signature",
        "token",
    }
)


def credential_field(name: str) -> bool:
    """Whether a JSON field or a URL's query parameter of this name holds a credential: one of
    its words (split at `_`, `-`, `.` and camelCase) is key, token, secret, password, auth, sig,
    ... (`api_key`, `accessToken`, `client-secret`), not a count such as `max_tokens`."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()
    return any(word in _CREDENTIAL_WORDS for word in re.split(r"[^a-z0-9]+", spaced))


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


def redact_url(url: str, secrets: Iterable[str] = ()) -> str:
    """The URL safe to print: userinfo as ***, and a query value as *** where its name looks
    secret (`credential_field`) or it is one of `secrets` (the run's API key, say); the other
    values as they are, so that a URL shown can be called again (`/fixed?ms=50`)."""
    hidden = {secret.strip() for secret in secrets}
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
        [
            (k, REDACTED if credential_field(k) or v.strip() in hidden else v)
            for k, v in parse_qsl(parts.query, keep_blank_values=True)
        ],
        safe="*",
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


PROXY_OFF = frozenset({"", "off", "none", "false", "no"})
"""How a user says "no proxy": `off` (a YAML targets file reads a bare `off` or `no` as false)."""


def parse_proxy(text: str) -> str | None:
    """A forward proxy's http:// or https:// URL; empty, `off`, `none` (or `false`, as YAML
    reads `proxy: off`) for a direct path. `host:port` without a scheme is an http:// proxy, as
    curl takes it."""
    stripped = text.strip()
    if stripped.lower() in PROXY_OFF:
        return None
    if "://" not in stripped:
        stripped = "http://" + stripped
    scheme = stripped.split("://", 1)[0].lower()
    if scheme not in {"http", "https"}:
        raise ValueError(
            f"{scheme}:// proxies are not supported; give an http:// or https:// proxy, "
            f"got {redact_url(stripped)!r}"
        )
    return parse_url(stripped)


def proxy_from_environment(url: str, environ: Mapping[str, str]) -> str | None:
    """The proxy the environment names for `url`, as curl reads it: HTTPS_PROXY for https,
    HTTP_PROXY for http, ALL_PROXY for either when that one is not set (lower-case names
    first), none when NO_PROXY covers the host.

    NO_PROXY holds host names and domain suffixes (`.example.com` or `example.com`), IP
    addresses and networks in CIDR notation (`127.0.0.0/8`, `::1/128`, IPv6 with or without
    brackets), `*`, and host:port entries, separated by commas or spaces; the edges pass
    os.environ, nothing below them reads it.
    """

    def get(name: str) -> str:
        return (environ.get(name.lower()) or environ.get(name.upper()) or "").strip()

    parts = urlsplit(url)
    proxy = get("https_proxy") if parts.scheme == "https" else get("http_proxy")
    proxy = proxy or get("all_proxy")
    if not proxy:
        return None
    host = (parts.hostname or "").lower().rstrip(".")
    for raw_entry in re.split(r"[,\s]+", get("no_proxy")):
        if _no_proxy_covers(raw_entry.strip().lower(), host, parts.port):
            return None
    return proxy


def _no_proxy_covers(entry: str, host: str, port: int | None) -> bool:
    """Whether one NO_PROXY entry covers this host (and port), as curl matches it: an IP host
    against an address or a CIDR network, a name against a name or a domain suffix."""
    if not entry:
        return False
    if entry == "*":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is not None:
        try:  # an address or a network, IPv6 with or without its brackets
            network = ipaddress.ip_network(entry.strip("[]"), strict=False)
        except ValueError:
            pass
        else:
            return address.version == network.version and address in network
    name, _, entry_port = entry.partition(":") if entry.count(":") == 1 else (entry, "", "")
    if entry_port and port is not None and entry_port != str(port):
        return False
    name = name.lstrip(".").rstrip(".")
    return bool(name) and (host == name or host.endswith("." + name))


def read_body(text: str, base_dir: Path | None = None, root: Path | None = None) -> str:
    """A body as given, or the contents of a file for `@path` (inside `root` when given)."""
    if not text.startswith("@"):
        return text
    path = Path(text[1:]).expanduser()
    if base_dir is not None and not path.is_absolute():
        path = base_dir / path
    return read_input_file(path, "body file ", root=root)


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
            data = load_json(body)
        except ValueError:  # not JSON, or JSON nested too deep to be a request: sent as text
            return Format.RAW
        if isinstance(data, dict):
            if "messages" in data:
                return Format.OPENAI_CHAT
            if "input" in data:
                return Format.OPENAI_RESPONSES
    return Format.RAW


DEFAULT_MAX_TOKENS = 64
"""Answer length asked for when `--max-tokens` is not given (the same for every format)."""

DEFAULT_PROMPT = "Say hello in five words."
"""The prompt of a URL whose format is known (chat completions, responses, messages) when no
`--prompt` or `--body` is given: such an endpoint answers a bodiless GET with an error."""

# The field each format limits the answer length with. OpenAI's chat completions take
# `max_completion_tokens` (its reasoning models refuse `max_tokens`); most OpenAI-compatible
# servers (llama.cpp, vLLM, Ollama, LiteLLM) still know only `max_tokens`.
TOKEN_LIMIT_FIELDS = ("max_tokens", "max_completion_tokens", "max_output_tokens")
_OPENAI_HOSTS = ("api.openai.com", ".openai.azure.com")


def token_limit_field(fmt: Format, url: str, chosen: str | None = None) -> str:
    """The body field that limits the answer's length: `chosen` when given, else the format's.

    OpenAI chat: `max_completion_tokens` at OpenAI's own hosts (api.openai.com, Azure OpenAI),
    `max_tokens` elsewhere; Responses: `max_output_tokens`; Anthropic: `max_tokens`.
    """
    if chosen is not None:
        return chosen
    if fmt is Format.OPENAI_RESPONSES:
        return "max_output_tokens"
    if fmt is Format.ANTHROPIC:
        return "max_tokens"
    host = (urlsplit(url).hostname or "").lower()
    if host == _OPENAI_HOSTS[0] or host.endswith(_OPENAI_HOSTS[1]):
        return "max_completion_tokens"
    return "max_tokens"


def parse_token_limit_field(text: str) -> str | None:
    """`auto` (None: the format decides) or one of TOKEN_LIMIT_FIELDS."""
    value = text.strip().lower()
    if value in {"", "auto"}:
        return None
    if value not in TOKEN_LIMIT_FIELDS:
        raise ValueError(f"expected auto or one of {', '.join(TOKEN_LIMIT_FIELDS)}; got {text!r}")
    return value


def chat_body(
    fmt: Format,
    model: str | None,
    prompt: str,
    stream: bool,
    *,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    limit_field: str | None = None,
) -> str:
    """The smallest request body for a prompt in the given format, asking for `max_tokens`."""
    message = [{"role": "user", "content": prompt}]
    body: dict[str, object]
    field = limit_field or token_limit_field(fmt, "")
    if fmt is Format.OPENAI_RESPONSES:
        body = {"input": prompt, field: max_tokens}
    elif fmt is Format.ANTHROPIC:
        body = {"messages": message, field: max_tokens}
    else:
        body = {"messages": message, field: max_tokens}
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


# Calls at a rate (`--rate`, `--rate-for`, `--arrivals`, `--min-rate`, `--goodput-time`).
ARRIVALS = ("poisson", "constant")
LARGEST_RATE = 10_000.0  # requests a second: above what any one process sends
_RATE = re.compile(
    r"^\s*(?P<num>\d+(?:\.\d*)?|\.\d+)\s*(?:/\s*(?P<unit>s|sec|second|m|min|minute|h|hour))?\s*$",
    re.IGNORECASE,
)
_PER = {"s": 1.0, "sec": 1.0, "second": 1.0, "m": 60.0, "min": 60.0, "minute": 60.0}
_PER |= {"h": 3600.0, "hour": 3600.0}
_CALLS = re.compile(r"^\s*(?P<num>\d+)\s*(?:calls?)?\s*$", re.IGNORECASE)


def parse_rate(text: str) -> float:
    """`5/s`, `300/min`, `0.5` (a second) to requests a second, above 0 and at most 10,000."""
    match = _RATE.match(text)
    if match is None:
        raise ValueError(
            f"expected a rate such as 5/s, 300/min or 0.5 (requests a second), got {shown(text)}"
        )
    rate = float(match["num"]) / _PER[(match["unit"] or "s").lower()]
    if not 0 < rate <= LARGEST_RATE:
        raise ValueError(
            f"expected a rate above 0 and at most {LARGEST_RATE:,.0f}/s (more than one process "
            f"sends), got {shown(text)}"
        )
    return rate


def parse_min_rate(text: str) -> float | None:
    """A rate, or empty/off for none (the goodput is reported, not gated)."""
    return None if text.strip().lower() in {"", "none", "off"} else parse_rate(text)


def parse_rate_for(text: str) -> tuple[int | None, float | None]:
    """How long a level at a rate lasts: (calls, None) for `200` or `200 calls`, (None, seconds)
    for a duration such as `60s` or `2m`, (None, None) for auto."""
    if text.strip().lower() in {"", "auto"}:
        return None, None
    match = _CALLS.match(text)
    if match is not None:
        calls = parse_count(match["num"])
        if calls > RATE_LEVEL_CALLS * 100:
            raise ValueError(f"expected at most {RATE_LEVEL_CALLS * 100:,} calls, got {calls:,}")
        return calls, None
    try:
        seconds = parse_duration(text)
    except ValueError:
        raise ValueError(
            f"expected a number of calls (200), a duration (60s, 2m) or auto, got {shown(text)}"
        ) from None
    if seconds <= 0:
        raise ValueError(f"expected a duration above zero, got {shown(text)}")
    return None, seconds


def parse_arrivals(text: str) -> str:
    choice = text.strip().lower()
    if choice not in ARRIVALS:
        raise ValueError(f"expected poisson or constant, got {shown(text)}")
    return choice


def parse_goodput_time(text: str) -> float | None:
    """A duration, or auto (the search's worst case, worked out before the first call)."""
    if text.strip().lower() in {"", "auto"}:
        return None
    seconds = parse_duration(text)
    if seconds <= 0:
        raise ValueError(f"expected a duration above zero or auto, got {text!r}")
    return seconds
