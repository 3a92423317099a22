"""A run's settings as a result file holds them: every secret replaced by ***, a body by its
fingerprint. `Target.redacted` writes them so; `redact_settings` does the same to a file's
settings written by hand or by an older version, and hands back the secrets they held so the rest
of the file can be scrubbed of them too."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

from pydantic import SecretStr

from latency_gate.config.parsing import REDACTED, redact_url
from latency_gate.config.secrets import HARMLESS_HEADERS, find_secrets, url_secrets, url_userinfo

__all__ = ["body_fingerprint", "redact_settings"]


def redact_settings(
    config: Mapping[str, object],
) -> tuple[dict[str, object], list[str], list[str]]:
    """A result file's settings as `Target.redacted` would have written them, with the secrets
    they still held (a file written by hand, or by an older version): (settings, secrets, and
    the URL's `user:password` pair), so the rest of the file can be scrubbed of them too. The
    base's settings of an A/B run (`baseline_url`, `baseline_proxy`, `baseline_headers`,
    `baseline_api_key`, `baseline_request`'s body) are the head's kind and redacted alike."""
    data = dict(config)
    secrets: list[str] = []
    pairs: list[str] = []
    for key in ("url", "proxy", "baseline_url", "baseline_proxy"):
        url = data.get(key)
        if isinstance(url, str):
            secrets += url_secrets(url)
            pairs += [pair] if (pair := url_userinfo(url)) and REDACTED not in pair else []
            try:
                data[key] = redact_url(url)
            except ValueError:  # not a URL at all: nothing of it is worth showing
                data[key] = REDACTED
    for key in ("headers", "baseline_headers"):
        if isinstance(headers := data.get(key), list):
            data[key] = _redacted_header_lines(headers, secrets)
    for key in ("api_key", "baseline_api_key"):
        if data.get(key) is not None:
            secrets += [api_key] if isinstance(api_key := data[key], str) else []
            data[key] = REDACTED
    if "body" in data:
        data["body"] = _redacted_body(data["body"], secrets)
    base = data.get("baseline_request")
    if isinstance(base, dict) and "body" in base:
        data["baseline_request"] = {**base, "body": _redacted_body(base["body"], secrets)}
    return data, find_secrets(others=secrets), pairs


def _redacted_header_lines(lines: list[object], secrets: list[str]) -> list[object]:
    """A file's "Name: value" header lines with the values that may be secret replaced by ***
    and gathered into `secrets`."""
    shown: list[object] = []
    for line in lines:
        name, sep, value = line.partition(":") if isinstance(line, str) else ("", "", "")
        if not sep or name.strip().lower() in HARMLESS_HEADERS:
            shown.append(line)
            continue
        secrets.append(value.strip())
        shown.append(f"{name}: {REDACTED}")
    return shown


def _redacted_body(body: object, secrets: list[str]) -> object:
    """A file's body as its fingerprint, the credentials it held gathered into `secrets`; a
    fingerprint already, or no text, as it is."""
    if isinstance(body, str) and not _FINGERPRINT.fullmatch(body):
        secrets += find_secrets(body=body)
        return body_fingerprint(SecretStr(body))
    return body


_FINGERPRINT = re.compile(re.escape(REDACTED) + r" \(sha256 [0-9a-f]{12}\)")


def body_fingerprint(body: SecretStr) -> str:
    """The body hidden, with a short digest so a baseline can tell a changed body from the same.

    12 hex digits of SHA-256 of the whole body: enough to tell bodies apart, and a body holding a
    secret cannot be recovered from it.
    """
    digest = hashlib.sha256(body.get_secret_value().encode()).hexdigest()[:12]
    return f"{REDACTED} (sha256 {digest})"
