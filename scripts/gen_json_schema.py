"""Write docs/json-schema.json, the JSON schema of the result file, from the pydantic models.

    python scripts/gen_json_schema.py           # rewrite docs/json-schema.json
    python scripts/gen_json_schema.py --check   # exit 1 if it is out of step with the models

The result file (`--json`, the action's `json-path`) holds one run as a `RunResult`, or several
(a targets file, `merge`) as `{"schema_version": 1, "runs": [RunResult, ...]}`; the schema
accepts either. tests/test_json_schema.py runs the same function, so a changed model fails the
tests until this script has been run.
"""

# No `from __future__ import annotations`: pydantic resolves RunSet's field types at class
# creation, which works even when this file is loaded by path (as the tests do).
import json
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, TypeAdapter

REPO_ROOT = Path(__file__).resolve().parent.parent
SCHEMA_PATH = REPO_ROOT / "docs" / "json-schema.json"

sys.path.insert(0, str(REPO_ROOT))  # run from a checkout without installing it

from latency_gate.models import SCHEMA_VERSION, RunResult  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling module
from _generated import generator_parser, write_generated  # noqa: E402


class RunSet(BaseModel):
    """Several runs in one result file: a targets file probed in turn, or merged results."""

    model_config = ConfigDict(frozen=True, extra="forbid", title="RunSet")

    schema_version: Literal[1] = SCHEMA_VERSION
    runs: list[RunResult]


def result_schema() -> dict[str, Any]:
    """The schema of a result file, as the models serialise it (JSON Schema 2020-12)."""
    schema = TypeAdapter(RunResult | RunSet).json_schema(mode="serialization")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "latency-gate result",
        "description": (
            f"The JSON result file of latency-gate, schema version {SCHEMA_VERSION}: one run "
            "(RunResult) or several (RunSet). Durations are seconds; error_rate is a fraction."
        ),
        **schema,
    }


def render() -> str:
    """docs/json-schema.json's text: the schema, indented, keys in the models' order."""
    return json.dumps(result_schema(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = generator_parser(__doc__)
    parser.add_argument("--out", type=Path, default=SCHEMA_PATH)
    args = parser.parse_args(argv)

    return write_generated(
        args.out,
        lambda _: render(),
        check=args.check,
        subject=args.out.name,
        source="the models",
        script=Path(__file__).name,
    )


if __name__ == "__main__":
    raise SystemExit(main())
