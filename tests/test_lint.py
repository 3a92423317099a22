"""The project's linters, run offline from the dev extras: each must come back clean.

They cover files nobody else tests (Dockerfile, action.yml, workflows) and catch lapses in the
Python anywhere in the tree, which is intended: a lint failure names the file and the rule.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = sorted(str(p.relative_to(REPO_ROOT)) for p in REPO_ROOT.glob(".github/workflows/*.yml"))
# Workflows only tests/test_act.py runs, and the action manifests beside action.yml.
TEST_WORKFLOWS = sorted(str(p.relative_to(REPO_ROOT)) for p in REPO_ROOT.glob("tests/act/*.yml"))
ACTIONS = [
    "action.yml",
    "host/action.yml",
    "tests/act/download-artifact/action.yml",
    "tests/act/setup-python/action.yml",
    "tests/act/upload-artifact/action.yml",
]
DOCKERFILES = [
    "Dockerfile",
    "tests/container/Dockerfile.standin",
    "tests/container/Dockerfile.act-base",
]
# Where the project keeps shell: not a tree-wide glob, which would wander into caches.
SHELL_SCRIPTS = [
    ".ci/run",
    *sorted(
        str(p.relative_to(REPO_ROOT))
        for pattern in (".ci/*.sh", "tests/**/*.sh", "scripts/*.sh", "bench/*.sh")
        for p in REPO_ROOT.glob(pattern)
        # npm's packages (tests/render, tests/act/actions-cache) bring scripts of their own.
        if "node_modules" not in p.parts
    ),
]


def _tool(name: str) -> str:
    """The tool's executable: beside this Python's scripts first, then on PATH."""
    beside = Path(sysconfig.get_path("scripts")) / name
    if beside.is_file():
        return str(beside)
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: pip install -e '.[dev]'", pytrace=False)
    return found


def _run(*command: str, timeout: float = 300.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _assert_clean(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 0, f"{' '.join(result.args)}:\n{result.stdout}\n{result.stderr}"


@pytest.mark.parametrize("dockerfile", DOCKERFILES)
def test_hadolint(dockerfile: str) -> None:
    """hadolint finds nothing in the Dockerfiles."""
    _assert_clean(_run(_tool("hadolint"), dockerfile))


def test_shellcheck() -> None:
    """shellcheck finds nothing in .ci/run and the shell helpers (Debian's shellcheck, apt)."""
    _assert_clean(_run(_tool("shellcheck"), *SHELL_SCRIPTS))


def test_action_yml_schema() -> None:
    """action.yml, host/action.yml and the test stand-ins are valid action metadata."""
    _assert_clean(
        _run(_tool("check-jsonschema"), "--builtin-schema", "vendor.github-actions", *ACTIONS)
    )


def test_workflows_exist() -> None:
    """The workflows are there, so the linters below have something to check."""
    assert WORKFLOWS == [
        ".github/workflows/ci.yml",
        ".github/workflows/release.yml",
        ".github/workflows/self-test.yml",
    ]


def test_workflow_schema() -> None:
    """The workflows, the act tests' included, are valid against the schema for workflows."""
    assert TEST_WORKFLOWS == ["tests/act/pr-comment.yml", "tests/act/pull-image.yml"]
    _assert_clean(
        _run(
            _tool("check-jsonschema"),
            "--builtin-schema",
            "vendor.github-workflows",
            *WORKFLOWS,
            *TEST_WORKFLOWS,
        )
    )


def test_actionlint() -> None:
    """actionlint finds nothing, including `uses: ./` inputs that action.yml does not declare."""
    _assert_clean(_run(_tool("actionlint"), *WORKFLOWS, *TEST_WORKFLOWS))


def test_ruff_check() -> None:
    """ruff check passes on the whole project."""
    _assert_clean(_run(sys.executable, "-m", "ruff", "check", "--no-cache", "."))


def test_ruff_format() -> None:
    """ruff format finds nothing to reformat in the whole project."""
    _assert_clean(_run(sys.executable, "-m", "ruff", "format", "--check", "--no-cache", "."))


def test_mypy() -> None:
    """mypy (strict, configured in pyproject.toml) passes on the project's files."""
    _assert_clean(_run(sys.executable, "-m", "mypy", timeout=600))
