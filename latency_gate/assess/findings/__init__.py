"""Findings: what in the samples explains the numbers, with the evidence in numbers.

Pure functions over samples. Each rule reads the raw samples the way an experienced engineer
would, and each has an absolute floor besides its ratio, so that loopback noise (a few ms on a
busy 2-core machine) cannot fire it: a finding names something a user would feel.

The rules by kind: streams.py (in the stream), load.py (under load, and a tokens/s figure
that hides it), connection.py (getting to the answer); common.py holds what they share.
`find` runs them all, most telling first.
"""

from __future__ import annotations

from collections.abc import Sequence

from latency_gate.assess.findings.common import Rule
from latency_gate.assess.findings.connection import (
    cache_answering,
    cold_call_failed,
    cold_start,
    connection_setup,
)
from latency_gate.assess.findings.load import (
    long_tail,
    queued,
    rate_limited,
    tokens_per_second_hides_the_wait,
)
from latency_gate.assess.findings.streams import (
    buffered_stream,
    stalled_stream,
    usage_disagreed,
)
from latency_gate.models import CallPhase, Finding, Numbers, Sample

__all__ = ["find"]


def find(
    samples: Sequence[Sample],
    numbers: Numbers,
    *,
    streaming: bool,
    concurrency: int | None = None,
) -> tuple[Finding, ...]:
    """Every finding that applies to a run, most telling first.

    `concurrency` is the size of one burst: a run that took more bursts (sequential sampling)
    has its queue read from its first burst, the classic one, since calls of different bursts
    never waited for each other. None: all concurrent calls are one burst.
    """

    def first_burst_queued(
        samples: Sequence[Sample], numbers: Numbers, streaming: bool
    ) -> Finding | None:
        if concurrency is not None:
            samples = [
                s for s in samples if s.phase is not CallPhase.CONCURRENT or s.index < concurrency
            ]
        return queued(samples, numbers, streaming)

    rules: list[Rule] = [
        buffered_stream,
        first_burst_queued,
        cold_start,
        cold_call_failed,
        connection_setup,
        tokens_per_second_hides_the_wait,
        rate_limited,
        long_tail,
        stalled_stream,
        usage_disagreed,
        cache_answering,
    ]
    found = (rule(samples, numbers, streaming) for rule in rules)
    return tuple(f for f in found if f is not None)
