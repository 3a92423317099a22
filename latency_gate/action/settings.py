"""The action's settings: the inputs validated at once into `ActionSettings`, every bad one named
by its input name in a single ConfigError.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from latency_gate.action.files import folder_path_problem, written_path_problem
from latency_gate.action.loopback import loopback_problems
from latency_gate.config import (
    TARGET_KEYS,
    Target,
    ab_input,
    build_target,
    header_text_problem,
    parse_bool,
    parse_label,
    with_environment_proxy,
)
from latency_gate.config.files import confined
from latency_gate.config.regression import DEFAULT_LIMIT, RegressionLimit, parse_max_regression
from latency_gate.config.targets_file import load_targets
from latency_gate.errors import ConfigError, InputProblem
from latency_gate.results.history_folder import HistoryOptions, parse_history_options, plan_history
from latency_gate.results.loading import plan_baseline

if TYPE_CHECKING:
    from latency_gate.assess.compare.baseline import BaselinePlan
    from latency_gate.assess.compare.history import HistoryPlan

CommentMode = Literal["auto", "always", "on-failure", "never"]
COMMENT_MODES: tuple[CommentMode, ...] = ("auto", "always", "on-failure", "never")

# Inputs the action reads besides the target settings.
ACTION_KEYS = ("comment", "summary", "json-path", "fail-on-breach", "github-token", "label")
SEVERAL_KEYS = ("targets", "baseline", "max-regression")
# Inputs of one "Name: value" a line.
MULTI_LINE_KEYS = ("headers", "baseline-headers")
HISTORY_KEYS = ("history", "history-size", "history-append", "history-keep")
_HISTORY_NAMES = {"size": "history-size", "keep": "history-keep", "append": "history-append"}
DEFAULT_REPORT_DIR = "latency-gate-report"


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
    # The limit of an A/B run (targets with a baseline-url); None: the default, 10 %.
    max_regression: RegressionLimit | None = None
    # The history folder (`history`), read; where and when to append; the files it skipped.
    history: HistoryPlan | None = None
    history_options: HistoryOptions | None = None
    history_warnings: tuple[str, ...] = ()

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
    known = set(TARGET_KEYS) | set(ACTION_KEYS) | set(SEVERAL_KEYS) | set(HISTORY_KEYS)
    problems += [InputProblem(k, "unknown input") for k in sorted(set(inputs) - known)]
    comment, flags = _report_modes(inputs, problems)
    targets = _targets(inputs, workspace, environ, problems)
    if in_container:
        problems += _loopback_problems(inputs, targets)
    plan, limit, max_regression = _comparison(inputs, workspace, targets, problems)
    history, history_options, history_warnings = _history(inputs, workspace, targets, limit)
    problems += history_warnings.problems
    # Named by the user: that one file and nothing beside it. Left to the action: its own
    # folder, with the Markdown report beside the JSON result.
    json_text = inputs.get("json-path") or f"{DEFAULT_REPORT_DIR}/result.json"
    json_path = Path(json_text)
    markdown_path = None if "json-path" in inputs else Path(DEFAULT_REPORT_DIR, "report.md")
    if (problem := written_path_problem("json-path", json_text, workspace)) is not None:
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
        max_regression=max_regression,
        history=history,
        history_options=history_options,
        history_warnings=history_warnings.warnings,
    )


def _report_modes(
    inputs: Mapping[str, str], problems: list[InputProblem]
) -> tuple[str, dict[str, bool]]:
    """`comment`, and the flags `summary` and `fail-on-breach` (true when not given)."""
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
    return comment, flags


def _targets(
    inputs: Mapping[str, str],
    workspace: Path,
    environ: Mapping[str, str] | None,
    problems: list[InputProblem],
) -> list[Target]:
    """The one target of the inputs, or the targets file's (the inputs fill in what it omits),
    each with the environment's proxy unless `proxy` was given; none when a problem is found."""
    raw: dict[str, str | list[str] | None] = {
        k: v for k, v in inputs.items() if k in TARGET_KEYS and k not in MULTI_LINE_KEYS
    }
    for key in MULTI_LINE_KEYS:
        raw[key] = inputs.get(key, "").splitlines()
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
                root=workspace,
            )
        else:
            targets = [build_target(raw, base_dir=workspace, root=workspace)]
        if "proxy" not in inputs:
            env = os.environ if environ is None else environ
            targets = [with_environment_proxy(t, env) for t in targets]
    except ConfigError as exc:
        problems += exc.problems
    return targets


