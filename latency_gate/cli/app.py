"""The command line's group, its translation of the exception tree, and what its commands share.

The commands (cli/probe.py, cli/demo.py) parse, call the library, print and pick the exit code.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from latency_gate.config import Target
from latency_gate.config.files import open_output
from latency_gate.errors import (
    BUG_MESSAGE,
    MACHINE_ERRNOS,
    ConfigError,
    ExitCode,
    InputProblem,
    LatencyGateError,
    machine_limit_message,
)
from latency_gate.github.commands import resume_commands, stop_commands
from latency_gate.report.progress import (
    ProgressLog,
    ProgressPrinter,
    describe_cost,
    progress_printer,
)
from latency_gate.version import __version__

if TYPE_CHECKING:
    from latency_gate.models import RunResult

# How each canonical setting is spelled on the command line, for error messages.
CLI_SPELLING = {
    "url": "URL",
    "headers": "-H/--header",
    "body": "-d/--body",
    "method": "-X/--method",
    "baseline-headers": "--baseline-header",
}


def cli_spelling(key: str) -> str:
    return CLI_SPELLING.get(key, f"--{key}")


class _Group(click.Group):
    """Translates the exception tree once: bad input exits 2, anything unexpected exits 3."""

    def invoke(self, ctx: click.Context) -> Any:
        with _workflow_commands_stopped():
            return self._invoke(ctx)

    def _invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemoryError:
            click.echo(f"Error: {machine_limit_message('memory')}", err=True)
            ctx.exit(ExitCode.BAD_INPUT)
        except OSError as exc:
            if exc.errno not in MACHINE_ERRNOS:
                click.echo(f"{BUG_MESSAGE}\n{type(exc).__name__}: {exc}", err=True)
                ctx.exit(ExitCode.BUG)
            what = "memory" if exc.errno == errno.ENOMEM else "open files"
            click.echo(f"Error: {machine_limit_message(what)}", err=True)
            ctx.exit(ExitCode.BAD_INPUT)
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


@contextlib.contextmanager
def _workflow_commands_stopped() -> Iterator[None]:
    """In a GitHub Actions log, no line printed meanwhile is read as a workflow command.

    The CLI prints target names and endpoint text, and the runner would read a line of theirs
    starting with `::error` (or `::set-output`) as a command; `::stop-commands::` with an
    unguessable token stops that until the token is printed again.
    """
    if os.environ.get("GITHUB_ACTIONS") != "true":
        yield
        return
    token = uuid.uuid4().hex
    click.echo(stop_commands(token))
    try:
        yield
    finally:
        click.echo(resume_commands(token))


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="latency-gate")
def main() -> None:
    """Measure the latency users feel and fail when it breaks the budget."""


class FilePath(click.Path):
    """click.Path, with a NUL byte in the name a usage error (exit 2) rather than the
    ValueError os.stat raises for it, and a name that ends in "/" where a file is wanted one
    too (rather than a file named as the folder)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and "\x00" in value:
            self.fail(f"{value!r} holds a NUL byte, which no file name can", param, ctx)
        if isinstance(value, str) and not self.dir_okay and value.endswith(("/", os.sep)):
            # Path("out/") is "out": the file would take the folder's name.
            self.fail(f"{value!r} ends in '/', which names a folder: name a file", param, ctx)
        return super().convert(value, param, ctx)


_Decorated = TypeVar("_Decorated", bound=Callable[..., Any])


def setting_flag(*names: str, help: str) -> Callable[[_Decorated], _Decorated]:
    """A flag of a setting: None when left out, not click's False, so that a targets file's
    value or the setting's own default holds."""
    return click.option(*names, is_flag=True, default=None, help=help)


