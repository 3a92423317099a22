"""The cost of an answer beside its latency (issue 41, item 5): --price and --baseline-price.

The arithmetic with exact numbers first, then the prices read (and refused) from every edge,
the prompt's tokens read from each format's usage, and the CLI end to end against loopback
demo endpoints that report usage (or do not).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from latency_gate import cli
from latency_gate.action.settings import parse_settings
from latency_gate.assess.compare.cost import arm_cost, cost_ratio
from latency_gate.config import Format, build_target
from latency_gate.config.price import Price, parse_price
from latency_gate.demo import EndpointSpec, serve_in_thread
from latency_gate.errors import ConfigError
from latency_gate.measure.streams import StreamParser
from latency_gate.models import CallPhase, Sample

PRICE = Price(input=0.15, output=0.60)
# t(0.975) with 1 degree of freedom, to 9 digits.
T_975_1 = 12.706204736


def answer(output: int, prompt: int | None = 34, source: str = "usage", ok: bool = True) -> Sample:
    return Sample(
        phase=CallPhase.WARM,
        index=0,
        started_at=0.0,
        ok=ok,
        latency=0.1 if ok else None,
        tokens=output,
        tokens_source="usage" if source == "usage" else "deltas",
        input_tokens=prompt,
    )


# --- the arithmetic ---------------------------------------------------------------------------


def test_an_answer_costs_its_input_and_output_tokens_at_their_prices() -> None:
    """34 prompt and 16 answer tokens at $0.15/$0.60 per 1M: $0.0000147 an answer, $0.0147 per
    1,000; every answer alike, so the interval is the mean itself."""
    cost = arm_cost([answer(16)] * 4, PRICE)
    assert cost.per_answer == pytest.approx(14.7e-6, rel=1e-12)
    assert cost.per_1000_calls == pytest.approx(14.7e-3, rel=1e-12)
    assert cost.per_answer_interval == pytest.approx((14.7e-6, 14.7e-6), rel=1e-12)
    assert (cost.answers, cost.output_tokens, cost.input_tokens, cost.input_reported) == (
        4,
        16.0,
        34.0,
        4,
    )
    assert cost.output_from == "usage"


def test_the_cost_per_answer_interval_is_students_t_on_the_mean() -> None:
    """Answers of 10 and 20 tokens at $1 a token: mean $15, 95 % t interval 15 +- 12.706 x 5,
    its low end held at $0."""
    cost = arm_cost([answer(10, None), answer(20, None)], Price(input=0, output=1e6))
    assert cost.per_answer == 15.0
    assert cost.per_answer_interval == pytest.approx((0.0, 15 + T_975_1 * 5), rel=1e-8)
    assert cost.per_1000_calls_interval == pytest.approx((0.0, 1000 * (15 + T_975_1 * 5)))


def test_the_ratio_of_a_head_with_answers_60_percent_longer_at_the_same_price() -> None:
    """16 against 10 answer tokens, 34 prompt tokens each: x1.6 on the output side, x(14.7 /
    11.1) on the whole answer, and the reason names the length at the same price."""
    ratio = cost_ratio([answer(16)] * 5, PRICE, [answer(10)] * 5, PRICE)
    assert ratio is not None
    assert ratio.ratio == pytest.approx(14.7 / 11.1, rel=1e-12)
    assert ratio.output_ratio == pytest.approx(1.6, rel=1e-12)
    assert ratio.interval == pytest.approx((14.7 / 11.1, 14.7 / 11.1), rel=1e-12)
    assert ratio.input_counted is True
    assert ratio.reason == "answers 60 % longer at the same price"


def test_the_ratio_interval_is_the_delta_method_on_its_log() -> None:
    """A head of $2 and $4 answers against a base of $1 ones: ratio 3, log's standard error
    sqrt(2 / (2 x 9)) = 1/3 on 1 degree of freedom (Welch's, the base adding nothing)."""
    unit = Price(input=0, output=1e6)
    ratio = cost_ratio([answer(2, None), answer(4, None)], unit, [answer(1, None)] * 4, unit)
    assert ratio is not None
    assert ratio.ratio == 3.0
    half = T_975_1 / 3
    assert ratio.interval == pytest.approx((3 * math.exp(-half), 3 * math.exp(half)), rel=1e-8)
    assert ratio.input_counted is False
    assert ratio.reason == (
        "answers 200 % longer at the same price (output tokens alone: an arm's input tokens "
        "were not reported)"
    )


def test_a_dearer_base_is_named_by_its_price() -> None:
    """The same answers at another price: the reason names both prices, not a length."""
    ratio = cost_ratio([answer(10)] * 3, PRICE, [answer(10)] * 3, Price(input=0.3, output=1.2))
    assert ratio is not None
    assert ratio.ratio == pytest.approx(0.5, rel=1e-12)
    assert ratio.reason == (
        "answers of the same length at $0.15/$0.6 per 1M tokens in/out against "
        "$0.3/$1.2 per 1M tokens in/out"
    )


def test_input_not_reported_for_every_answer_is_not_counted() -> None:
    """One answer without a prompt count: the arm's input cost is left out, and counted as so;
    a failed call and a call with no token count are not priced."""
    no_count = answer(5).model_copy(update={"tokens": None, "tokens_source": None})
    cost = arm_cost([answer(10), answer(10, None), answer(3, ok=False), no_count], PRICE)
    assert (cost.answers, cost.unpriced, cost.input_tokens, cost.input_reported) == (2, 1, None, 1)
    assert cost.per_answer == pytest.approx(10 * 0.6e-6, rel=1e-12)


# --- the prices read --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [("0.15/0.60", Price(input=0.15, output=0.6)), ("$3/$15", Price(input=3, output=15))],
)
def test_a_price_is_two_numbers_split_by_a_slash(text: str, expected: Price) -> None:
    """IN/OUT, dollars per million tokens, a $ allowed before each."""
    assert parse_price(text) == expected


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"price": "-1/2"}, "invalid input --price: '-1/2': a price cannot be negative"),
        (
            {"price": "0.15"},
            "invalid input --price: '0.15': expected two prices in dollars per million "
            "tokens, input/output, such as 0.15/0.60",
        ),
        (
            {"price": "1/2", "baseline-price": "1/2"},
            "invalid input --baseline-price: needs a base to price: --baseline-url, measured "
            "beside the head",
        ),
        (
            {"baseline-price": "1/2", "baseline-url": "http://127.0.0.1:9/"},
            "invalid input --baseline-price: needs --price, the head's price",
        ),
    ],
)
def test_bad_prices_are_refused_naming_the_input(raw: dict[str, str], message: str) -> None:
    """A negative price, one number, a base price with no base or no head price."""
    with pytest.raises(ConfigError) as caught:
        build_target({"url": "http://127.0.0.1:9/", **raw}, lambda key: f"--{key}")
    assert str(caught.value) == message


