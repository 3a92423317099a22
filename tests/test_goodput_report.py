"""Calls at a rate in the reports: the summary's section (sentence, chart, a row per level, the
cost, the client's send lag, the two capacities side by side), the comment's line, the
terminal's lines, the chart's Mermaid source, and the chart as headless Chromium draws it."""

from __future__ import annotations

import html
import json
import os
import re
from pathlib import Path

import pytest
from goodput_driver import goodput_target, one_slot_search
from render.page import (
    CSS,
    MERMAID,
    dump_dom,
    find_chromium,
    find_cmark,
    github_html,
    mermaid_script,
)
from result_factory import STARTED_AT, TOOL_VERSION, healthy_samples

from latency_gate.assess.result import assess_run
from latency_gate.measurement import Measurement
from latency_gate.models import Capacity, Goodput, RunResult, StampSource
from latency_gate.report.load import goodput_view
from latency_gate.report.markdown import render_comment, render_summary
from latency_gate.report.terminal import render_terminal

MARKER = "<!-- latency-gate:comment:ci/gate:abc123 -->"


def _result(goodput: Goodput, *, capacity: Capacity | None = None) -> RunResult:
    target = goodput_target(min_rate=2.0)
    judged = assess_run(
        target,
        Measurement(list(healthy_samples()), started_at=STARTED_AT),
        finished_at=STARTED_AT + 42.5,
        stamp_source=StampSource.KERNEL,
        goodput=goodput,
    )
    return judged.model_copy(update={"tool_version": TOOL_VERSION, "capacity": capacity})


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_the_summary_s_goodput_section() -> None:
    """The sentence (an interval: the levels above the one that held were near the budget),
    the chart, a row per level by rate with the near ones marked, the cost, the send lag, and
    the 2/s minimum inside the interval undecided, passed by on-undecided."""
    goodput = one_slot_search()
    summary = render_summary([_result(goodput)])
    assert "### Goodput" in summary
    assert (goodput.found, goodput.upper, goodput.breaking) == (1.68, None, None)
    assert (
        "**Holds p95 ≤ 1.00 s up to at least 1.68/s (poisson arrivals): 1.68/s held, 108 output "
        "tokens/s (rules out a p95 over 1.00 s; wrong at most 2.5 %); 1.83/s and 2/s were near "
        "the budget (their calls could not tell); no rate tried broke it.**"
    ) in summary
    assert "| rate | offered | calls | judged | p95 from due |" in summary
    rows = [line for line in summary.splitlines() if re.match(r"\| [\d.]+/s \|", line)]
    assert len(rows) == len(goodput.levels)
    assert sum("⚠️ near the budget | undecided at its end |" in row for row in rows) == 2
    assert "```mermaid" in summary
    assert _flat("The search: ") in _flat(summary)
    assert "a level still undecided at its end is near the budget." in _flat(summary)
    assert "the client kept up" in summary
    assert "* 2/s was near the budget after 167 judged calls of 175" in summary
    assert "| goodput | 1.68/s | — | ≥ 2/s | ⚠️ undecided → ✅ PASS | 661 |" in summary


def test_the_chart_is_ours_and_draws_the_budget() -> None:
    """Bars by rate (sorted, as the report prints them), the budget a flat line."""
    goodput = one_slot_search()
    view = goodput_view(_result(goodput))
    assert view is not None
    assert view.chart is not None
    lines = view.chart.mermaid
    rates = sorted(level.rate for level in goodput.levels)
    labels = ", ".join(f'"{rate:g}/s"' for rate in rates)
    assert f'    x-axis "requests a second" [{labels}]' in lines
    assert '    title "p95 from due by rate (red: the budget, 1.00 s)"' in lines
    assert lines[-1] == "    line [" + ", ".join(["1"] * len(rates)) + "]"


def test_the_comment_and_the_terminal_say_it_briefly() -> None:
    """The comment: the sentence and what it cost; the terminal: the sentence, a line a level,
    the cost, the send lag."""
    goodput = one_slot_search()
    result = _result(goodput)
    comment = render_comment([result], marker=MARKER)
    assert re.search(r"\*\*Goodput\*\*: holds p95 ≤ 1\.00 s up to at least [\d.]+/s", comment)
    text = render_terminal([result])
    assert f"goodput: holds p95 ≤ 1.00 s up to at least {goodput.found:g}/s" in text
    assert "near undecided at its end" in text
    assert "  rate  " in text
    assert "send lag p95" in text


def test_the_two_capacities_are_said_side_by_side() -> None:
    """A run with both figures says how they relate (Little's law) and which is for what."""
    capacity = Capacity(
        found=3,
        complete=True,
        reached_max=False,
        stopped_by_cap=False,
        breaking=4,
        breaking_p95=1.2,
        limit=1.0,
        start=3,
        maximum=64,
        calls=0,
        seconds=0.0,
        levels=(),
    )
    view = goodput_view(_result(one_slot_search(), capacity=capacity))
    assert view is not None
    assert "Little's law" in view.side_by_side
    assert "3 calls started together held the budget" in view.side_by_side


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
    bar per level, left to right by rate, and the budget a flat line under the bars of the
    levels that broke and over those that held."""
    chromium, cmark = find_chromium(), find_cmark()
    if chromium is None or cmark is None or not CSS.is_file() or not MERMAID.is_file():
        reason = (
            "chromium, cmark-gfm, github-markdown-css or mermaid missing: tests/render/setup.sh"
        )
        if os.environ.get("LATENCY_GATE_REQUIRE_BROWSER") == "1":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    goodput = one_slot_search()
    summary = render_summary([_result(goodput)])
    page = tmp_path / "goodput.html"
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
    assert chart["title"] == "p95 from due by rate (red: the budget, 1.00 s)"
    levels = sorted(goodput.levels, key=lambda lv: lv.rate)
    assert chart["labels"] == [f"{lv.rate:g}/s" for lv in levels]
    bars = sorted(chart["bars"])
    assert len(bars) == len(levels)
    (budget,) = chart["lines"]
    ys = {float(y) for y in re.findall(r"[ML]\s*[-\d.]+[ ,]([-\d.]+)", budget)}
    assert len(ys) == 1  # flat
    line_y = ys.pop()
    for (_, top, _), level in zip(bars, levels, strict=True):
        # SVG y grows downward: a bar over the line has a smaller top.
        assert (top > line_y) == ((level.p95 or 0) <= 1.0)
