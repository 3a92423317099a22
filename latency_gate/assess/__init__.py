"""Judging: pure functions from samples to numbers, intervals, checks, the verdict and findings.

No I/O, no numpy or scipy at run time (start-up time matters). docs/statistics.md explains the
statistical methods and carries the simulated error rates that justify their defaults.

Rooms by question, each standing only on the ones below it (import-linter checks the order):

- result, verdict, rejudge (here): a run judged once; PASS or FAIL; a file's run judged again
- findings/: what in the samples explains the numbers
- load/: how much load does it hold (calls at once, requests a second)
- budget/: does the run hold its budget, look by look
- compare/: did it get worse than a base, an earlier run or a history
- numbers/: what was measured, as numbers
- maths/: the maths, with no latency in it
"""
