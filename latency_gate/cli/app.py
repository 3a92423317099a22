"""The command line's group, its translation of the exception tree, and what its commands share.

The commands (cli/probe.py, cli/demo.py) parse, call the library, print and pick the exit code.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from latency_gate import report
from latency_gate.config import Target
from latency_gate.errors import BUG_MESSAGE, ConfigError, ExitCode, InputProblem, LatencyGateError
from latency_gate.models import RunResult
from latency_gate.report.progress import ProgressPrinter, progress_printer
from latency_gate.report.result_file import dump_runs
from latency_gate.version import __version__

# How each canonical setting is spelled on the command line, for error messages.
CLI_SPELLING = {
    "url": "URL",
    "headers": "-H/--header",
    "body": "-d/--body",
    "method": "-X/--method",
}


def cli_spelling(key: str) -> str:
    return CLI_SPELLING.get(key, f"--{key}")


class _Group(click.Group):
    """Translates the exception tree once: bad input exits 2, anything unexpected exits 3."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ConfigError as exc:
            click.echo(f"Error: {exc}", err=True)
            ctx.exit(ExitCode.BAD_INPUT)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except LatencyGateError as exc:
            click.echo(f"Error: {exc}", err=True)
            ctx.exit(ExitCode.BAD_INPUT)
        except Exception as exc:  # noqa: BLE001 - the one place that turns a bug into exit 3
            click.echo(f"{BUG_MESSAGE}\n{type(exc).__name__}: {exc}", err=True)
            ctx.exit(ExitCode.BUG)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="latency-gate")
def main() -> None:
    """Measure the latency users feel and fail when it breaks the budget."""


def endpoint_options(func: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option("-X", "--method", help="HTTP method [default: POST with a body, else GET]."),
        click.option(
            "-H", "--header", "headers", multiple=True, help="'Name: value' (repeatable)."
        ),
        click.option("-d", "--body", help="Request body: text, JSON, or @file."),
        click.option(
            "--api-key",
            envvar="LATENCY_GATE_API_KEY",
            show_envvar=True,
            help="Sent as a Bearer token (x-api-key for anthropic).",
        ),
        click.option("--model", help="Model name for the chat body built from --prompt."),
        click.option("--prompt", help="Build a chat request body with this prompt."),
        click.option(
            "--format",
            help="openai-chat, openai-responses, anthropic or raw [default: auto-detected].",
        ),
        click.option("--stream/--no-stream", default=None, help="Ask for a streamed answer (SSE)."),
        click.option(
            "--max-tokens",
            help="Answer length asked for, in every format [default: 64 for --prompt].",
        ),
        click.option(
            "--token-limit-field",
            help="The body field for --max-tokens: max_tokens, max_completion_tokens, "
            "max_output_tokens [default: auto, by format and host].",
        ),
        click.option(
            "--http2",
            is_flag=True,
            default=None,
            help="Speak HTTP/2 (ALPN over TLS; prior knowledge for http://).",
        ),
        click.option(
            "--proxy",
            help="Forward proxy URL, or off [default: HTTPS_PROXY / HTTP_PROXY unless NO_PROXY].",
        ),
        click.option("--timeout", help="Per-call timeout, e.g. 30s [default: 30s]."),
        click.option("--ca-bundle", help="PEM file of CA certificates to trust."),
        click.option("--insecure", is_flag=True, default=None, help="Skip TLS certificate checks."),
        click.option(
            "--follow-redirects", is_flag=True, default=None, help="Follow 3xx redirects."
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def check_writable(paths: Mapping[str, str | None]) -> None:
    problems = []
    for option, path in paths.items():
        if path is None:
            continue
        parent = Path(path).expanduser().resolve().parent
        if not parent.is_dir():
            problems.append((option, f"folder {str(parent)!r} does not exist"))
    if problems:
        raise ConfigError([InputProblem(o, m) for o, m in problems])


def write_reports(
    results: Sequence[RunResult], json_path: str | None, markdown_path: str | None
) -> None:
    writes: list[tuple[str, str | None, Callable[[], str]]] = [
        ("--json", json_path, lambda: dump_runs(results)),
        ("--markdown", markdown_path, lambda: report.render_markdown(results)),
    ]
    for option, path, render in writes:
        if path is None:
            continue
        try:
            Path(path).write_text(render(), encoding="utf-8")
        except OSError as exc:
            # Checked before the run, so this is the disk or the file system failing now.
            reason = exc.strerror or str(exc)
            raise ConfigError.single(option, f"could not write {path!r}: {reason}") from None


def color() -> bool:
    return sys.stdout.isatty()


def progress(target: Target) -> ProgressPrinter:
    return progress_printer(target.name, sys.stderr, live=sys.stderr.isatty())
