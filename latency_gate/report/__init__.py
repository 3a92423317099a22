"""Showing a run: the terminal, Markdown (job summary, PR comment, file), progress lines."""

from latency_gate.report.markdown import (
    environment,
    is_run_url,
    render_comment,
    render_markdown,
    render_summary,
)
from latency_gate.report.terminal import render_terminal

__all__ = [
    "environment",
    "is_run_url",
    "render_comment",
    "render_markdown",
    "render_summary",
    "render_terminal",
]
