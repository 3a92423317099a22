"""The report a person reads: the first lines say the verdict, how long it took and how many calls
it spent, what failed (with no successful call, that), what stayed undecided; the terminal keeps
a target's detail for a failing one or -v; progress says why each look after the first is taken.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator

import pytest
from click.testing import CliRunner
from result_factory import failed_sample, healthy_samples, make_result, samples_for

from latency_gate import cli
from latency_gate.action.annotations import annotate
from latency_gate.demo import EndpointSpec, serve_in_thread
from latency_gate.measure.engine import Progress
from latency_gate.models import CallPhase, ErrorKind, Finding, RunResult
from latency_gate.report.markdown import render_comment, render_summary
from latency_gate.report.progress import Look, ProgressLog, describe_look, progress_printer
from latency_gate.report.terminal import VERBOSE_HINT, render_terminal

MARKER = "<!-- latency-gate:comment:ci/gate:abc123 -->"
UNDECIDED = "warm p95 regression undecided: head / base 1.24 to 2.36"
PASS_MEANING = "PASS rules out 12 % or more of calls over 3 s, after 40 calls"
FAIL_MEANING = "FAIL rules out 2 % or fewer of calls over 3 s, after 20 calls"


def no_success() -> RunResult:
    samples = [
        failed_sample(phase, i, ErrorKind.CONNECTION_REFUSED, "[Errno 111] Connection refused")
        for phase, count in ((CallPhase.COLD, 1), (CallPhase.WARM, 3), (CallPhase.CONCURRENT, 2))
        for i in range(count)
    ]
    return make_result(samples=samples)


def with_gate_words(
    result: RunResult, *, undecided: tuple[str, ...] = (), meanings: dict[str, str] | None = None
) -> RunResult:
    """The result with the verdict's undecided items and the checks' meanings set, as the gate
    of issue 18 gives them."""
    meanings = meanings or {}
    checks = tuple(
        check.model_copy(update={"meaning": meanings.get(check.number, "")})
        for check in result.verdict.checks
    )
    verdict = result.verdict.model_copy(update={"checks": checks, "undecided": undecided})
    return result.model_copy(update={"verdict": verdict})


def annotations_of(result: RunResult) -> list[str]:
    out = io.StringIO()
    annotate(result, out)
    return out.getvalue().splitlines()


# --- time to a verdict -------------------------------------------------------------------------


def test_summary_and_comment_say_the_time_to_a_verdict_first() -> None:
    """How long the run took and the calls it spent against the cap, on the line under the
    heading, in both reports."""
    for text in (render_summary([make_result()]), render_comment([make_result()], marker=MARKER)):
        lines = text.removeprefix(MARKER + "\n").splitlines()
        assert lines[:3] == [
            "## ✅ latency-gate: PASS",
            "",
            "Every gated number is within its budget. Verdict in 12.3 s, after 131 of at most "
            "500 calls.",
        ]


def test_time_to_a_verdict_of_several_targets_spans_them() -> None:
    """Several targets: from the first start to the last finish, the calls and caps summed."""
    first = make_result("a")
    later = make_result("b").model_copy(
        update={"started_at": first.finished_at + 1, "finished_at": first.finished_at + 31}
    )
    lines = render_summary([first, later]).splitlines()
    assert lines[2] == (
        "All 2 targets are within budget. Verdict in 43.3 s, after 262 of at most 1,000 calls."
    )
    assert render_terminal([first, later]).splitlines()[1] == (
        "  Verdict in 43.3 s, after 262 of at most 1,000 calls."
    )


def test_failed_verdict_lists_what_failed_under_the_time() -> None:
    """FAIL: the time to the verdict, then a line per breached number."""
    lines = render_summary([make_result(passed=False)]).splitlines()
    assert lines[2:4] == ["Verdict in 12.3 s, after 31 of at most 500 calls:", ""]
    assert lines[4].startswith("- warm p95 3.90 s, over its 3.00 s budget — FAIL after 20 calls")
    assert lines[5].startswith("- concurrent p95 4.91 s, over its 3.00 s budget — FAIL after 10")


# --- no successful call ------------------------------------------------------------------------


def test_no_successful_call_is_said_once_everywhere() -> None:
    """With no successful call every report says what happened, and none says a number "is no
    data, over its budget"."""
    result = no_success()
    said = (
        "no call succeeded: 6 of 6 failed (6 connection_refused), so no latency could be measured"
    )
    terminal = render_terminal([result])
    summary = render_summary([result])
    comment = render_comment([result], marker=MARKER)
    assert terminal.splitlines()[0] == f"FAIL: {said}"
    assert summary.splitlines()[4] == "- " + said.replace("_", "\\_")
    assert "- " + said.replace("_", "\\_") in comment
    notes = annotations_of(result)
    assert notes[0] == (f"::error title=latency-gate%3A no call succeeded::{said} (local)")
    for text in (terminal, summary, comment, *notes):
        assert "no data, over" not in text
        assert "is no data" not in text


