"""What to probe and the budget: the typed, frozen models (`Target`, `Budget`, `Header`).

They are built from raw strings by `latency_gate.config.build.build_target`; this module holds
what a target is and how it shows itself safely: its redacted settings, the secrets it carries,
the settings that decide whether two runs measured the same thing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from latency_gate.config.parsing import REDACTED, Format, looks_like_json, redact_url
from latency_gate.config.price import Price
from latency_gate.config.redacted import body_fingerprint
from latency_gate.config.secrets import (
    HARMLESS_HEADERS,
    find_secrets,
    scrub_secrets,
    secret_forms,
    url_secrets,
    url_userinfo,
)

__all__ = [
    "NOT_COMPARED",
    "STREAM_COMPARED",
    "BaseRequest",
    "Budget",
    "Header",
    "Target",
    "comparable_settings",
]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Budget(_Frozen):
    """The limits each number is held against; None means reported, not gated.

    A number passes when it is at or under its limit.
    """

    max_cold_start: float | None = Field(default=None, gt=0)
    max_warm_p50: float | None = Field(default=None, gt=0)
    max_warm_p95: float | None = Field(default=3.0, gt=0)
    max_concurrent_p95: float | None = Field(default=3.0, gt=0)
    max_error_rate: float | None = Field(default=0.01, ge=0, le=1)
    max_ttft_p95: float | None = Field(default=None, gt=0)
    max_tpot_p95: float | None = Field(default=None, gt=0)

    def compared(self) -> frozenset[str]:
        """The numbers a comparison (a baseline, an A/B base, a history) tests for regression:
        those with a budget; with every budget off, the default budget's (warm p95, concurrent
        p95, error rate), so a run that only compares is still asked "slower?" on the numbers
        whose statistics docs/statistics.md gives. A streamed answer's first token and time per
        token (STREAM_COMPARED) are tested whatever the budget: they are what a model upgrade
        moves first, and a run that does not stream has no value of them (no row)."""
        gated = {name.removeprefix("max_") for name, value in self if value is not None}
        return frozenset(gated or _DEFAULT_GATED) | STREAM_COMPARED


# Tested in every comparison where both sides streamed, with a budget or without.
# The warm calls' first token, not the pooled first-token p95: a burst call's first token holds
# its wait for a slot (on the recorded llama.cpp server a spread of 0.84 against 0.11 warm), and
# a prefill 30 % slower moved the pooled p95 beyond noise in 0 of 100 simulated runs, the warm
# calls' in 50 of 50 (docs/statistics.md).
STREAM_COMPARED = frozenset({"ttft_warm_p95", "tpot_p95"})
_DEFAULT_GATED = frozenset(
    name.removeprefix("max_")
    for name, field in Budget.model_fields.items()
    if field.default is not None
)


class Header(_Frozen):
    name: str
    value: SecretStr

    @property
    def harmless(self) -> bool:
        return self.name.lower() in HARMLESS_HEADERS


class BaseRequest(_Frozen):
    """The request of an A/B run's base when it is not the head's (`--baseline-model`,
    `--baseline-body`, `--baseline-prompt`, `--baseline-format`), resolved as the head's is
    (config/base_request.py): what the base arm sends in place of the head's body and format.
    `given` names the settings the user gave for it, which say how the base differs."""

    format: Format
    body: SecretStr | None = None
    model: str | None = None
    prompt: str | None = None
    default_prompt: str | None = None
    stream: bool = False
    given: tuple[str, ...] = ()


class Target(_Frozen):
    """One endpoint and how to probe it."""

    name: str = "endpoint"
    url: str
    method: str = "GET"
    headers: tuple[Header, ...] = ()
    body: SecretStr | None = None
    api_key: SecretStr | None = None
    model: str | None = None
    prompt: str | None = None
    # No --prompt nor --body for a URL of a known format: the prompt the body asks instead.
    default_prompt: str | None = None
    format: Format = Format.RAW
    stream: bool = False
    timeout: float = Field(default=30.0, gt=0)
    idle: float = Field(default=0.0, ge=0)
    warm_calls: int = Field(default=20, ge=1, le=100_000)
    concurrency: int = Field(default=10, ge=1, le=10_000)
    # Sequential sampling (docs/statistics.md): while a gated check is undecided, more warm
    # calls or bursts, up to max_calls calls in all (None: sized to what the checks need,
    # config/plan/needs.py); what is still undecided then is decided by on_undecided (its value, or
    # fail, or pass), and an undecided regression by on_undecided_regression.
    max_calls: int | None = Field(default=None, ge=1, le=100_000)
    # The warm calls and the burst made smaller to fit a max-calls under the default first look
    # (config/plan/needs.py fit_first_look): said in the report; not a setting of what was measured.
    first_look_fitted: bool = Field(default=False, exclude=True)
    # --max-time: no new call starts this many seconds after the cold call (measure/deadline.py);
    # what is undecided then follows on_undecided.
    max_time: float | None = Field(default=None, gt=0, description="None: no limit")
    on_undecided: Literal["estimate", "fail", "pass"] = "estimate"
    on_undecided_regression: Literal["fail", "pass"] = "pass"
    # The capacity at the budget (assess/load/at_once.py): after the looks, the most calls at once
    # whose concurrent p95 holds its budget, searched up to capacity_max; min_capacity gates it.
    capacity: bool = False
    capacity_max: int = Field(default=64, ge=1, le=10_000)
    min_capacity: int | None = Field(default=None, ge=1, le=10_000)
    # Calls at a rate (config/plan/levels.py, assess/load/per_second.py): after the looks (and the
    # capacity search), calls arriving open-loop at `rate` a second, held to the budget under
    # load; `goodput` searches the highest rate that holds it, gated by `min_rate`.
    rate: float | None = Field(default=None, gt=0, le=10_000)
    arrivals: Literal["poisson", "constant"] = "poisson"
    rate_calls: int | None = Field(default=None, ge=1, description="--rate-for in calls")
    rate_seconds: float | None = Field(default=None, gt=0, description="--rate-for in seconds")
    goodput: bool = False
    min_rate: float | None = Field(default=None, gt=0, le=10_000)
    goodput_time: float | None = Field(default=None, gt=0, description="None: auto")
    fresh_connections: bool = False
    follow_redirects: bool = False
    ca_bundle: str | None = None
    insecure: bool = False
    max_tokens: int | None = Field(
        default=None, ge=1, description="answer length asked for; None: 64 for a prompt"
    )
    token_limit_field: str | None = Field(
        default=None, description="the body field that carries max_tokens; None: the format's"
    )
    vary_prompt: bool = True
    # Answers of one length (ignore_eos with min_tokens = max_tokens, as llama.cpp and vLLM take
    # them): the server does the same work on every call; the answers say whether it obliged.
    fixed_length: bool = False
    wait_ready: float = Field(default=0.0, ge=0)
    proxy: str | None = Field(default=None, description="forward proxy URL; None: direct")
    # `--proxy off` (a targets file's `proxy: off`): direct, whatever the environment names.
    # Not a setting of what was measured (a direct call is a direct call): not in results.
    direct: bool = Field(default=False, exclude=True)
    http2: bool = False
    budget: Budget = Budget()
    cost: str | None = Field(default=None, description="a note on its price, from a targets file")
    # A/B in one run: the base endpoint, probed beside this one (the head) with the same
    # request, its calls interleaved with the head's (docs/design.md, "A/B in one run").
    baseline_url: str | None = Field(
        default=None, description="the base endpoint measured beside this one; None: no A/B"
    )
    baseline_api_key: SecretStr | None = None
    baseline_headers: tuple[Header, ...] = ()
    baseline_proxy: str | None = Field(default=None, description="the base's proxy; None: direct")
    baseline_request: BaseRequest | None = Field(
        default=None, description="the base's own request; None: the head's"
    )
    # What the answers cost (config/price.py): not a setting of what was measured.
    price: Price | None = None
    baseline_price: Price | None = Field(default=None, description="None: the head's price")

    def request_headers(self) -> list[tuple[str, str]]:
        """Headers to send, auth included. Values are secrets: never log this list."""
        headers = [(h.name, h.value.get_secret_value()) for h in self.headers]
        names = {name.lower() for name, _ in headers}
        if self.api_key is not None:
            key = self.api_key.get_secret_value()
            if self.format is Format.ANTHROPIC:
                if "x-api-key" not in names:
                    headers.append(("x-api-key", key))
                if "anthropic-version" not in names:
                    headers.append(("anthropic-version", "2023-06-01"))
            elif "authorization" not in names:
                headers.append(("Authorization", f"Bearer {key}"))
        if (
            self.body is not None
            and "content-type" not in names
            and looks_like_json(self.body.get_secret_value())
        ):
            headers.append(("Content-Type", "application/json"))
        if self.stream and "accept" not in names:
            headers.append(("Accept", "text/event-stream"))
        return headers

    def request_body(self) -> bytes | None:
        return None if self.body is None else self.body.get_secret_value().encode()

    @property
    def display_url(self) -> str:
        """The URL safe to print, and to call again: userinfo masked, and a query value where
        its name looks secret or it is one of this target's secrets (see `shown_url`)."""
        return self.shown_url(self.url)

    def shown_url(self, url: str) -> str:
        """`url` (this target's, its base's or its proxy's) as `redact_url` shows it, this
        target's secrets given, and the API keys masked wherever else they appear (a path)."""
        keys = [k.get_secret_value() for k in (self.api_key, self.baseline_api_key) if k]
        shown = redact_url(url, self.secrets())
        return scrub_secrets(shown, secret_forms(keys)) if keys else shown

    def secrets(self) -> list[str]:
        """Every secret value this target holds, to mask in CI logs and to grep reports for
        (the base's of an A/B run too)."""
        found = find_secrets(
            api_key=None if self.api_key is None else self.api_key.get_secret_value(),
            headers=[(h.name, h.value.get_secret_value()) for h in self.headers],
            url=self.url,
            body=None if self.body is None else self.body.get_secret_value(),
            others=url_secrets(self.proxy) if self.proxy else (),
        )
        if self.baseline_url is None:
            return found
        key = self.baseline_api_key
        base_body = None if self.baseline_request is None else self.baseline_request.body
        return found + find_secrets(
            api_key=None if key is None else key.get_secret_value(),
            headers=[(h.name, h.value.get_secret_value()) for h in self.baseline_headers],
            url=self.baseline_url,
            body=None if base_body is None else base_body.get_secret_value(),
            others=url_secrets(self.baseline_proxy) if self.baseline_proxy else (),
        )

    def secret_forms(self) -> list[str]:
        """Every form the secrets can take in an endpoint's answer (see `secret_forms`)."""
        # Userinfo is sent as Basic auth: to the endpoint (and the base of an A/B run), and to
        # the proxy (Proxy-Authorization).
        pairs = [url_userinfo(url) for url in (self.url, self.proxy, self.baseline_url) if url]
        return secret_forms(self.secrets(), [pair for pair in pairs if pair])

    def redacted(self) -> dict[str, object]:
        """The settings as a JSON-ready mapping with every secret replaced by ***."""
        data: dict[str, Any] = self.model_dump(
            mode="json",
            exclude={"headers", "body", "api_key", "baseline_api_key", "baseline_request"},
        )
        data["url"] = self.display_url
        data["headers"] = [
            f"{h.name}: {h.value.get_secret_value() if h.harmless else REDACTED}"
            for h in self.headers
        ]
        data["body"] = None if self.body is None else body_fingerprint(self.body)
        data["api_key"] = None if self.api_key is None else REDACTED
        data["proxy"] = None if self.proxy is None else redact_url(self.proxy)
        for key in _BASE_SETTINGS:
            data.pop(key, None)  # a run without a base keeps the settings it always had
        if self.default_prompt is None:  # said only where the body is the default prompt's
            data.pop("default_prompt", None)
        if self.max_time is None:  # nor does a run without --max-time gain its setting
            data.pop("max_time", None)
        if not self.capacity:  # nor does a run without the capacity search gain its settings
            for key in _CAPACITY_SETTINGS:
                data.pop(key, None)
        if self.rate is None and not self.goodput:  # nor one without calls at a rate
            for key in _RATE_SETTINGS:
                data.pop(key, None)
        _drop_unpriced(data)
        if self.baseline_url is not None:
            data["baseline_url"] = self.shown_url(self.baseline_url)
            data["baseline_api_key"] = None if self.baseline_api_key is None else REDACTED
            data["baseline_headers"] = [
                f"{h.name}: {h.value.get_secret_value() if h.harmless else REDACTED}"
                for h in self.baseline_headers
            ]
            data["baseline_proxy"] = (
                None if self.baseline_proxy is None else redact_url(self.baseline_proxy)
            )
        if (base := self.baseline_request) is not None:  # said only where the base has its own
            data["baseline_request"] = {
                **base.model_dump(mode="json", exclude={"body", "given"}),
                "body": None if base.body is None else body_fingerprint(base.body),
            }
        return data

    def comparable(self) -> dict[str, object]:
        """The settings that decide whether two runs measured the same thing (for baselines)."""
        return comparable_settings(self.redacted())


