"""The reports as a person sees them: rendered like GitHub renders Markdown, in headless Chromium.

The job summary's chart is checked in the screenshot's pixels. The summary and the comment of a
PASS, a FAIL against a baseline, three targets side by side and a run with no successful call
are rendered by cmark-gfm with GitHub's extensions and read back as shown: no backslash or HTML
entity in the visible text, the verdict and the time to it on the first lines. The screenshots
go to $LATENCY_GATE_SCREENSHOTS when it names a folder (to look at them), else to a tmp folder.

Needs Debian's `chromium` and `cmark-gfm` and npm's `github-markdown-css` (tests/render/setup.sh
installs them). Skips without them, fails instead under LATENCY_GATE_REQUIRE_BROWSER=1 (as on CI).
"""

from __future__ import annotations

import html
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from statistics import median

import pytest
from render.page import (
    CSS,
    Image,
    dump_dom,
    find_chromium,
    find_cmark,
    github_html,
    markdown_to_html,
    read_png,
    screenshot,
)
from report_scenarios import scenario_nodata, scenario_priced, scenario_regressed
from result_factory import make_result

from latency_gate.formatting import md_escape
from latency_gate.models import RunResult
from latency_gate.report.chain import chart_scale
from latency_gate.report.markdown import render_comment, render_summary
from latency_gate.report.view import target_view

pytestmark = pytest.mark.browser

REQUIRE = "LATENCY_GATE_REQUIRE_BROWSER"
WIDTH = 1000
# A solid bar: this many "█" in a row; nothing else in the report draws an ink run this long.
MIN_BAR_CHARS = 12
INK_LUMA = 110  # a pixel darker than this is ink (github-markdown-css text is #1f2328)

# Finds the chart (the code block holding the legend) and records where it is and how wide one
# block character is, for the screenshot to be read against.
MEASURE = """
const pre = [...document.querySelectorAll('pre')].find(p => p.textContent.includes('░ connect'));
if (pre) {
  const probe = document.createElement('span');
  probe.textContent = '█'.repeat(20);
  pre.querySelector('code').appendChild(probe);
  const charWidth = probe.getBoundingClientRect().width / 20;
  probe.remove();
  const r = pre.getBoundingClientRect();
  document.body.dataset.chart = JSON.stringify({
    x: r.left + scrollX, y: r.top + scrollY, width: r.width, height: r.height, charWidth,
    pageHeight: document.documentElement.scrollHeight,
  });
}
"""


@dataclass(frozen=True)
class Browser:
    chromium: str
    css: str


@pytest.fixture(scope="module")
def browser() -> Browser:
    """Chromium and the GitHub Markdown CSS; skip without them, or fail when required."""
    chromium = find_chromium()
    missing = []
    if chromium is None:
        missing.append("chromium is not installed")
    if not CSS.is_file():
        missing.append(f"github-markdown-css is not installed ({CSS} missing)")
    if missing:
        reason = "; ".join(missing) + ": run tests/render/setup.sh"
        if os.environ.get(REQUIRE) == "1":
            pytest.fail(f"{reason} ({REQUIRE}=1 says it must be available)", pytrace=False)
        pytest.skip(reason)
    assert chromium is not None
    return Browser(chromium, CSS.read_text(encoding="utf-8"))


def _bars(line: str) -> int:
    """The longest run of solid blocks in one chart line."""
    return max((len(run) for run in re.findall("█+", line)), default=0)


def _ink_runs(image: Image, box: dict[str, float]) -> list[int]:
    """For each pixel row inside the box: the longest run of ink pixels, in pixels."""
    left, right = int(box["x"]), min(int(box["x"] + box["width"]), image.width)
    top, bottom = int(box["y"]), min(int(box["y"] + box["height"]), image.height)
    runs = []
    for row in image.rows[top:bottom]:
        longest = current = 0
        for r, g, b in row[left:right]:
            if 0.299 * r + 0.587 * g + 0.114 * b < INK_LUMA:
                current += 1
                longest = max(longest, current)
            else:
                current = 0
        runs.append(longest)
    return runs


