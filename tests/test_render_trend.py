"""The trend as a picture (report/trend.py): the Mermaid `xychart-beta` of a history's runs and
this one, checked as text and as a person sees it.

The text tests pin what the charts hold and that nothing but our own words and numbers goes in.
The browser tests render the job summary and the PR comment as GitHub does (cmark-gfm, then npm's
`mermaid` loaded from tests/render/node_modules in headless Chromium) and read the drawn SVG back:
one line with a point per run, the budget as a flat second line, the runs' colour in the
screenshot's pixels. Screenshots go to $LATENCY_GATE_SCREENSHOTS when it names a folder.
"""

from __future__ import annotations

import html
import itertools
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

import pytest
from goodput_driver import goodput_against_history
from render.page import (
    CSS,
    MERMAID,
    dump_dom,
    find_chromium,
    find_cmark,
    github_html,
    mermaid_script,
    read_png,
    screenshot,
)
from report_scenarios import HOSTILE_NAME, scenario_history, scenario_history_few
from result_factory import STARTED_AT, make_result, make_target

from latency_gate.assess.compare.history import HistoryPlan
from latency_gate.assess.result import assess_run
from latency_gate.config.regression import DEFAULT_LIMIT
from latency_gate.measurement import Measurement
from latency_gate.models import HistoryRun, Numbers, RunResult, StampSource
from latency_gate.report.markdown import render_comment, render_summary
from latency_gate.report.trend import (
    BUDGET_COLOUR,
    RUNS_COLOUR,
    axis_top,
    chart_number,
    label_layout,
    trend_charts,
)

MARKER = "<!-- latency-gate:comment:ci/gate:abc123 -->"
WIDTH = 1000
REQUIRE = "LATENCY_GATE_REQUIRE_BROWSER"
DAY = 86_400.0

# --- the charts as text ------------------------------------------------------------------------


def test_no_chart_without_a_history() -> None:
    """A plain run, and a run whose history had no usable run, draw no chart."""
    assert trend_charts(make_result()) == ()
    (first,) = scenario_history()
    empty = first.model_copy(
        update={
            "baseline": first.baseline.model_copy(  # type: ignore[union-attr]
                update={"history": first.baseline.history.model_copy(update={"runs": ()})}  # type: ignore[union-attr]
            )
        }
    )
    assert trend_charts(empty) == ()
    assert "```mermaid" not in render_summary([make_result()])
    assert "```mermaid" not in render_comment([make_result()], marker=MARKER)


def test_charts_of_the_gated_p95s_and_warm_p50() -> None:
    """Warm p95 and concurrent p95 (gated) and warm p50: ten dated runs and "this run"; the
    budget (1 s, within reach of the values) as a flat second line."""
    (result,) = scenario_history()
    charts = trend_charts(result)
    assert [c.number for c in charts] == ["warm_p95", "concurrent_p95", "warm_p50"]
    warm = charts[0]
    assert [label for label, _ in warm.points] == [
        *(f"Nov {day:02d}" for day in range(4, 14)),
        "this run",
    ]
    assert warm.points[-1][1] == result.numbers.warm_p95
    assert warm.budget == 1.0
    assert warm.budget_drawn
    source = warm.mermaid
    assert source[source.index("xychart-beta") + 1] == (
        '    title "warm p95, 10 earlier runs and this one (red: the budget, 1.00 s)"'
    )
    assert source[-1] == "    line [" + ", ".join(["1"] * 11) + "]"
    assert '    y-axis "seconds" 0 --> 1.5' in source
    assert f'      plotColorPalette: "{RUNS_COLOUR}, {BUDGET_COLOUR}"' in source
    assert charts[2].budget is None
    assert not any(line.startswith("    line [1,") for line in charts[2].mermaid)


