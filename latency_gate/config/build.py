"""The one parser from raw strings to a `Target`: every bad value named at once.

The CLI, the action's INPUT_* variables and a targets file all hand `build_target` a mapping of
raw strings keyed by the canonical kebab-case input name; every bad value is collected and
reported together in one `ConfigError` that names each input as the user spelled it. The string
parsers it uses live in latency_gate.config.parsing, and those of one setting's own value in
latency_gate.config.setting_values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from latency_gate.config.ab import BASE_KEYS, check_base
from latency_gate.config.base_request import (
    BASE_REQUEST_KEYS,
    HEAD_REQUEST_KEYS,
    resolve_base_request,
)
from latency_gate.config.draft import Draft
from latency_gate.config.parsing import (
    Format,
    parse_bool,
    parse_count,
    parse_duration,
    parse_proxy,
    parse_token_limit_field,
    parse_url,
    read_body,
)
from latency_gate.config.plan.feasible import goodput_problems, plan_problems
from latency_gate.config.plan.needs import DEFAULT_CONCURRENCY, DEFAULT_WARM_CALLS, fit_first_look
from latency_gate.config.price import PRICE_KEYS, check_prices, take_prices
from latency_gate.config.rate_keys import RATE_KEYS, settle_rates, take_rates
from latency_gate.config.request import (
    check_credentials,
    check_framing,
    not_utf8,
    parse_api_key,
    parse_header,
    resolve_request,
)
from latency_gate.config.setting_values import (
    OFF,
    ca_bundle,
    error_budget,
    max_time,
    nonempty,
    parse_format,
    parse_max_calls,
    parse_max_tokens,
    parse_method,
    parse_min_capacity,
    parse_on_undecided,
    parse_on_undecided_regression,
    positive_duration,
    wait_duration,
)
from latency_gate.config.target import Budget, Header, Target
from latency_gate.errors import ConfigError, InputProblem

__all__ = ["BUDGET_KEYS", "TARGET_KEYS", "build_target"]


# --- the builder ----------------------------------------------------------------------------

BUDGET_KEYS = {
    "max-cold-start": "max_cold_start",
    "max-warm-p50": "max_warm_p50",
    "max-warm-p95": "max_warm_p95",
    "max-concurrent-p95": "max_concurrent_p95",
    "max-error-rate": "max_error_rate",
    "max-ttft-p95": "max_ttft_p95",
    "max-tpot-p95": "max_tpot_p95",
}

TARGET_KEYS = (
    "name",
    "url",
    "method",
    "headers",
    "body",
    "api-key",
    "model",
    "prompt",
    "format",
    "stream",
    "timeout",
    "idle",
    "warm-calls",
    "concurrency",
    "max-calls",
    "max-time",
    "on-undecided",
    "on-undecided-regression",
    "capacity",
    "capacity-max",
    "min-capacity",
    *RATE_KEYS,
    "fresh-connections",
    "follow-redirects",
    "ca-bundle",
    "insecure",
    "max-tokens",
    "token-limit-field",
    "vary-prompt",
    "fixed-length",
    "wait-ready",
    "proxy",
    "http2",
    *BUDGET_KEYS,
    *BASE_KEYS,
    *PRICE_KEYS,
)


def build_target(
    raw: Mapping[str, str | list[str] | None],
    spelled: Callable[[str], str] = lambda key: key,
    base_dir: Path | None = None,
    defaults: Mapping[str, str | list[str] | None] | None = None,
    *,
    root: Path | None = None,
) -> Target:
    """Build a Target from raw strings keyed by canonical kebab-case name.

    `headers` is a list of "Name: value" strings; every other value is a string or None (not
    given). `spelled` maps a key to the name the user wrote (`--max-warm-p95`, `max-warm-p95`).
    `defaults` fills keys that `raw` leaves out (a targets file's shared settings). `root`,
    when given (the action's workspace), is where every file a setting names must lie.

    Raises ConfigError naming every bad input at once.
    """
    merged: dict[str, str | list[str] | None] = dict(defaults or {})
    merged.update({k: v for k, v in raw.items() if v is not None})
    problems: list[InputProblem] = []
    # Bytes that are not UTF-8 on a command line arrive as lone surrogates: not text to send.
    for key in [k for k, v in merged.items() if not_utf8(v)]:
        problems.append(
            InputProblem(spelled(key), "is not valid UTF-8 text (check the shell's encoding)")
        )
        del merged[key]
    draft = Draft(merged, spelled, problems)
    unknown = sorted(set(merged) - set(TARGET_KEYS))
    problems += [InputProblem(spelled(key), "unknown setting") for key in unknown]

    _take_settings(draft, base_dir, root)
    fields = draft.fields
    budget = _budget(draft)
    headers = _headers(draft, "headers")
    base_headers = _headers(draft, "baseline-headers")

    head = {key: fields[key] for key in HEAD_REQUEST_KEYS if key in fields}
    resolve_request(draft)
    check_credentials(draft, headers)
    check_framing(draft, headers)
    base_headers = _settle_base(draft, raw, base_headers)
    resolve_base_request(draft, head)
    check_base(draft, headers, base_headers)
    check_prices(draft, raw)
    if problems:
        raise ConfigError(problems)

    fields["headers"] = tuple(headers)
    fields["baseline_headers"] = tuple(base_headers)
    fields["budget"] = Budget(**budget)
    if fields.get("min_capacity") is not None:
        fields["capacity"] = True  # a minimum to hold is a search to make
    settle_rates(fields)
    target = _validated(fields, spelled)
    # What no run could decide (config/plan/feasible.py), refused before the first call.
    undecidable = [InputProblem(spelled(key), text) for key, text in plan_problems(target)]
    undecidable += [InputProblem(spelled(key), text) for key, text in capacity_problems(target)]
    undecidable += [InputProblem(spelled(key), text) for key, text in goodput_problems(target)]
    undecidable += _unstreamed_token_budgets(target, spelled)
    if undecidable:
        raise ConfigError(undecidable)
    return target


def _take_settings(draft: Draft, base_dir: Path | None, root: Path | None) -> None:
    """Every setting with one value, in the order their problems are listed."""
    merged, fields, spelled, problems = draft.merged, draft.fields, draft.spelled, draft.problems
    take = draft.take
    take("url", parse_url)
    if merged.get("url") in (None, ""):
        problems.append(InputProblem(spelled("url"), "required: the endpoint to probe"))
        fields.pop("url", None)
    take("name", lambda s: nonempty(s, "a name"))
    take("method", parse_method)
    take("body", lambda s: read_body(s, base_dir, root))
    take("api-key", parse_api_key)
    take("model", lambda s: s or None)
    take("prompt", lambda s: s or None)
    take("format", parse_format)
    take("stream", parse_bool)
    take("timeout", positive_duration)
    take("idle", parse_duration)
    take("warm-calls", parse_count)
    take("concurrency", parse_count)
    take("max-calls", parse_max_calls)
    _fit_first_look(draft)
    take("max-time", max_time)
    take("on-undecided", parse_on_undecided)
    take("on-undecided-regression", parse_on_undecided_regression)
    take("capacity", parse_bool)
    take("capacity-max", parse_count)
    take("min-capacity", parse_min_capacity)
    take_rates(draft)
    take("fresh-connections", parse_bool)
    take("follow-redirects", parse_bool)
    take("ca-bundle", lambda s: ca_bundle(s, base_dir, root))
    take("insecure", parse_bool)
    take("max-tokens", parse_max_tokens)
    take("token-limit-field", parse_token_limit_field)
    take("vary-prompt", parse_bool)
    take("fixed-length", parse_bool)
    take("wait-ready", wait_duration)
    take("proxy", parse_proxy)
    if "proxy" in fields and fields["proxy"] is None:
        fields["direct"] = True  # said off: the environment's proxy is not used either
    take("http2", parse_bool)
    take("baseline-url", parse_url)
    take("baseline-api-key", parse_api_key)
    take("baseline-model", lambda s: nonempty(s, "a model name"))
    take("baseline-body", lambda s: _as_given(read_body(s, base_dir, root), "a request body"))
    take("baseline-prompt", lambda s: _as_given(s, "a prompt"))
    take("baseline-format", parse_format)
    take_prices(draft)


def _budget(draft: Draft) -> dict[str, float | None]:
    """The budgets given, by field: off (or empty) turns one off."""
    merged, spelled, problems = draft.merged, draft.spelled, draft.problems
    budget: dict[str, float | None] = {}
    for key, field in BUDGET_KEYS.items():
        value = merged.get(key)
        if value is None or isinstance(value, list):
            continue
        try:
            if value.strip().lower() in OFF:
                budget[field] = None
            elif key == "max-error-rate":
                budget[field] = error_budget(value)
            else:
                budget[field] = positive_duration(value)
        except ValueError as exc:
            problems.append(InputProblem(spelled(key), str(exc)))
    return budget


def _validated(fields: dict[str, Any], spelled: Callable[[str], str]) -> Target:
    """The Target of `fields`; what its own validation refuses, named as the user spelled it."""
    try:
        return Target(**fields)
    except ValidationError as exc:
        raise ConfigError(
            [
                InputProblem(spelled(_kebab(err["loc"])), err["msg"])
                for err in exc.errors(include_url=False)
            ]
        ) from None


def _unstreamed_token_budgets(target: Target, spelled: Callable[[str], str]) -> list[InputProblem]:
    """A first-token or per-token budget on a chat body that asks for a whole answer (its
    `stream` false or left out): the server sends no tokens apart, so every run would make its
    calls and then fail the check as not measured. A raw body is not refused: the endpoint may
    stream whatever the body says."""
    if target.stream or target.format is Format.RAW or target.body is None:
        return []
    budgets = {
        "max-ttft-p95": target.budget.max_ttft_p95,
        "max-tpot-p95": target.budget.max_tpot_p95,
    }
    return [
        InputProblem(
            spelled(key),
            f"needs a streamed answer's tokens, and the {target.format.value} "
            f"body asks for a whole answer (its stream is false): add {spelled('stream')}, "
            "or leave it out",
        )
        for key, value in budgets.items()
        if value is not None
    ]


def _fit_first_look(draft: Draft) -> None:
    """A max-calls under the first look's calls fits the warm calls and the burst not given to
    it (config/plan/needs.py), or is refused before any call, naming the least it takes."""
    fields, merged, spelled, problems = draft.fields, draft.merged, draft.spelled, draft.problems
    cap = fields.get("max_calls")
    if cap is None or any(
        merged.get(k) is not None and k.replace("-", "_") not in fields for k in _COUNTS
    ):
        return  # no cap, or a count already refused
    given = [
        fields.get(k.replace("-", "_")) if merged.get(k) is not None else None for k in _COUNTS
    ]
    try:
        warm, burst = fit_first_look(cap, given[0], given[1], spelled)
    except ValueError as exc:
        problems.append(InputProblem(spelled("max-calls"), str(exc)))
        return
    asked = (
        DEFAULT_WARM_CALLS if given[0] is None else given[0],
        DEFAULT_CONCURRENCY if given[1] is None else given[1],
    )
    fields["first_look_fitted"] = (warm, burst) != asked
    fields["warm_calls"], fields["concurrency"] = warm, burst


_COUNTS = ("warm-calls", "concurrency")


def _headers(draft: Draft, key: str) -> list[Header]:
    """The header lines under `key` ("Name: value" each; blank lines skipped)."""
    merged, spelled, problems = draft.merged, draft.spelled, draft.problems
    headers: list[Header] = []
    raw_headers = merged.get(key) or []
    for line in [raw_headers] if isinstance(raw_headers, str) else raw_headers:
        if not line.strip():
            continue
        try:
            headers.append(parse_header(line))
        except ValueError as exc:
            problems.append(InputProblem(spelled(key), str(exc)))
    return headers


def _settle_base(
    draft: Draft, raw: Mapping[str, str | list[str] | None], base_headers: list[Header]
) -> list[Header]:
    """The base of an A/B run, settled: at `baseline-url`, or at the head's URL when only its
    own request was given (`baseline-model`, ...); its proxy is the head's when one was given.
    Base credentials without a base (neither a URL nor a request of its own) are refused when
    given for this target (shared ones from a targets file's defaults or the options beside it
    are left unused). The headers kept."""
    fields, spelled, problems = draft.fields, draft.spelled, draft.problems
    own_request = any(key.replace("-", "_") in fields for key in BASE_REQUEST_KEYS)
    if "baseline_url" not in fields and own_request and fields.get("url") is not None:
        fields["baseline_url"] = fields["url"]  # the same endpoint asked another request
    if "baseline_url" in fields:
        if "proxy" in fields:
            fields["baseline_proxy"] = fields["proxy"]  # --proxy (or off) holds for both arms
        return base_headers
    for key in ("baseline-api-key", "baseline-headers"):
        if raw.get(key) not in (None, "", []):
            problems.append(
                InputProblem(
                    spelled(key),
                    f"needs {spelled('baseline-url')} or a request of the base's own "
                    f"({spelled('baseline-model')}, {spelled('baseline-body')}, "
                    f"{spelled('baseline-prompt')} or {spelled('baseline-format')}), the base "
                    "it is for",
                )
            )
    fields.pop("baseline_api_key", None)
    return []


def _as_given(text: str, what: str) -> str:
    """`text` as written (a body or prompt is sent so), refused when blank."""
    if not text.strip():
        raise ValueError(f"expected {what}, got an empty string")
    return text


def _kebab(loc: tuple[int | str, ...]) -> str:
    last = str(loc[-1]) if loc else "input"
    return last.replace("_", "-")


def capacity_problems(target: Target) -> list[tuple[str, str]]:
    """(input, message) for capacity settings no search can honour: a minimum above the most
    searched, a search from a concurrency above it, a search with no concurrent p95 budget."""
    problems: list[tuple[str, str]] = []
    if target.min_capacity is not None and target.min_capacity > target.capacity_max:
        problems.append(
            (
                "min-capacity",
                f"{target.min_capacity} is above capacity-max {target.capacity_max}, the most "
                "calls at once the search tries: raise capacity-max or lower min-capacity",
            )
        )
    if target.capacity and target.concurrency > target.capacity_max:
        problems.append(
            (
                "capacity-max",
                f"{target.capacity_max} is below concurrency {target.concurrency}, the level the "
                "search starts from: raise capacity-max or lower concurrency",
            )
        )
    if target.capacity and target.budget.max_concurrent_p95 is None:
        problems.append(
            (
                "capacity" if target.min_capacity is None else "min-capacity",
                "the capacity is the most calls at once whose concurrent p95 holds its budget, "
                "and max-concurrent-p95 is off: give it a budget",
            )
        )
    return problems
