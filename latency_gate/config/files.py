"""The one place below the edges that reads a file: the input files a user names.

A request body given as `@path` and a targets file are inputs, so the config layer reads them
while it validates (their errors then name the input like every other bad value). Nothing else
under latency_gate/ but the edges (cli, action, run) opens a file; tests/test_layers.py checks it.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["MAX_INPUT_BYTES", "input_file", "read_bounded", "read_input_file"]

# No input a user names is this big; `@/dev/zero` or a huge log given by mistake would otherwise
# be read until memory runs out.
MAX_INPUT_BYTES = 16 * 1024 * 1024


def read_bounded(path: Path, max_bytes: int) -> bytes:
    """At most `max_bytes` of a file; ValueError when it holds more. OSError as raised."""
    with path.open("rb") as file:
        data = file.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ValueError(f"larger than {_size(max_bytes)}: is it the file you meant?")
    return data


def _size(count: int) -> str:
    return f"{count // (1024 * 1024)} MiB" if count >= 1024 * 1024 else f"{count // 1024} KiB"


def read_input_file(path: Path, what: str = "", max_bytes: int = MAX_INPUT_BYTES) -> str:
    """The UTF-8 text of a file the user named, at most `max_bytes` long; ValueError says why
    it cannot be read ("cannot read {what}{path}: why", `what` such as "body file ")."""
    try:
        return read_bounded(path, max_bytes).decode("utf-8")
    except (OSError, UnicodeDecodeError, ValueError) as exc:
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
