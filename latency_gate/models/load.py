"""How much load an endpoint holds within its budget: a `LoadFigure` and the `Level`s that found
it, in two kinds. `Capacity` counts calls at once (`--capacity`): bursts of that many calls
started together. `Goodput` counts requests a second (`--rate`, `--goodput`): calls arriving
open-loop, each latency counted from the moment its call was due (its `send_lag` plus its
latency), so a queue the endpoint built, or a client that fell behind, shows as latency.

A figure's calls are its levels' own: `RunResult.samples` and the numbers, findings and budget
checks of the run do not include them (docs/statistics.md, "Capacity" and "Goodput").
"""

from __future__ import annotations

from typing import Generic, Literal, TypeVar

from pydantic import Field

from latency_gate.sample import Frozen, Sample

__all__ = ["Capacity", "CapacityLevel", "Goodput", "Level", "LoadFigure", "RateLevel"]


class Level(Frozen):
    """One load tried, judged on that level's calls alone: the fields both kinds share."""

    calls: int = Field(ge=0, description="calls made (at a rate, the warm-up's included)")
    p95: float | None = Field(
        description="p95 latency of the level's judged successful calls (at a rate: from due)"
    )
    errors: int = Field(ge=0, description="failed calls among the judged")
    ttft_p95: float | None = Field(
        default=None, description="first-token p95 of the level (at a rate: from due)"
    )
    held: bool = Field(
        description="every budgeted check of the level showed its p95 within the budget"
    )
    near: bool = Field(
        default=False,
        description="not held, not broken: at its end its calls ruled out neither a p95 over "
        "the budget nor one within it (held is False)",
    )
    broke_on: tuple[str, ...] = Field(default=(), description="the checks that broke it")
    wrong_at_most: float | None = Field(
        default=None,
        description="how often a level on the wrong side of its budget is decided so, at most",
    )
    samples: tuple[Sample, ...] = Field(
        default=(),
        description="the level's calls, apart from the run's `samples` (empty for the run's "
        "own level: those are its concurrent calls)",
    )


# A level's load: calls at once (int) or requests a second (float); and the kind of level.
LoadT = TypeVar("LoadT", bound=float)
LevelT = TypeVar("LevelT", bound=Level)


class LoadFigure(Frozen, Generic[LoadT, LevelT]):
    """The most load whose levels held the budget, and the search (or the one level) that
    found it: the fields both kinds share."""

    found: LoadT = Field(
        ge=0, description="the highest level that held (0: none did, not even one call)"
    )
    breaking: LoadT | None = Field(description="the lowest level that broke the budget")
    breaking_p95: float | None = Field(description="that level's p95 latency")
    complete: bool = Field(
        description="it ended by itself (not stopped by a cap, or at a rate by the client)"
    )
    stopped_by_cap: bool = Field(
        description="a cap (max-calls, or goodput-time at a rate) stopped it: at least `found`"
    )
    limit: float = Field(description="the concurrent p95 budget every level was held to")
    ttft_limit: float | None = None
    error_limit: float | None = None
    on_undecided: Literal["estimate", "fail", "pass"] = "estimate"
    start: LoadT = Field(
        description="the first level: the run's concurrency (judged by the run), or the first "
        "rate tried",
    )
    calls: int = Field(
        description="calls its levels made (a capacity's: the run's own level not counted)"
    )
    seconds: float = Field(description="time its levels took")
    stopped: str = Field(default="", description="why it stopped, in words")
    levels: tuple[LevelT, ...] = Field(description="the levels in the order tried")


class CapacityLevel(Level):
    """One level of the capacity search: `concurrency` calls started together, in bursts, judged
    on that level's calls alone (docs/statistics.md, "Capacity")."""

    concurrency: int = Field(ge=1)
    bursts: int = Field(ge=0)
    decided_by: Literal["the run", "test", "level cap", "max-calls"] = Field(
        description="the run: the run's own concurrent calls decided it (level c0); "
        "test: the sequential tests decided; level cap: undecided at the level's last burst "
        "(near the budget, or its error rate by the nearer share); max-calls: the same when "
        "the cap stopped the search"
    )
    seconds: float | None = Field(
        default=None, description="time its bursts took (None for the run's own level)"
    )


