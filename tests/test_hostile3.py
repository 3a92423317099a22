"""Hostile input, round three (issue 19): exit 3 from data, secrets in other shapes, files that
lie, result files taken on trust, the wrong culprit named, curl's conventions, look-alike
loopback, and semantics left over.

Every case goes through the real CLI (click's CliRunner in process, or a subprocess where the
process matters) or the real action entry point (`action.main` with an environ mapping), against
loopback servers: the demo server, or a tiny asyncio server below that answers with fixed bytes,
paced. docs/faults.md ("Hostile input, round three") has a row for each.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from conftest import REPO_ROOT, free_port
from fake_github import PERSONAL_USER, FakeGitHub
from hostile_kit import (
    CHAT,
    FAST,
    ONE_LOOK,
    Answer,
    action_error,
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

from latency_gate.config import proxy_from_environment, scrub_secrets, secret_forms
from latency_gate.demo import DemoServer, EndpointSpec, serve_in_thread
from latency_gate.github import GitHubClient, comment_marker


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoServer]:
    """A healthy streaming chat endpoint; `records` says whether anything reached it."""
    with serve_in_thread(EndpointSpec(latency=0.0, tokens=2, token_interval=0.0)) as (server,):
        yield server


# --- 1. exit 3 from ordinary-looking data -------------------------------------------------------

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


@pytest.mark.parametrize(
    ("name", "text", "said"),
    [
        (
            "t.json",
            '{"targets": [{"name": "a", "url": "http://127.0.0.1:9/", "warm-calls": '
            + "9" * 5000
            + "}]}",
            "t.json: holds a number of more than 4,300 digits",
        ),
        (
            "t.yml",
            "targets:\n  - name: a\n    url: http://127.0.0.1:9/\n    warm-calls: "
            + "9" * 5000
            + "\n",
            "t.yml: holds a number of more than 4,300 digits",
        ),
        (
            "t.toml",
            '[[targets]]\nname = "a"\nurl = "http://127.0.0.1:9/"\nwarm-calls = ' + "9" * 5000,
            "t.toml: holds a number of more than 4,300 digits",
        ),
        (
            "t.yml",
            "targets:\n  - name: a\n    url: http://127.0.0.1:9/v1/chat/completions\n"
            "    body: {messages: [{role: user, content: hi}], temperature: .nan}\n",
            "t.yml:4: target 'a', body: holds NaN or an infinite number",
        ),
        (
            "t.toml",
            '[[targets]]\nname = "a"\nurl = "http://127.0.0.1:9/v1/chat/completions"\n'
            'body = {messages = [{role = "user", content = "hi"}], top_p = inf}\n',
            "t.toml:4: target 'a', body: holds NaN or an infinite number",
        ),
    ],
    ids=["json-digits", "yaml-digits", "toml-digits", "yaml-nan-body", "toml-inf-body"],
)
def test_targets_file_numbers_no_parser_takes_are_exit_2(
    tmp_path: Path, name: str, text: str, said: str
) -> None:
    """A targets file with a 5,000-digit number (JSON, YAML, TOML: exit 3 from Python's int()
    limit) or a body holding .nan/inf (sent as NaN/Infinity) is exit 2 naming the file."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    assert said in one_error(run_cli("probe", "--targets", str(path), "--no-floor"))


def test_quick_with_a_deep_raw_body_is_judged(demo: DemoServer, tmp_path: Path) -> None:
    """`quick` with a deep JSON body at a raw URL (sent as text) runs; hiding its credential
    fields used to recurse past Python's limit (exit 3)."""
    (tmp_path / "deep.json").write_text('{"x": ' + DEEP + "}", encoding="utf-8")
    result = judged(run_cli("quick", demo.base_url + "/raw", "-d", f"@{tmp_path / 'deep.json'}"))
    assert "Repeat one by hand" in result.output


def _huge_usage(_: bytes) -> list[bytes]:
    usage = json.dumps({"choices": [], "usage": {"completion_tokens": 10**400}})
    return sse_pieces(
        [chunk({"content": "a"}), chunk({"content": "b"}), chunk({}, "stop"), usage, "[DONE]"]
    )


def test_usage_count_of_10_400_is_a_judged_run(tmp_path: Path) -> None:
    """A stream whose usage says 10**400 tokens is judged; the count is left out and tokens come
    from the deltas (tokens/s overflowed a float: exit 3)."""
    with paced(_huge_usage) as (base, _):
        json_path = tmp_path / "r.json"
        args = [base + CHAT, "--prompt", "hi", "--stream", *FAST, "--json", str(json_path)]
        judged(run_cli("probe", *args))
    samples = json.loads(json_path.read_text())["samples"]
    assert {(s["tokens"], s["tokens_source"]) for s in samples} == {(2, "deltas")}


def test_usage_count_of_10_400_in_the_action_writes_summary_and_outputs(tmp_path: Path) -> None:
    """The action against the same stream: summary, outputs and exit 0/1 (was exit 3 with
    neither written)."""
    with paced(_huge_usage) as (base, _):
        inputs = {"url": base + CHAT, "prompt": "hi", "stream": "true", **ONE_LOOK}
        run = run_action(tmp_path, inputs)
    assert run.code in (0, 1), run.log
    assert "latency-gate:" in run.summary
    assert "verdict=" in run.outputs


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--max-warm-p95", "nan"),
        ("--max-warm-p95", "inf"),
        ("--max-error-rate", "nan"),
        ("--max-error-rate", "-inf"),
        ("--timeout", "inf"),
        ("--wait-ready", "nan"),
        ("--max-regression", "nan%"),
    ],
)
def test_nan_and_infinity_in_numeric_options_are_exit_2(option: str, value: str) -> None:
    """NaN and infinity are no budget, duration or share: exit 2 naming the option (kept)."""
    args = ["probe", "http://127.0.0.1:9/", option, value]
    if option == "--max-regression":
        args += ["--baseline", "absent.json"]
    assert one_error(run_cli(*args)).startswith(f"Error: invalid input {option}: ")


