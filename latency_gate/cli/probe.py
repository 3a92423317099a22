"""`probe`, `merge` and `quick`: the commands that measure an endpoint or combine results."""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from latency_gate.cli.app import (
    FilePath,
    check_writable,
    cli_spelling,
    echo_report,
    endpoint_options,
    main,
    progress_log,
    verbose_option,
    working_dir,
    write_reports,
)
from latency_gate.cli.grouped_help import GroupedCommand
from latency_gate.cli.probe_options import PROBE_OPTION_GROUPS, probe_options
from latency_gate.config import Target, ab_input, build_target, parse_label, with_environment_proxy
from latency_gate.config.regression import DEFAULT_LIMIT, RegressionLimit, parse_max_regression
from latency_gate.errors import ConfigError, ExitCode
from latency_gate.formatting import clean_text
from latency_gate.measure.limits import check_open_files
from latency_gate.results.loading import load_runs, plan_baseline
from latency_gate.run import exit_code, probe_all
from latency_gate.signals import run_with_signals

if TYPE_CHECKING:
    from latency_gate.assess.compare.history import HistoryPlan
    from latency_gate.models import RunResult
    from latency_gate.results.history_folder import HistoryOptions

__all__ = ["merge_command", "probe_command", "quick_command"]


@main.command("probe", cls=GroupedCommand, option_groups=PROBE_OPTION_GROUPS)
@click.argument("url", required=False)
@endpoint_options
@probe_options
@verbose_option
def probe_command(
    *,
    url: str | None,
    headers: tuple[str, ...],
    baseline_headers: tuple[str, ...],
    json_path: str | None,
    markdown_path: str | None,
    no_floor: bool,
    targets_path: str | None,
    baseline_path: str | None,
    max_regression: str | None,
    history_path: str | None,
    history_size: str | None,
    history_append: str | None,
    history_keep: str | None,
    label: str | None,
    verbose: bool,
    **options: str | bool | None,
) -> None:
    """Probe URL (or every target of --targets, one after another): cold start, warm p50/p95,
    concurrent p95, error rate; exit 1 on a breach or a regression against --baseline (or
    against --baseline-url, measured beside it in the same run)."""
    raw: dict[str, str | list[str] | None] = {
        "url": url,
        "headers": list(headers),
        "baseline-headers": list(baseline_headers),
    }
    for key, value in options.items():
        if value is not None:
            raw[key.replace("_", "-")] = str(value).lower() if isinstance(value, bool) else value
    try:
        label = None if label is None else parse_label(label)
    except ValueError as exc:
        raise ConfigError.single("--label", str(exc)) from None
    targets = _targets(raw, targets_path)
    side_by_side = next((name for t in targets if (name := ab_input(t))), None)
    compared = [
        name
        for name, given in (
            ("--baseline", baseline_path is not None),
            ("--history", history_path is not None),
            (f"--{side_by_side}", side_by_side is not None),
        )
        if given
    ]
    limit = _regression_limit(compared, max_regression)
    plan = None if baseline_path is None else plan_baseline(targets, Path(baseline_path), limit)
    history = _history(
        targets, history_path, limit, size=history_size, keep=history_keep, append=history_append
    )
    check_writable({"--json": json_path, "--markdown": markdown_path})
    check_open_files(
        targets,
        lambda t, key: f"--{key}" if targets_path is None else f"target {t.name!r}, {key}",
    )
    progress_for, log = progress_log()
    results = run_with_signals(
        log.beating(
            probe_all(
                targets,
                progress_for=progress_for,
                measure_floor=not no_floor,
                label=label,
                plan=plan,
                max_regression=limit,
                history=None if history is None else history[0],
            )
        )
    )
    # The commit measured (in a workflow) names this run in the trends of later runs.
    from latency_gate.results.history_folder import with_commit  # noqa: PLC0415 (start-up)

    results = with_commit(results, os.environ)
    # The verdict first: a file that cannot be written now (a full disk) exits 2 after it.
    echo_report(results, verbose=verbose)
    for result in results:  # e.g. --insecure: said where the person running it looks
        for warning in result.warnings:
            click.echo(f"warning: {warning}", err=True)
    write_reports(results, json_path, markdown_path)
    if history is not None:
        _append_history(results, history[1])
    sys.exit(exit_code(results))


