"""Hostile input: bases, the A/B base and the stored history.

An A/B base whose calls fail or that cannot be reached leaves the head judged alone, and says why; a
stored history no run could hold is refused; files dated in the future neither judge nor outlive new
runs; only the newest history files are read; `history-append: auto` appends only the default
branch's runs, and says so in a sentence. docs/faults.md, "Hostile input", says what each case did
before its fix.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import free_port
from hostile_data import _answer, _copy, _write
from hostile_kit import (
    CHAT,
    FAST,
    ONE_LOOK,
    Answer,
    http,
    judged,
    one_error,
    paced,
    run_action,
    run_cli,
)
from report_scenarios import scenario_history
from result_factory import STARTED_AT, make_result, make_target

from latency_gate.config import Target
from latency_gate.config.regression import DEFAULT_LIMIT
from latency_gate.demo import DemoServer, EndpointSpec, serve_in_thread
from latency_gate.results.history_folder import (
    HistoryOptions,
    append_decision,
    parse_history_options,
    plan_history,
)
from latency_gate.results.json_file import dump_runs


def _fails(status: str, extra: str = "") -> Answer:
    """Every request answered with `status` (and headers `extra`)."""
    return lambda _: [http(status, b'{"error": "no"}', extra=extra)]


NOT_COMPARED = (
    "against the base measured beside it: not compared: warm p95, for the base gave no data: "
    "none of its 2 warm calls succeeded (2 {kind}); concurrent p95, for the base gave no data: "
    "{concurrent}; of the rest, no number regressed beyond noise and the 10 % limit"
)


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


def _poisoned(measured: dict[str, Any], folder: Path, files: int) -> None:
    """`files` runs dated 2100 in files named so, each call 1 µs: the "newest" runs, against
    which any real run regresses."""
    for i in range(files):
        stamp = datetime.fromtimestamp(AHEAD + i * DAY, UTC).strftime("%Y%m%dT%H%M%SZ")
        _write(folder / f"latency-gate-{stamp}.json", _timed(measured, 1e-6, AHEAD + i * DAY))


def _dated_run(started_at: float) -> str:
    """A result file (make_result's target "local") of a run started at that time."""
    run = make_result()
    return dump_runs([run.model_copy(update={"started_at": started_at})])


def _options(folder: Path, keep: str = "50") -> HistoryOptions:
    names = {"size": "--history-size", "keep": "--history-keep", "append": "--history-append"}
    return parse_history_options(
        folder, str(folder), size="3", keep=keep, append="false", names=names
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


def _event_env(tmp_path: Path, event: str, payload: object) -> dict[str, str]:
    path = tmp_path / "event.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    return {
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": event,
        "GITHUB_EVENT_PATH": str(path),
        "GITHUB_REF": "refs/heads/main",
    }


@pytest.mark.parametrize(
    ("answer", "kind"),
    [
        (_fails("500 Internal Server Error"), "http_5xx"),
        (_fails("401 Unauthorized"), "http_4xx"),
        (_fails("302 Found", "Location: /elsewhere\r\n"), "redirect"),
    ],
    ids=["500", "401", "302-not-followed"],
)
def test_base_without_data_is_not_compared(answer: Answer, kind: str, tmp_path: Path) -> None:
    """A base whose every call fails: each tested number is undecided and says the base gave no
    data, naming its failures (it read "no number regressed", the failures named nowhere); the
    run passes with a warning by default and fails under --on-undecided-regression fail."""
    with paced(_answer) as (head, _), paced(answer) as (base, _):
        args = [head + CHAT, "--prompt", "hi", "--baseline-url", base + CHAT, *FAST]
        lenient = judged(run_cli("probe", *args, "--markdown", str(tmp_path / "r.md")))
        strict = judged(run_cli("probe", *args, "--on-undecided-regression", "fail"))
    assert lenient.exit_code == 0, lenient.output
    flat = " ".join(lenient.output.split())
    concurrent = f"its one concurrent call failed (1 {kind})"
    assert NOT_COMPARED.format(kind=kind, concurrent=concurrent) in flat
    assert (
        "warm p95 regression undecided: the base gave no data: none of its 2 warm calls "
        f"succeeded (2 {kind}), so it was not compared"
    ) in flat
    markdown = " ".join((tmp_path / "r.md").read_text().split())
    assert "not compared: warm p95, for the base gave no data: none of its 2 warm calls" in markdown
    assert strict.exit_code == 1, strict.output
    assert (
        "FAIL: undecided regression, counted as one by policy (on-undecided-regression: fail): "
        "warm p95 not compared: the base gave no data"
    ) in " ".join(strict.output.split())


def test_a_base_with_one_successful_call_is_not_compared(tmp_path: Path) -> None:
    """A base whose calls all fail but one: too few to compare, undecided and said so (it read
    "too few calls to tell from noise" and counted as not regressed, whatever the policy)."""
    answered = {"n": 0}

    def once(request: bytes) -> Sequence[bytes]:
        answered["n"] += 1
        return _answer(request) if answered["n"] == 2 else _fails("503 Busy")(request)

    with paced(_answer) as (head, _), paced(once) as (base, _):
        json_path = tmp_path / "r.json"
        args = [head + CHAT, "--prompt", "hi", "--baseline-url", base + CHAT, *FAST]
        strict = judged(
            run_cli("probe", *args, "--on-undecided-regression", "fail", "--json", str(json_path))
        )
    assert strict.exit_code == 1, strict.output
    deltas = {d["number"]: d for d in json.loads(json_path.read_text())["baseline"]["deltas"]}
    assert deltas["warm_p95"]["missing"] == (
        "too few calls to compare (1 of the base's and 2 of the head's succeeded)"
    )
    assert (deltas["warm_p95"]["outcome"], deltas["warm_p95"]["by_policy"]) == ("undecided", True)
    assert deltas["concurrent_p95"]["missing"] == (
        "the base gave no data: its one concurrent call failed (1 http_5xx)"
    )


@pytest.mark.parametrize("how", ["refused", pytest.param("hangs", marks=pytest.mark.slow)])
def test_unreachable_base_leaves_the_head_judged_alone(how: str) -> None:
    """A base that refuses connections or never answers: the head is measured alone and judged
    by its budget (it failed "concurrent p95 not measured"), the warning names the base, not
    "the endpoint", and the comparison says it had nothing."""

    def silent(_: bytes) -> list[bytes]:
        return []  # reads the request and never answers

    # The timeout is the head's too: at 0.5 s (five of its calls) a loaded first pass once cut
    # the head's one concurrent call (stop 47's quiet run, five workers on two cores), and the
    # head, not the base, failed the run. At 2 s the hanging base costs its three calls 6 s.
    with paced(_answer) as (head, _), paced(silent) as (hanging, _):
        base = f"http://127.0.0.1:{free_port()}" if how == "refused" else hanging
        args = [head + CHAT, "--prompt", "hi", "--baseline-url", base + CHAT, "--timeout", "2s"]
        result = judged(run_cli("probe", *args, *FAST))
    flat = " ".join(result.output.split())
    assert result.exit_code == 0, result.output
    assert "not measured" not in flat
    stopped = (
        "all failed to connect (connection_refused): the base "
        if how == "refused"
        else "all timed out waiting for the answer (read_timeout); the base "
    )
    assert f"warning: stopped after the first 3 calls of the base: {stopped}" in flat
    assert "the head was measured alone" in flat
    assert "the endpoint" not in flat
    kind = stopped.split("(")[1].split(")", maxsplit=1)[0]
    assert NOT_COMPARED.format(kind=kind, concurrent="it made no concurrent call") in flat


def test_unreachable_base_in_the_action_leaves_the_head_judged_alone(tmp_path: Path) -> None:
    """The same in the action: exit 0, the head's budget passes, the warning names the base,
    and the job summary says what was not compared."""
    with paced(_answer) as (head, _):
        base = f"http://127.0.0.1:{free_port()}{CHAT}"
        inputs = {"url": head + CHAT, "prompt": "hi", "baseline-url": base, **ONE_LOOK}
        run = run_action(tmp_path, inputs)
    assert run.code == 0, run.log
    assert "not measured" not in run.summary
    assert "::warning" in run.log
    assert "the base (" in run.log
    assert "not compared: warm p95, for the base gave no data: none of its 2 warm calls" in (
        " ".join(run.summary.split())
    )
    assert "passed=true" in run.outputs


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


def test_the_history_log_line_reads_as_a_sentence(tmp_path: Path) -> None:
    """The action's log said "history history-append is true" (the reason repeated the word its
    prefix had said) and "followed a an unnamed event run"; the reasons now read after it."""
    repository = {"default_branch": "main", "full_name": "octo/repo"}
    unnamed = {"repository": repository, "workflow_run": {"head_branch": "main"}}
    assert append_decision("true", {}) == (True, "appended (history-append is true)")
    assert append_decision("false", {}) == (False, "not appended (history-append is false)")
    assert append_decision("auto", _event_env(tmp_path, "workflow_run", unnamed)) == (
        False,
        "not appended: the workflow_run followed a run whose event the payload does not name "
        "(history-append auto)",
    )
    _, said = append_decision("auto", _event_env(tmp_path, "issue_comment", {}))
    assert said.startswith("not appended: an issue_comment event may be about a pull request")
    _, said = append_decision("auto", _event_env(tmp_path, "", {}))
    assert said.startswith("not appended: an unnamed event may be about a pull request")


def test_the_action_logs_history_appended_as_a_sentence(demo: DemoServer, tmp_path: Path) -> None:
    """history-append true in the action: `latency-gate: history appended (history-append is
    true): wrote …`, not `history history-append is true`."""
    inputs = {"url": demo.url, "prompt": "Hi", **ONE_LOOK, "history": "h"}
    run = run_action(tmp_path, inputs | {"history-append": "true"})
    assert run.code == 0, run.log
    assert "latency-gate: history appended (history-append is true): wrote h/latency-gate-" in (
        run.log
    )
