"""Regressions against a baseline: an earlier run's JSON, or the base endpoint of an A/B run
measured beside the head (`--baseline-url`), compared number by number.

Each gated percentile (warm p50, warm p95, concurrent p95, first-token p95) is tested on that
percentile itself, with the null hypothesis "head is worse than base by at most the limit"
(`--max-regression 20%`, `200ms` or `20%,200ms`, both to be exceeded; `10%` when none is given):
an exact permutation test at the limit (assess/compare/regression.py). Three outcomes: regressed,
not regressed, undecided; while one is undecided the run takes more calls (assess/budget/gate.py),
and one still undecided at the cap is not called a regression unless `on-undecided-regression` is
fail (a regression is a claim that needs evidence; the budget guards the level), and is said as a
warning wherever the verdict is. Only numbers with a budget are tested. The error rate: the
exact conditional test of two counts against the relative limit. Cold start is one call on each
side: shown, never called a regression. docs/statistics.md has the methods and the simulated
error rates.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from latency_gate.assess.compare.judged import Judged, Look, judge_number
from latency_gate.assess.compare.regression import (
    REGRESSION_ALPHA,
    WITHIN_ALPHA,
    Alphas,
    Regression,
    look_alpha,
)
from latency_gate.assess.compare.same_work import SameWork, what_changed
from latency_gate.assess.numbers.stats import numbers as numbers_of
from latency_gate.config import NOT_COMPARED, Target
from latency_gate.config.regression import RegressionLimit
from latency_gate.config.target import comparable_settings
from latency_gate.errors import ConfigError, InputProblem
from latency_gate.formatting import plural
from latency_gate.models import (
    BaselineCheck,
    CallPhase,
    NumberDelta,
    Numbers,
    PartDelta,
    RunResult,
    Sample,
)

__all__ = [
    "TEST_NAME",
    "BaselinePlan",
    "baseline_for",
    "compare",
    "config_differences",
    "match_baseline",
    "missing_baseline",
    "origin_of",
    "with_origins",
]

TEST_NAME = (
    "exact permutation test of each percentile at the limit (the exact conditional test of two "
    f"counts for the error rate), one-sided alpha {REGRESSION_ALPHA:g} for a regression and "
    f"{WITHIN_ALPHA:g} for 'not regressed', spent over the looks"
)
SAME_WORK_TEST_NAME = (
    "at the same work: each whole-call percentile by the exact permutation test of each call's "
    "latency over what its answer's length predicts, and the answers' length by Student's t on "
    "the pairs of the same prompt (Welch's against an earlier run), each at half the number's "
    f"one-sided alpha {REGRESSION_ALPHA:g} for a regression; {WITHIN_ALPHA:g} for 'not "
    "regressed', spent over the looks"
)
_NUMBERS = (
    "cold_start",
    "warm_p50",
    "warm_p95",
    "concurrent_p95",
    "ttft_p95",
    "tpot_p95",
    "error_rate",
)


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


def match_baseline(
    targets: Sequence[Target], base_runs: Sequence[RunResult], source: str
) -> dict[str, RunResult | None]:
    """The baseline run of each target (by name; one run against one target pairs whatever the
    names). Raises ConfigError (exit 2, before anything is measured) when a matched baseline
    measured something else, saying which settings differ."""
    by_name = {run.target: run for run in base_runs}
    matched: dict[str, RunResult | None] = {}
    problems: list[InputProblem] = []
    for target in targets:
        run = by_name.get(target.name)
        if run is None and len(targets) == 1 and len(base_runs) == 1:
            run = base_runs[0]
        matched[target.name] = run
        if run is None:
            continue
        differences = config_differences(target.comparable(), run.config)
        if differences:
            shown = "; ".join(f"{k}: {b!r} then, {h!r} now" for k, b, h in differences)
            problems.append(
                InputProblem(
                    source,
                    f"the baseline of {target.name!r} measured a different configuration "
                    f"({shown}); a comparison would mean nothing. Use a baseline from the same "
                    "settings, or drop --baseline for this run",
                )
            )
    if problems:
        raise ConfigError(problems)
    return matched


def compare(
    samples: Sequence[Sample],
    numbers: Numbers,
    base: RunResult | None,
    limit: RegressionLimit,
    source: str,
    *,
    outcomes: Mapping[str, Regression] | None = None,
    alpha: Alphas | None = None,
    gated: Collection[str] | None = None,
    stopped_early: bool = False,
    on_undecided: str = "pass",
    base_samples: Sequence[Sample] | None = None,
    looks: Mapping[str, Look] | None = None,
    concurrency: int = 10,
    intervals: bool = True,
) -> BaselineCheck:
    """Every number of a run (its `samples` and `numbers`) against `base`: values, head / base
    with its interval, and the outcome, each tested by `judge_number` as the looks were: a number
    the looks decided (`outcomes`, at the look in `looks`) on that look's calls at its alphas
    (the same test on the same calls: the same decision), any other on every call at `alpha`
    (what is left of each side's alpha at the last look; the whole when None). The interval is
    the decision's own (its levels in `interval_levels`), so the two never disagree;
    `intervals=False` leaves them out (the simulations).

    `base_samples`, when given, are the base arm of an A/B run measured beside the head (kind
    "side-by-side", `source` its redacted URL, the same prompts call by call), used instead of
    `base` (None then). A run whose answers have a length is compared at the same work, the
    length beside it (assess/compare/same_work.py), and what changed is named (`parts`, `cause`).

    Only the numbers in `gated` (those with a budget; every number when None) are tested: the
    others are shown beside their base. A regression still undecided is not a regression, unless
    `on_undecided` is "fail" (counted as one, `by_policy`); when the run stopped early because a
    check had already failed it (`stopped_early`), it was not needed and is said so.
    """
    final = alpha or look_alpha(0, last=True)
    side_by_side = base_samples is not None
    if base_samples is not None:
        base_numbers = numbers_of(base_samples)
    elif base is not None:
        base_samples, base_numbers = base.samples, base.numbers
    else:
        raise ValueError("compare needs a base run or the base arm's samples")
    same = SameWork(samples, base_samples, concurrency=concurrency, paired=side_by_side)
    parts = same.parts(limit) if same.applies else ()
    cause = what_changed(parts)
    deltas = []
    length: PartDelta | None = None
    for number in _NUMBERS:
        base_value = getattr(base_numbers, number)
        head_value = getattr(numbers, number)
        if number in ("ttft_p95", "tpot_p95") and base_value is None and head_value is None:
            continue
        if number == "tpot_p95" and (gated is None or number not in gated):
            continue  # shown among the parts (what changed), tested only with a budget
        note = ""
        outcome: Regression | None = None
        judged: Judged | None = None
        look = Look(len(samples), len(base_samples), final)
        tested = gated is None or number in gated
        missing = ""  # why a tested number could not be compared: the base gave no data
        if base_value is None and head_value is not None and tested and number in _KINDS:
            # A comparison with no data on one side is not a comparison: undecided, and the
            # undecided policy says whether that fails the run.
            outcome = Regression.UNDECIDED
            missing = _no_base_data(number, base_samples, side_by_side)
        elif base_value is None or head_value is None:
            note = "no data on one side"
        elif number == "cold_start":
            note = "one call each: cannot be told from noise, not gated"
        elif not tested and number != "error_rate":
            note = "not tested: it has no budget (only gated numbers are tested)"
        else:
            if outcomes is not None and number in outcomes and looks and number in looks:
                look = looks[number]
            judged = judge_number(
                number,
                samples[: look.head_calls],
                base_samples[: look.base_calls],
                limit,
                look.alpha,
                concurrency=concurrency,
                paired=side_by_side,
                interval=intervals,
            )
            if judged is None and tested and number in _KINDS:
                outcome = Regression.UNDECIDED
                missing = _too_few(number, samples, base_samples)
            elif judged is None:
                note = "too few calls to tell from noise"
            else:
                outcome = judged.outcome
                if (
                    number == "error_rate"
                    and sum(not s.ok for s in samples) + sum(not s.ok for s in base_samples) == 0
                ):
                    note = "no failure on either side"
        if outcome is not None and not tested:  # the error rate without a budget
            outcome, judged = None, None
            note = "not tested: it has no budget (only gated numbers are tested)"
        if (
            outcome is not None
            and judged is not None
            and outcomes is not None
            and outcomes.get(number) is Regression.REGRESSED
            and outcome is not Regression.REGRESSED
        ):
            # Decided at a look on calls it no longer has (a result file judged again in one
            # look): the look's decision stands, said with the interval of every call.
            outcome = outcomes[number]
        if judged is not None and judged.length_outcome is not None and length is None:
            length = _length_part(same, final, limit)
        by_policy = False
        if outcome is Regression.UNDECIDED and not note:
            why = "undecided: nothing to compare with" if missing else "undecided at the cap"
            if stopped_early:
                note = "undecided: not needed, the run had already failed"
            elif on_undecided == "fail":
                note = f"{why}: counted as a regression by policy"
                by_policy = True
            else:
                note = (
                    f"{why}: not called a regression (on-undecided-regression: pass)"
                    + _smallest_caught(judged, limit)
                )
        same_work = judged is not None and judged.same_work
        halved = judged is not None and judged.length_outcome is not None
        regressed_alpha = look.alpha.regressed / (2 if halved else 1)
        deltas.append(
            NumberDelta(
                number=number,
                base=base_value,
                head=head_value,
                regressed=outcome is Regression.REGRESSED or by_policy,
                note=note,
                interval=None if judged is None else judged.interval,
                decided=outcome is not Regression.UNDECIDED,
                outcome=None if outcome is None else outcome.value,
                by_policy=by_policy,
                same_work=same_work,
                interval_levels=None
                if judged is None
                else (1 - regressed_alpha, 1 - look.alpha.within),
                calls=None if judged is None else (look.head_calls, look.base_calls),
                cause=cause if halved or same_work else "",
                estimate=None if judged is None else judged.estimate,
                missing=missing or None,
                by_length=judged is not None
                and judged.by_length
                and outcome is Regression.REGRESSED,
            )
        )
    return BaselineCheck(
        status="compared",
        kind="side-by-side" if side_by_side else "earlier-run",
        source=source,
        test=SAME_WORK_TEST_NAME if same.applies else TEST_NAME,
        max_relative=limit.relative,
        max_absolute=limit.absolute,
        deltas=tuple(deltas),
        parts=parts,
        length=length,
    )


def _smallest_caught(judged: Judged | None, limit: RegressionLimit) -> str:
    """ "; it would have caught about x1.18 or more": the regression this run's spread could have
    told from noise (the limit, widened by how far the interval's low side lies under the
    estimate), or nothing when there is no estimate or low side to read it from."""
    if judged is None or judged.interval is None or limit.relative is None:
        return ""
    low, ratio = judged.interval[0], judged.ratio
    if low is None or ratio is None or low <= 0 or ratio <= 0:
        return ""
    caught = (1 + limit.relative) * ratio / low
    return f"; at this spread it would have caught about x{caught:.2f} or more"


def _length_part(same: SameWork, alpha: Alphas, limit: RegressionLimit) -> PartDelta | None:
    """The answers' length against the limit on every call, at the last look's alphas (the
    "regressed" side halved: the same work's test takes the other half)."""
    found = same.length_test(Alphas(alpha.regressed / 2, alpha.within))
    if found is None:
        return None
    relative = limit.relative if limit.relative is not None else 0.10
    parts = {p.part: p for p in same.parts(limit)}
    shown = parts.get("length")
    return PartDelta(
        part="length",
        unit="tokens" if same.unit == "tokens" else "bytes",
        base=None if shown is None else shown.base,
        head=None if shown is None else shown.head,
        ratio=found.ratio,
        interval=(found.low, found.high),
        moved="unclear" if shown is None else shown.moved,
        n=found.n,
        paired=found.paired,
        outcome=found.against(1 + relative).value,
    )


# The calls behind each compared latency number, by kind.
_KINDS = {
    "warm_p50": (CallPhase.WARM,),
    "warm_p95": (CallPhase.WARM,),
    "concurrent_p95": (CallPhase.CONCURRENT,),
    "ttft_p95": (CallPhase.WARM, CallPhase.CONCURRENT),
    "tpot_p95": (CallPhase.WARM,),
}


def _no_base_data(number: str, base_samples: Sequence[Sample], side_by_side: bool) -> str:
    """ "the base gave no data: none of its 20 warm calls succeeded (20 http_5xx)": why a
    number of the base is missing, in the words of the reports."""
    who = "the base" if side_by_side else "the baseline run"
    kinds = _KINDS.get(number, tuple(CallPhase))
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


def _too_few(number: str, samples: Sequence[Sample], base_samples: Sequence[Sample]) -> str:
    """ "too few calls to compare (1 of the base's and 20 of the head's succeeded)"."""
    kinds = _KINDS[number]

    def succeeded(calls: Sequence[Sample]) -> int:
        return sum(s.ok and s.phase in kinds for s in calls)

    return (
        f"too few calls to compare ({succeeded(base_samples)} of the base's and "
        f"{succeeded(samples)} of the head's succeeded)"
    )


def missing_baseline(source: str, status: str, message: str) -> BaselineCheck:
    """A check that could not compare: the reports say so plainly."""
    return BaselineCheck(
        status="missing" if status == "missing" else "no-match",
        source=source,
        test=TEST_NAME,
        message=message,
    )


@dataclass(frozen=True)
class BaselinePlan:
    """A baseline loaded and matched to the targets before anything is measured.

    `runs` is None when no file was found at `source` (a first run, or a cache miss): the
    results then say so plainly instead of passing silently.
    """

    source: str
    limit: RegressionLimit
    runs: Mapping[str, RunResult | None] | None


def baseline_for(plan: BaselinePlan, target: str) -> RunResult | BaselineCheck:
    """The plan's baseline run of `target`, or the check that says why there is none (the
    reports say so plainly: a missing baseline never passes silently)."""
    if plan.runs is None:
        return missing_baseline(
            plan.source, "missing", f"no baseline file at {plan.source} (a first run?)"
        )
    base = plan.runs.get(target)
    if base is None:
        known = ", ".join(sorted(name for name in plan.runs if plan.runs[name] is not None))
        return missing_baseline(
            plan.source,
            "no-match",
            f"{plan.source} holds no run of {target!r}"
            + (f" (its runs: {known})" if known else ""),
        )
    return base
