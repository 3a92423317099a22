"""A/B in one run (issue 21): the base endpoint measured beside the head, interleaved.

Two loopback demo servers are the two arms; each records when every request arrived and was
done, so the order of the calls, the bursts' overlap and their concurrency are read from the
servers' side. Then the credentials rule, the bad inputs (exit 2 before any call), the JSON
shape, and the CLI end to end: a head clearly slower than its base, and two alike.
"""

from __future__ import annotations

import asyncio
import io
import itertools
import json
import re
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner, Result
from conftest import free_port
from machine_pace import queued_seconds
from one_look import one_look
from result_factory import make_result, make_target, samples_for
from script_server import ScriptServer, steady

from latency_gate import action, cli
from latency_gate.action.settings import parse_settings
from latency_gate.assess.budget.gate import Gate
from latency_gate.assess.budget.sampling import SamplingPlan
from latency_gate.assess.compare.baseline import match_baseline
from latency_gate.config import Budget, Target, base_arm, build_target, with_environment_proxy
from latency_gate.config.regression import DEFAULT_LIMIT
from latency_gate.config.targets_file import load_targets
from latency_gate.demo import DemoServer, EndpointSpec, Fault, serve_in_thread
from latency_gate.demo.spec import RequestRecord
from latency_gate.errors import ConfigError
from latency_gate.measure.engine import Measurement, MoreCalls, arm_order, measure
from latency_gate.models import BaselineCheck, CallPhase, RunResult
from latency_gate.report.deltas import baseline_source_markdown
from latency_gate.results.json_file import parse_runs
from latency_gate.run import probe, probe_all

HEAD = EndpointSpec(name="head", latency=0.020, tokens=2, token_interval=0.001)
BASE = EndpointSpec(name="base", latency=0.050, tokens=2, token_interval=0.001)
WARM = 8
CONCURRENCY = 4
# One look of the head: max-calls is a cap, so it holds the first look (tests/one_look.py).
ONE_LOOK = one_look(1 + WARM + CONCURRENCY)


@pytest.fixture
async def arms() -> AsyncIterator[tuple[DemoServer, DemoServer]]:
    async with DemoServer(HEAD) as head, DemoServer(BASE) as base:
        yield head, base


def _target(head: str, base: str, **extra: str) -> Target:
    return build_target(
        {
            "url": head,
            "baseline-url": base,
            "prompt": "Hi",
            "warm-calls": str(WARM),
            "concurrency": str(CONCURRENCY),
            **extra,
        }
    )


def _arrivals(head: Sequence[RequestRecord], base: Sequence[RequestRecord]) -> str:
    """The arms in the order their requests reached the servers: A the head, B the base."""
    seen = [(r.received_ns, "A") for r in head] + [(r.received_ns, "B") for r in base]
    return "".join(arm for _, arm in sorted(seen))


def _thue_morse(calls: int, start: int = 0) -> str:
    return "".join("AB"[bin(n).count("1") % 2] for n in range(start, start + calls))


# --- the order ------------------------------------------------------------------------------


def test_arm_order_is_thue_morse_and_balanced() -> None:
    """Warm calls and bursts follow ABBA BAAB BAAB ABBA: every aligned pair has one call of
    each arm, linear drift cancels over each block of 4 and quadratic drift over each block of
    8, and no arm makes three calls in a row."""
    order = [arm_order(n) for n in range(64)]
    assert "".join("AB"[a] for a in order[:16]) == "ABBABAABBAABABBA"
    assert all(order[i] != order[i + 1] for i in range(0, 64, 2))
    for power, block in ((1, 4), (2, 8)):
        for start in range(0, 64, block):
            sums = [
                sum(n**power for n in range(start, start + block) if order[n] == a) for a in (0, 1)
            ]
            assert sums[0] == sums[1]
    assert all(len({*order[i : i + 3]}) == 2 for i in range(62))
    assert [arm_order(n, arms=1) for n in range(5)] == [0] * 5


