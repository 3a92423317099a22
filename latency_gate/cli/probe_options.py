"""`probe`'s options: what each declares, and the headings its `--help` lists them under.

The URL, the request's own options (`endpoint_options`, shared with `quick`) and `--verbose` are
declared in cli/app.py; the rest of `probe`'s are here, in the order `--help` lists them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

from latency_gate.cli.app import FilePath, setting_flag

__all__ = ["PROBE_OPTION_GROUPS", "probe_options"]

_Command = TypeVar("_Command", bound=Callable[..., object])

# `probe --help` by purpose (cli/grouped_help.py); an option named in no group is listed last.
PROBE_OPTION_GROUPS = (
    (
        "Request: what each call sends",
        (
            "method",
            "headers",
            "body",
            "api_key",
            "model",
            "prompt",
            "format",
            "stream",
            "max_tokens",
            "token_limit_field",
            "vary_prompt",
            "fixed_length",
            "http2",
            "proxy",
            "timeout",
            "ca_bundle",
            "insecure",
            "follow_redirects",
        ),
    ),
    (
        "Budgets (off turns a default one off)",
        (
            "max_cold_start",
            "max_warm_p50",
            "max_warm_p95",
            "max_concurrent_p95",
            "max_error_rate",
            "max_ttft_p95",
            "max_tpot_p95",
        ),
    ),
    (
        "How many calls, and when",
        (
            "idle",
            "wait_ready",
            "warm_calls",
            "concurrency",
            "fresh_connections",
            "max_calls",
            "max_time",
            "on_undecided",
            "no_floor",
        ),
    ),
    (
        "Comparisons: against a base, an earlier run or main's history",
        (
            "baseline_url",
            "baseline_model",
            "baseline_body",
            "baseline_prompt",
            "baseline_format",
            "baseline_api_key",
            "baseline_headers",
            "baseline_path",
            "history_path",
            "history_size",
            "history_append",
            "history_keep",
            "max_regression",
            "on_undecided_regression",
        ),
    ),
    (
        "Cost: what an answer's tokens cost (reported, never gated)",
        ("price", "baseline_price"),
    ),
    (
        "Load search: calls at once, requests a second",
        (
            "capacity",
            "capacity_max",
            "min_capacity",
            "rate",
            "arrivals",
            "rate_for",
            "goodput",
            "min_rate",
            "goodput_time",
        ),
    ),
    (
        "Targets and reports",
        ("targets_path", "name", "label", "json_path", "markdown_path", "verbose", "help"),
    ),
)

# The budgets (config/build.py's BUDGET_KEYS): the option, its value, what it holds, its default.
_BUDGETS = (
    ("--max-cold-start", "DURATION", "cold start", "not gated"),
    ("--max-warm-p50", "DURATION", "warm p50", "not gated"),
    ("--max-warm-p95", "DURATION", "warm p95", "3s"),
    ("--max-concurrent-p95", "DURATION", "concurrent p95", "3s"),
    ("--max-error-rate", "SHARE", "the error rate", "0.01"),
    ("--max-ttft-p95", "DURATION", "first-token p95", "not gated"),
    (
        "--max-tpot-p95",
        "DURATION",
        "the p95 of warm streamed calls' time per output token",
        "not gated",
    ),
)

# The options in the order they are declared (click lists them so under each heading).
_PROBE_OPTIONS = (
    click.option(
        "--idle",
        metavar="DURATION",
        help="Seconds to wait before the cold call, e.g. 60s [default: 0].",
    ),
    click.option(
        "--wait-ready",
        metavar="DURATION",
        help="Before the cold call, wait up to this long for the endpoint to answer [default: 0].",
    ),
    click.option(
        "--vary-prompt/--same-prompt",
        default=None,
        help="Make each call's prompt unique, of the same length [default: vary].",
    ),
    setting_flag(
        "--fixed-length",
        help="Ask for answers of exactly --max-tokens (ignore_eos and min_tokens, as llama.cpp and "
        "vLLM take them; openai-chat only), and say whether the server obliged.",
    ),
    click.option("--warm-calls", metavar="N", help="Sequential warm calls [default: 20]."),
    click.option("--concurrency", metavar="N", help="Calls started together [default: 10]."),
    click.option(
        "--max-calls",
        metavar="N|auto",
        help="Cap on all calls when undecided checks take more calls or bursts, or auto "
        "[default: auto: what the checks can need, 500 with the default budgets].",
    ),
    click.option(
        "--max-time",
        metavar="DURATION",
        help="No new call after this long from the cold call, e.g. 60s; what is undecided then "
        "follows --on-undecided [default: no limit].",
    ),
    click.option(
        "--on-undecided",
        metavar="POLICY",
        help="estimate, fail or pass: how a check still undecided at the cap is decided "
        "[default: estimate: by its value over every call].",
    ),
    click.option(
        "--on-undecided-regression",
        metavar="POLICY",
        help="pass or fail: whether a regression still undecided at the cap fails the run "
        "[default: pass, with a warning].",
    ),
    setting_flag(
        "--capacity",
        help="After the run, search the most calls at once whose concurrent p95 holds its budget.",
    ),
    click.option(
        "--capacity-max", metavar="N", help="The most calls at once the search tries [default: 64]."
    ),
    click.option(
        "--min-capacity",
        metavar="N",
        help="Fail when the capacity found is lower; implies --capacity [default: not gated].",
    ),
    click.option(
        "--rate",
        metavar="RATE",
        help="After the run, calls arriving at this rate (5/s, 300/min), open-loop, each timed "
        "from when it was due; fail when their p95 breaks --max-concurrent-p95.",
    ),
    click.option(
        "--arrivals",
        metavar="KIND",
        help="poisson or constant: the gaps between calls at a rate [default: poisson].",
    ),
    click.option(
        "--rate-for",
        metavar="N|DURATION|auto",
        help="The most one level at a rate lasts: calls (200) or a duration (60s) [default: auto: "
        "90 budgets of time after a warm-up of 3, longer at rates too low for 130 calls in them, "
        "at most 1,000 calls].",
    ),
    setting_flag(
        "--goodput",
        help="After the run, search the highest rate whose p95 from due holds "
        "--max-concurrent-p95: rates doubled, then bisected; levels near the budget make it an "
        "interval.",
    ),
    click.option(
        "--min-rate",
        metavar="RATE",
        help="Gate the goodput on this rate (5/s): PASS when a rate at or above it held, FAIL when "
        "one at or under it broke, else on-undecided decides; implies --goodput [default: not "
        "gated].",
    ),
    click.option(
        "--goodput-time",
        metavar="DURATION|auto",
        help="The most time the calls at a rate may take; each level is fitted to it, as to "
        "--max-calls [default: auto: their worst case].",
    ),
    setting_flag(
        "--fresh-connections",
        help="Open the burst's connections inside the burst (measures handshakes too).",
    ),
    *(
        click.option(name, metavar=metavar, help=f"Budget for {what} [default: {default}].")
        for name, metavar, what, default in _BUDGETS
    ),
    click.option(
        "--name", metavar="NAME", help="A name for the target in reports [default: endpoint]."
    ),
    click.option(
        "--json", "json_path", type=FilePath(dir_okay=False), help="Write the JSON result."
    ),
    click.option(
        "--markdown", "markdown_path", type=FilePath(dir_okay=False), help="Write the report."
    ),
    click.option("--no-floor", is_flag=True, help="Skip measuring the gate's own floor."),
    click.option(
        "--targets",
        "targets_path",
        type=FilePath(dir_okay=False),
        help="A YAML, TOML or JSON file of several targets, cheapest first (instead of URL).",
    ),
    click.option(
        "--baseline",
        "baseline_path",
        metavar="FILE",
        help="An earlier run's JSON result to compare with.",
    ),
    click.option(
        "--baseline-url",
        metavar="URL",
        help="A base endpoint to measure beside URL in this run, calls interleaved, and compare "
        "with (A/B); instead of --baseline.",
    ),
    click.option(
        "--baseline-model",
        metavar="NAME",
        help="A base asked the head's request with this model instead (A/B; at --baseline-url, "
        "or URL when that is not given).",
    ),
    click.option(
        "--baseline-body",
        metavar="TEXT|JSON|@FILE",
        help="The base's own request body (A/B; at --baseline-url, or URL).",
    ),
    click.option(
        "--baseline-prompt",
        metavar="TEXT",
        help="The base's own prompt, in its body (A/B; at --baseline-url, or URL).",
    ),
    click.option(
        "--baseline-format",
        metavar="FORMAT",
        help="The base's format, its body built for it: openai-chat, openai-responses, "
        "anthropic or raw (A/B; at --baseline-url, or URL).",
    ),
    click.option(
        "--baseline-api-key",
        metavar="KEY",
        envvar="LATENCY_GATE_BASELINE_API_KEY",
        show_envvar=True,
        help="API key for the base; a base at another origin than URL never gets --api-key.",
    ),
    click.option(
        "--baseline-header",
        "baseline_headers",
        metavar="'NAME: VALUE'",
        multiple=True,
        help="'Name: value' for the base alone (repeatable), replacing a -H of that name.",
    ),
    click.option(
        "--max-regression",
        metavar="LIMIT",
        help="How much worse a number may get against --baseline, --baseline-url or --history: "
        "20%, 200ms or 20%,200ms [default: 10%].",
    ),
    click.option(
        "--history",
        "history_path",
        type=FilePath(file_okay=False),
        help="A folder of earlier results of this target (main's runs): the run is judged against "
        "their spread (instead of --baseline).",
    ),
    click.option(
        "--history-size", metavar="N", help="The newest runs of --history used [default: 10]."
    ),
    click.option(
        "--history-append",
        metavar="auto|true|false",
        help="auto, true or false: write this run's result into --history afterwards "
        "[default: auto: a push, schedule or dispatch of GitHub Actions' default branch, never a "
        "pull request's].",
    ),
    click.option(
        "--history-keep",
        metavar="N",
        help="Files of ours kept in --history after appending [default: 50].",
    ),
    click.option(
        "--label",
        metavar="LABEL",
        envvar="LATENCY_GATE_LABEL",
        show_envvar=True,
        help="Where this ran (runner, region): names the run's column when results are merged.",
    ),
)


# What the answers cost (config/price.py).
_PRICE_OPTIONS = (
    click.option(
        "--price",
        metavar="IN/OUT",
        help="Dollars per million input and output tokens (0.15/0.60): the report gives the cost "
        "per answer and per 1,000 calls [default: not priced].",
    ),
    click.option(
        "--baseline-price",
        metavar="IN/OUT",
        help="The base's price, as --price; the cost per answer is compared head / base "
        "[default: --price].",
    ),
)


def probe_options(command: _Command) -> _Command:
    """Declare `probe`'s own options on `command`, as a stack of `@click.option` lines would."""
    for option in reversed((*_PROBE_OPTIONS, *_PRICE_OPTIONS)):
        command = option(command)
    return command
