"""What a run has measured, as the engine fills it in: `Measurement`, its floor's calls and the
extra calls each look asked for.

Below measure/ and assess/ both: the engine (latency_gate.measure.engine) fills a `Measurement`
call by call, and latency_gate.assess.result judges it whole.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from latency_gate.sample import Sample, StampSource

__all__ = ["FloorSamples", "Measurement", "MoreCalls"]


@dataclass(frozen=True)
class MoreCalls:
    """What to measure before the next look: more warm calls, then more bursts."""

    warm_calls: int
    bursts: int
    reason: str = ""


@dataclass(frozen=True)
class FloorSamples:
    """Five sequential calls and one burst against the loopback floor server."""

    sequential: tuple[Sample, ...]
    concurrent: tuple[Sample, ...]
    concurrency: int
    stamp_source: StampSource


@dataclass
class Measurement:
    """What a run has measured so far, filled in as calls finish.

    The caller keeps it: when the run is cancelled, the calls that finished are still here.
    """

    samples: list[Sample] = field(default_factory=list)
    started_at: float = field(default_factory=time.time)
    extra: list[MoreCalls] = field(default_factory=list)
    floor: FloorSamples | None = None
    # Why the run stopped before its planned calls (every first call failed to connect or timed
    # out), or None.
    stopped_early: str | None = None
    ready_after: float | None = None
    # The base of an A/B run (a target with a baseline_url), measured beside `samples`.
    base_samples: list[Sample] = field(default_factory=list)
    base_ready_after: float | None = None
    # Why the base stopped being measured (its first calls all failed to connect or timed
    # out), or None: the head goes on alone, judged by its budget, and nothing is compared.
    base_stopped_early: str | None = None
    # --max-time ran out with a call left unmade (measure/deadline.py).
    time_up: bool = False