def _loopback_problems(inputs: Mapping[str, str], targets: list[Target]) -> list[InputProblem]:
    """In the Docker action's container: each target's loopback URL, which would reach the
    container itself."""
    problems = []
    for target in targets:
        for field, message in loopback_problems(target):
            where = (
                f"targets ({inputs['targets']}): target {target.name!r}, {field}"
                if "targets" in inputs
                else field
            )
            problems.append(InputProblem(where, message))
    return problems


def _comparison(
    inputs: Mapping[str, str],
    workspace: Path,
    targets: list[Target],
    problems: list[InputProblem],
) -> tuple[BaselinePlan | None, RegressionLimit, RegressionLimit | None]:
    """The baseline file read (`baseline`), the regression limit, and the limit as given: one
    comparison a run (an earlier run, a base measured beside the head, or a history)."""
    plan: BaselinePlan | None = None
    side_by_side = next((name for t in targets if (name := ab_input(t))), None)
    limit = DEFAULT_LIMIT
    max_regression = None
    if "max-regression" in inputs:
        try:
            limit = max_regression = parse_max_regression(inputs["max-regression"])
        except ValueError as exc:
            problems.append(InputProblem("max-regression", str(exc)))
        if not ({"baseline", "history"} & set(inputs)) and side_by_side is None:
            problems.append(
                InputProblem(
                    "max-regression",
                    "needs `baseline`, `baseline-url` or `history` to compare with",
                )
            )
    compared = [k for k in ("baseline", "history") if k in inputs]
    if side_by_side is not None:
        compared.append(side_by_side)
    if len(compared) > 1:
        shown = " and ".join(f"`{k}`" for k in compared)
        problems.append(
            InputProblem(
                compared[-1],
                f"give one of `baseline` (an earlier run's result), `baseline-url` (a base "
                f"measured beside the head in this run) and `history`, not {shown}: a run makes "
                "one comparison",
            )
        )
    elif "baseline" in inputs and targets:
        plan = _baseline(workspace / inputs["baseline"], workspace, targets, limit, problems)
    return plan, limit, max_regression


def _baseline(
    baseline_path: Path,
    workspace: Path,
    targets: list[Target],
    limit: RegressionLimit,
    problems: list[InputProblem],
) -> BaselinePlan | None:
    """The baseline file, read only inside the workspace, like every other file."""
    try:
        try:
            confined(baseline_path, workspace)
        except ValueError as exc:
            raise ConfigError.single("baseline", str(exc)) from None
        return plan_baseline(targets, baseline_path, limit, option="baseline")
    except ConfigError as exc:
        problems += exc.problems
    return None


@dataclass
class _Found:
    problems: list[InputProblem]
    warnings: tuple[str, ...] = ()


def _history(
    inputs: Mapping[str, str], workspace: Path, targets: list[Target], limit: RegressionLimit
) -> tuple[HistoryPlan | None, HistoryOptions | None, _Found]:
    """The history folder, read (its skipped files are warnings) and its options validated.
    The options are checked even without `history` (they carry defaults, a typo still shows)."""
    found = _Found([])
    folder = inputs.get("history", "")
    try:
        options = parse_history_options(
            workspace / folder,
            folder,
            size=inputs.get("history-size"),
            keep=inputs.get("history-keep"),
            append=inputs.get("history-append"),
            names=_HISTORY_NAMES,
        )
    except ConfigError as exc:
        found.problems += exc.problems
        return None, None, found
    if not folder:
        return None, None, found
    if (problem := folder_path_problem("history", Path(folder), workspace)) is not None:
        found.problems.append(problem)
        return None, None, found
    if not targets:
        return None, None, found
    warnings: list[str] = []
    try:
        history = plan_history(targets, options, limit, "history", warnings.append)
    except ConfigError as exc:
        found.problems += exc.problems
        return None, None, found
    found.warnings = tuple(warnings)
    return history, options, found
