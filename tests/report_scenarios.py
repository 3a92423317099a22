"""The report scenarios of the golden files (tests/test_report.py) and of the rendered reports
(tests/test_render_browser.py): hand-made results, each a list of the runs of one report."""

from __future__ import annotations

import math
import random
from collections.abc import Callable

from result_factory import (
    DEFAULT_FLOOR,
    STARTED_AT,
    TOOL_VERSION,
    URL,
    failed_sample,
    healthy_samples,
    make_result,
    make_target,
    ok_sample,
    samples_for,
)

from latency_gate.assess.compare.baseline import BaselinePlan
from latency_gate.assess.compare.history import HistoryPlan, TargetHistory
from latency_gate.assess.result import assess_run
from latency_gate.config import Budget, build_target
from latency_gate.config.regression import DEFAULT_LIMIT
from latency_gate.measurement import Measurement
from latency_gate.models import (
    CallPhase,
    CallTimings,
    ErrorKind,
    Finding,
    RunResult,
    Sample,
    StampSource,
)

HOSTILE_DETAIL = "bad | gateway `rm -rf` <script>alert(1)</script>\n@octocat see #123 *now*"
HOSTILE_NAME = "prod|<b>x</b> @team #7"
FAKE_MARKER = "<!-- latency-gate:comment:ci/gate:abc123 -->"


def scenario_pass() -> list[RunResult]:
    return [make_result()]


def scenario_fail() -> list[RunResult]:
    return [make_result(passed=False)]


def scenario_errors() -> list[RunResult]:
    samples = [
        *healthy_samples(),
        failed_sample(
            CallPhase.WARM, 20, ErrorKind.HTTP_5XX, "503 upstream connect error", status=503
        ),
        failed_sample(CallPhase.WARM, 21, ErrorKind.HTTP_5XX, "502 bad gateway", status=502),
        failed_sample(CallPhase.CONCURRENT, 10, ErrorKind.HTTP_429, "429 slow down", status=429),
        failed_sample(CallPhase.CONCURRENT, 11, ErrorKind.READ_TIMEOUT, None),
    ]
    finding = Finding(
        code="rate_limited",
        title="Rate limited",
        evidence="1 of 35 calls got 429 with Retry-After: 2",
        hint="raise the rate limit or lower the concurrency",
    )
    return [make_result(samples=samples, findings=[finding])]


def scenario_hostile() -> list[RunResult]:
    samples = [
        *healthy_samples(),
        failed_sample(CallPhase.WARM, 20, ErrorKind.HTTP_5XX, HOSTILE_DETAIL, status=500),
        failed_sample(CallPhase.WARM, 21, ErrorKind.STREAM_ERROR, FAKE_MARKER, status=200),
    ]
    finding = Finding(
        code="buffered_stream",
        title="Buffered | stream <i>",
        evidence=HOSTILE_DETAIL,
        hint="ask @octocat about #123",
    )
    return [
        make_result(
            HOSTILE_NAME,
            samples=samples,
            url="http://127.0.0.1:8000/v1/<script>|`x`",
            headers=[("User-Agent", "@octocat #123 | <!-- latency-gate:comment:x -->")],
            findings=[finding],
            warnings=[f"server said: {HOSTILE_DETAIL}"],
            budget=Budget(max_error_rate=0.5),
        )
    ]


def scenario_several() -> list[RunResult]:
    return [
        make_result("local", stream=True, budget=Budget(max_ttft_p95=1.0)),
        make_result("free", passed=False),
        make_result("paid", budget=Budget(max_cold_start=1.0, max_warm_p50=0.5)),
    ]


def scenario_interrupted() -> list[RunResult]:
    samples = [
        *samples_for(cold=0.42, warm=[0.1 + 0.01 * i for i in range(7)], concurrent=[]),
        failed_sample(CallPhase.WARM, 7, ErrorKind.INTERRUPTED, "cancelled by SIGTERM"),
    ]
    return [make_result(samples=samples, interrupted=True, budget=Budget(max_error_rate=0.2))]


def scenario_nodata() -> list[RunResult]:
    samples = [
        failed_sample(phase, i, ErrorKind.CONNECTION_REFUSED, "[Errno 111] Connection refused")
        for phase, count in ((CallPhase.COLD, 1), (CallPhase.WARM, 3), (CallPhase.CONCURRENT, 2))
        for i in range(count)
    ]
    return [make_result(samples=samples, floor=None)]


