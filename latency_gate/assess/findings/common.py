"""What every finding rule reads: the successful calls of some phases, a call's setup time, and
the smallest number of calls a rule judges from."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from latency_gate.models import CallPhase, Finding, Numbers, Sample

MIN_SAMPLES = 5

Rule = Callable[[Sequence[Sample], Numbers, bool], Finding | None]


def ok_calls(samples: Sequence[Sample], *phases: CallPhase) -> list[Sample]:
    return [s for s in samples if s.ok and s.latency is not None and s.phase in phases]


def setup_seconds(sample: Sample) -> float:
    """Seconds this call spent opening its connection: DNS, TCP and TLS."""
    t = sample.timings
    return (t.dns or 0.0) + (t.connect or 0.0) + (t.tls or 0.0)
