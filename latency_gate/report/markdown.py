"""Reports: the Jinja environment, its filters, and a renderer for each place a run is shown.

Markdown goes where GitHub renders it (the job summary, a PR comment). Every string that an
endpoint or a user supplied (error details, target names, URLs, header values, evidence) passes
through the `md` filter (`md_text`: `md_escape`, with URLs in code spans) or `md_url` in the
templates, so it cannot break a table, open an HTML tag, fake our hidden comment marker, notify
anyone, or show up as a link full of backslashes.

Sizes: GitHub drops a step summary over 1 MiB whole and refuses a comment over 65,536
characters. The renderers measure UTF-8 bytes (never fewer than characters) and cut, in order,
the raw samples, then whole sections, then the tail, saying what was cut.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import jinja2

from latency_gate.assess.compare.cheapest import compare_targets, in_cost_order
from latency_gate.formatting import SENTENCE_CAP, fmt_duration, fmt_percent, fmt_value
from latency_gate.models import RunResult
from latency_gate.report.chain import CHART_SEGMENTS, chain_cell, chart_scale
from latency_gate.report.cost import md_dollars
from latency_gate.report.deltas import (
    baseline_source_markdown,
    delta_rows,
    history_heading,
    history_rows,
    length_sentence,
    no_regression_text,
    origins_text,
    part_rows,
    regressed_text,
    regression_limit_text,
    what_changed_sentence,
)
from latency_gate.report.markup import md_text, md_url
from latency_gate.report.upgrade import upgrade_of
from latency_gate.report.view import (
    NUMBER_LABELS,
    STAMP_SOURCES,
    target_view,
    time_to_verdict,
    union_numbers,
)

__all__ = [
    "environment",
    "is_run_url",
    "render_comment",
    "render_markdown",
    "render_summary",
]

SUMMARY_LIMIT = 1_000_000
COMMENT_LIMIT = 65_000

SUMMARY_CUT_NOTE = "cut to fit GitHub's 1 MiB summary limit"
COMMENT_CUT_NOTE = "cut to fit GitHub's 65,536-character comment limit"
# Sections dropped whole, in this order, when raw samples alone do not bring a report under
# its limit. "details" is every per-target section but the numbers.
SUMMARY_SECTIONS = (
    "settings",
    "errors",
    "phases",
    "trend",
    "capacity",
    "goodput",
    "findings",
    "details",
)
COMMENT_SECTIONS = ("trend", "findings")


@functools.cache
def environment() -> jinja2.Environment:
    """The Jinja environment for the Markdown templates shipped in the package.

    Autoescape is off (the output is Markdown, not HTML); untrusted strings go through the `md`
    filter instead. StrictUndefined turns a misspelt variable into an error, not a blank.
    """
    # Imported here: Jinja costs ~25 ms, and nothing needs it before the first request is sent.
    import jinja2  # noqa: PLC0415

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("latency_gate.report", "templates"),
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # noqa: S701 - Markdown; untrusted text is escaped by the md filter
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["md"] = md_text
    # Our own sentences: escaped like any text, but wrapped by the reader, never shortened.
    env.filters["prose"] = lambda value: md_text(value, SENTENCE_CAP)
    env.filters["md_url"] = md_url
    env.filters["dollars"] = lambda text: md_dollars(md_text(text))
    env.filters["duration"] = fmt_duration
    env.filters["percent"] = fmt_percent
    env.filters["value"] = fmt_value
    env.filters["thousands"] = lambda n: f"{n:,}"
    # A number and its unit stay on one line in a narrow table column ("420 ms", "+198 ms").
    env.filters["nowrap"] = lambda text: str(text).replace(" ", "\u00a0")
    # Globals, not context: the imported macros see globals only.
    env.globals["delta_rows"] = delta_rows
    env.globals["part_rows"] = part_rows
    env.globals["what_changed"] = what_changed_sentence
    env.globals["length_sentence"] = length_sentence
    env.globals["history_rows"] = history_rows
    env.globals["history_heading"] = history_heading
    env.globals["regression_limit"] = regression_limit_text
    env.globals["no_regression"] = no_regression_text
    env.globals["regressed_text"] = regressed_text
    env.globals["baseline_source"] = baseline_source_markdown
    env.globals["origins"] = lambda check: origins_text(check, md_url)
    env.filters["chain"] = chain_cell
    return env


def _md_cost(text: str) -> str:
    """A target's cost (untrusted note, or ours measured) escaped, its $ too: GitHub would read
    the text between two $ in one sentence as math."""
    return md_dollars(md_text(text))


def _bold(name: str) -> str:
    return f"**{md_text(name)}**"


def _context(results: Sequence[RunResult]) -> dict[str, object]:
    if not results:
        raise ValueError("no results to report")
    results = in_cost_order(results)
    comparison = compare_targets(results)
    scale = chart_scale(results)
    views = [target_view(result, scale) for result in results]
    passing = [view for view in views if view.result.verdict.passed]
    # One run of two requests (a model against another) is said as an upgrade (report/upgrade.py).
    upgrade = None if len(views) > 1 else upgrade_of(views[0].result, views[0].problems)
    return {
        "upgrade": upgrade,
        "views": views,
        "several": len(views) > 1,
        "passed": len(passing) == len(views),
        "failed_count": len(views) - len(passing),
        "numbers": union_numbers(views),
        "labels": NUMBER_LABELS,
        "scale": scale,
        "segments": CHART_SEGMENTS,
        "stamp_sources": STAMP_SOURCES,
        "timing": time_to_verdict(views),
        "comparison_head": comparison.headline(_bold, _md_cost) if comparison else None,
        "comparison_lines": comparison.sentences(_bold, _md_cost) if comparison else (),
    }


# --- renderers -------------------------------------------------------------------------------


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def _truncate(text: str, limit: int, note: str) -> str:
    """The head of `text` that fits with `note` after it, cut at a line end."""
    tail = f"\n\n_… the rest of this report was {note}._\n"
    budget = limit - _size(tail)
    head = text.encode("utf-8")[: max(budget, 0)].decode("utf-8", "ignore")
    head = head[: head.rfind("\n")] if "\n" in head else ""
    return head + tail


def _fit(
    template: jinja2.Template,
    context: dict[str, object],
    *,
    limit: int,
    sections: Sequence[str],
    note: str,
    samples: int = 0,
    targets: int = 1,
) -> str:
    """Render, cutting raw samples (as few as possible), then whole sections, then the tail."""
    cut: list[str] = []
    text = template.render(context, cut=cut, sample_cap=None, note=note)
    if _size(text) <= limit:
        return text
    if samples:
        without = template.render(context, cut=cut, sample_cap=0, note=note)
        per_sample = max(1.0, (_size(text) - _size(without)) / samples)
        cap = int((limit - _size(without)) / per_sample * 0.98) // targets
        text = without
        # The estimate is close; each miss shrinks the cap by a fifth, a few renders at most.
        while cap > 0:
            attempt = template.render(context, cut=cut, sample_cap=cap, note=note)
            if _size(attempt) <= limit:
                return attempt
            cap = int(cap * 0.8)
        if _size(text) <= limit:
            return text
    cut.append("samples")
    for section in sections:
        cut.append(section)
        text = template.render(context, cut=cut, sample_cap=0, note=note)
        if _size(text) <= limit:
            return text
    return _truncate(text, limit, note)


def render_summary(results: Sequence[RunResult], *, limit: int = SUMMARY_LIMIT) -> str:
    """The job summary: verdict, numbers per target, where the time went, findings, samples.

    At most `limit` UTF-8 bytes: raw samples are cut first (with a note), then whole sections.
    Raises ValueError for an empty `results`.
    """
    context = _context(results)
    template = environment().get_template("summary.md.j2")
    return _fit(
        template,
        context,
        limit=limit,
        sections=SUMMARY_SECTIONS,
        note=SUMMARY_CUT_NOTE,
        samples=sum(len(result.samples) for result in results),
        targets=len(results),
    )


def render_markdown(results: Sequence[RunResult]) -> str:
    """The `--markdown` report file: the job summary, so both read the same."""
    return render_summary(results)


# A workflow run page, e.g. https://github.com/octo-org/octo-repo/actions/runs/42: nothing
# in it may break the Markdown link it goes into.
_RUN_URL = re.compile(r"https://[A-Za-z0-9.:-]+/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/actions/runs/\d+")
_MARKER = re.compile(r"<!--(?:(?!--).)*-->", re.DOTALL)


def is_run_url(url: str) -> bool:
    """Whether `url` is a workflow run page safe to link in the PR comment."""
    return _RUN_URL.fullmatch(url) is not None


def render_comment(
    results: Sequence[RunResult],
    *,
    marker: str,
    limit: int = COMMENT_LIMIT,
    run_url: str | None = None,
) -> str:
    """The PR comment: `marker` (a hidden HTML comment) first, then the compact report.

    `run_url`, the workflow run's page, is linked for the full report (the job summary). At most
    `limit` UTF-8 bytes. Raises ValueError when `marker` is not one HTML comment.
    """
    if not _MARKER.fullmatch(marker):
        raise ValueError(f"the comment marker must be one HTML comment, got {marker!r}")
    if run_url is not None and not is_run_url(run_url):
        raise ValueError(f"not a workflow run URL: {run_url!r}")
    context = _context(results)
    context["marker"] = marker
    context["run_url"] = run_url
    template = environment().get_template("comment.md.j2")
    return _fit(template, context, limit=limit, sections=COMMENT_SECTIONS, note=COMMENT_CUT_NOTE)
