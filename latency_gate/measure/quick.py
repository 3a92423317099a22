"""`latency-gate quick URL`: the three-call check for people without a pipeline (the calls).

Three calls, each on a new connection as curl makes them, each with its own prompt (a nonce added
to the last user message) so no cache answers them; each shown with curl -w style cumulative
phases and the first token; then the curl command line that reproduces one call by hand, with
every secret elided.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from pydantic import SecretStr

from latency_gate.config import Target
from latency_gate.measure.calls import call
from latency_gate.measure.clients import ClientKit, ssl_context_for
from latency_gate.measure.prompts import vary_body
from latency_gate.models import CallPhase, Sample

CALLS = 3


@dataclass(frozen=True)
class QuickCall:
    """One of the three calls: what was sent (its prompt mark) and what the probe measured."""

    number: int
    varied: bool
    sample: Sample


@dataclass(frozen=True)
class QuickResult:
    """The three calls against one target, and the first call's target (its varied prompt),
    which the report turns into the curl line to repeat it by hand."""

    target: Target
    calls: tuple[QuickCall, ...]
    first_target: Target

    @property
    def passed(self) -> bool:
        return all(c.sample.ok for c in self.calls)


async def quick(target: Target, *, calls: int = CALLS, kernel_stamps: bool = True) -> QuickResult:
    """Make `calls` calls, one after another, each on a new connection with its own prompt."""
    context = ssl_context_for(target)
    done: list[QuickCall] = []
    first_target = target
    for number in range(1, calls + 1):
        body, varied = vary_body(target, secrets.token_hex(3))
        one = target if body is None else target.model_copy(update={"body": SecretStr(body)})
        if number == 1:
            first_target = one
        async with ClientKit(one, kernel_stamps, context).client() as (client, _):
            sample = await call(client, one, CallPhase.COLD, number - 1)
        done.append(QuickCall(number=number, varied=varied, sample=sample))
    return QuickResult(target=target, calls=tuple(done), first_target=first_target)