def test_a_budget_far_above_the_values_is_said_not_drawn() -> None:
    """The default 3 s budget over values near 0.3 s would flatten the line: the title gives
    it in words instead."""
    (result,) = scenario_history_few()
    warm = trend_charts(result)[0]
    assert warm.budget == 1.0
    assert not warm.budget_drawn
    assert 'title "warm p95, 2 earlier runs and this one (budget 1.00 s, above the chart)"' in (
        " ".join(warm.mermaid)
    )
    assert sum(line.startswith("    line [") for line in warm.mermaid) == 1


def test_the_goodput_is_charted_over_the_history() -> None:
    """A nightly goodput search's trend: the rate each earlier search held (a run without one
    left out) and this run's, in requests a second, the floor (--min-rate) the red line."""
    result = goodput_against_history([1.5, None, 1.83, 1.68])
    assert result.goodput is not None
    assert result.goodput.found == 1.68
    assert result.baseline is not None
    assert result.baseline.history is not None
    assert [run.goodput for run in result.baseline.history.runs] == [1.5, None, 1.83, 1.68]
    chart = trend_charts(result)[-1]
    assert chart.number == "goodput"
    assert [label for label, _ in chart.points] == ["Nov 10", "Nov 12", "Nov 13", "this run"]
    assert [value for _, value in chart.points] == [1.5, 1.83, 1.68, 1.68]
    assert (chart.budget, chart.budget_drawn) == (1.0, True)
    source = chart.mermaid
    assert source[source.index("xychart-beta") + 1] == (
        '    title "goodput at p95 ≤ 1.00 s, 3 earlier runs and this one (red: the minimum, 1/s)"'
    )
    assert '    y-axis "requests a second" 0 --> 2' in source
    assert source[-1] == "    line [1, 1, 1, 1]"
    assert "goodput at p95" in render_summary([result])


def test_no_goodput_chart_without_an_earlier_search() -> None:
    """Earlier runs that searched no goodput, or a run that searched none itself: no chart."""
    assert "goodput" not in [c.number for c in trend_charts(goodput_against_history([None, None]))]
    plain = goodput_against_history([1.5, 1.6]).model_copy(update={"goodput": None})
    assert "goodput" not in [c.number for c in trend_charts(plain)]


def test_chart_text_is_ours_alone() -> None:
    """A hostile target name never reaches a chart: labels are dates and "this run"."""
    (result,) = scenario_history()
    hostile = result.model_copy(update={"target": HOSTILE_NAME})
    comment = render_comment([hostile], marker=MARKER)
    block = comment[comment.index("```mermaid") : comment.index("```", comment.index("xychart"))]
    assert HOSTILE_NAME not in block
    assert re.fullmatch(r"[\w\s\"',.:()\[\]>#-]*", block.removeprefix("```mermaid")), block


def test_the_comment_carries_one_compact_chart() -> None:
    """One chart in the comment, the first gated p95's, lower than the summary's."""
    (result,) = scenario_history()
    comment = render_comment([result], marker=MARKER)
    assert comment.count("```mermaid") == 1
    assert 'title "warm p95, ' in comment
    assert "    height: 280" in comment
    assert render_summary([result]).count("```mermaid") == 3


def test_history_wording_in_the_reports() -> None:
    """The baseline notes say "against the history of K runs (prediction interval, drift
    between runs included)"; the fallback says it compared with the newest run only."""
    (result,) = scenario_history()
    assert (
        "- Against the history of 10 runs (prediction interval, drift between runs included): "
        "2 numbers regressed beyond the runs' spread and the 10 % limit."
        in render_summary([result])
    )
    few = render_comment(scenario_history_few(), marker=MARKER)
    assert "- Against the newest run of the history: no number regressed" in few
    assert (
        "> history: 2 usable runs, fewer than 3: compared with the newest one only; drift between "
        "runs is not accounted for (skipped: 1 run of other settings)." in few
    )


