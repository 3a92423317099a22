"""docs/json-schema.json: generated from the pydantic models, in step with them, and right.

After a change to the result models, regenerate it: `python scripts/gen_json_schema.py`.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonschema
import pytest
from result_factory import make_result

from latency_gate.results.json_file import dump_runs

REPO_ROOT = Path(__file__).resolve().parent.parent
PUBLISHED = REPO_ROOT / "docs" / "json-schema.json"


def _load_gen_script() -> ModuleType:
    path = REPO_ROOT / "scripts" / "gen_json_schema.py"
    spec = importlib.util.spec_from_file_location("gen_json_schema", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(PUBLISHED.read_text(encoding="utf-8"))
    return data


def test_published_schema_matches_the_models() -> None:
    """docs/json-schema.json is exactly what the script generates from RunResult today."""
    assert PUBLISHED.read_text(encoding="utf-8") == _load_gen_script().render(), (
        "docs/json-schema.json is stale: run python scripts/gen_json_schema.py"
    )


def test_schema_is_valid_json_schema(schema: dict[str, Any]) -> None:
    """The published schema is itself a valid JSON Schema 2020-12 document."""
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_one_run_validates(schema: dict[str, Any]) -> None:
    """A one-run result file, as --json writes it, validates against the schema."""
    document = json.loads(dump_runs([make_result("local", stream=True)]))
    jsonschema.Draft202012Validator(schema).validate(document)


def test_several_runs_validate(schema: dict[str, Any]) -> None:
    """A several-run result file ({schema_version, runs}) validates against the schema."""
    document = json.loads(dump_runs([make_result("local"), make_result("paid", passed=False)]))
    assert set(document) == {"schema_version", "runs"}
    jsonschema.Draft202012Validator(schema).validate(document)


def test_schema_names_the_five_numbers(schema: dict[str, Any]) -> None:
    """The numbers object holds the five numbers under their documented names."""
    numbers = schema["$defs"]["Numbers"]
    assert {"cold_start", "warm_p50", "warm_p95", "concurrent_p95", "error_rate"} <= set(
        numbers["required"]
    )


@pytest.mark.parametrize(
    ("change", "case"),
    [
        (lambda d: d.pop("numbers"), "numbers missing"),
        (lambda d: d.update(schema_version=2), "a future schema version"),
        (lambda d: d.update(surprise=True), "an unknown field"),
        (lambda d: d["numbers"].update(error_rate="none"), "a number that is a string"),
    ],
)
def test_schema_rejects_a_broken_result(schema: dict[str, Any], change: Any, case: str) -> None:
    """A result file that is not what the models write fails validation (each case)."""
    document = json.loads(dump_runs([make_result("local")]))
    change(document)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate(document)
