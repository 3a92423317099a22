"""Targets side by side: the cheapest passing one, what dearer ones buy, a real two-target run."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from one_look import one_look
from result_factory import make_result, samples_for

from latency_gate import action, cli
from latency_gate.assess.cheapest import compare_targets
from latency_gate.demo import DemoServer, EndpointSpec, serve_in_thread
from latency_gate.models import RunResult
from latency_gate.report.markdown import render_summary


def _run(name: str, warm: float, concurrent: float, *, passed: bool = True) -> RunResult:
    samples = samples_for(cold=warm, warm=[warm] * 20, concurrent=[concurrent] * 10)
    return make_result(name, samples=samples, passed=passed)


def test_cheapest_passing_and_what_dearer_buy() -> None:
    """The first passing target is the cheapest; dearer ones are priced in p95 seconds."""
    comparison = compare_targets(
        [
            _run("free", 4.0, 9.0, passed=False),
            _run("standard", 1.0, 2.0),
            _run("premium", 0.6, 1.5),
        ]
    )
    assert comparison is not None
    assert comparison.cheapest == "standard"
    assert comparison.failing_cheaper == ("free",)
    assert comparison.buys == (
        ("premium", None, "400 ms at warm p95 and 500 ms at concurrent p95"),
    )


def test_dearer_and_slower_buys_nothing() -> None:
    """A dearer target that is slower is said to be, and over budget too when it is."""
    comparison = compare_targets([_run("a", 0.5, 0.6), _run("b", 0.9, 0.6, passed=False)])
    assert comparison is not None
    assert comparison.buys == (
        ("b", None, "nothing at p95: it is 400 ms slower at warm p95; it is over budget"),
    )


def test_none_passing() -> None:
    """When no target passes there is no cheapest passing one."""
    comparison = compare_targets([_run("a", 4, 4, passed=False), _run("b", 4, 4, passed=False)])
    assert comparison is not None
    assert comparison.cheapest is None
    assert (
        comparison.headline == "No target passes the budget, so there is no cheapest passing one."
    )


def test_no_comparison_for_one_target_or_repeated_names() -> None:
    """One target, or runs of the same target (a matrix of runners), have nothing to price."""
    assert compare_targets([_run("a", 1, 1)]) is None
    assert compare_targets([_run("a", 1, 1), _run("a", 2, 2)]) is None


def test_summary_names_the_cheapest_with_its_cost() -> None:
    """The job summary says which target is cheapest and passes, with its cost note escaped."""
    cheap = _run("local", 0.5, 0.6)
    cheap = cheap.model_copy(update={"config": {**cheap.config, "cost": "free_tier *"}})
    text = render_summary([cheap, _run("paid", 0.1, 0.2)])
    assert "**Cheapest target that passes: local** (free\\_tier \\*).\n" in text
    assert "- Paying for **paid** buys 400 ms at warm p95 and 400 ms at concurrent p95.\n" in text


# --- a real two-target run ------------------------------------------------------------------

FAST = EndpointSpec(name="fast", latency=0.01, tokens=3, token_interval=0.001)
SLOW = EndpointSpec(name="slow", latency=0.08, tokens=3, token_interval=0.001)


@pytest.fixture
def servers() -> Iterator[list[DemoServer]]:
    with serve_in_thread(FAST, SLOW) as running:
        yield running


def test_two_targets_side_by_side(servers: list[DemoServer], tmp_path: Path) -> None:
    """`probe --targets`: both probed, shown in columns, the cheapest passing one named."""
    fast, slow = servers
    path = tmp_path / "targets.yml"
    one_look_keys = "".join(f"  {key}: {value}\n" for key, value in one_look(9).items())
    path.write_text(
        "defaults:\n  prompt: Hi\n  warm-calls: 5\n  concurrency: 3\n"
        f"{one_look_keys}"  # one look each: 1 + 5 + 3 calls
        "targets:\n"
        f"  - name: cheap\n    url: {slow.url}\n    cost: free tier\n"
        f"  - name: dear\n    url: {fast.url}\n    cost: paid\n"
    )
    done = CliRunner().invoke(
        cli.main,
        ["probe", "--targets", str(path), "--no-floor", "--json", str(tmp_path / "r.json")],
    )
    assert done.exit_code == 0, done.output
    lines = done.stdout.splitlines()
    assert lines[0] == "PASS: all 2 targets within budget"
    assert lines[2].split() == ["number", "cheap", "dear"]
    assert "Cheapest target that passes: cheap (free tier)" in lines
    buys = next(line for line in lines if line.startswith("  paying for dear (paid) buys "))
    assert "at warm p95" in buys
    assert len(slow.records) == len(fast.records) == 1 + 5 + 3
    # Probed one after another: the dear one's first call came after the cheap one's last.
    assert min(r.received_ns for r in fast.records) > max(r.received_ns for r in slow.records)


def github_outputs(text: str) -> dict[str, str]:
    """$GITHUB_OUTPUT's single-line `name=value` entries as a mapping."""
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def test_action_targets_input(servers: list[DemoServer], tmp_path: Path) -> None:
    """The action's `targets`: keys from ${NAME} masked first, both columns in the summary,
    the cheapest passing named, overall outputs only, and a baseline that is missing said so."""
    fast, slow = servers
    (tmp_path / "targets.yml").write_text(
        "defaults:\n  prompt: Hi\n  warm-calls: 3\n  concurrency: 2\n"
        "targets:\n"
        f"  - name: cheap\n    url: {slow.url}\n    api-key: ${{CHEAP_KEY}}\n"
        f"  - name: dear\n    url: {fast.url}\n"
    )
    (tmp_path / "summary.md").touch()
    (tmp_path / "output").touch()
    env = {
        "INPUT_TARGETS": "targets.yml",
        "INPUT_BASELINE": "main/result.json",
        "INPUT_COMMENT": "never",
        "INPUT_MAX-WARM-P95": "3s",
        "CHEAP_KEY": "sk-cheap-secret-99",
        "GITHUB_WORKSPACE": str(tmp_path),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "GITHUB_OUTPUT": str(tmp_path / "output"),
    }
    out = io.StringIO()
    assert action.main(env, out=out) == 0, out.getvalue()
    log = out.getvalue()
    assert log.splitlines()[0] == "::add-mask::sk-cheap-secret-99"
    assert "::warning title=latency-gate%3A no baseline::no baseline for cheap: " in log
    summary = (tmp_path / "summary.md").read_text()
    assert "| number | cheap | dear |" in summary
    assert "**Cheapest target that passes: cheap**." in summary
    assert "> **No baseline for cheap**: no baseline file at" in summary
    outputs = (tmp_path / "output").read_text()
    assert github_outputs(outputs)["passed"] == "true"
    assert github_outputs(outputs)["warm-p95"] == ""
    assert "sk-cheap-secret-99" not in summary + outputs
    document = json.loads((tmp_path / "latency-gate-report/result.json").read_text())
    assert [run["target"] for run in document["runs"]] == ["cheap", "dear"]
