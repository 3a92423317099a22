"""The maths, with no latency in it: exact binomial bounds, Student's t, the sequential
probability ratio test, permutation deals and the intervals built from them.

Pure Python (no numpy or scipy at run time: start-up time, docs/benchmarks.md). Every other
room of assess/ stands on this one; it imports none of them.
"""