def test_a_first_run_says_no_history() -> None:
    """No folder yet: the reports say "No history", with no chart."""
    head = make_result()

    judged = assess_run(
        make_target(),
        Measurement(list(head.samples), started_at=head.started_at),
        finished_at=head.finished_at,
        stamp_source=StampSource.KERNEL,
        history=HistoryPlan(".latency-history", DEFAULT_LIMIT),
    )
    summary = render_summary([judged])
    assert "> **No history**: no history folder at .latency-history (a first run?)." in summary
    assert "```mermaid" not in summary


def _with_runs(runs: list[HistoryRun]) -> RunResult:
    """The history scenario's head, its history's runs replaced by `runs` (oldest first)."""
    (result,) = scenario_history()
    check = result.baseline
    assert check is not None
    assert check.history is not None
    history = check.history.model_copy(update={"runs": tuple(runs)})
    return result.model_copy(update={"baseline": check.model_copy(update={"history": history})})


def _runs(
    starts: list[float], warm: list[float | None] | None = None, commits: list[str] | None = None
) -> list[HistoryRun]:
    """Earlier runs started at these times, with these warm p95s (0.3 s each by default)."""
    values = warm or [0.3] * len(starts)
    return [
        HistoryRun(
            started_at=start,
            numbers=Numbers(
                cold_start=0.4,
                warm_p50=0.2 if value is not None else None,
                warm_p95=value,
                concurrent_p95=0.35,
                error_rate=0.0,
            ),
            calls=31,
            failed=0,
            commit=None if commits is None else commits[i],
        )
        for i, (start, value) in enumerate(zip(starts, values, strict=True))
    ]


MINUTE = STARTED_AT - 3600.0  # 21:13:20 UTC on Nov 14, 2023


def test_runs_that_share_a_minute_get_names_of_their_own() -> None:
    """Re-runs within a minute were all "Nov 14 21:13", one point on Mermaid's axis: now the
    second tells them apart, and "(2)" runs that share even that; the newest at the right."""
    starts = [MINUTE, MINUTE + 5, MINUTE + 5, MINUTE + 30]
    warm = trend_charts(_with_runs(_runs(starts)))[0]
    assert [label for label, _ in warm.points] == [
        "Nov 14 21:13:20",
        "Nov 14 21:13:25",
        "Nov 14 21:13:25 (2)",
        "Nov 14 21:13:50",
        "this run",
    ]


def test_runs_are_named_by_commit_and_day() -> None:
    """A run that recorded its commit (GITHUB_SHA) is named by its short SHA and its day; a
    second run of one commit on one day (a re-run) is its "(2)"."""
    commits = ["a1b2c3d" + "0" * 33, "b2c3d4e" + "0" * 33, "b2c3d4e" + "0" * 33]
    starts = [MINUTE - 2 * DAY, MINUTE, MINUTE + 600]
    warm = trend_charts(_with_runs(_runs(starts, commits=commits)))[0]
    assert [label for label, _ in warm.points] == [
        "a1b2c3d Nov 12",
        "b2c3d4e Nov 14",
        "b2c3d4e Nov 14 (2)",
        "this run",
    ]
    assert "      labelRotation: -45" not in warm.mermaid  # four fit level


def test_a_run_without_the_number_is_left_out_of_its_chart() -> None:
    """A run with no warm p95 is no point of the warm p95 chart (the title counts the others),
    and a single earlier run still makes a chart of two points."""
    charts = trend_charts(_with_runs(_runs([MINUTE - DAY, MINUTE], warm=[None, 0.3])))
    warm = charts[0]
    assert [label for label, _ in warm.points] == ["Nov 14", "this run"]
    assert "warm p95, 1 earlier run and this one" in warm.title


def test_chart_numbers_are_plain_decimals() -> None:
    """Mermaid draws nothing for "5e-05": every number is written without an exponent, to the
    microsecond, and the axis top is at least 10 µs."""
    assert [chart_number(v) for v in (5e-5, 5e-324, 86_399.0, 0.5, 1.0, 0.1234567)] == [
        "0.00005",
        "0",
        "86399",
        "0.5",
        "1",
        "0.123457",
    ]
    assert chart_number(axis_top(5e-324)) == "0.00001"