@pytest.mark.parametrize("streamed", [False, True], ids=["document", "stream"])
def test_answer_nested_deep_is_a_malformed_call(tmp_path: Path, streamed: bool) -> None:
    """An endpoint's answer of valid JSON nested 50,000 deep (a document, or one event of a
    stream) is a `malformed` call of a judged run (kept: it was already)."""
    deep = '{"choices": [], "x": ' + "[" * 50_000 + "]" * 50_000 + "}"
    pieces = (
        sse_pieces([chunk({"content": "a"}), deep]) if streamed else [http("200 OK", deep.encode())]
    )
    with paced(lambda _: pieces) as (base, _):
        json_path = tmp_path / "r.json"
        args = [base + CHAT, "--prompt", "hi", "--stream" if streamed else "--no-stream", *FAST]
        judged(run_cli("probe", *args, "--json", str(json_path)))
    assert {s["error"] for s in _samples(json_path)} == {"malformed"}


@pytest.mark.parametrize("value", ["1", "100%", "0.99999999999999999", "99.999999999999999999%"])
def test_error_budget_of_everything_says_use_off(value: str) -> None:
    """An error-rate budget of 1 (or one that reads as 1.0) gates nothing: exit 2, "use off"
    (it was taken, and the run could not be decided)."""
    line = one_error(run_cli("probe", "http://127.0.0.1:9/", "--max-error-rate", value))
    assert line.startswith("Error: invalid input --max-error-rate: ")
    assert "lets every call fail, so it gates nothing: use off" in line
    assert ("reads as 1.0" in line) == ("9999" in value)


# --- 2. secrets in other shapes -----------------------------------------------------------------

KEY = "sk-h3/Key+ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def _echoes(key: str) -> dict[str, str]:
    """The key as servers have been seen to echo it, each shape by name."""
    raw = key.encode()
    return {
        "percent-encoded twice": quote(quote(key, safe=""), safe=""),
        "percent-encoded three times": quote(quote(quote(key, safe=""), safe=""), safe=""),
        "hex": raw.hex(),
        "HEX": raw.hex().upper(),
        "base64 of base64": base64.b64encode(base64.b64encode(raw)).decode(),
        "url-safe base64 of base64": base64.urlsafe_b64encode(base64.b64encode(raw)).decode(),
        "first half": key[: len(key) // 2],
        "first half in hex": raw[: len(raw) // 2].hex(),
        "HTML entities": key.replace("+", "&#43;").replace("/", "&#x2F;"),
        "JSON-escaped twice": json.dumps(key.replace("/", "\\/"))[1:-1],
    }


def test_key_echoed_in_other_shapes_reaches_no_output(tmp_path: Path) -> None:
    """The API key echoed in a 401 percent-encoded twice or three times, in hex, as base64 of
    base64, cut to its first half, as HTML entities or JSON-escaped twice is *** in the JSON,
    the report and the terminal (each used to pass through); a four-character tail (what APIs
    print on purpose) stays."""
    shapes = [*_echoes(KEY).items(), ("tail", "…" + KEY[-4:])]
    details, everything = echoed_key_run(tmp_path, KEY, shapes)
    assert details == [f"HTTP 401: {name}=***" for name, _ in shapes[:-1]] + [
        f"HTTP 401: tail=…{KEY[-4:]}"
    ]
    for _, text in shapes[:-1]:
        assert text not in everything


def test_every_echo_shape_is_scrubbed_whole() -> None:
    """Each shape of the key, alone in a text, is *** (the scrubber, without a 200-char cut)."""
    forms = secret_forms([KEY])
    for name, text in _echoes(KEY).items():
        assert scrub_secrets(f"<{text}>", forms) == "<***>", name
    assert scrub_secrets(f"<{KEY[:10]}>", forms) == f"<{KEY[:10]}>"  # a quarter is no secret


def test_key_across_the_detail_cut_leaves_no_fragment(tmp_path: Path) -> None:
    """A stream error quoting the key across the 200th character: the detail was cut first and
    the key's first characters (less than half of it) stayed; now it is scrubbed, then cut."""
    message = "x" * 190 + KEY + " y"
    events = [chunk({"content": "a"}), json.dumps({"error": {"message": message}})]
    with paced(lambda _: sse_pieces(events)) as (base, _):
        json_path = tmp_path / "r.json"
        args = [base + CHAT, "--api-key", KEY, "--prompt", "hi", "--stream", *FAST]
        judged(run_cli("probe", *args, "--json", str(json_path)))
    detail = json.loads(json_path.read_text())["samples"][0]["error_detail"]
    assert detail == "x" * 190 + "*** y"


BODY_KEY = "sk-body-field-0123456789abcdef"


def _echo_body_field(request: bytes) -> list[bytes]:
    """A 401 that quotes the body's api_key field back."""
    found = re.search(rb'"api_key": "([^"]+)"', request)
    quoted = found[1] if found else b"none"
    return [http("401 Unauthorized", b"invalid api_key " + quoted, "text/plain")]


def test_body_field_named_like_a_credential_is_a_secret(tmp_path: Path) -> None:
    """A credential in a JSON body field (`api_key`) echoed in a 401 is *** in every output of
    the CLI (it was printed: only the whole body was a secret)."""
    body = json.dumps({"messages": [{"role": "user", "content": "hi"}], "api_key": BODY_KEY})
    with paced(_echo_body_field) as (base, _):
        json_path = tmp_path / "r.json"
        args = [base + CHAT, "-d", body, *FAST, "--json", str(json_path)]
        result = judged(run_cli("probe", *args))
    detail = json.loads(json_path.read_text())["samples"][0]["error_detail"]
    assert detail == "HTTP 401: invalid api_key ***"
    assert BODY_KEY not in result.output + json_path.read_text()


def test_body_field_credential_is_masked_in_the_action(tmp_path: Path) -> None:
    """In the action, inline and as a body file: `::add-mask::` for the field's value before any
    other line, and neither log nor summary holds it."""
    body = json.dumps({"messages": [{"role": "user", "content": "hi"}], "api_key": BODY_KEY})
    (tmp_path / "workspace").mkdir()
    (tmp_path / "workspace" / "body.json").write_text(body, encoding="utf-8")
    with paced(_echo_body_field) as (base, _):
        for given in (body, "@body.json"):
            run = run_action(tmp_path, {"url": base + CHAT, "body": given, **ONE_LOOK})
            assert run.code == 1, run.log
            lines = run.log.splitlines()
            assert f"::add-mask::{BODY_KEY}" in lines
            unmasked = [line for line in lines if not line.startswith("::add-mask::")]
            assert BODY_KEY not in "\n".join(unmasked) + run.summary + run.outputs
            assert "invalid api_key ***" in run.log


# --- 3. files the action reads ------------------------------------------------------------------


def _cli_process(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`python -m latency_gate ARGS` in a process of its own, killed after 30 s (a FIFO used to
    block it forever)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("LATENCY_GATE_")}
    environ["PYTHONPATH"] = str(REPO_ROOT)
    return subprocess.run(
        [sys.executable, "-m", "latency_gate", *args],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["merge", "fifo"], "merge: cannot read 'fifo': is a FIFO (named pipe)"),
        (["probe", "{url}", "--baseline", "fifo"], "--baseline: cannot read 'fifo': is a FIFO"),
        (["probe", "{url}", "--json", "fifo"], "--json: cannot write 'fifo': it is a FIFO"),
        (["probe", "{url}", "--markdown", "fifo"], "--markdown: cannot write 'fifo': it is a FIFO"),
        (["probe", "{url}", "-d", "@fifo"], "-d/--body: cannot read body file '{cwd}/fifo': is a"),
        (["probe", "--targets", "fifo"], "targets: cannot read 'fifo': is a FIFO"),
        (
            ["probe", "{url}", "-d", "@/proc/self/environ"],
            "cannot read body file '/proc/self/environ': is a file of the kernel",
        ),
    ],
    ids=["merge", "baseline", "json", "markdown", "body", "targets", "proc-environ"],
)
def test_special_files_are_refused_without_blocking(
    demo: DemoServer, tmp_path: Path, args: list[str], said: str
) -> None:
    """A FIFO given to merge, --baseline, --json, --markdown, -d @ or --targets is exit 2 at
    once (each blocked forever), and /proc/self/environ is no body (the environment, tokens
    included, was sent to the endpoint)."""
    os.mkfifo(tmp_path / "fifo")
    before = len(demo.records)
    given = [a.format(url=demo.url, cwd=tmp_path) for a in args]
    started = time.monotonic()
    done = _cli_process(
        *given, "--no-floor" if given[0] == "probe" else "--json=r.json", cwd=tmp_path
    )
    assert time.monotonic() - started < 20
    assert done.returncode == 2, done.stdout + done.stderr
    assert said.format(cwd=tmp_path) in done.stderr
    assert "Traceback" not in done.stderr
    assert len(demo.records) == before