def test_the_action_reads_its_price_inputs(tmp_path: Path) -> None:
    """`price` and `baseline-price` are action inputs."""
    settings = parse_settings(
        {
            "url": "http://127.0.0.1:9/v1/chat/completions",
            "baseline-url": "http://127.0.0.1:8/v1/chat/completions",
            "price": "0.15/0.60",
            "baseline-price": "2.50/10",
        },
        tmp_path,
        {},
    )
    assert settings.target.price == Price(input=0.15, output=0.6)
    assert settings.target.baseline_price == Price(input=2.5, output=10)


def test_the_action_refuses_a_bad_price_by_its_input_name(tmp_path: Path) -> None:
    """A price that is not two numbers: exit-2 input error naming `price`."""
    with pytest.raises(ConfigError) as caught:
        parse_settings({"url": "http://127.0.0.1:9/", "price": "cheap"}, tmp_path, {})
    assert str(caught.value).startswith("invalid input price: 'cheap': expected two prices")


def test_a_price_is_no_setting_a_baseline_compares() -> None:
    """A run priced compares with one not: the price is in the settings, not the comparable."""
    target = build_target({"url": "http://127.0.0.1:9/", "price": "1/2"})
    assert target.redacted()["price"] == {"input": 1.0, "output": 2.0}
    assert "price" not in target.comparable()
    assert "price" not in build_target({"url": "http://127.0.0.1:9/"}).redacted()


