"""Hostile input: what a request is built from.

A JSON body no server can read (nested 5,000 deep, NaN, infinities, huge numbers; the CLI and the
action), a deep body sent as text by quick, settings the request cannot carry, curl's own options
(`--json`, `-x`, `-k`, `-L`), a token budget on a whole answer, and a tiny error budget shown as
itself. docs/faults.md, "Hostile input", says what each case did before its fix.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import free_port
from hostile_data import _answer
from hostile_kit import CHAT, FAST, action_error, judged, one_error, paced, run_action, run_cli

from latency_gate.demo import DemoServer, EndpointSpec, serve_in_thread


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoServer]:
    """A healthy streaming chat endpoint; `records` says whether anything reached it."""
    with serve_in_thread(EndpointSpec(latency=0.0, tokens=2, token_interval=0.0)) as (server,):
        yield server


DEEP = "[" * 5000 + "]" * 5000


PROMPT = '{"messages": [{"role": "user", "content": "hi"}]'


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (PROMPT + ', "x": ' + DEEP + "}", "nested deeper than 100 levels"),
        (PROMPT + ', "temperature": 1e400}', "holds the number 1e400, beyond the range"),
        (PROMPT + ', "temperature": NaN}', "holds NaN, which is not a JSON value"),
        (PROMPT + ', "top_p": -Infinity}', "holds -Infinity, which is not a JSON value"),
        (PROMPT + ', "seed": ' + "9" * 5000 + "}", "a whole number of 5,000 digits"),
    ],
    ids=["deep", "1e400", "nan", "-infinity", "5000-digits"],
)
def test_body_json_a_server_cannot_read_is_exit_2(
    demo: DemoServer, tmp_path: Path, body: str, said: str
) -> None:
    """A JSON body nested 5,000 deep, or holding NaN, Infinity, 1e400 or a 5,000-digit number,
    is exit 2 naming the body (deep was exit 3; the rest were sent as `NaN`/`Infinity`)."""
    before = len(demo.records)
    (tmp_path / "body.json").write_text(body, encoding="utf-8")
    for given in (body, f"@{tmp_path / 'body.json'}"):
        line = one_error(run_cli("probe", demo.url, "-d", given, *FAST))
        assert line.startswith("Error: invalid input -d/--body: ")
        assert said in line
    assert len(demo.records) == before


def test_action_body_nested_deep_is_one_error_and_a_summary(tmp_path: Path) -> None:
    """The action with a deep body: one ::error naming `body`, the summary says nothing was
    measured (it was the bug annotation, exit 3)."""
    body = PROMPT + ', "x": ' + DEEP + "}"
    run = run_action(tmp_path, {"url": "http://127.0.0.1:9/v1/chat/completions", "body": body})
    assert "invalid input body: nested deeper than 100 levels" in action_error(run)


def test_quick_with_a_deep_raw_body_is_judged(demo: DemoServer, tmp_path: Path) -> None:
    """`quick` with a deep JSON body at a raw URL (sent as text) runs; hiding its credential
    fields used to recurse past Python's limit (exit 3)."""
    (tmp_path / "deep.json").write_text('{"x": ' + DEEP + "}", encoding="utf-8")
    result = judged(run_cli("quick", demo.base_url + "/raw", "-d", f"@{tmp_path / 'deep.json'}"))
    assert "Repeat one by hand" in result.output


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ["--format", "raw", "-d", "hello", "--max-tokens", "5"],
            "--max-tokens 5 was not sent (the raw format sends the body as written)",
        ),
        (
            ["--stream", "-X", "GET"],  # no body: a chat URL alone gets the default prompt's
            "--stream was not sent in the body (the request has no body); only its Accept: "
            "text/event-stream header was",
        ),
        (
            ["-d", '{"messages": []}', "--model", "m-1"],
            "--model was not sent (the body you gave holds no such field)",
        ),
    ],
    ids=["max-tokens-raw", "stream-without-body", "model-beside-a-body"],
)
def test_settings_the_request_cannot_carry_are_warned(
    demo: DemoServer, tmp_path: Path, args: list[str], said: str
) -> None:
    """--max-tokens with a raw body, --stream without a body, --model beside a body that does
    not hold it: a warning on stderr and in the result (each was dropped in silence)."""
    json_path = tmp_path / "r.json"
    result = judged(run_cli("probe", demo.url, *args, *FAST, "--json", str(json_path)))
    assert f"warning: {said}\n" in result.stderr
    assert said in json.loads(json_path.read_text())["warnings"]


def test_curls_json_option_is_not_taken_for_a_file_name(
    demo: DemoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--json '{...}'` (curl's way to send a JSON body) names our result file: refused, pointing
    at -d/--body (a file named `{"messages": []}` was written)."""
    monkeypatch.chdir(tmp_path)
    result = run_cli("probe", demo.url, *FAST, "--json", '{"messages": []}')
    assert "the request body is -d/--body (curl's --json)" in one_error(result)
    assert list(tmp_path.iterdir()) == []


def test_curls_short_options_work(demo: DemoServer) -> None:
    """curl's -x (proxy), -k (insecure) and -L (follow redirects) are taken as curl takes them."""
    dead = f"http://127.0.0.1:{free_port()}"
    result = judged(run_cli("probe", demo.url, "-x", dead, "-k", "-L", *FAST))
    assert f"to the proxy {dead}, so the endpoint was never asked" in result.stderr
    assert "TLS certificate checks were turned off (--insecure)" in result.stderr


def test_a_token_budget_on_a_whole_answer_is_refused_before_any_call(demo: DemoServer) -> None:
    """`--max-tpot-p95` on a chat probe that asks for a whole answer made 131 calls, then failed
    "per token p95 not measured"; it is refused before the first call, naming --stream."""
    before = len(demo.records)
    error = one_error(run_cli("probe", demo.url, "--prompt", "hi", "--max-tpot-p95", "5ms"))
    assert error == (
        "Error: invalid input --max-tpot-p95: needs a streamed answer's tokens, and the "
        "openai-chat body asks for a whole answer (its stream is false): add --stream, or leave "
        "it out"
    )
    assert len(demo.records) == before


def test_a_token_budget_on_a_streamed_probe_is_taken(demo: DemoServer) -> None:
    """The same budget with --stream is measured and judged (kept)."""
    done = judged(
        run_cli("probe", demo.url, "--prompt", "hi", "--stream", "--max-tpot-p95", "1s", *FAST)
    )
    assert "per token p95" in done.output


def test_a_tiny_error_budget_is_shown_as_itself(tmp_path: Path) -> None:
    """An error budget of 1e-4 reads "0.010 %" in the terminal, not "0.0 %" (which says no
    failure is allowed)."""
    with paced(_answer) as (base, _):
        args = [base + CHAT, "--prompt", "hi", "--max-error-rate", "1e-4", *FAST]
        result = judged(run_cli("probe", *args, "--markdown", str(tmp_path / "r.md")))
    row = next(line for line in result.output.splitlines() if line.startswith("error rate "))
    assert "0.010 %" in row, row
    assert "| 0.010 % |" in (tmp_path / "r.md").read_text()