def test_many_runs_are_slanted_widened_and_capped() -> None:
    """Ten short labels stand level in Mermaid's 700 px; 30 runs are slanted, 60 widened; a
    history of more than 60 runs charts its newest 60, and the title says so."""
    assert label_layout(["Nov 04"] * 10 + ["this run"]) == (700, False)
    assert label_layout(["Nov 04 21:13"] * 30) == (720, True)
    assert label_layout(["Nov 04"] * 61) == (1402, True)
    starts = [MINUTE - i * 3600.0 for i in range(100, 0, -1)]
    warm = trend_charts(_with_runs(_runs(starts)))[0]
    assert len(warm.points) == 61
    assert "warm p95, the newest 60 of 100 earlier runs and this one" in warm.title


# --- as a person sees it -------------------------------------------------------------------------

# Each drawn chart's lines (their SVG paths), titles and x labels, and the page's height and the
# charts' boxes for the screenshot, recorded once mermaid has drawn them.
READ = """
const charts = [...document.querySelectorAll('svg[aria-roledescription="xychart"]')];
document.body.dataset.read = JSON.stringify({
  height: document.documentElement.scrollHeight,
  charts: charts.map(svg => {
    const box = svg.getBoundingClientRect();
    return {
      title: svg.querySelector('.chart-title text')?.textContent ?? '',
      lines: [...svg.querySelectorAll('g[class^="line-plot-"] path')].map(p => p.getAttribute('d')),
      labels: [...svg.querySelectorAll('.bottom-axis .label text')].map(t => t.textContent),
      spans: [...svg.querySelectorAll('.bottom-axis .label text')].map(t => {
        const b = t.getBoundingClientRect();
        return [b.left, b.right, b.top, b.bottom];
      }),
      box: [box.left + scrollX, box.top + scrollY, box.width, box.height],
    };
  }),
});
"""


class Chart(TypedDict):
    """One drawn chart, as the page's script read it back."""

    title: str
    lines: list[str]  # each plotted line's SVG path
    labels: list[str]  # the x axis
    spans: list[list[float]]  # each x label's box on the page: left, right, top, bottom
    box: list[float]  # left, top, width, height on the page


@dataclass(frozen=True)
class Drawn:
    mermaid: str  # "drawn N" or the error
    charts: list[Chart]
    screenshot: Path


def _tools() -> tuple[str, str]:
    chromium, cmark = find_chromium(), find_cmark()
    missing = [
        why
        for why, ok in (
            ("chromium is not installed", chromium is not None),
            ("cmark-gfm is not installed", cmark is not None),
            (f"github-markdown-css is not installed ({CSS} missing)", CSS.is_file()),
            (f"mermaid is not installed ({MERMAID} missing)", MERMAID.is_file()),
        )
        if not ok
    ]
    if missing:
        reason = "; ".join(missing) + ": run tests/render/setup.sh"
        if os.environ.get(REQUIRE) == "1":
            pytest.fail(f"{reason} ({REQUIRE}=1 says it must be available)", pytrace=False)
        pytest.skip(reason)
    assert chromium is not None
    assert cmark is not None
    return chromium, cmark


def _folder(tmp_path: Path) -> Path:
    named = os.environ.get("LATENCY_GATE_SCREENSHOTS")
    if not named:
        return tmp_path
    Path(named).mkdir(parents=True, exist_ok=True)
    return Path(named)


def _draw(
    markdown: str, folder: Path, name: str, *, scripts: tuple[Path, ...] = (MERMAID,)
) -> Drawn:
    chromium, cmark = _tools()
    page = folder / f"{name}.html"
    text = github_html(
        cmark, markdown, CSS.read_text("utf-8"), mermaid_script(READ), head_scripts=scripts
    )
    page.write_text(text, encoding="utf-8")
    dom = dump_dom(chromium, page, width=WIDTH)
    state = re.search(r'data-mermaid="([^"]*)"', dom)
    read = re.search(r'data-read="([^"]*)"', dom)
    assert read is not None, "the page's script did not run"
    found = json.loads(html.unescape(read.group(1)))
    shot = folder / f"{name}.png"
    screenshot(chromium, page, shot, width=WIDTH, height=min(int(found["height"]) + 50, 16_000))
    return Drawn(html.unescape(state.group(1)) if state else "", found["charts"], shot)


