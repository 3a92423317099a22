"""action.yml is the action's contract: its shape, defaults, and the README tables made from it."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from latency_gate.config import TARGET_KEYS, Budget, build_target

REPO_ROOT = Path(__file__).resolve().parent.parent
ACTION_PATH = REPO_ROOT / "action.yml"
ACTION: dict[str, Any] = yaml.safe_load(ACTION_PATH.read_text(encoding="utf-8"))
INPUTS: dict[str, dict[str, Any]] = ACTION["inputs"]
OUTPUTS: dict[str, dict[str, Any]] = ACTION["outputs"]

# Inputs about the action's own behaviour rather than the probe (not in config.TARGET_KEYS).
ACTION_ONLY_INPUTS = {
    "comment",
    "summary",
    "json-path",
    "fail-on-breach",
    "github-token",
    "targets",
    "baseline",
    "max-regression",
    "history",
    "history-size",
    "history-append",
    "history-keep",
    "label",
}
# Keys of config.TARGET_KEYS that are deliberately not action inputs.
NOT_ACTION_INPUTS = {"name", "follow-redirects"}
KEBAB = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")


def _load_gen_script() -> ModuleType:
    path = REPO_ROOT / "scripts" / "gen_readme_tables.py"
    spec = importlib.util.spec_from_file_location("gen_readme_tables", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _default_nodes() -> dict[str, yaml.ScalarNode]:
    """Each input's `default:` as the YAML node, which still knows how it was quoted."""
    root = yaml.compose(ACTION_PATH.read_text(encoding="utf-8"))
    assert isinstance(root, yaml.MappingNode)
    inputs = next(value for key, value in root.value if key.value == "inputs")
    nodes: dict[str, yaml.ScalarNode] = {}
    for key, spec in inputs.value:
        for field, value in spec.value:
            if field.value == "default":
                nodes[key.value] = value
    return nodes


def test_runs_as_docker_action_from_the_dockerfile() -> None:
    """The action runs the repository's Dockerfile and tells the code it runs in the container
    (where a loopback URL reaches the container, not the runner)."""
    assert ACTION["name"] == "latency-gate"
    assert ACTION["runs"] == {
        "using": "docker",
        "image": "Dockerfile",
        "env": {"LATENCY_GATE_IN_CONTAINER": "1"},
    }
    assert set(ACTION["branding"]) == {"icon", "color"}


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_input_name_is_kebab_case(name: str) -> None:
    """Every input name is kebab-case."""
    assert KEBAB.match(name)


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_input_has_description(name: str) -> None:
    """Every input has a description a reader can use (a sentence, not a stub)."""
    description = INPUTS[name].get("description")
    assert isinstance(description, str)
    assert len(description.split()) >= 4


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_input_default_is_a_quoted_string(name: str) -> None:
    """Every input has a default, written as a quoted string (so `20` or `false` stay strings)."""
    node = _default_nodes().get(name)
    assert node is not None, f"input {name} has no default"
    assert node.style in {'"', "'"}, f"default of {name} is not quoted"


@pytest.mark.parametrize("name", sorted(OUTPUTS))
def test_output_has_description(name: str) -> None:
    """Every output is kebab-case and has a description."""
    assert KEBAB.match(name)
    description = OUTPUTS[name].get("description")
    assert isinstance(description, str)
    assert len(description.split()) >= 4


def test_inputs_cover_the_probe_settings() -> None:
    """The inputs are exactly the probe's settings plus the action's own ones."""
    probe_settings = set(TARGET_KEYS) - NOT_ACTION_INPUTS
    assert set(INPUTS) == probe_settings | ACTION_ONLY_INPUTS


def test_outputs_are_the_documented_ones() -> None:
    """The outputs are the verdict, the five numbers, the capacity, the goodput, the report
    path and the comment URL."""
    assert list(OUTPUTS) == [
        "passed",
        "verdict",
        "cold-start",
        "warm-p50",
        "warm-p95",
        "concurrent-p95",
        "error-rate",
        "capacity",
        "goodput",
        "report-path",
        "comment-url",
    ]