def _targets(raw: dict[str, str | list[str] | None], targets_path: str | None) -> list[Target]:
    """The one target of the options, or the targets file's (options fill in what it omits)."""
    if targets_path is None:
        target = build_target(raw, cli_spelling, base_dir=working_dir())
        return [target if "proxy" in raw else with_environment_proxy(target, os.environ)]
    clash = [cli_spelling(k) for k in ("url", "name") if raw.get(k) is not None]
    if clash:
        raise ConfigError.single("--targets", f"give {' or '.join(clash)} or --targets, not both")
    given = {k: v for k, v in raw.items() if v is not None and v != [] and k != "url"}
    from latency_gate.config.targets_file import load_targets  # noqa: PLC0415 (start-up)

    targets = load_targets(Path(targets_path), given=given, environ=os.environ)
    if "proxy" in raw:
        return targets
    return [with_environment_proxy(t, os.environ) for t in targets]


def _regression_limit(compared: list[str], max_regression: str | None) -> RegressionLimit:
    """The regression limit, checked before anything is measured: one comparison per run (an
    earlier run's file, a base measured beside the head, or a history, not two), and a limit
    needs one."""
    if len(compared) > 1:
        raise ConfigError.single(
            compared[-1],
            "give one of --baseline (an earlier run's result), --baseline-url (a base measured "
            f"beside the head in this run) and --history, not {' and '.join(compared)}: a run "
            "makes one comparison",
        )
    if max_regression is None:
        return DEFAULT_LIMIT
    if not compared:
        raise ConfigError.single(
            "--max-regression", "needs --baseline, --baseline-url or --history to compare with"
        )
    try:
        return parse_max_regression(max_regression)
    except ValueError as exc:
        raise ConfigError.single("--max-regression", str(exc)) from None


_HISTORY_NAMES = {"size": "--history-size", "keep": "--history-keep", "append": "--history-append"}


def _history(
    targets: list[Target],
    history_path: str | None,
    limit: RegressionLimit,
    *,
    size: str | None,
    keep: str | None,
    append: str | None,
) -> tuple[HistoryPlan, HistoryOptions] | None:
    """Read the history folder before anything is measured; its skipped files are warnings."""
    given = {"size": size, "keep": keep, "append": append}
    if history_path is None:
        stray = [_HISTORY_NAMES[key] for key, value in given.items() if value is not None]
        if stray:
            raise ConfigError.single(stray[0], "needs --history")
        return None
    from latency_gate.results.history_folder import (  # noqa: PLC0415 (start-up)
        parse_history_options,
        plan_history,
    )

    options = parse_history_options(
        working_dir() / history_path, history_path, **given, names=_HISTORY_NAMES
    )
    plan = plan_history(
        targets,
        options,
        limit,
        "--history",
        lambda warning: click.echo(f"warning: {warning}", err=True),
    )
    return plan, options


def _append_history(results: list[RunResult], options: HistoryOptions) -> None:
    """This run's result into the history folder, as history-append says; a folder that cannot
    be written is a warning (it is a cache), never a failed run."""
    from latency_gate.results.history_folder import (  # noqa: PLC0415 (start-up)
        append_decision,
        append_result,
        prune,
    )
    from latency_gate.results.json_file import dump_runs  # noqa: PLC0415 (start-up)

    append, why = append_decision(options.append, os.environ)
    if append and any(result.interrupted for result in results):
        append, why = False, "not appended: the run was interrupted"
    if not append:
        click.echo(f"history: {why}", err=True)
        return
    try:
        now = datetime.now(UTC)
        path = append_result(
            options.folder, dump_runs(results), now, os.environ.get("GITHUB_RUN_ID")
        )
        deleted = prune(options.folder, options.keep, now)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        click.echo(f"warning: history: could not append to {options.shown!r}: {reason}", err=True)
        return
    pruned = f"; pruned {len(deleted)} older file(s)" if deleted else ""
    click.echo(f"history: {why}: wrote {path.name!r}{pruned}", err=True)


