"""Did it get worse than before: the regression tests (regression, judged), the head held against
a reference number by number, with what cannot be compared said once (reference), against a base
endpoint or an earlier run (baseline), against a history (history, creep), at the same work
(same_work), and targets side by side (cheapest).
"""
