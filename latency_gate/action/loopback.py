"""Loopback URLs and the Docker action: in its container, localhost is the container, not the
runner where the endpoint listens, so such a URL is refused with what works instead.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from urllib.parse import urlsplit

import httpx

from latency_gate.config import Target, redact_url

# Set to "1" by action.yml (`runs.env`) for the Docker action alone: in its container, loopback
# is the container itself. The CLI and the composite action on the runner never set it.
IN_CONTAINER_VAR = "LATENCY_GATE_IN_CONTAINER"
HOST_ACTION = "latency-gate/latency-gate/host@main"
# Names that mean "this machine" whatever DNS says (RFC 6761 reserves *.localhost too), and
# Debian's /etc/hosts names for ::1, which Docker writes into every container.
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})
_LEGACY_IPV4 = re.compile(r"(?:0x[0-9a-f]*|[0-9]+)(?:\.(?:0x[0-9a-f]*|[0-9]+)){0,3}")
# The dots IDNA (UTS 46) maps to "." in a host name: ideographic, full-width and half-width.
_DOTS = str.maketrans({"\u3002": ".", "\uff0e": ".", "\uff61": "."})


def is_loopback_host(host: str) -> bool:
    """True when `host` (a URL's host, without brackets) means the machine the call starts on.

    localhost and its aliases, 127.0.0.0/8, ::1, the unspecified 0.0.0.0 and :: (a connection
    to them reaches this machine), IPv4-mapped forms of those, and the short or numeric IPv4
    spellings the system resolver also accepts (127.1, 2130706433, 0x7f.0.0.1). Unicode dots
    count as the dots IDNA makes of them (`127。0。0。1`).
    """
    name = host.translate(_DOTS).lower().rstrip(".")
    if name in LOOPBACK_NAMES or name.endswith(".localhost"):
        return True
    address: ipaddress.IPv4Address | ipaddress.IPv6Address
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        if not _LEGACY_IPV4.fullmatch(name):
            return False
        try:
            address = ipaddress.IPv4Address(socket.inet_aton(name))
        except OSError:
            return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback or address.is_unspecified


def loopback_problems(target: Target) -> list[tuple[str, str]]:
    """(field, why) for each of the target's addresses that is loopback: its URL, its proxy
    (the `proxy` input, a targets-file key or HTTPS_PROXY in the step's environment), and the
    base's URL and proxy of an A/B run, which in the Docker action's container would be looked
    for in the container too. Why says what works instead; an empty list when none is."""
    problems = []
    addresses = (
        ("url", target.url),
        ("proxy", target.proxy),
        # The base's URL, when it is not the head's (a base asked its own request there).
        ("baseline-url", None if target.baseline_url == target.url else target.baseline_url),
        # The base's own proxy, when it is not the head's (the environment's for its URL).
        (
            "proxy (of the base)",
            None if target.baseline_proxy == target.proxy else target.baseline_proxy,
        ),
    )
    for field, url in addresses:
        host = connected_host(url) if url else None
        if url and host and is_loopback_host(host):
            problems.append((field, _message(redact_url(url), host)))
    return problems


def connected_host(url: str) -> str | None:
    """The host the HTTP client connects to for `url`, as httpx reads it: IDNA maps full-width
    and other Unicode dots to ".", a backslash ends the authority, upper case is lowered.
    urlsplit reads some of these otherwise, and the check must see what the client will do."""
    try:
        return httpx.URL(url).host or None
    except httpx.InvalidURL:  # not a URL the client would call at all
        return urlsplit(url).hostname


def _message(shown: str, host: str) -> str:
    return (
        f"{shown} points at {host}, the machine the call starts on; this Docker "
        "action runs in a container with a network of its own, so that is the container, not "
        "the runner where your endpoint listens. What works: serve the endpoint on 0.0.0.0 and "
        "call the runner's docker0 bridge address (`ip -4 -o addr show docker0`, usually "
        "172.17.0.1), as latency-gate's self-test workflow does; or call a service container "
        f"by its name; or run latency-gate on the runner itself with `uses: {HOST_ACTION}`, "
        "which reaches localhost."
    )
