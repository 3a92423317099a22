"""What every finding rule reads: the successful calls of some phases, a call's setup time, the
smallest number of calls a rule judges from, and how much slower than typical a time must be."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from latency_gate.models import CallPhase, Finding, Numbers, Sample

MIN_SAMPLES = 5

Rule = Callable[[Sequence[Sample], Numbers, bool], Finding | None]


def ok_calls(samples: Sequence[Sample], *phases: CallPhase) -> list[Sample]:
    return [s for s in samples if s.ok and s.latency is not None and s.phase in phases]


def setup_seconds(sample: Sample) -> float:
    """Seconds this call spent opening its connection: DNS, TCP and TLS."""
    t = sample.timings
    return (t.dns or 0.0) + (t.connect or 0.0) + (t.tls or 0.0)


@dataclass(frozen=True)
class Slower:
    """How far above a typical time one must be to be named: at least `ratio` times it and
    `extra` seconds more (a ratio alone would name a few milliseconds on a fast endpoint)."""

    ratio: float
    extra: float

    def than(self, value: float, typical: float) -> bool:
        return value >= self.ratio * typical and value - typical >= self.extra
