"""Targets side by side: the cheapest passing one, what dearer ones buy, a real two-target run."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from one_look import one_look
from result_factory import make_result, samples_for

from latency_gate import action, cli
from latency_gate.assess.compare.cheapest import compare_targets, in_cost_order, read_price
from latency_gate.demo import DemoServer, EndpointSpec, serve_in_thread
from latency_gate.models import RunResult
from latency_gate.report.markdown import render_summary


def _run(
    name: str, warm: float, concurrent: float, *, passed: bool = True, cost: str | None = None
) -> RunResult:
    samples = samples_for(cold=warm, warm=[warm] * 20, concurrent=[concurrent] * 10)
    result = make_result(name, samples=samples, passed=passed)
    if cost is None:
        return result
    return result.model_copy(update={"config": {**result.config, "cost": cost}})


@pytest.mark.parametrize(
    ("cost", "price"),
    [
        ("$0.60 / 1M tokens", 0.6),
        ("0", 0.0),
        ("free", 0.0),
        ("free, on our own GPU", 0.0),
        ("$0.40 per 1,000 calls", 0.4),
        ("GPT-4o at $2.50 / 1M", 2.5),
        ("12 EUR a month", 12.0),
        ("1,200 a month", 1200.0),
        ("0,60 € / h", 0.6),
        ("on our own GPU", None),
        ("paid", None),
        (None, None),
    ],
)
def test_read_price(cost: str | None, price: float | None) -> None:
    """A cost note's price: beside a currency sign, else its first number; "free" is 0."""
    assert read_price(cost) == price


def test_priced_comparison_is_worded_from_the_costs() -> None:
    """Every target priced: cheapest within budget named, the dearer ones cost more and are
    faster or slower by so much at p95, in price order whatever the file's order."""
    comparison = compare_targets(
        [
            _run("premium", 0.6, 1.5, cost="$2 / 1M tokens"),
            _run("free", 4.0, 9.0, passed=False, cost="free"),
            _run("standard", 1.0, 2.0, cost="$0.60 / 1M tokens"),
        ]
    )
    assert comparison is not None
    assert comparison.headline() == (
        "Cheapest within budget: standard ($0.60 / 1M tokens). "
        "Cheaper but over budget: free (free)."
    )
    assert comparison.sentences() == (
        "premium ($2 / 1M tokens) costs more than standard and is 400 ms faster at warm p95 "
        "(p95s x0.60 to x0.60, 97.5 %) and 500 ms faster at concurrent p95 (p95s x0.75 to x0.75, "
        "97.5 %).",
    )


def test_priced_slower_over_budget_and_same_price() -> None:
    """A dearer target that is slower says so, and that it is over budget; an equal price
    costs as much."""
    comparison = compare_targets(
        [
            _run("a", 0.5, 0.6, cost="0"),
            _run("b", 0.5, 0.6, cost="free"),
            _run("c", 0.9, 0.5, passed=False, cost="$1"),
        ]
    )
    assert comparison is not None
    assert comparison.sentences(name=lambda n: f"*{n}*") == (
        "*b* (free) costs as much as *a* and is no faster at p95: no difference the calls can "
        "tell.",
        "*c* ($1) costs more than *a* and is 100 ms faster at concurrent p95 (p95s x0.83 to "
        "x0.83, 97.5 %) but 400 ms slower at warm p95 (p95s x1.80 to x1.80, 97.5 %); it is over "
        "budget.",
    )


def test_unpriced_comparison_is_neutral() -> None:
    """Without a price on every target: the file's order, no word on price, each target held
    against the first one within budget."""
    comparison = compare_targets(
        [
            _run("staging", 0.5, 0.6, passed=False, cost="on our own GPU"),
            _run("preview", 0.47, 0.6, cost="$1"),
            _run("canary", 0.5, 0.6),
        ]
    )
    assert comparison is not None
    assert comparison.headline() is None
    assert comparison.sentences() == (
        "staging is 30 ms slower at warm p95 (p95s x1.06 to x1.06, 97.5 %) than preview; it is "
        "over budget.",
        "canary is 30 ms slower at warm p95 (p95s x1.06 to x1.06, 97.5 %) than preview.",
    )


def test_none_within_budget() -> None:
    """When no target is within budget there is nothing to pick: no headline, no sentence."""
    for cost in (None, "$1"):
        comparison = compare_targets(
            [_run("a", 4, 4, passed=False, cost=cost), _run("b", 4, 4, passed=False, cost=cost)]
        )
        assert comparison is not None
        assert comparison.reference is None
        assert comparison.headline() is None
        assert comparison.sentences() == ()


def test_cost_order_only_when_every_target_is_priced() -> None:
    """Reports list targets cheapest first when all are priced, else in the file's order."""
    dear, cheap, unpriced = (
        _run("dear", 1, 1, cost="$2"),
        _run("cheap", 1, 1, cost="$1"),
        _run("x", 1, 1),
    )
    assert [r.target for r in in_cost_order([dear, cheap])] == ["cheap", "dear"]
    assert [r.target for r in in_cost_order([dear, cheap, unpriced])] == ["dear", "cheap", "x"]


