"""The GitHub Action: the only module that reads os.environ for the action.

`main(environ)` reads the INPUT_* variables (hyphens kept, as the runner passes them, or the
underscore spelling), masks every secret before printing anything else, probes, writes the job
summary, outputs, annotations, JSON result and sticky PR comment, and returns the exit code.
"""

from __future__ import annotations

import errno
import ipaddress
import json
import os
import re
import socket
import sys
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TextIO
from urllib.parse import urlsplit

from latency_gate import github, report
from latency_gate.assess.baseline import BaselinePlan
from latency_gate.config import (
    TARGET_KEYS,
    Target,
    build_target,
    find_secrets,
    header_text_problem,
    parse_bool,
    parse_label,
    scrub_secrets,
    secret_forms,
    url_userinfo,
    with_environment_proxy,
)
from latency_gate.config.files import read_bounded
from latency_gate.config.regression import DEFAULT_LIMIT, parse_max_regression
from latency_gate.config.targets_file import load_targets
from latency_gate.errors import (
    BUG_MESSAGE,
    MACHINE_ERRNOS,
    ConfigError,
    ExitCode,
    InputProblem,
    MachineLimitError,
    machine_limit_message,
)
from latency_gate.formatting import fmt_duration, fmt_percent, fmt_value_beside
from latency_gate.measure.engine import ProgressCallback
from latency_gate.measure.limits import check_open_files
from latency_gate.models import RunResult
from latency_gate.report.progress import ProgressLog
from latency_gate.report.result_file import dump_runs
from latency_gate.report.terminal import failed_call_kinds
from latency_gate.report.view import NUMBER_LABELS
from latency_gate.run import exit_code, plan_baseline, probe_all
from latency_gate.signals import run_with_signals

CommentMode = Literal["auto", "always", "on-failure", "never"]
COMMENT_MODES: tuple[CommentMode, ...] = ("auto", "always", "on-failure", "never")

# Inputs the action reads besides the target settings.
ACTION_KEYS = ("comment", "summary", "json-path", "fail-on-breach", "github-token", "label")
SEVERAL_KEYS = ("targets", "baseline", "max-regression")
DEFAULT_REPORT_DIR = "latency-gate-report"
MAX_EVENT_BYTES = 64 * 1024 * 1024  # GitHub's event payloads are far smaller

# Set to "1" by action.yml (`runs.env`) for the Docker action alone: in its container, loopback
# is the container itself. The CLI and the composite action on the runner never set it.
IN_CONTAINER_VAR = "LATENCY_GATE_IN_CONTAINER"
HOST_ACTION = "latency-gate/latency-gate/host@v0"
# Names that mean "this machine" whatever DNS says (RFC 6761 reserves *.localhost too), and
# Debian's /etc/hosts names for ::1, which Docker writes into every container.
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})
_LEGACY_IPV4 = re.compile(r"(?:0x[0-9a-f]*|[0-9]+)(?:\.(?:0x[0-9a-f]*|[0-9]+)){0,3}")


def read_inputs(environ: Mapping[str, str]) -> dict[str, str]:
    """Every INPUT_* variable by its kebab-case name; empty values are left out (not given).

    The runner upper-cases the name and keeps hyphens (`INPUT_MAX-WARM-P95`); the underscore
    spelling (`INPUT_MAX_WARM_P95`) is accepted too, and the hyphen spelling wins.
    """
    inputs: dict[str, str] = {}
    hyphenated: set[str] = set()
    for name, value in environ.items():
        if not name.startswith("INPUT_") or not value.strip():
            continue
        raw = name[len("INPUT_") :]
        key = raw.lower().replace("_", "-")
        if "-" in raw or key not in hyphenated:
            inputs[key] = value
            if "-" in raw:
                hyphenated.add(key)
    return inputs