@pytest.mark.slow
async def test_calls_interleave_cold_then_warm_in_thue_morse_order_then_bursts(
    arms: tuple[DemoServer, DemoServer],
) -> None:
    """Cold calls head then base, warm calls in Thue-Morse order, then one burst each, head
    first: the order the two servers saw the requests arrive."""
    head, base = arms
    result = await probe(_target(head.url, base.url, **ONE_LOOK), measure_floor=False)
    expected = "AB" + _thue_morse(2 * WARM) + "A" * CONCURRENCY + "B" * CONCURRENCY
    assert _arrivals(head.records, base.records) == expected
    assert len(result.samples) == len(result.base_samples) == 1 + WARM + CONCURRENCY


@pytest.mark.slow
async def test_each_arm_keeps_its_own_connection_for_warm_calls(
    arms: tuple[DemoServer, DemoServer],
) -> None:
    """Each arm's cold call opens a new connection and its warm calls reuse that one, however
    the calls of the two interleave."""
    head, base = arms
    result = await probe(_target(head.url, base.url, **ONE_LOOK), measure_floor=False)
    for server, samples in ((head, result.samples), (base, result.base_samples)):
        sequential = sorted(server.records, key=lambda r: r.received_ns)[: 1 + WARM]
        assert {r.connection for r in sequential} == {sequential[0].connection}
        assert [s.new_connection for s in samples[: 1 + WARM]] == [True] + [False] * WARM


@dataclass
class _Asked:
    """A looks sampler (measure/sampler.py) that answers its steps in turn, then None."""

    steps: Iterator[MoreCalls]

    def next(self, _: object, /) -> MoreCalls | None:
        return next(self.steps, None)


@pytest.mark.slow
async def test_more_looks_extend_both_arms_and_bursts_never_overlap(
    arms: tuple[DemoServer, DemoServer],
) -> None:
    """A look asking for more calls gives each arm the same extra warm calls and bursts, in the
    order carried on from the first look; every burst has all its calls in flight at once (the
    full concurrency) and ends before the next one, of either arm, begins."""
    head, base = arms
    asked = _Asked(iter([MoreCalls(warm_calls=2, bursts=2)]))
    into = Measurement()
    await measure(_target(head.url, base.url), into, more=asked)
    assert len(into.samples) == len(into.base_samples) == 1 + WARM + 2 + 3 * CONCURRENCY
    first_look = "AB" + _thue_morse(2 * WARM) + _bursts_of(_thue_morse(2))
    expected = first_look + _thue_morse(4, start=2 * WARM) + _bursts_of(_thue_morse(4, start=2))
    assert _arrivals(head.records, base.records) == expected
    calls = sorted([*head.records, *base.records], key=lambda r: r.received_ns)
    starts = [len("AB" + _thue_morse(2 * WARM)) + CONCURRENCY * k for k in range(2)]
    starts += [len(first_look) + 4 + CONCURRENCY * k for k in range(4)]
    bursts = [calls[at : at + CONCURRENCY] for at in starts]
    for burst in bursts:
        assert max(r.received_ns for r in burst) < min(r.done_ns or 0 for r in burst)
    for earlier, later in itertools.pairwise(bursts):
        assert max(r.done_ns or 0 for r in earlier) <= min(r.received_ns for r in later)


def _bursts_of(order: str) -> str:
    return "".join(arm * CONCURRENCY for arm in order)


