"""A/B in one run: the base endpoint probed beside the head, and where credentials may go.

`--baseline-url` names the base (production, or main's deployment); it gets the head's request
(method, body, format, stream, timeouts, HTTP version, TLS settings) and the proxy the
environment names for its own URL, unless it has a request of its own (`--baseline-model`,
`--baseline-body`, `--baseline-prompt`, `--baseline-format`: config/base_request.py), which
replaces the head's body, format, model and stream; without `--baseline-url` that base is the
head's URL asked its own request. Credentials are the one thing that does not simply follow,
whatever the request (a base at the head's origin asked another model gets the head's key):

- the base's own (`--baseline-api-key`, a `--baseline-header` that may hold a secret, or
  `user:password@` in the base URL): the base gets those and the head's harmless headers, never
  the head's key or secret headers;
- none of its own, same origin as the head (scheme, host, port): the head's, as they are;
- none of its own, another origin: the head's harmless headers only; and when the head carries
  a key, a secret header or `user:password@` in its URL, the run is refused before any call
  (`check_base`), since the base would then answer 401 and the comparison would measure that.
  The head's key is never sent to another host unless the user gives it again for the base.
- a request body that holds a credential (a field named like a key: `credential_fields`) is the
  head's to send: a base at another origin is refused whatever its own credentials, since the
  base gets the head's body (its model replaced or not), unless `--baseline-body` gives it its
  own.

A redirect is another origin too: measure/clients.py holds every hop of a followed redirect to
the rule of the first request (`same_origin`).
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit

import httpx
from pydantic import SecretStr

from latency_gate.config.draft import Draft
from latency_gate.config.parsing import redact_url
from latency_gate.config.redacted import body_fingerprint
from latency_gate.config.secrets import credential_fields, url_userinfo
from latency_gate.config.target import Header, Target
from latency_gate.errors import InputProblem

__all__ = [
    "BASE_KEYS",
    "ab_input",
    "base_arm",
    "base_changes",
    "base_source",
    "check_base",
    "has_own_credentials",
    "origin_text",
    "same_origin",
    "shown_prompt",
]

# The settings that describe the base of an A/B run: where it is, its credentials, its own
# request (config/base_request.py).
BASE_KEYS = (
    "baseline-url",
    "baseline-api-key",
    "baseline-headers",
    "baseline-model",
    "baseline-body",
    "baseline-prompt",
    "baseline-format",
)


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    default = {"http": 80, "https": 443}.get(scheme)
    return scheme, _host_as_sent((parts.hostname or "").lower().rstrip(".")), parts.port or default


def _host_as_sent(host: str) -> str:
    """A host as a request names it: a name written in Unicode (`bücher.example`) IDNA-encoded
    as httpx encodes it (`xn--bcher-kva.example`), since a request's URL only ever holds that
    spelling and an origin must match however the user wrote it."""
    if host.isascii():
        return host
    try:
        return httpx.URL(scheme="http", host=host).raw_host.decode("ascii").lower()
    except (httpx.InvalidURL, UnicodeError):  # no IDNA spelling: compared as written
        return host


def origin_text(url: str) -> str:
    """`scheme://host:port` of a URL: what decides where credentials may go, safe to print."""
    scheme, host, port = _origin(url)
    host = f"[{host}]" if ":" in host else host
    return f"{scheme}://{host}:{port}"


def same_origin(first: str, second: str) -> bool:
    """Whether two URLs share an origin: scheme, host and port (the scheme's default port when
    none is written), as browsers decide where credentials may go."""
    try:
        return _origin(first) == _origin(second)
    except ValueError:  # a bad port: not the same origin as anything
        return False


def has_own_credentials(
    base_url: str, api_key: SecretStr | None, base_headers: Sequence[Header]
) -> bool:
    """Whether the base brings credentials of its own: a key, a header that may hold a secret,
    or userinfo in its URL."""
    return (
        api_key is not None
        or any(not h.harmless for h in base_headers)
        or url_userinfo(base_url) is not None
    )


def base_arm(target: Target) -> Target:
    """The target the base of an A/B run is probed as: the head's request sent to
    `baseline_url` through `baseline_proxy`, with credentials by the rule in this module's
    docstring. Raises ValueError when the target has no `baseline_url`."""
    base_url = target.baseline_url
    if base_url is None:
        raise ValueError(f"target {target.name!r} has no baseline_url")
    own = has_own_credentials(base_url, target.baseline_api_key, target.baseline_headers)
    inherit = not own and same_origin(target.url, base_url)
    replaced = {h.name.lower() for h in target.baseline_headers}
    headers = [
        h for h in target.headers if (inherit or h.harmless) and h.name.lower() not in replaced
    ]
    update: dict[str, object] = {
        "url": base_url,
        "headers": (*headers, *target.baseline_headers),
        "api_key": target.baseline_api_key if own else target.api_key if inherit else None,
        "proxy": target.baseline_proxy,
        "baseline_url": None,
        "baseline_api_key": None,
        "baseline_headers": (),
        "baseline_proxy": None,
        "baseline_request": None,
    }
    if (request := target.baseline_request) is not None:
        update |= request.model_dump(include={"format", "model", "prompt", "stream"})
        update |= {"body": request.body, "default_prompt": request.default_prompt}
    return target.model_copy(update=update)


def ab_input(target: Target) -> str | None:
    """The setting that made the target an A/B run, to name it in a message: `baseline-url`,
    or the first of the base's own request settings when it is at the head's URL; None for a
    target without a base."""
    if target.baseline_url is None:
        return None
    request = target.baseline_request
    if request is None or not request.given or target.baseline_url != target.url:
        return "baseline-url"
    return request.given[0]


_PROMPT_SHOWN = 40  # characters of a base's own prompt in its label


def shown_prompt(prompt: str) -> str:
    """A prompt as a label shows it: on one line, quoted, its first 40 characters."""
    text = " ".join(prompt.split())
    return repr(text if len(text) <= _PROMPT_SHOWN else text[: _PROMPT_SHOWN - 1] + "…")


def base_changes(target: Target) -> tuple[str, ...]:
    """How the base's request differs from the head's, in words safe to print ("model gpt-a",
    "format anthropic", "prompt 'Be brief.'", "body *** (sha256 ...)", "stream off"); empty
    when the base is sent the head's request."""
    request = target.baseline_request
    if request is None:
        return ()
    changes = []
    if request.model != target.model:
        changes.append(f"model {request.model}" if request.model else "no model")
    if request.format is not target.format:
        changes.append(f"format {request.format.value}")
    if "baseline-body" in request.given and request.body is not None:
        changes.append(f"body {body_fingerprint(request.body)}")
    elif "baseline-prompt" in request.given and request.prompt is not None:
        changes.append(f"prompt {shown_prompt(request.prompt)}")
    if request.stream != target.stream:
        changes.append("stream on" if request.stream else "stream off")
    return tuple(changes)