def test_body_file_past_16_mib_is_refused(tmp_path: Path) -> None:
    """A regular body file over 16 MiB (a sparse file) is still refused by its size."""
    with (tmp_path / "big.json").open("wb") as file:
        file.truncate(17 * 1024 * 1024)
    line = one_error(run_cli("probe", "http://127.0.0.1:9/", "-d", f"@{tmp_path / 'big.json'}"))
    assert "larger than 16 MiB: is it the file you meant?" in line


def _workspace_with_traps(tmp_path: Path) -> Path:
    """A workspace holding a FIFO, links out of it, and a targets file whose body leaves it."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (tmp_path / "outside.json").write_text('{"messages": []}', encoding="utf-8")
    os.mkfifo(workspace / "fifo")
    (workspace / "environ").symlink_to("/proc/self/environ")
    (workspace / "out.json").symlink_to(tmp_path / "outside.json")
    (workspace / "t.yml").write_text(
        "targets:\n  - name: a\n    url: http://127.0.0.1:9/v1/chat/completions\n"
        "    body: '@../outside.json'\n",
        encoding="utf-8",
    )
    return workspace


OUTSIDE = "is outside the workspace ({workspace}), once links are followed"


@pytest.mark.parametrize(
    ("inputs", "said"),
    [
        ({"body": "@/proc/self/environ"}, "body: '/proc/self/environ' " + OUTSIDE),
        ({"body": "@environ"}, "body: '{workspace}/environ' " + OUTSIDE),
        ({"body": "@out.json"}, "body: '{workspace}/out.json' " + OUTSIDE),
        ({"body": "@../outside.json"}, "body: '{workspace}/../outside.json' " + OUTSIDE),
        ({"body": "@fifo"}, "body: cannot read body file '{workspace}/fifo': is a FIFO"),
        ({"ca-bundle": "/etc/ssl/certs/ca-certificates.crt"}, "ca-bundle: '/etc/ssl/certs/"),
        ({"baseline": "../outside.json"}, "baseline: '{workspace}/../outside.json' " + OUTSIDE),
        ({"baseline": "fifo"}, "baseline: cannot read '{workspace}/fifo': is a FIFO"),
        ({"json-path": "fifo"}, "json-path: 'fifo' is not a regular file (a FIFO or a device?)"),
        ({"targets": "t.yml", "url": ""}, "t.yml:4: target 'a', body: '{workspace}/../outside"),
        ({"targets": "fifo", "url": ""}, "targets: cannot read '{workspace}/fifo': is a FIFO"),
    ],
    ids=[
        "proc",
        "link-to-proc",
        "link-out",
        "dot-dot",
        "fifo-body",
        "ca-bundle",
        "baseline-out",
        "baseline-fifo",
        "json-path-fifo",
        "targets-body",
        "targets-fifo",
    ],
)
def test_action_reads_only_regular_files_in_the_workspace(
    demo: DemoServer, tmp_path: Path, inputs: dict[str, str], said: str
) -> None:
    """Every path the action reads is held to the workspace after links are followed, and a
    FIFO is refused at once: exit 2, one ::error, nothing sent (`body: @/proc/self/environ`
    sent the runner's environment to the endpoint; a FIFO blocked the job)."""
    workspace = _workspace_with_traps(tmp_path)
    before = len(demo.records)
    given = {"url": demo.url, **ONE_LOOK, **inputs}
    started = time.monotonic()
    run = run_action(tmp_path, {k: v for k, v in given.items() if v})
    assert time.monotonic() - started < 10
    assert said.format(workspace=workspace.resolve()) in action_error(run)
    assert len(demo.records) == before


# --- 4. result files are data, not verdicts -------------------------------------------------------


@pytest.fixture(scope="module")
def honest(demo: DemoServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A real result file of the demo endpoint, as `probe --json` wrote it (one look)."""
    path = tmp_path_factory.mktemp("honest") / "r.json"
    # -X GET: the bodiless request these files were made of (a chat URL alone now gets a
    # default prompt, and a warning that would be one more here).
    judged(
        run_cli(
            "probe", demo.url, *FAST, "-X", "GET", "--on-undecided", "pass", "--json", str(path)
        )
    )
    document: dict[str, Any] = json.loads(path.read_text())
    return document


def _file(tmp_path: Path, document: object, name: str = "r.json") -> str:
    path = tmp_path / name
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return str(path)


def _every_call(document: dict[str, Any], **changes: object) -> dict[str, Any]:
    """A copy of the document with these fields set on every successful call."""
    copy: dict[str, Any] = json.loads(json.dumps(document))
    for sample in copy["samples"]:
        if sample["ok"]:
            sample.update(changes)
    return copy


def test_honest_files_merge_to_their_own_verdicts(
    honest: dict[str, Any], decided: dict[str, Any], tmp_path: Path
) -> None:
    """Files as probe wrote them (one look, and several) merge to the verdicts they hold, with
    no warning."""
    for document in (honest, decided):
        result = judged(run_cli("merge", _file(tmp_path, document)))
        assert result.exit_code == 0
        warnings = [line for line in result.stderr.splitlines() if line.startswith("warning")]
        assert all(line.startswith("warning: max-calls ") for line in warnings), warnings


@pytest.fixture(scope="module")
def decided(demo: DemoServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A real result file with the default counts and sampling: every check decided PASS."""
    path = tmp_path_factory.mktemp("decided") / "r.json"
    judged(run_cli("probe", demo.url, "--no-floor", "-X", "GET", "--json", str(path)))
    document: dict[str, Any] = json.loads(path.read_text())
    assert document["verdict"]["passed"] is True
    return document


def test_merge_judges_a_file_from_its_calls(decided: dict[str, Any], tmp_path: Path) -> None:
    """A file whose every call took 10 s against a 3 s budget, marked passed, merges to FAIL
    (it merged to PASS: `passed` was taken on trust), and a warning says the file said PASS."""
    forged = _every_call(decided, latency=10.0)
    for sample in forged["samples"]:
        sample["timings"] = {"last_byte": 10.0} if sample["ok"] else sample["timings"]
    result = run_cli("merge", _file(tmp_path, forged))
    assert result.exit_code == 1, result.output
    assert result.stdout.startswith("FAIL: warm p95 10.0 s, over its 3.00 s budget")
    assert (
        "warning: endpoint: the file says PASS, but its calls held against its own budget say "
        "FAIL; FAIL counts" in result.stderr
    )


INFINITE = '"latency": Infinity'


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda d: json.dumps(d).replace('"latency": 0', INFINITE, 1), "holds Infinity"),
        (lambda d: json.dumps(d).replace('"latency": 0', '"latency": 1e400', 1), "1e400"),
        (lambda d: json.dumps(d).replace('"latency": 0', '"latency": NaN', 1), "holds NaN"),
        (lambda d: _every_call(d, latency=1e308), "latency 1e+308 s is not a duration of a call"),
        (lambda d: _every_call(d, latency=-0.05), "latency -0.05 s is not a duration of a call"),
        (lambda d: _every_call(d, latency=None), "marked ok, but it has no latency"),
        (lambda d: _every_call(d, tokens=10**400), "a whole number of 401 digits"),
        (lambda d: {**d, "started_at": 1e300}, "started_at 1e+300 is not a time"),
        (lambda d: {**d, "config": {**d["config"], "budget": None}}, "its budget cannot be read"),
        (lambda d: '{"runs": ' + "[" * 3000 + "]" * 3000 + "}", "nested deeper than 100 levels"),
    ],
    ids=[
        "infinity",
        "1e400",
        "nan",
        "1e308",
        "negative",
        "ok-without-latency",
        "huge-count",
        "no-date",
        "no-budget",
        "deep",
    ],
)
def test_result_file_that_cannot_be_judged_is_exit_2(
    demo: DemoServer,
    honest: dict[str, Any],
    tmp_path: Path,
    change: Callable[[dict[str, Any]], object],
    said: str,
) -> None:
    """merge and --baseline refuse, naming the file, a result file of infinite, NaN, 1e308 or
    negative samples, calls that contradict themselves, a count of 401 digits, a time that is no
    date, no budget, or nesting 3,000 deep (each was exit 3, or read as a regression or none)."""
    path = _file(tmp_path, change(honest))
    line = one_error(run_cli("merge", path))
    assert line.startswith(f"Error: invalid input merge {path}: ")
    assert said in line
    line = one_error(run_cli("probe", demo.url, *FAST, "--baseline", path))
    assert line.startswith(f"Error: invalid input --baseline {path}: ")
    assert said in line


