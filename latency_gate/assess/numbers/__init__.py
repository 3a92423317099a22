"""What was measured, as numbers: percentiles and summaries (stats), one call's timeline
(timeline) and the work a call did (work: its answer's length, its latency at a common work).
"""
