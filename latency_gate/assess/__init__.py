"""Judging: pure functions from samples to numbers, intervals, checks, the verdict, findings,
and the sequential sampling plan.

No I/O, no numpy or scipy at run time (start-up time matters). docs/statistics.md explains the
statistical methods and carries the simulated error rates that justify their defaults.
"""
