"""How much load does it hold: the searches for the most calls at once and the highest request
rate whose p95 holds the budget, their levels, their rows of the verdict and their sentences.
"""
