"""Plain-text pieces every terminal section shares: sentences wrapped to the terminal's width,
and tables of aligned columns whose last column runs free."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Collection, Sequence

__all__ = ["WIDTH", "aligned", "wrap"]

WIDTH = 100


# A number and its unit ("97.5 %", "120 ms", "3.62 s") stay on one line: the space between them
# is held by a private-use character while the text is wrapped.
_UNIT_SPACE = re.compile(r"(?<=\d) (?=(?:%|ms|s)(?![\w]))")
_GLUE = "\ue000"


def wrap(text: str, indent: str = "") -> list[str]:
    """`text` in lines of at most WIDTH characters, each starting with `indent`, the continued
    ones two spaces further in (words are never broken, nor a number from its unit)."""
    lines = textwrap.wrap(
        _UNIT_SPACE.sub(_GLUE, text.replace(_GLUE, " ")),
        width=WIDTH,
        initial_indent=indent,
        subsequent_indent=indent + "  ",
        break_long_words=False,
        break_on_hyphens=False,
    )
    return [line.replace(_GLUE, " ") for line in lines] or [indent.rstrip()]


def aligned(table: Sequence[Sequence[str]], right: Collection[int] = ()) -> list[str]:
    """Rows of cells, indented two spaces: every column but the last padded to its widest cell
    (the columns in `right` aligned right, as numbers are), the last written as it is."""
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]) - 1)]
    return [
        "  "
        + "  ".join(
            cell.rjust(width) if i in right else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=False))
        )
        + "  "
        + row[-1]
        for row in table
    ]
