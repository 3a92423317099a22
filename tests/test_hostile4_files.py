"""Hostile input, round four (issue 25): the files the tool reads back later, through the real
CLI and action against the loopback demo endpoint: history folders, `--baseline` files and
`merge` inputs.

Each case failed on the code before its fix (docs/faults.md, "Hostile input, round four", the
block "Files read back later"): an exit 3, a frozen history, a run of a pull request appended to
main's, a report that showed what a file said instead of what a run could have measured.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hostile_kit import FAST, ONE_LOOK, action_error, judged, one_error, run_action, run_cli
from report_scenarios import scenario_history
from result_factory import STARTED_AT, make_result, make_target

from latency_gate.config import Target
from latency_gate.config.regression import DEFAULT_LIMIT
from latency_gate.demo import DemoServer, EndpointSpec, serve_in_thread
from latency_gate.history_folder import (
    HistoryOptions,
    append_decision,
    parse_history_options,
    plan_history,
)
from latency_gate.report.result_file import dump_runs

DAY = 86_400.0
AHEAD = datetime(2100, 1, 1, tzinfo=UTC).timestamp()  # a file "from the future"


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoServer]:
    """A healthy streaming chat endpoint that answers at once."""
    with serve_in_thread(EndpointSpec(latency=0.0, tokens=2, token_interval=0.0)) as (server,):
        yield server


@pytest.fixture(scope="module")
def measured(demo: DemoServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A real result file of the demo endpoint, one look."""
    path = tmp_path_factory.mktemp("measured") / "r.json"
    judged(run_cli("probe", demo.url, *FAST, "--on-undecided", "pass", "--json", str(path)))
    document: dict[str, Any] = json.loads(path.read_text())
    return document


def _copy(document: dict[str, Any]) -> dict[str, Any]:
    copy: dict[str, Any] = json.loads(json.dumps(document))
    return copy


def _timed(document: dict[str, Any], latency: float, started_at: float) -> dict[str, Any]:
    """The document as a run whose every answered call took `latency`, started at that time."""
    copy = _copy(document)
    for sample in copy["samples"]:
        if sample["ok"]:
            sample |= {"latency": latency, "timings": {"last_byte": latency}, "token_gaps": None}
        sample["started_at"] = started_at
    shift = started_at - copy["started_at"]
    copy["started_at"] += shift
    copy["finished_at"] += shift
    return copy


def _write(path: Path, document: object) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document), encoding="utf-8")
    return str(path)


# --- 5. exit 3 from history and result files ----------------------------------------------------


def test_history_spanning_every_duration_is_judged(
    demo: DemoServer, measured: dict[str, Any], tmp_path: Path
) -> None:
    """Three runs of 5e-324 s, 86,399 s and 5e-324 s (each a valid duration) overflowed the
    prediction bound (exit 3); now judged: the percentiles are said to be untestable against a
    spread that wide, and head / history prints as "over x1,000", not 200 digits."""
    now = measured["started_at"]
    for i, latency in enumerate((5e-324, 86_399.0, 5e-324)):
        _write(tmp_path / "h" / f"run{i}.json", _timed(measured, latency, now - (3 - i) * DAY))
    report = tmp_path / "report.md"
    done = judged(
        run_cli(
            "probe", demo.url, *FAST, "--history", str(tmp_path / "h"), "--markdown", str(report)
        )
    )
    assert done.exit_code == 0, done.output
    text = report.read_text(encoding="utf-8")
    (row,) = [line for line in text.splitlines() if "spread so widely" in line and "p95" in line][
        :1
    ]
    assert row.startswith("| warm p95 | 0.0\u00a0ms | ")
    assert row.endswith(
        "| over x1,000 | — | not tested: the earlier runs spread so widely that a regression "
        "would have to exceed 24 h, the longest a call can take |"
    )
    assert max(len(line) for line in text.splitlines()) < 1000


