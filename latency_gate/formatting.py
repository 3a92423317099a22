"""Small pure formatters for reports: durations, percentages, and untrusted text made safe.

`md_escape` is the one gate untrusted text (error bodies, header values, target names, URLs)
passes before it reaches Markdown; `clean_text` is its plain-text half, for terminals.
"""

from __future__ import annotations

import math
import re
import unicodedata

__all__ = ["clean_text", "fmt_duration", "fmt_percent", "fmt_value", "md_escape", "md_or_dash"]

ESCAPE_CAP = 300


def fmt_duration(seconds: float | None) -> str:
    """A duration for people: "—" for None.

    Under 1 ms (after rounding to 0.1 ms): one decimal ("0.4 ms"); under 1 s: whole
    milliseconds ("850 ms"); under 10 s: two decimals ("1.23 s"); under 100 s: one ("12.3 s");
    beyond: whole seconds ("123 s"). A value that rounds up to the next unit moves to it.
    """
    if seconds is None or math.isnan(seconds):
        return "—"
    ms = seconds * 1000
    tenths = f"{ms:.1f}"
    if abs(float(tenths)) < 1:
        return f"{tenths} ms"
    if abs(round(ms)) < 1000:
        return f"{round(ms)} ms"
    if abs(round(seconds, 2)) < 10:
        return f"{seconds:.2f} s"
    if abs(round(seconds, 1)) < 100:
        return f"{seconds:.1f} s"
    return f"{seconds:.0f} s"


def fmt_percent(fraction: float | None) -> str:
    """A fraction as a percentage with one decimal and a space: 0.032 -> "3.2 %"."""
    if fraction is None or math.isnan(fraction):
        return "—"
    return f"{fraction * 100:.1f} %"


_WHITESPACE = re.compile(r"\s+")
# Terminal escape sequences, whole: CSI (colours, cursor moves, clearing), OSC (window titles,
# hyperlinks; ended by BEL or ST), other two-character escapes, and their 8-bit C1 forms.
_TERMINAL_ESCAPE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|(?:\x1b[PX^_]|[\x90\x98\x9e\x9f])[^\x1b\x9c]*(?:\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?"
)
# Control, format (bidi overrides, zero-width), private-use and lone surrogate code points.
_DROPPED_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs"})
_ZWJ = "\u200d"
_ESCAPES = {
    "\\": "\\\\",
    "`": "\\`",
    "*": "\\*",
    "_": "\\_",
    "~": "\\~",
    "[": "\\[",
    "]": "\\]",
    "|": "\\|",
    "&": "&amp;",  # so "&#35;123" or "&lt;" arrive as text, not as # or <
    "<": "&lt;",  # no tag, no HTML comment, no copy of our marker
    ">": "&gt;",
    # GitHub links #123 and notifies @name in rendered text; a zero-width joiner breaks both.
    "#": "#" + _ZWJ,
    "@": "@" + _ZWJ,
}


def clean_text(text: str, limit: int = ESCAPE_CAP) -> str:
    """Untrusted text on one line: terminal escape sequences go whole, white space runs become
    one space, control and format characters go, and anything past `limit` characters
    becomes "…"."""
    one_line = _WHITESPACE.sub(" ", _TERMINAL_ESCAPE.sub("", text)).strip()
    kept = "".join(ch for ch in one_line if unicodedata.category(ch) not in _DROPPED_CATEGORIES)
    if len(kept) > limit:
        return kept[:limit].rstrip() + "…"
    return kept


def md_escape(text: str, limit: int = ESCAPE_CAP) -> str:
    """Untrusted text made safe inside a Markdown table cell and in prose.

    One line (see `clean_text`), at most `limit` characters before escaping; Markdown
    punctuation backslash-escaped (the pipe too, so a table keeps its cells); `& < >` as HTML
    entities (no tag, no HTML comment can open); `#` and `@` followed by a zero-width joiner so
    GitHub neither links an issue nor notifies anyone.
    """
    return "".join(_ESCAPES.get(ch, ch) for ch in clean_text(text, limit))


def md_or_dash(value: object) -> str:
    """The `md` template filter: md_escape of any value, "—" for None."""
    return "—" if value is None else md_escape(str(value))


def fmt_value(value: float | None, number: str) -> str:
    """A number's value in its unit: a percentage for rates, a duration for the rest."""
    return fmt_percent(value) if number.endswith("rate") else fmt_duration(value)
