"""A run's numbers as report rows: value, budget, outcome, what the outcome means, and why a
number has no value. Light (no judging code), so progress lines can use the labels too."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from latency_gate.formatting import fmt_interval, fmt_value, fmt_value_beside
from latency_gate.models import CallPhase, RunResult, Sample

__all__ = ["NUMBER_LABELS", "Row", "humane", "rows_of", "streamed"]

NUMBER_LABELS = {
    "cold_start": "cold start",
    "warm_p50": "warm p50",
    "warm_p95": "warm p95",
    "concurrent_p95": "concurrent p95",
    "error_rate": "error rate",
    "ttft_p95": "first-token p95",
    # At most 15 characters, as wide as "first-token p95": the terminal's columns stay put.
    "ttft_warm_p95": "warm ttft p95",
    "ttft_concurrent_p95": "conc. ttft p95",
    "itl_p95": "inter-token p95",
    "longest_stall": "longest stall",
    "tpot_p50": "per token p50",
    "tpot_p95": "per token p95",
    "tokens_p50": "tokens p50",
    "tokens_p95": "tokens p95",
    "capacity": "capacity",
    "goodput": "goodput",
    "rate_p95": "p95 at the rate",
}
# Streamed runs only: shown when measured, never gated (yet).
_TOKEN_TIMING = (
    "ttft_warm_p95",
    "ttft_concurrent_p95",
    "itl_p95",
    "longest_stall",
    "tpot_p50",
    "tpot_p95",
    "tokens_p50",
    "tokens_p95",
)
_FIVE = ("cold_start", "warm_p50", "warm_p95", "concurrent_p95", "error_rate")


@dataclass(frozen=True)
class Row:
    """One number against its budget, as a report row."""

    number: str
    value: float | None
    limit: float | None
    passed: bool | None
    note: str
    n: int
    interval: tuple[float | None, float | None] | None = None
    by_policy: bool = False
    decided: bool = True
    meaning: str = ""  # what its PASS or FAIL ruled out (the gate's sentence); untrusted
    missing: str = ""  # why there is no value: "none of the 3 warm calls succeeded"
    failed_on: str = ""  # the check's own breach sentence, when its value is not what failed it

    @property
    def label(self) -> str:
        return NUMBER_LABELS.get(self.number, self.number.replace("_", " "))

    @property
    def value_text(self) -> str:
        return fmt_value_beside(self.value, self.limit, self.number)

    @property
    def limit_text(self) -> str:
        """The budget: "3.00 s", "1.0 %"; the capacity's is a minimum, "≥ 8 at once"."""
        text = fmt_value(self.limit, self.number)
        return f"≥ {text}" if self.minimum and self.limit is not None else text

    @property
    def minimum(self) -> bool:
        """The limit is a floor (min-capacity, min-rate), not a ceiling."""
        return self.number in ("capacity", "goodput")

    @property
    def budget_text(self) -> str:
        """The budget with its side: "≤ 3.00 s", "≥ 8 at once"."""
        return self.limit_text if self.minimum else f"≤ {self.limit_text}"

    @property
    def interval_text(self) -> str:
        """The 95 % interval: "50 ms to 65 ms", "≥ 72 ms" (one side bounded), or "—"."""
        return fmt_interval(self.interval, self.number)

    @property
    def word(self) -> str:
        """PASS, FAIL, or "—" for a number that is reported, not gated; "undecided" said."""
        if self.passed is None and not self.decided:
            return "not needed"  # undecided when another check had already failed the run
        word = {True: "PASS", False: "FAIL", None: "—"}[self.passed]
        return f"{word} (undecided)" if self.by_policy else word

    @property
    def mark(self) -> str:
        if self.passed is None and not self.decided:
            return "undecided (not needed)"
        mark = {True: "✅ PASS", False: "❌ FAIL", None: "reported"}[self.passed]
        return f"⚠️ undecided → {mark}" if self.by_policy else mark

    @property
    def breach(self) -> str:
        """What went wrong, for a failed row: "warm p95 3.41 s, over its 3.00 s budget", or
        "warm p95 not measured: none of the 3 warm calls succeeded"."""
        if self.failed_on:
            return self.failed_on
        if self.value is None:
            return f"{self.label} not measured: {self.missing or 'no call gave it a value'}"
        if self.minimum:
            return f"{self.label} {self.value_text}, under the {self.limit_text} asked"
        if self.by_policy:
            return (
                f"{self.label} {self.value_text}: undecided against its {self.limit_text} "
                "budget when sampling stopped, failed by policy"
            )
        return f"{self.label} {self.value_text}, over its {self.limit_text} budget"


def humane(text: str) -> str:
    """Number keys in a sentence as readers know them: warm_p95 -> warm p95 (the longest key
    first, so ttft_warm_p95 is not read as ttft_ and warm_p95)."""
    for key in sorted(NUMBER_LABELS, key=len, reverse=True):
        text = text.replace(key, NUMBER_LABELS[key])
    return text


