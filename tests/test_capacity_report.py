"""The capacity in the verdict and the reports: the check row and --min-capacity, the regression
against a baseline and a history, the sentence, the table of levels, the Mermaid chart (read
back from headless Chromium), the terminal's lines, the comment's line, golden files.

    UPDATE_GOLDEN=1 python -m pytest tests/test_capacity_report.py -q   # rewrite the goldens
"""

from __future__ import annotations

import html
import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from render.page import (
    CSS,
    MERMAID,
    dump_dom,
    find_chromium,
    find_cmark,
    github_html,
    mermaid_script,
)
from result_factory import STARTED_AT, TOOL_VERSION, healthy_samples, make_target

from latency_gate.action.annotations import annotate
from latency_gate.assess.budget.clumps import Clumps
from latency_gate.assess.compare.baseline import BaselinePlan
from latency_gate.assess.compare.history import HistoryPlan, TargetHistory
from latency_gate.assess.load.at_once import CapacityRun, RunLevel
from latency_gate.assess.load.levels import LevelCalls, LevelLimits
from latency_gate.assess.result import assess_run
from latency_gate.config.regression import DEFAULT_LIMIT
from latency_gate.measurement import Measurement
from latency_gate.models import CallPhase, Capacity, RunResult, Sample, StampSource
from latency_gate.report.load import capacity_view
from latency_gate.report.markdown import render_comment, render_summary
from latency_gate.report.terminal import render_terminal

GOLDEN = Path(__file__).parent / "golden"
MARKER = "<!-- latency-gate:comment:ci/gate:abc123 -->"
BUDGET = 3.0