@pytest.mark.slow
async def test_each_call_has_its_own_stamps(arms: tuple[DemoServer, DemoServer]) -> None:
    """The kernel-stamp clock is as good in an A/B run: every warm call of each arm measures
    its own server's time (20 ms for the head, 50 ms for the base) within a few ms.

    The servers stamp in Python on this test's thread, so a wait of that thread for a core
    makes their stamps late, not the probe's (the kernel's): the slack is the time the thread
    waited (tests/machine_pace.py). Beside the whole suite at stop 46 the median error came out
    6.6 ms on a loaded machine; crossed stamps would be 30 ms off on every call."""
    head, base = arms
    queued = queued_seconds()
    result = await probe(_target(head.url, base.url, **ONE_LOOK), measure_floor=False)
    waited = queued_seconds() - queued
    all_errors = []
    for server, samples in ((head, result.samples), (base, result.base_samples)):
        records = sorted(server.records, key=lambda r: r.received_ns)[1 : 1 + WARM]
        warm = [s for s in samples if s.phase is CallPhase.WARM]
        errors = sorted(
            abs((s.latency or 0) - ((r.done_ns or 0) - r.received_ns) / 1e9)
            for s, r in zip(warm, records, strict=True)
        )
        all_errors += errors
        assert errors[len(errors) // 2] < 0.002 + waited / len(errors) * 2, (errors, waited)
        assert errors[-1] < 0.010 + waited, (errors, waited)
    assert sum(all_errors) < 0.002 * len(all_errors) + waited, (all_errors, waited)


async def test_the_budget_judges_the_head_alone() -> None:
    """A base failing every call leaves the head's numbers and budget checks alone: the head
    passes, its error rate is 0, and a base worse than the head is no regression."""
    failing = BASE.model_copy(update={"faults": (Fault(kind="status", status=500),)})
    async with DemoServer(HEAD) as head, DemoServer(failing) as base:
        result = await probe(_target(head.url, base.url, **ONE_LOOK), measure_floor=False)
    assert result.verdict.passed, result.verdict.reasons
    assert result.numbers.error_rate == 0.0
    assert result.base_samples
    assert not any(s.ok for s in result.base_samples)
    assert result.baseline is not None
    assert result.baseline.regressions == ()


@pytest.mark.slow
async def test_an_unreachable_base_stops_the_base_and_says_which_arm() -> None:
    """A base that refuses every connection stops being measured after its first three calls,
    the warning names the base, and the head goes on alone: the budget judges the head alone
    (a stopped base used to stop the whole run and fail the head's budget)."""
    nobody = f"http://127.0.0.1:{free_port()}/v1/chat/completions"
    async with DemoServer(HEAD) as head:
        result = await probe(_target(head.url, nobody), measure_floor=False)
    assert len(result.base_samples) == 3
    assert any(
        w.startswith("stopped after the first 3 calls of the base: all failed to connect")
        and w.endswith("; the head was measured alone")
        for w in result.warnings
    ), result.warnings
    assert result.numbers.concurrent_p95 is not None
    assert result.verdict.passed, result.verdict.reasons


async def test_an_interrupted_ab_run_keeps_both_arms_calls() -> None:
    """Cancelled mid-run, the result holds the calls of both arms finished so far."""
    slow = BASE.model_copy(update={"latency": 0.2})
    async with DemoServer(HEAD) as head, DemoServer(slow) as base:
        task = asyncio.create_task(
            probe_all(
                [_target(head.url, base.url)], progress_for=lambda _: _ignore, measure_floor=False
            )
        )
        for _ in range(200):
            if len(base.records) >= 3:
                break
            await asyncio.sleep(0.02)
        task.cancel()
        (result,) = await asyncio.wait_for(task, 10)
    assert result.interrupted
    assert len(result.samples) >= 2
    assert len(result.base_samples) >= 2


def _ignore(_: object) -> None:
    return None


def test_gate_tests_regressions_against_the_base_arm_given_at_each_look() -> None:
    """Gate.look takes the base arm's samples of an A/B run: a head twice as slow regresses;
    without them (and no baseline run) no regression is tested."""
    base = samples_for(cold=0.1, warm=[0.100 + 0.001 * i for i in range(20)], concurrent=[0.1] * 10)
    head = samples_for(cold=0.2, warm=[0.200 + 0.002 * i for i in range(20)], concurrent=[0.1] * 10)
    gate = Gate(budget=Budget(), plan=SamplingPlan(), limit=DEFAULT_LIMIT)
    gate.look(head, base)
    assert gate.regressions["warm_p95"].value == "regressed"
    alone = Gate(budget=gate.budget, plan=SamplingPlan(), limit=DEFAULT_LIMIT)
    alone.look(head)
    assert alone.regressions == {}


# --- credentials ----------------------------------------------------------------------------

KEY = "sk-head-secret-1234"
BASE_KEY = "sk-base-secret-5678"


def _headers(target: Target) -> dict[str, str]:
    return {name.lower(): value for name, value in target.request_headers()}


def test_same_origin_base_gets_the_heads_credentials() -> None:
    """A base at the same scheme, host and port (another path) gets the head's key and
    headers as they are."""
    target = _target(
        "https://api.example.com/v2/chat/completions",
        "https://API.example.com:443/v1/chat/completions",
        **{"api-key": KEY},
        headers=["X-Team: team-token-99"],  # type: ignore[arg-type]
    )
    sent = _headers(base_arm(target))
    assert sent["authorization"] == f"Bearer {KEY}"
    assert sent["x-team"] == "team-token-99"


def test_other_origin_needs_the_bases_own_credentials() -> None:
    """The head's key is never sent to another host: without base credentials the run is
    refused, naming both origins and what would not be sent."""
    with pytest.raises(ConfigError) as caught:
        _target(
            "https://preview.example.com/v1/chat/completions",
            "https://api.example.com/v1/chat/completions",
            **{"api-key": KEY},
        )
    assert str(caught.value) == (
        "invalid input baseline-url: https://api.example.com:443 is another origin than url "
        "(https://preview.example.com:443), so the head's credentials (the API key) are not sent "
        "there; give the base its own with baseline-api-key or baseline-headers (the same value "
        "again if both take it)"
    )
    assert KEY not in str(caught.value)


def test_other_origin_without_credentials_is_fine() -> None:
    """A head without credentials may be compared with a base anywhere."""
    target = _target("http://127.0.0.1:1/v1/chat/completions", "http://127.0.0.2:1/x")
    assert "authorization" not in _headers(base_arm(target))


def test_base_credentials_replace_the_heads() -> None:
    """With a base key or a secret base header, the base gets those and the head's harmless
    headers, never the head's key or secret headers, at the same origin too."""
    raw = {
        "api-key": KEY,
        "baseline-api-key": BASE_KEY,
        "headers": ["X-Team: team-token-99", "Accept-Language: en"],
        "baseline-headers": ["X-Region: eu"],
    }
    for base_url in ("https://api.example.com/v1", "https://other.example.com/v1"):
        target = _target("https://api.example.com/v2", base_url, **raw)  # type: ignore[arg-type]
        sent = _headers(base_arm(target))
        assert sent["authorization"] == f"Bearer {BASE_KEY}"
        assert sent["accept-language"] == "en"
        assert sent["x-region"] == "eu"
        assert "x-team" not in sent
        assert KEY not in json.dumps(sent)


def test_a_base_header_replaces_the_heads_of_that_name() -> None:
    """A base header of the same name as a head's is sent instead of it."""
    target = _target(
        "http://127.0.0.1:1/x",
        "http://127.0.0.1:1/y",
        headers=["User-Agent: head-agent"],  # type: ignore[arg-type]
        **{"baseline-headers": ["user-agent: base-agent"]},  # type: ignore[arg-type]
    )
    assert [v for n, v in base_arm(target).request_headers() if n.lower() == "user-agent"] == [
        "base-agent"
    ]


async def test_each_server_receives_only_its_own_key() -> None:
    """On the wire: the head server gets the head's key, the base server the base's; neither
    key reaches the other host."""
    head, base = ScriptServer(lambda n: steady(2, 0.001)), ScriptServer(lambda n: steady(2, 0.001))
    await head.start()
    await base.start()
    try:
        target = _target(
            head.url,
            base.url,
            stream="true",
            **{"api-key": KEY, "baseline-api-key": BASE_KEY},
            **ONE_LOOK,
        )
        await probe(target, measure_floor=False)
    finally:
        await head.stop()
        await base.stop()
    assert {r.headers["authorization"] for r in head.requests} == {f"Bearer {KEY}"}
    assert {r.headers["authorization"] for r in base.requests} == {f"Bearer {BASE_KEY}"}
    assert len(head.requests) == len(base.requests) == 1 + WARM + CONCURRENCY


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {"baseline-api-key": BASE_KEY},
            "invalid input baseline-api-key: needs baseline-url or a request of the base's own "
            "(baseline-model, baseline-body, baseline-prompt or baseline-format), the base it is "
            "for",
        ),
        (
            {"baseline-headers": ["X-Region: eu"]},
            "invalid input baseline-headers: needs baseline-url or a request of the base's own "
            "(baseline-model, baseline-body, baseline-prompt or baseline-format), the base it is "
            "for",
        ),
        (
            {"baseline-url": "https://u:p@api.example.com/", "baseline-api-key": BASE_KEY},
            "invalid input baseline-api-key: contradicts the user:password in baseline-url: "
            "give the base's credentials once (drop one of them)",
        ),
        (
            {"baseline-url": "ftp://api.example.com/"},
            "invalid input baseline-url: expected an http:// or https:// URL, got "
            "'ftp://api.example.com/'",
        ),
        (
            {"baseline-url": "https://b.example.com/", "baseline-headers": ["no colon"]},
            "invalid input baseline-headers: expected 'Name: value' with a colon, got 'no …'",
        ),
    ],
)
def test_bad_base_settings_are_named(raw: dict[str, object], message: str) -> None:
    """Each bad base setting is a ConfigError naming it, without its secret."""
    with pytest.raises(ConfigError) as caught:
        build_target({"url": "https://api.example.com/v1", **raw})  # type: ignore[dict-item]
    assert str(caught.value) == message


