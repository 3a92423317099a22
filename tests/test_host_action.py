"""host/action.yml, the composite action that runs latency-gate on the runner: the Docker action's
contract, unchanged, on another way in. tests/test_act.py runs it for real in self-test.yml.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from latency_gate.action.inputs import read_inputs

REPO_ROOT = Path(__file__).resolve().parent.parent
DOCKER_ACTION: dict[str, Any] = yaml.safe_load(
    (REPO_ROOT / "action.yml").read_text(encoding="utf-8")
)
HOST_PATH = REPO_ROOT / "host" / "action.yml"
HOST_ACTION: dict[str, Any] = yaml.safe_load(HOST_PATH.read_text(encoding="utf-8"))
STEPS: dict[str, dict[str, Any]] = {
    step.get("id", step["name"]): step for step in HOST_ACTION["runs"]["steps"]
}


def _load_gen_script() -> ModuleType:
    path = REPO_ROOT / "scripts" / "gen_host_action.py"
    spec = importlib.util.spec_from_file_location("gen_host_action", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_from_action_yml() -> None:
    """host/action.yml is what scripts/gen_host_action.py makes of the current action.yml."""
    gen = _load_gen_script()
    wanted = gen.render((REPO_ROOT / "action.yml").read_text(encoding="utf-8"))
    assert HOST_PATH.read_text(encoding="utf-8") == wanted, (
        "host/action.yml is stale: run python scripts/gen_host_action.py"
    )


def test_same_inputs_as_the_docker_action() -> None:
    """Every input of action.yml, and no other, with the same description and default."""
    assert HOST_ACTION["inputs"] == DOCKER_ACTION["inputs"]
    assert list(HOST_ACTION["inputs"]) == list(DOCKER_ACTION["inputs"])


def test_same_outputs_each_from_the_gate_step() -> None:
    """Every output of action.yml, same description, its value the gate step's output."""
    assert list(HOST_ACTION["outputs"]) == list(DOCKER_ACTION["outputs"])
    for name, spec in HOST_ACTION["outputs"].items():
        assert spec == {
            "description": DOCKER_ACTION["outputs"][name]["description"],
            "value": f"${{{{ steps.gate.outputs.{name} }}}}",
        }


def test_every_input_reaches_the_action_code_by_its_name() -> None:
    """The gate step passes each input as an INPUT_* variable that read_inputs maps back to it."""
    env = STEPS["gate"]["env"]
    passed = {name: value for name, value in env.items() if name.startswith("INPUT_")}
    assert sorted(passed.values()) == sorted(
        f"${{{{ inputs.{name} }}}}" for name in DOCKER_ACTION["inputs"]
    )
    # What the step's environment holds once the runner has filled the expressions in.
    filled = {name: re.sub(r"^\$\{\{ inputs\.(.+) \}\}$", r"\1", v) for name, v in passed.items()}
    assert read_inputs(filled) == {name: name for name in DOCKER_ACTION["inputs"]}


def test_runs_the_image_entrypoint_from_its_own_checkout() -> None:
    """It installs the action's own checkout and runs the entrypoint.py the image runs."""
    assert HOST_ACTION["runs"]["using"] == "composite"
    assert list(STEPS) == ["Refuse Windows", "install", "gate"]
    assert STEPS["install"]["env"] == {"ACTION_ROOT": "${{ github.action_path }}/.."}
    assert (
        'pip install --quiet --disable-pip-version-check "$ACTION_ROOT"'
        in (STEPS["install"]["run"])
    )
    assert STEPS["gate"]["env"]["LATENCY_GATE_ENTRYPOINT"] == (
        "${{ github.action_path }}/../entrypoint.py"
    )
    assert STEPS["gate"]["run"] == 'exec "$LATENCY_GATE_PYTHON" -P "$LATENCY_GATE_ENTRYPOINT"'
    dockerfile = (REPO_ROOT / "Dockerfile").read_text(encoding="utf-8")
    assert 'ENTRYPOINT ["python", "/app/entrypoint.py"]' in dockerfile


def test_windows_is_refused_before_anything_is_installed() -> None:
    """On a Windows runner the first step fails with an error annotation that says so."""
    refuse = HOST_ACTION["runs"]["steps"][0]
    assert refuse["if"] == "runner.os == 'Windows'"
    assert (
        'echo "::error title=latency-gate: Windows runners are not supported::$message"'
        in refuse["run"]
    )
    assert refuse["run"].rstrip().endswith("exit 2")
