"""`demo` and `demo-server`: the embedded loopback endpoints, probed or served."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import click

from latency_gate.cli.app import FilePath, echo_report, main, progress, verbose_option
from latency_gate.config import build_target
from latency_gate.errors import ConfigError
from latency_gate.run import probe
from latency_gate.signals import run_with_signals

if TYPE_CHECKING:
    from latency_gate.demo import RequestRecord
    from latency_gate.models import RunResult

__all__ = ["DEMO_DESCRIPTIONS", "demo_command", "demo_server_command"]

DEMO_DESCRIPTIONS = {
    "local": "a local model, fast and streaming honestly",
    "free": "a free server with a cold start, serving one request at a time",
    "paid": "a paid production endpoint, fast but with its stream buffered by a layer in front",
}
# What each would cost, as a targets file says it: the comparison is worded from them.
DEMO_COSTS = {"local": "free, on this machine", "free": "free tier", "paid": "$0.60 / 1M tokens"}


@main.command("demo")
@click.option(
    "--out",
    type=FilePath(file_okay=False),
    default="latency-gate-demo",
    show_default=True,
    help="Folder for the JSON and Markdown reports.",
)
@verbose_option
def demo_command(out: str, verbose: bool) -> None:
    """Probe three embedded loopback endpoints: local model, free server, paid production."""
    from latency_gate import demo  # noqa: PLC0415 - only this command starts servers

    folder = _writable_folder(out)
    results: list[RunResult] = []
    specs = demo.classic_three()
    with demo.serve_in_thread(*specs) as servers:
        for spec, server in zip(specs, servers, strict=True):
            target = build_target(
                {"name": spec.name, "url": server.url, "prompt": "Hello", "stream": "true"}
            ).model_copy(update={"cost": DEMO_COSTS[spec.name]})
            click.echo(f"probing {spec.name}: {DEMO_DESCRIPTIONS[spec.name]}", err=True)
            result = run_with_signals(probe(target, progress=progress(target)))
            results.append(result)
            _write(folder / f"{spec.name}.json", result.model_dump_json(indent=2) + "\n")
    from latency_gate.report.markdown import render_markdown  # noqa: PLC0415 (start-up)

    _write(folder / "report.md", render_markdown(results))
    echo_report(results, verbose=verbose)
    click.echo(f"reports written to {folder}/ (report.md and one JSON file per environment)")


def _writable_folder(out: str) -> Path:
    """The --out folder, created; ConfigError naming --out when it cannot be (checked before
    anything runs: a relative path in a working directory that is read-only or gone, say)."""
    folder = Path(out)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ConfigError.single(
            "--out", f"cannot create the folder {out!r}: {reason} (give --out a writable folder)"
        ) from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ConfigError.single("--out", f"the folder {out!r} is not writable")
    return folder


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ConfigError.single("--out", f"could not write {str(path)!r}: {reason}") from None


def _open_log(path: Path) -> TextIO:
    try:
        return path.open("w", encoding="utf-8")
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ConfigError.single("--log", f"could not write {str(path)!r}: {reason}") from None


def _write_log(log: TextIO, records: Sequence[RequestRecord]) -> None:
    """The requests a demo server got, one JSON line each (a body that is not JSON as text)."""
    for record in records:
        text = record.body.decode("utf-8", errors="replace")
        try:
            body: object = json.loads(text) if text else None
        except ValueError:
            body = text
        line = {"method": record.method, "path": record.path, "status": record.status}
        log.write(json.dumps({**line, "body": body}) + "\n")


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
@click.option(
    "--slots",
    type=click.IntRange(min=1),
    default=None,
    help="Serve at most this many calls at once, the others queued in order (the preset's own "
    "when left out: 1 for free, unlimited for the others): an endpoint whose --capacity and "
    "--goodput have an answer.",
)
@click.option(
    "--log",
    "log_path",
    type=FilePath(dir_okay=False, path_type=Path),
    default=None,
    help="When it stops, write each request it got to this file, one JSON line each: method, "
    "path, status and body (not the headers, which may carry keys).",
)
def demo_server_command(
    *, preset: str, host: str, port: int, duration: float, slots: int | None, log_path: Path | None
) -> None:
    """Serve one demo endpoint on 127.0.0.1 in the foreground (for workflows and benchmarks)."""
    from latency_gate import demo  # noqa: PLC0415 - only this command starts servers

    presets = {spec.name: spec for spec in demo.classic_three()}
    presets["echo"] = demo.EndpointSpec(name="echo", latency=0.0, tokens=1, token_interval=0.0)
    spec = presets[preset]
    if slots is not None:
        spec = spec.model_copy(update={"parallelism": slots})

    log = None if log_path is None else _open_log(log_path)

    async def serve() -> None:
        async with demo.DemoServer(spec, host=host, port=port) as server:
            click.echo(f"serving {preset} at {server.url} for {duration:g} s", err=True)
            try:
                await asyncio.sleep(duration)
            finally:
                if log is not None:
                    with log:
                        _write_log(log, server.records)

    with contextlib.suppress(asyncio.CancelledError):
        run_with_signals(serve())
