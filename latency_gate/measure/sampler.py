"""The engine's one question, "what next?": a `Sampler` is told what was measured since it was
last asked and answers what to measure next, or None to stop.

The engine asks it in three places, each of a sampler of its own (latency_gate.run wires each to
latency_gate.assess): after each look, with the run's calls so far, how many more calls
(`Sampler[Sequence[Sample], MoreCalls]`: the gate's sequential sampling); after each burst of
the capacity search, with that burst (`Sampler[Burst, int]`: the concurrency of the next); and
after each level of calls at a rate, with that level (measure/arrivals.py's `RateSampler`: the
next level, and whether the level in progress is decided yet).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from latency_gate.models import Sample

__all__ = ["Burst", "Sampler"]

Measured_contra = TypeVar("Measured_contra", contravariant=True)
Asked_co = TypeVar("Asked_co", covariant=True)


class Sampler(Protocol[Measured_contra, Asked_co]):
    """The caller's side of one of the engine's searches (nothing in measure/ judges)."""

    def next(self, measured: Measured_contra, /) -> Asked_co | None:
        """What to measure next, given what was measured since the last answer (the first
        time: nothing yet, as the engine says); None: nothing more."""


@dataclass(frozen=True)
class Burst:
    """One burst of the capacity search: its calls and its seconds (connections opened ahead
    included). The first time a search is asked there is none: no calls and 0 seconds."""

    calls: Sequence[Sample] = ()
    seconds: float = 0.0
