"""The head held against a reference, number by number: the one loop of the three comparisons.

A run is compared with a base endpoint measured beside it (A/B, `--baseline-url`), an earlier
run (`--baseline`) or a history of earlier runs (`--history`). Each reference has its own test
(baseline.py: the permutation tests on the calls; history.py: the prediction bound of the
runs' spread), but what cannot be compared is the same for the three and is written here once:
a run of other settings is no reference (`config_differences`); a number with no value on one
side, cold start (one call a side), a number with no budget (a streamed answer's first token and
time per token are tested whatever the budget: `Budget.compared`), and too few calls or runs
are each shown beside the reference, said, and not tested (`held_against`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from urllib.parse import urlsplit

from latency_gate.config import NOT_COMPARED
from latency_gate.config.target import STREAM_COMPARED, comparable_settings
from latency_gate.formatting import plural
from latency_gate.models import BaselineCheck, CallPhase, NumberDelta, Numbers, RunResult, Sample

__all__ = [
    "CALL_KINDS",
    "LATENCIES",
    "NOT_TESTED",
    "STREAMED",
    "Reference",
    "config_differences",
    "held_against",
    "no_base_data",
    "origin_of",
    "too_few_calls",
    "with_origins",
]

# The numbers a reference is held against, in the order the reports list them: the latencies
# of the five, a stream's, and the error rate after the latencies (baseline.py) or after the
# five's latencies (history.py, whose table reads as the five first).
LATENCIES = ("cold_start", "warm_p50", "warm_p95", "concurrent_p95")
STREAMED = ("ttft_p95", "ttft_warm_p95", "tpot_p95")
NOT_TESTED = "not tested: it has no budget (only gated numbers are tested)"


def config_differences(
    head: Mapping[str, object], base: Mapping[str, object]
) -> list[tuple[str, object, object]]:
    """(setting, base value, head value) for each compared setting that differs.

    The URL is compared without its origin (scheme, host, port): the same request at another
    host (a pull request's preview, held against main's runs of production) measures the same
    work, and the reports name both origins (with_origins). Its path, query and credentials,
    and every other setting, still count."""
    if isinstance(base.get("url"), str):  # older result files masked query values as %2A%2A%2A
        base = {**base, "url": str(base["url"]).replace("=%2A%2A%2A", "=***")}
    head, base = _requested(comparable_settings(head)), _requested(comparable_settings(base))
    keys = [k for k in dict.fromkeys([*base, *head]) if k not in NOT_COMPARED]
    return [(k, base.get(k), head.get(k)) for k in keys if base.get(k) != head.get(k)]


def _requested(settings: dict[str, object]) -> dict[str, object]:
    """The settings with the URL cut to what is requested of its origin: the path and query,
    and whether it carries credentials ("***@/v1/chat")."""
    url = settings.get("url")
    if not isinstance(url, str):
        return settings
    try:
        parts = urlsplit(url)
        credentials = "***@" if parts.username is not None or parts.password is not None else ""
    except ValueError:
        return settings
    query = f"?{parts.query}" if parts.query else ""
    return {**settings, "url": f"{credentials}{parts.path or '/'}{query}"}


def origin_of(url: object) -> str | None:
    """The origin of a (redacted) URL, "https://api.example.com:8443", without credentials;
    None when it is not a URL."""
    if not isinstance(url, str):
        return None
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    if not parts.scheme or not host:
        return None
    host = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{host}" + (f":{port}" if port is not None else "")


def with_origins(
    check: BaselineCheck | None, head_url: str, bases: Sequence[RunResult]
) -> BaselineCheck | None:
    """`check` saying both origins when the runs it was held against (`bases`: the baseline
    run, or the history's) measured another origin than this run's `head_url`."""
    head = origin_of(head_url)
    others = tuple(
        dict.fromkeys(
            origin
            for run in bases
            if (origin := origin_of(run.config.get("url"))) is not None and origin != head
        )
    )
    if check is None or not others:
        return check
    return check.model_copy(update={"head_origin": head, "base_origins": others})


# The calls behind each compared latency number, by kind.
CALL_KINDS = {
    "warm_p50": (CallPhase.WARM,),
    "warm_p95": (CallPhase.WARM,),
    "concurrent_p95": (CallPhase.CONCURRENT,),
    "ttft_p95": (CallPhase.WARM, CallPhase.CONCURRENT),
    "ttft_warm_p95": (CallPhase.WARM,),
    "tpot_p95": (CallPhase.WARM,),
}


def no_base_data(number: str, base_samples: Sequence[Sample], side_by_side: bool) -> str:
    """ "the base gave no data: none of its 20 warm calls succeeded (20 http_5xx)": why a
    number of the base is missing, in the words of the reports."""
    who = "the base" if side_by_side else "the baseline run"
    kinds = CALL_KINDS.get(number, tuple(CallPhase))
    calls = [s for s in base_samples if s.phase in kinds]
    kind = " and ".join(k.value for k in kinds)
    if not calls:
        return f"{who} gave no data: it made no {kind} call"
    failed = Counter(str(s.error or "failed") for s in calls if not s.ok)
    listed = ", ".join(f"{count:,} {error}" for error, count in failed.most_common())
    what = (
        f"its one {kind} call failed"
        if len(calls) == 1
        else f"none of its {plural(len(calls), kind + ' call')} succeeded"
    )
    return f"{who} gave no data: {what}" + (f" ({listed})" if listed else "")


def too_few_calls(number: str, samples: Sequence[Sample], base_samples: Sequence[Sample]) -> str:
    """ "too few calls to compare (1 of the base's and 20 of the head's succeeded)"."""
    kinds = CALL_KINDS[number]

    def succeeded(calls: Sequence[Sample]) -> int:
        return sum(s.ok and s.phase in kinds for s in calls)

    return (
        f"too few calls to compare ({succeeded(base_samples)} of the base's and "
        f"{succeeded(samples)} of the head's succeeded)"
    )


class Reference(ABC):
    """What the head is held against: its value of each number, its test, and its words for a
    number it cannot compare. `one_call` says how many calls a cold start is on each side
    ("one call each", "one call a run"); `order` is the numbers it lists, in the report's order."""

    one_call: str
    order: tuple[str, ...]

    @abstractmethod
    def holds(self, number: str) -> bool:
        """Whether the reference has a value of `number` anywhere (a row is listed where either
        side has one: `_has_row`)."""

    @abstractmethod
    def base(self, number: str) -> float | None:
        """The reference's value of `number`, as the reports show it beside the head's."""

    def lacks(self, number: str) -> bool:
        """Whether the reference has no value of `number` to compare with (the head's own
        missing value is the loop's to see)."""
        return False

    @abstractmethod
    def no_data(self, number: str, head: float | None, *, tested: bool) -> NumberDelta:
        """`number` with no value on one side: the head's, or the reference's (`lacks`)."""

    @abstractmethod
    def test(self, number: str, head: float) -> NumberDelta | None:
        """`number`, gated and with a value on each side, tested; None when too few calls or
        runs could tell it from noise (`too_few` says it)."""

    @abstractmethod
    def too_few(self, number: str, head: float) -> NumberDelta:
        """`number` that `test` could not test for too few calls or runs."""


def _has_row(number: str, present: bool, gated: Collection[str] | None) -> bool:
    """Whether a comparison lists `number` (`present`: a side has a value of it): a streamed
    answer's warm first token and time per token (STREAM_COMPARED) where a side streamed; the
    first-token p95 of warm and burst calls together only where it has a budget (the warm one is
    the one compared: a burst call's first token holds its wait for a slot); any other always."""
    if number in STREAM_COMPARED:
        return present
    if number == "ttft_p95":
        return present and gated is not None and number in gated
    return True


def held_against(
    reference: Reference, numbers: Numbers, gated: Collection[str] | None
) -> tuple[NumberDelta, ...]:
    """The head's `numbers` against `reference`, each of its `order` that has a row: a number
    with no value on one side, cold start, and a number not in `gated` (those with a budget;
    every number when None) are shown and not tested; any other is the reference's to test."""
    names = [
        number
        for number in reference.order
        if _has_row(number, getattr(numbers, number) is not None or reference.holds(number), gated)
    ]
    deltas = []
    for number in names:
        head: float | None = getattr(numbers, number)
        tested = gated is None or number in gated
        if head is None or reference.lacks(number):
            deltas.append(reference.no_data(number, head, tested=tested))
        elif number == "cold_start":
            note = f"{reference.one_call}: cannot be told from noise, not gated"
            deltas.append(_shown(reference, number, head, note))
        elif not tested:
            deltas.append(_shown(reference, number, head, NOT_TESTED))
        else:
            deltas.append(reference.test(number, head) or reference.too_few(number, head))
    return tuple(deltas)


def _shown(reference: Reference, number: str, head: float, note: str) -> NumberDelta:
    """`number` beside the reference's value, with why it was not tested."""
    return NumberDelta(number=number, base=reference.base(number), head=head, note=note)