def test_the_base_gets_the_proxy_the_environment_names_for_its_own_url() -> None:
    """HTTPS_PROXY and NO_PROXY are read for each arm's URL: here the head's host is exempt
    and the base's is not."""
    target = _target("https://preview.internal/v1", "https://api.example.com/v1")
    found = with_environment_proxy(
        target, {"HTTPS_PROXY": "http://proxy.example:3128", "NO_PROXY": ".internal"}
    )
    assert found.proxy is None
    assert found.baseline_proxy == "http://proxy.example:3128"
    assert base_arm(found).proxy == "http://proxy.example:3128"
    explicit = _target("https://a.example/v1", "https://b.example/v1", proxy="http://p.example:1")
    assert base_arm(explicit).proxy == "http://p.example:1"


def test_base_secrets_are_secrets_and_redacted() -> None:
    """The base's key, secret header values and URL query values are among the target's
    secrets (masked, scrubbed) and redacted from its settings."""
    target = _target(
        "https://a.example/v1",
        "https://b.example/v1?sig=query-secret-42",
        **{"baseline-api-key": BASE_KEY, "baseline-headers": ["X-Base: base-header-secret"]},  # type: ignore[arg-type]
    )
    assert {BASE_KEY, "base-header-secret", "query-secret-42"} <= set(target.secrets())
    shown = json.dumps(target.redacted())
    assert not any(s in shown for s in (BASE_KEY, "base-header-secret", "query-secret-42"))
    assert target.redacted()["baseline_url"] == "https://b.example/v1?sig=***"
    assert (
        "baseline_url"
        not in _target("https://a.example/v1", "https://a.example/v")
        .model_copy(update={"baseline_url": None})
        .redacted()
    )