class Capacity(LoadFigure[int, CapacityLevel]):
    """The most calls at once whose concurrent p95 holds its budget (`--capacity`), and the
    search that found it. Its calls are its levels' own: `RunResult.samples` and the numbers,
    findings and budget checks of the run do not include them."""

    upper: int | None = Field(
        default=None,
        description="when levels above `found` were near the budget (not told apart from it): "
        "the highest level the capacity can be, below the lowest that broke (capacity-max when "
        "none did); the capacity is between `found` and `upper`. None: told apart",
    )
    reached_max: bool = Field(description="found is --capacity-max: the search went no higher")
    maximum: int = Field(description="--capacity-max")


class RateLevel(Level):
    """One level: calls arriving at `rate` a second, open-loop, judged on that level's calls
    after its warm-up (docs/statistics.md, "Goodput")."""

    rate: float = Field(gt=0, description="requests a second asked for")
    judged: int = Field(ge=0, description="calls the decision read (after the warm-up)")
    offered: float | None = Field(
        default=None, description="the rate the calls were due at: calls / span of their dues"
    )
    mean_latency: float | None = Field(
        default=None, description="mean latency from due of the judged successful calls"
    )
    decided_by: Literal["test", "level cap", "max-calls", "client"] = Field(
        description="test: the sequential tests decided; level cap: undecided at the level's "
        "end (near the budget, or its error rate by the nearer share); max-calls: the same "
        "when a cap stopped the search; client: the client fell behind and the endpoint did "
        "not (the level says nothing of the endpoint)"
    )
    seconds: float = Field(ge=0, description="from its first call due to its last call's end")
    send_lag_p95: float | None = Field(
        default=None, description="p95 of the calls' send lag: how late the client sent them"
    )
    send_lag_max: float | None = None
    client_behind: bool = Field(
        default=False,
        description="the client's send lag, not the endpoint, is what broke the budget",
    )
    tokens: float | None = Field(
        default=None, description="mean output tokens of its successful calls (streams, usage)"
    )


class Goodput(LoadFigure[float, RateLevel]):
    """Calls at a rate: one level at `--rate` (`search` False), or the goodput search: the
    highest rate whose p95 from due (and first-token p95 and error rate, where budgeted) holds
    the budget under load, `max-concurrent-p95`."""

    search: bool = Field(description="the goodput search (--goodput); False: --rate alone")
    asked: float | None = Field(default=None, description="--rate, requests a second")
    upper: float | None = Field(
        default=None,
        description="when levels above `found` were near the budget (their calls could not "
        "tell): the lowest rate that broke (its test rules out a p95 within the budget), the "
        "goodput between `found` (held) and `upper` (broke); a near level bounds nothing. None: "
        "no level above `found` was near (the levels told apart: `found` to `breaking`), or "
        "levels were near and none broke (the goodput is at least `found`)",
    )
    tokens_per_s: float | None = Field(
        default=None, description="output tokens a second at the rate held: rate x tokens a call"
    )
    client_limit: float | None = Field(
        default=None, description="a rate the client could not send at (said, not judged)"
    )
    # Five shared fields as a goodput's always were, so each kind reads a file as it did: two
    # with a default a file may leave out, three bounded here (a capacity's start, calls and
    # seconds are held by the result file's checks against its run, results/checks.py,
    # whose message names the field: "capacity.seconds -5 s is not a duration").
    breaking_p95: float | None = Field(default=None, description="that level's p95")
    stopped_by_cap: bool = Field(
        default=False, description="max-calls or goodput-time stopped it: at least `found`"
    )
    arrivals: Literal["poisson", "constant"] = "poisson"
    start: float = Field(gt=0, description="the first rate tried")
    calls: int = Field(ge=0, description="calls made at a rate")
    seconds: float = Field(ge=0, description="time the levels took")
    restarted_at: float | None = Field(
        default=None,
        description="the rate the search went on from when its first level, at `start`, was too "
        "short to hold (too few calls after the warm-up in a level fitted to the caps) and did "
        "not break: the lowest rate at which such a level can hold; None: it did not",
    )
    precision: float = Field(description="bisected until broke / held was at most this")
    level_seconds: float | None = Field(
        description="a level's arrivals lasted at most this (None: no time limit, --rate-for N)"
    )
    level_calls: int = Field(description="a level made at most this many calls")
    level_judged: int = Field(
        default=0,
        description="at rates too low for this many calls due after the warm-up within "
        "`level_seconds`, a level lasted until about that many were (0: never lengthened)",
    )
    warmup: float = Field(description="seconds of each level's arrivals not judged")
    hold: float = Field(description="seconds of judged arrivals before a level could hold")
    floor: float | None = Field(
        default=None, description="the gate's floor (p95 under load) the send lag is held to"
    )
