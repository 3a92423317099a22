"""The work a call did, and its latency at a common work: pure functions, no I/O.

An LLM call's latency is mostly the length of its answer: on the project's llama.cpp recording a
warm call took about 55 ms + 8.3 ms a token (correlation 0.993), so two arms whose answers
differ in length differ in latency whatever their speed. This module gives each call its work
and splits its time:

- `length`: the answer's output tokens (the usage count, else the deltas counted); for a run
  without token counts whose bodies vary in size, the body's bytes play the length's part;
  None where there is no length to hold the latency to (a body of one fixed size);
- `first_token`: seconds to the first answer delta (streams);
- `per_token`: the time per output token after the first, (latency - first visible delta) /
  (tokens - 1), the definition LLM serving benchmarks use, so that latency = first visible delta
  + (tokens - 1) x per_token exactly;
- `adjusted`: each call's latency divided by what its length predicts, the prediction a least-
  squares line through both arms' calls of one kind (for calls of a burst, on the call's own
  length and its burst's mean length, since a call that waited for a slot waited for the others'
  answers). Under "the same speed" those ratios are alike on both arms whatever the answers'
  lengths, so a test of their percentile is a test of the latency at the same work.

docs/statistics.md ("Regressions at the same work") says why, with the simulations.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from latency_gate.models import CallPhase, Finding, Sample

__all__ = [
    "Work",
    "adjusted",
    "first_token",
    "fixed_length_finding",
    "length",
    "length_unit",
    "pairs",
    "per_token",
    "work_of",
]

# A prediction is held at or above this share of the shortest latency of the fit: a line fitted
# through calls whose lengths barely vary may cross zero outside them.
_FLOOR_SHARE = 0.1


def _tokens(sample: Sample) -> int | None:
    return sample.tokens if sample.tokens is not None and sample.tokens >= 1 else None


def length_unit(samples: Sequence[Sample]) -> str | None:
    """ "tokens" when every successful warm and burst call counted its output tokens, else
    "bytes" when their bodies' sizes vary, else None (no length varies: nothing to hold the
    latency to). The cold call is left out: it is compared on its own, never at the same
    work."""
    ok = [s for s in samples if s.ok and s.latency is not None and s.phase is not CallPhase.COLD]
    if not ok:
        return None
    if all(_tokens(s) is not None for s in ok):
        return "tokens"
    if len({s.bytes_received for s in ok}) > 1:
        return "bytes"
    return None


def length(sample: Sample, unit: str | None) -> float | None:
    """The call's work in `unit` (length_unit's), or None."""
    if unit == "tokens":
        tokens = _tokens(sample)
        return None if tokens is None else float(tokens)
    if unit == "bytes":
        return float(sample.bytes_received) if sample.bytes_received > 0 else None
    return None


def first_token(sample: Sample) -> float | None:
    """Seconds to the first answer delta of a successful streamed call, or None."""
    return sample.timings.first_token if sample.ok else None


def per_token(sample: Sample) -> float | None:
    """Seconds per output token after the first, or None (not a stream, fewer than 2 tokens)."""
    if not sample.ok or sample.latency is None:
        return None
    start = sample.timings.first_event or sample.timings.first_token
    tokens = _tokens(sample)
    if start is None or tokens is None or tokens < 2 or sample.latency < start:
        return None
    return (sample.latency - start) / (tokens - 1)


@dataclass(frozen=True)
class Work:
    """The successful calls of one kind, with their latencies and covariates (the length, and
    for burst calls the burst's mean length)."""

    latencies: list[float]
    covariates: list[tuple[float, ...]]


def work_of(
    samples: Sequence[Sample], phase: CallPhase, unit: str | None, concurrency: int
) -> Work:
    """The successful calls of `phase` that have a length in `unit`, with their covariates.
    Calls of a burst are grouped by their index (`concurrency` a burst, as the engine numbers
    them) and get their burst's mean length beside their own."""
    calls = [
        s for s in samples if s.phase is phase and s.ok and s.latency is not None and s.latency > 0
    ]
    lengths = [length(s, unit) for s in calls]
    kept = [(s, n) for s, n in zip(calls, lengths, strict=True) if n is not None]
    if phase is not CallPhase.CONCURRENT or concurrency < 2:
        return Work([s.latency or 0.0 for s, _ in kept], [(n,) for _, n in kept])
    bursts: dict[int, list[float]] = {}
    for s, n in kept:
        bursts.setdefault(s.index // concurrency, []).append(n)
    means = {b: sum(v) / len(v) for b, v in bursts.items()}
    return Work(
        [s.latency or 0.0 for s, _ in kept],
        [(n, means[s.index // concurrency]) for s, n in kept],
    )


def _solve(matrix: list[list[float]], vector: list[float]) -> list[float] | None:
    """Gaussian elimination with partial pivoting; None for a singular system."""
    size = len(vector)
    rows = [[*matrix[i], vector[i]] for i in range(size)]
    for col in range(size):
        pivot = max(range(col, size), key=lambda r: abs(rows[r][col]))
        if abs(rows[pivot][col]) < 1e-12 * max(1.0, abs(rows[col][col])):
            return None
        rows[col], rows[pivot] = rows[pivot], rows[col]
        for r in range(col + 1, size):
            factor = rows[r][col] / rows[col][col]
            for c in range(col, size + 1):
                rows[r][c] -= factor * rows[col][c]
    out = [0.0] * size
    for r in range(size - 1, -1, -1):
        out[r] = (rows[r][size] - sum(rows[r][c] * out[c] for c in range(r + 1, size))) / rows[r][r]
    return out


def _standardise(columns: list[list[float]]) -> list[list[float]]:
    """Each column centred and scaled to unit spread (a column that does not vary is dropped):
    the normal equations stay well conditioned whatever the units."""
    out = []
    for column in columns:
        mean = sum(column) / len(column)
        spread = (sum((v - mean) ** 2 for v in column) / len(column)) ** 0.5
        if spread > 1e-12 * max(1.0, abs(mean)):
            out.append([(v - mean) / spread for v in column])
    return out


def fit(latencies: Sequence[float], covariates: Sequence[tuple[float, ...]]) -> list[float]:
    """Each call's predicted latency: the least-squares line of latency on its covariates
    (dropping a covariate that does not vary, and the last ones when the rest explain it), held
    at or above a tenth of the shortest latency."""
    n = len(latencies)
    if n == 0:
        return []
    width = len(covariates[0]) if covariates else 0
    columns = _standardise([[row[k] for row in covariates] for k in range(width)])
    floor = _FLOOR_SHARE * min(latencies)
    mean = sum(latencies) / n
    while columns:
        design = [[1.0] * n, *columns]
        gram = [[sum(a * b for a, b in zip(x, y, strict=True)) for y in design] for x in design]
        moment = [sum(a * b for a, b in zip(x, latencies, strict=True)) for x in design]
        beta = _solve(gram, moment)
        if beta is not None:
            return [
                max(floor, sum(beta[k] * design[k][i] for k in range(len(design))))
                for i in range(n)
            ]
        columns = columns[:-1]
    return [mean] * n


def adjusted(
    head: Work, base: Work, *, scale: float = 1.0, shift: float = 0.0
) -> tuple[list[float], list[float], float]:
    """Each call's latency over what its work predicts, head's first brought back by the limit
    (divided by `scale`, less `shift`), the line fitted through both arms' calls together (so
    the two arms are treated alike: under "head is base brought back by the limit" the ratios
    are exchangeable); and the prediction at the calls' mean work, by which the ratios are
    multiplied so that they read in seconds (a difference of them is in seconds too)."""
    brought = [v / scale - shift for v in head.latencies]
    pool = [*brought, *base.latencies]
    positive = [v for v in pool if v > 0]
    if not positive:
        return [], [], 1.0
    lowest = min(positive)
    pool = [max(v, lowest * 1e-3) for v in pool]
    predicted = fit(pool, [*head.covariates, *base.covariates])
    typical = sum(predicted) / len(predicted)
    ratios = [typical * v / p for v, p in zip(pool, predicted, strict=True)]
    cut = len(brought)
    return ratios[:cut], ratios[cut:], typical


def pairs(
    head: Sequence[Sample], base: Sequence[Sample], value: Callable[[Sample], float | None]
) -> list[tuple[float, float]]:
    """(head's, base's) `value` of the calls that got the same prompt in an A/B run: the i-th
    call of a kind on each arm (measure/engine.py gives them the same mark), both with a value.
    The cold calls are left out (one each, with their handshakes)."""
    by_key = {
        (s.phase, s.index): v
        for s in base
        if s.phase is not CallPhase.COLD and (v := value(s)) is not None
    }
    out = []
    for s in head:
        if s.phase is CallPhase.COLD:
            continue
        other = by_key.get((s.phase, s.index))
        mine = value(s)
        if other is not None and mine is not None:
            out.append((mine, other))
    return out


def fixed_length_finding(samples: Sequence[Sample], asked: int) -> Finding:
    """Whether the server answered every call with the `asked` tokens (--fixed-length), said
    either way: a server that ignores ignore_eos answers at its own lengths, and the run then
    measures answers of varied length (compared at the same work all the same)."""
    lengths = sorted(
        s.tokens for s in samples if s.ok and s.phase is not CallPhase.COLD and s.tokens is not None
    )
    if not lengths:
        return Finding(
            code="fixed_length_unknown",
            title="Fixed length: no answer counted its tokens",
            evidence=f"{asked} tokens were asked of every answer; no successful call counted its "
            "output tokens, so whether the server obliged cannot be told",
            hint="Stream the answers (--stream), or ask the server for its usage counts",
        )
    exact = sum(n == asked for n in lengths)
    if exact == len(lengths):
        return Finding(
            code="fixed_length",
            title="Fixed length honoured",
            evidence=f"every one of the {len(lengths):,} answers had the {asked} tokens asked: "
            "the calls did the same work",
            hint="Times per call compare as they are; the same work needs no adjusting",
        )
    middle = lengths[len(lengths) // 2]
    return Finding(
        code="fixed_length_ignored",
        title="Fixed length not honoured",
        evidence=f"{exact:,} of {len(lengths):,} answers had the {asked} tokens asked; the others "
        f"ran from {lengths[0]:,} to {lengths[-1]:,} tokens (median {middle:,}): the server "
        "does not take ignore_eos and min_tokens, or caps the length itself",
        hint="The run measured answers of varied length; a comparison is made at the same work "
        "all the same (docs/statistics.md)",
    )
