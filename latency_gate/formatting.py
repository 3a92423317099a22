"""Small pure formatters for reports: durations, percentages, and untrusted text made safe.

`md_escape` is the one gate untrusted text (error bodies, header values, target names, URLs)
passes before it reaches Markdown; `clean_text` is its plain-text half, for terminals.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable

__all__ = [
    "clean_text",
    "fmt_change",
    "fmt_dollars",
    "fmt_duration",
    "fmt_interval",
    "fmt_level",
    "fmt_percent",
    "fmt_rate",
    "fmt_ratio",
    "fmt_value",
    "fmt_value_beside",
    "md_escape",
    "md_or_dash",
    "plural",
    "shorten",
    "shown_text",
]

ESCAPE_CAP = 300
# Our own sentences (a reason, what a check ruled out, a finding's evidence, the sampling line)
# are wrapped, never shortened; this only bounds what a hostile result file could put there.
SENTENCE_CAP = 1_000


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


def fmt_level(level: float | None) -> str:
    """An interval's level: 0.95 -> "95 %", 0.968 -> "96.8 %"; None (a file from before the
    level was kept) -> "95 %"."""
    return f"{(0.95 if level is None else level) * 100:.3g} %"


def fmt_percent(fraction: float | None) -> str:
    """A fraction as a percentage with one decimal and a space: 0.032 -> "3.2 %"; under 0.1 %
    with two significant digits, so that a small share never reads as none: 0.0001 ->
    "0.010 %", 0.00005 -> "0.0050 %" (an error budget of 1e-4 read "0.0 %")."""
    if fraction is None or math.isnan(fraction):
        return "—"
    percent = fraction * 100
    if percent == 0 or abs(percent) >= 0.1 or math.isinf(percent):
        return f"{percent:.1f} %"
    decimals = 1 - math.floor(math.log10(abs(percent)))
    return f"{percent:.{decimals}f} %"


def fmt_rate(rate: float | None) -> str:
    """ "5/s", "0.42/s", "12.5/s": three significant digits."""
    if rate is None:
        return "—"
    if rate >= 100:
        return f"{rate:,.0f}/s"
    return f"{float(f'{rate:.3g}'):g}/s"


# Past this many times, a ratio says "over": a base of a few nanoseconds (or 5e-324 s, which a
# result file may hold) would otherwise print a ratio of hundreds of digits.
RATIO_SHOWN = 1000.0


def fmt_ratio(ratio: float) -> str:
    """A ratio of two values: "x1.23", or "over x1,000" (an infinite one too)."""
    return f"x{ratio:.2f}" if ratio < RATIO_SHOWN else f"over x{RATIO_SHOWN:,.0f}"


def fmt_change(relative: float) -> str:
    """A relative change as a signed percentage: "+12 %", "-3 %", or "over +100,000 %"."""
    if relative < RATIO_SHOWN:
        return f"{relative * 100:+.0f} %"
    return f"over +{RATIO_SHOWN * 100:,.0f} %"


# Terminal escape sequences, whole: CSI (colours, cursor moves, clearing), OSC (window titles,
# hyperlinks; ended by BEL or ST), other two-character escapes, and their 8-bit C1 forms.
_TERMINAL_ESCAPE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|(?:\x1b[PX^_]|[\x90\x98\x9e\x9f])[^\x1b\x9c]*(?:\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?"
)
# Control, format (bidi overrides, zero-width), private-use and lone surrogate code points.
_DROPPED = frozenset({"Cc", "Cf", "Co", "Cs"})
# What GitHub turns into a notification or a link in rendered text: @user, @org/team, #123,
# GH-123. Shown in a code span, where GitHub links nothing, and no invisible character is
# inserted (a copied name stays what it was).
_REFERENCE = re.compile(
    r"@[A-Za-z0-9][A-Za-z0-9-]*(?:/[A-Za-z0-9_.-]+)?|#[0-9]+|\bGH-[0-9]+", re.IGNORECASE
)
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
    "#": "\\#",  # never a heading; `#123` itself goes in a code span (see _REFERENCE)
}


def fmt_dollars(value: float) -> str:
    """ "$0.0000147" (three significant digits under a dollar), "$12.40", "$0"."""
    if value <= 0:
        return "$0"
    if value >= 1:
        return f"${value:,.2f}"
    return f"${value:.{2 - math.floor(math.log10(value))}f}"


def plural(count: int, word: str) -> str:
    """ "1 call", "3 calls"."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def clean_text(text: str, limit: int = ESCAPE_CAP) -> str:
    """Untrusted text on one line: terminal escape sequences go whole, white space runs become
    one space, control and format characters go, and a text over `limit` characters is
    shortened to fit (see `shorten`)."""
    return shorten(_one_line(text), limit)


def shown_text(text: str) -> str:
    """`text` as a reader takes it in from any report: on one line (see `clean_text`, not
    shortened) and NFKC-normalised, so that fullwidth letters (U+FF53 for s) read as the
    letters they look like. What a secret is looked for in: a key spelled apart by characters
    that later steps remove (zero-width spaces, escape sequences, line breaks) is whole here."""
    return _one_line(unicodedata.normalize("NFKC", text))


