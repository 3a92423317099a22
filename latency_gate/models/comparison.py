"""How a run compared with its base: each number against the base's (an earlier run, a base
endpoint measured beside it, or a history folder's runs), what changed, and the history it was
held against."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from latency_gate.models.numbers import Bounds, Numbers
from latency_gate.sample import Frozen as _Frozen

__all__ = ["BaselineCheck", "History", "HistoryRun", "NumberDelta", "PartDelta"]


class NumberDelta(_Frozen):
    """One number of a run against the same number of its baseline run.

    `p_value` is the one-sided test's (None when it could not be run, e.g. one call each);
    `regressed` is True only when the number is worse by more than every given limit and the
    test says the difference is beyond noise.
    """

    number: str
    base: float | None
    head: float | None
    p_value: float | None = None
    regressed: bool = False
    note: str = ""
    interval: Bounds | None = Field(
        default=None,
        description="interval of head / base (the ratio of the two numbers): the outcome's test "
        "inverted, on the same calls, at its one-sided alphas (their levels: interval_levels)",
    )
    decided: bool = True
    outcome: Literal["regressed", "not regressed", "undecided"] | None = None
    by_policy: bool = Field(
        default=False, description="undecided at the cap, and counted as a regression by policy"
    )
    missing: str | None = Field(
        default=None,
        description="why a tested number could not be compared (the base gave no data): it is "
        "undecided then, and the undecided policy decides",
    )
    bound: float | None = Field(
        default=None,
        description="against a history: the upper prediction bound of one run's value (an "
        "unchanged endpoint's next run stays under it but for alpha), the limit not included",
    )
    threshold: float | None = Field(
        default=None,
        description="against a history: the value the head had to exceed to regress (the "
        "bound with the limit on top; with two limits, the higher)",
    )
    same_work: bool = Field(
        default=False,
        description="tested at the same work: `interval` is head / base of each call's latency "
        "over what its answer's length predicts, and the answers' length is tested beside it "
        "(BaselineCheck.parts)",
    )
    interval_levels: tuple[float, float] | None = Field(
        default=None,
        description="the one-sided confidence of each side of `interval`: the decision's own "
        "(regressed when the low side is over the limit, not regressed when the high side is "
        "within it); None: 95 % two-sided",
    )
    calls: tuple[int, int] | None = Field(
        default=None, description="head's and base's calls behind the outcome and its interval"
    )
    cause: str = Field(
        default="", description="what changed, in words: the parts that moved (same work)"
    )
    estimate: float | None = Field(
        default=None,
        description="head / base as the test estimates it (at the same work, the larger of the "
        "latency's ratio at the same work and the answers' length ratio): an undecided "
        "regression whose estimate is over the limit is warned, one within it only shown",
    )
    by_length: bool = Field(
        default=False,
        description="regressed because its answers' length is longer beyond the limit (an "
        "answer's tokens are the wait), while its latency's own test, whose interval `interval` "
        "is, did not call it regressed",
    )

    @property
    def delta(self) -> float | None:
        return None if self.base is None or self.head is None else self.head - self.base

    @property
    def left_undecided(self) -> bool:
        """The calls could not decide it, and it was neither counted as a regression by policy
        nor left because the run had already failed: said beside the verdict."""
        return self.outcome == "undecided" and not self.regressed and "not needed" not in self.note

    @property
    def relative(self) -> float | None:
        if self.base is None or self.head is None or self.base <= 0:
            return None
        return self.head / self.base - 1


class PartDelta(_Frozen):
    """One part of a call's time, or its answer's length, head against base: what changed."""

    part: Literal["length", "first_token", "per_token"]
    unit: str = Field(description="tokens or bytes for the length; s for the times")
    base: float | None = Field(
        description="base's geometric mean (of its positive values; the ratio is their quotient)"
    )
    head: float | None = Field(description="head's geometric mean (of its positive values)")
    ratio: float | None = Field(description="head / base: the geometric mean of the ratios")
    interval: Bounds | None = Field(description="of the ratio, 98 % (1 % a side)")
    moved: Literal["longer", "shorter", "slower", "faster", "unchanged", "unclear"]
    n: int = Field(description="calls (or pairs) behind the ratio")
    paired: bool = Field(description="pairs of calls that got the same prompt")
    outcome: Literal["regressed", "not regressed", "undecided"] | None = Field(
        default=None, description="the length against the limit (BaselineCheck.length only)"
    )


class HistoryRun(_Frozen):
    """One earlier run of a history, as the comparison and the trend chart use it."""

    started_at: float
    numbers: Numbers
    calls: int
    failed: int
    commit: str | None = Field(default=None, description="the commit it measured, when known")
    goodput: float | None = Field(
        default=None,
        description="the rate its goodput search held, requests a second (None: it ran none)",
    )


class History(_Frozen):
    """The earlier runs a run was held against (`--history DIR`), oldest first.

    `judged`: "prediction" when the head was held against the spread of `runs` (3 or more);
    "newest" when there were fewer and the newest one served as a single baseline; "none"
    when there was no usable run.
    """

    judged: Literal["prediction", "newest", "none"]
    runs: tuple[HistoryRun, ...] = ()
    size: int = Field(description="the most runs used (--history-size)")
    other_settings: int = Field(
        default=0, description="runs of this target skipped: measured with other settings"
    )
    unreadable: tuple[str, ...] = Field(
        default=(), description="files of the folder skipped: not a readable result file"
    )
    alpha: float | None = Field(
        default=None, description="one-sided error of each number's prediction bound"
    )


class BaselineCheck(_Frozen):
    """How a run compared with its base: an earlier run of the same target (`--baseline`), a
    base endpoint measured beside it in this run (`--baseline-url`, kind "side-by-side"), or the
    earlier runs of a history folder (`--history`, then `history` says which).

    status: "compared" (deltas hold every number), "missing" (no baseline file was found) or
    "no-match" (the file holds no run of this target). The last two never pass silently: the
    reports say so.
    """

    status: Literal["compared", "missing", "no-match"]
    kind: Literal["earlier-run", "side-by-side"] = Field(
        default="earlier-run",
        description="earlier-run: a result file's run; side-by-side: the base endpoint "
        "measured in this run, its calls interleaved with the head's (RunResult.base_samples)",
    )
    source: str = Field(
        description="where the baseline came from, as the user gave it (side-by-side: the base "
        "URL, redacted; at the head's URL with a request of its own, how that request differs, "
        "as in base_request)"
    )
    base_request: tuple[str, ...] = Field(
        default=(),
        description="side-by-side: how the base's request differs from the head's (\"model "
        'gpt-a", "format anthropic", "prompt \'...\'", "body *** (sha256 ...)", "stream '
        "off\"); empty: the base was sent the head's request",
    )
    test: str = ""
    max_relative: float | None = None
    max_absolute: float | None = None
    deltas: tuple[NumberDelta, ...] = ()
    message: str = ""
    history: History | None = None
    head_origin: str | None = Field(
        default=None,
        description="the origin this run measured, when the runs it was held against measured "
        "another (a pull request's preview against main's runs)",
    )
    base_origins: tuple[str, ...] = Field(
        default=(),
        description="the origins the baseline's or the history's runs measured, where not this "
        "run's: the same request (path, method, body, settings) at another host",
    )
    parts: tuple[PartDelta, ...] = Field(
        default=(),
        description="what changed: the answers' length, the first token and the time per token, "
        "head against base (runs whose answers have a length)",
    )
    length: PartDelta | None = Field(
        default=None,
        description="the answers' length tested against the limit (a whole-call number "
        "regresses on longer answers too): its ratio and interval at the decision's levels",
    )

    @property
    def regressions(self) -> tuple[NumberDelta, ...]:
        return tuple(d for d in self.deltas if d.regressed)

    @property
    def not_compared(self) -> str | None:
        """ "warm p95, for the base gave no data: ...; concurrent p95, for ...": the tested
        numbers the base had no data for, each with why; None when every one was compared."""
        reasons: dict[str, list[str]] = {}
        for delta in self.deltas:
            if delta.missing:
                reasons.setdefault(delta.missing, []).append(delta.number.replace("_", " "))
        if not reasons:
            return None

        def listed(names: list[str]) -> str:
            return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]

        return "; ".join(f"{listed(names)}, for {why}" for why, names in reasons.items())

    @property
    def undecided(self) -> tuple[NumberDelta, ...]:
        """The numbers the calls left undecided; those with nothing to compare with are said
        apart (`not_compared`)."""
        return tuple(d for d in self.deltas if d.left_undecided and not d.missing)