def test_baseline_without_calls_is_refused(
    demo: DemoServer, honest: dict[str, Any], tmp_path: Path
) -> None:
    """A baseline whose samples are empty compared as "no regression"; it is refused now."""
    path = _file(tmp_path, {**honest, "samples": []})
    line = one_error(run_cli("probe", demo.url, *FAST, "--baseline", path))
    assert "cannot be judged: it holds no calls, so there is nothing to compare with" in line


LEAKS = ("hunter2secret", "sk-querysecret123", "proxypass999", "hdrsecret-4567", "bodykey-42")


def _leaky(document: dict[str, Any]) -> dict[str, Any]:
    """A file whose settings were never redacted (by hand, or an old version) and whose error
    detail quotes those secrets back."""
    copy: dict[str, Any] = json.loads(json.dumps(document))
    copy["config"] |= {
        "url": copy["config"]["url"].replace("http://", "http://alice:hunter2secret@")
        + "?key=sk-querysecret123",
        "proxy": "http://bob:proxypass999@10.0.0.1:3128",
        "headers": ["X-Api-Key: hdrsecret-4567"],
        "body": '{"messages": [], "api_key": "bodykey-42"}',
    }
    sample = copy["samples"][-1]
    sample |= {"ok": False, "latency": None, "error": "http_4xx"}
    sample["error_detail"] = (
        "HTTP 401: " + " ".join(LEAKS) + " " + base64.b64encode(b"alice:hunter2secret").decode()
    )
    return copy


