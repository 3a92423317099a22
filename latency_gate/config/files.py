"""The one place below the edges that reads a file: the input files a user names.

A request body given as `@path` and a targets file are inputs, so the config layer reads them
while it validates (their errors then name the input like every other bad value). Nothing else
under latency_gate/ but the edges (cli, action, run) opens a file; tests/test_layers.py checks it.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["input_file", "read_input_file"]


def read_input_file(path: Path, what: str = "") -> str:
    """The UTF-8 text of a file the user named; ValueError says why it cannot be read
    ("cannot read {what}{path}: why", `what` such as "body file ")."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ValueError(f"cannot read {what}{str(path)!r}: {reason}") from None


def input_file(text: str, base_dir: Path | None) -> str:
    """The path of a file the user named (relative to `base_dir`); ValueError when there is no
    readable file there."""
    path = Path(text).expanduser()
    if base_dir is not None and not path.is_absolute():
        path = base_dir / path
    if not path.is_file():
        raise ValueError(f"no readable file at {str(path)!r}")
    return str(path)
