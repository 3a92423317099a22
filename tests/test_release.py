"""Releases: the tagged commit's action.yml names the pushed image; the workflow's order, rights.

docs/design.md, "Releases", describes the flow; tests/test_registry.py tests the pull path and
tests/test_lint.py lints release.yml with the other workflows.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sysconfig
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from conftest import REPO_ROOT

IMAGE = "docker://ghcr.io/octo-org/latency-gate:v1.2.3"
WORKFLOW = REPO_ROOT / ".github" / "workflows" / "release.yml"


def _load_script() -> ModuleType:
    path = REPO_ROOT / "scripts" / "pin_action_image.py"
    spec = importlib.util.spec_from_file_location("pin_action_image", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


pin = _load_script()
ACTION_YML = (REPO_ROOT / "action.yml").read_text(encoding="utf-8")


def _workflow() -> dict[Any, Any]:
    loaded: dict[Any, Any] = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    return loaded


def _step_names(job: str) -> list[str]:
    return [step.get("name", step.get("uses", "")) for step in _workflow()["jobs"][job]["steps"]]


def test_pin_changes_only_the_image_line() -> None:
    """Pinning rewrites the one `image:` line under `runs:` and leaves every other line alone."""
    pinned = pin.pin_image(ACTION_YML, IMAGE)
    changed = [
        (old, new)
        for old, new in zip(ACTION_YML.splitlines(), pinned.splitlines(), strict=True)
        if old != new
    ]
    assert changed == [("  image: Dockerfile", f"  image: {IMAGE}")]
    assert yaml.safe_load(pinned)["runs"] == {
        "using": "docker",
        "image": IMAGE,
        "env": {"LATENCY_GATE_IN_CONTAINER": "1"},
    }


@pytest.mark.parametrize(
    "image",
    [
        "ghcr.io/octo-org/latency-gate:v1.2.3",
        "docker://ghcr.io/Octo-Org/latency-gate:v1.2.3",
        "docker://ghcr.io/octo-org/latency-gate",
    ],
    ids=["no-scheme", "upper-case", "no-tag"],
)
def test_pin_refuses_a_reference_users_could_not_pull(image: str) -> None:
    """A reference without docker://, with upper case (GHCR refuses it) or without a tag fails."""
    with pytest.raises(ValueError, match="not a lower-case docker://HOST/NAME:TAG reference"):
        pin.pin_image(ACTION_YML, image)


def test_check_passes_on_a_release_commit(tmp_path: Path) -> None:
    """--check exits 0 when action.yml names the image, as on the tagged release commit."""
    action_yml = tmp_path / "action.yml"
    action_yml.write_text(pin.pin_image(ACTION_YML, IMAGE), encoding="utf-8")
    assert pin.main(["--check", IMAGE, "--action-yml", str(action_yml)]) == 0


def test_check_fails_on_main() -> None:
    """On main action.yml builds the Dockerfile, so the release check refuses to push from it."""
    assert pin.runs_image(ACTION_YML) == "Dockerfile"
    assert pin.main(["--check", IMAGE, "--action-yml", str(REPO_ROOT / "action.yml")]) == 1


def test_pinned_action_yml_is_valid_metadata(tmp_path: Path) -> None:
    """The release commit's action.yml passes the action metadata schema, as main's does."""
    action_yml = tmp_path / "action.yml"
    action_yml.write_text(pin.pin_image(ACTION_YML, IMAGE), encoding="utf-8")
    beside = Path(sysconfig.get_path("scripts")) / "check-jsonschema"
    tool = str(beside) if beside.is_file() else shutil.which("check-jsonschema")
    assert tool is not None, "check-jsonschema is not installed: pip install -e '.[dev]'"
    done = subprocess.run(
        [tool, "--builtin-schema", "vendor.github-actions", str(action_yml)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_release_runs_on_version_tags_only() -> None:
    """The release workflow runs on a pushed `v*` tag and on nothing else."""
    # PyYAML reads the `on` key as the boolean True (YAML 1.1).
    assert _workflow()[True] == {"push": {"tags": ["v*"]}}


def test_release_permissions_are_minimal() -> None:
    """Read-only by default; only the job that pushes may write packages."""
    workflow = _workflow()
    assert workflow["permissions"] == {"contents": "read"}
    assert workflow["jobs"]["image"]["permissions"] == {"contents": "read", "packages": "write"}
    assert workflow["jobs"]["released-action"]["permissions"] == {
        "contents": "read",
        "packages": "read",
    }


def test_release_tests_the_image_before_pushing_it() -> None:
    """Check the pin, build, test that very image, then log in and push, in that order."""
    names = _step_names("image")
    order = [
        names.index("action.yml names the image of this tag"),
        names.index("Build"),
        names.index("Container tests against the built image"),
        names.index("docker/login-action@v4"),
        names.index("Push"),
    ]
    assert order == sorted(order)
    tests = _workflow()["jobs"]["image"]["steps"][
        names.index("Container tests against the built image")
    ]
    assert tests["env"]["LATENCY_GATE_ACTION_IMAGE"] == "${{ steps.names.outputs.image }}"


def test_released_action_runs_after_the_push() -> None:
    """A second job runs the tagged action.yml (`uses: ./`), so the pushed image is pulled."""
    job = _workflow()["jobs"]["released-action"]
    assert job["needs"] == "image"
    (gate,) = [step for step in job["steps"] if step.get("uses") == "./"]
    assert gate["with"]["url"] == "${{ steps.demo.outputs.url }}"
