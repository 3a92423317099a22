"""Judging: pure functions from samples to numbers, intervals, checks, the verdict, findings."""