# --- the command line and the action: bad input exits 2 before any call ----------------------

FEW = ["--warm-calls", "8", "--concurrency", "4", "--prompt", "Hi", "--no-floor"]


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli.main, list(args), prog_name="latency-gate")


@pytest.fixture
def servers() -> Iterator[tuple[DemoServer, DemoServer]]:
    with serve_in_thread(HEAD, BASE) as (head, base):
        yield head, base


def test_cli_baseline_and_baseline_url_together_exit_2(
    servers: tuple[DemoServer, DemoServer], tmp_path: Path
) -> None:
    """One comparison per run: --baseline FILE with --baseline-url is refused (exit 2) before
    any call, also when the base URL comes from a targets file."""
    head, base = servers
    done = invoke("probe", head.url, *FEW, "--baseline-url", base.url, "--baseline", "x.json")
    assert done.exit_code == 2, done.output
    assert done.output == (
        "Error: invalid input --baseline-url: give one of --baseline (an earlier run's result), "
        "--baseline-url (a base measured beside the head in this run) and --history, not "
        "--baseline and --baseline-url: a run makes one comparison\n"
    )
    targets = tmp_path / "targets.yml"
    targets.write_text(
        f"targets:\n  - name: head\n    url: {head.url}\n    baseline-url: {base.url}\n"
    )
    done = invoke("probe", "--targets", str(targets), *FEW, "--baseline", "x.json")
    assert done.exit_code == 2
    assert "--baseline-url: give one of --baseline" in done.output
    assert head.records == []
    assert base.records == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--baseline-api-key", BASE_KEY],
            "--baseline-api-key: needs --baseline-url or a request of the base's own",
        ),
        (
            ["--baseline-header", "X-Region: eu"],
            "--baseline-header: needs --baseline-url or a request of the base's own",
        ),
        (
            ["--api-key", KEY, "--baseline-url", "http://localhost:9/v1/chat/completions"],
            "--baseline-url: http://localhost:9 is another origin than URL",
        ),
        (["--baseline-url", "nonsense"], "--baseline-url: expected an http:// or https:// URL"),
        (
            ["--baseline-url", "http://127.0.0.1:9/", "--max-regression", "lots"],
            "--max-regression: expected",
        ),
    ],
)
def test_cli_bad_base_options_exit_2(
    servers: tuple[DemoServer, DemoServer], args: list[str], message: str
) -> None:
    """Each bad base option: exit 2 naming it, no secret in the message, no call made."""
    head, _ = servers
    done = invoke("probe", head.url, *FEW, *args)
    assert done.exit_code == 2, done.output
    assert message in done.output
    assert KEY not in done.output
    assert BASE_KEY not in done.output
    assert head.records == []


