"""Measuring: I/O only. The engine, the transport with its kernel stamps, the floor -> samples.

The question this room answers: what did the endpoint do when called so? Nothing here judges.

- engine.py: one run's walk (idle wait, cold call, warm calls, bursts, more when asked), head and
  base of an A/B run interleaved, into a `Measurement` (latency_gate/measurement.py)
- sampler.py: the engine's one question to its caller, "what next?" (`Sampler`): the gate's looks,
  the capacity search's bursts and the levels at a rate are each asked through it
- clients.py: each arm's `ClientKit`, built once from its Target (TLS, HTTP versions, timeouts,
  the credential rule of redirects): one client, one call, a burst
- arrivals.py: calls at a rate, one level at a time; calls.py: one call, timed; failures.py: a
  failed call named once
- ready.py, floor.py, quick.py: the wait for a starting server, the gate's own floor, `quick`
"""