def test_no_comparison_for_one_target_or_repeated_names() -> None:
    """One target, or runs of the same target (a matrix of runners), have nothing to compare."""
    assert compare_targets([_run("a", 1, 1)]) is None
    assert compare_targets([_run("a", 1, 1), _run("a", 2, 2)]) is None


def test_summary_names_the_cheapest_with_its_cost() -> None:
    """The job summary names the cheapest target within budget, costs escaped."""
    text = render_summary(
        [_run("local", 0.5, 0.6, cost="free_tier *0*"), _run("paid", 0.1, 0.2, cost="$1")]
    )
    assert "Cheapest within budget: **local** (free\\_tier \\*0\\*).\n" in text
    assert (
        "* **paid** (\\$1) costs more than **local** and is 400 ms faster at warm p95 (p95s x0.20 "
        "to x0.20, 97.5 %) and 400 ms faster at concurrent p95 (p95s x0.33 to x0.33, 97.5 %).\n"
        in text
    )


def test_summary_compares_neutrally_without_costs() -> None:
    """Without costs the summary neither prices nor says "cheapest"."""
    text = render_summary([_run("staging", 0.5, 0.6), _run("preview", 0.529, 0.6)])
    assert (
        "* **preview** is 29 ms slower at warm p95 (p95s x1.06 to x1.06, 97.5 %) than "
        "**staging**.\n" in text
    )
    assert "heapest" not in text
    assert "aying" not in text


# --- a real two-target run ------------------------------------------------------------------

FAST = EndpointSpec(name="fast", latency=0.01, tokens=3, token_interval=0.001)
SLOW = EndpointSpec(name="slow", latency=0.08, tokens=3, token_interval=0.001)


@pytest.fixture
def servers() -> Iterator[list[DemoServer]]:
    with serve_in_thread(FAST, SLOW) as running:
        yield running


def test_two_targets_side_by_side(servers: list[DemoServer], tmp_path: Path) -> None:
    """`probe --targets`: both probed, shown in columns, the cheapest within budget named and
    the dearer one priced against it."""
    fast, slow = servers
    path = tmp_path / "targets.yml"
    one_look_keys = "".join(f"  {key}: {value}\n" for key, value in one_look(9).items())
    path.write_text(
        "defaults:\n  prompt: Hi\n  warm-calls: 5\n  concurrency: 3\n"
        f"{one_look_keys}"  # one look each: 1 + 5 + 3 calls
        "targets:\n"
        f"  - name: cheap\n    url: {slow.url}\n    cost: free tier\n"
        f"  - name: dear\n    url: {fast.url}\n    cost: $0.40 per 1,000 calls\n"
    )
    done = CliRunner().invoke(
        cli.main,
        ["probe", "--targets", str(path), "--no-floor", "--json", str(tmp_path / "r.json")],
    )
    assert done.exit_code == 0, done.output
    lines = done.stdout.splitlines()
    assert lines[0].startswith("PASS: all 2 targets within budget")
    assert next(line for line in lines if line.startswith("number")).split() == [
        "number",
        "cheap",
        "dear",
    ]
    assert "Cheapest within budget: cheap (free tier)." in lines
    dear = next(line for line in lines if line.startswith("dear ($0.40 per 1,000 calls) costs "))
    assert dear.startswith("dear ($0.40 per 1,000 calls) costs more than cheap and is ")
    assert "faster at warm p95" in dear
    assert len(slow.records) == len(fast.records) == 1 + 5 + 3
    # Probed one after another: the dear one's first call came after the cheap one's last.
    assert min(r.received_ns for r in fast.records) > max(r.received_ns for r in slow.records)


def github_outputs(text: str) -> dict[str, str]:
    """$GITHUB_OUTPUT's single-line `name=value` entries as a mapping."""
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


@pytest.mark.slow
def test_action_targets_input(servers: list[DemoServer], tmp_path: Path) -> None:
    """The action's `targets`: keys from ${NAME} masked first, both columns in the summary,
    compared without a word on price (no costs given), overall outputs only, and a baseline
    that is missing said so."""
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
    assert re.search(r"^\* \*\*dear\*\* is .* than \*\*cheap\*\*\.$", summary, re.MULTILINE)
    assert "heapest" not in summary
    assert "> **No baseline for cheap**: no baseline file at" in summary
    outputs = (tmp_path / "output").read_text()
    assert github_outputs(outputs)["passed"] == "true"
    assert github_outputs(outputs)["warm-p95"] == ""
    assert "sk-cheap-secret-99" not in summary + outputs
    document = json.loads((tmp_path / "latency-gate-report/result.json").read_text())
    assert [run["target"] for run in document["runs"]] == ["cheap", "dear"]