def _bands(runs: list[int], minimum: float) -> list[int]:
    """Groups of adjacent rows with an ink run of at least `minimum`: each band's median run.

    The median, because the bar's "─" tail joins the solid part on one or two rows only.
    """
    bands: list[list[int]] = []
    inside = False
    for run in runs:
        if run >= minimum:
            if inside:
                bands[-1].append(run)
            else:
                bands.append([run])
            inside = True
        else:
            inside = False
    return [int(median(band)) for band in bands]


def _render_and_read(
    browser: Browser, markdown: str, folder: Path
) -> tuple[Image, dict[str, float]]:
    page = folder / "summary.html"
    page.write_text(markdown_to_html(markdown, browser.css, MEASURE), encoding="utf-8")
    dom = dump_dom(browser.chromium, page, width=WIDTH)
    found = re.search(r'data-chart="([^"]*)"', dom)
    assert found is not None, "the chart's code block is not in the rendered page"
    box: dict[str, float] = json.loads(found.group(1).replace("&quot;", '"'))
    shot = folder / "summary.png"
    height = int(box["pageHeight"]) + 50
    screenshot(browser.chromium, page, shot, width=WIDTH, height=height)
    return read_png(shot), box


def test_chart_bars_render_as_solid_bars(browser: Browser, tmp_path: Path) -> None:
    """Each chart line's run of █ shows as one solid bar of the same length in the screenshot."""
    result = make_result("free", passed=False)
    view = target_view(result, chart_scale([result]))
    expected = [_bars(line) for line in view.chart]
    assert min(expected) >= MIN_BAR_CHARS  # the fixture draws a long bar on every line

    # The chart is in a folded section (where the time went): shown as a reader who opened it.
    summary = render_summary([result])
    assert "<details>" in summary
    image, box = _render_and_read(browser, summary.replace("<details>", "<details open>"), tmp_path)

    assert box["charWidth"] > 3
    bands = _bands(_ink_runs(image, box), MIN_BAR_CHARS * box["charWidth"] * 0.8)
    assert len(bands) == len(expected), f"{len(bands)} solid bars seen, {len(expected)} drawn"
    for seen, chars in zip(bands, expected, strict=True):
        assert seen == pytest.approx(chars * box["charWidth"], rel=0.1)


def test_screenshot_check_fails_when_the_chart_is_not_a_code_block(
    browser: Browser, tmp_path: Path
) -> None:
    """The same chart with its fence lost (so it flows as a paragraph) is not found as a chart."""
    markdown = render_summary([make_result("free", passed=False)]).replace("```text\n", "\n")
    with pytest.raises(AssertionError, match="not in the rendered page"):
        _render_and_read(browser, markdown, tmp_path)


# --- the reports as GitHub shows them ----------------------------------------------------------

SHOTS_FOLDER = "LATENCY_GATE_SCREENSHOTS"
MARKER = "<!-- latency-gate:comment:ci/gate:abc123 -->"
QUERY_URL = "https://api.example.com/v1/chat/completions?first_ms=1&n=2"
SHOWN_URL = "https://api.example.com/v1/chat/completions?first_ms=***&n=***"
# The article's text as shown (innerText: what a reader could select), its links' texts, and the
# page's height for the screenshot.
READ = """
const article = document.querySelector('article');
document.body.dataset.read = JSON.stringify({
  text: article.innerText,
  links: [...article.querySelectorAll('a')].map(a => a.textContent),
  height: document.documentElement.scrollHeight,
});
"""
VISIBLE_ESCAPES = re.compile(r"\\|&(?:amp|lt|gt|quot|#\d+);")


def _with_query_url(results: list[RunResult]) -> list[RunResult]:
    """The runs with a target URL whose query GitHub's autolink would once have mangled."""
    return [r.model_copy(update={"config": {**r.config, "url": SHOWN_URL}}) for r in results]


