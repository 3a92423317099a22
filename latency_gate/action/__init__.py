"""The GitHub Action: `main(environ)` runs it as the runner starts it and returns the exit code.

It reads the INPUT_* variables (hyphens kept, as the runner passes them, or the underscore
spelling), masks every secret before printing anything else, probes, writes the job summary,
outputs, annotations, JSON result and sticky PR comment. This module is the order of those steps
and the exit code; each step is a module of its own:

- inputs.py: the INPUT_* variables and the secrets among them
- settings.py: the inputs validated into `ActionSettings`
- loopback.py: the Docker action's refusal of loopback URLs
- files.py: where the action may write, and the writing (result, report, summary, outputs)
- annotations.py: the ::error and ::warning lines for a result
- outputs.py: the step outputs' values
- comment.py: the sticky PR comment, as the `comment` input says
- history.py: this run's result appended to the history folder, as `history-append` says
"""

from __future__ import annotations

import errno
import os
import sys
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from latency_gate import github
from latency_gate.action.annotations import annotate
from latency_gate.action.comment import post_comment
from latency_gate.action.files import check_writable, write_outputs, write_reports, write_summary
from latency_gate.action.history import append_history
from latency_gate.action.inputs import read_inputs, scrub, secrets_in_inputs
from latency_gate.action.loopback import IN_CONTAINER_VAR
from latency_gate.action.outputs import output_values
from latency_gate.action.settings import parse_settings
from latency_gate.config import Target
from latency_gate.errors import (
    BUG_MESSAGE,
    MACHINE_ERRNOS,
    ConfigError,
    ExitCode,
    MachineLimitError,
    machine_limit_message,
)
from latency_gate.measure.engine import ProgressCallback
from latency_gate.measure.limits import check_open_files
from latency_gate.report.markdown import render_summary
from latency_gate.report.progress import ProgressLog, describe_cost
from latency_gate.report.terminal import render_terminal
from latency_gate.results.history_folder import with_commit
from latency_gate.run import exit_code, probe_all
from latency_gate.signals import run_with_signals


def main(environ: Mapping[str, str] | None = None, out: TextIO | None = None) -> int:
    """Run the action with the given environment; returns the exit code."""
    env = os.environ if environ is None else environ
    stream = out or sys.stdout
    try:
        return _main(env, stream)
    except (MachineLimitError, MemoryError, OSError) as exc:
        # The machine's limits are the gate's problem, never the endpoint's: exit 2.
        if isinstance(exc, MachineLimitError):
            text = str(exc)
        elif isinstance(exc, MemoryError) or exc.errno == errno.ENOMEM:
            text = machine_limit_message("memory")
        elif exc.errno in MACHINE_ERRNOS:
            text = machine_limit_message("open files")
        else:
            return _bug(exc, env, stream)
        print(github.annotation("error", text, title="latency-gate: machine limit"), file=stream)
        return ExitCode.BAD_INPUT
    except Exception as exc:  # noqa: BLE001 - the one place that turns a bug into exit 3
        return _bug(exc, env, stream)


def _bug(exc: BaseException, env: Mapping[str, str], stream: TextIO) -> int:
    message = f"{BUG_MESSAGE} {type(exc).__name__}: {exc}"
    print(github.annotation("error", scrub(message, env), title="latency-gate bug"), file=stream)
    return ExitCode.BUG


def _main(env: Mapping[str, str], out: TextIO) -> int:
    inputs = read_inputs(env)
    masked = secrets_in_inputs(inputs)
    for secret in masked:
        print(github.add_mask(secret), file=out)
    workspace = Path(env.get("GITHUB_WORKSPACE") or Path.cwd())
    summary_path = _optional_path(env.get("GITHUB_STEP_SUMMARY"))
    output_path = _optional_path(env.get("GITHUB_OUTPUT"))

    try:
        settings = parse_settings(
            inputs, workspace, env, in_container=env.get(IN_CONTAINER_VAR) == "1"
        )
        # Every file the run will write, checked before the first call: a run whose result
        # cannot be kept is not worth its calls.
        json_path = workspace / settings.json_path  # an absolute json-path stays as it is
        check_writable(json_path, output_path)
        check_open_files(
            settings.all_targets,
            lambda t, key: key if not settings.targets else f"target {t.name!r}, {key}",
        )
    except ConfigError as exc:
        # A secret given to the wrong input is quoted back by its message; the runner masks
        # the log, but not the job summary.
        text = scrub(str(exc), env)
        print(github.annotation("error", text, title="latency-gate: invalid input"), file=out)
        if summary_path is not None:
            write_summary(
                summary_path,
                "## ❌ latency-gate: invalid input\n\nNothing was measured.\n\n"
                f"```text\n{text}\n```\n\nSee the action's inputs in the README.\n",
                out,
            )
        return ExitCode.BAD_INPUT

    # A targets file may hold keys of its own (${NAME} references), a body file credential
    # fields, the environment a proxy's password: mask them before any print.
    for target in settings.all_targets:
        for secret in target.secrets():
            if secret not in masked:
                masked.append(secret)
                print(github.add_mask(secret), file=out)
    for warning in settings.history_warnings:  # a history folder is a cache: said, not fatal
        print(github.annotation("warning", warning, title="latency-gate: history"), file=out)

    log = ProgressLog(out)

    def progress_for(target: Target) -> ProgressCallback:
        print(f"latency-gate: probing {target.display_url}", file=out)
        print(f"latency-gate: {describe_cost(target)}", file=out)
        return log.printer(target.name)

    # Target names and endpoint text reach the log from here to the report: no line of theirs
    # may be read as a workflow command, so the runner is told to stop reading them.
    token = uuid.uuid4().hex
    print(github.stop_commands(token), file=out)
    try:
        results = run_with_signals(
            log.beating(
                probe_all(
                    settings.all_targets,
                    progress_for=progress_for,
                    label=settings.label,
                    plan=settings.baseline,
                    max_regression=settings.max_regression,
                    history=settings.history,
                )
            )
        )
        print(render_terminal(results), file=out)
    finally:
        print(github.resume_commands(token), file=out)
    results = with_commit(results, env)  # names this run in the trends of later runs

    # One output that cannot be written must not cost the others: each is tried, a failure is
    # an ::error naming it, and the run then exits 2.
    markdown_path = None if settings.markdown_path is None else workspace / settings.markdown_path
    written, unwritten = write_reports(results, json_path, markdown_path, workspace, out)

    for result in results:
        annotate(result, out)

    if settings.summary and summary_path is not None:
        write_summary(summary_path, render_summary(results), out)

    comment_url = post_comment(settings, results, env, out)
    if settings.history_options is not None:
        append_history(results, settings.history_options, env, workspace, out)
    passed = all(result.verdict.passed for result in results)

    if output_path is not None:
        outputs = output_values(results, passed, json_path, workspace, comment_url)
        if json_path not in written:
            outputs["report-path"] = ""
        unwritten += write_outputs(output_path, outputs, out)
    if unwritten:
        print(f"latency-gate: verdict {'PASS' if passed else 'FAIL'}", file=out)
        return ExitCode.BAD_INPUT
    if not passed and not settings.fail_on_breach:
        print("latency-gate: budget breached, but fail-on-breach is false", file=out)
    return exit_code(results, fail_on_breach=settings.fail_on_breach)


def _optional_path(value: str | None) -> Path | None:
    return Path(value) if value else None


__all__: Sequence[str] = ("main",)
