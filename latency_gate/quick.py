"""`latency-gate quick URL`: the three-call check for people without a pipeline.

Three calls, each on a new connection as curl makes them, each with its own prompt (a nonce added
to the last user message) so no cache answers them; each shown with curl -w style cumulative
phases and the first token; then the curl command line that reproduces one call by hand, with
every secret elided.
"""

from __future__ import annotations

import json
import secrets
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import SecretStr

from latency_gate.config import HARMLESS_HEADERS, REDACTED, Format, Target, redact_url
from latency_gate.formatting import clean_text
from latency_gate.models import CallPhase, Sample
from latency_gate.probe import _client, call, ssl_context_for

CALLS = 3
# What curl -w prints for each: the names of its write-out variables, cumulative from the start.
CURL_PHASES = ("namelookup", "connect", "appconnect", "starttransfer", "total")
WRITE_OUT = "".join(f"{name:<14}%{{time_{name}}}\\n" for name in CURL_PHASES)


@dataclass(frozen=True)
class QuickCall:
    """One of the three calls: what was sent (its prompt mark) and what the probe measured."""

    number: int
    varied: bool
    sample: Sample

    def phases(self) -> dict[str, float | None]:
        """curl -w's cumulative times in seconds (appconnect 0 without TLS, as curl says it);
        None when the call failed before reaching that point."""
        t = self.sample.timings
        namelookup = t.dns or 0.0
        connect = namelookup + (t.connect or 0.0)
        return {
            "namelookup": namelookup,
            "connect": connect,
            "appconnect": connect + t.tls if t.tls is not None else 0.0,
            "starttransfer": t.headers,
            "total": t.last_byte if self.sample.ok else None,
        }


@dataclass(frozen=True)
class QuickResult:
    """The three calls against one target, and the curl line to repeat the first by hand."""

    target: Target
    calls: tuple[QuickCall, ...]
    curl: str

    @property
    def passed(self) -> bool:
        return all(c.sample.ok for c in self.calls)


async def quick(target: Target, *, calls: int = CALLS, kernel_stamps: bool = True) -> QuickResult:
    """Make `calls` calls, one after another, each on a new connection with its own prompt."""
    context = ssl_context_for(target)
    done: list[QuickCall] = []
    first_target = target
    for number in range(1, calls + 1):
        body, varied = vary_body(target, secrets.token_hex(3))
        one = target if body is None else target.model_copy(update={"body": SecretStr(body)})
        if number == 1:
            first_target = one
        async with _client(one, context, kernel_stamps) as (client, _):
            sample = await call(client, one, CallPhase.COLD, number - 1)
        done.append(QuickCall(number=number, varied=varied, sample=sample))
    return QuickResult(target=target, calls=tuple(done), curl=curl_command(first_target))


def vary_body(target: Target, mark: str) -> tuple[str | None, bool]:
    """The target's body with `mark` added to its last user prompt, and whether that worked.

    A raw body, or a JSON body with no prompt found, is sent unchanged: (body, False).
    """
    raw = target.request_body()
    if raw is None:
        return None, False
    text = raw.decode()
    if target.format is Format.RAW:
        return text, False
    try:
        data = json.loads(text)
    except ValueError:
        return text, False
    if not isinstance(data, dict) or not _mark_prompt(data, f" [{mark}]"):
        return text, False
    return json.dumps(data), True


def _mark_prompt(data: dict[str, Any], suffix: str) -> bool:
    if isinstance(data.get("input"), str):  # openai-responses with a plain prompt
        data["input"] += suffix
        return True
    messages = data.get("messages", data.get("input"))
    if not isinstance(messages, list):
        return False
    for message in reversed(messages):
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            message["content"] = content + suffix
            return True
        if isinstance(content, list):
            for part in reversed(content):
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    part["text"] += suffix
                    return True
        return False
    return False


def curl_command(target: Target) -> str:
    """The curl command line that makes the same request and prints curl's own phases.

    Secrets are elided: the API key, every header value that is not harmless, URL query values
    and userinfo, and any secret that shows up inside the body.
    """
    hidden = target.secrets()
    parts = ["curl", "-sS", "-o", "/dev/null", "-w", WRITE_OUT, "-X", target.method]
    for name, value in target.request_headers():
        parts += ["-H", f"{name}: {_header_value(name, value, hidden)}"]
    body = target.request_body()
    if body is not None:
        parts += ["--data-raw", _elide(body.decode(), hidden)]
    if target.insecure:
        parts.append("--insecure")
    if target.ca_bundle is not None:
        parts += ["--cacert", target.ca_bundle]
    if target.follow_redirects:
        parts.append("--location")
    parts += ["--max-time", f"{target.timeout:g}", display_url(target.url)]
    return " ".join(shlex.quote(part) for part in parts)


def display_url(url: str) -> str:
    """The URL with userinfo and query values elided, the elision readable: `?key=***`."""
    return redact_url(url).replace("%2A%2A%2A", REDACTED)


def _header_value(name: str, value: str, hidden: Sequence[str]) -> str:
    if name.lower() in HARMLESS_HEADERS:
        return _elide(value, hidden)
    scheme, _, rest = value.partition(" ")
    if rest and scheme.lower() in {"bearer", "basic", "token"}:
        return f"{scheme} {REDACTED}"
    return REDACTED


def _elide(text: str, hidden: Sequence[str]) -> str:
    for secret in sorted(hidden, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text


def _seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:.6f}"


def render(result: QuickResult) -> str:
    """Plain text: one line per call with curl's phases, then the curl line to try by hand."""
    target = result.target
    varied = all(c.varied for c in result.calls)
    how = "each with its own prompt" if varied else "the same request each time"
    lines = [
        f"quick check of {target.method} {clean_text(display_url(target.url))}: "
        f"{len(result.calls)} calls, each on a new connection, {how}",
        "",
    ]
    columns: list[tuple[str, Callable[[QuickCall], str]]] = [
        ("call", lambda c: str(c.number)),
        ("status", lambda c: str(c.sample.status or "—")),
        *((name, _phase_getter(name)) for name in CURL_PHASES),
        ("first token", lambda c: _seconds(c.sample.timings.first_token)),
    ]
    table = [[title for title, _ in columns]]
    table += [[get(c) for _, get in columns] for c in result.calls]
    widths = [max(len(row[i]) for row in table) for i in range(len(columns))]
    for row in table:
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    failures = [c for c in result.calls if not c.sample.ok]
    if failures:
        lines.append("")
        for c in failures:
            kind = c.sample.error.value if c.sample.error else "failed"
            detail = f": {clean_text(c.sample.error_detail)}" if c.sample.error_detail else ""
            lines.append(f"call {c.number} failed: {kind}{detail}")
    lines += [
        "",
        "Seconds from the start of each call, cumulative like curl -w: namelookup (DNS), "
        "connect (+TCP), appconnect (+TLS; 0 without TLS), starttransfer (the first response "
        "byte), total (the last byte).",
        "",
        "Repeat one by hand (secrets shown as ***: put yours back):",
        "",
        "  " + result.curl,
        "",
        f"{sum(c.sample.ok for c in result.calls)} of {len(result.calls)} calls succeeded.",
    ]
    if not varied and target.format is not Format.RAW:
        lines.append("No prompt found in the body to vary: a cache may have answered calls 2-3.")
    return "\n".join(lines) + "\n"


def _phase_getter(name: str) -> Callable[[QuickCall], str]:
    return lambda c: _seconds(c.phases()[name])