def _points(path: str) -> list[tuple[float, float]]:
    """The vertices of an SVG path of straight segments ("M x,y L x,y ...")."""
    return [(float(x), float(y)) for x, y in re.findall(r"[ML]\s*([-\d.]+)[ ,]([-\d.]+)", path)]


def _ink(shot: Path, box: list[float], colour: str) -> int:
    """Pixels within the box within a small distance of `colour` (#rrggbb)."""
    image = read_png(shot)
    want = tuple(int(colour[i : i + 2], 16) for i in (1, 3, 5))
    left, top, width, height = (int(v) for v in box)
    count = 0
    for row in image.rows[top : min(top + height, image.height)]:
        for pixel in row[left : min(left + width, image.width)]:
            if sum(abs(a - b) for a, b in zip(pixel, want, strict=True)) < 60:
                count += 1
    return count


@pytest.mark.browser
def test_summary_charts_drawn_with_a_point_per_run(tmp_path: Path) -> None:
    """The job summary's three charts are drawn: each a line with a point per run (ten and this
    run), left to right; the p95s' budget a flat line above; this run's warm p95 the highest
    point; the runs' blue and the budget's red on screen."""
    (result,) = scenario_history()
    drawn = _draw(render_summary([result]), _folder(tmp_path), "trend-summary")
    assert drawn.mermaid == "drawn 3"
    assert [c["title"] for c in drawn.charts] == [
        "warm p95, 10 earlier runs and this one (red: the budget, 1.00 s)",
        "concurrent p95, 10 earlier runs and this one (red: the budget, 1.00 s)",
        "warm p50, 10 earlier runs and this one",
    ]
    for chart in drawn.charts:
        runs = _points(chart["lines"][0])
        assert len(runs) == 11
        assert [x for x, _ in runs] == sorted(x for x, _ in runs)
        assert chart["labels"] == [*(f"Nov {d:02d}" for d in range(4, 14)), "this run"]
        _readable(chart)
    warm_runs, warm_budget = (_points(p) for p in drawn.charts[0]["lines"])
    assert len({y for _, y in warm_budget}) == 1  # flat
    assert warm_budget[0][1] < min(y for _, y in warm_runs)  # above every run (SVG y grows down)
    assert warm_runs[-1][1] == min(y for _, y in warm_runs)  # this run: the highest point
    assert len(drawn.charts[2]["lines"]) == 1
    box = drawn.charts[0]["box"]
    assert _ink(drawn.screenshot, box, RUNS_COLOUR) > 200
    assert _ink(drawn.screenshot, box, BUDGET_COLOUR) > 200


@pytest.mark.browser
def test_the_goodput_chart_is_drawn(tmp_path: Path) -> None:
    """The goodput's trend in the job summary is drawn: a point per run with a search (three
    and this run), left to right, and the floor a flat red line under them all."""
    result = goodput_against_history([1.5, None, 1.83, 1.68])
    drawn = _draw(render_summary([result]), _folder(tmp_path), "trend-goodput")
    chart = next(c for c in drawn.charts if c["title"].startswith("goodput at p95"))
    assert chart["labels"] == ["Nov 10", "Nov 12", "Nov 13", "this run"]
    runs, floor = (_points(p) for p in chart["lines"])
    assert len(runs) == 4
    assert [x for x, _ in runs] == sorted(x for x, _ in runs)
    assert len({y for _, y in floor}) == 1  # flat
    assert floor[0][1] > max(y for _, y in runs)  # under every run (SVG y grows down)
    assert runs[1][1] == min(y for _, y in runs)  # 1.83/s: the highest point
    _readable(chart)
    assert _ink(drawn.screenshot, chart["box"], BUDGET_COLOUR) > 200