def secrets_in_inputs(inputs: Mapping[str, str]) -> list[str]:
    """Every secret among the raw inputs, found before validation so nothing can print first."""
    headers = [
        (name, value.strip())
        for name, sep, value in (
            line.partition(":") for line in inputs.get("headers", "").splitlines()
        )
        if sep
    ]
    body = inputs.get("body", "")
    return find_secrets(
        api_key=inputs.get("api-key"),
        headers=headers,
        url=inputs.get("url", ""),
        others=[inputs.get("github-token", ""), "" if body.startswith("@") else body],
    )


def is_loopback_host(host: str) -> bool:
    """True when `host` (a URL's host, without brackets) means the machine the call starts on.

    localhost and its aliases, 127.0.0.0/8, ::1, the unspecified 0.0.0.0 and :: (a connection
    to them reaches this machine), IPv4-mapped forms of those, and the short or numeric IPv4
    spellings the system resolver also accepts (127.1, 2130706433, 0x7f.0.0.1).
    """
    name = host.lower().rstrip(".")
    if name in LOOPBACK_NAMES or name.endswith(".localhost"):
        return True
    address: ipaddress.IPv4Address | ipaddress.IPv6Address
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        if not _LEGACY_IPV4.fullmatch(name):
            return False
        try:
            address = ipaddress.IPv4Address(socket.inet_aton(name))
        except OSError:
            return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback or address.is_unspecified


def loopback_message(target: Target) -> str | None:
    """Why a loopback URL cannot work from the Docker action and what does; None if not one."""
    host = urlsplit(target.url).hostname or ""
    if not is_loopback_host(host):
        return None
    return (
        f"{target.display_url} points at {host}, the machine the call starts on; this Docker "
        "action runs in a container with a network of its own, so that is the container, not "
        "the runner where your endpoint listens. What works: serve the endpoint on 0.0.0.0 and "
        "call the runner's docker0 bridge address (`ip -4 -o addr show docker0`, usually "
        "172.17.0.1), as latency-gate's self-test workflow does; or call a service container "
        f"by its name; or run latency-gate on the runner itself with `uses: {HOST_ACTION}`, "
        "which reaches localhost."
    )


@dataclass(frozen=True)
class ActionSettings:
    """What the action was asked to do, validated."""

    target: Target
    comment: CommentMode
    summary: bool
    json_path: Path
    fail_on_breach: bool
    github_token: str
    # Several targets (a targets file), probed one after another; `target` is the first.
    targets: tuple[Target, ...] = ()
    baseline: BaselinePlan | None = None
    label: str | None = None
    # The Markdown report's file: only in the action's own folder, when json-path is not given.
    markdown_path: Path | None = None

    @property
    def all_targets(self) -> tuple[Target, ...]:
        return self.targets or (self.target,)