# --- the prompt's tokens, from each format's usage ----------------------------------------------


def _parsed(fmt: Format, body: bytes, content_type: str) -> int | None:
    parser = StreamParser(fmt, content_type=content_type)
    parser.feed(body)
    return parser.finish(body_complete=True).input_tokens


def test_each_format_reports_the_prompts_tokens_from_its_usage() -> None:
    """prompt_tokens (chat), input_tokens (Responses, Anthropic's message_start in a stream)."""
    chat = {
        "choices": [{"index": 0, "message": {"content": "hi"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 1},
    }
    responses = {
        "status": "completed",
        "output": [{"type": "message", "content": [{"type": "output_text", "text": "hi"}]}],
        "usage": {"input_tokens": 8, "output_tokens": 1},
    }
    anthropic = "".join(
        f"event: {name}\ndata: {json.dumps(data)}\n\n"
        for name, data in (
            ("message_start", {"type": "message_start", "message": {"usage": {"input_tokens": 9}}}),
            (
                "content_block_delta",
                {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "hi"}},
            ),
            (
                "message_delta",
                {"type": "message_delta", "delta": {"stop_reason": "end"}, "usage": {}},
            ),
            ("message_stop", {"type": "message_stop"}),
        )
    )
    document = "application/json"
    assert _parsed(Format.OPENAI_CHAT, json.dumps(chat).encode(), document) == 7
    assert _parsed(Format.OPENAI_RESPONSES, json.dumps(responses).encode(), document) == 8
    assert _parsed(Format.ANTHROPIC, anthropic.encode(), "text/event-stream") == 9
    chat["usage"] = {"completion_tokens": 1}
    assert _parsed(Format.OPENAI_CHAT, json.dumps(chat).encode(), document) is None


# --- the CLI, end to end ----------------------------------------------------------------------

HEAD = EndpointSpec(name="head", latency=0.005, tokens=16, token_interval=0.0005)
BASE = EndpointSpec(name="base", latency=0.005, tokens=10, token_interval=0.0005)
QUICK = ("--stream", "--prompt", "Hi", "--warm-calls", "4", "--concurrency", "2")
ONE_LOOK = ("--max-calls", "7", "--on-undecided", "pass", "--no-floor")


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli.main, list(args), prog_name="latency-gate")


@pytest.fixture(scope="module")
def arms() -> Iterator[tuple[str, str, str]]:
    with serve_in_thread(HEAD, BASE, HEAD.model_copy(update={"usage_chunk": False})) as servers:
        head, base, unreported = servers
        yield head.url + HEAD.path, base.url + BASE.path, unreported.url + HEAD.path


def test_cli_compares_the_cost_per_answer_of_head_and_base(
    arms: tuple[str, str, str], tmp_path: Path
) -> None:
    """--price 0.15/0.60 --baseline-price 0.15/0.60, answers 60 % longer on the head: x1.60 on
    the output side, the whole answer's ratio and reason said first; the verdict is the
    latency's alone."""
    head, base, _ = arms
    out = tmp_path / "result.json"
    result = invoke(
        "probe", head, "--baseline-url", base, *QUICK, *ONE_LOOK,
        "--price", "0.15/0.60", "--baseline-price", "0.15/0.60", "--json", str(out),
    )  # fmt: skip
    assert result.exit_code in (0, 1), result.output
    run = json.loads(out.read_text())
    cost = run["cost"]
    assert cost["ratio"]["output_ratio"] == pytest.approx(1.6)
    assert cost["ratio"]["reason"] == "answers 60 % longer at the same price"
    assert cost["base_priced_at"] == "baseline-price"
    assert cost["head"]["output_tokens"] == 16
    assert cost["base"]["output_tokens"] == 10
    prompt = cost["head"]["input_tokens"]
    assert prompt == cost["base"]["input_tokens"]
    assert prompt > 0
    ratio = (prompt * 0.15 + 16 * 0.6) / (prompt * 0.15 + 10 * 0.6)
    assert cost["ratio"]["ratio"] == pytest.approx(ratio)
    assert f"cost: the head costs x{ratio:.2f} per answer (x{ratio:.2f} to x{ratio:.2f}): " in (
        result.output
    )
    assert "output alone x1.60 (x1.60 to x1.60)" in result.output
    assert not any("cost" in reason for reason in run["verdict"]["reasons"])


