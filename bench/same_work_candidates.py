"""Which test of "the same work": the spread of each candidate's log ratio head / base of a p95,
on simulated LLM arms that are alike (issue 26, docs/statistics.md "At the same work").

    python bench/same_work_candidates.py

A prototype in numpy, used to choose (not the shipped code: the shipped test's figures are
table k, from bench/llmsim.py through the gate). Per arm: warm calls whose answers have a
lognormal length, a first token of 47 ms and 8.25 ms a token (each lognormal per call, as fitted
to bench/data/llama_shape.json); bursts of 10 on 2 slots, first come first served, 1.3 x the
time per token. Printed: the standard deviation over 300 pairs of ln(p95 head / p95 base) for

- raw_w, raw_c: the calls as they are (warm, burst): the statistic of the test before;
- s1_w, s1_c: each call's latency over a least-squares line on its own length, fitted through
  both arms' calls of that kind;
- s2_c: the same with the burst's mean length as a second covariate (burst calls);
- tpot, ttft: the medians of the time per token and of the first token (warm);
- length: the mean of the pairs' log length ratios;

for rho 0 (two answers to one prompt of independent lengths) and 1 (of one length), at 100 and
200 warm calls a side (10 and 20 bursts). A test decides "within 10 %" at a look when its
estimate plus about two of these is under ln(1.1) = 0.095.
"""

from __future__ import annotations

from typing import Any

import numpy as np

FIRST, PER, SLOTS, BATCHED = 0.047, 0.00825, 2, 1.3
SHAPES = ((0.85, 38, 96), (0.6, 40, 1024), (1.0, 40, 1024))  # sigma, median, max_tokens
rng = np.random.default_rng(1)


def lengths(shared: Any, shape: tuple[float, int, int], rho: float) -> Any:
    sigma, median, cap = shape
    own = rho * shared + np.sqrt(1 - rho**2) * rng.standard_normal(len(shared))
    return np.clip(np.round(median * np.exp(sigma * own)), 1, cap)


def warm(n: Any) -> tuple[Any, Any]:
    first = FIRST * np.exp(0.15 * rng.standard_normal(len(n)))
    per = PER * np.exp(0.07 * rng.standard_normal(len(n)))
    return first, first + (n - 1) * per


def burst(n: Any) -> tuple[Any, Any]:
    free = np.zeros(SLOTS)
    latency, first = np.empty(len(n)), np.empty(len(n))
    prefill = FIRST * np.exp(0.15 * rng.standard_normal(len(n)))
    per = PER * BATCHED * np.exp(0.07 * rng.standard_normal(len(n)))
    for i in range(len(n)):
        slot = int(np.argmin(free))
        start = free[slot]
        free[slot] = start + prefill[i] + (n[i] - 1) * per[i]
        latency[i], first[i] = free[slot], start + prefill[i]
    return first, latency


def arm(shared_w: Any, shared_b: Any, shape: tuple[float, int, int], rho: float) -> dict[str, Any]:
    n_w, n_b = lengths(shared_w, shape, rho), lengths(shared_b, shape, rho)
    first_w, lat_w = warm(n_w)
    bursts = [burst(n_b[i : i + 10]) for i in range(0, len(n_b), 10)]
    lat_b = np.concatenate([latency for _, latency in bursts])
    return {"n_w": n_w, "lat_w": lat_w, "first_w": first_w, "n_b": n_b, "lat_b": lat_b}


def p95(x: Any) -> float:
    return float(np.percentile(x, 95))


def adjusted(latency: Any, design: Any) -> Any:
    coef, *_ = np.linalg.lstsq(design, latency, rcond=None)
    return latency / np.maximum(design @ coef, 1e-3)


def pair(
    warm_calls: int, bursts: int, shape: tuple[float, int, int], rho: float
) -> dict[str, float]:
    shared_w, shared_b = rng.standard_normal(warm_calls), rng.standard_normal(bursts * 10)
    h, b = arm(shared_w, shared_b, shape, rho), arm(shared_w, shared_b, shape, rho)
    out = {
        "raw_w": np.log(p95(h["lat_w"]) / p95(b["lat_w"])),
        "raw_c": np.log(p95(h["lat_b"]) / p95(b["lat_b"])),
    }
    n = np.concatenate([h["n_w"], b["n_w"]])
    r = adjusted(np.concatenate([h["lat_w"], b["lat_w"]]), np.vstack([np.ones_like(n), n]).T)
    out["s1_w"] = np.log(p95(r[:warm_calls]) / p95(r[warm_calls:]))
    n = np.concatenate([h["n_b"], b["n_b"]])
    latency = np.concatenate([h["lat_b"], b["lat_b"]])
    m = len(h["n_b"])
    r = adjusted(latency, np.vstack([np.ones_like(n), n]).T)
    out["s1_c"] = np.log(p95(r[:m]) / p95(r[m:]))
    means = np.repeat(n.reshape(-1, 10).mean(1), 10)
    r = adjusted(latency, np.vstack([np.ones_like(n), n, means]).T)
    out["s2_c"] = np.log(p95(r[:m]) / p95(r[m:]))

    def per_token(a: dict[str, Any]) -> Any:
        return (a["lat_w"] - a["first_w"]) / np.maximum(a["n_w"] - 1, 1)

    out["tpot"] = np.log(np.median(per_token(h)) / np.median(per_token(b)))
    out["ttft"] = np.log(np.median(h["first_w"]) / np.median(b["first_w"]))
    d = np.log(np.concatenate([h["n_w"], h["n_b"]])) - np.log(np.concatenate([b["n_w"], b["n_b"]]))
    out["length"] = float(d.mean())
    return out


def main() -> None:
    for shape in SHAPES:
        for rho in (1.0, 0.0):
            for warm_calls, bursts in ((100, 10), (200, 20)):
                runs = [pair(warm_calls, bursts, shape, rho) for _ in range(300)]
                spread = " ".join(f"{k} {np.std([r[k] for r in runs]):.3f}" for k in runs[0])
                print(
                    f"sigma {shape[0]} cap {shape[2]} rho {rho:g} "
                    f"{warm_calls}+{bursts}x10: {spread}"
                )


if __name__ == "__main__":
    main()