def streamed(result: RunResult) -> bool:
    """Some successful call streamed its answer. A plain body's "first token" is its first byte,
    often the whole call again: the rows and links of a first token apply to streams only."""
    return any(
        s.ok and (s.token_events or s.reasoning_events or s.token_gaps) for s in result.samples
    )


def rows_of(result: RunResult) -> tuple[Row, ...]:
    """The five numbers, then those of streamed answers (first-token rows only when some call
    streamed, or gated), then any other gated number, each with its check when it has one."""
    ok = [s for s in result.samples if s.ok]
    n = {
        "cold_start": sum(s.phase is CallPhase.COLD for s in ok),
        "warm_p50": sum(s.phase is CallPhase.WARM for s in ok),
        "warm_p95": sum(s.phase is CallPhase.WARM for s in ok),
        "concurrent_p95": sum(s.phase is CallPhase.CONCURRENT for s in ok),
        "error_rate": len(result.samples),
        "ttft_p95": sum(
            s.phase is not CallPhase.COLD and s.timings.first_token is not None for s in ok
        ),
    }
    checks = {check.number: check for check in result.verdict.checks}
    numbers = result.numbers.model_dump()
    wanted = list(_FIVE)
    gated = {number for number, check in checks.items() if check.limit is not None}
    if "ttft_p95" in checks or result.numbers.ttft_p95 is not None:
        wanted.append("ttft_p95")
    wanted += [number for number in _TOKEN_TIMING if numbers.get(number) is not None]
    n["ttft_warm_p95"] = sum(
        s.phase is CallPhase.WARM and s.timings.first_token is not None for s in ok
    )
    n["ttft_concurrent_p95"] = sum(
        s.phase is CallPhase.CONCURRENT and s.timings.first_token is not None for s in ok
    )
    n["itl_p95"] = sum(s.phase is not CallPhase.COLD and s.token_gaps is not None for s in ok)
    n["longest_stall"] = sum(s.token_gaps is not None for s in ok)
    n["tpot_p50"] = n["tpot_p95"] = sum(
        s.phase is CallPhase.WARM
        and (s.timings.first_event or s.timings.first_token) is not None
        and (s.tokens or 0) >= 2
        for s in ok
    )
    n["tokens_p50"] = n["tokens_p95"] = sum(
        s.phase is not CallPhase.COLD and (s.tokens or 0) >= 1 for s in ok
    )
    wanted += [number for number in checks if number not in wanted]
    if not streamed(result):  # first-token rows only when gated
        wanted = [n for n in wanted if not n.startswith("ttft_") or n in gated]
    rows = []
    for number in wanted:
        check = checks.get(number)
        rows.append(
            Row(
                number=number,
                value=check.value if check else numbers.get(number),
                limit=check.limit if check else None,
                passed=check.passed if check else None,
                note=check.note if check else "",
                n=check.n if check and check.n is not None else n.get(number, len(ok)),
                interval=check.interval if check else None,
                by_policy=check.by_policy if check else False,
                decided=check.decided if check else True,
                meaning=check.meaning if check else "",
                missing=_missing(result.samples, number),
                failed_on=check.breach if check else "",
            )
        )
    return tuple(rows)


# The calls behind each number, to say why it has no value.
_BEHIND = {
    "cold_start": (CallPhase.COLD,),
    "warm_p50": (CallPhase.WARM,),
    "warm_p95": (CallPhase.WARM,),
    "concurrent_p95": (CallPhase.CONCURRENT,),
    "ttft_p95": (CallPhase.WARM, CallPhase.CONCURRENT),
    "ttft_warm_p95": (CallPhase.WARM,),
    "ttft_concurrent_p95": (CallPhase.CONCURRENT,),
    "itl_p95": (CallPhase.WARM, CallPhase.CONCURRENT),
    "tpot_p50": (CallPhase.WARM,),
    "tpot_p95": (CallPhase.WARM,),
    "tokens_p50": (CallPhase.WARM, CallPhase.CONCURRENT),
    "tokens_p95": (CallPhase.WARM, CallPhase.CONCURRENT),
}


def _missing(samples: Sequence[Sample], number: str) -> str:
    """Why a number would have no value: "none of the 3 warm calls succeeded", "no concurrent
    call was made", "the cold call failed"; for a number of streams, that no successful call
    carried the stream's timing."""
    phases = _BEHIND.get(number, tuple(CallPhase))
    kind = " or ".join(phase.value for phase in phases)
    calls = [s for s in samples if s.phase in phases]
    if not calls:
        return f"no {kind} call was made"
    if any(s.ok for s in calls):
        return f"no successful {kind} call carried a streamed answer's timing"
    if len(calls) == 1:
        return f"the {kind} call failed"
    return f"none of the {len(calls):,} {kind} calls succeeded"
