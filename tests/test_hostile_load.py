"""Hostile input: the capacity and rate searches.

A capacity floor no cap could reach, a search the cap stopped below its floor, a rate level that
could judge no call or would outlast a CI job (refused before any call), and a rate level broken by
429s headlined by its failures. docs/faults.md, "Hostile input", says what each case did before its
fix.
"""

from __future__ import annotations

import re
import time
from collections import deque
from collections.abc import Callable, Iterator

import pytest
from hostile_data import _answer
from hostile_kit import CHAT, http, judged, one_error, paced, run_cli

from latency_gate.demo import DemoServer, EndpointSpec, serve_in_thread


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoServer]:
    """A healthy streaming chat endpoint that answers at once."""
    with serve_in_thread(EndpointSpec(latency=0.0, tokens=2, token_interval=0.0)) as (server,):
        yield server


def _rate_limited(per_second: int) -> Callable[[bytes], list[bytes]]:
    """An endpoint that answers 60 ms after each request, and 429 to a request once it has
    answered `per_second` in the last second: calls one at a time pass, calls at a rate above
    it are mostly refused."""
    answered: deque[float] = deque()

    def answer(_: bytes) -> list[bytes]:
        now = time.monotonic()
        while answered and now - answered[0] > 1.0:
            answered.popleft()
        if len(answered) >= per_second:
            refused = b'{"error": "slow down"}'
            return [b"", http("429 Too Many Requests", refused, extra="Retry-After: 1\r\n")]
        answered.append(now)
        body = b'{"choices": [{"message": {"content": "ok"}}], "usage": {"completion_tokens": 1}}'
        return [b"", http("200 OK", body)]

    return answer


def test_a_floor_no_cap_could_reach_is_exit_2() -> None:
    """--min-capacity 20 --max-calls 60: even a perfect endpoint's checks and search need more
    calls than that, so no run could decide the floor: exit 2 before any call, naming max-calls
    and what would do (it failed "capacity 4 at once" after no search call at all)."""
    with paced(_answer) as (base, seen):
        line = one_error(
            run_cli("probe", base + CHAT, "--no-floor", "--min-capacity", "20", "--max-calls", "60")
        )
    assert seen.requests == []
    assert line == (
        "Error: invalid input --max-calls: 60 calls cannot reach the 20 calls at once that "
        "min-capacity asks for, even for a perfect endpoint: the checks take 131 (the error "
        "budget 0.01 passes after 127 calls without a failure) and the search 100 more to hold "
        "20 at once, so no run could decide it. Raise it to at least 231, or leave it out (it "
        "is then sized to fit)"
    )