def _one_line(text: str) -> str:
    if "\x1b" in text or not text.isascii():  # else no escape sequence: a long text is quick
        text = _TERMINAL_ESCAPE.sub("", text)
    one_line = " ".join(text.split())  # white space as `\s`: runs become one space
    if one_line.isascii() and one_line.isprintable():
        return one_line
    # Each distinct character looked up once: a long text holds few of them.
    dropped = {ord(ch): None for ch in set(one_line) if unicodedata.category(ch) in _DROPPED}
    return one_line.translate(dropped) if dropped else one_line


_CLAUSE_ENDS = ("; ", ", ", ": ")


def shorten(text: str, limit: int) -> str:
    """`text` in at most `limit` characters and "…": cut after its last whole clause (at "; ",
    ", " or ": ") when that keeps two thirds of the room, else after its last whole word, so
    that no word is cut ("so it was not called a regr…"); only a text whose first half holds
    no space (one long token, such as a hostile header value) is cut inside it."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]  # room for " …" after a space, which is dropped
    clause = max(head.rfind(end) for end in _CLAUSE_ENDS)
    if clause >= limit * 2 // 3:
        return head[:clause].rstrip() + " …"
    word = head.rfind(" ")
    if word >= limit // 2:
        return head[:word].rstrip() + " …"
    return text[:limit].rstrip() + "…"


def md_escape(text: str, limit: int = ESCAPE_CAP) -> str:
    """Untrusted text made safe inside a Markdown table cell and in prose.

    One line (see `clean_text`), at most `limit` characters before escaping; Markdown
    punctuation backslash-escaped (the pipe too, so a table keeps its cells); `& < >` as HTML
    entities (no tag, no HTML comment can open); `@name`, `@org/team`, `#123` and `GH-123` in
    a code span, so GitHub neither notifies anyone nor links an issue.
    """
    cleaned = clean_text(text, limit)
    parts: list[str] = []
    at = 0
    for match in _REFERENCE.finditer(cleaned):
        parts.append(_escape_plain(cleaned[at : match.start()]))
        parts.append(f"`{match.group()}`")  # no backtick or pipe can be inside the match
        at = match.end()
    parts.append(_escape_plain(cleaned[at:]))
    return "".join(parts)


def _escape_plain(text: str) -> str:
    return "".join(_ESCAPES.get(ch, ch) for ch in text)


def md_or_dash(value: object) -> str:
    """The `md` template filter: md_escape of any value, "—" for None."""
    return "—" if value is None else md_escape(str(value))


def fmt_value(value: float | None, number: str) -> str:
    """A number's value in its unit: a percentage for rates, calls at once for the capacity, a
    duration for the rest."""
    if number == "capacity":
        return "—" if value is None else f"{value:,.0f} at once"
    if number == "goodput":  # requests a second (cf. fmt_rate)
        return "—" if value is None else f"{float(f'{value:.3g}'):,g}/s"
    if number.startswith("tokens_"):  # the answers' length
        return "—" if value is None else f"{value:,.0f} tokens"
    if number.startswith("tpot_") and value is not None and value < 0.1:
        return f"{value * 1000:.1f} ms"  # a time per token is a few ms: one decimal
    return fmt_percent(value) if number.endswith("rate") else fmt_duration(value)


def fmt_interval(bounds: tuple[float | None, float | None] | None, number: str) -> str:
    """A 95 % interval in the number's unit: "50 ms to 65 ms"; "≥ 72 ms" or "≤ 4.0 %" when the
    calls made bound one side only; "—" when they bound neither (or one call)."""
    return fmt_bounds(bounds, lambda value: fmt_value(value, number))


def fmt_bounds(
    bounds: tuple[float | None, float | None] | None, show: Callable[[float], str]
) -> str:
    """An interval with each side written by `show`: "a to b", "≥ a", "≤ b" or "—"."""
    if bounds is None:
        return "—"
    low, high = bounds
    if low is not None and high is not None:
        return f"{show(low)} to {show(high)}"
    if low is not None:
        return f"≥ {show(low)}"
    if high is not None:
        return f"≤ {show(high)}"
    return "—"


def fmt_value_beside(value: float | None, limit: float | None, number: str) -> str:
    """`fmt_value`, with more digits when a value over its limit would print equal to it
    (3.004 s against 3 s reads "3.004 s", never "3.00 s" marked FAIL beside a 3.00 s budget)."""
    text = fmt_value(value, number)
    if value is None or limit is None or value <= limit or text != fmt_value(limit, number):
        return text
    for extra in range(1, 12):
        finer = _finer(value, number, extra)
        if finer != _finer(limit, number, extra):
            return finer
    return text


def _finer(value: float, number: str, extra: int) -> str:
    """`value` with `extra` more decimals than its usual form."""
    if number.endswith("rate"):
        return f"{value * 100:.{1 + extra}f} %"
    if abs(value) < 1:
        return f"{value * 1000:.{extra}f} ms"
    return f"{value:.{2 + extra}f} s"
