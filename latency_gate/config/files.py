"""The one place below the edges that touches a file: the files a user names, read and written.

A request body given as `@path`, a targets file, a CA bundle and a result file are inputs, so the
config layer reads them while it validates (their errors then name the input like every other bad
value); the report files a user names are opened for writing here too, so that the rules below
hold for every file. Nothing else under latency_gate/ but the edges (cli, action, run) opens a
file; tests/test_layers.py checks it.

The rules: only regular files are read (a FIFO would block the run forever, a device such as
/dev/zero never ends, and the kernel's files under /proc and /sys, /proc/self/environ among them,
hold the process's environment, tokens included); nothing is opened in a way that can block; and
where a `root` is given (the action's workspace) a file must lie inside it once links are
followed.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import TextIO

__all__ = [
    "MAX_INPUT_BYTES",
    "confined",
    "input_file",
    "open_output",
    "read_bounded",
    "read_input_file",
]

# No input a user names is this big; a huge log given by mistake would otherwise be read until
# memory runs out.
MAX_INPUT_BYTES = 16 * 1024 * 1024

# Pseudo-files of the kernel: regular to stat(), but generated on reading, and private.
_KERNEL_ROOTS = (Path("/proc"), Path("/sys"))
_KERNEL_FILE = "a file of the kernel (under /proc or /sys)"


def _kind(mode: int) -> str | None:
    """What a file that is not a regular file is, or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe), which could block the run forever"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device, not a file"


def _kernel_file(path: Path) -> bool:
    resolved = Path(os.path.realpath(path))
    return any(resolved == root or root in resolved.parents for root in _KERNEL_ROOTS)


def read_bounded(path: Path, max_bytes: int) -> bytes:
    """At most `max_bytes` of a regular file; ValueError when it holds more, or is not a regular
    file (a FIFO, a device, a socket, a kernel file under /proc or /sys). Never blocks: the file
    is opened non-blocking and looked at before a byte is read. OSError as raised."""
    if _kernel_file(path):
        raise ValueError(f"is {_KERNEL_FILE}, not one you wrote")
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        kind = _kind(os.fstat(descriptor).st_mode)
        if kind is not None:
            raise ValueError(f"is {kind}")
        os.set_blocking(descriptor, True)
        with os.fdopen(descriptor, "rb") as file:
            descriptor = -1  # the file object closes it now
            data = file.read(max_bytes + 1)
    finally:
        if descriptor >= 0:
            os.close(descriptor)
    if len(data) > max_bytes:
        raise ValueError(f"larger than {_size(max_bytes)}: is it the file you meant?")
    return data


def _size(count: int) -> str:
    return f"{count // (1024 * 1024)} MiB" if count >= 1024 * 1024 else f"{count // 1024} KiB"


def confined(path: Path, root: Path | None) -> Path:
    """`path` when it lies inside `root` once `..` and links are followed (any path when `root`
    is None); ValueError saying so otherwise."""
    if root is None:
        return path
    base = root.resolve()
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError) as exc:
        raise ValueError(f"cannot resolve {str(path)!r}: {exc}") from None
    if resolved != base and base not in resolved.parents:
        raise ValueError(
            f"{str(path)!r} is outside the workspace ({base}), once links are followed; the "
            "action reads only files inside it: give a path relative to the workspace"
        )
    return path


def read_input_file(
    path: Path, what: str = "", max_bytes: int = MAX_INPUT_BYTES, *, root: Path | None = None
) -> str:
    """The UTF-8 text of a regular file the user named, at most `max_bytes` long, inside `root`
    when one is given; ValueError says why it cannot be read ("cannot read {what}{path}: why",
    `what` such as "body file ")."""
    confined(path, root)
    try:
        return read_bounded(path, max_bytes).decode("utf-8")
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ValueError(f"cannot read {what}{str(path)!r}: {reason}") from None


def input_file(text: str, base_dir: Path | None, *, root: Path | None = None) -> str:
    """The path of a regular file the user named (relative to `base_dir`, inside `root` when
    given); ValueError when there is no readable file there."""
    path = Path(text).expanduser()
    if base_dir is not None and not path.is_absolute():
        path = base_dir / path
    confined(path, root)
    try:
        kind = _KERNEL_FILE if _kernel_file(path) else _kind(path.stat().st_mode)
    except OSError:
        raise ValueError(f"no readable file at {str(path)!r}") from None
    if kind is not None:
        raise ValueError(f"no readable file at {str(path)!r}: it is {kind}")
    return str(path)


def open_output(path: Path, *, append: bool = False) -> TextIO:
    """`path` opened for writing UTF-8 text with Unix line ends, created if missing, without
    ever blocking: a FIFO nothing reads is an OSError (ENXIO) saying so, where a plain open would
    wait forever for a reader."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC
    flags |= os.O_APPEND if append else os.O_TRUNC
    try:
        descriptor = os.open(path, flags, 0o666)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise OSError(
                errno.ENXIO, "it is a FIFO (named pipe) that nothing reads; writing would block"
            ) from None
        raise
    os.set_blocking(descriptor, True)
    return os.fdopen(descriptor, "a" if append else "w", encoding="utf-8", newline="\n")
