"""The numbers one run measured and how they held their budget: the five numbers, each phase's
median and p95, each number's check, the verdict, the gate's floor and the findings."""

from __future__ import annotations

from pydantic import Field

from latency_gate.sample import Frozen as _Frozen
from latency_gate.sample import StampSource

__all__ = ["Bounds", "Check", "Finding", "Floor", "Numbers", "PhaseStats", "Verdict"]


class PhaseStats(_Frozen):
    """Median and p95 of one phase boundary over the successful calls of one call phase."""

    n: int
    p50: float | None
    p95: float | None


class Numbers(_Frozen):
    """The five numbers (plus first-token p95 for streams). Seconds, and a fraction."""

    cold_start: float | None
    warm_p50: float | None
    warm_p95: float | None
    concurrent_p95: float | None
    error_rate: float
    ttft_p95: float | None = Field(
        default=None,
        description="first-token p95 over warm and concurrent calls together (the old mixed "
        "number, kept for one release: use ttft_warm_p95 and ttft_concurrent_p95)",
    )
    ttft_warm_p95: float | None = None
    ttft_concurrent_p95: float | None = None
    itl_p95: float | None = Field(
        default=None, description="p95 over warm and concurrent calls of each call's mean gap"
    )
    longest_stall: float | None = Field(
        default=None, description="the longest gap between visible deltas of any call"
    )
    tpot_p50: float | None = Field(
        default=None,
        description="median over warm streamed calls of each call's time per output token after "
        "the first: (latency - first visible delta) / (tokens - 1)",
    )
    tpot_p95: float | None = Field(
        default=None, description="p95 of the same per-call time per output token"
    )
    tokens_p50: float | None = Field(
        default=None, description="median output tokens of the warm and concurrent calls"
    )
    tokens_p95: float | None = Field(default=None, description="p95 of the same")


Bounds = tuple[float | None, float | None]


class Check(_Frozen):
    """One number held against its budget. `passed` is None when the number is not gated.

    `decided` is False when the calls made could not tell whether the number is within its
    budget (docs/statistics.md); `passed` is then the --on-undecided policy's, and `by_policy`
    says so. `interval` is the 95 % interval of the number (a side is None where the calls made
    cannot bound it; the whole is None for a single call).
    """

    number: str
    value: float | None
    limit: float | None
    passed: bool | None
    note: str = ""
    interval: Bounds | None = None
    decided: bool = True
    by_policy: bool = False
    n: int | None = Field(default=None, description="calls behind the number")
    meaning: str = Field(
        default="",
        description="what this outcome ruled out, in words, with its error rate for the run's "
        "looks",
    )
    breach: str = Field(
        default="",
        description="what failed it, when that is not its value against the budget (a level at "
        "a rate that broke on its errors, or judged no call); empty: the value said",
    )


class Verdict(_Frozen):
    """PASS or FAIL for a run, no gray zone."""

    passed: bool
    checks: tuple[Check, ...]
    reasons: tuple[str, ...] = ()
    undecided: tuple[str, ...] = Field(
        default=(),
        description="what the calls could not decide and did not fail the run (an undecided "
        "regression), and what is warned of without failing it (a creep of main's runs): said "
        "wherever the verdict is said",
    )

    @property
    def label(self) -> str:
        return "PASS" if self.passed else "FAIL"


class Floor(_Frozen):
    """The gate's own measurement floor, measured against a loopback echo before probing."""

    sequential_p50: float
    concurrent_p95: float
    concurrency: int
    stamp_source: StampSource


class Finding(_Frozen):
    """Something in the samples that explains the numbers, with its evidence."""

    code: str
    title: str
    evidence: str
    hint: str