def test_secrets_in_an_incoming_file_reach_no_output(
    demo: DemoServer, honest: dict[str, Any], tmp_path: Path
) -> None:
    """merge and a refused baseline re-printed a file's URL userinfo, query key, proxy password,
    header and body credential; now the file's settings are redacted and its text scrubbed."""
    path = _file(tmp_path, _leaky(honest))
    out_json, out_md = tmp_path / "m.json", tmp_path / "m.md"
    merged = judged(run_cli("merge", path, "--json", str(out_json), "--markdown", str(out_md)))
    refused = run_cli("probe", demo.url, *FAST, "--baseline", path)
    assert "measured a different configuration" in one_error(refused)
    everything = merged.output + out_json.read_text() + out_md.read_text() + refused.output
    for leak in LEAKS:
        assert leak not in everything
    assert base64.b64encode(b"alice:hunter2secret").decode() not in everything
    assert "http://***@" in refused.stderr


# --- 5. the wrong culprit named -----------------------------------------------------------------


def _samples(path: Path) -> list[dict[str, Any]]:
    samples: list[dict[str, Any]] = json.loads(path.read_text())["samples"]
    return samples


def test_dead_proxy_is_named_not_the_endpoint(demo: DemoServer, tmp_path: Path) -> None:
    """Nothing listening at the proxy: each call says it could not reach the proxy, and the
    early stop says the endpoint was never asked (both said the endpoint was not reachable)."""
    proxy = f"http://127.0.0.1:{free_port()}"
    json_path = tmp_path / "r.json"
    result = judged(run_cli("probe", demo.url, "--proxy", proxy, *FAST, "--json", str(json_path)))
    assert {s["error_detail"] for s in _samples(json_path)} == {
        f"could not reach the proxy {proxy}: connection refused (check --proxy or "
        "HTTP(S)_PROXY; NO_PROXY or --proxy off goes direct)"
    }
    assert (
        "warning: stopped after the first 3 calls: all failed to connect (connection_refused) "
        f"to the proxy {proxy}, so the endpoint was never asked" in result.stderr
    )
    assert "not reachable" not in result.output


def _proxy_refusing(status: str, header: str) -> Answer:
    """A proxy that answers every request (a forwarded GET or a CONNECT) with `status`."""
    return lambda _: [http(status, b"proxy says no", "text/plain", header)]


@pytest.mark.parametrize(
    ("status", "header", "scheme"),
    [
        ("407 Proxy Authentication Required", 'Proxy-Authenticate: Basic realm="p"\r\n', "http"),
        ("407 Proxy Authentication Required", 'Proxy-Authenticate: Basic realm="p"\r\n', "https"),
        ("401 Unauthorized", 'Proxy-Authenticate: Basic realm="p"\r\n', "http"),
    ],
    ids=["407-forwarded", "407-connect", "401-proxy-authenticate"],
)
def test_proxy_asking_for_credentials_is_named(
    tmp_path: Path, status: str, header: str, scheme: str
) -> None:
    """A proxy's 407 (forwarded http, or refusing CONNECT for https) or a 401 carrying
    Proxy-Authenticate names the proxy and where its credentials go (it read as the endpoint's
    `http_4xx`, or `ProxyError: 407 ...`)."""
    with paced(_proxy_refusing(status, header)) as (proxy, _):
        json_path = tmp_path / "r.json"
        url = f"{scheme}://api.example.invalid/v1/chat/completions"
        args = [url, "--prompt", "hi", "--proxy", proxy + "/", *FAST, "--json", str(json_path)]
        judged(run_cli("probe", *args))
    details = {s["error_detail"] for s in _samples(json_path)}
    assert len(details) == 1
    [detail] = details
    assert detail.startswith(
        f"the proxy {proxy}/ wants credentials (in its URL, http://user:password@host:port, in "
        f"--proxy or HTTP(S)_PROXY); it answered HTTP {status[:3]}"
    )


def test_read_timeouts_are_not_called_unreachable(tmp_path: Path) -> None:
    """A server that takes the request and never answers: the early stop says the calls timed
    out waiting and which --timeout to raise, not that the endpoint is not reachable."""
    with paced(lambda _: []) as (base, _):
        result = judged(run_cli("probe", base + "/", "--timeout", "0.3s", *FAST))
    assert (
        "warning: stopped after the first 3 calls: all timed out waiting for the answer "
        "(read_timeout); the endpoint took the request but answered none within the 0.3 s "
        "--timeout: raise it if the endpoint is that slow" in result.stderr
    )
    assert "not reachable" not in result.output


def test_http2_against_an_http1_server_says_drop_http2(demo: DemoServer, tmp_path: Path) -> None:
    """--http2 on an http:// URL of an HTTP/1.1 server: each call says why and to drop --http2
    (it said "Server disconnected" or "Broken pipe")."""
    json_path = tmp_path / "r.json"
    judged(run_cli("probe", demo.url, "--http2", *FAST, "--json", str(json_path)))
    for sample in _samples(json_path):
        assert sample["error_detail"].endswith(
            "(--http2 speaks HTTP/2 from the first byte on an http:// URL, which a server of "
            "HTTP/1.1 only cannot read: drop --http2)"
        )


# An HTTP/2 server's first bytes, whatever it was sent: its SETTINGS frame (RFC 9113, 3.4), then
# a GOAWAY for a preface that never came, as nginx's h2c-only port answers HTTP/1.1.
H2_ONLY = bytes.fromhex("000000040000000000" + "0000080700000000000000000000000001")


def test_http1_against_an_http2_only_server_says_try_http2(tmp_path: Path) -> None:
    """HTTP/1.1 to a server of HTTP/2 only: each call says its answer is not HTTP/1.1 and to try
    --http2 (it said "illegal request line")."""
    with paced(lambda _: [H2_ONLY]) as (base, _):
        json_path = tmp_path / "r.json"
        judged(run_cli("probe", base + CHAT, "--prompt", "hi", *FAST, "--json", str(json_path)))
    assert {s["error_detail"] for s in _samples(json_path)} == {
        "illegal request line (the answer does not start like HTTP/1.1: a server of HTTP/2 only? "
        "try --http2)"
    }


