"""The calls a clean PASS spends for every first look of --warm-calls 1-20 and --concurrency
1-10, held against the defaults' (docs/benchmarks.md, "What a run costs").

    python bench/first_look_calls.py

No endpoint: the gate's own looks (assess/budget/gate.py, assess/budget/sampling.py) are fed calls
that all succeed at 50 ms, as a clean endpoint answers, until it stops; the calls it asked for are
counted.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from result_factory import ok_sample

from latency_gate.assess.result import gate_for
from latency_gate.config import build_target
from latency_gate.models import CallPhase, Sample


def _calls(phase: CallPhase, first: int, count: int) -> list[Sample]:
    return [ok_sample(phase, first + i, 0.05) for i in range(count)]


def calls_of_a_clean_pass(warm: int, concurrency: int) -> int:
    """The calls the gate takes before it stops, every call a success well within budget."""
    target = build_target(
        {"url": "http://127.0.0.1/", "warm-calls": str(warm), "concurrency": str(concurrency)}
    )
    gate = gate_for(target)
    samples = [
        *_calls(CallPhase.COLD, 0, 1),
        *_calls(CallPhase.WARM, 0, warm),
        *_calls(CallPhase.CONCURRENT, 0, concurrency),
    ]
    while not (step := gate.look(samples)).stop:
        made = {phase: sum(s.phase is phase for s in samples) for phase in CallPhase}
        samples += _calls(CallPhase.WARM, made[CallPhase.WARM], step.warm_calls)
        samples += _calls(
            CallPhase.CONCURRENT, made[CallPhase.CONCURRENT], step.bursts * concurrency
        )
    return len(samples)


def main() -> int:
    default = calls_of_a_clean_pass(20, 10)
    spent = {(w, c): calls_of_a_clean_pass(w, c) for w in range(1, 21) for c in range(1, 11)}
    over = {key: calls for key, calls in spent.items() if calls > default}
    print(f"defaults (20 warm, bursts of 10): {default} calls")
    kept = len(spent) - len(over)
    print(f"{kept} of {len(spent)} first looks (1-20 warm, 1-10 at once) spend no more")
    for (warm, concurrency), calls in sorted(over.items()):
        print(f"  --warm-calls {warm} --concurrency {concurrency}: {calls}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
