"""The layer rules of docs/design.md, checked: imports flow one way, and only the edges touch the
environment, the exit code and files."""

from __future__ import annotations

import ast
import contextlib
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "latency_gate"

# The edges: they alone read the environment, choose exit codes and read or write files. Of the
# action's modules only these three need to (environment, workspace paths, written files).
EDGES = frozenset(
    {
        "cli/__init__.py",
        "cli/app.py",
        "cli/probe.py",
        "cli/demo.py",
        "action/__init__.py",
        "action/settings.py",
        "action/files.py",
        "run.py",
        "results/loading.py",
        "results/history_folder/read.py",
        "results/history_folder/append.py",
        "__main__.py",
    }
)
# The one module below the edges that reads files: the input files a user names.
INPUT_FILES = "config/files.py"
FILE_METHODS = frozenset(
    {
        "write_text",
        "write_bytes",
        "read_text",
        "read_bytes",
        "open",
        "mkdir",
        "unlink",
        "rmdir",
        "touch",
        "exists",
        "is_file",
        "is_dir",
        "stat",
    }
)


def _lint_imports_command() -> list[str]:
    exe = shutil.which("lint-imports")
    if exe is None:
        pytest.skip("import-linter is not installed (pip install -e '.[dev]')")
    return [exe]


def _run_contract(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*_lint_imports_command(), "--config", str(root / "pyproject.toml")],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PATH": str(Path(sys.executable).parent), "PYTHONPATH": str(root)},
    )


