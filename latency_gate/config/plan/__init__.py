"""What a run will spend, worked out before its first call: what a budget means in calls
(hypotheses), a level's length and cost (levels), the searches' order and worst case (search),
the calls a run needs and the cap it works under (needs), and what no run could decide or the
reports must say of the cap (feasible).

Each module imports only the ones before it in that list. Nothing here judges calls: the judging
layer (assess/) and the edges read these rules, so a target's `max-calls` is held against what
its checks and searches can need before the first call.
"""
