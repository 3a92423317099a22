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
  squares line whose slopes are fitted within each arm's calls of one kind (an intercept per
  arm, the slopes shared), put through both arms' calls (for calls of a burst, on the call's own
  length and its burst's mean length, since a call that waited for a slot waited for the others'
  answers). Under "the same speed" those ratios are alike on both arms whatever the answers'
  lengths, so a test of their percentile is a test of the latency at the same work; and since
  the slopes are not fitted on the arms' difference, a head slower on every call is slower at
  the same work whatever its answers' length. Where longer answers are not slower within the
  arms (no positive slope) the calls are compared as they are.

docs/statistics.md ("Regressions at the same work") says why, with the simulations.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from latency_gate.models import CallPhase, Finding, Sample

__all__ = [
    "Work",
    "adjusted",
    "comparable",
    "first_token",
    "fixed_length_finding",
    "length",
    "length_unit",
    "overlap",
    "pairs",
    "per_token",
    "within_fit",
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


def within_fit(
    latencies: Sequence[float], covariates: Sequence[tuple[float, ...]], arms: Sequence[int]
) -> list[float] | None:
    """Each call's predicted latency on a line whose slopes are fitted within the arms (each
    arm's calls about their own means: a slope shared by the arms, an intercept per arm), put
    through the pooled calls' mean, held at or above a tenth of the shortest latency. None when
    the calls cannot give the line a length slope above zero (no length varies within an arm,
    or longer answers are not slower): there is no length to hold the latency to.

    Why within the arms: a line through both arms' calls together is also fitted on the arms'
    difference, so where their lengths differ it reads a change of speed as the length's (a
    head twice as slow with answers 86 % shorter gave that line a negative slope and the head
    a latency at the same work equal to its base's). The slopes within the arms do not depend
    on the arms' own levels, so the head's level against the base's is left to the test."""
    n = len(latencies)
    if n == 0 or not covariates:
        return None
    width = len(covariates[0])
    groups: dict[int, list[int]] = {}
    for i, arm in enumerate(arms):
        groups.setdefault(arm, []).append(i)
    centred_y = [0.0] * n
    columns = [[0.0] * n for _ in range(width)]
    for members in groups.values():
        mean_y = sum(latencies[i] for i in members) / len(members)
        for i in members:
            centred_y[i] = latencies[i] - mean_y
        for k in range(width):
            mean_x = sum(covariates[i][k] for i in members) / len(members)
            for i in members:
                columns[k][i] = covariates[i][k] - mean_x
    spreads = [(sum(v * v for v in column) / n) ** 0.5 for column in columns]
    scale = max((abs(row[k]) for row in covariates for k in range(width)), default=1.0) or 1.0
    kept = [k for k in range(width) if spreads[k] > 1e-9 * scale]
    while kept and kept[0] == 0:
        design = [[columns[k][i] / spreads[k] for i in range(n)] for k in kept]
        gram = [[sum(a * b for a, b in zip(x, y, strict=True)) for y in design] for x in design]
        moment = [sum(a * b for a, b in zip(x, centred_y, strict=True)) for x in design]
        beta = _solve(gram, moment)
        if beta is None:
            kept = kept[:-1]
            continue
        slopes = {k: b / spreads[k] for k, b in zip(kept, beta, strict=True)}
        if slopes[0] <= 0:
            return None
        mean_y = sum(latencies) / n
        means = {k: sum(row[k] for row in covariates) / n for k in kept}
        floor = _FLOOR_SHARE * min(latencies)
        return [
            max(floor, mean_y + sum(slopes[k] * (row[k] - means[k]) for k in kept))
            for row in covariates
        ]
    return None


# The arms' lengths overlap when at least this share of each arm's calls (and 2) lie within the
# other arm's range of lengths: elsewhere the latency at the same work is an extrapolation.
_OVERLAP_SHARE = 0.1


def overlap(head: Work, base: Work) -> bool:
    """Whether the arms' answers overlap in length: at least a tenth of each arm's calls (and 2)
    within the other's range of lengths (the call's own, the first covariate)."""

    def inside(calls: Work, other: Work) -> bool:
        if not calls.covariates or not other.covariates:
            return False
        low = min(row[0] for row in other.covariates)
        high = max(row[0] for row in other.covariates)
        within = sum(low <= row[0] <= high for row in calls.covariates)
        return within >= max(2, _OVERLAP_SHARE * len(calls.covariates))

    return inside(head, base) and inside(base, head)


def comparable(head: Work, base: Work) -> bool:
    """Whether the two arms' calls can be compared at the same work: their lengths overlap and,
    within the arms, longer answers are slower (`within_fit` finds a positive slope). Else a
    latency at the same work would be an extrapolation, or a line that reads a change of speed
    as the length's, and the calls are compared as they are."""
    if not overlap(head, base):
        return False
    arms = [0] * len(head.latencies) + [1] * len(base.latencies)
    found = within_fit(
        [*head.latencies, *base.latencies], [*head.covariates, *base.covariates], arms
    )
    return found is not None


def adjusted(
    head: Work, base: Work, *, scale: float = 1.0, shift: float = 0.0
) -> tuple[list[float], list[float], float]:
    """Each call's latency over what its work predicts, head's first brought back by the limit
    (divided by `scale`, less `shift`), the line's slopes fitted within the arms and put through
    both arms' calls together (`within_fit`: the two arms are treated alike, so under "head is
    base brought back by the limit" the ratios are exchangeable, and a head slower on every
    call stays slower whatever its answers' length); and the prediction at the calls' mean
    work, by which the ratios are multiplied so that they read in seconds (a difference of them
    is in seconds too). Where the line has no positive length slope the calls are returned as
    they are: the whole-call test."""
    brought = [v / scale - shift for v in head.latencies]
    pool = [*brought, *base.latencies]
    positive = [v for v in pool if v > 0]
    if not positive:
        return [], [], 1.0
    lowest = min(positive)
    pool = [max(v, lowest * 1e-3) for v in pool]
    arms = [0] * len(brought) + [1] * len(base.latencies)
    predicted = within_fit(pool, [*head.covariates, *base.covariates], arms)
    if predicted is None:
        cut = len(brought)
        return pool[:cut], pool[cut:], sum(pool) / len(pool)
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
