"""The JSON result file: one run, or several; written, parsed back, and merged with labels.

The format a later run reads as its baseline and `merge` combines. Text in, text out: the edges
read and write the files. A file read back is data, not a verdict: it is read strictly (no NaN,
no infinity, no number of more than 15 digits, no deep nesting), the secrets its settings still
hold are redacted and scrubbed from all its text, its calls are checked against each other, and
its run is judged again from those calls (assess/rejudge.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import PurePath
from typing import Any

from pydantic import ValidationError

from latency_gate.config.json_data import load_json
from latency_gate.config.redacted import redact_settings
from latency_gate.config.secrets import scrub_secrets, secret_forms
from latency_gate.errors import ConfigError
from latency_gate.models import SCHEMA_VERSION, RunResult
from latency_gate.results.checks import check_run

__all__ = ["dump_runs", "label_runs", "parse_runs"]


def dump_runs(results: Sequence[RunResult]) -> str:
    """The JSON result document: one run as a RunResult; several as
    {"schema_version": 1, "runs": [RunResult, ...]}."""
    if len(results) == 1:
        return results[0].model_dump_json(indent=2) + "\n"
    runs = ",\n".join(r.model_dump_json(indent=2) for r in results)
    return f'{{\n"schema_version": {SCHEMA_VERSION},\n"runs": [\n{runs}\n]\n}}\n'


def parse_runs(text: str, source: str, *, baseline: bool = False) -> list[RunResult]:
    """Runs from a JSON result document of either shape (a bare list is accepted too), each
    checked and judged again from its own calls (a warning on a run whose file said otherwise).

    Raises ConfigError naming `source` when the text is not such a document, or a run cannot be
    judged: its calls contradict each other, a duration is negative or past 24 hours, a time is
    not a date, its budget cannot be read; as a `baseline`, a run without calls.
    """
    try:
        data: Any = load_json(text, max_int_digits=MAX_RESULT_DIGITS)
    except ValueError as exc:
        raise ConfigError.single(source, f"not a JSON result file: {exc}") from None
    if isinstance(data, dict) and "runs" in data:
        version = data.get("schema_version")
        if version != SCHEMA_VERSION:
            raise ConfigError.single(
                source, f"schema_version {version!r} is not {SCHEMA_VERSION}, the one this reads"
            )
        items = data["runs"]
    else:
        items = data if isinstance(data, list) else [data]
    if not isinstance(items, list) or not items:
        raise ConfigError.single(source, "holds no runs")
    # Loaded here, when a file is read: judging is not needed before a run's first request.
    from latency_gate.assess.rejudge import rejudge  # noqa: PLC0415 (start-up)

    runs = []
    for index, item in enumerate(items):
        prefix = f"run {index}: " if len(items) > 1 else ""
        try:
            run = RunResult.model_validate(_redacted(item))
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            where = ".".join(str(part) for part in first["loc"]) or "document"
            raise ConfigError.single(
                source,
                f"not a latency-gate result ({prefix}{where}: {first['msg']}; "
                f"{exc.error_count()} problem(s))",
            ) from None
        try:
            check_run(run, baseline=baseline)
            runs.append(rejudge(run))
        except ValueError as exc:
            raise ConfigError.single(source, f"{prefix}cannot be judged: {exc}") from None
    return runs


# A result file's counts (calls, bytes, tokens, statuses) are far below this; a longer number is
# not a count (and 10**400 tokens would overflow the float arithmetic that reads them).
MAX_RESULT_DIGITS = 15


def _redacted(item: Any) -> Any:
    """A run's document with the secrets its settings still hold (a file written by hand, or by
    an older version) redacted there and scrubbed from all its other text, in every form."""
    if not isinstance(item, dict) or not isinstance(item.get("config"), dict):
        return item
    config, secrets, pairs = redact_settings(item["config"])
    if not secrets and not pairs:
        return item
    forms = secret_forms(secrets, pairs)

    def scrub(value: Any) -> Any:
        if isinstance(value, str):
            return scrub_secrets(value, forms)
        if isinstance(value, dict):
            return {key: scrub(child) for key, child in value.items()}
        if isinstance(value, list):
            return [scrub(child) for child in value]
        return value

    return {**scrub({k: v for k, v in item.items() if k != "config"}), "config": config}


def label_runs(files: Sequence[tuple[str, Sequence[RunResult]]]) -> list[RunResult]:
    """Runs from several result files, each column named apart: a run keeps its own label;
    an unlabelled run whose target name repeats is labelled with its file's stem (the
    artifact's name in a matrix), and a label that still repeats gets "#2", "#3"."""
    runs = [(PurePath(name).stem, run) for name, group in files for run in group]
    counts = Counter(run.target for _, run in runs)
    labelled = [
        run.model_copy(update={"label": stem})
        if run.label is None and counts[run.target] > 1
        else run
        for stem, run in runs
    ]
    seen: Counter[str] = Counter()
    result = []
    for run in labelled:
        name = run.display_name
        seen[name] += 1
        if seen[name] == 1:
            result.append(run)
            continue
        label = f"{run.label} #{seen[name]}" if run.label else f"#{seen[name]}"
        result.append(run.model_copy(update={"label": label}))
    return result
