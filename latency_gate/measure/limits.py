"""The machine's own limits, checked before a run: a burst needs an open file per connection.

A run that meets EMFILE half way through would count the machine's limit as the endpoint's
failure; so the soft open-files limit is raised as far as the hard one allows, and a
`concurrency` (or, with `--capacity`, a `capacity-max`: the largest burst the search may make)
that still does not fit is refused before the first call.
"""

from __future__ import annotations

import resource
from collections.abc import Callable, Sequence

from latency_gate.config import Target
from latency_gate.config.plan.levels import RATE_IN_FLIGHT
from latency_gate.errors import ConfigError, InputProblem

__all__ = ["SPARE_FILES", "check_open_files", "largest_burst"]

# Files the process holds besides the burst's sockets: the interpreter, the floor's server and
# its clients, the warm client, the log.
SPARE_FILES = 64


def largest_burst(target: Target) -> tuple[int, str]:
    """The most calls a run of `target` has in flight at once, and the setting that says so
    (calls at a rate: at most RATE_IN_FLIGHT, a connection each)."""
    most, key = target.concurrency, "concurrency"
    if target.capacity and target.capacity_max > most:
        most, key = target.capacity_max, "capacity-max"
    rated = target.rate is not None or target.goodput
    if rated and most < RATE_IN_FLIGHT:
        most, key = RATE_IN_FLIGHT, "rate" if target.rate is not None else "goodput"
    return most, key


def check_open_files(
    targets: Sequence[Target],
    spelled: Callable[[Target, str], str] = lambda target, key: key,
) -> None:
    """Raise the soft RLIMIT_NOFILE toward what the largest burst needs; ConfigError naming
    each target whose `concurrency` (or `capacity-max`) still does not fit."""
    needed = max(largest_burst(target)[0] for target in targets) + SPARE_FILES
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        raised = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            soft = raised
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY:
        return
    problems = [
        InputProblem(
            spelled(target, key),
            f"{burst} concurrent calls need about {burst + SPARE_FILES} open files, but this "
            f"machine allows {soft} (ulimit -n); lower it, or raise the limit",
        )
        for target in targets
        for burst, key in [largest_burst(target)]
        if burst + SPARE_FILES > soft
    ]
    if problems:
        raise ConfigError(problems)
