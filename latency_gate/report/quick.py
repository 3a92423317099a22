"""`latency-gate quick URL` shown: curl -w style phases per call, and the curl line to repeat one.

The curl line elides every secret: the API key, each header value that is not harmless, URL query
values whose names look secret (or that are a secret) and userinfo, and in the body any of those
secrets (in every encoded form) and the value of any JSON field named like a credential.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from typing import Any

from latency_gate.assess.numbers.timeline import CURL_TIMES, curl_times
from latency_gate.config import REDACTED, Format, Target, default_prompt_note, redact_url
from latency_gate.config.json_data import dump_json, load_json
from latency_gate.config.secrets import (
    HARMLESS_HEADERS,
    credential_field,
    credential_fields,
    scrub_secrets,
)
from latency_gate.formatting import clean_text
from latency_gate.measure.quick import QuickCall, QuickResult

__all__ = ["WRITE_OUT", "curl_command", "display_url", "render"]

WRITE_OUT = "".join(f"{name:<14}%{{time_{name}}}\\n" for name in CURL_TIMES)


def curl_command(target: Target) -> str:
    """The curl command line that makes the same request and prints curl's own phases.

    Secrets are elided: the API key, every header value that is not harmless, URL query values
    whose names look secret (or that are a secret) and userinfo, and any secret that shows up
    inside the body; the other query values stay, so that the line repeats the call.
    """
    hidden = target.secret_forms()
    parts = ["curl", "-sS", "-o", "/dev/null", "-w", WRITE_OUT, "-X", target.method]
    for name, value in target.request_headers():
        parts += ["-H", f"{name}: {_header_value(name, value, hidden)}"]
    body = target.request_body()
    if body is not None:
        parts += ["--data-raw", scrub_secrets(_hide_credential_fields(body.decode()), hidden)]
    if target.insecure:
        parts.append("--insecure")
    if target.ca_bundle is not None:
        parts += ["--cacert", target.ca_bundle]
    if target.follow_redirects and not curl_would_carry_credentials(target):
        parts.append("--location")
    if target.http2:  # as the probe spoke it: prior knowledge on http://, offered over TLS
        plain = target.url.lower().startswith("http:")
        parts.append("--http2-prior-knowledge" if plain else "--http2")
    if target.proxy is not None:
        parts += ["--proxy", display_url(target.proxy)]  # its password as ***, like the key's
    elif target.direct:
        parts += ["--noproxy", "*"]  # --proxy off: curl would take the environment's
    parts += ["--max-time", f"{target.timeout:g}", display_url(target.display_url)]
    return " ".join(shlex.quote(part) for part in parts)


def curl_would_carry_credentials(target: Target) -> bool:
    """Whether `curl --location` would send this request's credentials to another origin: curl
    drops only Authorization and Cookie on a redirect to another host, and resends the body on
    a 307 or 308, where the probe drops every secret header and refuses a body holding one
    (measure/redirects.py). The curl line then leaves --location out and says so."""
    carried = {
        name.lower()
        for name, _ in target.request_headers()
        if name.lower() not in HARMLESS_HEADERS | {"authorization", "cookie"}
    }
    body = target.request_body()
    return bool(carried) or bool(body and credential_fields(body.decode("utf-8", "replace")))


def display_url(url: str) -> str:
    """The URL with userinfo and secret query values elided (see `redact_url`), the elision
    readable: `?key=***`."""
    return redact_url(url).replace("%2A%2A%2A", REDACTED)


def _header_value(name: str, value: str, hidden: Sequence[str]) -> str:
    if name.lower() in HARMLESS_HEADERS:
        return scrub_secrets(value, hidden)
    scheme, _, rest = value.partition(" ")
    if rest and scheme.lower() in {"bearer", "basic", "token"}:
        return f"{scheme} {REDACTED}"
    return REDACTED


def _hide_credential_fields(body: str) -> str:
    """A JSON body with every string under a credential-named field (`credential_field`) as
    ***; any other body as it is."""
    try:
        data = load_json(body)
    except ValueError:
        return body

    def hide(value: Any, secret: bool = False) -> Any:
        if isinstance(value, dict):
            return {k: hide(v, secret or credential_field(str(k))) for k, v in value.items()}
        if isinstance(value, list):
            return [hide(item, secret) for item in value]
        if isinstance(value, str) and secret:
            return REDACTED
        return value

    hidden = hide(data)
    return body if hidden == data else dump_json(hidden)


def _seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:.6f}"


def render(result: QuickResult) -> str:
    """Plain text: one line per call with curl's phases, then the curl line to try by hand."""
    target = result.target
    varied = all(c.varied for c in result.calls)
    how = "each with its own prompt" if varied else "the same request each time"
    lines = [
        f"quick check of {target.method} {clean_text(display_url(target.display_url))}: "
        f"{len(result.calls)} calls, each on a new connection, {how}",
        "",
    ]
    columns: list[tuple[str, Callable[[QuickCall], str]]] = [
        ("call", lambda c: str(c.number)),
        ("status", lambda c: str(c.sample.status or "—")),
        *((name, _phase_getter(name)) for name in CURL_TIMES),
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
        "  " + curl_command(result.first_target),
        "",
        *(
            [
                "--location is left out: curl would send the request's credentials to the other "
                "origin a redirect names (the probe does not); follow a redirect by hand.",
                "",
            ]
            if target.follow_redirects and curl_would_carry_credentials(target)
            else []
        ),
        f"{sum(c.sample.ok for c in result.calls)} of {len(result.calls)} calls succeeded.",
    ]
    lines += [f"Note: {clean_text(note)}." for note in default_prompt_note(target)]
    if not varied and target.format is not Format.RAW:
        lines.append("No prompt found in the body to vary: a cache may have answered calls 2-3.")
    return "\n".join(lines) + "\n"


def _phase_getter(name: str) -> Callable[[QuickCall], str]:
    return lambda c: _seconds(curl_times(c.sample.timings, c.sample.ok)[name])
