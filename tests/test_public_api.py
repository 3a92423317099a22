"""The package's public surface: what `import latency_gate` promises."""

from __future__ import annotations

import latency_gate


def test_all_is_sorted() -> None:
    """__all__ stays sorted, so additions are easy to review."""
    assert latency_gate.__all__ == sorted(latency_gate.__all__)


def test_every_public_name_exists() -> None:
    """Each name in __all__ is importable from the package."""
    missing = [name for name in latency_gate.__all__ if not hasattr(latency_gate, name)]
    assert missing == []


def test_version_matches_the_package_metadata() -> None:
    """The version the CLI prints is the one the package was built with."""
    from importlib.metadata import version

    assert latency_gate.__version__ == version("latency-gate")
