"""`latency-gate merge`: result files of a matrix of runners become one report and one verdict."""

from __future__ import annotations

import json
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from result_factory import make_result

from latency_gate import cli
from latency_gate.config.targets_file import load_targets
from latency_gate.results.json_file import dump_runs, label_runs, parse_runs


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli.main, ["merge", *args], prog_name="latency-gate")


def test_merge_two_files_gives_one_report(tmp_path: Path) -> None:
    """Two runs of one target from two runners: a column each, named by the file, one PASS."""
    (tmp_path / "eu-west.json").write_text(dump_runs([make_result("api")]))
    (tmp_path / "us-east.json").write_text(dump_runs([make_result("api")]))
    out, md = tmp_path / "merged.json", tmp_path / "merged.md"
    done = invoke(
        str(tmp_path / "eu-west.json"),
        str(tmp_path / "us-east.json"),
        "--json",
        str(out),
        "--markdown",
        str(md),
    )
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines()[0] == "PASS: all 2 targets within budget"
    assert done.stdout.splitlines()[3].split() == ["number", "api", "(eu-west)", "api", "(us-east)"]
    merged = parse_runs(out.read_text(), "merged")
    assert [r.display_name for r in merged] == ["api (eu-west)", "api (us-east)"]
    assert "| number | api (eu-west) | api (us-east) |" in md.read_text()


def test_merge_fails_when_any_run_failed(tmp_path: Path) -> None:
    """One verdict: FAIL (exit 1) when any run breached its budget."""
    (tmp_path / "a.json").write_text(dump_runs([make_result("api")]))
    (tmp_path / "b.json").write_text(dump_runs([make_result("api", passed=False)]))
    done = invoke(str(tmp_path / "a.json"), str(tmp_path / "b.json"))
    assert done.exit_code == 1
    assert done.stdout.startswith("FAIL: 1 of 2 targets over budget")


def test_merge_reads_files_of_several_runs(tmp_path: Path) -> None:
    """A file of several targets ({"schema_version", "runs"}) merges run by run."""
    (tmp_path / "one.json").write_text(dump_runs([make_result("a"), make_result("b")]))
    (tmp_path / "two.json").write_text(dump_runs([make_result("c")]))
    out = tmp_path / "m.json"
    done = invoke(str(tmp_path / "one.json"), str(tmp_path / "two.json"), "--json", str(out))
    assert done.exit_code == 0, done.output
    document = json.loads(out.read_text())
    assert [run["target"] for run in document["runs"]] == ["a", "b", "c"]
    assert [run["label"] for run in document["runs"]] == [None, None, None]


def test_labels_are_kept_and_repeats_numbered() -> None:
    """A run's own label wins over its file's name; a label that repeats gets #2."""
    labelled = make_result("api").model_copy(update={"label": "linux"})
    runs = label_runs(
        [("x/a.json", [labelled]), ("x/b.json", [labelled]), ("c.json", [make_result("api")])]
    )
    assert [r.display_name for r in runs] == ["api (linux)", "api (linux #2)", "api (c)"]


def test_merge_refuses_a_file_that_is_not_a_result(tmp_path: Path) -> None:
    """A file that is not a result is bad input (exit 2) naming the file."""
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    done = invoke(str(bad))
    assert done.exit_code == 2
    assert f"Error: invalid input merge {bad}: not a latency-gate result" in done.output


def test_merge_of_a_missing_file_exits_2(tmp_path: Path) -> None:
    """A missing file is bad input, with the file named."""
    done = invoke(str(tmp_path / "none.json"))
    assert done.exit_code == 2
    assert "cannot read" in done.output


# --- the documented workflows ---------------------------------------------------------------

REPO_ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted(str(p.relative_to(REPO_ROOT)) for p in REPO_ROOT.glob("docs/examples/*.yml"))
WORKFLOW_EXAMPLES = [p for p in EXAMPLES if not p.endswith("latency-targets.yml")]


def _tool(name: str) -> str:
    beside = Path(sysconfig.get_path("scripts")) / name
    found = str(beside) if beside.is_file() else shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: pip install -e '.[dev]'", pytrace=False)
    return found


def _lint(*command: str) -> None:
    done = subprocess.run(
        command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, f"{' '.join(command)}:\n{done.stdout}\n{done.stderr}"


def test_workflow_examples_exist() -> None:
    """The documented workflows are there for the linters below."""
    assert WORKFLOW_EXAMPLES == [
        "docs/examples/baseline-from-main.yml",
        "docs/examples/goodput-nightly.yml",
        "docs/examples/http-endpoint.yml",
        "docs/examples/latency-history.yml",
        "docs/examples/matrix-merge.yml",
        "docs/examples/model-upgrade.yml",
        "docs/examples/openai-chat.yml",
    ]


def test_workflow_examples_match_the_schema() -> None:
    """The example workflows are valid against the published workflow schema."""
    _lint(
        _tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", *WORKFLOW_EXAMPLES
    )


def test_workflow_examples_pass_actionlint() -> None:
    """actionlint finds nothing in the example workflows (expressions, shell, action versions)."""
    _lint(_tool("actionlint"), *WORKFLOW_EXAMPLES)


def test_example_targets_file_loads() -> None:
    """The documented targets file is valid: three targets, cheapest first, the free tier lax."""
    targets = load_targets(
        REPO_ROOT / "docs/examples/latency-targets.yml",
        environ={"FREE_API_KEY": "free-key-1234", "PAID_API_KEY": "paid-key-1234"},
    )
    assert [t.name for t in targets] == ["local", "free-tier", "paid"]
    assert [t.budget.max_warm_p95 for t in targets] == [2.0, 10.0, 2.0]
    assert targets[1].budget.max_concurrent_p95 is None