def endpoint_options(func: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option(
            "-X",
            "--method",
            metavar="METHOD",
            help="HTTP method [default: POST with a body, else GET].",
        ),
        click.option(
            "-H",
            "--header",
            "headers",
            metavar="'NAME: VALUE'",
            multiple=True,
            help="'Name: value' (repeatable).",
        ),
        click.option(
            "-d", "--body", metavar="TEXT|JSON|@FILE", help="Request body: text, JSON, or @file."
        ),
        click.option(
            "--api-key",
            metavar="KEY",
            envvar="LATENCY_GATE_API_KEY",
            show_envvar=True,
            help="Sent as a Bearer token (x-api-key for anthropic).",
        ),
        click.option(
            "--model", metavar="NAME", help="Model name for the chat body built from --prompt."
        ),
        click.option(
            "--prompt", metavar="TEXT", help="Build a chat request body with this prompt."
        ),
        click.option(
            "--format",
            metavar="FORMAT",
            help="openai-chat, openai-responses, anthropic or raw [default: auto-detected].",
        ),
        click.option("--stream/--no-stream", default=None, help="Ask for a streamed answer (SSE)."),
        click.option(
            "--max-tokens",
            metavar="N",
            help="Answer length asked for, in every format [default: 64 for --prompt].",
        ),
        click.option(
            "--token-limit-field",
            metavar="FIELD",
            help="The body field for --max-tokens: max_tokens, max_completion_tokens, "
            "max_output_tokens [default: auto, by format and host].",
        ),
        setting_flag("--http2", help="Speak HTTP/2 (ALPN over TLS; prior knowledge for http://)."),
        click.option(
            "-x",
            "--proxy",
            metavar="URL|off",
            help="Forward proxy URL, or off [default: HTTPS_PROXY / HTTP_PROXY unless NO_PROXY].",
        ),
        click.option(
            "--timeout", metavar="DURATION", help="Per-call timeout, e.g. 30s [default: 30s]."
        ),
        click.option("--ca-bundle", metavar="FILE", help="PEM file of CA certificates to trust."),
        setting_flag("-k", "--insecure", help="Skip TLS certificate checks."),
        setting_flag("-L", "--follow-redirects", help="Follow 3xx redirects."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def working_dir() -> Path:
    """The working directory; ConfigError when it no longer exists (relative paths in the
    options are read from it)."""
    try:
        return Path.cwd()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ConfigError.single("working directory", f"cannot be read: {reason}") from None


def check_writable(paths: Mapping[str, str | None]) -> None:
    """ConfigError naming each report file that cannot be written, or that two options share,
    checked before the first call by opening it for appending (a file that was not there is
    removed again)."""
    problems = []
    seen: dict[Path, str] = {}
    for option, path in paths.items():
        if path is None:
            continue
        if path.lstrip()[:1] in ("{", "["):
            # curl's --json sends a body; here it names the result file: never a file named so.
            problems.append(
                (
                    option,
                    f"names the file to write the result to; the request body is -d/--body "
                    f"(curl's --json), got {path[:40]!r}",
                )
            )
            continue
        try:
            resolved = Path(path).expanduser().resolve()
        except (OSError, ValueError) as exc:  # a working directory that is gone, a NUL byte
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            problems.append((option, f"cannot resolve {path!r}: {why}"))
            continue
        if resolved in seen:
            problems.append(
                (option, f"{path!r} is also given to {seen[resolved]}: give each its own file")
            )
            continue
        seen[resolved] = option
        if not resolved.parent.is_dir():
            problems.append((option, f"folder {str(resolved.parent)!r} does not exist"))
        elif (reason := _cannot_append(resolved)) is not None:
            problems.append((option, f"cannot write {path!r}: {reason}"))
    if problems:
        raise ConfigError([InputProblem(o, m) for o, m in problems])


def _cannot_append(path: Path) -> str | None:
    """Why `path` cannot be opened for writing (too long a name, a directory, read-only, ...)."""
    try:
        existed = path.exists()
        with open_output(path, append=True):  # a FIFO nothing reads is refused, never waited on
            pass
        if not existed:
            path.unlink()
    except OSError as exc:
        return exc.strerror or str(exc)
    except ValueError as exc:  # a NUL byte, text the file system cannot encode
        return str(exc)
    return None


def write_reports(
    results: Sequence[RunResult], json_path: str | None, markdown_path: str | None
) -> None:
    # Loaded here, after the run: start-up (docs/benchmarks.md).
    from latency_gate.report.markdown import render_markdown  # noqa: PLC0415
    from latency_gate.results.json_file import dump_runs  # noqa: PLC0415

    writes: list[tuple[str, str | None, Callable[[], str]]] = [
        ("--json", json_path, lambda: dump_runs(results)),
        ("--markdown", markdown_path, lambda: render_markdown(results)),
    ]
    problems = []
    for option, path, render in writes:
        if path is None:
            continue
        try:
            with open_output(Path(path)) as file:
                file.write(render())
        except OSError as exc:
            # Checked before the run, so this is the disk or the file system failing now; the
            # other file is still written.
            reason = exc.strerror or str(exc)
            problems.append(InputProblem(option, f"could not write {path!r}: {reason}"))
    if problems:
        raise ConfigError(problems)


def echo_report(results: Sequence[RunResult], *, verbose: bool = False) -> None:
    """The terminal report on stdout: the first screen, with every target's detail when
    `verbose` (-v), a failing target's otherwise (its renderer is loaded now, after the run:
    start-up)."""
    from latency_gate.report.terminal import VERBOSE_HINT, render_terminal  # noqa: PLC0415

    click.echo(render_terminal(results, color=color(), verbose=verbose, hint=VERBOSE_HINT))


def verbose_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """-v/--verbose: every target's detail in the terminal report, not only a failing one's."""
    return click.option(
        "-v",
        "--verbose",
        is_flag=True,
        help="Show every target's detail (where the time went, sampling, errors, the floor), "
        "not only a failing one's.",
    )(func)


def plain_terminal() -> bool:
    """NO_COLOR (https://no-color.org) or TERM=dumb: no colour and no escape sequences."""
    return bool(os.environ.get("NO_COLOR")) or os.environ.get("TERM") == "dumb"


def color() -> bool:
    return sys.stdout.isatty() and not plain_terminal()


def live_progress() -> bool:
    return sys.stderr.isatty() and not plain_terminal()


def progress(target: Target) -> ProgressPrinter:
    return progress_printer(target.name, sys.stderr, live=live_progress())


def progress_log() -> tuple[Callable[[Target], ProgressPrinter], ProgressLog]:
    """What prints a run's progress on stderr, and the log that beats while it goes; each
    target's first line says what its run may cost."""
    log = ProgressLog(sys.stderr)

    def printer(target: Target) -> ProgressPrinter:
        print(describe_cost(target), file=sys.stderr, flush=True)
        return progress(target) if live_progress() else log.printer(target.name)

    return printer, log
