"""The JSON result file: one run, or several; written, parsed back, and merged with labels.

The format a later run reads as its baseline and `merge` combines. Text in, text out: the edges
read and write the files.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import PurePath
from typing import Any

from pydantic import ValidationError

from latency_gate.errors import ConfigError
from latency_gate.models import SCHEMA_VERSION, RunResult

__all__ = ["dump_runs", "label_runs", "parse_runs"]


def dump_runs(results: Sequence[RunResult]) -> str:
    """The JSON result document: one run as a RunResult; several as
    {"schema_version": 1, "runs": [RunResult, ...]}."""
    if len(results) == 1:
        return results[0].model_dump_json(indent=2) + "\n"
    runs = ",\n".join(r.model_dump_json(indent=2) for r in results)
    return f'{{\n"schema_version": {SCHEMA_VERSION},\n"runs": [\n{runs}\n]\n}}\n'


def parse_runs(text: str, source: str) -> list[RunResult]:
    """Runs from a JSON result document of either shape (a bare list is accepted too).

    Raises ConfigError naming `source` when the text is not such a document.
    """
    try:
        data: Any = json.loads(text)
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
    runs = []
    for index, item in enumerate(items):
        try:
            runs.append(RunResult.model_validate(item))
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            where = ".".join(str(part) for part in first["loc"]) or "document"
            prefix = f"run {index}: " if len(items) > 1 else ""
            raise ConfigError.single(
                source,
                f"not a latency-gate result ({prefix}{where}: {first['msg']}; "
                f"{exc.error_count()} problem(s))",
            ) from None
    return runs


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