def test_wait_ready_uses_the_real_method_when_get_is_not_served(tmp_path: Path) -> None:
    """GET answers 405 at once while the POST gets 503 for 0.6 s: the wait goes on with POST
    until it is served, so the cold call succeeds (GET's 405 was taken for ready, and every
    call then got 503)."""
    started = time.monotonic()
    stream = sse_pieces([chunk({"content": "hi"}), chunk({}, "stop"), "[DONE]"])

    def answer(request: bytes) -> list[bytes]:
        if request.startswith(b"GET "):
            return [http("405 Method Not Allowed", b"{}")]
        if time.monotonic() - started < 0.6:
            return [http("503 Service Unavailable", b'{"error": "loading"}')]
        return stream

    with paced(answer) as (base, seen):
        json_path = tmp_path / "r.json"
        args = [base + CHAT, "--prompt", "hi", "--wait-ready", "10s", *FAST, "--on-undecided"]
        judged(run_cli("probe", *args, "pass", "--json", str(json_path)))
    samples = _samples(json_path)
    assert [s["ok"] for s in samples] == [True] * len(samples)
    assert json.loads(json_path.read_text())["ready_after"] >= 0.5
    assert sum(r.startswith(b"POST ") for r in seen.requests) > len(samples)


# --- 6. conventions users bring from curl -------------------------------------------------------

DEAD_PROXY_ENV = {"HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9"}


@pytest.mark.parametrize(
    "no_proxy", ["127.0.0.0/8", "10.0.0.0/8,127.0.0.1/32", "::1/128 127.0.0.0/8"]
)
def test_no_proxy_cidr_goes_direct(demo: DemoServer, tmp_path: Path, no_proxy: str) -> None:
    """NO_PROXY in CIDR notation (curl 7.86+), comma- or space-separated, covers 127.0.0.1: the
    calls go direct (the entry was ignored and every call went to the dead proxy)."""
    json_path = tmp_path / "r.json"
    args = [demo.url, *FAST, "--on-undecided", "pass", "--json", str(json_path)]
    judged(run_cli("probe", *args, env={**DEAD_PROXY_ENV, "NO_PROXY": no_proxy}))
    assert all(s["ok"] for s in _samples(json_path))
    assert json.loads(json_path.read_text())["config"]["proxy"] is None


@pytest.mark.parametrize(
    ("url", "environ", "expected"),
    [
        ("http://[::1]:8080/", {"NO_PROXY": "::1/128"}, None),
        ("http://[::1]:8080/", {"NO_PROXY": "[::1]"}, None),
        ("http://[::2]:8080/", {"NO_PROXY": "::1/128"}, "http://p:1"),
        ("http://10.9.8.7/", {"NO_PROXY": "10.0.0.0/8"}, None),
        ("http://11.9.8.7/", {"NO_PROXY": "10.0.0.0/8"}, "http://p:1"),
        ("http://api.example.com./", {"NO_PROXY": "example.com"}, None),
        ("http://api.example.com/", {"NO_PROXY": "other.org example.com"}, None),
        (
            "https://api.example.com/",
            {"HTTPS_PROXY": "", "ALL_PROXY": "http://all:2"},
            "http://all:2",
        ),
    ],
    ids=[
        "ipv6-cidr",
        "ipv6-brackets",
        "ipv6-other",
        "ipv4-cidr",
        "ipv4-outside",
        "trailing-dot",
        "space-separated",
        "all-proxy",
    ],
)
def test_environment_proxy_as_curl_reads_it(
    url: str, environ: dict[str, str], expected: str | None
) -> None:
    """NO_PROXY's CIDR networks (IPv4, IPv6 with or without brackets), a host's trailing dot,
    entries separated by spaces, and ALL_PROXY when the scheme's variable is not set."""
    given = {"HTTP_PROXY": "http://p:1", "HTTPS_PROXY": "http://p:1", **environ}
    assert proxy_from_environment(url, given) == expected


def test_proxy_without_a_scheme_is_http_as_curl_takes_it(tmp_path: Path) -> None:
    """HTTP_PROXY=host:port (and --proxy host:port) is an http:// proxy, as curl assumes (it
    was refused: "expected an http:// or https:// URL")."""
    with paced(_proxy_refusing("407 Proxy Authentication Required", "")) as (proxy, _):
        bare = proxy.removeprefix("http://")
        url = "http://api.example.invalid/v1/chat/completions"
        for env, extra in (({"HTTP_PROXY": bare}, []), ({}, ["--proxy", bare])):
            json_path = tmp_path / "r.json"
            args = [url, "--prompt", "hi", *extra, *FAST, "--json", str(json_path)]
            judged(run_cli("probe", *args, env=env))
            [detail] = {s["error_detail"] for s in _samples(json_path)}
            assert detail.startswith(f"the proxy http://{bare} wants credentials")


def test_socks_proxy_is_refused_by_name() -> None:
    """A socks5:// proxy (which curl speaks and latency-gate does not) is named as such."""
    line = one_error(run_cli("probe", "http://127.0.0.1:9/", "--proxy", "socks5://u:pw99@p:1"))
    assert line == (
        "Error: invalid input --proxy: socks5:// proxies are not supported; give an http:// or "
        "https:// proxy, got 'socks5://***@p:1'"
    )


@pytest.mark.parametrize("off", ["off", '"off"'], ids=["bare", "quoted"])
def test_targets_file_proxy_off_goes_direct(demo: DemoServer, tmp_path: Path, off: str) -> None:
    """A targets file's `proxy: off` goes direct even with HTTP_PROXY set: bare (YAML reads
    false) it was refused as "expected an http:// or https:// URL, got 'false'"; quoted, the
    environment's proxy was used all the same."""
    path = tmp_path / "t.yml"
    path.write_text(
        f"targets:\n  - name: a\n    url: {demo.url}\n    proxy: {off}\n    warm-calls: 2\n"
        "    concurrency: 1\n    max-calls: 4\n    on-undecided: pass\n",
        encoding="utf-8",
    )
    json_path = tmp_path / "r.json"
    args = ["--targets", str(path), "--no-floor", "--json", str(json_path)]
    judged(run_cli("probe", *args, env=DEAD_PROXY_ENV))
    assert all(s["ok"] for s in _samples(json_path))


