"""Did it get worse than before: the regression tests (regression, judged), the head against a
base endpoint or an earlier run (baseline), against a history (history, creep), at the same
work (same_work), and targets side by side (cheapest).
"""