def parse_settings(
    inputs: Mapping[str, str],
    workspace: Path,
    environ: Mapping[str, str] | None = None,
    *,
    in_container: bool = False,
) -> ActionSettings:
    """Validate every input at once; ConfigError names each bad one by its input name.

    `environ` fills `${NAME}` references in a targets file (default: this process's).
    `in_container` (the Docker action) refuses loopback URLs, which would reach the container.
    """
    problems: list[InputProblem] = []
    known = set(TARGET_KEYS) | set(ACTION_KEYS) | set(SEVERAL_KEYS)
    problems += [InputProblem(k, "unknown input") for k in sorted(set(inputs) - known)]

    comment = inputs.get("comment", "auto").strip().lower()
    if comment not in COMMENT_MODES:
        problems.append(
            InputProblem("comment", f"expected one of {', '.join(COMMENT_MODES)}; got {comment!r}")
        )
    flags: dict[str, bool] = {}
    for key in ("summary", "fail-on-breach"):
        # The same grammar as every other flag (stream, insecure, ...): true/false, yes/no, 1/0.
        try:
            flags[key] = parse_bool(inputs[key]) if key in inputs else True
        except ValueError as exc:
            problems.append(InputProblem(key, str(exc)))
            flags[key] = True

    raw: dict[str, str | list[str] | None] = {
        k: v for k, v in inputs.items() if k in TARGET_KEYS and k != "headers"
    }
    raw["headers"] = inputs.get("headers", "").splitlines()
    targets: list[Target] = []
    try:
        if "targets" in inputs:
            if "url" in inputs:
                raise ConfigError.single("targets", "give `url` or `targets`, not both")
            # The other inputs (their defaults included) fill what the file leaves out.
            given = {k: v for k, v in raw.items() if k not in {"url", "name"}}
            targets = load_targets(
                workspace / inputs["targets"],
                given=given,
                environ=os.environ if environ is None else environ,
            )
        else:
            targets = [build_target(raw, base_dir=workspace)]
        if "proxy" not in inputs:
            env = os.environ if environ is None else environ
            targets = [with_environment_proxy(t, env) for t in targets]
    except ConfigError as exc:
        problems += exc.problems
    if in_container:
        for target in targets:
            message = loopback_message(target)
            if message is None:
                continue
            where = (
                f"targets ({inputs['targets']}): target {target.name!r}, url"
                if "targets" in inputs
                else "url"
            )
            problems.append(InputProblem(where, message))
    plan: BaselinePlan | None = None
    if "baseline" in inputs:
        try:
            limit = DEFAULT_LIMIT
            if "max-regression" in inputs:
                limit = parse_max_regression(inputs["max-regression"])
            if targets:
                plan = plan_baseline(
                    targets, workspace / inputs["baseline"], limit, option="baseline"
                )
        except ValueError as exc:
            problems.append(InputProblem("max-regression", str(exc)))
        except ConfigError as exc:
            problems += exc.problems
    elif "max-regression" in inputs:
        problems.append(InputProblem("max-regression", "needs `baseline` to compare with"))
    # Named by the user: that one file and nothing beside it. Left to the action: its own
    # folder, with the Markdown report beside the JSON result.
    json_path = Path(inputs.get("json-path") or f"{DEFAULT_REPORT_DIR}/result.json")
    markdown_path = None if "json-path" in inputs else Path(DEFAULT_REPORT_DIR, "report.md")
    if (problem := _written_path_problem("json-path", json_path, workspace)) is not None:
        problems.append(problem)
    label: str | None = None
    try:
        label = parse_label(inputs.get("label", ""))
    except ValueError as exc:
        problems.append(InputProblem("label", str(exc)))
    token_problem = header_text_problem(inputs.get("github-token", "").strip())
    if token_problem is not None:  # it goes in an Authorization header
        problems.append(InputProblem("github-token", token_problem))
    if problems or not targets:
        raise ConfigError(problems)

    return ActionSettings(
        target=targets[0],
        comment=comment,  # type: ignore[arg-type]
        summary=flags["summary"],
        json_path=json_path,
        markdown_path=markdown_path,
        fail_on_breach=flags["fail-on-breach"],
        github_token=inputs.get("github-token", ""),
        targets=tuple(targets) if "targets" in inputs else (),
        baseline=plan,
        label=label,
    )


def _written_path_problem(name: str, path: Path, workspace: Path) -> InputProblem | None:
    """Why the action may not write `path` (relative to the workspace, or absolute), if so.

    Symbolic links and `..` are followed first: the file must land inside the workspace,
    the one folder the job shares with later steps (and, for the Docker action, the only
    one that outlives its container).
    """
    root = workspace.resolve()
    try:
        target = (path if path.is_absolute() else workspace / path).resolve()
    except (OSError, RuntimeError) as exc:
        return InputProblem(name, f"cannot resolve {str(path)!r}: {exc}")
    if target == root or not target.is_relative_to(root):
        return InputProblem(
            name,
            f"{str(path)!r} is outside the workspace ({root}); the action writes only inside "
            "it: give a path relative to the workspace, such as latency/result.json",
        )
    if target.is_dir():
        return InputProblem(name, f"{str(path)!r} is a directory; name the file to write")
    return None


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
    print(github.annotation("error", _scrub(message, env), title="latency-gate bug"), file=stream)
    return ExitCode.BUG