def test_quick_curl_line_carries_http2_and_the_proxy(demo: DemoServer) -> None:
    """quick's curl line says --http2-prior-knowledge (http://) and --proxy with its password
    masked, and --noproxy '*' for --proxy off, as the calls were made (it said neither)."""
    with paced(_proxy_refusing("407 Proxy Authentication Required", "")) as (proxy, _):
        with_proxy = proxy.replace("http://", "http://user:pw-curl-99@")
        result = run_cli("quick", demo.url, "--http2", "--proxy", with_proxy)
    line = next(x for x in result.stdout.splitlines() if x.strip().startswith("curl "))
    assert " --http2-prior-knowledge " in line
    assert f" --proxy 'http://***@{proxy.removeprefix('http://')}' " in line
    assert "pw-curl-99" not in result.output
    direct = run_cli("quick", demo.url, "--proxy", "off", env=DEAD_PROXY_ENV)
    assert " --noproxy '*' " in direct.stdout


# --- 7. look-alike loopback in the action's container ---------------------------------------------

IN_CONTAINER = {"LATENCY_GATE_IN_CONTAINER": "1"}


@pytest.mark.parametrize(
    ("host", "seen_as"),
    [
        ("127\u30020\u30020\u30021", "127.0.0.1"),  # ideographic full stops
        ("127\uff0e0\uff0e0\uff0e1", "127.0.0.1"),  # full-width full stops
        ("127\uff610\uff610\uff611", "127.0.0.1"),  # half-width ideographic full stops
        ("LOCALHOST\uff61", "localhost."),
        ("127.0.0.1\u3002", "127.0.0.1."),
        ("api.example\\@127.0.0.1", "127.0.0.1"),  # httpx ends the authority at the backslash
        ("[::ffff:7f00:1]", "::ffff:7f00:1"),
        ("0x7f.1", "0x7f.1"),
        ("2130706433", "2130706433"),
    ],
    ids=[
        "ideographic-dots",
        "full-width-dots",
        "half-width-dots",
        "localhost-dot",
        "trailing-ideographic-dot",
        "backslash",
        "ipv4-mapped-hex",
        "hex-short",
        "decimal",
    ],
)
def test_look_alike_loopback_is_refused_in_the_container(
    tmp_path: Path, host: str, seen_as: str
) -> None:
    """In the Docker action, a URL whose host the client turns into loopback (IDNA maps
    full-width and other dots to ".") is refused like 127.0.0.1 (the full-width spellings
    reached the container's own loopback)."""
    url = f"http://{host}:8080/v1/chat/completions"
    run = run_action(tmp_path, {"url": url, **ONE_LOOK}, IN_CONTAINER)
    assert f" points at {seen_as}, the machine the call starts on;" in action_error(run)


def test_look_alike_loopback_proxy_is_refused_in_the_container(tmp_path: Path) -> None:
    """The same for the proxy: `proxy: http://127。0。0。1:3128` is the container's loopback."""
    inputs = {"url": "http://api.example.com/", "proxy": "http://127\u30020\u30020\u30021:3128"}
    run = run_action(tmp_path, {**inputs, **ONE_LOOK}, IN_CONTAINER)
    assert "invalid input proxy: " in action_error(run)


# --- 8. semantics left over ---------------------------------------------------------------------


def _reasoning_only(_: bytes) -> list[bytes]:
    """A reasoning model cut by its token limit: reasoning deltas, no answer text."""
    thoughts = [chunk({"reasoning_content": f"step {i} "}) for i in range(3)]
    return sse_pieces([*thoughts, chunk({}, "length"), "[DONE]"])


def test_reasoning_only_answers_have_a_first_token(tmp_path: Path) -> None:
    """Answers of reasoning only (every call ok) pass a first-token budget on their first
    reasoning delta, which is what the user saw arrive (they failed it with "no data")."""
    with paced(_reasoning_only) as (base, _):
        json_path = tmp_path / "r.json"
        args = [base + CHAT, "--prompt", "hi", "--stream", "--max-ttft-p95", "5s", *FAST]
        result = judged(run_cli("probe", *args, "--on-undecided", "pass", "--json", str(json_path)))
    assert "no data" not in result.output
    for sample in _samples(json_path):
        assert sample["ok"]
        assert sample["timings"]["first_token"] == sample["timings"]["first_event"] is not None
    ttft = next(
        c
        for c in json.loads(json_path.read_text())["verdict"]["checks"]
        if c["number"] == "ttft_p95"
    )
    assert ttft["value"] is not None
    assert ttft["passed"] is True


