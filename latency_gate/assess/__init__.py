"""Pure assessment: samples' numbers in, intervals, decisions and the sampling plan out.

No I/O, no numpy or scipy at run time (start-up time matters). docs/statistics.md explains the
methods and carries the simulated error rates that justify their defaults.
"""
