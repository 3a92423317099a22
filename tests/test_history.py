"""The history rule (assess/compare/history.py): Student's t, the prediction bound, which runs
count, the check a run gets, and the history folder read, appended to and pruned
(results/history_folder/).

The rule's arithmetic is held against numpy and scipy (the package imports neither), and its
false-alarm rate against a fixed-seed simulation of per-run values that drift.
"""

from __future__ import annotations

import json
import math
import random
from datetime import UTC, datetime
from pathlib import Path

import pytest
from result_factory import failed_sample, make_result, make_target, samples_for

from latency_gate.assess.compare.history import (
    HISTORY_ALPHA,
    HistoryPlan,
    TargetHistory,
    history_check,
    match_history,
    predict,
)
from latency_gate.assess.maths.student_t import t_cdf, t_quantile
from latency_gate.assess.result import assess_run
from latency_gate.config import Budget
from latency_gate.config.regression import DEFAULT_LIMIT, RegressionLimit
from latency_gate.errors import ConfigError
from latency_gate.measurement import Measurement
from latency_gate.models import CallPhase, ErrorKind, RunResult, StampSource
from latency_gate.results.history_folder import (
    HistoryOptions,
    append_decision,
    append_result,
    parse_history_options,
    plan_history,
    prune,
)
from latency_gate.results.json_file import dump_runs

DAY = 86_400.0

# --- Student's t ---------------------------------------------------------------------------


