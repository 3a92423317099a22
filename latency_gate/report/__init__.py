"""Showing a run: the terminal, Markdown (job summary, PR comment, file), progress lines.

Import the module you need (`report.terminal`, `report.markdown`, `report.progress`, ...): this
package re-exports nothing, so that the CLI's progress lines do not load the renderers (and
Jinja's templates, the view and the chain behind them) before the first request goes out.
"""
