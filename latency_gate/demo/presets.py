"""The classic three demo endpoints: local, free tier, paid behind a buffering layer."""

from __future__ import annotations

from latency_gate.demo.spec import EndpointSpec


def classic_three() -> list[EndpointSpec]:
    """The three classic environments, tuned for the default probe (1 cold, 20 warm, 10 at once).

    - local: a model on the same machine, ~40-80 ms per answer, honest streaming: passes.
    - free: a free-tier server, cold start ~2.5 s, one request at a time, ~0.38 s each: the
      10-call burst queues, so concurrent p95 ~ 9.5 x 0.38 s ~ 3.5 s breaches the 3 s budget.
    - paid: fast service (~80 ms) but a layer in front buffers the whole stream (40 tokens at
      15 ms): ~0.7 s, within budget, with the first token arriving with the last byte.
    The whole demo of the three takes about 35 s probed one after another.
    """
    local = EndpointSpec(
        name="local", latency=0.035, jitter=0.25, seed=11, tokens=16, token_interval=0.001
    )
    free = EndpointSpec(
        name="free",
        latency=0.3,
        jitter=0.1,
        seed=12,
        cold_start=2.5,
        cold_after=30.0,
        parallelism=1,
        tokens=20,
        token_interval=0.004,
    )
    paid = EndpointSpec(
        name="paid",
        latency=0.08,
        jitter=0.15,
        seed=13,
        tokens=40,
        token_interval=0.015,
        buffered=True,
    )
    return [local, free, paid]
