"""latency-gate: a CI gate for the latency that users feel."""

__version__ = "0.1.0"

__all__ = ["__version__"]