def test_targets_file_takes_a_base_per_target(
    servers: tuple[DemoServer, DemoServer], tmp_path: Path
) -> None:
    """`baseline-url:` and `baseline-headers:` (a mapping) per target in a targets file."""
    head, base = servers
    targets = tmp_path / "targets.yml"
    targets.write_text(
        "targets:\n"
        f"  - name: preview\n    url: {head.url}\n    baseline-url: {base.url}\n"
        "    baseline-headers:\n      X-Region: eu\n"
        f"  - name: alone\n    url: {head.url}\n"
    )
    preview, alone = load_targets(targets, environ={})
    assert preview.baseline_url == base.url
    assert [(h.name, h.value.get_secret_value()) for h in preview.baseline_headers] == [
        ("X-Region", "eu")
    ]
    assert alone.baseline_url is None


def _action(env: dict[str, str], workspace: Path) -> tuple[int, str]:
    out = io.StringIO()
    full = {"GITHUB_WORKSPACE": str(workspace), **env}
    code = action.main(full, out=out)
    return code, out.getvalue()


def test_action_baseline_and_baseline_url_together_exit_2(
    servers: tuple[DemoServer, DemoServer], tmp_path: Path
) -> None:
    """The action refuses `baseline` with `baseline-url` (exit 2), having masked the base's
    key first."""
    head, base = servers
    code, log = _action(
        {
            "INPUT_URL": head.url,
            "INPUT_BASELINE-URL": base.url,
            "INPUT_BASELINE": "main.json",
            "INPUT_BASELINE-API-KEY": BASE_KEY,
        },
        tmp_path,
    )
    assert code == 2
    assert log.splitlines()[0] == f"::add-mask::{BASE_KEY}"
    assert "baseline-url: give one of `baseline` (an earlier run's result), `baseline-url`" in log
    assert head.records == []


def test_action_refuses_a_loopback_base_in_its_container(tmp_path: Path) -> None:
    """In the Docker action's container, a loopback base URL is refused like a loopback url."""
    with pytest.raises(ConfigError) as caught:
        parse_settings(
            {"url": "http://172.17.0.1:8080/", "baseline-url": "http://localhost:8081/"},
            tmp_path,
            {},
            in_container=True,
        )
    assert str(caught.value).startswith(
        "invalid input baseline-url: http://localhost:8081/ points at localhost"
    )


@pytest.mark.slow
@pytest.mark.alone  # the first number decided stops the run: under load the burst's came first
def test_action_runs_an_ab_run_with_its_limit(
    servers: tuple[DemoServer, DemoServer], tmp_path: Path
) -> None:
    """The action's A/B run: a head 2.5 times slower than its base (the 50 ms server against
    the 20 ms one) regresses beyond the `max-regression` given."""
    fast, slow = servers
    code, log = _action(
        {
            "INPUT_URL": slow.url,
            "INPUT_BASELINE-URL": fast.url,
            "INPUT_PROMPT": "Hi",
            "INPUT_WARM-CALLS": "8",
            "INPUT_CONCURRENCY": "4",
            "INPUT_MAX-REGRESSION": "50%",
            "INPUT_SUMMARY": "false",
        },
        tmp_path,
    )
    assert code == 1, log
    (result,) = parse_runs((tmp_path / "latency-gate-report/result.json").read_text(), "r")
    assert result.baseline is not None
    assert result.baseline.max_relative == 0.5
    assert result.baseline.kind == "side-by-side"
    assert "warm_p95" in {d.number for d in result.baseline.regressions}


# --- end to end: the verdict, the JSON, the reports -----------------------------------------