def test_cli_says_when_the_server_reports_no_usage(
    arms: tuple[str, str, str], tmp_path: Path
) -> None:
    """No usage chunk: output tokens counted from the stream, the input cost not counted, both
    said; the cost is output tokens x the output price."""
    _, _, unreported = arms
    out = tmp_path / "result.json"
    result = invoke(
        "probe", unreported, *QUICK, *ONE_LOOK, "--price", "0.15/0.60", "--json", str(out)
    )
    assert result.exit_code == 0, result.output
    head = json.loads(out.read_text())["cost"]["head"]
    assert (head["output_from"], head["input_tokens"], head["input_reported"]) == (
        "deltas",
        None,
        0,
    )
    assert head["per_answer"] == pytest.approx(16 * 0.6e-6)
    assert "cost: $0.00000960 an answer ($0.00000960 to $0.00000960), $0.00960 per 1,000 calls" in (
        result.output
    )
    assert (
        "input tokens reported for 0 of 7 answers: the input cost is not counted" in result.output
    )
    assert "no usage reported: output tokens counted from the stream's deltas" in result.output


def test_cli_refuses_a_base_price_with_no_base() -> None:
    """--baseline-price without a base: exit 2 before any call, naming the option."""
    result = invoke(
        "probe", "http://127.0.0.1:9/", "--price", "1/2", "--baseline-price", "1/2", "--no-floor"
    )
    assert result.exit_code == 2
    assert "--baseline-price: needs a base to price" in result.output


def test_cli_refuses_a_negative_price() -> None:
    """--price -1/2: exit 2, naming --price."""
    result = invoke("probe", "http://127.0.0.1:9/", "--price", "-1/2", "--no-floor")
    assert result.exit_code == 2
    assert "invalid input --price: '-1/2': a price cannot be negative" in result.output


def test_targets_side_by_side_are_ordered_by_their_cost_per_answer(
    arms: tuple[str, str, str], tmp_path: Path
) -> None:
    """A targets file's `price`: each target's cost per answer shown, the cheapest within
    budget named by it, whatever the file's order."""
    head, base, _ = arms
    targets = tmp_path / "targets.yaml"
    targets.write_text(
        "defaults:\n  stream: true\n  prompt: Hi\n  warm-calls: 4\n  concurrency: 2\n"
        "  max-calls: 7\n  on-undecided: pass\n"
        f"targets:\n  - name: dear\n    url: {head}\n    price: 2.50/10\n"
        f"  - name: cheap\n    url: {base}\n    price: 0.15/0.60\n"
    )
    out = tmp_path / "result.json"
    result = invoke("probe", "--targets", str(targets), "--no-floor", "--json", str(out))
    assert result.exit_code == 0, result.output
    runs = {run["target"]: run for run in json.loads(out.read_text())["runs"]}
    cheap = runs["cheap"]["cost"]["head"]["per_answer"]
    dear = runs["dear"]["cost"]["head"]["per_answer"]
    assert cheap < dear
    assert "Cheapest within budget: cheap ($" in result.output
    assert "dear ($" in result.output
    assert "an answer) costs more than cheap" in result.output
    assert "cost of cheap: $" in result.output
    assert "cost of dear: $" in result.output
