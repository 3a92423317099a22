"""The command line: parse, call the library, print, pick the exit code. Nothing more."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from latency_gate import report
from latency_gate.assess.baseline import BaselinePlan
from latency_gate.config import Target, build_target
from latency_gate.config.regression import DEFAULT_LIMIT, parse_max_regression
from latency_gate.config.targets_file import load_targets
from latency_gate.errors import BUG_MESSAGE, ConfigError, ExitCode, InputProblem, LatencyGateError
from latency_gate.models import RunResult
from latency_gate.report.progress import ProgressPrinter, progress_printer
from latency_gate.report.result_file import dump_runs, label_runs
from latency_gate.run import exit_code, load_runs, plan_baseline, probe, probe_all
from latency_gate.signals import run_with_signals
from latency_gate.version import __version__

DEMO_DESCRIPTIONS = {
    "local": "a local model, fast and streaming honestly",
    "free": "a free server with a cold start, serving one request at a time",
    "paid": "a paid production endpoint, fast but with its stream buffered by a layer in front",
}

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


def _endpoint_options(func: Callable[..., Any]) -> Callable[..., Any]:
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


@main.command("probe")
@click.argument("url", required=False)
@_endpoint_options
@click.option("--idle", help="Seconds to wait before the cold call, e.g. 60s [default: 0].")
@click.option("--warm-calls", help="Sequential warm calls [default: 20].")
@click.option("--concurrency", help="Calls started together [default: 10].")
@click.option(
    "--fresh-connections",
    is_flag=True,
    default=None,
    help="Open the burst's connections inside the burst (measures handshakes too).",
)
@click.option("--max-cold-start", help="Budget for cold start [default: not gated].")
@click.option("--max-warm-p50", help="Budget for warm p50 [default: not gated].")
@click.option("--max-warm-p95", help="Budget for warm p95 [default: 3s].")
@click.option("--max-concurrent-p95", help="Budget for concurrent p95 [default: 3s].")
@click.option("--max-error-rate", help="Budget for the error rate [default: 0.01].")
@click.option("--max-ttft-p95", help="Budget for first-token p95 [default: not gated].")
@click.option("--name", help="A name for the target in reports [default: endpoint].")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), help="Write the JSON result.")
@click.option(
    "--markdown", "markdown_path", type=click.Path(dir_okay=False), help="Write the report."
)
@click.option("--no-floor", is_flag=True, help="Skip measuring the gate's own floor.")
@click.option(
    "--targets",
    "targets_path",
    type=click.Path(dir_okay=False),
    help="A YAML, TOML or JSON file of several targets, cheapest first (instead of URL).",
)
@click.option("--baseline", "baseline_path", help="An earlier run's JSON result to compare with.")
@click.option(
    "--max-regression",
    help="How much worse a number may get against --baseline: 20%, 200ms or 20%,200ms "
    "[default: 10%].",
)
@click.option(
    "--label",
    envvar="LATENCY_GATE_LABEL",
    show_envvar=True,
    help="Where this ran (runner, region): names the run's column when results are merged.",
)
def probe_command(
    *,
    url: str | None,
    headers: tuple[str, ...],
    json_path: str | None,
    markdown_path: str | None,
    no_floor: bool,
    targets_path: str | None,
    baseline_path: str | None,
    max_regression: str | None,
    label: str | None,
    **options: str | bool | None,
) -> None:
    """Probe URL (or every target of --targets, one after another): cold start, warm p50/p95,
    concurrent p95, error rate; exit 1 on a breach or a regression against --baseline."""
    raw: dict[str, str | list[str] | None] = {"url": url, "headers": list(headers)}
    for key, value in options.items():
        if value is not None:
            raw[key.replace("_", "-")] = str(value).lower() if isinstance(value, bool) else value
    targets = _targets(raw, targets_path)
    plan = _baseline_plan(targets, baseline_path, max_regression)
    _check_writable({"--json": json_path, "--markdown": markdown_path})
    results = run_with_signals(
        probe_all(
            targets, progress_for=_progress, measure_floor=not no_floor, label=label, plan=plan
        )
    )
    _write_reports(results, json_path, markdown_path)
    click.echo(report.render_terminal(results, color=_color()))
    for result in results:  # e.g. --insecure: said where the person running it looks
        for warning in result.warnings:
            click.echo(f"warning: {warning}", err=True)
    sys.exit(exit_code(results))


def _targets(raw: dict[str, str | list[str] | None], targets_path: str | None) -> list[Target]:
    """The one target of the options, or the targets file's (options fill in what it omits)."""
    if targets_path is None:
        return [build_target(raw, cli_spelling, base_dir=Path.cwd())]
    clash = [cli_spelling(k) for k in ("url", "name") if raw.get(k) is not None]
    if clash:
        raise ConfigError.single("--targets", f"give {' or '.join(clash)} or --targets, not both")
    given = {k: v for k, v in raw.items() if v is not None and v != [] and k != "url"}
    return load_targets(Path(targets_path), given=given, environ=os.environ)