def check_golden(name: str, actual: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(actual, encoding="utf-8")
    assert path.exists(), f"no golden file {path}: run with UPDATE_GOLDEN=1"
    assert actual == path.read_text(encoding="utf-8")


def _sample(index: int, latency: float) -> Sample:
    return Sample(
        phase=CallPhase.CONCURRENT,
        index=index,
        started_at=STARTED_AT + 20,
        ok=True,
        latency=latency,
        status=200,
        stamp_source=StampSource.KERNEL,
    )


def _searched(per_call: float, *, maximum: int = 64) -> Capacity:
    """The search from the run's 10 at once against an endpoint whose call i of a burst of c
    takes per_call x c + 2 ms x i: with per_call 0.11 s, 26 at once hold 3 s and 27 do not."""
    start = RunLevel(
        10,
        LevelCalls(latencies=tuple(0.15 + 0.005 * i for i in range(90)), clumps=Clumps(90)),
        (10, 30, 50, 70, 90),
    )
    run = CapacityRun(
        LevelLimits(concurrent_p95=BUDGET, error_rate=0.01),
        maximum=maximum,
        room=10_000,
        start=start,
    )
    while (c := run.next_burst()) is not None:
        run.add_burst([_sample(i, per_call * c + 0.002 * i) for i in range(c)], per_call * c)
    return run.capacity()


def _result(
    capacity: Capacity | None,
    *,
    min_capacity: int | None = None,
    baseline: BaselinePlan | None = None,
    history: HistoryPlan | None = None,
    on_undecided_regression: str = "pass",
) -> RunResult:
    target = make_target().model_copy(
        update={
            "capacity": True,
            "min_capacity": min_capacity,
            "on_undecided_regression": on_undecided_regression,
        }
    )
    judged = assess_run(
        target,
        Measurement(list(healthy_samples()), started_at=STARTED_AT),
        finished_at=STARTED_AT + 42.5,
        stamp_source=StampSource.KERNEL,
        capacity=capacity,
        baseline=baseline,
        history=history,
    )
    return judged.model_copy(update={"tool_version": TOOL_VERSION})


def _flat(text: str) -> str:
    return " ".join(text.split())


# --- the search's figure and its sentence ----------------------------------------------------


def test_the_sentence_of_a_search_that_ended() -> None:
    """Doubling from 10 to 40 (broke), then halving: 26 held, 27 broke."""
    capacity = _searched(0.11)
    assert [lv.concurrency for lv in capacity.levels] == [10, 20, 40, 30, 25, 27, 26]
    view = capacity_view(_result(capacity))
    assert view is not None
    assert view.headline == (
        "holds concurrent p95 ≤ 3.00 s up to 26 calls at once; breaks at 27 (p95 3.02 s)"
    )
    assert [row.level for row in view.rows] == [
        "10 (the run's)",
        "20",
        "25",
        "26",
        "27",
        "30",
        "40",
    ]


@pytest.mark.parametrize(
    ("per_call", "maximum", "headline"),
    [
        (
            0.01,
            64,
            "holds concurrent p95 ≤ 3.00 s up to 64 calls at once, the most searched "
            "(capacity-max 64)",
        ),
        (4.0, 64, "does not hold concurrent p95 ≤ 3.00 s even one call at a time (p95 4.00 s)"),
    ],
)
def test_the_sentence_at_the_ends(per_call: float, maximum: int, headline: str) -> None:
    """Every level holding up to capacity-max; not even one call holding (from a c0 that
    broke)."""
    capacity = _searched(per_call, maximum=maximum)
    if per_call > 1:  # c0 held in _searched's script: make the run's own level break too
        capacity = _broken_start(per_call)
    view = capacity_view(_result(capacity))
    assert view is not None
    assert view.headline == headline


def _broken_start(per_call: float) -> Capacity:
    start = RunLevel(10, LevelCalls(latencies=(per_call * 10,) * 10, clumps=Clumps(10)), (10,))
    run = CapacityRun(LevelLimits(concurrent_p95=BUDGET), maximum=64, room=10_000, start=start)
    while (c := run.next_burst()) is not None:
        run.add_burst([_sample(i, per_call * c) for i in range(c)], per_call * c)
    return run.capacity()


# --- the verdict -----------------------------------------------------------------------------


def test_reported_not_gated_without_a_minimum() -> None:
    """The capacity is a row of the numbers, with no budget, and the run passes."""
    result = _result(_searched(0.11))
    row = next(c for c in result.verdict.checks if c.number == "capacity")
    assert (row.value, row.limit, row.passed) == (26.0, None, None)
    assert result.verdict.passed


def test_min_capacity_fails_the_run_with_what_the_levels_ruled_out() -> None:
    """26 found against 30 asked: FAIL, with the level that held and the one that broke, each
    with what its test ruled out and how often such a level is decided wrongly."""
    result = _result(_searched(0.11), min_capacity=30)
    assert not result.verdict.passed
    assert result.verdict.reasons == ("capacity under its minimum",)
    row = next(c for c in result.verdict.checks if c.number == "capacity")
    assert (row.value, row.limit, row.passed) == (26.0, 30.0, False)
    assert row.meaning == (
        "FAIL: 26 at once, under the 30 asked. 26 held after 104 calls by the test (rules out a "
        "p95 over 3.00 s, wrong at most 2.5 % of the time); 27 broke after 81 calls by the test "
        "(rules out a p95 within 3.00 s, wrong at most 1.0 % of the time)"
    )
    assert len(row.meaning) < 300  # whole in every report (untrusted text is cut at 300)
    passing = _result(_searched(0.11), min_capacity=26)
    assert passing.verdict.passed


def test_the_annotation_says_under_its_minimum() -> None:
    """The action's ::error for the capacity says it is under the minimum asked."""
    import io

    out = io.StringIO()
    annotate(_result(_searched(0.11), min_capacity=30), out)
    assert (
        "::error title=latency-gate%3A capacity under its minimum::capacity 26 at once, under "
        "the ≥ 30 at once asked (local)"
    ) in out.getvalue()


def test_a_run_that_never_searched_fails_its_minimum() -> None:
    """No capacity (the run stopped before its looks ended) against a minimum: no data, FAIL."""
    result = _result(None, min_capacity=4)
    row = next(c for c in result.verdict.checks if c.number == "capacity")
    assert (row.passed, row.note) == (False, "no data")
    assert "capacity has no data" in result.verdict.reasons


# --- against a base --------------------------------------------------------------------------


def test_a_drop_in_capacity_against_the_baseline_is_a_regression() -> None:
    """Base 26 at once, head 13 (every call twice as slow): lower than 26 / 1.1, regressed."""
    base = _result(_searched(0.11))
    plan = BaselinePlan("base.json", DEFAULT_LIMIT, {"local": base})
    head = _result(_searched(0.22), baseline=plan)
    assert head.capacity is not None
    assert head.capacity.found == 13
    delta = next(d for d in head.baseline.deltas if d.number == "capacity")  # type: ignore[union-attr]
    assert (delta.base, delta.head, delta.regressed, delta.outcome) == (
        26.0,
        13.0,
        True,
        "regressed",
    )
    assert not head.verdict.passed
    assert head.verdict.reasons == (
        "regression: capacity 26 at once → 13 at once (-50 %): regresses below 23.64 calls at "
        "once (the base's 26 less the 10 % limit)",
    )
    same = _result(_searched(0.11), baseline=plan)
    assert same.verdict.passed


def test_a_base_held_to_another_budget_is_not_compared() -> None:
    """A capacity at 2 s and one at 3 s say different things: shown, not compared."""
    base = _result(_searched(0.11))
    assert base.capacity is not None
    other = base.model_copy(update={"capacity": base.capacity.model_copy(update={"limit": 2.0})})
    plan = BaselinePlan("base.json", DEFAULT_LIMIT, {"local": other})
    head = _result(_searched(0.22), baseline=plan)
    delta = next(d for d in head.baseline.deltas if d.number == "capacity")  # type: ignore[union-attr]
    assert not delta.regressed
    assert delta.note == "not compared: the base's levels were held to 2.00 s, this run's to 3.00 s"


def test_against_a_history_the_median_capacity_is_the_base() -> None:
    """Three earlier runs at 26, 26 and 13 at once: the median, 26; a head at 13 regressed."""
    runs = tuple(_result(_searched(p)) for p in (0.11, 0.22, 0.11))
    plan = HistoryPlan(".latency-history", DEFAULT_LIMIT, targets={"local": TargetHistory(runs)})
    head = _result(_searched(0.22), history=plan)
    delta = next(d for d in head.baseline.deltas if d.number == "capacity")  # type: ignore[union-attr]
    assert (delta.base, delta.head, delta.regressed) == (26.0, 13.0, True)


# --- the reports -----------------------------------------------------------------------------

SCENARIOS: dict[str, Callable[[], RunResult]] = {
    "capacity": lambda: _result(_searched(0.11), min_capacity=20),
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_reports_golden(scenario: str) -> None:
    """The summary, the comment and the terminal of a run with its capacity."""
    result = SCENARIOS[scenario]()
    check_golden(f"summary_{scenario}.md", render_summary([result]))
    check_golden(f"comment_{scenario}.md", render_comment([result], marker=MARKER))
    check_golden(f"terminal_{scenario}.txt", render_terminal([result]))


def test_the_summary_s_capacity_section() -> None:
    """The sentence, the chart, a row per level by concurrency, the cost of the search."""
    summary = render_summary([_result(_searched(0.11))])
    assert "### Capacity" in summary
    assert (
        "**Holds concurrent p95 ≤ 3.00 s up to 26 calls at once; breaks at 27 (p95 3.02 s).**"
        in summary
    )
    assert "| 26 | 104 | 4 | 2.91\u00a0s | 0 | ✅ held | by the test | 11.4\u00a0s |" in summary
    assert "| 27 | 81 | 3 | 3.02\u00a0s | 0 | ❌ broke | by the test | 8.91\u00a0s |" in summary
    assert _flat("The search: 525 calls in") in _flat(summary)
    assert "```mermaid" in summary


def test_the_chart_is_ours_and_draws_the_budget() -> None:
    """Bars by calls at once (sorted), the budget a flat line, the title in our words."""
    view = capacity_view(_result(_searched(0.11)))
    assert view is not None
    assert view.chart is not None
    lines = view.chart.mermaid
    assert '    x-axis "calls at once" ["10", "20", "25", "26", "27", "30", "40"]' in lines
    assert '    title "p95 by calls at once (red: the budget, 3.00 s)"' in lines
    assert lines[-1] == "    line [" + ", ".join(["3"] * 7) + "]"
    assert any(line.startswith("    bar [") for line in lines)


def test_the_comment_says_the_capacity_in_one_line() -> None:
    """The comment: the sentence and what the search cost."""
    comment = render_comment([_result(_searched(0.11))], marker=MARKER)
    assert re.search(
        r"\*\*Capacity\*\*: holds concurrent p95 ≤ 3\.00 s up to 26 calls at once; breaks at 27 "
        r"\(p95 3\.02 s\) \(the search: 525 calls in [\d.]+ s\)\.",
        comment,
    )


def test_the_terminal_says_a_few_lines() -> None:
    """The sentence, a line per level, the search's calls and time."""
    text = render_terminal([_result(_searched(0.11))])
    assert "capacity: holds concurrent p95 ≤ 3.00 s up to 26 calls at once; breaks at 27" in text
    assert "  26                104  2.91 s  held by the test" in text
    assert "  the search: 525 calls in" in text


# --- as a person sees it -----------------------------------------------------------------------

READ = """
const charts = [...document.querySelectorAll('svg[aria-roledescription="xychart"]')];
document.body.dataset.read = JSON.stringify(charts.map(svg => ({
  title: svg.querySelector('.chart-title text')?.textContent ?? '',
  bars: [...svg.querySelectorAll('g[class^="bar-plot-"] rect')].map(r => [
    Number(r.getAttribute('x')), Number(r.getAttribute('y')), Number(r.getAttribute('height'))]),
  lines: [...svg.querySelectorAll('g[class^="line-plot-"] path')].map(p => p.getAttribute('d')),
  labels: [...svg.querySelectorAll('.bottom-axis .label text')].map(t => t.textContent),
})));
"""


@pytest.mark.browser
def test_the_chart_is_drawn_in_the_summary(tmp_path: Path) -> None:
    """GitHub's Markdown (cmark-gfm) and npm's mermaid in headless Chromium draw the chart: a
    bar per level, left to right by concurrency, taller with it, and the budget a flat line
    between the bars that held and those that broke."""
    chromium, cmark = find_chromium(), find_cmark()
    if chromium is None or cmark is None or not CSS.is_file() or not MERMAID.is_file():
        reason = (
            "chromium, cmark-gfm, github-markdown-css or mermaid missing: tests/render/setup.sh"
        )
        if os.environ.get("LATENCY_GATE_REQUIRE_BROWSER") == "1":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    summary = render_summary([_result(_searched(0.11))])
    page = tmp_path / "capacity.html"
    page.write_text(
        github_html(
            cmark, summary, CSS.read_text("utf-8"), mermaid_script(READ), head_scripts=(MERMAID,)
        ),
        encoding="utf-8",
    )
    dom = dump_dom(chromium, page, width=1000)
    state = re.search(r'data-mermaid="([^"]*)"', dom)
    assert state is not None
    assert html.unescape(state.group(1)) == "drawn 1"
    found = re.search(r'data-read="([^"]*)"', dom)
    assert found is not None
    (chart,) = json.loads(html.unescape(found.group(1)))
    assert chart["title"] == "p95 by calls at once (red: the budget, 3.00 s)"
    assert chart["labels"] == ["10", "20", "25", "26", "27", "30", "40"]
    bars = sorted(chart["bars"])  # by x: left to right
    assert len(bars) == 7
    heights = [height for _, _, height in bars]
    assert heights == sorted(heights)  # p95 grows with the calls at once
    (budget,) = chart["lines"]
    ys = {float(y) for y in re.findall(r"[ML]\s*[-\d.]+[ ,]([-\d.]+)", budget)}
    assert len(ys) == 1  # flat
    line_y = ys.pop()
    tops = [y for _, y, _ in bars]  # SVG y grows downward: a bar over the line has a smaller top
    assert all(top > line_y for top in tops[:4])  # 10 to 26 held: under the budget
    assert all(top < line_y for top in tops[4:])  # 27 and over broke: above it


def test_a_search_stopped_by_the_cap_cannot_show_a_drop() -> None:
    """Head stopped by max-calls at "at least 13" against a base of 26: undecided, not a
    regression, said beside the verdict; with on-undecided-regression: fail, a regression by
    policy that fails the run (as the percentiles' undecided rows do)."""
    base = _result(_searched(0.11))
    plan = BaselinePlan("base.json", DEFAULT_LIMIT, {"local": base})
    cut = _searched(0.11).model_copy(
        update={"found": 13, "complete": False, "stopped_by_cap": True, "stopped": "max-calls"}
    )
    head = _result(cut, baseline=plan)
    delta = next(d for d in head.baseline.deltas if d.number == "capacity")  # type: ignore[union-attr]
    assert (delta.regressed, delta.outcome, delta.decided) == (False, "undecided", False)
    assert head.verdict.passed
    assert any(item.startswith("capacity regression undecided") for item in head.verdict.undecided)
    failing = _result(cut, baseline=plan, on_undecided_regression="fail")
    assert not failing.verdict.passed
    (reason,) = failing.verdict.reasons
    assert reason.startswith(
        "undecided regression, counted as one by policy (on-undecided-regression: fail): "
        "capacity 26 at once → 13 at once (-50 %): regresses below 23.64 calls at once"
    )


def _near_budget(on_undecided: str = "estimate") -> Capacity:
    """Held up to 12 at once, near the budget from 13 to 16 (3 % of calls over it), broken from
    17 (30 % over): the levels around the figure cannot all be told apart."""

    def latency(c: int, i: int) -> float:
        share = 0.0 if c <= 12 else 0.03 if c <= 16 else 0.3
        return 3.5 if (i * 7919 % 100) < share * 100 else 1.0

    limits = LevelLimits(concurrent_p95=BUDGET, on_undecided=on_undecided)
    start = RunLevel(10, LevelCalls(latencies=(1.0,) * 90, clumps=Clumps(90)), (90,))
    run = CapacityRun(limits, maximum=64, room=100_000, start=start)
    while (c := run.next_burst()) is not None:
        run.add_burst([_sample(i, latency(c, i)) for i in range(c)], 1.0)
    return run.capacity()


def test_levels_near_the_budget_make_the_figure_an_interval() -> None:
    """The sentence says between 12 and 16, which levels were near, and the one that broke."""
    capacity = _near_budget()
    assert (capacity.found, capacity.upper, capacity.breaking) == (12, 16, 17)
    view = capacity_view(_result(capacity))
    assert view is not None
    assert view.headline == (
        "holds concurrent p95 ≤ 3.00 s between 12 and 16 calls at once: 12 held, 13, 15 and 16 "
        "were near the budget (the calls could not tell), 17 broke (p95 3.50 s)"
    )
    assert "⚠️ near the budget" in render_summary([_result(capacity)])


@pytest.mark.parametrize(
    ("minimum", "on_undecided", "passed", "decided"),
    [
        (12, "estimate", True, True),  # 12 held: shown
        (14, "estimate", True, False),  # between 12 and 16: not decided on a coin
        (14, "fail", False, False),
        (17, "estimate", False, True),  # 17 broke: at most 16
    ],
)
def test_min_capacity_is_decided_against_the_interval(
    minimum: int, on_undecided: str, passed: bool, decided: bool
) -> None:
    """--min-capacity passes when the figure reaches it, fails when the interval's top is under
    it, and between the two is undecided: it passes, said so, unless on-undecided is fail."""
    from latency_gate.assess.load.verdict import capacity_check

    row = capacity_check(_near_budget(on_undecided), minimum)
    assert row is not None
    assert (row.passed, row.decided) == (passed, decided)
    if not decided:
        assert row.meaning.startswith(
            f"{'PASS' if passed else 'FAIL'}: undecided, the capacity is between 12 and 16 at "
            f"once and the {minimum} asked lies between"
        )
    if minimum == 17:
        assert row.meaning.startswith("FAIL: at most 16 at once, under the 17 asked")


def test_a_drop_inside_the_interval_is_undecided() -> None:
    """Against a base that held 16, a head between 12 and 16 cannot show a drop past the 10 %
    limit (under 14.5) nor rule one out: undecided, not regressed; a head told apart at 12
    regresses."""
    from latency_gate.assess.load.regression import search_delta
    from latency_gate.config.regression import RegressionLimit

    head = _near_budget()
    base = head.model_copy(update={"found": 16, "upper": None, "breaking": 17})
    limit = RegressionLimit(relative=0.10)
    delta = search_delta("capacity", head, [base], limit)
    assert delta is not None
    assert (delta.outcome, delta.regressed, delta.decided) == ("undecided", False, False)
    assert "this run's capacity is between 12 and 16" in delta.note
    told_apart = head.model_copy(update={"upper": None, "breaking": 13})
    dropped = search_delta("capacity", told_apart, [base], limit)
    assert dropped is not None
    assert dropped.regressed