def _scrub(text: str, env: Mapping[str, str]) -> str:
    inputs = read_inputs(env)
    pair = url_userinfo(inputs.get("url", ""))
    return scrub_secrets(text, secret_forms(secrets_in_inputs(inputs), [pair] if pair else []))


def _main(env: Mapping[str, str], out: TextIO) -> int:
    inputs = read_inputs(env)
    for secret in secrets_in_inputs(inputs):
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
        _check_writable(settings, workspace, output_path)
        check_open_files(
            settings.all_targets,
            lambda t: "concurrency" if not settings.targets else f"target {t.name!r}, concurrency",
        )
    except ConfigError as exc:
        # A secret given to the wrong input is quoted back by its message; the runner masks
        # the log, but not the job summary.
        text = _scrub(str(exc), env)
        print(github.annotation("error", text, title="latency-gate: invalid input"), file=out)
        if summary_path is not None:
            _safe_summary(
                summary_path,
                "## ❌ latency-gate: invalid input\n\nNothing was measured.\n\n"
                f"```text\n{text}\n```\n\nSee the action's inputs in the README.\n",
                out,
            )
        return ExitCode.BAD_INPUT

    # A targets file may hold keys of its own (${NAME} references): mask them before any print.
    for target in settings.targets:
        for secret in target.secrets():
            print(github.add_mask(secret), file=out)

    log = ProgressLog(out)

    def progress_for(target: Target) -> ProgressCallback:
        print(f"latency-gate: probing {target.display_url}", file=out)
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
                )
            )
        )
        print(report.render_terminal(results), file=out)
    finally:
        print(github.resume_commands(token), file=out)

    # One output that cannot be written must not cost the others: each is tried, a failure is
    # an ::error naming it, and the run then exits 2.
    unwritten: list[str] = []
    json_path = workspace / settings.json_path  # an absolute json-path stays as it is
    written: list[Path] = []
    files: list[tuple[Path, Callable[[], str]]] = [(json_path, lambda: dump_runs(results))]
    if settings.markdown_path is not None:
        markdown_path = workspace / settings.markdown_path
        files.append((markdown_path, lambda: report.render_markdown(results)))
    for path, render in files:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(render(), encoding="utf-8")
            written.append(path)
        except OSError as exc:
            unwritten.append(_unwritten("json-path", path, exc, out))
    if written:
        print(
            f"latency-gate: wrote {', '.join(_in_workspace(path, workspace) for path in written)}",
            file=out,
        )

    for result in results:
        _annotate(result, out)

    if settings.summary and summary_path is not None:
        _safe_summary(summary_path, report.render_summary(results), out)

    comment_url = _comment(settings, results, env, out)
    passed = all(result.verdict.passed for result in results)

    if output_path is not None:
        outputs = _outputs(results, passed, json_path, workspace, comment_url)
        if json_path not in written:
            outputs["report-path"] = ""
        try:
            _append(output_path, github.format_outputs(outputs))
        except OSError as exc:
            unwritten.append(_unwritten("GITHUB_OUTPUT", output_path, exc, out))
    if unwritten:
        print(f"latency-gate: verdict {'PASS' if passed else 'FAIL'}", file=out)
        return ExitCode.BAD_INPUT
    if not passed and not settings.fail_on_breach:
        print("latency-gate: budget breached, but fail-on-breach is false", file=out)
    return exit_code(results, fail_on_breach=settings.fail_on_breach)


def _unwritten(name: str, path: Path, exc: OSError, out: TextIO) -> str:
    reason = exc.strerror or str(exc)
    message = (
        f"{name}: could not write {str(path)!r}: {reason}; the verdict and the other outputs "
        "were written"
    )
    print(github.annotation("error", message, title="latency-gate: output not written"), file=out)
    return name


