"""The version, in a module of its own so that nothing imports it back from the package."""

__version__ = "0.1.0"
