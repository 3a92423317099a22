"""The one exception tree. The CLI and the action translate it once, at their edge."""

from __future__ import annotations

import errno
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum


class LatencyGateError(Exception):
    """Base of every error latency-gate raises on purpose."""


@dataclass(frozen=True)
class InputProblem:
    """One bad input: which input (as the user spelled it) and what was expected."""

    name: str
    message: str

    def __str__(self) -> str:
        return f"{self.name}: {self.message}"


class ConfigError(LatencyGateError):
    """Bad input or configuration; nothing was measured. Exit code 2."""

    def __init__(self, problems: Sequence[InputProblem]) -> None:
        self.problems = tuple(problems)
        super().__init__(self.render())

    @classmethod
    def single(cls, name: str, message: str) -> ConfigError:
        return cls([InputProblem(name, message)])

    def render(self) -> str:
        if len(self.problems) == 1:
            return f"invalid input {self.problems[0]}"
        lines = [f"{len(self.problems)} invalid inputs:"]
        lines += [f"  - {problem}" for problem in self.problems]
        return "\n".join(lines)


class GitHubError(LatencyGateError):
    """A GitHub API call failed. Never changes the verdict; becomes a warning."""

    def __init__(self, message: str, status: int | None = None) -> None:
        self.status = status
        super().__init__(message)


class ExitCode(IntEnum):
    """The exit codes of the CLI and the action alike (README, "Exit codes")."""

    PASS = 0  # every gated number within budget
    BREACH = 1  # budget breached, no data, interrupted, or a regression against the baseline
    BAD_INPUT = 2  # bad input or configuration: nothing was measured
    BUG = 3  # the gate itself failed


BUG_MESSAGE = (
    "latency-gate failed: this is a bug in latency-gate, not in your endpoint. "
    "Please report it on the project's issue tracker with this message."
)


class MachineLimitError(LatencyGateError):
    """The machine running the gate ran out of something (open files, memory): the gate's
    problem, not the endpoint's. Exit code 2, with what to change."""


MACHINE_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM})


def machine_limit_message(what: str) -> str:
    """The one message for a machine limit met during a run."""
    return (
        f"latency-gate ran out of {what} on this machine, which is not the endpoint's failure: "
        "lower --concurrency, or raise the limit (ulimit -n for open files)"
    )
