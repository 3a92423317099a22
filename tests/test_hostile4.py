"""Hostile input, round four (issue 25): credentials that follow redirects or ride in a body to
another origin, a base that gives no data, a capacity floor the cap cannot reach, and what was
left of round three.

Every case goes through the real CLI (click's CliRunner in process) or the real action entry
point, against loopback servers of known behaviour (tests/hostile_kit.py). docs/faults.md
("Hostile input, round four") has a row for each.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from conftest import free_port, start_tinyproxy
from hostile_kit import (
    CHAT,
    FAST,
    ONE_LOOK,
    Answer,
    chunk,
    echoed_key_run,
    http,
    judged,
    one_error,
    paced,
    run_action,
    run_cli,
    sse_pieces,
)

KEY = "sk-head-0123456789abcdefSECRET"
HEADER_TOKEN = "org-token-9876543210zyxwvu"
BASE_KEY = "sk-base-abcdef0123456789BASEKEY"
ANSWER = [chunk({"content": "hello"}), chunk({}, "stop"), "[DONE]"]


def _answer(_: bytes) -> list[bytes]:
    """A healthy streamed chat answer."""
    return sse_pieces(ANSWER)


def _redirect(status: str, location: str) -> Answer:
    """Every request answered with a redirect to `location`."""
    return lambda _: [http(status, b"", extra=f"Location: {location}\r\n")]


def _secrets_seen(requests: list[bytes], *secrets: str) -> list[str]:
    """The secrets found anywhere in the requests a server received (heads and bodies)."""
    text = b"\n".join(requests).decode("latin-1")
    return [secret for secret in secrets if secret in text]


# --- 1. credentials follow a redirect to another origin ----------------------------------------


@pytest.mark.parametrize(
    "status", ["302 Found", "307 Temporary Redirect", "308 Permanent Redirect"]
)
@pytest.mark.parametrize("fmt", ["openai-chat", "anthropic"])
def test_redirect_to_another_origin_carries_no_credential(status: str, fmt: str) -> None:
    """With -L, a redirect to another port gets neither the key (x-api-key for anthropic) nor a
    secret -H header; httpx dropped only Authorization, so both reached the other origin."""
    with (
        paced(_answer) as (elsewhere, seen),
        paced(_redirect(status, elsewhere + CHAT)) as (head, _),
    ):
        args = ["--api-key", KEY, "-H", f"X-Org-Token: {HEADER_TOKEN}", "--format", fmt]
        judged(run_cli("probe", head + CHAT, "-L", "--prompt", "hi", *args, *FAST))
    assert seen.requests, "the redirect was followed"
    assert _secrets_seen(seen.requests, KEY, HEADER_TOKEN) == []


def test_redirect_within_the_origin_keeps_the_credentials() -> None:
    """A redirect to another path of the same origin is the same endpoint: it keeps the key and
    the secret headers (a rule that dropped them would break every versioned API)."""
    moves = {"n": 0}

    def answer(request: bytes) -> list[bytes]:
        if request.startswith(b"POST /old"):
            moves["n"] += 1
            return [http("307 Temporary Redirect", b"", extra=f"Location: {CHAT}\r\n")]
        return sse_pieces(ANSWER)

    with paced(answer) as (base, seen):
        args = ["--api-key", KEY, "-H", f"X-Org-Token: {HEADER_TOKEN}", *FAST]
        result = judged(run_cli("probe", base + "/old", "-L", "--prompt", "hi", *args))
    assert result.exit_code == 0, result.output
    followed = [r for r in seen.requests if r.startswith(f"POST {CHAT}".encode())]
    assert len(followed) == moves["n"] > 0
    assert all(_secrets_seen([r], KEY, HEADER_TOKEN) == [KEY, HEADER_TOKEN] for r in followed)


def test_base_redirected_to_another_origin_keeps_its_own_key() -> None:
    """The base of an A/B run with its own key, redirected (-L) to another origin: the other
    origin gets neither the base's key nor the head's (the base's x-api-key travelled)."""
    with (
        paced(_answer) as (elsewhere, seen),
        paced(_redirect("307 Temporary Redirect", elsewhere + "/v1/messages")) as (base, _),
        paced(_answer) as (head, _),
    ):
        args = [
            "--format",
            "anthropic",
            "--api-key",
            KEY,
            "--baseline-url",
            base + "/v1/messages",
            "--baseline-api-key",
            BASE_KEY,
        ]
        judged(run_cli("probe", head + "/v1/messages", "-L", "--prompt", "hi", *args, *FAST))
    assert seen.requests, "the base's redirect was followed"
    assert _secrets_seen(seen.requests, KEY, BASE_KEY) == []


def test_body_credential_is_not_resent_to_another_origin(tmp_path: Path) -> None:
    """A 307 to another origin would resend the body, with its credential field: the call is
    not followed and says why; a 302 (the body dropped, GET) may be followed."""
    body = json.dumps({"messages": [{"role": "user", "content": "hi"}], "api_key": KEY})
    with (
        paced(_answer) as (elsewhere, seen),
        paced(_redirect("307 Temporary Redirect", elsewhere + CHAT)) as (head, _),
    ):
        json_path = tmp_path / "r.json"
        args = [head + CHAT, "-L", "-d", body, *FAST, "--json", str(json_path)]
        result = judged(run_cli("probe", *args))
    assert seen.requests == []
    detail = json.loads(json_path.read_text())["samples"][0]["error_detail"]
    assert re.fullmatch(
        r"HTTP 307 redirect to http://127\.0\.0\.1:\d+ not followed: it is another origin, and "
        r"the request body holds a credential \(api_key\)",
        detail,
    ), detail
    assert KEY not in result.output


# --- 2. a credential in the body goes to a base at another origin ------------------------------


def test_body_credential_refuses_a_base_at_another_origin() -> None:
    """-d with a field named like a key and a --baseline-url at another origin: refused before
    any call (the body was sent to the base), even when the base brings its own key."""
    body = json.dumps({"messages": [{"role": "user", "content": "hi"}], "api_key": KEY})
    with paced(_answer) as (head, head_seen), paced(_answer) as (base, base_seen):
        args = ["-d", body, "--baseline-url", base + CHAT, "--baseline-api-key", BASE_KEY]
        line = one_error(run_cli("probe", head + CHAT, *args, *FAST))
    assert head_seen.requests == base_seen.requests == []
    assert "--baseline-url" in line
    assert "the request body holds a credential (api_key)" in line
    assert KEY not in line


def test_userinfo_of_the_head_refuses_a_base_at_another_origin() -> None:
    """user:password@ in the head's URL is the head's credential: a base at another origin with
    none of its own is refused (it was not, and the base answered without them)."""
    with paced(_answer) as (head, head_seen), paced(_answer) as (base, base_seen):
        url = head.replace("http://", "http://user:pa55word-secret@") + CHAT
        line = one_error(run_cli("probe", url, "--baseline-url", base + CHAT, *FAST))
    assert head_seen.requests == base_seen.requests == []
    assert "so the head's credentials (the user:password in URL) are not sent there" in line
    assert "pa55word-secret" not in line


@pytest.mark.parametrize(
    ("args", "location"),
    [
        (["--api-key", KEY], True),  # Bearer: curl drops Authorization on another host itself
        (["--api-key", KEY, "--format", "anthropic"], False),  # x-api-key would travel
        (["-H", f"X-Org-Token: {HEADER_TOKEN}"], False),
        (["-d", json.dumps({"messages": [], "token": KEY})], False),
    ],
    ids=["bearer", "x-api-key", "secret-header", "body-credential"],
)
def test_quick_curl_line_never_lets_curl_carry_credentials_away(
    args: list[str], location: bool
) -> None:
    """quick's curl line with -L: --location only where curl would keep every credential at its
    origin (curl sends -H values to every host a redirect names); otherwise left out, saying why."""
    with paced(_answer) as (base, _):
        result = judged(run_cli("quick", base + CHAT, "-L", *args))
    curl = next(line for line in result.output.splitlines() if line.lstrip().startswith("curl "))
    assert ("--location" in curl) is location
    said = "--location is left out: curl would send the request's credentials to the other origin"
    assert (said in result.output) is not location
    assert KEY not in result.output
    assert HEADER_TOKEN not in result.output


# --- 3. a base that gives no data --------------------------------------------------------------


def _fails(status: str, extra: str = "") -> Answer:
    """Every request answered with `status` (and headers `extra`)."""
    return lambda _: [http(status, b'{"error": "no"}', extra=extra)]


NOT_COMPARED = (
    "against the base measured beside it: not compared: warm p95, for the base gave no data: "
    "none of its 2 warm calls succeeded (2 {kind}); concurrent p95, for the base gave no data: "
    "{concurrent}; of the rest, no number regressed beyond noise and the 10 % limit"
)


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


# --- 4. a base that cannot be reached does not fail the head -----------------------------------


@pytest.mark.parametrize("how", ["refused", pytest.param("hangs", marks=pytest.mark.slow)])
def test_unreachable_base_leaves_the_head_judged_alone(how: str) -> None:
    """A base that refuses connections or never answers: the head is measured alone and judged
    by its budget (it failed "concurrent p95 not measured"), the warning names the base, not
    "the endpoint", and the comparison says it had nothing."""

    def silent(_: bytes) -> list[bytes]:
        return []  # reads the request and never answers

    with paced(_answer) as (head, _), paced(silent) as (hanging, _):
        base = f"http://127.0.0.1:{free_port()}" if how == "refused" else hanging
        args = [head + CHAT, "--prompt", "hi", "--baseline-url", base + CHAT, "--timeout", "0.5s"]
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


# --- 7. a capacity floor the cap cannot reach --------------------------------------------------


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
    from latency_gate.assess.load.capacity import CapacityRun, RunLevel
    from latency_gate.assess.load.capacity_levels import LevelCalls, LevelLimits
    from latency_gate.assess.load.capacity_verdict import capacity_check
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


# --- 8. leftovers of round three ---------------------------------------------------------------

ECHOED = "sk-echo-AbCdEf0123456789xyz"


def _every_char(key: str) -> dict[str, str]:
    """The key with every character escaped, letters and digits too, as an echo may be."""
    return {
        "HTML decimal": "".join(f"&#{ord(c)};" for c in key),
        "HTML hex": "".join(f"&#x{ord(c):x};" for c in key),
        "HTML zero-padded": "".join(f"&#00{ord(c)};" for c in key),
        "JSON unicode": "".join(f"\\u{ord(c):04x}" for c in key),
        "percent": "".join(f"%{ord(c):02X}" for c in key),
        "percent twice": "".join(f"%25{ord(c):02x}" for c in key),
    }


def test_key_echoed_with_every_character_escaped_reaches_no_output(tmp_path: Path) -> None:
    """The key echoed with every character as an HTML entity (decimal, hex), a JSON \\u escape
    or percent-encoded, letters and digits included, is *** in the JSON, the Markdown and the
    terminal (decimal entities reached the terminal and the JSON)."""
    shapes = list(_every_char(ECHOED).items())
    details, everything = echoed_key_run(tmp_path, ECHOED, shapes, "-v")
    assert details == [f"HTTP 401: {name}=***" for name, _ in shapes]
    for _, text in shapes:
        assert text[:24] not in everything


@pytest.fixture
def guarded_proxy(tmp_path: Path) -> Iterator[str]:
    """A real tinyproxy that asks for credentials (user / secretpw); its URL, without them."""
    yield from start_tinyproxy(tmp_path, "BasicAuth user secretpw\n")


def test_a_proxy_s_own_401_is_named_as_the_proxy_s(guarded_proxy: str, tmp_path: Path) -> None:
    """tinyproxy answers wrong proxy credentials with its own 401 and WWW-Authenticate (not
    407): an answer through a proxy with credentials that no proxy relayed (no Via) names the
    proxy and its credentials, not the endpoint's key (it was counted as the endpoint's 401)."""
    wrong = guarded_proxy.replace("http://", "http://user:not-the-pw@")
    with paced(_answer) as (base, seen):
        json_path = tmp_path / "r.json"
        args = [base + CHAT, "--prompt", "hi", "-x", wrong, *FAST, "--json", str(json_path)]
        judged(run_cli("probe", *args))
        relayed = judged(
            run_cli(
                "probe",
                base + CHAT,
                "--prompt",
                "hi",
                "-x",
                guarded_proxy.replace("http://", "http://user:secretpw@"),
                *FAST,
            )
        )
    detail = json.loads(json_path.read_text())["samples"][0]["error_detail"]
    assert detail.startswith(
        f"the proxy {guarded_proxy.replace('http://', 'http://***@')} refused its credentials "
        "(an answer no proxy relayed: it carries no Via header); check the user:password in "
        "--proxy or HTTP(S)_PROXY; it answered HTTP 401"
    ), detail
    assert seen.requests, "the right credentials reach the endpoint"
    assert relayed.exit_code == 0, relayed.output
    assert "not-the-pw" not in detail


def test_h2c_through_a_proxy_is_said_not_spoken(tmp_path: Path) -> None:
    """--http2 on an http:// URL through a forward proxy: the proxy takes the requests in
    HTTP/1.1, and the run says --http2 was not spoken and how to measure it (nothing said so:
    the calls went out in HTTP/1.1 under an --http2 setting)."""
    with contextlib.ExitStack() as stack:
        proxy = stack.enter_context(contextlib.contextmanager(start_tinyproxy)(tmp_path))
        base, _ = stack.enter_context(paced(_answer))
        json_path = tmp_path / "r.json"
        args = [base + CHAT, "--prompt", "hi", "--http2", "-x", proxy, *FAST]
        result = judged(run_cli("probe", *args, "--json", str(json_path)))
    document = json.loads(json_path.read_text())
    assert {s["http_version"] for s in document["samples"]} == {"HTTP/1.1"}
    said = (
        f"--http2 was not spoken: the calls went through the proxy {proxy}, which takes an "
        "http:// URL's requests in HTTP/1.1 (each call says HTTP/1.1); go direct (--proxy off, "
        "or NO_PROXY) to measure HTTP/2 without TLS"
    )
    assert said in document["warnings"]
    assert said in " ".join(result.output.split())


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("99999999999999999999", "99,999,999,999,999,999,999"),
        ("2147483648", "2,147,483,648"),
    ],
)
def test_max_tokens_beyond_what_a_server_reads_is_exit_2(value: str, said: str) -> None:
    """--max-tokens of 20 digits (or just past 2^31 - 1) is bad input naming the option (it was
    sent as written, and every call failed with the server's 400)."""
    with paced(_answer) as (base, seen):
        line = one_error(run_cli("probe", base + CHAT, "--prompt", "hi", "--max-tokens", value))
    assert seen.requests == []
    assert line == (
        "Error: invalid input --max-tokens: expected at most 2,147,483,647 (servers read it as "
        f"a 32-bit integer), got {said}"
    )


def test_a_tiny_error_budget_is_shown_as_itself(tmp_path: Path) -> None:
    """An error budget of 1e-4 reads "0.010 %" in the terminal, not "0.0 %" (which says no
    failure is allowed)."""
    with paced(_answer) as (base, _):
        args = [base + CHAT, "--prompt", "hi", "--max-error-rate", "1e-4", *FAST]
        result = judged(run_cli("probe", *args, "--markdown", str(tmp_path / "r.md")))
    row = next(line for line in result.output.splitlines() if line.startswith("error rate "))
    assert "0.010 %" in row, row
    assert "| 0.010 % |" in (tmp_path / "r.md").read_text()


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