def _with_history(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    (result,) = scenario_history()
    document: dict[str, Any] = json.loads(dump_runs([result]))
    change(document["baseline"]["history"])
    return document


def _each_run(**numbers: float) -> Callable[[dict[str, Any]], None]:
    def change(history: dict[str, Any]) -> None:
        for run in history["runs"]:
            run["numbers"] |= numbers

    return change


def _set(**fields: object) -> Callable[[dict[str, Any]], None]:
    return lambda history: history.update(fields)


def _first_run(**fields: object) -> Callable[[dict[str, Any]], None]:
    return lambda history: history["runs"][0].update(fields)


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (_first_run(started_at=1e300), "baseline.history.runs[0].started_at 1e+300 is not a time"),
        (_each_run(warm_p95=-1.0), "baseline.history.runs[0].numbers.warm_p95 -1 s is not a"),
        (_set(size=20_000), "baseline.history.size 20000 is not a count from 3 to 1,000"),
        (
            lambda h: h.update(runs=h["runs"] * 2),
            "baseline.history holds 20 runs, more than its size 10",
        ),
        (lambda h: h.update(runs=h["runs"][:2]), "judged 'prediction' with 2 runs"),
        (_set(alpha=-5.0), "baseline.history.alpha -5 is not from 0 to 0.5"),
        (_first_run(started_at=AHEAD), "runs[0] started after the run it was compared with"),
        (_first_run(started_at=STARTED_AT - 1000), "runs[1] is older than the run before it"),
        (_first_run(failed=999_999), "runs[0].failed 999999 is not a count from 0 to"),
        (_each_run(error_rate=7.0), "numbers.error_rate 7 is not a share from 0 to 1"),
    ],
    ids=[
        "no-date",
        "negative",
        "size",
        "more-than-size",
        "judged",
        "alpha",
        "future",
        "order",
        "failed",
        "rate",
    ],
)
def test_merge_refuses_history_evidence_no_run_could_hold(
    tmp_path: Path, change: Callable[[dict[str, Any]], None], said: str
) -> None:
    """A result's stored history is checked when read back: a start of 1e300 crashed the chart's
    date labels (exit 3); values of -1 were charted, "history of 20000 runs" and a "600 %
    prediction bound" printed as written. Each is now exit 2 naming the file and the field."""
    path = _write(tmp_path / "r.json", _with_history(change))
    line = one_error(run_cli("merge", path))
    assert line.startswith(f"Error: invalid input merge {path}: ")
    assert said in line


def test_history_evidence_as_written_merges_as_before(tmp_path: Path) -> None:
    """The check can pass: the stored history a run wrote merges, its chart drawn."""
    path = _write(tmp_path / "r.json", _with_history(lambda _: None))
    report = tmp_path / "r.md"
    judged(run_cli("merge", path, "--markdown", str(report)))
    assert "```mermaid" in report.read_text(encoding="utf-8")


# --- 8. what merge shows of a file as written ---------------------------------------------------