def _baseline_plan(
    targets: list[Target], baseline_path: str | None, max_regression: str | None
) -> BaselinePlan | None:
    """Load and check the baseline before anything is measured (a mismatch exits 2)."""
    if baseline_path is None:
        if max_regression is not None:
            raise ConfigError.single("--max-regression", "needs --baseline to compare with")
        return None
    limit = DEFAULT_LIMIT
    if max_regression is not None:
        try:
            limit = parse_max_regression(max_regression)
        except ValueError as exc:
            raise ConfigError.single("--max-regression", str(exc)) from None
    return plan_baseline(targets, Path(baseline_path), limit)


@main.command("merge")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--json", "json_path", type=click.Path(dir_okay=False), help="Write the merged JSON result."
)
@click.option(
    "--markdown", "markdown_path", type=click.Path(dir_okay=False), help="Write the report."
)
def merge_command(files: tuple[str, ...], json_path: str | None, markdown_path: str | None) -> None:
    """Combine JSON results (a matrix of runners or regions) into one report and one verdict,
    a column per run; exit 1 when any run failed."""
    _check_writable({"--json": json_path, "--markdown": markdown_path})
    loaded = [(name, load_runs(Path(name), "merge")) for name in files]
    results = label_runs(loaded)
    _write_reports(results, json_path, markdown_path)
    click.echo(report.render_terminal(results, color=_color()))
    sys.exit(exit_code(results))


@main.command("demo")
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default="latency-gate-demo",
    show_default=True,
    help="Folder for the JSON and Markdown reports.",
)
def demo_command(out: str) -> None:
    """Probe three embedded loopback endpoints: local model, free server, paid production."""
    from latency_gate import demo  # noqa: PLC0415 - only this command starts servers

    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    results: list[RunResult] = []
    specs = demo.classic_three()
    with demo.serve_in_thread(*specs) as servers:
        for spec, server in zip(specs, servers, strict=True):
            target = build_target(
                {"name": spec.name, "url": server.url, "prompt": "Hello", "stream": "true"}
            )
            click.echo(f"probing {spec.name}: {DEMO_DESCRIPTIONS[spec.name]}", err=True)
            result = run_with_signals(probe(target, progress=_progress(target)))
            results.append(result)
            (folder / f"{spec.name}.json").write_text(result.model_dump_json(indent=2) + "\n")
            click.echo(report.render_terminal([result], color=_color()))
    (folder / "report.md").write_text(report.render_markdown(results))
    click.echo(report.render_terminal(results, color=_color()))
    click.echo(f"reports written to {folder}/ (report.md and one JSON file per environment)")


@main.command("demo-server")
@click.option(
    "--preset",
    type=click.Choice(["local", "free", "paid", "echo"]),
    default="local",
    show_default=True,
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on (0.0.0.0 lets a container reach it).",
)
@click.option("--port", type=click.IntRange(0, 65535), default=8080, show_default=True)
@click.option(
    "--duration",
    type=click.FloatRange(min=0, min_open=True),
    default=3600.0,
    show_default=True,
    help="Stop by itself after this many seconds.",
)
def demo_server_command(preset: str, host: str, port: int, duration: float) -> None:
    """Serve one demo endpoint on 127.0.0.1 in the foreground (for workflows and benchmarks)."""
    from latency_gate import demo  # noqa: PLC0415 - only this command starts servers

    presets = {spec.name: spec for spec in demo.classic_three()}
    presets["echo"] = demo.EndpointSpec(name="echo", latency=0.0, tokens=1, token_interval=0.0)
    spec = presets[preset]

    async def serve() -> None:
        async with demo.DemoServer(spec, host=host, port=port) as server:
            click.echo(f"serving {preset} at {server.url} for {duration:g} s", err=True)
            await asyncio.sleep(duration)

    with contextlib.suppress(asyncio.CancelledError):
        run_with_signals(serve())


def _check_writable(paths: Mapping[str, str | None]) -> None:
    problems = []
    for option, path in paths.items():
        if path is None:
            continue
        parent = Path(path).expanduser().resolve().parent
        if not parent.is_dir():
            problems.append((option, f"folder {str(parent)!r} does not exist"))
    if problems:
        raise ConfigError([InputProblem(o, m) for o, m in problems])


def _write_reports(
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


def _color() -> bool:
    return sys.stdout.isatty()


def _progress(target: Target) -> ProgressPrinter:
    return progress_printer(target.name, sys.stderr, live=sys.stderr.isatty())


@main.command("quick")
@click.argument("url", required=False)
@_endpoint_options
def quick_command(url: str | None, headers: tuple[str, ...], **options: str | bool | None) -> None:
    """Three calls to URL with curl's phases, and the curl line to repeat one; exit 1 on failure."""
    # Only this command needs them.
    from latency_gate.measure import quick  # noqa: PLC0415
    from latency_gate.report import quick as quick_report  # noqa: PLC0415

    raw: dict[str, str | list[str] | None] = {"url": url, "headers": list(headers)}
    for key, value in options.items():
        if value is not None:
            raw[key.replace("_", "-")] = str(value).lower() if isinstance(value, bool) else value
    target = build_target(raw, cli_spelling, base_dir=Path.cwd())
    result = run_with_signals(quick.quick(target))
    click.echo(quick_report.render(result), nl=False)
    sys.exit(ExitCode.PASS if result.passed else ExitCode.BREACH)
