"""JSON a user or a file hands us, read strictly: one reader for request bodies and result files.

Python's `json` reads `NaN`, `Infinity` and `1e400` (as infinity), which are not JSON numbers a
server or a later run can take back, recurses once per level of nesting (a body of valid JSON
nested a few thousand deep raises RecursionError), and refuses integers of more than 4,300
digits with a message about `sys.set_int_max_str_digits`. `load_json` turns each of these into a
ValueError whose message says what is wrong in the user's terms; `dump_json` never writes `NaN`
or `Infinity`.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["MAX_JSON_DEPTH", "NotJSON", "dump_json", "json_depth", "load_json"]

MAX_JSON_DEPTH = 100
"""Deeper than any request body or result file needs (a chat body with tools nests ~10 deep);
Python's own limit (~1,000 levels, less inside a deep call stack) must never be the one met."""

# Python's default cap on the digits int() reads from text (PEP 651's sys.int_info).
_PYTHON_INT_DIGITS = 4300


class NotJSON(ValueError):
    """The text is not JSON at all (a syntax error), as opposed to JSON we will not take."""


def load_json(
    text: str, *, max_depth: int = MAX_JSON_DEPTH, max_int_digits: int = _PYTHON_INT_DIGITS
) -> Any:
    """The JSON value of `text`; ValueError with a one-line reason when it is not JSON a server
    can read back: not JSON, NaN or Infinity, a number out of a double's range (`1e400`), an
    integer longer than `max_int_digits` digits, or nesting deeper than `max_depth`."""

    def number(literal: str) -> int:
        if len(literal.lstrip("-")) > max_int_digits:
            raise ValueError(
                f"holds a whole number of {len(literal.lstrip('-')):,} digits "
                f"(at most {max_int_digits:,} are read)"
            )
        return int(literal)

    try:
        value = json.loads(text, parse_constant=_not_json, parse_float=_finite, parse_int=number)
    except RecursionError:
        raise ValueError(_too_deep(max_depth)) from None
    except json.JSONDecodeError as exc:
        raise NotJSON(f"not valid JSON: {exc}") from None
    if json_depth(value, stop_after=max_depth) > max_depth:
        raise ValueError(_too_deep(max_depth))
    return value


def dump_json(value: Any) -> str:
    """`value` as JSON text; ValueError when it holds NaN or an infinity (no JSON number)."""
    try:
        return json.dumps(value, allow_nan=False)
    except ValueError:
        raise ValueError(
            "holds NaN or an infinite number, which JSON cannot carry: write a number or null"
        ) from None
    except RecursionError:
        raise ValueError(_too_deep(MAX_JSON_DEPTH)) from None


def json_depth(value: Any, *, stop_after: int = MAX_JSON_DEPTH) -> int:
    """How deep lists and objects nest in `value` (a scalar is 0), counted without recursion;
    the walk stops once `stop_after` is passed."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > stop_after:
            break
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return deepest


def _too_deep(limit: int) -> str:
    return f"nested deeper than {limit} levels"


def _not_json(literal: str) -> float:
    raise ValueError(f"holds {literal}, which is not a JSON value: write a number or null")


def _finite(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        shown = literal if len(literal) <= 20 else literal[:20] + "…"
        raise ValueError(
            f"holds the number {shown}, beyond the range of a double (about 1.8e308), which "
            "servers read as infinity or refuse"
        )
    return value