@pytest.mark.parametrize("policy", ["estimate", "pass", "fail"])
def test_a_search_the_cap_stopped_below_the_floor_is_undecided(policy: str) -> None:
    """A search that max-calls stopped at 20 held, 40 not tried, against a minimum of 30: the
    floor is undecided, not a FAIL "20 against 30"; on-undecided decides (fail fails it by
    policy; estimate has no value above the levels tried and passes, said as undecided)."""
    from latency_gate.assess.budget.clumps import Clumps
    from latency_gate.assess.load.at_once import CapacityRun, RunLevel
    from latency_gate.assess.load.levels import LevelCalls, LevelLimits
    from latency_gate.assess.load.verdict import capacity_check
    from latency_gate.assess.verdict import judge
    from latency_gate.models import CallPhase, Sample, StampSource

    limits = LevelLimits(concurrent_p95=1.0, error_rate=0.01, on_undecided=policy)
    start = RunLevel(10, LevelCalls((0.2,) * 130, clumps=Clumps(130)), (130,))
    # Level 20 holds after 100 clean calls (5 bursts); 110 leaves no room for level 40.
    run = CapacityRun(limits, maximum=64, room=110, start=start)
    while (c := run.next_burst()) is not None:
        ok = Sample(
            phase=CallPhase.CONCURRENT, index=0, started_at=0.0, ok=True, latency=0.2,
            status=200, stamp_source=StampSource.KERNEL,
        )  # fmt: skip
        run.add_burst([ok] * c, 0.2)
    capacity = run.capacity()
    assert (capacity.found, capacity.stopped_by_cap) == (20, True)
    row = capacity_check(capacity, 30)
    assert row is not None
    assert (row.decided, row.by_policy, row.passed) == (False, True, policy != "fail")
    assert row.note.startswith(
        "at least 20: max-calls stopped the search: the next burst, 40 calls at once, did not "
        "fit in the 10 calls left; undecided: at least 20 at once, and no level of 30 (the "
        "minimum) or more was decided"
    )
    verdict = judge([row], successful_calls=40)
    if policy == "fail":
        assert verdict.reasons == ("capacity undecided, failed by policy",)
    else:
        assert verdict.passed
        assert verdict.undecided[0].startswith("capacity: at least 20: max-calls stopped")
    # A level at or under the minimum that broke shows the capacity under it: a FAIL, decided.
    broke = capacity_check(capacity.model_copy(update={"breaking": 25}), 30)
    assert broke is not None
    assert (broke.decided, broke.by_policy, broke.passed) == (True, False, False)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--rate-for", "40"],
            "Error: invalid input --rate-for: a level of 40 calls at 20/s has no call due after "
            "its warm-up of 9 s (the first 3 budgets of arrivals: made, not judged), so it would "
            "judge none. Give at least 292 calls (or 15s), enough for the 112 judged calls a "
            "level needs to hold, or leave it out (auto)",
        ),
        (
            ["--rate-for", "1"],
            "Error: invalid input --rate-for: a level of 1 call at 20/s has no call due after its "
            "warm-up of 9 s",
        ),
        (
            ["--max-calls", "150"],
            "Error: invalid input --max-calls: 150 calls leave 19 to the level at 20/s, none of "
            "them due after its warm-up of 9 s (the first 3 budgets of arrivals: made, not "
            "judged), so it would judge none. Raise it to at least 423, or leave it out (it is "
            "then sized to fit)",
        ),
    ],
    ids=["rate-for-40", "rate-for-1", "max-calls"],
)
def test_a_level_that_could_judge_no_call_is_refused_before_any_call(
    demo: DemoServer, extra: list[str], message: str
) -> None:
    """A level at 20/s whose calls all fall in its 9 s warm-up FAILed "p95 at the rate not
    measured: no successful ... call carried a streamed answer's timing" (or was "near the
    budget" under on-undecided pass); it is refused, with the least that can judge a level."""
    before = len(demo.records)
    args = ["probe", demo.url, "--prompt", "hi", "--rate", "20/s", *extra]
    assert one_error(run_cli(*args)).startswith(message)
    assert len(demo.records) == before


def test_a_rate_too_low_for_a_ci_job_is_refused(demo: DemoServer) -> None:
    """`--rate 1/h` waited for 130 calls due after the warm-up: 130 hours."""
    error = one_error(run_cli("probe", demo.url, "--prompt", "hi", "--rate", "1/h"))
    assert error == (
        "Error: invalid input --rate: at 0.000278/s a level lasts until about 130 calls are due "
        "after its warm-up of 9 s (the first 3 budgets of arrivals: made, not judged): 130 h, "
        "longer than a CI job runs (GitHub stops one at 6 h). Give a rate of at least 0.00608/s"
    )


@pytest.mark.alone  # 60 ms answers against 200 ms: under other tests' load the p95 broke too
def test_a_rate_level_broken_by_429s_is_headlined_by_its_failures() -> None:
    """Against 429s at 60/s, the headline said "p95 at the rate 78 ms, over its 200 ms budget"
    (a p95 within it, of the calls that succeeded) and no line said 429; it now says the calls
    failed, how many, why, and the error budget they broke."""
    args = ["--prompt", "hi", "--no-floor", "--warm-calls", "2", "--concurrency", "1"]
    args += ["--rate", "60/s", "--rate-for", "120", "--max-concurrent-p95", "200ms"]
    with paced(_rate_limited(20), pause=0.06) as (base, _):
        done = judged(run_cli("probe", base + CHAT, *args, "--on-undecided", "pass"))
    assert done.exit_code == 1, done.output
    headline = done.output[done.output.index("FAIL: ") :].splitlines()[0]
    assert re.fullmatch(
        r"FAIL: the calls at 60/s failed: \d+ of \d+ \(429 Too Many Requests\), over the 1\.0 % "
        r"error budget",
        headline,
    ), headline
    assert re.search(
        r"at a rate: breaks its 1\.0 % error budget at 60/s: \d+ of \d+ judged", (done.output)
    ), done.output