def scenario_priced() -> list[RunResult]:
    """Three streamed targets within budget, each with a cost note (the file lists the dearest
    first: the reports order them by price), the buffered one with its finding."""
    finding = Finding(
        code="buffered_stream",
        title="Buffered stream: the answer arrives all at once",
        evidence="a stream was asked for, but all 24 tokens arrived in one burst",
        hint="turn off response buffering in the proxy in front",
    )
    costs = {"paid": "$0.60 / 1M tokens", "local": "free, on our own GPU", "free": "free tier"}
    slower = {"paid": 1.0, "local": 1.5, "free": 2.4}
    results = []
    for name, cost in costs.items():
        samples = samples_for(
            cold=0.42 * slower[name],
            warm=[(0.100 + 0.005 * i) * slower[name] for i in range(40)],
            concurrent=[(0.150 + 0.005 * i) * slower[name] for i in range(40)],
            stream=True,
        )
        result = make_result(
            name, samples=samples, stream=True, findings=[finding] if name == "paid" else []
        )
        results.append(result.model_copy(update={"config": {**result.config, "cost": cost}}))
    return results


def scenario_regressed() -> list[RunResult]:
    """Twice slower than its baseline: within budget, failed on the regressions; the gate's
    words (issue 18) set by hand: an undecided item and what each check ruled out."""
    base = make_result()
    head = make_result(
        samples=samples_for(
            cold=0.84,
            warm=[(0.100 + 0.005 * i) * 2 for i in range(40)],
            concurrent=[(0.150 + 0.005 * i) * 2 for i in range(40)],
        )
    )
    judged = assess_run(
        make_target(),
        Measurement(list(head.samples), started_at=head.started_at),
        finished_at=head.finished_at,
        stamp_source=StampSource.KERNEL,
        floor=head.floor,
        baseline=BaselinePlan("main/result.json", DEFAULT_LIMIT, {"local": base}),
    )
    meanings = {
        "warm_p95": "PASS rules out 12 % or more of calls over 3 s, after 40 calls",
        "concurrent_p95": "PASS rules out 12 % or more of calls over 3 s, after 40 calls",
    }
    checks = tuple(
        c.model_copy(update={"meaning": meanings.get(c.number, "")}) for c in judged.verdict.checks
    )
    verdict = judged.verdict.model_copy(
        update={
            "checks": checks,
            "undecided": ("error rate regression undecided: 0 of 81 calls failed on both sides",),
        }
    )
    return [judged.model_copy(update={"tool_version": TOOL_VERSION, "verdict": verdict})]


def scenario_llm() -> list[RunResult]:
    """A streamed LLM endpoint asked by --model and --prompt, 30 % slower than its baseline
    (within budget), with a finding: every row of a streamed answer, the comparison and the
    finding on the first screen, the rest folded."""
    base = make_result(stream=True)
    head_samples = samples_for(
        cold=0.55,
        warm=[(0.100 + 0.005 * i) * 1.3 for i in range(40)],
        concurrent=[(0.150 + 0.005 * i) * 1.3 for i in range(40)],
        stream=True,
    )
    target = build_target(
        {
            "url": URL,
            "name": "local",
            "model": "llama-3.1-8b",
            "prompt": "Say hi.",
            "stream": "true",
        }
    )
    judged = assess_run(
        target,
        Measurement(list(head_samples), started_at=base.started_at),
        finished_at=base.finished_at,
        stamp_source=StampSource.KERNEL,
        floor=base.floor,
        baseline=BaselinePlan("main/result.json", DEFAULT_LIMIT, {"local": base}),
    )
    finding = Finding(
        code="slow_first_token",
        title="Slow first token",
        evidence="the first token takes 70 % of the call",
        hint="check for a queue in front of the model",
    )
    return [
        judged.model_copy(
            update={
                "tool_version": TOOL_VERSION,
                "findings": (finding,),
                "config": target.redacted(),
            }
        )
    ]


def _model_arm(per_token: float, seed: int) -> list[Sample]:
    """A streamed model's calls: a first token about 80 ms, then 16-32 tokens (usage reports
    them, with 30 prompt tokens) at about `per_token` each, a little noise on both."""
    rng = random.Random(seed)
    arm = []
    for phase, count in ((CallPhase.COLD, 1), (CallPhase.WARM, 40), (CallPhase.CONCURRENT, 40)):
        for i in range(count):
            tokens = 16 + (i * 7) % 17
            first = 0.080 * math.exp(rng.gauss(0, 0.1))
            latency = first + (tokens - 1) * per_token * math.exp(rng.gauss(0, 0.05))
            sample = ok_sample(phase, i, latency, stream=True)
            arm.append(
                sample.model_copy(
                    update={
                        "tokens": tokens,
                        "input_tokens": 30,
                        "token_events": tokens,
                        "timings": CallTimings(
                            request_sent=0.0002,
                            headers=first * 0.5,
                            first_byte=first * 0.5 + 0.001,
                            first_token=first,
                            last_token=latency - 0.001,
                            last_byte=latency,
                        ),
                    }
                )
            )
    return arm


