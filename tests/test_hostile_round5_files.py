"""Hostile input, round five (issue 38), classes 5 to 10: event payloads and result files read
back, rate levels that judged no call or broke on their errors, a `usage` that disagrees with the
stream, and leftovers; through the real CLI and action against loopback servers.

Each case failed on the code before its fix (docs/faults.md, "Hostile input, round five").
"""

from __future__ import annotations

import json
import re
import time
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hostile_kit import (
    CHAT,
    FAST,
    ONE_LOOK,
    chunk,
    http,
    judged,
    one_error,
    paced,
    run_action,
    run_cli,
    sse_pieces,
)

from latency_gate.demo import DemoServer, EndpointSpec, serve_in_thread
from latency_gate.history_folder import append_decision

DEEP = 3_000  # levels of nesting: past Python's recursion limit for json.loads


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoServer]:
    """A healthy streaming chat endpoint that answers at once."""
    with serve_in_thread(EndpointSpec(latency=0.0, tokens=2, token_interval=0.0)) as (server,):
        yield server


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# --- 5. a deeply nested event payload -----------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "payload"),
    [
        ("push", '{"repository": {"default_branch": "main"}, "x": ' + _nested(DEEP) + "}"),
        (
            "repository_dispatch",
            '{"action": "go", "client_payload": ' + _nested(DEEP) + "}",
        ),
    ],
    ids=["push", "repository-dispatch"],
)
def test_a_deep_event_payload_is_ignored_and_the_outputs_written(
    demo: DemoServer, tmp_path: Path, event: str, payload: str
) -> None:
    """An event payload nested 3,000 deep exited 3 after a PASS with $GITHUB_OUTPUT empty: the
    readers caught only OSError and ValueError. It is now ignored as invalid JSON is."""
    path = tmp_path / "deep.json"
    path.write_text(payload, encoding="utf-8")
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": event,
        "GITHUB_EVENT_PATH": str(path),
        "GITHUB_REF": "refs/heads/main",
    }
    inputs = {"url": demo.url, "prompt": "Hi", **ONE_LOOK}
    inputs |= {"history": "h", "history-append": "auto", "comment": "always"}
    run = run_action(tmp_path, inputs, env)
    assert run.code == 0, run.log
    assert "verdict=PASS" in run.outputs
    assert "passed=true" in run.outputs
    assert "bug" not in run.log
    assert "latency-gate: history not appended: " in run.log


def test_a_deep_payload_names_no_default_branch(tmp_path: Path) -> None:
    """The history's reader alone: a deep payload reads as no payload."""
    path = tmp_path / "deep.json"
    path.write_text('{"repository": {"default_branch": "main"}, "x": ' + _nested(DEEP) + "}")
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "push",
        "GITHUB_EVENT_PATH": str(path),
        "GITHUB_REF": "refs/heads/main",
    }
    assert append_decision("auto", env) == (
        False,
        "not appended: the event payload names no default branch",
    )


# --- 10. leftovers -------------------------------------------------------------------------------


def _event_env(tmp_path: Path, event: str, payload: object) -> dict[str, str]:
    path = tmp_path / "event.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    return {
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": event,
        "GITHUB_EVENT_PATH": str(path),
        "GITHUB_REF": "refs/heads/main",
    }


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


def _targets_file(tmp_path: Path, url: str, prompt_escaped: str) -> str:
    path = tmp_path / "targets.yaml"
    path.write_text(
        f'targets:\n  - name: a\n    url: {url}\n    prompt: "hi {prompt_escaped}"\n',
        encoding="utf-8",
    )
    return str(path)


def test_a_yaml_surrogate_pair_escape_is_the_character_it_encodes(tmp_path: Path) -> None:
    """`"\\uD83D\\uDE00"` in a YAML targets file was refused as "not valid UTF-8 text (check the
    shell's encoding)": PyYAML leaves the two halves apart, as JSON's reader does not. The pair
    is now the one character it encodes, and that is what is sent."""

    def answer(_: bytes) -> list[bytes]:
        return [http("200 OK", b'{"choices": [{"message": {"content": "ok"}}]}')]

    with paced(answer) as (base, seen):
        path = _targets_file(tmp_path, base + CHAT, "\\uD83D\\uDE00")
        judged(run_cli("probe", "--targets", path, *FAST, "--on-undecided", "pass"))
    assert seen.requests
    assert all('hi \\ud83d\\ude00"' in r.decode() for r in seen.requests), seen.requests[0]


