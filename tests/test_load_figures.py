"""The load figures (models/load.py): a result file written before the capacity and the goodput
shared one model still reads, whole, and still meets the published schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema

from latency_gate.models import Capacity, Goodput, LoadFigure, RunResult

FIXTURES = Path(__file__).resolve().parent / "fixtures"
# Written by the models before one load model: a capacity and a goodput search (three levels
# each, their calls left out), each figure's keys in its own old order.
BEFORE = FIXTURES / "result_before_one_load_model.json"
PUBLISHED = Path(__file__).resolve().parent.parent / "docs" / "json-schema.json"


def _before() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(BEFORE.read_text(encoding="utf-8"))
    return data


def test_a_result_file_from_before_one_load_model_reads_whole() -> None:
    """Every field of its capacity and its goodput reads back, and writes out again the same."""
    result = RunResult.model_validate_json(BEFORE.read_text(encoding="utf-8"))
    assert isinstance(result.capacity, Capacity)
    assert isinstance(result.goodput, Goodput)
    assert isinstance(result.capacity, LoadFigure)
    assert isinstance(result.goodput, LoadFigure)
    assert json.loads(result.model_dump_json()) == _before()


def test_a_result_file_from_before_one_load_model_meets_the_schema() -> None:
    """The published schema accepts it as it was written."""
    schema = json.loads(PUBLISHED.read_text(encoding="utf-8"))
    jsonschema.validate(_before(), schema)