ALIKE = EndpointSpec(
    name="alike", latency=0.040, jitter=0.05, seed=5, tokens=3, token_interval=0.001
)


@pytest.mark.slow
def test_cli_head_clearly_slower_than_its_base_regresses(tmp_path: Path) -> None:
    """The head answering in twice its base's time: exit 1, the latency first decided named as
    a regression (the run stops there: it fails whatever more calls show), both arms in the
    JSON result, the reports saying side by side.

    The warm p95 is decided first on a quiet machine; beside a CPU burner and the suite's other
    workers (stop 48) the burst's p95 was decided first once (67 ms -> 118 ms) and the run
    stopped there, which is the gate working: either names the slower head."""
    slower = ALIKE.model_copy(update={"latency": 0.080, "seed": 6})
    with serve_in_thread(slower, ALIKE) as (head, base):
        base_url = base.url
        done = invoke(
            "probe",
            head.url,
            *FEW,
            "--baseline-url",
            f"{base.url}?sig=query-secret-42",
            "--json",
            str(tmp_path / "r.json"),
            "--markdown",
            str(tmp_path / "r.md"),
        )
    assert done.exit_code == 1, done.output
    first = done.stdout.split(" ", 4)[:4]
    assert first[:2] == ["FAIL:", "regression:"], done.stdout
    assert " ".join(first[2:]) in ("warm p95", "concurrent p95"), done.stdout
    result = RunResult.model_validate_json((tmp_path / "r.json").read_text())
    assert result.baseline is not None
    assert result.baseline.kind == "side-by-side"
    regressed = {d.number for d in result.baseline.regressions}
    assert regressed & {"warm_p95", "concurrent_p95"}, regressed
    assert regressed <= {"warm_p50", "warm_p95", "concurrent_p95"}, regressed
    assert len(result.base_samples) == len(result.samples)
    markdown = (tmp_path / "r.md").read_text()
    assert (
        f"Baseline: the base endpoint `{base_url}?sig=***`, measured side by side with the head "
        "in this run (the same request, the calls of the two interleaved)."
    ) in markdown
    assert "- Against the baseline, measured side by side in this run: " in markdown
    assert "query-secret-42" not in markdown + (tmp_path / "r.json").read_text() + done.output


@pytest.mark.slow
def test_every_budget_off_still_tests_the_default_numbers(tmp_path: Path) -> None:
    """A run that only compares (every budget off) is still asked "slower?": the default
    budget's numbers are tested, and a head twice as slow as its base fails the run."""
    slower = ALIKE.model_copy(update={"latency": 0.080, "seed": 6})
    off = ("--max-warm-p95", "off", "--max-concurrent-p95", "off", "--max-error-rate", "off")
    with serve_in_thread(slower, ALIKE) as (head, base):
        done = invoke(
            "probe",
            head.url,
            *FEW,
            *off,
            "--baseline-url",
            base.url,
            "--json",
            str(tmp_path / "r.json"),
        )
    assert done.exit_code == 1, done.output
    result = RunResult.model_validate_json((tmp_path / "r.json").read_text())
    assert result.baseline is not None
    tested = {d.number for d in result.baseline.deltas if d.outcome is not None}
    assert tested == {"warm_p95", "concurrent_p95", "error_rate"}
    assert "warm_p95" in {d.number for d in result.baseline.regressions}


@pytest.mark.slow
def test_cli_two_alike_endpoints_do_not_regress(tmp_path: Path) -> None:
    """Two endpoints of the same behaviour (the same service time and jitter, other seeds):
    exit 0, no number called a regression (one the calls could not decide is said so, never
    "no number regressed")."""
    twin = ALIKE.model_copy(update={"seed": 7})
    with serve_in_thread(ALIKE, twin) as (head, base):
        done = invoke("probe", head.url, *FEW, "--baseline-url", base.url)
    assert done.exit_code == 0, done.output
    said = re.search(
        r"against the base measured beside it: (no number regressed|\d+ numbers? undecided \()",
        " ".join(done.output.split()),
    )
    assert said is not None, done.output


