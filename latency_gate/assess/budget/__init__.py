"""Does the run hold its budget: each budget check at a look (checks), failures that come in
clumps (clumps), the looks and the calls to take next (sampling), each gated number by itself
(gated), the gated checks of one run (gate) and what an outcome means in words (meaning).
"""
