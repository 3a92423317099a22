"""latency-gate: a CI gate for the latency that users feel.

The library works without the CLI: build a `Target` (or parse one with `build_target`), run
`probe(target)` in an event loop, and read the `RunResult`'s numbers and verdict.
"""

from latency_gate.config import Budget, Format, Target, build_target
from latency_gate.errors import ConfigError, InputProblem, LatencyGateError
from latency_gate.models import Numbers, RunResult, Sample, Verdict
from latency_gate.run import probe
from latency_gate.version import __version__

__all__ = [
    "Budget",
    "ConfigError",
    "Format",
    "InputProblem",
    "LatencyGateError",
    "Numbers",
    "RunResult",
    "Sample",
    "Target",
    "Verdict",
    "__version__",
    "build_target",
    "probe",
]
