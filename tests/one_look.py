"""One look: the sampling settings of tests that pin call counts.

A run samples in looks: after the first (1 cold call, the warm calls, one burst) it takes more
calls while a check is still undecided (latency_gate/assess/budget/sampling.py). Most tests pin how
many calls a run makes, or what befalls each call, so they cap the calls at the first look and
let a check still undecided there pass. Sequential sampling has tests of its own in
tests/test_assess_*.py.
"""

from __future__ import annotations


def one_look(calls: int) -> dict[str, str]:
    """Action inputs, targets-file keys or `build_target` settings for one look of `calls` calls.

    `calls` is the cap the report names ("cap N calls"): the first look's own calls (1 cold +
    warm calls + one burst), since a cap is never spent past (a smaller one is refused before
    any call when the counts are given, config/plan/needs.py fit_first_look).
    """
    return {"max-calls": str(calls), "on-undecided": "pass"}


def one_look_args(calls: int) -> tuple[str, ...]:
    """The same as `latency-gate probe` options."""
    return tuple(part for key, value in one_look(calls).items() for part in (f"--{key}", value))


# A run capped under what its checks can need says so (config/plan/); tests that pin one look
# take that warning as given.
CAP_WARNING = "max-calls "


def other_warnings(warnings: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The warnings of a run but the one about its small cap."""
    return tuple(w for w in warnings if not w.startswith(CAP_WARNING))