def _anthropic_redacted(_: bytes) -> list[bytes]:
    """An Anthropic stream whose thinking is all redacted, then stopped by its limit."""
    events = [
        ("message_start", {"type": "message_start", "message": {"usage": {"output_tokens": 1}}}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {
                    "type": "redacted_thinking",
                    "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDF",
                },
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "max_tokens"},
                "usage": {"output_tokens": 64},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    pieces = [
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    ]
    for name, data in events:
        event = f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
        pieces.append(f"{len(event):x}\r\n".encode() + event + b"\r\n")
    pieces[-1] += b"0\r\n\r\n"
    return pieces


def test_anthropic_redacted_thinking_is_an_answer(tmp_path: Path) -> None:
    """Anthropic's redacted_thinking (encrypted, no deltas) is reasoning the user saw arrive,
    not an empty answer (every call was `empty_answer`)."""
    with paced(_anthropic_redacted) as (base, _):
        json_path = tmp_path / "r.json"
        args = [base + "/v1/messages", "--prompt", "hi", "--stream", *FAST, "--on-undecided"]
        judged(run_cli("probe", *args, "pass", "--json", str(json_path)))
    for sample in _samples(json_path):
        assert (sample["ok"], sample["error"]) == (True, None)
        assert sample["reasoning_events"] == 1
        assert sample["timings"]["first_token"] is not None


def test_cold_call_that_timed_out_is_a_finding(tmp_path: Path) -> None:
    """The cold call times out, the later calls answer: a finding says cold start was not
    measured and why (it was a PASS with cold start "—" and nothing said)."""
    answered = http(
        "200 OK", b'{"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}]}'
    )

    def answer(_: bytes) -> list[bytes]:
        first = len(seen.requests) == 1
        return [] if first else [answered]  # the first request is never answered

    with paced(answer) as (base, seen):
        json_path = tmp_path / "r.json"
        args = [base + CHAT, "--prompt", "hi", "--timeout", "0.5s", *FAST, "--on-undecided"]
        judged(run_cli("probe", *args, "pass", "--max-error-rate", "off", "--json", str(json_path)))
    document = json.loads(json_path.read_text())
    assert document["numbers"]["cold_start"] is None
    [finding] = [f for f in document["findings"] if f["code"] == "cold-call-failed"]
    assert finding["title"] == "Cold start not measured: the cold call failed"
    assert finding["evidence"].startswith(
        "the cold call (the first, on a new connection) failed (read_timeout: no answer within "
        "the 0.5 s timeout), while 3 of 3 later calls were answered"
    )
    assert finding["hint"].startswith("a cold start longer than the timeout fails like this")


def test_a_personal_tokens_owner_keeps_a_comment_quoting_the_marker() -> None:
    """A comment by the token's own user that merely holds the marker (a note quoting it) is
    theirs: a new report comment is created beside it (it was adopted and overwritten)."""
    marker = comment_marker("ci", "gate", ["api"])
    note = f"Note to self: the report below carries {marker}, keep it."
    with FakeGitHub(tokens={"ghp_personal_h3": PERSONAL_USER}) as fake:
        fake.seed_comments(7, 1, body=note, user=PERSONAL_USER)
        with GitHubClient(
            api_url=fake.url, token="ghp_personal_h3", repository=fake.repository
        ) as client:
            outcome = client.upsert_comment(7, marker, f"{marker}\nPASS")
        assert fake.violations == []
    assert outcome.action == "created"
    assert [c["body"] for c in fake.comments[7]] == [note, f"{marker}\nPASS"]


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


# --- more of each class, found by trying ---------------------------------------------------------

HEADER_TOKEN = "hdr-token-0123456789abcdefXYZ"
BASIC_PASSWORD = "basic-pw-9876543210"
PROXY_PASSWORD = "proxy-pw-1357924680"


def _echo_credentials(request: bytes) -> list[bytes]:
    """A 401 quoting back, each alone: the bearer token without its scheme, the password a
    Basic header encodes, the Proxy-Authorization pair, and the token shouted; relayed by a
    proxy (its Via header), as the endpoint's answer through one is."""
    auth = re.search(rb"(?i)proxy-authorization: basic (\S+)", request)
    proxy_pair = auth[1] if auth else b"-"
    body = (
        f"token {HEADER_TOKEN} pw {BASIC_PASSWORD} shouted {HEADER_TOKEN.upper()} "
        f"proxy-auth {proxy_pair.decode()}"
    )
    return [http("401 Unauthorized", body.encode(), "text/plain", "Via: 1.1 relay\r\n")]


def test_credentials_inside_header_values_are_secrets(tmp_path: Path) -> None:
    """`Authorization: Bearer T` echoed as T alone, a `Basic` header's password alone, the token
    upper-cased, and a proxy's Basic pair (from its URL) echoed back are all *** (only the whole
    header value, and the endpoint URL's pair, were secrets)."""
    basic = base64.b64encode(f"carol:{BASIC_PASSWORD}".encode()).decode()
    with paced(_echo_credentials) as (base, _):
        proxy = base.replace("http://", f"http://dave:{PROXY_PASSWORD}@")
        json_path = tmp_path / "r.json"
        args = ["http://api.example.invalid/x", "-H", f"Authorization: Bearer {HEADER_TOKEN}"]
        args += ["-H", f"X-Basic: Basic {basic}", "--proxy", proxy, *FAST, "--json", str(json_path)]
        result = judged(run_cli("probe", *args))
    detail = _samples(json_path)[0]["error_detail"]
    assert detail == "HTTP 401: token *** pw *** shouted *** proxy-auth ***"
    everything = result.output + json_path.read_text()
    for secret in (HEADER_TOKEN, BASIC_PASSWORD, PROXY_PASSWORD, HEADER_TOKEN.upper()):
        assert secret not in everything


def test_max_regression_of_400_digits_is_exit_2(
    demo: DemoServer, decided: dict[str, Any], tmp_path: Path
) -> None:
    """--max-regression 999…9% (read as an infinity) is refused by its size (the permutation
    test raised "math domain error": exit 3)."""
    path = _file(tmp_path, decided)
    line = one_error(
        run_cli(
            "probe", demo.url, "--no-floor", "--baseline", path, "--max-regression", "9" * 400 + "%"
        )
    )
    assert "--max-regression: expected a share of at most 10,000%" in line


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


def test_action_output_file_that_is_a_fifo_is_refused_before_any_call(
    demo: DemoServer, tmp_path: Path
) -> None:
    """GITHUB_OUTPUT naming a FIFO is exit 2 before the first call (the run blocked at its end)."""
    os.mkfifo(tmp_path / "out-fifo")
    before = len(demo.records)
    run = run_action(
        tmp_path, {"url": demo.url, **ONE_LOOK}, {"GITHUB_OUTPUT": str(tmp_path / "out-fifo")}
    )
    assert run.code == 2, run.log
    assert "GITHUB_OUTPUT: cannot write" in run.log
    assert "it is a FIFO (named pipe), which could block the run" in run.log
    assert len(demo.records) == before


def test_runner_files_that_are_fifos_never_block_the_action(
    demo: DemoServer, tmp_path: Path
) -> None:
    """GITHUB_EVENT_PATH and GITHUB_STEP_SUMMARY naming FIFOs nothing writes or reads: the run
    ends, the event is read as no event and the summary is a warning (each blocked for ever)."""
    os.mkfifo(tmp_path / "event-fifo")
    os.mkfifo(tmp_path / "summary-fifo")
    fifos = {
        "GITHUB_EVENT_PATH": str(tmp_path / "event-fifo"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary-fifo"),
    }
    run = run_action(tmp_path, {"url": demo.url, "comment": "auto", **ONE_LOOK}, fifos)
    assert run.code == 0, run.log
    assert "latency-gate: not a pull request event (push): no PR comment" in run.log
    assert "::warning::could not write the job summary" in run.log