def test_the_import_contract_is_kept() -> None:
    """import-linter finds no import from a lower layer into a higher one."""
    result = _run_contract(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 4 kept, 0 broken." in result.stdout


def test_the_import_contract_catches_an_upward_import(tmp_path: Path) -> None:
    """The same contract fails on a copy where assess imports the engine (measure)."""
    shutil.copytree(
        PACKAGE, tmp_path / "latency_gate", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    stats = tmp_path / "latency_gate" / "assess" / "numbers" / "stats.py"
    stats.write_text(stats.read_text() + "\nfrom latency_gate.run import probe  # noqa\n")
    result = _run_contract(tmp_path)
    assert result.returncode != 0
    assert "latency_gate.assess.numbers.stats -> latency_gate.run" in result.stdout


def test_the_rooms_contract_catches_a_room_importing_one_above(tmp_path: Path) -> None:
    """The assess/ rooms contract fails on a copy where the maths imports the budget's gate."""
    shutil.copytree(
        PACKAGE, tmp_path / "latency_gate", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    binomial = tmp_path / "latency_gate" / "assess" / "maths" / "binomial.py"
    binomial.write_text(
        binomial.read_text() + "\nfrom latency_gate.assess.budget.gate import Gate  # noqa\n"
    )
    result = _run_contract(tmp_path)
    assert result.returncode != 0
    assert "assess/ rooms: each stands on the ones below it BROKEN" in result.stdout
    assert "latency_gate.assess.maths.binomial -> latency_gate.assess.budget.gate" in result.stdout


def test_the_plan_rooms_contract_catches_the_old_circle(tmp_path: Path) -> None:
    """The config/plan rooms contract fails on a copy where the hypotheses import the needs, as
    rate_plan.py once imported plan.py back."""
    shutil.copytree(
        PACKAGE, tmp_path / "latency_gate", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    hypotheses = tmp_path / "latency_gate" / "config" / "plan" / "hypotheses.py"
    hypotheses.write_text(
        hypotheses.read_text() + "\nfrom latency_gate.config.plan.needs import needs_of  # noqa\n"
    )
    result = _run_contract(tmp_path)
    assert result.returncode != 0
    assert "config/plan rooms: each stands on the ones below it BROKEN" in result.stdout
    assert "latency_gate.config.plan.hypotheses -> latency_gate.config.plan.needs" in result.stdout


def _violations(source: str, relative: str) -> list[str]:
    """Where a module (its source, its path under latency_gate/) reads the environment, exits,
    or touches a file."""
    tree = ast.parse(source, filename=relative)
    found = []
    for node in ast.walk(tree):
        where = f"{relative}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "os" and node.attr in {"environ", "getenv", "putenv"}:
                found.append(f"{where} os.{node.attr}")
            if node.value.id == "sys" and node.attr == "exit":
                found.append(f"{where} sys.exit")
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id == "open":
                found.append(f"{where} open()")
            if (
                isinstance(func, ast.Attribute)
                and func.attr in FILE_METHODS
                and relative != INPUT_FILES
            ):
                found.append(f"{where} .{func.attr}()")
    return sorted(found)


def test_only_the_edges_touch_environment_exit_codes_and_files() -> None:
    """Below the edges no module reads os.environ, calls sys.exit or opens a file (one reader of
    the user's input files excepted)."""
    every = {p.relative_to(PACKAGE).as_posix(): p for p in PACKAGE.rglob("*.py")}
    assert EDGES - set(every) == set()  # an edge renamed or moved leaves no stale exemption
    modules = [p for name, p in every.items() if name not in EDGES]
    assert len(modules) > 40
    violations = [
        v
        for module in modules
        for v in _violations(
            module.read_text(encoding="utf-8"), module.relative_to(PACKAGE).as_posix()
        )
    ]
    assert violations == []


def test_the_rule_sees_each_kind_of_access() -> None:
    """A file write, an environment read, an exit and open() are each reported with the line."""
    source = (
        "import os, sys\nfrom pathlib import Path\n"
        "Path('x').write_text(os.environ['A'])\nsys.exit(open('y').read())\n"
    )
    assert _violations(source, "assess/sneaky.py") == [
        "assess/sneaky.py:3 .write_text()",
        "assess/sneaky.py:3 os.environ",
        "assess/sneaky.py:4 open()",
        "assess/sneaky.py:4 sys.exit",
    ]
    assert _violations("Path('b').read_text()\n", INPUT_FILES) == []


# What must not be loaded when `probe`'s first request goes out: each is needed only after the
# calls (judging, rendering, writing) or for an option not given (a targets file). Start-up is
# measured in bench/ (docs/benchmarks.md); this pins the imports that decide it.
NOT_BEFORE_THE_FIRST_REQUEST = (
    "jinja2",
    "latency_gate.assess",
    "latency_gate.report.markdown",
    "latency_gate.report.terminal",
    "latency_gate.report.view",
    "latency_gate.config.targets_file",
    "latency_gate.demo",
)

_FIRST_REQUEST_PROBE = """
import os, sys
port = int(sys.argv[1])
def hook(event, args):
    if event == "socket.connect" and isinstance(args[1], tuple) and args[1][1:2] == (port,):
        print("\\n".join(sorted(sys.modules)), flush=True)
        os._exit(0)
sys.addaudithook(hook)
from latency_gate.cli import main
main(["probe", f"http://127.0.0.1:{port}/", "--warm-calls", "1", "--concurrency", "1"])
"""


def test_probe_loads_no_judge_or_renderer_before_its_first_request() -> None:
    """The real CLI in a child process, stopped at its first connection to the endpoint: the
    modules loaded by then hold none of the judging, rendering or targets-file code."""
    with socket_server() as port:
        done = subprocess.run(
            [sys.executable, "-c", _FIRST_REQUEST_PROBE, str(port)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    loaded = set(done.stdout.split())
    assert {"latency_gate.measure.engine", "httpx", "click"} <= loaded  # it got that far
    early = sorted(
        module
        for module in loaded
        for name in NOT_BEFORE_THE_FIRST_REQUEST
        if module == name or module.startswith(name + ".")
    )
    assert early == []


@contextlib.contextmanager
def socket_server() -> Iterator[int]:
    """A listening loopback port (the child stops at connect, so nothing needs answering)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield listener.getsockname()[1]