def test_defaults_match_the_probe_defaults() -> None:
    """The action's defaults (empty meaning not given) build the same target as the CLI's."""
    url = "http://127.0.0.1:9/"
    given = {
        name: spec["default"]
        for name, spec in INPUTS.items()
        if name in TARGET_KEYS and spec["default"] != ""
    }
    assert build_target({**given, "url": url}) == build_target({"url": url})
    assert build_target({**given, "url": url}).budget == Budget()


def test_action_only_defaults() -> None:
    """The action's own inputs default to comment auto, summary on, failing on a breach."""
    defaults = {name: INPUTS[name]["default"] for name in sorted(ACTION_ONLY_INPUTS)}
    assert defaults == {
        "baseline": "",
        "comment": "auto",
        "fail-on-breach": "true",
        "github-token": "${{ github.token }}",
        "history": "",
        "history-append": "auto",
        "history-keep": "50",
        "history-size": "10",
        "json-path": "",
        "label": "",
        "max-regression": "",
        "summary": "true",
        "targets": "",
    }


def test_inputs_reference_tables_match_action_yml() -> None:
    """docs/inputs.md's inputs and outputs tables are the ones generated from action.yml (they
    were README.md's until issue 39 moved them to the inputs reference)."""
    gen = _load_gen_script()
    reference = (REPO_ROOT / "docs" / "inputs.md").read_text(encoding="utf-8")
    assert reference == gen.update_readme(reference, ACTION), (
        "docs/inputs.md's tables are stale: run python scripts/gen_readme_tables.py"
    )


def test_generated_inputs_table_rows() -> None:
    """The inputs table has one row per input, with the default as code and pipes escaped."""
    gen = _load_gen_script()
    action = {
        "inputs": {
            "url": {"description": "The endpoint.", "default": ""},
            "timeout": {"description": "Per-call\n  timeout | cap.", "default": "30s"},
        }
    }
    assert gen.render_inputs(action) == (
        "| input | required | default | description |\n"
        "| --- | --- | --- | --- |\n"
        '| `url` | yes, unless `targets` | `""` | The endpoint. |\n'
        "| `timeout` | no | `30s` | Per-call timeout \\| cap. |"
    )


def test_inputs_table_says_which_inputs_are_required() -> None:
    """An input action.yml marks `required: true` reads "yes"; those needed only in some cases
    say when (`url` unless `targets`; `model` for the LLM formats at hosts of many models)."""
    gen = _load_gen_script()
    rows = gen.render_inputs(
        {
            "inputs": {
                "must": {"description": "x", "required": True},
                "model": {"description": "x", "required": False},
                "timeout": {"description": "x"},
            }
        }
    ).splitlines()
    assert rows[2].startswith("| `must` | yes | ")
    assert rows[3].startswith(
        "| `model` | for openai-chat, openai-responses and anthropic at a host that serves "
        "several models"
    )
    assert rows[4].startswith("| `timeout` | no | ")
    assert set(gen.REQUIRED_WHEN) <= set(ACTION["inputs"])


def test_generator_refuses_a_readme_without_markers() -> None:
    """Updating a README without the marker pair is an error that names the marker."""
    gen = _load_gen_script()
    with pytest.raises(ValueError, match=r"<!-- inputs:start -->"):
        gen.update_readme("# no markers here\n", ACTION)


def test_generator_replaces_only_between_markers() -> None:
    """Text around the markers is kept; what was between them is replaced."""
    gen = _load_gen_script()
    readme = (
        "intro\n<!-- inputs:start -->\nSTALE ROW\n<!-- inputs:end -->\nmiddle\n"
        "<!-- outputs:start --><!-- outputs:end -->\nend\n"
    )
    updated = gen.update_readme(readme, ACTION)
    assert updated.startswith(
        "intro\n<!-- inputs:start -->\n| input | required | default | description |"
    )
    assert "STALE ROW" not in updated
    assert "<!-- inputs:end -->\nmiddle\n<!-- outputs:start -->\n| output | description |" in (
        updated
    )
    assert updated.endswith("<!-- outputs:end -->\nend\n")