def _upgrade(head_model: str, base_model: str) -> list[RunResult]:
    """`--model head_model --baseline-model base_model`, priced, the head 40 % slower per token
    at answers of the same lengths: failed on the regressions, said as an upgrade."""
    target = build_target(
        {
            "url": URL,
            "name": "local",
            "model": head_model,
            "baseline-model": base_model,
            "prompt": "Say hi.",
            "stream": "true",
            "price": "0.15/0.60",
        }
    )
    head, base = _model_arm(0.007, seed=1), _model_arm(0.005, seed=2)
    judged = assess_run(
        target,
        Measurement(head, started_at=STARTED_AT, base_samples=base),
        finished_at=STARTED_AT + 12.3,
        stamp_source=StampSource.KERNEL,
        floor=DEFAULT_FLOOR,
    )
    return [judged.model_copy(update={"tool_version": TOOL_VERSION})]


def scenario_upgrade() -> list[RunResult]:
    """A model upgrade in one A/B run: gpt-b against gpt-a, slower per token."""
    return _upgrade("gpt-b", "gpt-a")


HOSTILE_MODEL = "gpt-b</b>|`x` @team ::error::pwned [a](http://e.x)"


def scenario_upgrade_hostile() -> list[RunResult]:
    """The upgrade named by a model whose name is Markdown, HTML, a mention and a workflow
    command: every report shows it as text."""
    return _upgrade(HOSTILE_MODEL, "gpt-a\n::warning::x")


# Ten earlier runs' factors of drift (a log-normal factor per run, tau about 0.08), oldest first.
DRIFT = (1.00, 0.93, 1.06, 1.12, 0.97, 0.90, 1.04, 1.09, 0.95, 1.01)
DAY = 86_400.0


def _scaled(factor: float, *, tail: float = 1.0) -> RunResult:
    """The healthy run scaled by `factor`, its 4 slowest warm calls and concurrent calls
    `tail` times slower (a tail-only change)."""
    warm = [(0.100 + 0.005 * i) * factor * (tail if i >= 36 else 1.0) for i in range(40)]
    concurrent = [(0.150 + 0.005 * i) * factor * (tail if i >= 36 else 1.0) for i in range(40)]
    return make_result(samples=samples_for(cold=0.42 * factor, warm=warm, concurrent=concurrent))


# Budgets near the values, so the charts draw them as their second line.
HISTORY_BUDGET = Budget(max_warm_p95=1.0, max_concurrent_p95=1.0)


def _against_history(head: RunResult, runs: int) -> list[RunResult]:
    """`head` judged against the newest `runs` of ten earlier runs a day apart."""
    earlier = [
        _scaled(factor).model_copy(update={"started_at": head.started_at - (10 - i) * DAY})
        for i, factor in enumerate(DRIFT)
    ]
    plan = HistoryPlan(
        ".latency-history",
        DEFAULT_LIMIT,
        targets={"local": TargetHistory(tuple(reversed(earlier))[:runs], other_settings=1)},
    )
    judged = assess_run(
        make_target(budget=HISTORY_BUDGET),
        Measurement(list(head.samples), started_at=head.started_at),
        finished_at=head.finished_at,
        stamp_source=StampSource.KERNEL,
        floor=head.floor,
        history=plan,
    )
    return [judged.model_copy(update={"tool_version": TOOL_VERSION})]


def scenario_history() -> list[RunResult]:
    """A tail twice as slow against ten earlier runs that drift: warm and concurrent p95 regress
    beyond the runs' spread, within budget; the trend charts."""
    return _against_history(_scaled(1.0, tail=2.0), 10)


def scenario_history_few() -> list[RunResult]:
    """Two earlier runs only: compared with the newest one, and said so; a chart of three."""
    return _against_history(_scaled(1.02), 2)


SCENARIOS: dict[str, Callable[[], list[RunResult]]] = {
    "pass": scenario_pass,
    "fail": scenario_fail,
    "errors": scenario_errors,
    "hostile": scenario_hostile,
    "several": scenario_several,
    "interrupted": scenario_interrupted,
    "nodata": scenario_nodata,
    "priced": scenario_priced,
    "regressed": scenario_regressed,
    "history": scenario_history,
    "history_few": scenario_history_few,
    "llm": scenario_llm,
    "upgrade": scenario_upgrade,
    "upgrade_hostile": scenario_upgrade_hostile,
}
TERMINAL_SCENARIOS = (
    "pass",
    "fail",
    "several",
    "nodata",
    "interrupted",
    "priced",
    "regressed",
    "history",
    "history_few",
    "llm",
    "upgrade",
    "upgrade_hostile",
)