@pytest.mark.browser
def test_comment_chart_drawn(tmp_path: Path) -> None:
    """The comment's one chart is drawn, with eleven points."""
    (result,) = scenario_history()
    drawn = _draw(render_comment([result], marker=MARKER), _folder(tmp_path), "trend-comment")
    assert drawn.mermaid == "drawn 1"
    (chart,) = drawn.charts
    assert len(_points(chart["lines"][0])) == 11


@pytest.mark.browser
def test_the_check_sees_a_chart_that_was_not_drawn(tmp_path: Path) -> None:
    """The check can fail: without mermaid on the page, or with a chart Mermaid cannot read,
    no chart is drawn and the page says why."""
    (result,) = scenario_history()
    markdown = render_comment([result], marker=MARKER)
    bare = _draw(markdown, tmp_path, "no-mermaid", scripts=())
    assert bare.charts == []
    assert bare.mermaid.startswith("error: ReferenceError: mermaid is not defined")
    broken = _draw(markdown.replace("x-axis [", "x-axis (", 1), tmp_path, "broken")
    assert broken.charts == []
    assert broken.mermaid.startswith("error: ")


def _xs(chart: Chart) -> list[float]:
    return [x for x, _ in _points(chart["lines"][0])]


@pytest.mark.browser
def test_charts_of_awkward_histories_are_drawn_a_point_a_run(tmp_path: Path) -> None:
    """Drawn in Chromium: runs that share a minute (they shared one x: one point), runs of one
    commit, a single earlier run, a run with no value, and values from 5e-324 s to 86,399 s
    (Mermaid drew no chart for "4.94066e-324"): each chart drawn, a point per run at x of its
    own, left to right, this run at the right."""
    commits = [f"{i:07x}" + "0" * 33 for i in range(12)]
    histories = {
        "shared minute": _runs([MINUTE, MINUTE + 5, MINUTE + 5, MINUTE + 30]),
        "one commit": _runs([MINUTE + i for i in range(12)], commits=[commits[0]] * 12),
        "commits": _runs([MINUTE - i * DAY for i in range(12, 0, -1)], commits=commits),
        "single": _runs([MINUTE]),
        "no value": _runs([MINUTE - DAY, MINUTE, MINUTE + DAY], warm=[0.3, None, 0.3]),
        "far apart": _runs([MINUTE - 2 * DAY, MINUTE - DAY, MINUTE], warm=[5e-324, 86_399.0, 1e-5]),
    }
    markdown = ""
    expected = []
    for name, runs in histories.items():
        (warm, *_) = trend_charts(_with_runs(runs))
        markdown += f"## {name}\n\n```mermaid\n" + "\n".join(warm.mermaid) + "\n```\n\n"
        expected.append([label for label, _ in warm.points])
    drawn = _draw(markdown, _folder(tmp_path), "trend-awkward")
    assert drawn.mermaid == f"drawn {len(histories)}"
    for chart, labels in zip(drawn.charts, expected, strict=True):
        assert chart["labels"] == labels
        assert len(set(labels)) == len(labels)
        xs = _xs(chart)
        assert len(xs) == len(labels)
        assert xs == sorted(xs)
        assert len(set(xs)) == len(xs)  # no two runs on one x
        assert chart["labels"][-1] == "this run"
        _readable(chart)


def _readable(chart: Chart) -> None:
    """No x label runs into the next: level ones side by side, slanted ones (whose boxes are
    upright rectangles around a slanted line) each starting and ending further right."""
    spans = chart["spans"]
    slanted = any(bottom - top > 30 for _, _, top, bottom in spans)
    for (left, right, _, _), (next_left, next_right, _, _) in itertools.pairwise(spans):
        if slanted:
            assert next_left > left + 10
            assert next_right > right + 10
        else:
            assert right <= next_left