def test_a_phase_without_a_successful_call_says_which() -> None:
    """Warm calls fine, every concurrent call failed: concurrent p95 "not measured" and why."""
    samples = [
        *samples_for(cold=0.3, warm=[0.1] * 40, concurrent=[]),
        *(
            failed_sample(CallPhase.CONCURRENT, i, ErrorKind.HTTP_5XX, status=503)
            for i in range(10)
        ),
    ]
    result = make_result(samples=samples)
    expected = "concurrent p95 not measured: none of the 10 concurrent calls succeeded"
    assert expected in render_terminal([result]).splitlines()[0]
    assert f"- {expected}" in render_summary([result])
    assert (
        f"::error title=latency-gate%3A concurrent p95 not measured::{expected} (local)"
    ) in annotations_of(result)


# --- undecided items and meanings --------------------------------------------------------------


def test_undecided_items_beside_the_verdict_in_every_report() -> None:
    """An undecided item that did not fail the run is on the first lines of every report and a
    warning annotation."""
    result = with_gate_words(make_result(), undecided=(UNDECIDED,))
    assert render_terminal([result]).splitlines()[2] == (
        f"  undecided, without failing the run: {UNDECIDED}"
    )
    for text in (render_summary([result]), render_comment([result], marker=MARKER)):
        assert (
            f"\n\n> [!NOTE]\n> Undecided, without failing the run:\n> - {UNDECIDED}\n\n| number |"
        ) in text
    assert (
        f"::warning title=latency-gate%3A undecided::{UNDECIDED} (local); it did not fail the run"
    ) in annotations_of(result)


def test_undecided_items_are_untrusted_text() -> None:
    """Undecided items are escaped in Markdown and cannot start a workflow command."""
    hostile = "x <b>y</b>\n::error::z @octocat"
    result = with_gate_words(make_result(), undecided=(hostile,))
    summary = render_summary([result])
    assert "<b>" not in summary
    assert "> - x &lt;b&gt;y&lt;/b&gt; ::error::z `@octocat`\n" in summary
    assert all(line.startswith("::") for line in annotations_of(result))
    assert "%0A::error::z" in "\n".join(annotations_of(result))


def test_meanings_under_the_numbers_in_summary_and_comment() -> None:
    """What each outcome ruled out, a line per check that says it, below the numbers table."""
    result = with_gate_words(make_result(), meanings={"warm_p95": PASS_MEANING})
    for text in (render_summary([result]), render_comment([result], marker=MARKER)):
        assert "| error rate |" in text
        assert f" |\n\n* warm p95: {PASS_MEANING}\n\n" in text


def test_a_failing_checks_meaning_is_beside_its_breach() -> None:
    """A breach in the first lines carries its meaning; the terminal shows it in the detail."""
    result = with_gate_words(make_result(passed=False), meanings={"warm_p95": FAIL_MEANING})
    assert f"- warm p95 3.90 s, over its 3.00 s budget — {FAIL_MEANING}\n" in render_summary(
        [result]
    )
    assert f"warm p95: {FAIL_MEANING}" in render_terminal([result]).splitlines()


def test_terminal_shows_a_passing_checks_meaning_only_with_verbose() -> None:
    """A passing check's meaning is detail: shown with -v."""
    result = with_gate_words(make_result(), meanings={"warm_p95": PASS_MEANING})
    assert PASS_MEANING not in render_terminal([result])
    assert f"warm p95: {PASS_MEANING}" in render_terminal([result], verbose=True).splitlines()


# --- the terminal's first screen ---------------------------------------------------------------


def three_passing() -> list[RunResult]:
    return [
        make_result(name, samples=healthy_samples(stream=True), stream=True)
        for name in ("local", "free", "paid")
    ]


def test_terminal_leaves_a_passing_targets_detail_to_verbose() -> None:
    """Passing targets: verdict, numbers, comparison and a hint; -v adds each one's detail."""
    short = render_terminal(three_passing(), hint=VERBOSE_HINT)
    assert "where the time went (p50" not in short
    assert "measurement floor" not in short
    assert short.rstrip().endswith(VERBOSE_HINT)
    long = render_terminal(three_passing(), verbose=True, hint=VERBOSE_HINT)
    assert [line for line in long.splitlines() if line.endswith("(PASS):")] == [
        "local (PASS):",
        "free (PASS):",
        "paid (PASS):",
    ]
    assert long.count("measurement floor:") == 3
    assert VERBOSE_HINT not in long


def test_terminal_of_three_passing_targets_fits_a_screen() -> None:
    """Three passing streamed targets with a finding each fit in 30 lines, none over 100 wide."""
    finding = Finding(
        code="buffered_stream",
        title="Buffered stream: the answer arrives all at once",
        evidence="a stream was asked for, but all 24 tokens arrived in one burst",
        hint="h",
    )
    results = [result.model_copy(update={"findings": (finding,)}) for result in three_passing()]
    lines = render_terminal(results, hint=VERBOSE_HINT).splitlines()
    assert len(lines) <= 30
    assert max(len(line) for line in lines) <= 100