@main.command("merge")
@click.argument("files", nargs=-1, required=True, type=FilePath(dir_okay=False))
@click.option(
    "--json", "json_path", type=FilePath(dir_okay=False), help="Write the merged JSON result."
)
@click.option(
    "--markdown", "markdown_path", type=FilePath(dir_okay=False), help="Write the report."
)
@verbose_option
def merge_command(
    files: tuple[str, ...], json_path: str | None, markdown_path: str | None, verbose: bool
) -> None:
    """Combine JSON results (a matrix of runners or regions) into one report and one verdict,
    a column per run; exit 1 when any run failed."""
    check_writable({"--json": json_path, "--markdown": markdown_path})
    _refuse_repeats(files)
    loaded = [(name, load_runs(Path(name), "merge")) for name in files]
    for warning in _same_runs(loaded):
        click.echo(f"warning: {warning}", err=True)
    from latency_gate.results.json_file import label_runs  # noqa: PLC0415 (start-up)

    results = label_runs(loaded)
    echo_report(results, verbose=verbose)
    for result in results:  # each file's own, and where its verdict was judged otherwise
        for warning in result.warnings:
            click.echo(f"warning: {clean_text(warning)}", err=True)
    write_reports(results, json_path, markdown_path)
    sys.exit(exit_code(results))


def _refuse_repeats(files: tuple[str, ...]) -> None:
    """The same file twice would count its runs twice: refused, naming it."""
    seen: dict[Path, str] = {}
    for name in files:
        try:
            key = Path(name).resolve()
        except OSError:
            key = Path(name)
        if key in seen:
            same = "" if seen[key] == name else f" (as {seen[key]!r} and {name!r})"
            raise ConfigError.single(
                "merge", f"{name!r} is given twice{same}: each run would be counted twice"
            )
        seen[key] = name


def _same_runs(loaded: list[tuple[str, list[RunResult]]]) -> list[str]:
    """Two files holding the very same run (a copied file?): said, since it counts twice."""
    seen: dict[str, str] = {}
    warnings = []
    for name, runs in loaded:
        for run in runs:
            key = run.model_dump_json(include={"target", "started_at", "samples"})
            if key in seen and seen[key] != name:
                warnings.append(
                    f"{seen[key]!r} and {name!r} hold the same run of {run.target!r} "
                    "(a copied file?): it is counted twice"
                )
            seen.setdefault(key, name)
    return warnings


@main.command("quick")
@click.argument("url", required=False)
@endpoint_options
def quick_command(url: str | None, headers: tuple[str, ...], **options: str | bool | None) -> None:
    """Three calls to URL with curl's phases, and the curl line to repeat one; exit 1 on failure."""
    # Only this command needs them.
    from latency_gate.measure import quick  # noqa: PLC0415
    from latency_gate.report import quick as quick_report  # noqa: PLC0415

    raw: dict[str, str | list[str] | None] = {"url": url, "headers": list(headers)}
    for key, value in options.items():
        if value is not None:
            raw[key.replace("_", "-")] = str(value).lower() if isinstance(value, bool) else value
    target = build_target(raw, cli_spelling, base_dir=working_dir())
    if "proxy" not in raw:
        target = with_environment_proxy(target, os.environ)
    result = run_with_signals(quick.quick(target))
    click.echo(quick_report.render(result), nl=False)
    sys.exit(ExitCode.PASS if result.passed else ExitCode.BREACH)
