"""URLs in Markdown reports: in code spans, so GitHub's autolink shows no backslash or `&amp;`."""

from __future__ import annotations

import pytest
from result_factory import failed_sample, healthy_samples, make_result

from latency_gate.models import CallPhase, ErrorKind
from latency_gate.report.markdown import render_comment, render_summary
from latency_gate.report.markup import code_span, md_text, md_url

MARKER = "<!-- latency-gate:comment:ci/gate:abc123 -->"
QUERY_URL = "https://api.example.com/v1/chat/completions?first_ms=1&n=2"
SHOWN_URL = "https://api.example.com/v1/chat/completions?first_ms=1&n=2"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a", "`a`"),
        ("a`b", "``a`b``"),
        ("a``b`c", "```a``b`c```"),
        ("`a", "`` `a ``"),
        ("a`", "`` a` ``"),
    ],
)
def test_code_span_fence_is_longer_than_any_backtick_run(text: str, expected: str) -> None:
    """A code span's fence outgrows the backticks inside; an edge backtick gets a space."""
    assert code_span(text) == expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (SHOWN_URL, f"`{SHOWN_URL}`"),
        ("http://h/a`b`", "`` http://h/a`b` ``"),
        ("http://h/<script>|x", "`http://h/%3Cscript%3E%7Cx`"),
        ("http://h/\x1b[31mred\nx", "`http://h/red x`"),
        (None, "—"),
        ("", "—"),
    ],
)
def test_md_url(url: str | None, expected: str) -> None:
    """A URL: one line in a code span, with < > | percent-encoded as a browser sends them."""
    assert md_url(url) == expected


def test_md_url_caps_length() -> None:
    """A long URL is cut at the cap, inside its code span."""
    assert md_url("http://h/" + "x" * 400) == "`http://h/" + "x" * 291 + "…`"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("no link_here", "no link\\_here"),
        (
            "Client error for url 'https://h/a_b?x=1&y=2'.",
            "Client error for url '`https://h/a_b?x=1&y=2`'.",
        ),
        ("see www.example.com/status_page, then", "see `www.example.com/status_page`, then"),
        ("(http://h/a_(b))", "(`http://h/a_(b)`)"),
        ("at http://h/x|y *now*", "at `http://h/x%7Cy` \\*now\\*"),
        ("http://h/a http://h/b", "`http://h/a` `http://h/b`"),
        ("www. and http://", "www. and http://"),
        ("@octocat on #12 http://h/#12", "`@octocat` on `#12` `http://h/#12`"),
        (None, "—"),
    ],
)
def test_md_text_puts_urls_in_code_spans(text: str | None, expected: str) -> None:
    """Prose is escaped as before; each URL in it goes whole into a code span."""
    assert md_text(text) == expected


def test_summary_shows_the_target_url_in_a_code_span() -> None:
    """The target line and the settings show the URL as written, not backslash-escaped."""
    summary = render_summary([make_result(url=QUERY_URL)])
    assert f"Target **local**: POST `{SHOWN_URL}`" in summary
    assert f"| url | `{SHOWN_URL}` |" in summary
    assert "first\\_ms" not in summary
    assert "&amp;" not in summary


def test_error_examples_keep_their_urls_whole() -> None:
    """A URL inside an endpoint's error text is shown whole in a code span, in both reports."""
    detail = "Client error '404 Not Found' for url 'http://127.0.0.1:8000/v1/chat_x?a=1&b=2'"
    samples = [
        *healthy_samples(),
        failed_sample(CallPhase.WARM, 40, ErrorKind.HTTP_4XX, detail, status=404),
    ]
    result = make_result(samples=samples)
    summary = render_summary([result])
    assert "`http://127.0.0.1:8000/v1/chat_x?a=1&b=2`" in summary
    assert "chat\\_x" not in summary
    assert "&amp;" not in render_comment([result], marker=MARKER)