def test_terminal_shows_a_failing_targets_detail() -> None:
    """Among several targets, the failing one's detail follows under its name, and only its."""
    results = [make_result("a"), make_result("b", passed=False)]
    lines = render_terminal(results).splitlines()
    assert "b (FAIL):" in lines
    assert "a (PASS):" not in lines
    assert "  where the time went (p50 / p95):" in lines


# --- a line per look -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("look", "line"),
    [
        (
            Look(2, 20, 2, 10, "undecided: warm_p95"),
            "local: look 2: 40 more calls, because warm p95 is undecided",
        ),
        (
            Look(3, 0, 1, 10, "undecided: concurrent_p95, error_rate, ttft_warm_p95"),
            "local: look 3: 10 more calls, because concurrent p95, error rate and warm ttft p95 "
            "are undecided",
        ),
        (
            Look(2, 20, 0, 10, "warm p95 needs more calls\nto decide"),
            "local: look 2: 20 more calls: warm p95 needs more calls to decide",
        ),
        (Look(2, 0, 1, 1, ""), "local: look 2: 1 more call"),
    ],
)
def test_describe_look(look: Look, line: str) -> None:
    """A look's line: how many more calls of which kind, and the gate's reason as a sentence
    when it lists the undecided checks, as the gate words it otherwise."""
    assert describe_look(look, "local") == line


def test_progress_printers_print_a_line_per_look() -> None:
    """Both printers keep a look's line: the log's among its stage lines, the live one as a
    line of its own before the line it rewrites."""
    log = io.StringIO()
    printer = ProgressLog(log).printer("local")
    printer(Progress("warm", 0, 20))
    printer.look(Look(2, 20, 0, 10, "undecided: warm_p95"))
    assert log.getvalue().splitlines()[1] == (
        "local: look 2: 20 more calls, because warm p95 is undecided"
    )
    live = io.StringIO()
    progress_printer("local", live, live=True).look(Look(2, 20, 0, 10, "undecided: warm_p95"))
    assert live.getvalue() == (
        "\r\x1b[2Klocal: look 2: 20 more calls, because warm p95 is undecided\n"
    )


@pytest.fixture(scope="module")
def fast_url() -> Iterator[str]:
    with serve_in_thread(EndpointSpec(name="fast", latency=0.005, tokens=2)) as servers:
        yield servers[0].url


@pytest.mark.slow
def test_probe_logs_each_look_and_verbose_shows_the_detail(fast_url: str) -> None:
    """A real run that takes more looks than one: stderr has a line for each, saying how many
    more calls and why; -v prints the detail a passing run leaves out."""
    runner = CliRunner()
    args = ["probe", fast_url, "--no-floor", "--warm-calls", "5", "--concurrency", "2"]
    short = runner.invoke(cli.main, args)
    assert short.exit_code == 0, short.output
    looks = [line for line in short.stderr.splitlines() if ": look " in line]
    assert looks, short.stderr
    assert re.fullmatch(r"endpoint: look 2: \d+ more calls(, because |: ).+", looks[0])
    assert "where the time went (p50" not in short.stdout
    assert short.stdout.rstrip().endswith(VERBOSE_HINT)
    verbose = runner.invoke(cli.main, [*args, "-v"])
    assert verbose.exit_code == 0, verbose.output
    assert "where the time went (p50 / p95):" in verbose.stdout
    assert VERBOSE_HINT not in verbose.stdout


def test_no_successful_call_shows_what_the_endpoint_said_in_the_comment() -> None:
    """The comment has no table of errors: the example of each kind goes under the line."""
    comment = render_comment([no_success()], marker=MARKER)
    assert (
        "failed (6 connection\\_refused), so no latency could be measured\n"
        "  - connection\\_refused: \\[Errno 111\\] Connection refused\n"
    ) in comment


def test_side_by_side_table_says_each_targets_calls_and_time() -> None:
    """Several targets: the last row gives each one's calls and how long it took."""
    summary = render_summary([make_result("a"), make_result("b", passed=False)])
    assert "| calls, time | 131 in 12.3 s | 31 in 12.3 s |\n" in summary


def test_findings_of_a_passing_target_are_titles_beside_others_with_evidence_alone() -> None:
    """A passing target's findings: with one target title and evidence, among several titles."""
    finding = Finding(code="long-tail", title="Long tail", evidence="p95 is 10x p50", hint="h")
    one = render_terminal([make_result(findings=[finding])]).splitlines()
    assert one[one.index("findings:") + 1 : one.index("findings:") + 3] == [
        f"  {finding.title}",
        f"    {finding.evidence}",
    ]
    several = render_terminal([make_result("a", findings=[finding]), make_result("b")])
    assert f"\nfindings:\n  a: {finding.title}\n" in several
    assert finding.evidence not in several