@pytest.fixture(scope="module")
def searched(demo: DemoServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A real result file with a capacity search (levels 2, 4, 8)."""
    path = tmp_path_factory.mktemp("searched") / "r.json"
    judged(
        run_cli(
            "probe",
            demo.url,
            *("--no-floor", "--warm-calls", "5", "--concurrency", "2"),
            *("--capacity", "--capacity-max", "8", "--max-concurrent-p95", "1s"),
            "--json",
            str(path),
        )
    )
    document: dict[str, Any] = json.loads(path.read_text())
    assert [level["concurrency"] for level in document["capacity"]["levels"]] == [2, 4, 8]
    return document


def _level_calls(document: dict[str, Any]) -> None:
    for sample in document["capacity"]["levels"][1]["samples"]:
        if sample["ok"]:
            sample |= {"latency": -1.0, "timings": {"last_byte": -1.0}, "token_gaps": None}


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (_level_calls, "capacity level 4: call concurrent #0: latency -1 s is not a duration"),
        (
            lambda d: d["capacity"]["levels"][1].update(concurrency=10**12),
            "capacity level 1000000000000 is not a count from 1 to 8",
        ),
        (
            lambda d: d["capacity"].update(maximum=10**9),
            "capacity.maximum 1000000000 is not the run's capacity_max 8",
        ),
        (
            lambda d: d["capacity"].update(start=7),
            "capacity.start 7 is not the run's concurrency 2",
        ),
        (lambda d: d["capacity"].update(seconds=-5.0), "capacity.seconds -5 s is not a duration"),
        (
            lambda d: d["capacity"]["levels"][2].update(concurrency=4),
            "capacity level 4 is there twice",
        ),
    ],
    ids=["level-calls", "level", "maximum", "start", "seconds", "twice"],
)
def test_merge_refuses_a_capacity_search_no_run_could_make(
    searched: dict[str, Any],
    tmp_path: Path,
    change: Callable[[dict[str, Any]], None],
    said: str,
) -> None:
    """A level's calls are checked as the run's are, and the search's counts against its own
    settings: a level's p95 of "-1.00 s", "1,000,000,000,000 at once" and "breaks at None" were
    shown as written; now exit 2 naming the file and the field."""
    document = _copy(searched)
    change(document)
    path = _write(tmp_path / "r.json", document)
    assert said in one_error(run_cli("merge", path))


def test_a_capacity_search_as_written_merges(searched: dict[str, Any], tmp_path: Path) -> None:
    """The check can pass: the search as probe wrote it merges, its levels shown."""
    done = judged(run_cli("merge", _write(tmp_path / "r.json", searched)))
    assert "capacity: holds concurrent p95 ≤ 1.00 s up to 8 calls at once" in done.output


def _delta(**fields: object) -> Callable[[dict[str, Any]], None]:
    def change(document: dict[str, Any]) -> None:
        document["baseline"]["deltas"][2] |= fields

    return change


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (
            lambda d: d.update(base_samples=[d["samples"][1] | {"latency": -3.0}]),
            "base call warm #0: latency -3 s is not a duration of a call",
        ),
        (
            lambda d: d["sampling"].update(extra_calls=10**9),
            "sampling says 3 + 1000000000 calls, but the file holds",
        ),
        (
            lambda d: d.update(floor={**d["floor"], "sequential_p50": -1.0}),
            "floor.sequential_p50 -1 s is not a duration",
        ),
        (_delta(base=-1.0), "baseline.deltas[2].base -1 s is not a duration"),
        (_delta(number="<img src=x onerror=alert(1)>"), "is not a number's name"),
        (_delta(interval=[-2.0, 1.0]), "baseline.deltas[2].interval holds a negative ratio"),
    ],
    ids=["base-calls", "sampling", "floor", "delta", "delta-name", "interval"],
)
def test_merge_refuses_counts_and_comparisons_no_run_could_make(
    tmp_path: Path, change: Callable[[dict[str, Any]], None], said: str
) -> None:
    """An A/B run's base calls, the sampling's counts, the floor, and a comparison's numbers
    (not derived again: the base's calls are not in the file) are checked when read back; a
    number's name went raw into the Markdown table."""
    (result,) = scenario_history()
    document: dict[str, Any] = json.loads(dump_runs([result]))
    document["sampling"] = {
        "looks": 1,
        "first_look_calls": 3,
        "extra_calls": len(document["samples"]) - 3,
        "max_calls": 500,
        "on_undecided": "estimate",
    }
    change(document)
    path = _write(tmp_path / "r.json", document)
    assert said in one_error(run_cli("merge", path))


def test_a_comparisons_note_is_text_in_the_markdown(tmp_path: Path) -> None:
    """A comparison's note is shown as the file wrote it (the base's calls are not in the file
    to derive it again): it went raw into the Markdown table; now it is escaped text."""
    (result,) = scenario_history()
    document: dict[str, Any] = json.loads(dump_runs([result]))
    document["baseline"]["deltas"][0]["note"] = "<img src=x onerror=alert(1)> @everyone"
    report = tmp_path / "r.md"
    judged(run_cli("merge", _write(tmp_path / "r.json", document), "--markdown", str(report)))
    text = report.read_text(encoding="utf-8")
    assert "<img" not in text
    assert "&lt;img src=x onerror=alert(1)&gt; `@everyone`" in text


def test_json_path_ending_in_a_slash_is_a_folder(demo: DemoServer, tmp_path: Path) -> None:
    """`json-path: out/` (and `--json out/`) wrote a file named `out`; it names a folder, so it
    is bad input naming the input, before any call."""
    before = len(demo.records)
    run = run_action(tmp_path, {"url": demo.url, **ONE_LOOK, "json-path": "out/"})
    assert "json-path: 'out/' ends in '/', which names a folder" in action_error(run)
    assert not (tmp_path / "workspace" / "out").exists()
    done = run_cli("probe", demo.url, *FAST, "--json", str(tmp_path / "cli") + "/")
    assert done.exit_code == 2
    assert "ends in '/', which names a folder: name a file" in done.output
    assert not (tmp_path / "cli").exists()
    assert len(demo.records) == before


# --- 6. a history that can be frozen or poisoned -------------------------------------------------


def _poisoned(measured: dict[str, Any], folder: Path, files: int) -> None:
    """`files` runs dated 2100 in files named so, each call 1 µs: the "newest" runs, against
    which any real run regresses."""
    for i in range(files):
        stamp = datetime.fromtimestamp(AHEAD + i * DAY, UTC).strftime("%Y%m%dT%H%M%SZ")
        _write(folder / f"latency-gate-{stamp}.json", _timed(measured, 1e-6, AHEAD + i * DAY))


def test_files_dated_in_the_future_neither_judge_nor_outlive_new_runs(
    demo: DemoServer, measured: dict[str, Any], tmp_path: Path
) -> None:
    """Ten files dated 2100 (a clock ahead, or a poisoned cache) were "the newest": every run
    failed against them, wrote its own file and pruned it at once, for good. Now they are
    skipped, named in a warning, and pruned first: two runs pass and their files stay."""
    folder = tmp_path / "h"
    _poisoned(measured, folder, 10)
    options = ("--history", str(folder), "--history-append", "true", "--history-keep", "10")
    for _ in range(2):
        done = judged(run_cli("probe", demo.url, *FAST, "--history-size", "3", *options))
        assert done.exit_code == 0, done.output
        assert "warning: history: skipped 'latency-gate-2100" in done.stderr
        assert "after this run's clock: a clock ahead, or a file made so" in done.stderr
    names = sorted(path.name for path in folder.iterdir())
    assert len(names) == 10
    assert sum(not name.startswith("latency-gate-2100") for name in names) == 2


def _dated_run(started_at: float) -> str:
    """A result file (make_result's target "local") of a run started at that time."""
    run = make_result()
    return dump_runs([run.model_copy(update={"started_at": started_at})])


def _options(folder: Path, keep: str = "50") -> HistoryOptions:
    names = {"size": "--history-size", "keep": "--history-keep", "append": "--history-append"}
    return parse_history_options(
        folder, str(folder), size="3", keep=keep, append="false", names=names
    )


def test_a_run_dated_in_the_future_inside_a_file_is_skipped(tmp_path: Path) -> None:
    """A file of an ordinary name whose run started in 2100 is skipped too, named."""
    folder = tmp_path / "h"
    folder.mkdir()
    (folder / "main.json").write_text(_dated_run(AHEAD), encoding="utf-8")
    os.utime(folder / "main.json", (STARTED_AT, STARTED_AT))  # the file's own time is not ahead
    warnings: list[str] = []
    plan = plan_history(
        [make_target()], _options(folder), DEFAULT_LIMIT, "-", warnings.append, now=STARTED_AT
    )
    assert plan.of("local").runs == ()
    assert warnings[0].startswith("history: skipped 'main.json' (a run started 2100-01-01 00:00")


def test_only_the_newest_files_are_read(tmp_path: Path) -> None:
    """Every file of the folder was parsed although only the newest `history-size` runs are used
    (2,000 small files: 35 s and 1.5 GB): now the newest first, until each target has its runs,
    and never more than `history-keep`. An old broken file is not even opened."""
    folder = tmp_path / "h"
    folder.mkdir()
    for i in range(1, 6):
        when = STARTED_AT - i * DAY
        stamp = datetime.fromtimestamp(when, UTC).strftime("%Y%m%dT%H%M%SZ")
        (folder / f"latency-gate-{stamp}.json").write_text(_dated_run(when), encoding="utf-8")
    (folder / "latency-gate-20200101T000000Z.json").write_text("{torn", encoding="utf-8")

    def read(target: Target, keep: str) -> tuple[int, list[str]]:
        warnings: list[str] = []
        plan = plan_history(
            [target], _options(folder, keep), DEFAULT_LIMIT, "-", warnings.append, now=STARTED_AT
        )
        return len(plan.of("local").runs), warnings

    assert read(make_target(), "50") == (3, [])
    assert read(make_target(), "3") == (3, [])
    # A target with no run in the folder reads the newest `keep` files only, and says so.
    elsewhere = make_target(url="http://127.0.0.1:9/elsewhere")
    assert read(elsewhere, "4") == (
        0,
        [f"history: 2 older files of {folder} not read: only the newest 4 are (history-keep)"],
    )


def _payload(tmp_path: Path, **fields: object) -> str:
    path = tmp_path / "event.json"
    repository = {"default_branch": "main", "full_name": "octo/repo"}
    path.write_text(json.dumps({"repository": repository, **fields}), encoding="utf-8")
    return str(path)


def _run_of(event: str, branch: str = "main", repo: str = "octo/repo") -> dict[str, object]:
    return {
        "workflow_run": {
            "event": event,
            "head_branch": branch,
            "head_repository": {"full_name": repo},
        }
    }


@pytest.mark.parametrize(
    ("event", "fields", "why"),
    [
        ("issue_comment", {"issue": {"pull_request": {}}}, "issue_comment event may be about"),
        ("workflow_run", _run_of("pull_request", "feature"), "followed a pull_request run"),
        ("workflow_run", _run_of("push", "main", "fork/repo"), "another repository"),
        ("workflow_run", _run_of("push", "feature"), "a run of the branch 'feature'"),
        ("repository_dispatch", {}, "repository_dispatch event may be about a pull request"),
        ("check_run", {}, "check_run event may be about a pull request"),
    ],
    ids=["comment", "run-of-pr", "run-of-fork", "run-of-branch", "dispatch", "check-run"],
)
def test_auto_does_not_append_runs_about_a_pull_request(
    tmp_path: Path, event: str, fields: dict[str, object], why: str
) -> None:
    """On the default branch's ref, `issue_comment` and a `workflow_run` that followed a pull
    request's run appended to main's history (GITHUB_REF is the default branch for them
    whatever they are about); now only runs of the default branch's own code do."""
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": event,
        "GITHUB_REF": "refs/heads/main",
        "GITHUB_EVENT_PATH": _payload(tmp_path, **fields),
    }
    append, said = append_decision("auto", env)
    assert not append
    assert why in said


@pytest.mark.parametrize(
    ("event", "fields"),
    [
        ("push", {}),
        ("schedule", {}),
        ("workflow_dispatch", {}),
        ("workflow_run", _run_of("push")),
    ],
)
def test_auto_appends_runs_of_the_default_branchs_code(
    tmp_path: Path, event: str, fields: dict[str, object]
) -> None:
    """A push, a schedule, a manual dispatch on the default branch, and a workflow_run that
    followed a push to it (a deploy, then the probe) append."""
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": event,
        "GITHUB_REF": "refs/heads/main",
        "GITHUB_EVENT_PATH": _payload(tmp_path, **fields),
    }
    assert append_decision("auto", env) == (
        True,
        f"appended: a {event} run on the default branch 'main'",
    )
