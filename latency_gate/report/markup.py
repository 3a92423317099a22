"""Untrusted text as Markdown that GitHub shows as written: URLs in code spans, the rest escaped.

GitHub's extended autolink turns `http://…`, `https://…` and `www.…` in a paragraph into a link
whose text is the Markdown source, so a URL escaped like prose shows its backslashes and
`&amp;` (`first\\_ms=\\*\\*\\*&amp;n=`). A URL in a code span is shown exactly and linked by
nothing. In a code span nothing is escaped, so what must not be there raw is percent-encoded,
as a browser would send it: `<` and `>` (no tag, no copy of our hidden comment marker) and `|`
(a table cell ends at it even inside a code span).
"""

from __future__ import annotations

import re

from latency_gate.formatting import ESCAPE_CAP, clean_text, md_escape

__all__ = ["code_span", "md_text", "md_url"]

# Where GitHub's autolink starts a link; the link runs to white space or `<`.
_URL = re.compile(r"(?:(?:https?|ftp)://|www\.)[^\s<>]+", re.IGNORECASE)
# Trailing characters that end a sentence rather than a URL (GitHub's rule, plus quotes and
# `;`: an error text often says "for url 'http://…'").
_TRAILING = ".,:;!?'\"*_~"
_CLOSERS = {")": "(", "]": "[", "}": "{"}
_ENCODED = {"<": "%3C", ">": "%3E", "|": "%7C"}
_BACKTICKS = re.compile(r"`+")


def code_span(text: str) -> str:
    """`text` as a code span that shows it exactly: the fence is one backtick longer than the
    longest run inside, and a text that starts or ends with a backtick or a space is padded with
    a space each side (CommonMark strips one from each side). `text` must be one line."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    fence = "`" * (longest + 1)
    if text[:1] in {"`", " "} or text[-1:] in {"`", " "}:
        text = f" {text} "
    return f"{fence}{text}{fence}"


def md_url(url: object, limit: int = ESCAPE_CAP) -> str:
    """A URL (untrusted) for Markdown: one line, at most `limit` characters, in a code span, with
    `<`, `>` and `|` percent-encoded; "—" for None or an empty one."""
    if url is None:
        return "—"
    text = clean_text(str(url), limit)
    if not text:
        return "—"
    return code_span("".join(_ENCODED.get(ch, ch) for ch in text))


def _url_end(text: str, start: int, end: int) -> int:
    """Where a URL matched at text[start:end] ends once sentence punctuation is given back."""
    while end > start:
        last = text[end - 1]
        opener = _CLOSERS.get(last)
        if last in _TRAILING or (
            opener is not None and text.count(opener, start, end) < text.count(last, start, end)
        ):
            end -= 1
        else:
            break
    return end


def _escape_keeping_spaces(text: str) -> str:
    """md_escape of a piece of a line, keeping the one space at either end it would strip."""
    if not text:
        return ""
    core = text.strip()
    lead = " " if text[:1] == " " else ""
    trail = " " if text[-1:] == " " and core else ""
    return lead + md_escape(core, limit=len(core) + 1) + trail


def md_text(value: object, limit: int = ESCAPE_CAP) -> str:
    """The `md` template filter: untrusted text on one line, at most `limit` characters, every
    URL in it in a code span (`md_url`) and the rest escaped (`md_escape`); "—" for None."""
    if value is None:
        return "—"
    text = clean_text(str(value), limit)
    parts: list[str] = []
    at = 0
    for match in _URL.finditer(text):
        end = _url_end(text, match.start(), match.end())
        if end - match.start() <= len("www."):  # a bare scheme or "www." is no link
            continue
        parts.append(_escape_keeping_spaces(text[at : match.start()]))
        parts.append(md_url(text[match.start() : end], limit=end - match.start() + 1))
        at = end
    parts.append(_escape_keeping_spaces(text[at:]))
    return "".join(parts)