SHOTS: dict[str, Callable[[], list[RunResult]]] = {
    "pass": lambda: _with_query_url([make_result()]),
    "fail-baseline": scenario_regressed,
    "side-by-side": scenario_priced,
    "no-call": lambda: _with_query_url(scenario_nodata()),
}
RENDERS: dict[str, Callable[[list[RunResult]], str]] = {
    "summary": render_summary,
    "comment": lambda results: render_comment(results, marker=MARKER),
}


@dataclass(frozen=True)
class GitHub:
    browser: Browser
    cmark: str


@dataclass(frozen=True)
class Reading:
    text: str
    links: list[str]
    screenshot: Path

    @property
    def lines(self) -> list[str]:
        return [line.strip() for line in self.text.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def github(browser: Browser) -> GitHub:
    """cmark-gfm beside the browser; skip without it, or fail when required."""
    cmark = find_cmark()
    if cmark is None:
        reason = "cmark-gfm is not installed: run tests/render/setup.sh"
        if os.environ.get(REQUIRE) == "1":
            pytest.fail(f"{reason} ({REQUIRE}=1 says it must be available)", pytrace=False)
        pytest.skip(reason)
    return GitHub(browser, cmark)


def _shots_folder(tmp_path: Path) -> Path:
    named = os.environ.get(SHOTS_FOLDER)
    if not named:
        return tmp_path
    folder = Path(named)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _read_as_shown(github: GitHub, markdown: str, folder: Path, name: str) -> Reading:
    """The Markdown rendered as GitHub renders it, read back from the page, and screenshot."""
    page = folder / f"{name}.html"
    page.write_text(github_html(github.cmark, markdown, github.browser.css, READ), encoding="utf-8")
    dom = dump_dom(github.browser.chromium, page, width=WIDTH)
    found = re.search(r'data-read="([^"]*)"', dom)
    assert found is not None, "the page's script did not run"
    read = json.loads(html.unescape(found.group(1)))
    shot = folder / f"{name}.png"
    height = min(int(read["height"]) + 50, 16_000)
    screenshot(github.browser.chromium, page, shot, width=WIDTH, height=height)
    return Reading(read["text"], read["links"], shot)


@pytest.mark.parametrize("report", RENDERS)
@pytest.mark.parametrize("scenario", SHOTS)
def test_report_reads_as_written_on_github(
    github: GitHub, tmp_path: Path, scenario: str, report: str
) -> None:
    """As GitHub shows it: no backslash or entity in the visible text or a link, the verdict
    heading first and the time to it on the next line, the target's URL as written."""
    results = SHOTS[scenario]()
    reading = _read_as_shown(
        github, RENDERS[report](results), _shots_folder(tmp_path), f"{report}-{scenario}"
    )
    assert reading.screenshot.stat().st_size > 10_000
    assert VISIBLE_ESCAPES.findall(reading.text) == []
    assert [link for link in reading.links if VISIBLE_ESCAPES.search(link)] == []
    word = "PASS" if all(r.verdict.passed for r in results) else "FAIL"
    assert reading.lines[0] == f"{'✅' if word == 'PASS' else '❌'} latency-gate: {word}"
    assert re.search(r"(Verdict|Interrupted) in \d", reading.lines[1]), reading.lines[:3]
    if report == "summary" and results[0].config["url"] == SHOWN_URL:
        assert f"POST {SHOWN_URL}" in reading.text


def test_read_check_sees_what_github_did_to_an_escaped_url(github: GitHub, tmp_path: Path) -> None:
    """The check can fail: a URL escaped like prose (the reports before this) shows its
    backslashes and &amp; in GitHub's autolink."""
    markdown = f"Target **local**: POST {md_escape(SHOWN_URL)}\n"
    reading = _read_as_shown(github, markdown, tmp_path, "escaped-url")
    assert set(VISIBLE_ESCAPES.findall(reading.text)) == {"\\", "&amp;"}
    assert any("\\" in link for link in reading.links)
