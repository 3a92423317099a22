"""`latency-gate merge`: result files of a matrix of runners become one report and one verdict."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from latency_gate import cli
from latency_gate.baseline import dump_runs, parse_runs
from latency_gate.compare import label_runs
from tests.result_factory import make_result


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
    assert done.stdout.splitlines()[2].split() == ["number", "api", "(eu-west)", "api", "(us-east)"]
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