@pytest.mark.slow
def test_the_json_holds_both_arms_and_validates(tmp_path: Path) -> None:
    """The JSON result of an A/B run: base_samples, the check's kind and redacted source, the
    base's redacted settings; it validates against the published schema."""
    with serve_in_thread(HEAD, BASE) as (head, base):
        base_url = base.url
        done = invoke(
            "probe",
            head.url,
            *FEW,
            *("--max-calls", str(1 + 8 + 4), "--on-undecided", "pass"),
            *("--baseline-url", base_url, "--json", str(tmp_path / "r.json")),
        )
    assert done.exit_code == 0, done.output
    data = json.loads((tmp_path / "r.json").read_text())
    schema = json.loads((Path(__file__).parent.parent / "docs" / "json-schema.json").read_text())
    jsonschema.validate(data, schema)
    assert len(data["base_samples"]) == 1 + 8 + 4
    assert data["baseline"]["kind"] == "side-by-side"
    assert data["baseline"]["source"] == base_url
    assert data["config"]["baseline_url"] == base_url
    assert data["config"]["baseline_api_key"] is None
    assert [d["base"] is not None for d in data["baseline"]["deltas"]] == [True] * 5


def test_result_files_of_the_old_shape_still_load() -> None:
    """A result written before A/B runs (no base_samples, no baseline kind) loads, as an
    earlier run's comparison with no base arm."""
    old = json.loads(make_result().model_dump_json())
    old.pop("base_samples")
    old["baseline"] = {"status": "missing", "source": "main.json", "message": "no file"}
    (loaded,) = parse_runs(json.dumps(old), "old.json")
    assert loaded.base_samples == ()
    assert loaded.baseline is not None
    assert loaded.baseline.kind == "earlier-run"


def test_an_ab_result_is_a_baseline_for_a_plain_run() -> None:
    """Where an A/B run's base was is not what its head measured: its result file compares
    with a plain run of the same head."""
    plain = make_target()
    ab = make_result().model_copy(
        update={
            "config": {
                **plain.redacted(),
                "baseline_url": "https://prod.example/v1",
                "baseline_api_key": "***",
                "baseline_headers": [],
                "baseline_proxy": None,
            }
        }
    )
    assert match_baseline([plain], [ab], "--baseline")[plain.name] is ab


def test_side_by_side_source_is_a_code_span_whatever_it_holds() -> None:
    """The base URL goes in a code span with a fence longer than any backtick run in it; an
    earlier run's file stays escaped prose."""
    check = BaselineCheck(status="compared", kind="side-by-side", source="http://h/a`b``c")
    assert baseline_source_markdown(check).startswith("the base endpoint ```http://h/a`b``c```,")
    assert baseline_source_markdown(check.model_copy(update={"kind": "earlier-run"})) == (
        "http://h/a\\`b\\`\\`c; one earlier run: drift between runs is not accounted for (the "
        "endpoint's load, the network or the runner moving between the two reads as a change; "
        "--baseline-url or --history account for it)"
    )


@pytest.mark.slow
async def test_a_proxy_on_one_arm_only_is_said(arms: tuple[DemoServer, DemoServer]) -> None:
    """When the environment's proxy covers one arm's URL and not the other's, the result warns
    that its hop is in one arm of the comparison only."""
    head, _ = arms
    nowhere = f"http://127.0.0.1:{free_port()}"
    target = with_environment_proxy(
        _target(head.url, "http://base.example/v1/chat/completions"),
        {"HTTP_PROXY": nowhere, "NO_PROXY": "127.0.0.1"},
    )
    result = await probe(target, measure_floor=False)
    assert (
        "only the base's calls went through a proxy (the environment's, for its URL): its hop "
        "is in one arm of the comparison only"
    ) in result.warnings


async def test_wait_ready_waits_for_both_arms_and_says_which_never_answered() -> None:
    """--wait-ready polls each arm's URL; a base still answering 503 at the deadline is
    probed anyway, and the result says so."""
    head = ScriptServer(lambda n: steady(2, 0.001))
    loading = ScriptServer(lambda n: steady(2, 0.001), ready_at=float("inf"))
    await head.start()
    await loading.start()
    try:
        target = _target(head.url, loading.url, stream="true", **{"wait-ready": "0.5s"})
        result = await probe(target.model_copy(update={"max_calls": 1}), measure_floor=False)
    finally:
        await head.stop()
        await loading.stop()
    assert result.ready_after is not None
    assert "the base did not answer within --wait-ready 0.5 s; probed anyway" in result.warnings
    assert {s.status for s in result.base_samples} == {503}
