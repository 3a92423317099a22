"""A load search, written once: given the levels tried so far, which level next, or none.

The shape of guidellm's profiles and k6's executors: one base asks the one question, and each
way of loading an endpoint is a small strategy answering it.

- `LoadSearch`: the question alone, levels in (`record`: a level and whether it held, broke or
  was near the budget), the next level out (`next_level`, None when the search is over), and
  the figure so far (`found`). The strategies: `at_once.CapacitySearch` (calls at once:
  config/search.py's order, doubling then bisecting in whole calls) and
  `per_second.RateSearch` (requests a second: doubling or halving, then the geometric middle).
- `LoadRun`: what a run's search keeps whatever its load: the judged levels, the calls and
  seconds they took, why the search stopped and whether a cap cut it; `interrupt` stops it
  where it is. The strategies' runs drive their levels with calls as the engine makes them:
  closed bursts (`at_once.CapacityRun`) or open-loop arrivals (`per_second.RateRun`).

Every level of either is judged by the same test (levels.py: held, broke or near the budget).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from latency_gate.assess.load.levels import LevelLimits
from latency_gate.config.plan.search import LevelOutcome

__all__ = ["Judged", "LoadRun", "LoadSearch", "outcome_of"]

N = TypeVar("N", int, float)
L = TypeVar("L")
P = TypeVar("P")


class Judged(Protocol):
    """A judged level as a result file keeps it (models.CapacityLevel, models.RateLevel)."""

    @property
    def held(self) -> bool: ...
    @property
    def near(self) -> bool: ...


def outcome_of(level: Judged) -> LevelOutcome:
    """A judged level's outcome: held, near (the budget) or broke."""
    return "held" if level.held else "near" if level.near else "broke"


class LoadSearch(ABC, Generic[N]):
    """Which level to try next, from the levels tried so far: the one question of a search."""

    tried: list[tuple[N, LevelOutcome]]

    def record(self, level: N, outcome: LevelOutcome) -> None:
        """A level judged: held, near the budget or broke."""
        self.tried.append((level, outcome))

    @abstractmethod
    def next_level(self) -> N | None:
        """The level to try next, or None when the search is over."""

    @property
    @abstractmethod
    def found(self) -> N:
        """The figure so far: the highest level that held below the lowest that broke (0:
        none held)."""

    @property
    def over(self) -> bool:
        """Whether the levels tried settle the search: no level is left to try."""
        return self.next_level() is None


@dataclass
class LoadRun(Generic[L, P]):
    """A run's search as it goes: `limits` every level is held to, the judged levels (`L`) in
    the order tried, the level in progress (`P`, None between levels), the calls and seconds
    the levels took, why the search stopped ("" while it goes on) and whether a cap (max-calls,
    goodput-time) cut it."""

    limits: LevelLimits
    levels: list[L] = field(default_factory=list, kw_only=True)
    current: P | None = field(default=None, kw_only=True)
    calls: int = field(default=0, kw_only=True)
    seconds: float = field(default=0.0, kw_only=True)
    stopped: str = field(default="", kw_only=True)
    cut_by_cap: bool = field(default=False, kw_only=True)

    def interrupt(self, why: str = "the run was interrupted") -> None:
        """Stop where the search is: a level in progress is dropped (not judged)."""
        if not self.stopped:
            self.stopped = why
            self.current = None

    def left_open(self, search: LoadSearch[N]) -> bool:
        """Whether the search stopped with levels still to try (its figure is "at least")."""
        return self.cut_by_cap or (bool(self.stopped) and not search.over)
