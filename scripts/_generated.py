"""What each scripts/gen_*.py does with the file it generates: rewrite it when it is stale, or
with --check only say whether it is (exit 1), so CI can fail on a file out of step."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path


def generator_parser(doc: str) -> argparse.ArgumentParser:
    """The script's parser, described by the first line of its docstring, with --check."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report whether it is stale")
    return parser


def write_generated(
    path: Path,
    make: Callable[[str], str],
    *,
    check: bool,
    subject: str,
    source: str,
    script: str,
) -> int:
    """Give `path` the text `make(current text)` ("" when there is no file yet) and return the
    exit code: 0 when it was up to date or is rewritten; with `check`, 1 when it is stale and
    nothing is written. A ValueError from `make` is bad input: 2, with its message.

    `subject` names what is generated in the messages, `source` what it is generated from and
    `script` the script to run when it is stale.
    """
    current = path.read_text(encoding="utf-8") if path.is_file() else ""
    try:
        wanted = make(current)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if wanted == current:
        print(f"{subject}: up to date")
        return 0
    if check:
        print(f"{subject}: differs from {source}; run {script}")
        return 1
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(wanted, encoding="utf-8")
    print(f"{subject}: rewritten")
    return 0
