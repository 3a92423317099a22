"""How much load does it hold: one search, two ways of loading, every level judged by one test.

- search.py: the question a search asks, "given the levels so far, which level next, or none"
  (`LoadSearch`), and what a run's search keeps whatever its load (`LoadRun`);
- at_once.py: calls at once, closed bursts (`CapacitySearch`, `CapacityRun`: the capacity);
- per_second.py: requests a second, open-loop arrivals (`RateSearch`, `RateRun`: the goodput);
- levels.py: one level, whatever its load: its limits, its calls, the level test (held, broke
  or near the budget); open_level.py: a level at a rate, judged from its calls as they end;
- verdict.py: the figure as rows of the verdict; regression.py: against a base;
- said.py: each level in words; headline.py: the figure in one sentence;
- replay.py: a result file's levels judged again from their own calls (assess/rejudge.py).
"""