# The settings of the searches after the looks, and of an A/B run's base: a run without them
# keeps the settings it always had (redacted), and none of them changes what the run's own
# numbers measured (NOT_COMPARED).
_CAPACITY_SETTINGS = ("capacity", "capacity_max", "min_capacity")
_RATE_SETTINGS = (
    "rate",
    "arrivals",
    "rate_calls",
    "rate_seconds",
    "goodput",
    "min_rate",
    "goodput_time",
)
_BASE_SETTINGS = (
    "baseline_url",
    "baseline_api_key",
    "baseline_headers",
    "baseline_proxy",
    "baseline_request",
)


def _drop_unpriced(data: dict[str, Any]) -> None:
    """A run without a price keeps the settings it always had."""
    for key in ("price", "baseline_price"):
        if data.get(key) is None:
            data.pop(key, None)


# Settings that do not change what a run measures: a baseline with other values still compares.
NOT_COMPARED = (
    "budget",
    "name",
    "idle",
    "cost",
    "wait_ready",
    "max_calls",
    "max_time",
    # The body's fingerprint says what was sent; a run before the default prompt said it
    # compares with one after.
    "default_prompt",
    "on_undecided",
    "on_undecided_regression",
    # The capacity search runs after the looks, on calls of its own: the run's numbers are
    # measured alike with it or without (its own figure is compared on its own terms).
    *_CAPACITY_SETTINGS,
    # Calls at a rate come after the looks too, on calls of their own.
    *_RATE_SETTINGS,
    # Where an A/B run's base was, and what it was sent: not what the head measured.
    *_BASE_SETTINGS,
    # What the answers cost: the calls are the same priced or not.
    "price",
    "baseline_price",
)

# Settings added later, with the value that means what a result file without them measured:
# left out when they hold it, so a baseline from before they existed still compares.
ADDED_WITH_DEFAULT: tuple[tuple[str, object], ...] = (
    ("max_tokens", None),
    ("token_limit_field", None),
    ("vary_prompt", False),
    ("fixed_length", False),
    ("proxy", None),
    ("http2", False),
)


def comparable_settings(config: Mapping[str, object]) -> dict[str, object]:
    """A result's (or a target's redacted) settings as baselines compare them: without the
    NOT_COMPARED ones, and without later settings that hold their earlier meaning."""
    data = {k: v for k, v in config.items() if k not in NOT_COMPARED}
    for key, earlier in ADDED_WITH_DEFAULT:
        if key in data and data[key] == earlier:
            del data[key]
    return data