def _check_writable(settings: ActionSettings, workspace: Path, output_path: Path | None) -> None:
    """ConfigError naming each file the run must write but cannot (checked without writing)."""
    problems = []
    json_path = workspace / settings.json_path
    if (reason := _unwritable_file(json_path)) is not None:
        problems.append(InputProblem("json-path", f"cannot write {str(json_path)!r}: {reason}"))
    if output_path is not None and (reason := _unwritable_file(output_path)) is not None:
        problems.append(
            InputProblem("GITHUB_OUTPUT", f"cannot write {str(output_path)!r}: {reason}")
        )
    if problems:
        raise ConfigError(problems)


def _unwritable_file(path: Path) -> str | None:
    """Why `path` (or the folders it would be created in) cannot be written, else None."""
    try:
        return _unwritable_reason(path)
    except OSError as exc:  # a name too long, a loop of links, ...
        return exc.strerror or str(exc)
    except ValueError as exc:  # a NUL byte
        return str(exc)


def _unwritable_reason(path: Path) -> str | None:
    if path.is_dir():
        return "it is a directory"
    if path.exists():
        return None if os.access(path, os.W_OK) else "permission denied"
    folder = path.parent
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir():
        return f"{str(folder)!r} is a file, not a folder"
    return None if os.access(folder, os.W_OK | os.X_OK) else f"{str(folder)!r} is not writable"


def _annotate(result: RunResult, out: TextIO) -> None:
    """An error annotation per breached number and regression, a warning per warning."""
    for check in result.verdict.checks:
        if check.passed is False:
            label = NUMBER_LABELS.get(check.number, check.number)
            actual = (
                "no data"
                if check.value is None
                else fmt_value_beside(check.value, check.limit, check.number)
            )
            budget = _show(check.number, check.limit) if check.limit is not None else "—"
            print(
                github.annotation(
                    "error",
                    f"{label} is {actual}, over its budget of {budget} ({result.display_name})",
                    title=f"latency-gate: {label} over budget",
                ),
                file=out,
            )
    for reason in result.verdict.reasons:
        if reason.startswith("regression:"):
            print(
                github.annotation(
                    "error",
                    f"{reason} ({result.display_name})",
                    title="latency-gate: regression against the baseline",
                ),
                file=out,
            )
    if result.baseline is not None and result.baseline.status != "compared":
        print(
            github.annotation(
                "warning",
                f"no baseline for {result.display_name}: {result.baseline.message}; "
                "regressions were not checked",
                title="latency-gate: no baseline",
            ),
            file=out,
        )
    for warning in result.warnings:
        print(github.annotation("warning", warning, title="latency-gate"), file=out)
    kinds = failed_call_kinds(result)
    if kinds:
        print(
            github.annotation(
                "error" if not result.verdict.passed else "warning",
                f"failed calls ({result.display_name}) by kind: " + "; ".join(kinds),
                title="latency-gate: why calls failed",
            ),
            file=out,
        )


def _show(number: str, value: float) -> str:
    return fmt_percent(value) if number == "error_rate" else fmt_duration(value)


def _outputs(
    results: Sequence[RunResult],
    passed: bool,
    json_path: Path,
    workspace: Path,
    comment_url: str | None,
) -> dict[str, str]:
    """Outputs; the per-number ones are empty for several targets (the JSON has each)."""
    numbers = results[0].numbers if len(results) == 1 else None
    report_path = _in_workspace(json_path, workspace)

    def seconds(number: str) -> str:
        value: float | None = None if numbers is None else getattr(numbers, number)
        return "" if value is None else f"{value:.6f}"

    return {
        "passed": "true" if passed else "false",
        "verdict": "PASS" if passed else "FAIL",
        "cold-start": seconds("cold_start"),
        "warm-p50": seconds("warm_p50"),
        "warm-p95": seconds("warm_p95"),
        "concurrent-p95": seconds("concurrent_p95"),
        "error-rate": seconds("error_rate"),
        "report-path": report_path,
        "comment-url": comment_url or "",
    }


