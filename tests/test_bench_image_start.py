"""bench/image_start.py still runs end to end, one round of each way (no timing assertions)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT, DockerEnv, _unavailable

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_one_round_builds_cold_and_pulls_every_added_layer(
    docker_env: DockerEnv, tmp_path: Path
) -> None:
    """One round: both runs exit 0, the build used no cache and the pull fetched every layer."""
    if shutil.which("docker-registry") is None:
        _unavailable("docker-registry is not installed", "LATENCY_GATE_REQUIRE_DOCKER")
    done = subprocess.run(
        [
            sys.executable,
            str(REPO_ROOT / "bench" / "image_start.py"),
            *("--rounds", "1", "--out", str(tmp_path)),
        ],
        env={**docker_env.env, "LATENCY_GATE_BASE_IMAGE": docker_env.base_image},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((tmp_path / "image_start.json").read_text(encoding="utf-8"))
    assert [(r["mode"], r["exit_code"], r["note"]) for r in result["rounds"]] == [
        ("build", 0, ""),
        ("pull", 0, ""),
    ]
    assert set(result["medians"]) == {"build", "pull"}
    assert result["image"]["layers"] > result["image"]["base_layers"]