def test_half_a_surrogate_pair_in_a_file_names_the_file_not_the_shell(tmp_path: Path) -> None:
    """A lone `\\uD83D` in a targets file is named as what it is, at its line."""
    path = _targets_file(tmp_path, "http://127.0.0.1:9/v1/chat/completions", "\\uD83D")
    assert one_error(run_cli("probe", "--targets", path)) == (
        "Error: invalid input targets.yaml:4: targets[0].prompt: holds \\uD83D, half of a UTF-16 "
        "surrogate pair, which is no character: write the character itself, or both halves of "
        "its pair"
    )


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


# --- 6. files read back later: the calls at a rate ---------------------------------------------


@pytest.fixture(scope="module")
def at_a_rate(demo: DemoServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A real result file of the demo endpoint with a level of calls at a rate."""
    path = tmp_path_factory.mktemp("rate") / "r.json"
    args = ["--no-floor", "--warm-calls", "2", "--concurrency", "1", "--on-undecided", "pass"]
    args += ["--prompt", "hi", "--stream", "--rate", "20/s"]
    args += ["--rate-for", "40", "--max-concurrent-p95", "200ms", "--json", str(path)]
    judged(run_cli("probe", demo.url, *args))
    document: dict[str, Any] = json.loads(path.read_text())
    assert document["goodput"]["levels"][0]["samples"]
    return document


def _first_rate_call(document: dict[str, Any]) -> dict[str, Any]:
    call: dict[str, Any] = document["goodput"]["levels"][0]["samples"][0]
    return call


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda d: d["goodput"].update(hold=1e308),
            "goodput.hold 1e+308 s is not a duration (from 0 to 24 hours)",
        ),
        (
            lambda d: d["goodput"].update(seconds=1e308),
            "goodput.seconds 1e+308 s is not a duration (from 0 to 24 hours)",
        ),
        (
            lambda d: d["goodput"].update(warmup=-1),
            "goodput.warmup -1 s is not a duration (from 0 to 24 hours)",
        ),
        (
            lambda d: _first_rate_call(d).update(send_lag=1e308),
            "goodput level 20/s: call rate #0: send_lag 1e+308 s is not a duration (from 0 to 24 "
            "hours)",
        ),
        (
            lambda d: _first_rate_call(d).update(due=-5),
            "goodput level 20/s: call rate #0: due -5 s is not a duration (from 0 to 24 hours)",
        ),
        (
            lambda d: _first_rate_call(d).update(tokens=-5),
            "goodput level 20/s: call rate #0: tokens -5 is not a count of tokens",
        ),
        (
            lambda d: d["config"].update(rate="<b>20</b>"),
            "config.rate '<b>20</b>' is not a rate (requests a second, above 0 and at most 10,000)",
        ),
        (
            lambda d: d["goodput"]["levels"][0].update(judged=10**6),
            "goodput level 20/s: judged 1000000 is not a count from 0 to ",
        ),
    ],
    ids=["hold", "seconds", "warmup", "send-lag", "due", "tokens", "config-rate", "judged"],
)
def test_merge_refuses_a_rate_field_no_run_writes(
    at_a_rate: dict[str, Any],
    tmp_path: Path,
    edit: Callable[[dict[str, Any]], object],
    message: str,
) -> None:
    """`merge` exited 3 on a goodput hold, seconds or send_lag of 1e308 and took the rest as
    written (a warm-up of -1, a rate of HTML, -5 tokens); each is exit 2 naming the field."""
    document = json.loads(json.dumps(at_a_rate))
    edit(document)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    error = one_error(run_cli("merge", str(path)))
    assert error.startswith(f"Error: invalid input merge {path}: cannot be judged: {message}")


def test_merge_refuses_tokens_that_are_not_a_count(
    at_a_rate: dict[str, Any], tmp_path: Path
) -> None:
    """A call's `tokens: true` was read as 1 token; it is no count, and the file is refused."""
    document = json.loads(json.dumps(at_a_rate))
    document["samples"][0]["tokens"] = True
    path = tmp_path / "r.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    error = one_error(run_cli("merge", str(path)))
    assert error.startswith(f"Error: invalid input merge {path}: not a latency-gate result ")
    assert "samples.0.tokens: Input should be a valid integer" in error


def test_merge_takes_a_rate_file_as_written(at_a_rate: dict[str, Any], tmp_path: Path) -> None:
    """The file as probe wrote it is merged (kept)."""
    path = tmp_path / "r.json"
    path.write_text(json.dumps(at_a_rate), encoding="utf-8")
    judged(run_cli("merge", str(path)))


# --- 9. a usage count that disagrees with the stream -------------------------------------------


def _six_deltas_claiming(tokens: int) -> Callable[[bytes], list[bytes]]:
    """A chat stream of six deltas 20 ms apart whose usage claims `tokens` output tokens."""
    usage = json.dumps({"choices": [], "usage": {"completion_tokens": tokens}})
    events = [chunk({"content": f"w{i} "}) for i in range(6)]
    events += [chunk({}, "stop"), usage, "[DONE]"]
    return lambda _: sse_pieces(events)


TPOT_RUN = ["--prompt", "hi", "--stream", "--no-floor", "--warm-calls", "6", "--concurrency", "1"]
TPOT_RUN += ["--max-calls", "8", "--on-undecided", "estimate"]


def test_usage_claiming_a_billion_tokens_does_not_make_tokens_free() -> None:
    """Six deltas 20 ms apart with usage claiming 10**9 tokens passed `--max-tpot-p95 5ms`
    ("per token p95 0.0 ms"); the deltas are counted (about 20 ms a token) and it fails, saying
    usage disagreed."""
    with paced(_six_deltas_claiming(10**9)) as (base, _):
        done = judged(run_cli("probe", base + CHAT, *TPOT_RUN, "--max-tpot-p95", "5ms"))
    assert done.exit_code == 1, done.output
    row = next(line for line in done.output.splitlines() if line.startswith("per token p95"))
    assert row.split()[-1] == "FAIL", row
    assert "Usage disagreed with the stream: the deltas were counted" in done.output
    assert "said their answer had 1,000,000,000 tokens (usage) where 6 deltas arrived" in (
        done.output
    )


@pytest.mark.parametrize("claimed", [0, 1])
def test_usage_claiming_too_few_tokens_leaves_the_time_per_token_measured(claimed: int) -> None:
    """Usage claiming 0 or 1 token FAILed "no successful warm call carried a streamed answer's
    timing" though every call streamed six deltas; the deltas are counted and it passes."""
    with paced(_six_deltas_claiming(claimed)) as (base, _):
        done = judged(run_cli("probe", base + CHAT, *TPOT_RUN, "--max-tpot-p95", "1s"))
    assert done.exit_code == 0, done.output
    assert "carried a streamed answer's timing" not in done.output
    assert "Usage disagreed with the stream" in done.output


def test_usage_that_agrees_with_the_stream_is_taken(tmp_path: Path) -> None:
    """Usage of 12 tokens over six deltas (two tokens a delta) is the count (kept)."""
    path = tmp_path / "r.json"
    with paced(_six_deltas_claiming(12)) as (base, _):
        done = judged(
            run_cli("probe", base + CHAT, *TPOT_RUN, "--json", str(path), "--max-tpot-p95", "1s")
        )
    assert "Usage disagreed" not in done.output
    calls = json.loads(path.read_text())["samples"]
    assert {(c["tokens"], c["tokens_source"], c["usage_ignored"]) for c in calls} == {
        (12, "usage", None)
    }


# --- 8. a rate level broken by its errors --------------------------------------------------------


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


# --- 7. a rate level that judges no call -------------------------------------------------------


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


@pytest.mark.parametrize(("policy", "code"), [("pass", 0), ("fail", 1)])
def test_a_level_cut_inside_its_warm_up_is_undecided_and_says_so(
    at_a_rate: dict[str, Any], tmp_path: Path, policy: str, code: int
) -> None:
    """A level none of whose calls was judged (here a file whose warm-up outlasts its calls,
    judged again on merge; in a run, a level cut by a cap) was "near the budget", its p95 of
    calls no test read; it is undecided, says its calls fell in the warm-up, and the policy
    decides."""
    document = json.loads(json.dumps(at_a_rate))
    document["goodput"] |= {"warmup": 3600.0, "on_undecided": policy}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    done = judged(run_cli("merge", str(path)))
    assert done.exit_code == code, done.output
    calls = len(document["goodput"]["levels"][0]["samples"])
    said = (
        f"at 20/s all {calls} calls fell in the level's warm-up (its first 3600 s of arrivals, "
        "made and not judged): none was judged"
    )
    flat = " ".join(done.output.split())
    assert said in flat, done.output
    if policy == "fail":
        assert f"FAIL: p95 at the rate not judged: {said}" in flat