def base_source(target: Target) -> str:
    """How a report names the base of an A/B run: its URL (redacted) when that is not the
    head's, else how its request differs ("model gpt-a"), else the URL (the same request at
    the same URL: A against A). Raises ValueError when the target has no base."""
    if target.baseline_url is None:
        raise ValueError(f"target {target.name!r} has no baseline_url")
    changes = base_changes(target)
    if target.baseline_url == target.url and changes:
        return ", ".join(changes)
    return redact_url(target.baseline_url)


def check_base(draft: Draft, headers: Sequence[Header], base_headers: Sequence[Header]) -> None:
    """The base's settings checked before anything is sent (`fields` as build_target holds
    them): credentials given once for the base, and the head's never sent to another origin
    silently (refused when the base would need them). Base settings without a base URL are
    refused by the caller, which knows whether the user gave them for this target."""
    fields, spelled, problems = draft.fields, draft.spelled, draft.problems
    base_url: str | None = fields.get("baseline_url")
    url: str | None = fields.get("url")
    if base_url is None or url is None:
        return
    api_key: SecretStr | None = fields.get("baseline_api_key")
    if url_userinfo(base_url) is not None:
        if api_key is not None:
            problems.append(
                InputProblem(
                    spelled("baseline-api-key"),
                    f"contradicts the user:password in {spelled('baseline-url')}: give the "
                    "base's credentials once (drop one of them)",
                )
            )
        if any(h.name.lower() == "authorization" for h in base_headers):
            problems.append(
                InputProblem(
                    spelled("baseline-headers"),
                    "an Authorization header contradicts the user:password in "
                    f"{spelled('baseline-url')}: give the base's credentials once",
                )
            )
    if same_origin(url, base_url):
        return
    request = fields.get("baseline_request")
    own_body = request is not None and "baseline-body" in request.given
    body = None if own_body else fields.get("body")
    body_text = body.get_secret_value() if isinstance(body, SecretStr) else body
    in_body = credential_fields(body_text) if isinstance(body_text, str) else []
    if in_body:
        problems.append(
            InputProblem(
                spelled("baseline-url"),
                f"{origin_text(base_url)} is another origin than {spelled('url')} "
                f"({origin_text(url)}), and the request body holds a credential "
                f"({', '.join(in_body)}), which the base would be sent with the head's body; "
                "probe the base in a run of its own, or send the credential in a header "
                f"({spelled('headers')}, and {spelled('baseline-headers')} for the base)",
            )
        )
    if has_own_credentials(base_url, api_key, base_headers):
        return
    held = (
        (["the API key"] if fields.get("api_key") is not None else [])
        + [f"header {h.name}" for h in headers if not h.harmless]
        + ([f"the user:password in {spelled('url')}"] if url_userinfo(url) is not None else [])
    )
    if held:
        problems.append(
            InputProblem(
                spelled("baseline-url"),
                f"{origin_text(base_url)} is another origin than {spelled('url')} "
                f"({origin_text(url)}), so the head's credentials ({', '.join(held)}) are not "
                f"sent there; give the base its own with {spelled('baseline-api-key')} or "
                f"{spelled('baseline-headers')} (the same value again if both take it)",
            )
        )
