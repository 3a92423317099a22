"""The action's inputs: every INPUT_* variable by its input name, and the secrets among them,
found before anything is validated or printed so that each can be masked first.
"""

from __future__ import annotations

from collections.abc import Mapping

from latency_gate.config.secrets import (
    find_secrets,
    scrub_secrets,
    secret_forms,
    url_secrets,
    url_userinfo,
)


def read_inputs(environ: Mapping[str, str]) -> dict[str, str]:
    """Every INPUT_* variable by its kebab-case name; empty values are left out (not given).

    The runner upper-cases the name and keeps hyphens (`INPUT_MAX-WARM-P95`); the underscore
    spelling (`INPUT_MAX_WARM_P95`) is accepted too, and the hyphen spelling wins.
    """
    inputs: dict[str, str] = {}
    hyphenated: set[str] = set()
    for name, value in environ.items():
        if not name.startswith("INPUT_") or not value.strip():
            continue
        raw = name[len("INPUT_") :]
        key = raw.lower().replace("_", "-")
        if "-" in raw or key not in hyphenated:
            inputs[key] = value
            if "-" in raw:
                hyphenated.add(key)
    return inputs


def _header_lines(text: str) -> list[tuple[str, str]]:
    return [
        (name, value.strip())
        for name, sep, value in (line.partition(":") for line in text.splitlines())
        if sep
    ]


def secrets_in_inputs(inputs: Mapping[str, str]) -> list[str]:
    """Every secret among the raw inputs, found before validation so nothing can print first
    (the base's of an A/B run too: `baseline-api-key`, `baseline-headers`, `baseline-url`,
    `baseline-body`)."""
    body = "" if inputs.get("body", "").startswith("@") else inputs.get("body", "")
    base_body = inputs.get("baseline-body", "")
    base_body = "" if base_body.startswith("@") else base_body
    return find_secrets(
        api_key=inputs.get("api-key"),
        headers=_header_lines(inputs.get("headers", "")),
        url=inputs.get("url", ""),
        body=body,  # its credential-named fields: a server may echo one alone
        others=[inputs.get("github-token", ""), body, *url_secrets(inputs.get("proxy", ""))],
    ) + find_secrets(
        api_key=inputs.get("baseline-api-key"),
        headers=_header_lines(inputs.get("baseline-headers", "")),
        url=inputs.get("baseline-url", ""),
        body=base_body,
        others=[base_body],
    )


def scrub(text: str, env: Mapping[str, str]) -> str:
    """`text` with every secret of the inputs in `env` starred out, in each of its spellings."""
    inputs = read_inputs(env)
    pairs = [url_userinfo(inputs.get(key, "")) for key in ("url", "baseline-url")]
    return scrub_secrets(text, secret_forms(secrets_in_inputs(inputs), [p for p in pairs if p]))
