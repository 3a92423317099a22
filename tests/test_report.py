"""Reports: the filters, the escaping of untrusted text, the size limits, and golden files.

Golden files live in tests/golden/ (summary_*.md, comment_*.md, terminal_*.txt), one per
scenario below. After an intended change to a template, regenerate them and read the diff:

    UPDATE_GOLDEN=1 python -m pytest tests/test_report.py -q
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import jinja2
import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token
from report_scenarios import (
    FAKE_MARKER,
    HOSTILE_DETAIL,
    HOSTILE_NAME,
    SCENARIOS,
    TERMINAL_SCENARIOS,
    scenario_errors,
    scenario_fail,
    scenario_hostile,
    scenario_interrupted,
    scenario_llm,
    scenario_nodata,
    scenario_pass,
    scenario_several,
)
from result_factory import failed_sample, make_result, samples_for

from latency_gate.config import Budget, build_target
from latency_gate.formatting import clean_text, fmt_duration, fmt_percent, md_escape, shorten
from latency_gate.models import CallPhase, ErrorKind, RunResult, Sample
from latency_gate.report.markdown import (
    environment,
    render_comment,
    render_markdown,
    render_summary,
)
from latency_gate.report.terminal import render_terminal
from latency_gate.report.text_lines import WIDTH, wrap

GOLDEN = Path(__file__).parent / "golden"
MARKER = "<!-- latency-gate:comment:ci/gate:abc123 -->"
ZWJ = "\u200d"
MIB = 1_048_576

# Substrings that must never reach Markdown raw from untrusted text.
RAW_FORBIDDEN = (
    "<script>",
    "<b>",
    "<!-- latency-gate:comment:x",
    FAKE_MARKER,
    "`rm -rf`",
)
# What GitHub would turn into a notification or an issue link in rendered text.
REFERENCE = re.compile(r"@[A-Za-z0-9]|#[0-9]|\bGH-[0-9]", re.IGNORECASE)


def check_golden(name: str, actual: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN") == "1":
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(actual, encoding="utf-8")
    assert path.exists(), f"no golden file {path}: run with UPDATE_GOLDEN=1"
    assert actual == path.read_text(encoding="utf-8")


# --- Markdown helpers --------------------------------------------------------------------------


def parse(markdown: str) -> list[Token]:
    return MarkdownIt("gfm-like", {"linkify": False}).parse(markdown)


def inline_text(token: Token) -> str:
    """What a reader sees in an inline token, without formatting marks."""
    return "".join(
        child.content for child in token.children or [] if child.type in {"text", "code_inline"}
    )


def tables(markdown: str) -> list[list[list[str]]]:
    """Every table as rows of cell texts (header row first)."""
    found: list[list[list[str]]] = []
    in_cell = False
    for token in parse(markdown):
        if token.type == "table_open":
            found.append([])
        elif token.type == "tr_open":
            found[-1].append([])
        elif token.type in {"th_open", "td_open"}:
            in_cell = True
        elif token.type in {"th_close", "td_close"}:
            in_cell = False
        elif token.type == "inline" and in_cell:
            found[-1][-1].append(inline_text(token))
    return found


def visible(text: str) -> str:
    return text.replace(ZWJ, "")


# --- filters -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        (None, "—"),
        (math.nan, "—"),
        (0.0, "0.0 ms"),
        (0.0004, "0.4 ms"),
        (0.00004, "0.0 ms"),
        (0.00094, "0.9 ms"),
        (0.00096, "1 ms"),
        (0.0123, "12 ms"),
        (0.85, "850 ms"),
        (0.9994, "999 ms"),
        (0.9996, "1.00 s"),
        (1.234, "1.23 s"),
        (9.994, "9.99 s"),
        (9.996, "10.0 s"),
        (12.34, "12.3 s"),
        (99.96, "100 s"),
        (123.4, "123 s"),
    ],
)
def test_fmt_duration(seconds: float | None, expected: str) -> None:
    """Durations: one decimal under 1 ms, whole ms under 1 s, then 3 significant digits."""
    assert fmt_duration(seconds) == expected


@pytest.mark.parametrize(
    ("fraction", "expected"),
    [(None, "—"), (0.0, "0.0 %"), (0.032, "3.2 %"), (0.0104, "1.0 %"), (1.0, "100.0 %")],
)
def test_fmt_percent(fraction: float | None, expected: str) -> None:
    """Fractions show as percentages with one decimal and a space before the sign."""
    assert fmt_percent(fraction) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain text 42", "plain text 42"),
        ("a|b", "a\\|b"),
        ("`code`", "\\`code\\`"),
        ("*b* _i_ ~s~", "\\*b\\* \\_i\\_ \\~s\\~"),
        ("[x](http://e)", "\\[x\\](http://e)"),
        ("back\\slash", "back\\\\slash"),
        ("<script>", "&lt;script&gt;"),
        (
            "<!-- latency-gate:comment:x -->",
            "&lt;!-- latency-gate:comment:x --&gt;",
        ),
        ("&#35;1 &lt;", "&amp;`#35`;1 &amp;lt;"),
        ("@octocat", "`@octocat`"),
        ("cc @org/team-a", "cc `@org/team-a`"),
        ("see #123 and GH-4", "see `#123` and `GH-4`"),
        ("# not a heading", "\\# not a heading"),
        ("one\ntwo\r\nthree\t four", "one two three four"),
        ("\x1b[31mred\x07", "red"),
        ("a\u202eb\u200bc", "abc"),
        ("  padded  ", "padded"),
    ],
)
def test_md_escape(text: str, expected: str) -> None:
    """Untrusted text: Markdown escaped, HTML as entities, mentions broken, one clean line."""
    assert md_escape(text) == expected


def test_md_escape_caps_length() -> None:
    """Text past 300 characters is cut there and ends with an ellipsis."""
    assert md_escape("x" * 301) == "x" * 300 + "…"
    assert md_escape("x" * 300) == "x" * 300


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        # the last whole clause when it keeps two thirds of the room
        (
            "warm p95 undecided: 1.00 s → 1.30 s; so it was not called a regression",
            50,
            "warm p95 undecided: 1.00 s → 1.30 s …",
        ),
        # else the last whole word
        (
            "the calls could not tell it from noise so it was not called a regression",
            50,
            "the calls could not tell it from noise so it was …",
        ),
        # one long token: cut inside it, as before
        ("x" * 60, 50, "x" * 50 + "…"),
        ("short enough", 50, "short enough"),
    ],
)
def test_shorten_cuts_whole_clauses_or_words(text: str, limit: int, expected: str) -> None:
    """Text over its limit loses whole clauses, else whole words, never half a word."""
    assert shorten(text, limit) == expected
    assert len(shorten(text, limit)) <= limit + 1


_CUT_WORD = re.compile(r"\w…")


@pytest.mark.parametrize("name", [n for n in SCENARIOS if n != "hostile"])
def test_no_report_cuts_a_word(name: str) -> None:
    """Every report of every scenario (but the hostile one, whose endpoint text is one long
    token) says its sentences whole: no word ends in "…" in the terminal, the summary or the
    comment (the history scenario's undecided line read "so it was not called a regressio…")."""
    results = SCENARIOS[name]()
    for text in (
        render_terminal(results, verbose=True),
        render_summary(results),
        render_comment(results, marker=MARKER),
    ):
        assert _CUT_WORD.search(text) is None, _CUT_WORD.search(text)


def test_md_escape_caps_before_escaping() -> None:
    """The cap counts the text's own characters, so an escape is never cut in half."""
    assert md_escape("<" * 301) == "&lt;" * 300 + "…"


def test_clean_text_keeps_unicode() -> None:
    """Letters, emoji and accents pass through; only control and format characters go."""
    assert clean_text("héllo ✅ 東京") == "héllo ✅ 東京"


def test_environment_is_strict() -> None:
    """A misspelt variable in a template is an error, not a blank."""
    with pytest.raises(jinja2.UndefinedError):
        environment().from_string("{{ missing }}").render()


def test_environment_does_not_html_escape() -> None:
    """Autoescape is off: Markdown is not HTML, escaping is the md filter's job."""
    template = environment().from_string("{{ text }} {{ text | md }}")
    assert template.render(text="a<b") == "a<b a&lt;b"


def test_environment_filters() -> None:
    """The templates' filters are registered under their names."""
    template = environment().from_string("{{ a | duration }} {{ b | percent }} {{ c | md }}")
    assert template.render(a=0.85, b=0.5, c=None) == "850 ms 50.0 % —"


# --- golden files ------------------------------------------------------------------------------


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_summary_golden(scenario: str) -> None:
    """The job summary of each scenario matches its golden file."""
    check_golden(f"summary_{scenario}.md", render_summary(SCENARIOS[scenario]()))


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_comment_golden(scenario: str) -> None:
    """The PR comment of each scenario matches its golden file."""
    check_golden(f"comment_{scenario}.md", render_comment(SCENARIOS[scenario](), marker=MARKER))


@pytest.mark.parametrize("scenario", TERMINAL_SCENARIOS)
def test_terminal_golden(scenario: str) -> None:
    """The terminal report of each scenario matches its golden file."""
    check_golden(f"terminal_{scenario}.txt", render_terminal(SCENARIOS[scenario]()))


def test_markdown_file_is_the_summary() -> None:
    """The --markdown report reads the same as the job summary."""
    results = scenario_errors()
    assert render_markdown(results) == render_summary(results)


# --- content -----------------------------------------------------------------------------------


def test_summary_headline_names_breaches() -> None:
    """A failed run opens with FAIL, the time to the verdict, and each breached number with
    value and budget."""
    lines = render_summary(scenario_fail()).splitlines()
    assert lines[:7] == [
        "## ❌ latency-gate: FAIL",
        "",
        "Verdict in 12.3 s, after 31 of at most 500 calls:",
        "",
        "- warm p95 3.90 s, over its 3.00 s budget — FAIL after 20 calls, 19 over 3.00 s "
        "(95.0 %): rules out 2.0 % or fewer over 3.00 s (such an endpoint fails at most 1.0 % "
        "of runs)",
        "- concurrent p95 4.91 s, over its 3.00 s budget — FAIL after 10 calls, 10 over 3.00 s "
        "(100.0 %): rules out 2.0 % or fewer over 3.00 s (such an endpoint fails at most 1.0 % "
        "of runs)",
        "",
    ]


def test_summary_says_no_call_succeeded() -> None:
    """A run where every call failed says so in its headline list, with the kinds."""
    summary = render_summary(scenario_nodata())
    assert (
        "- no call succeeded: 6 of 6 failed (6 connection\\_refused), so no latency could be "
        "measured\n"
    ) in summary


def test_summary_counts_left_out_calls() -> None:
    """The summary says how many failed calls were left out of the percentiles, and the method."""
    summary = render_summary(scenario_errors())
    assert (
        "n: 1 cold, 40 of 42 warm, 90 of 92 concurrent calls; 4 failed calls left out of the "
        "percentiles. Percentiles: linear interpolation between closest ranks (numpy default).\n"
        "\n"
        "Sampling: 135 calls in one look; stopped: the run ended (cap 500 calls).\n"
        "\n"
        "Errors: 4 of 135 calls failed (3.0 %); 95 % upper bound 9.6 %. Error budget 1.0 %: at "
        "135 calls, 5 failures not in a row fail the run; with fewer, it passes once enough "
        "calls rule out 3.0 % failing or more (127 calls without a failure, more with some).\n"
    ) in summary


def test_summary_numbers_table() -> None:
    """The numbers table has each number, its value, 95 % interval, budget, mark and n; a
    percentile whose upper side the calls cannot bound shows its lower side only."""
    first = tables(render_summary(scenario_pass()))[0]
    assert first == [
        ["number", "value", "95 % interval", "budget", "result", "n"],
        ["cold start", "420 ms", "—", "—", "reported", "1"],
        ["warm p50", "198 ms", "150 ms to 245 ms", "—", "reported", "40"],
        ["warm p95", "285 ms", "≥ 260 ms", "3.00 s", "✅ PASS", "40"],
        ["concurrent p95", "335 ms", "≥ 320 ms", "3.00 s", "✅ PASS", "90"],
        ["error rate", "0.0 %", "0.0 % to 4.4 %", "1.0 %", "✅ PASS", "131"],
    ]


def test_summary_errors_by_kind() -> None:
    """Errors are grouped by kind, most frequent first, with the first example detail."""
    errors = next(t for t in tables(render_summary(scenario_errors())) if t[0][0] == "kind")
    assert errors == [
        ["kind", "calls", "example"],
        ["http_5xx", "2", "503 upstream connect error"],
        ["http_429", "1", "429 slow down"],
        ["read_timeout", "1", "—"],
    ]


def test_summary_first_token_row_when_streaming() -> None:
    """A streamed target gets a first-token p95 row, gated when its budget is set."""
    several = tables(render_summary(scenario_several()))[0]
    assert ["first-token p95", "231 ms ✅ ≤ 1.00 s", "—", "—"] in several


def test_several_targets_side_by_side() -> None:
    """Several targets: one column per target, in the order given, with a verdict row."""
    several = tables(render_summary(scenario_several()))[0]
    assert several[0] == ["number", "local", "free", "paid"]
    assert several[1] == ["verdict", "✅ PASS", "❌ FAIL", "✅ PASS"]


def test_summary_floor_and_stamp_source() -> None:
    """The measurement floor and where the timestamps came from are stated."""
    summary = render_summary(scenario_pass())
    assert (
        "- Measurement floor: 0.4 ms at p95 under 10 concurrent calls "
        "(0.2 ms at p50 one at a time).\n"
        "- Timestamps from the kernel's receive timestamps (SO_TIMESTAMPNS).\n"
    ) in summary


def test_summary_interrupted() -> None:
    """An interrupted run says so plainly, with the number of calls it covers."""
    summary = render_summary(scenario_interrupted())
    assert (
        "> **Interrupted**: the run was stopped before it finished; the numbers cover only "
        "the 9 calls made before that.\n"
    ) in summary


def test_summary_phase_chart_in_code_block() -> None:
    """Where the time went is drawn as a text bar per call phase inside a code block."""
    fences = [t for t in parse(render_summary(scenario_pass())) if t.type == "fence"]
    assert len(fences) == 1
    lines = fences[0].content.splitlines()
    assert [line.split()[0] for line in lines[:3]] == ["cold", "warm", "concurrent"]
    assert lines[1].endswith(" 198 ms")
    assert lines[3].startswith("░ connect")


def test_summary_raw_samples_folded() -> None:
    """Raw samples sit in a <details> block with one row per call."""
    summary = render_summary(scenario_pass())
    assert "<details>\n<summary>Raw samples (131 calls)</summary>\n" in summary
    samples = tables(summary)[-1]
    assert samples[0] == ["phase", "#", "status", "latency", "TTFB", "first token", "error"]
    assert len(samples) == 132


def test_comment_starts_with_marker() -> None:
    """The comment's first line is the hidden marker, exactly."""
    assert render_comment(scenario_pass(), marker=MARKER).split("\n", 1)[0] == MARKER


def test_comment_is_compact() -> None:
    """The comment has no raw samples, no settings, no links."""
    comment = render_comment(scenario_errors(), marker=MARKER)
    assert "<details>" not in comment
    assert "Settings" not in comment
    assert not [t for t in parse(comment) if t.type == "inline" and "link_open" in _types(t)]


def _types(token: Token) -> list[str]:
    return [child.type for child in token.children or []]


def test_comment_lists_finding_titles() -> None:
    """Findings appear in the comment by title only."""
    comment = render_comment(scenario_errors(), marker=MARKER)
    assert "**Findings**\n\n- Rate limited\n" in comment
    assert "raise the rate limit" not in comment


def test_comment_refuses_a_bad_marker() -> None:
    """A marker that is not one HTML comment is refused, so the comment cannot be found again."""
    with pytest.raises(ValueError, match="one HTML comment"):
        render_comment(scenario_pass(), marker="latency-gate")


def test_no_results_is_an_error() -> None:
    """Rendering nothing is a bug in the caller, not an empty report."""
    with pytest.raises(ValueError, match="no results"):
        render_summary([])


# --- untrusted text ----------------------------------------------------------------------------


@pytest.mark.parametrize("render", ["summary", "comment"])
def test_hostile_text_never_raw(render: str) -> None:
    """Untrusted strings reach neither the summary nor the comment raw."""
    results = scenario_hostile()
    text = (
        render_summary(results)
        if render == "summary"
        else render_comment(results, marker="<!-- latency-gate:comment:real -->")
    )
    for needle in RAW_FORBIDDEN:
        assert needle not in text


@pytest.mark.parametrize("render", ["summary", "comment"])
def test_hostile_mentions_render_inside_code_only(render: str) -> None:
    """Rendered, every @mention and #123 sits in a code element (GitHub links none there)."""
    results = scenario_hostile()
    text = (
        render_summary(results)
        if render == "summary"
        else render_comment(results, marker="<!-- latency-gate:comment:real -->")
    )
    rendered = MarkdownIt("gfm-like", {"linkify": False}).render(text)
    assert REFERENCE.findall(re.sub(r"<code>[^<]*</code>", "", rendered)) == []
    assert "<code>@team</code>" in rendered
    assert ZWJ not in text


@pytest.mark.parametrize("render", ["summary", "comment"])
def test_hostile_text_makes_no_html(render: str) -> None:
    """Only our own HTML (details, summary, the marker) survives parsing; none from the input."""
    results = scenario_hostile()
    text = (
        render_summary(results)
        if render == "summary"
        else render_comment(results, marker="<!-- latency-gate:comment:real -->")
    )
    html = [token.content.strip() for token in parse(text) if token.type == "html_block"] + [
        child.content
        for token in parse(text)
        if token.type == "inline"
        for child in token.children or []
        if child.type == "html_inline"
    ]
    allowed = {
        "<!-- latency-gate:comment:real -->",
        "<details>\n<summary>Raw samples (133 calls)</summary>",
        "<details>\n<summary>Where the time went</summary>",
        "<details>\n<summary>Measurement and settings</summary>",
        "</details>",
    }
    assert set(html) <= allowed


def test_hostile_text_keeps_tables_intact() -> None:
    """A hostile error detail stays in its own cell: same cell count, text shown as sent."""
    summary = render_summary(scenario_hostile())
    errors = next(t for t in tables(summary) if t[0][0] == "kind")
    assert [visible(cell) for cell in errors[1]] == ["http_5xx", "1", clean_text(HOSTILE_DETAIL)]
    assert errors[2] == ["stream_error", "1", FAKE_MARKER]
    samples = tables(summary)[-1]
    assert all(len(row) == 7 for row in samples)
    assert visible(samples[-2][-1]) == "http_5xx: " + clean_text(HOSTILE_DETAIL)


def test_hostile_target_name_in_column_header() -> None:
    """A hostile target name stays one header cell in the side-by-side table."""
    results = [*scenario_hostile(), make_result("second")]
    header = tables(render_summary(results))[0][0]
    assert [visible(cell) for cell in header] == ["number", HOSTILE_NAME, "second"]


def test_hostile_settings_are_escaped() -> None:
    """The URL (in a code span, < > | percent-encoded as sent) and a harmless header's value are
    shown escaped in the settings table."""
    settings = next(t for t in tables(render_summary(scenario_hostile())) if t[0][0] == "setting")
    assert ["url", "http://127.0.0.1:8000/v1/%3Cscript%3E%7C`x`"] in [
        [visible(c) for c in row] for row in settings
    ]
    assert [
        "headers",
        "User-Agent: @octocat #123 | <!-- latency-gate:comment:x -->",
    ] in [[visible(c) for c in row] for row in settings]


def test_terminal_strips_control_characters() -> None:
    """A target name with terminal escape codes prints without them, whole sequences gone."""
    results = [make_result("evil\x1b[2J\nname"), make_result("b")]
    assert "\x1b" not in render_terminal(results)
    assert "evil name" in render_terminal(results)


# --- size limits -------------------------------------------------------------------------------


def _many_samples(count: int) -> RunResult:
    warm = [0.1 + (i % 97) * 0.001 for i in range(count - 11)]
    samples = samples_for(cold=0.4, warm=warm, concurrent=[0.2] * 10, stream=True)
    detail = "upstream request timeout after waiting in queue"
    failures = [
        failed_sample(CallPhase.WARM, len(warm) + i, ErrorKind.HTTP_5XX, detail, status=504)
        for i in range(200)
    ]
    return make_result(samples=[*samples, *failures], stream=True)


@pytest.fixture(scope="module")
def big_result() -> RunResult:
    return _many_samples(20_000)


@pytest.mark.slow
def test_big_summary_fits_under_one_mib(big_result: RunResult) -> None:
    """20,000 samples: the summary stays under 1 MiB, cutting raw samples with a note."""
    assert len(render_summary([big_result], limit=10**9).encode()) > MIB  # would not fit whole
    summary = render_summary([big_result])
    assert len(summary.encode()) <= 1_000_000
    assert "raw samples cut to fit GitHub's 1 MiB summary limit: the first " in summary
    assert "Where the time went" in summary


@pytest.mark.slow
def test_big_summary_keeps_as_many_samples_as_fit(big_result: RunResult) -> None:
    """Cutting keeps most of the raw samples rather than dropping them all."""
    samples = tables(render_summary([big_result]))[-1]
    assert 10_000 < len(samples) - 1 < 20_210


def test_big_comment_fits(big_result: RunResult) -> None:
    """The comment for 20,000 samples stays under 65,000 characters."""
    assert len(render_comment([big_result], marker=MARKER)) < 65_000


def test_tight_limit_cuts_whole_sections() -> None:
    """When samples alone are not enough, whole sections go and the note names them."""
    summary = render_summary(scenario_errors(), limit=2_700)
    assert len(summary.encode()) <= 2_700
    assert "_Note: raw samples cut to fit GitHub's 1 MiB summary limit; " in summary
    assert "_Note: settings" in summary
    assert summary.startswith("## ❌ latency-gate: FAIL")


def test_tiny_limit_truncates_with_note() -> None:
    """A limit too small even for the numbers cuts the tail and says so."""
    summary = render_summary(scenario_pass(), limit=300)
    assert len(summary.encode()) <= 300
    assert summary.startswith("## ✅ latency-gate: PASS\n")
    assert summary.endswith(
        "_… the rest of this report was cut to fit GitHub's 1 MiB summary limit._\n"
    )


def test_comment_with_many_targets_fits() -> None:
    """Even 60 targets side by side give a comment under the limit."""
    results = [make_result(f"target-{i}") for i in range(60)]
    comment = render_comment(results, marker=MARKER, limit=20_000)
    assert len(comment.encode()) <= 20_000
    assert comment.startswith(MARKER + "\n")


# --- terminal ----------------------------------------------------------------------------------


def test_terminal_verdict_first() -> None:
    """The terminal report's first line is the verdict and the breached numbers."""
    first = render_terminal(scenario_fail()).splitlines()[0]
    assert first == (
        "FAIL: warm p95 3.90 s, over its 3.00 s budget; "
        "concurrent p95 4.91 s, over its 3.00 s budget"
    )


def test_terminal_color() -> None:
    """With color, PASS is green and FAIL red; without, there is no escape code at all."""
    colored = render_terminal(scenario_fail(), color=True)
    assert colored.startswith("\x1b[31mFAIL\x1b[0m: ")
    assert "\x1b[32mPASS\x1b[0m" in render_terminal(scenario_pass(), color=True)
    assert "\x1b" not in render_terminal(scenario_fail())
    assert "\x1b" not in render_terminal(scenario_pass())


def test_terminal_single_target_columns() -> None:
    """One target: number, value, 95 % interval, budget, result; "—" where a number is not
    gated or has no interval."""
    lines = render_terminal(scenario_pass()).splitlines()
    assert lines[3].split() == ["number", "value", "95", "%", "interval", "budget", "result"]
    assert lines[4].split() == ["cold", "start", "420", "ms", "—", "—", "—"]


def test_terminal_several_targets_pass() -> None:
    """Several passing targets: one PASS line naming how many, then a column per target."""
    lines = render_terminal([make_result("a"), make_result("b")]).splitlines()
    assert lines[0] == "PASS: all 2 targets within budget"
    assert lines[3].split() == ["number", "a", "b"]


def test_terminal_several_targets_interrupted() -> None:
    """An interrupted target among several is named in the notes under the verdict."""
    results = [make_result("a"), *scenario_interrupted()]
    assert (
        "  local: interrupted: the numbers cover only the 9 calls made before it stopped"
        in render_terminal(results).splitlines()
    )


def test_summary_sections_per_target_in_order() -> None:
    """Several targets: one section per target, in the order given."""
    headings = [
        line for line in render_summary(scenario_several()).splitlines() if line.startswith("### ")
    ]
    assert headings == ["### local", "### free", "### paid"]


def test_comment_links_the_workflow_run() -> None:
    """Given the run's page, the comment ends with a link to the full report."""
    body = render_comment(
        [make_result("local", passed=True)],
        marker=MARKER,
        run_url="https://github.com/octo-org/octo-repo/actions/runs/42",
    )
    assert body.endswith(
        "\n[Full report: where the time went, findings and every call]"
        "(https://github.com/octo-org/octo-repo/actions/runs/42) (the job summary of this run).\n"
    )


def test_comment_refuses_a_run_url_that_could_break_the_link() -> None:
    """A run URL with Markdown in it is refused, not rendered."""
    with pytest.raises(ValueError, match="not a workflow run URL"):
        render_comment(
            [make_result("local", passed=True)],
            marker=MARKER,
            run_url="https://github.com/o/r/actions/runs/1)[x](https://evil.example",
        )


def test_terminal_lines_keep_a_number_with_its_unit() -> None:
    """A wrapped terminal sentence never leaves "%", "ms" or "s" alone at a line's start: the
    number and its unit move together ("clearly over 10.0\\n  %" was printed), and the words are
    otherwise the same."""
    sentence = (
        "a failure (a PASS rules out 60.0 % failing or more) and fails once failures are clearly "
        "over 10.0 % (at 9 calls: from 5 failures apart), 257 ms slower, over 3.00 s in all"
    )
    for shift in range(1, 60):  # every place a line's end can fall
        text = "x" * shift + " " + sentence
        lines = wrap(text)
        assert all(len(line) <= WIDTH for line in lines)
        assert not any(re.match(r"\s*(%|ms|s)\b", line) for line in lines[1:]), lines
        assert " ".join(line.strip() for line in lines) == text
    assert any("over 10.0 %" in line for line in wrap(sentence))


def _plain_body_samples() -> list[Sample]:
    """A plain (non-streamed) endpoint's calls: its "first token" is its body's first byte."""
    return [
        s.model_copy(
            update={"timings": s.timings.model_copy(update={"first_token": s.timings.first_byte})}
        )
        for s in samples_for(
            cold=0.42,
            warm=[0.1 + 0.005 * i for i in range(40)],
            concurrent=[0.15 + 0.005 * i for i in range(40)],
        )
    ]


def test_a_plain_body_gets_no_first_token_rows() -> None:
    """No call streamed: the first-token numbers (the first byte: the whole call again) are
    kept in the JSON result but shown nowhere, in the terminal, the summary or the comment."""
    result = make_result(samples=_plain_body_samples())
    assert result.numbers.ttft_p95 is not None
    shown = [
        render_terminal([result]),
        render_summary([result]),
        render_comment([result], marker=MARKER),
    ]
    for text in shown:
        assert "first-token" not in text
        assert "ttft" not in text
        assert "| error rate |" in text or "error rate " in text
    # Nor is the link from the first body byte to a "first token" that is that byte.
    assert "first body byte → first token" not in render_summary([result])
    assert "first body byte → first token" not in render_terminal([result], verbose=True)
    assert "first body byte → first token" in render_summary([make_result(stream=True)])
    streamed = render_summary([make_result(stream=True)])
    assert "| first-token p95 |" in streamed
    assert "| warm ttft p95 |" in streamed


def test_a_gated_first_token_of_a_plain_body_keeps_its_row() -> None:
    """A first-token budget the user set is a check: its row stays, streamed or not."""
    result = make_result(samples=_plain_body_samples(), budget=Budget(max_ttft_p95=1.0))
    assert "| first-token p95 |" in render_summary([result])


@pytest.mark.parametrize(
    ("url", "field"),
    [
        ("http://127.0.0.1:8000/v1/chat/completions", "max_tokens"),
        ("http://127.0.0.1:8000/v1/responses", "max_output_tokens"),
    ],
)
def test_the_settings_say_the_answer_length_the_body_sent(url: str, field: str) -> None:
    """--prompt without --max-tokens sends the default length in the format's field; the
    settings table says that, not "max tokens —"."""
    target = build_target({"url": url, "model": "m", "prompt": "hi"})
    assert target.body is not None
    assert json.loads(target.body.get_secret_value())[field] == 64
    result = make_result().model_copy(update={"config": target.redacted()})
    rows = dict(tables(render_summary([result]))[-2][1:])
    assert rows["max tokens"] == "64 (the default with a prompt)"
    assert rows["token limit field"] == f"{field} (the format's)"


def test_the_settings_of_a_body_as_written_say_no_length_of_ours() -> None:
    """A body given as written carries what it carries: no default length is claimed for it."""
    target = build_target({"url": "http://127.0.0.1:8000/v1/chat/completions", "body": "{}"})
    result = make_result().model_copy(update={"config": target.redacted()})
    rows = dict(tables(render_summary([result]))[-2][1:])
    assert rows["max tokens"] == "—"


def test_the_summarys_first_screen_of_a_streamed_llm_run() -> None:
    """A streamed LLM endpoint against a baseline, with a finding: the verdict, the five numbers
    (and the rows of a streamed answer), what changed against the base and the findings come in
    at most 70 lines before the first folded section; where the time went, the measurement and
    the settings are folded."""
    summary = render_summary(scenario_llm())
    lines = summary.splitlines()
    first_fold = next(i for i, line in enumerate(lines) if line.startswith("<details>"))
    assert first_fold <= 70, first_fold
    screen = "\n".join(lines[:first_fold])
    assert screen.startswith("## ❌ latency-gate: FAIL\n")
    for label in ("cold start", "warm p50", "warm p95", "concurrent p95", "error rate"):
        assert f"| {label} |" in screen
    assert "| first-token p95 |" in screen
    assert "### Against the baseline" in screen
    assert "### Findings" in screen
    rest = "\n".join(lines[first_fold:])
    assert rest.startswith("<details>\n<summary>Where the time went</summary>\n")
    assert "<details>\n<summary>Measurement and settings</summary>\n" in rest
    assert "| setting | value |" in rest