@pytest.mark.parametrize("df", [1, 2, 3, 4, 5, 9, 19, 30, 99, 200])
@pytest.mark.parametrize("p", [0.02, 0.3, 0.5, 0.6, 0.9, 0.95, 0.975, 0.98, 0.99, 0.999])
def test_t_quantile_matches_scipy(df: int, p: float) -> None:
    """The inverse t agrees with scipy.stats.t.ppf to 1e-9 (relative)."""
    stats = pytest.importorskip("scipy.stats")
    assert t_quantile(p, df) == pytest.approx(stats.t.ppf(p, df), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("df", [1, 2, 5, 30, 1000])
@pytest.mark.parametrize("t", [-30.0, -2.0, -0.5, 0.0, 0.3, 1.0, 2.4, 10.0, 100.0])
def test_t_cdf_matches_scipy(df: int, t: float) -> None:
    """The t CDF agrees with scipy.stats.t.cdf to 1e-12."""
    stats = pytest.importorskip("scipy.stats")
    assert t_cdf(t, df) == pytest.approx(stats.t.cdf(t, df), abs=1e-12)


def test_t_quantile_refuses_what_has_none() -> None:
    """A probability of 0 or 1, or no degrees of freedom, is a ValueError."""
    for p, df in ((0.0, 5), (1.0, 5), (0.5, 0)):
        with pytest.raises(ValueError, match=r"probability|degrees"):
            t_quantile(p, df)


# --- the rule --------------------------------------------------------------------------------

VALUES = [0.50, 0.55, 0.48, 0.61, 0.52, 0.57, 0.46, 0.53, 0.59, 0.50]


def _bound(values: list[float], *, log: bool) -> float:
    """m + t(K-1, 1 - alpha) s sqrt(1 + 1/K), by numpy and scipy, in log space or seconds."""
    np = pytest.importorskip("numpy")
    stats = pytest.importorskip("scipy.stats")
    x = np.log(values) if log else np.array(values)
    k = len(values)
    margin = stats.t.ppf(1 - HISTORY_ALPHA, k - 1) * x.std(ddof=1) * math.sqrt(1 + 1 / k)
    return float(np.exp(x.mean() + margin)) if log else float(x.mean() + margin)


def test_prediction_bound_in_log_space() -> None:
    """With a relative limit: the bound is exp(m + t s sqrt(1 + 1/K)) of the logs, the center
    their geometric mean, and the head regresses only above bound x (1 + limit)."""
    bound = _bound(VALUES, log=True)
    below = predict(bound * 1.1 * 0.999, VALUES, max_relative=0.1)
    above = predict(bound * 1.1 * 1.001, VALUES, max_relative=0.1)
    assert below is not None
    assert above is not None
    assert below.bound == pytest.approx(bound, rel=1e-9)
    geometric = math.exp(math.fsum(math.log(v) for v in VALUES) / len(VALUES))
    assert below.center == pytest.approx(geometric, rel=1e-12)
    assert below.threshold == pytest.approx(bound * 1.1, rel=1e-9)
    assert (below.regressed, above.regressed) == (False, True)
    assert below.runs == 10


def test_prediction_bound_in_seconds_with_an_absolute_limit() -> None:
    """With `200ms` alone: raw seconds, mean as the center, bound + 0.2 s to exceed."""
    bound = _bound(VALUES, log=False)
    found = predict(bound + 0.2 + 0.001, VALUES, max_absolute=0.2)
    assert found is not None
    assert found.center == pytest.approx(math.fsum(VALUES) / len(VALUES), rel=1e-12)
    assert found.bound == pytest.approx(bound, rel=1e-9)
    assert found.threshold == pytest.approx(bound + 0.2, rel=1e-9)
    assert found.regressed
    assert not predict(bound + 0.2 - 0.001, VALUES, max_absolute=0.2).regressed  # type: ignore[union-attr]


def test_both_limits_must_be_exceeded() -> None:
    """20 % and 300 ms together: a head past the relative threshold alone is not regressed."""
    relative = _bound(VALUES, log=True) * 1.2
    absolute = _bound(VALUES, log=False) + 0.3
    assert absolute > relative  # the fixture: 300 ms is the stricter of the two here
    between = predict((relative + absolute) / 2, VALUES, max_relative=0.2, max_absolute=0.3)
    beyond = predict(absolute * 1.01, VALUES, max_relative=0.2, max_absolute=0.3)
    assert between is not None
    assert beyond is not None
    assert between.threshold == pytest.approx(absolute)
    assert (between.regressed, beyond.regressed) == (False, True)


def test_no_limit_means_ten_percent() -> None:
    """Neither limit given: the default 10 %, as for a single baseline."""
    assert predict(1.0, VALUES) == predict(1.0, VALUES, max_relative=0.1)


def test_fewer_than_three_values_give_no_prediction() -> None:
    """Two runs have no spread to speak of: None (the check falls back to the newest run)."""
    assert predict(1.0, [0.5, 0.6]) is None
    assert predict(1.0, [0.5, 0.6, 0.0], max_relative=0.1) is None  # a 0 has no log


@pytest.mark.slow
def test_false_alarms_held_at_alpha_under_drift() -> None:
    """An unchanged endpoint whose runs drift (a log-normal factor per run, tau 0.10) on top of
    their own noise: with a 0 % limit the head is flagged in alpha of runs (2 %, within
    simulation error), K = 10, 4,000 seeded draws; with the default 10 % far less."""
    rng = random.Random(21)
    flagged = {0.0: 0, 0.1: 0}
    draws = 4000
    for _ in range(draws):
        runs = [math.exp(rng.gauss(0, 0.10) + rng.gauss(0, 0.05)) for _ in range(11)]
        for limit in flagged:
            found = predict(runs[-1], runs[:-1], max_relative=limit)
            assert found is not None
            flagged[limit] += found.regressed
    assert 0.012 <= flagged[0.0] / draws <= 0.028
    assert flagged[0.1] / draws < 0.005


# --- which runs count -------------------------------------------------------------------------


def _run(factor: float, days_ago: float, name: str = "local", **target: object) -> RunResult:
    """The healthy run scaled by `factor`, started `days_ago` days before the head's start."""
    result = make_result(
        name,
        samples=samples_for(
            cold=0.42 * factor,
            warm=[(0.100 + 0.005 * i) * factor for i in range(40)],
            concurrent=[(0.150 + 0.005 * i) * factor for i in range(40)],
        ),
        **target,  # type: ignore[arg-type]
    )
    return result.model_copy(update={"started_at": result.started_at - days_ago * DAY})


def test_match_history_takes_the_newest_runs_of_the_same_target_and_settings() -> None:
    """Same name and comparable settings only (budget does not count), newest first by start,
    the newest `size`; runs of other settings are counted, other targets ignored."""
    ours = [_run(1.0, days) for days in (5, 1, 3, 2, 4)]
    other_url = _run(1.0, 0.5, url="http://127.0.0.1:9/other")
    laxer = _run(1.0, 6, budget=Budget(max_warm_p95=9.0))
    other_name = _run(1.0, 0.1, name="paid")
    matched = match_history([make_target()], [*ours, other_url, laxer, other_name], size=4)
    history = matched["local"]
    assert [round((ours[0].started_at + 5 * DAY - r.started_at) / DAY) for r in history.runs] == [
        1,
        2,
        3,
        4,
    ]
    assert history.other_settings == 1


def _plan(runs: list[RunResult], *, limit: RegressionLimit = DEFAULT_LIMIT) -> HistoryPlan:
    newest_first = tuple(sorted(runs, key=lambda r: r.started_at, reverse=True))
    return HistoryPlan(".latency-history", limit, targets={"local": TargetHistory(newest_first)})


DRIFT = (1.00, 0.93, 1.06, 1.12, 0.97, 0.90, 1.04, 1.09, 0.95, 1.01)


def _judge(head: RunResult, plan: HistoryPlan | None, budget: Budget | None = None) -> RunResult:
    return assess_run(
        make_target(budget=budget),
        Measurement(list(head.samples), started_at=head.started_at),
        finished_at=head.finished_at,
        stamp_source=StampSource.KERNEL,
        history=plan,
    )


def test_a_run_like_its_history_passes() -> None:
    """Within the runs' drift: every gated percentile "not regressed", the bound reported."""
    plan = _plan([_run(f, 10 - i) for i, f in enumerate(DRIFT)])
    judged = _judge(_run(1.05, 0), plan)
    check = judged.baseline
    assert check is not None
    assert check.history is not None
    assert check.status == "compared"
    assert check.history.judged == "prediction"
    assert len(check.history.runs) == 10
    assert check.history.runs[0].started_at < check.history.runs[-1].started_at  # oldest first
    warm = next(d for d in check.deltas if d.number == "warm_p95")
    assert warm.outcome == "not regressed"
    assert warm.bound is not None
    assert warm.threshold is not None
    assert warm.base is not None
    assert warm.threshold == pytest.approx(warm.bound * 1.1)
    assert check.regressions == ()
    assert judged.verdict.passed


def test_a_run_past_its_history_fails_the_run() -> None:
    """Twice the tail against drifting runs: warm p95 regresses, and the verdict says against
    what."""
    plan = _plan([_run(f, 10 - i) for i, f in enumerate(DRIFT)])
    judged = _judge(_run(1.6, 0), plan)
    assert not judged.verdict.passed
    reasons = [r for r in judged.verdict.reasons if "warm p95" in r]
    assert len(reasons) == 1
    assert reasons[0].startswith("regression: warm p95 ")
    assert "against the history, above its bound of " in reasons[0]


def test_an_ungated_number_is_shown_not_tested() -> None:
    """Warm p50 has no budget by default: shown against the history's geometric mean, untested."""
    plan = _plan([_run(f, 10 - i) for i, f in enumerate(DRIFT)])
    check = _judge(_run(3.0, 0), plan).baseline
    assert check is not None
    warm_p50 = next(d for d in check.deltas if d.number == "warm_p50")
    assert warm_p50.outcome is None
    assert warm_p50.note == "not tested: it has no budget (only gated numbers are tested)"
    cold = next(d for d in check.deltas if d.number == "cold_start")
    assert cold.note == "one call a run: cannot be told from noise, not gated"


def test_error_rate_against_the_pooled_calls() -> None:
    """Five failures in 31 calls against none in the history's 810: regressed, by the exact
    conditional test of the counts."""
    plan = _plan([_run(f, 10 - i) for i, f in enumerate(DRIFT)])
    healthy = _run(1.0, 0)
    failing = [
        failed_sample(CallPhase.WARM, 40 + i, ErrorKind.HTTP_5XX, "boom", status=503)
        for i in range(5)
    ]
    head = healthy.model_copy(update={"samples": (*healthy.samples, *failing)})
    check = _judge(head, plan, Budget(max_error_rate=0.5)).baseline
    assert check is not None
    errors = next(d for d in check.deltas if d.number == "error_rate")
    assert errors.base == 0.0
    assert errors.outcome == "regressed"


def test_two_runs_fall_back_to_the_newest_said_so() -> None:
    """Fewer than 3 usable runs: the newest one is the baseline (the permutation test), and the
    check says so in the lead's words."""
    plan = _plan([_run(1.0, 2), _run(1.02, 1)])
    check = _judge(_run(1.0, 0), plan).baseline
    assert check is not None
    assert check.history is not None
    assert check.history.judged == "newest"
    assert check.status == "compared"
    assert check.message == (
        "history: 2 usable runs, fewer than 3: compared with the newest one only; drift between "
        "runs is not accounted for"
    )
    assert check.source == ".latency-history (its newest run)"
    assert "permutation" in check.test
    newest = plan.of("local").runs[0]
    warm = next(d for d in check.deltas if d.number == "warm_p95")
    assert warm.base == newest.numbers.warm_p95


def test_the_fallback_drives_the_gate_like_a_baseline() -> None:
    """With fewer than 3 runs the gate's looks compare with the newest (as --baseline does);
    with 3 or more the gate has no base: the history is judged once, on the final calls."""
    from latency_gate.assess.result import gate_for

    few = _plan([_run(1.0, 2), _run(1.02, 1)])
    enough = _plan([_run(f, 10 - i) for i, f in enumerate(DRIFT)])
    assert gate_for(make_target(), few.as_baseline()).base == few.of("local").runs[0]
    assert gate_for(make_target(), enough.as_baseline()).base is None


def test_no_usable_run_is_said_plainly() -> None:
    """No folder (a first run) and a folder without a run of this target: "missing", never a
    silent pass, and the verdict rests on the budget."""
    first = _judge(_run(1.0, 0), HistoryPlan(".latency-history", DEFAULT_LIMIT, targets=None))
    assert first.baseline is not None
    assert first.baseline.status == "missing"
    assert first.baseline.message == "no history folder at .latency-history (a first run?)"
    empty = HistoryPlan(
        "h", DEFAULT_LIMIT, targets={"local": TargetHistory((), 2)}, unreadable=("'x.json' (…)",)
    )
    check = _judge(_run(1.0, 0), empty).baseline
    assert check is not None
    assert check.message == (
        "no usable run of 'local' in the history at h (skipped: 2 runs of other settings, "
        "1 unreadable file)"
    )
    assert first.verdict.passed


def test_history_check_needs_no_newest_check_with_enough_runs() -> None:
    """history_check alone (no baseline comparison beside it) judges 3 or more runs."""
    plan = _plan([_run(f, 3 - i) for i, f in enumerate(DRIFT[:3])])
    head = _run(1.0, 0)
    check = history_check(plan, "local", head.samples, head.numbers, gated=["warm_p95"])
    assert [d.outcome for d in check.deltas if d.number == "warm_p95"] == ["not regressed"]
    assert [d.outcome for d in check.deltas if d.number == "concurrent_p95"] == [None]


# --- the folder --------------------------------------------------------------------------------


def _options(folder: Path, **given: str) -> HistoryOptions:
    names = {"size": "--history-size", "keep": "--history-keep", "append": "--history-append"}
    return parse_history_options(
        folder,
        str(folder),
        size=given.get("size"),
        keep=given.get("keep"),
        append=given.get("append"),
        names=names,
    )


def test_options_defaults_and_bounds(tmp_path: Path) -> None:
    """10 runs, 50 files kept, auto; a size under 3, a keep under the size or another mode is
    bad input naming the option."""
    assert _options(tmp_path) == HistoryOptions(tmp_path, str(tmp_path), 10, 50, "auto")
    with pytest.raises(ConfigError, match=r"--history-size: expected a whole number of at least 3"):
        _options(tmp_path, size="2")
    with pytest.raises(ConfigError, match=r"--history-keep: keeps 5 files, fewer than the 10"):
        _options(tmp_path, keep="5")
    with pytest.raises(ConfigError, match=r"--history-append: expected auto, true or false"):
        _options(tmp_path, append="sometimes")


def _read(folder: Path) -> tuple[HistoryPlan, list[str]]:
    warnings: list[str] = []
    plan = plan_history(
        [make_target()], _options(folder), DEFAULT_LIMIT, "--history", warnings.append
    )
    return plan, warnings


def test_a_missing_folder_is_a_first_run(tmp_path: Path) -> None:
    """No folder at the path: no targets, no warning."""
    plan, warnings = _read(tmp_path / "none")
    assert plan.targets is None
    assert warnings == []


def test_a_file_is_not_a_folder(tmp_path: Path) -> None:
    """A path that is a file: exit 2, naming the option."""
    (tmp_path / "f").write_text("x")
    with pytest.raises(ConfigError, match=r"--history: '.*/f' is not a folder"):
        _read(tmp_path / "f")


def test_an_unreadable_path_is_bad_input(tmp_path: Path) -> None:
    """A path the system cannot even look up (a name too long): exit 2, with the reason."""
    with pytest.raises(ConfigError, match=r"--history: cannot read .*: File name too long"):
        _read(tmp_path / ("x" * 300))


def test_unreadable_files_are_skipped_with_a_warning_naming_them(tmp_path: Path) -> None:
    """Broken JSON, another JSON document and a link are skipped, each named in a warning; the
    good runs are read; other files (not .json) are not looked at."""
    folder = tmp_path / "h"
    folder.mkdir()
    for i, factor in enumerate((1.0, 1.1, 0.9)):
        (folder / f"run{i}.json").write_text(dump_runs([_run(factor, 3 - i)]))
    (folder / "broken.json").write_text('{"schema_version": 1, "runs": [')
    (folder / "other.json").write_text(json.dumps({"hello": "world"}))
    (folder / "link.json").symlink_to(folder / "run0.json")
    (folder / "README.txt").write_text("not a result")
    plan, warnings = _read(folder)
    assert len(plan.of("local").runs) == 3
    assert [w.split(" (")[0] for w in warnings] == [
        "history: skipped 'broken.json'",
        "history: skipped 'link.json'",
        "history: skipped 'other.json'",
    ]
    assert "not a regular file" in warnings[1]
    assert all(
        w.endswith("a history folder is a cache, the run goes on without it") for w in warnings
    )
    assert len(plan.unreadable) == 3


def test_append_never_overwrites(tmp_path: Path) -> None:
    """Two appends in the same second get two files; the run id is kept when it is a plain id
    and dropped when it is not."""
    now = datetime(2026, 12, 1, 9, 30, 12, tzinfo=UTC)
    first = append_result(tmp_path / "h", "one", now, "4242")
    second = append_result(tmp_path / "h", "two", now, "4242")
    odd = append_result(tmp_path / "h", "three", now, "../../etc")
    assert first.name == "latency-gate-20261201T093012Z-4242.json"
    assert second.name == "latency-gate-20261201T093012Z-4242-2.json"
    assert odd.name == "latency-gate-20261201T093012Z.json"
    assert [p.read_text() for p in (first, second, odd)] == ["one", "two", "three"]


def test_prune_keeps_the_newest_of_ours_and_nothing_else(tmp_path: Path) -> None:
    """Only our file names are pruned, oldest first; a user's file, a folder and a link with our
    name are left alone."""
    folder = tmp_path / "h"
    for day in range(1, 6):
        append_result(folder, "x", datetime(2026, 12, day, tzinfo=UTC))
    (folder / "main.json").write_text("mine")
    (folder / "latency-gate-20260101T000000Z.json").symlink_to(folder / "main.json")
    (folder / "latency-gate-20250101T000000Z.json").mkdir()
    deleted = prune(folder, 2, datetime(2026, 12, 6, tzinfo=UTC))
    assert sorted(p.name for p in deleted) == [
        "latency-gate-20261201T000000Z.json",
        "latency-gate-20261202T000000Z.json",
        "latency-gate-20261203T000000Z.json",
    ]
    assert sorted(p.name for p in folder.iterdir()) == [
        "latency-gate-20250101T000000Z.json",
        "latency-gate-20260101T000000Z.json",
        "latency-gate-20261204T000000Z.json",
        "latency-gate-20261205T000000Z.json",
        "main.json",
    ]


def _event(tmp_path: Path, default_branch: str = "main") -> str:
    path = tmp_path / "event.json"
    path.write_text(json.dumps({"repository": {"default_branch": default_branch}}))
    return str(path)


def test_auto_appends_on_a_push_to_the_default_branch(tmp_path: Path) -> None:
    """GITHUB_REF refs/heads/<the payload's default branch>, a push: appended."""
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "push",
        "GITHUB_REF": "refs/heads/trunk",
        "GITHUB_EVENT_PATH": _event(tmp_path, "trunk"),
    }
    assert append_decision("auto", env) == (
        True,
        "appended: a push run on the default branch 'trunk'",
    )


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"GITHUB_REF": "refs/heads/feature"}, "'refs/heads/feature' is not the default branch"),
        ({"GITHUB_EVENT_NAME": "pull_request"}, "a pull_request run never appends"),
        ({"GITHUB_REF": "refs/pull/42/merge", "GITHUB_EVENT_NAME": "pull_request_target"}, "never"),
        ({"GITHUB_ACTIONS": ""}, "not in GitHub Actions"),
        ({"GITHUB_EVENT_PATH": ""}, "the event payload names no default branch"),
    ],
)
def test_auto_does_not_append_elsewhere(tmp_path: Path, change: dict[str, str], why: str) -> None:
    """Another branch, any pull request, outside Actions, or no payload: not appended, and why."""
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "push",
        "GITHUB_REF": "refs/heads/main",
        "GITHUB_EVENT_PATH": _event(tmp_path),
        **change,
    }
    append, said = append_decision("auto", env)
    assert not append
    assert why in said


def test_true_and_false_need_no_environment() -> None:
    """`true` appends and `false` does not, wherever it runs."""
    assert append_decision("true", {})[0] is True
    assert append_decision("false", {"GITHUB_ACTIONS": "true"})[0] is False