def _comment(
    settings: ActionSettings, results: Sequence[RunResult], env: Mapping[str, str], out: TextIO
) -> str | None:
    """Create or update the sticky PR comment as the `comment` mode says; never raises."""
    if settings.comment == "never":
        return None
    event_name = env.get("GITHUB_EVENT_NAME", "")
    event = _load_event(env.get("GITHUB_EVENT_PATH"))
    pr_number = github.pull_request_number(event_name, event)
    if pr_number is None:
        note = f"not a pull request event ({event_name or 'unknown'}): no PR comment"
        if settings.comment == "always":
            print(github.annotation("warning", note, title="latency-gate"), file=out)
        else:
            print(f"latency-gate: {note}", file=out)
        return None
    # on-failure starts a comment only on a failure, but keeps one that an earlier failing
    # run left up to date on every run: otherwise it would go on showing a stale FAIL.
    passed = all(result.verdict.passed for result in results)
    create = not (settings.comment == "on-failure" and passed)
    repository = env.get("GITHUB_REPOSITORY", "")
    marker = github.comment_marker(
        env.get("GITHUB_WORKFLOW", ""),
        env.get("GITHUB_JOB", ""),
        [result.display_name for result in results],
    )
    body = report.render_comment(results, marker=marker, run_url=_run_url(env))
    with github.GitHubClient(
        api_url=env.get("GITHUB_API_URL") or "https://api.github.com",
        token=settings.github_token,
        repository=repository,
    ) as client:
        outcome = client.upsert_comment(pr_number, marker, body, create=create)
    if outcome.action == "skipped":
        print(
            "latency-gate: the budget held and there is no earlier report to update, "
            "so no PR comment (comment: on-failure)",
            file=out,
        )
    elif outcome.warning:
        print(
            github.annotation("warning", outcome.warning, title="latency-gate: PR comment"),
            file=out,
        )
    else:
        print(f"latency-gate: PR comment {outcome.action}: {outcome.url}", file=out)
    return outcome.url


def _in_workspace(path: Path, workspace: Path) -> str:
    """`path` relative to the workspace where it is spelt inside it, else as it is."""
    try:
        return str(path.relative_to(workspace))
    except ValueError:
        return str(path)


def _load_event(path: str | None) -> Mapping[str, object]:
    if not path:
        return {}
    try:
        data = json.loads(read_bounded(Path(path), MAX_EVENT_BYTES).decode("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _optional_path(value: str | None) -> Path | None:
    return Path(value) if value else None


def _append(path: Path, text: str) -> None:
    """Append to a file the runner reads back (outputs, summary), with Unix line ends."""
    with path.open("a", encoding="utf-8", newline="\n") as file:
        file.write(text)


def _safe_summary(path: Path, markdown: str, out: TextIO) -> None:
    try:
        existing = path.stat().st_size if path.exists() else 0
        _append(path, github.step_summary_text(markdown, existing))
    except (OSError, ValueError) as exc:
        print(github.annotation("warning", f"could not write the job summary: {exc}"), file=out)


__all__: Sequence[str] = ("main", "parse_settings", "read_inputs", "secrets_in_inputs")


def _run_url(env: Mapping[str, str]) -> str | None:
    """The workflow run's page, where the job summary is, or None outside a workflow run."""
    server = env.get("GITHUB_SERVER_URL", "https://github.com").rstrip("/")
    repository, run_id = env.get("GITHUB_REPOSITORY", ""), env.get("GITHUB_RUN_ID", "")
    url = f"{server}/{repository}/actions/runs/{run_id}"
    return url if repository and run_id.isdigit() and report.is_run_url(url) else None
