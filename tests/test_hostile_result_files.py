"""Hostile input: result files read back are data, not verdicts.

`merge` and `--baseline` judge a file from its calls, and refuse, naming the file and the field, one
no run could write: infinite, NaN or negative numbers, impossible counts, a capacity search or calls
at a rate no run makes, a comparison's name, a baseline without calls; a file's unredacted secrets
reach no output; a file given twice, or copied, is said. Files as probe wrote them merge as before.
docs/faults.md, "Hostile input", says what each case did before its fix.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hostile_data import _copy, _write
from hostile_kit import FAST, ONE_LOOK, action_error, judged, one_error, run_action, run_cli
from report_scenarios import scenario_history
from result_factory import make_result

from latency_gate import cli
from latency_gate.demo import DemoServer, EndpointSpec, serve_in_thread
from latency_gate.results.json_file import dump_runs


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoServer]:
    """A healthy streaming chat endpoint; `records` says whether anything reached it."""
    with serve_in_thread(EndpointSpec(latency=0.0, tokens=2, token_interval=0.0)) as (server,):
        yield server


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


@pytest.fixture(scope="module")
def decided(demo: DemoServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A real result file with the default counts and sampling: every check decided PASS."""
    path = tmp_path_factory.mktemp("decided") / "r.json"
    judged(run_cli("probe", demo.url, "--no-floor", "-X", "GET", "--json", str(path)))
    document: dict[str, Any] = json.loads(path.read_text())
    assert document["verdict"]["passed"] is True
    return document


INFINITE = '"latency": Infinity'


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


@pytest.fixture(scope="module")
def searched(demo: DemoServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A real result file with a capacity search (levels 2, 4, 8)."""
    path = tmp_path_factory.mktemp("searched") / "r.json"
    judged(
        run_cli(
            "probe",
            demo.url,
            *("--no-floor", "--warm-calls", "5", "--concurrency", "2"),
            *("--capacity", "--capacity-max", "8", "--max-concurrent-p95", "1s"),
            "--json",
            str(path),
        )
    )
    document: dict[str, Any] = json.loads(path.read_text())
    assert [level["concurrency"] for level in document["capacity"]["levels"]] == [2, 4, 8]
    return document


def _level_calls(document: dict[str, Any]) -> None:
    for sample in document["capacity"]["levels"][1]["samples"]:
        if sample["ok"]:
            sample |= {"latency": -1.0, "timings": {"last_byte": -1.0}, "token_gaps": None}


def _delta(**fields: object) -> Callable[[dict[str, Any]], None]:
    def change(document: dict[str, Any]) -> None:
        document["baseline"]["deltas"][2] |= fields

    return change


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


BASE_LEAKS = ("basepass77", "sk-basequery88", "bproxy66", "bhdr-5555", "bkey-4444", "bbody-33")


def test_the_base_settings_of_an_incoming_file_are_redacted_and_scrubbed(
    demo: DemoServer, honest: dict[str, Any], tmp_path: Path
) -> None:
    """An A/B run's file written by hand with the base's settings in clear (its URL's userinfo
    and query key, proxy password, secret header, key, and own request's body credential),
    quoted back by an error: none of them reaches merge's outputs or a refused baseline's
    message (round five: only the head's settings were redacted on reading)."""
    copy: dict[str, Any] = json.loads(json.dumps(honest))
    copy["config"] |= {
        "baseline_url": copy["config"]["url"].replace("http://", "http://carol:basepass77@")
        + "?key=sk-basequery88",
        "baseline_proxy": "http://dave:bproxy66@10.0.0.2:3128",
        "baseline_headers": ["X-Api-Key: bhdr-5555", "Accept: text/event-stream"],
        "baseline_api_key": "bkey-4444",
        "baseline_request": {
            "format": "openai",
            "body": '{"model": "b", "messages": [], "api_key": "bbody-33"}',
        },
    }
    sample = copy["samples"][-1]
    sample |= {"ok": False, "latency": None, "error": "http_4xx"}
    sample["error_detail"] = "HTTP 401: " + " ".join(BASE_LEAKS)
    path = _file(tmp_path, copy)
    out_json, out_md = tmp_path / "m.json", tmp_path / "m.md"
    merged = judged(run_cli("merge", path, "--json", str(out_json), "--markdown", str(out_md)))
    refused = run_cli("probe", demo.url, *FAST, "--baseline", path)
    everything = merged.output + out_json.read_text() + out_md.read_text() + refused.output
    for leak in BASE_LEAKS:
        assert leak not in everything
    kept = json.loads(out_json.read_text())
    config = (kept["runs"][0] if "runs" in kept else kept)["config"]
    assert config["baseline_headers"] == ["X-Api-Key: ***", "Accept: text/event-stream"]
    assert config["baseline_api_key"] == "***"
    assert config["baseline_request"]["body"].startswith("*** (sha256 ")


def test_merge_of_the_same_file_twice_says_so(tmp_path: Path) -> None:
    """merge a.json a.json: exit 2 naming the file (each run would count twice)."""
    (tmp_path / "a.json").write_text(dump_runs([make_result("api")]))
    result = CliRunner().invoke(
        cli.main, ["merge", str(tmp_path / "a.json"), str(tmp_path / "a.json")]
    )
    assert one_error(result) == (
        f"Error: invalid input merge: '{tmp_path}/a.json' is given twice: each run would be "
        "counted twice"
    )


def test_merge_of_a_copied_file_warns(tmp_path: Path) -> None:
    """Two files with the very same run: merged, with a warning that it counts twice."""
    text = dump_runs([make_result("api")])
    (tmp_path / "a.json").write_text(text)
    (tmp_path / "b.json").write_text(text)
    result = CliRunner().invoke(
        cli.main, ["merge", str(tmp_path / "a.json"), str(tmp_path / "b.json")]
    )
    assert result.exit_code == 0, result.output
    assert result.stderr == (
        f"warning: '{tmp_path}/a.json' and '{tmp_path}/b.json' hold the same run of 'api' "
        "(a copied file?): it is counted twice\n"
    )


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (_level_calls, "capacity level 4: call concurrent #0: latency -1 s is not a duration"),
        (
            lambda d: d["capacity"]["levels"][1].update(concurrency=10**12),
            "capacity level 1000000000000 is not a count from 1 to 8",
        ),
        (
            lambda d: d["capacity"].update(maximum=10**9),
            "capacity.maximum 1000000000 is not the run's capacity_max 8",
        ),
        (
            lambda d: d["capacity"].update(start=7),
            "capacity.start 7 is not the run's concurrency 2",
        ),
        (lambda d: d["capacity"].update(seconds=-5.0), "capacity.seconds -5 s is not a duration"),
        (
            lambda d: d["capacity"]["levels"][2].update(concurrency=4),
            "capacity level 4 is there twice",
        ),
    ],
    ids=["level-calls", "level", "maximum", "start", "seconds", "twice"],
)
def test_merge_refuses_a_capacity_search_no_run_could_make(
    searched: dict[str, Any],
    tmp_path: Path,
    change: Callable[[dict[str, Any]], None],
    said: str,
) -> None:
    """A level's calls are checked as the run's are, and the search's counts against its own
    settings: a level's p95 of "-1.00 s", "1,000,000,000,000 at once" and "breaks at None" were
    shown as written; now exit 2 naming the file and the field."""
    document = _copy(searched)
    change(document)
    path = _write(tmp_path / "r.json", document)
    assert said in one_error(run_cli("merge", path))


def test_a_capacity_search_as_written_merges(searched: dict[str, Any], tmp_path: Path) -> None:
    """The check can pass: the search as probe wrote it merges, its levels shown."""
    done = judged(run_cli("merge", _write(tmp_path / "r.json", searched)))
    assert "capacity: holds concurrent p95 ≤ 1.00 s up to 8 calls at once" in done.output


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (
            lambda d: d.update(base_samples=[d["samples"][1] | {"latency": -3.0}]),
            "base call warm #0: latency -3 s is not a duration of a call",
        ),
        (
            lambda d: d["sampling"].update(extra_calls=10**9),
            "sampling says 3 + 1000000000 calls, but the file holds",
        ),
        (
            lambda d: d.update(floor={**d["floor"], "sequential_p50": -1.0}),
            "floor.sequential_p50 -1 s is not a duration",
        ),
        (_delta(base=-1.0), "baseline.deltas[2].base -1 s is not a duration"),
        (_delta(number="<img src=x onerror=alert(1)>"), "is not a number's name"),
        (_delta(interval=[-2.0, 1.0]), "baseline.deltas[2].interval holds a negative ratio"),
    ],
    ids=["base-calls", "sampling", "floor", "delta", "delta-name", "interval"],
)
def test_merge_refuses_counts_and_comparisons_no_run_could_make(
    tmp_path: Path, change: Callable[[dict[str, Any]], None], said: str
) -> None:
    """An A/B run's base calls, the sampling's counts, the floor, and a comparison's numbers
    (not derived again: the base's calls are not in the file) are checked when read back; a
    number's name went raw into the Markdown table."""
    (result,) = scenario_history()
    document: dict[str, Any] = json.loads(dump_runs([result]))
    document["sampling"] = {
        "looks": 1,
        "first_look_calls": 3,
        "extra_calls": len(document["samples"]) - 3,
        "max_calls": 500,
        "on_undecided": "estimate",
    }
    change(document)
    path = _write(tmp_path / "r.json", document)
    assert said in one_error(run_cli("merge", path))


def test_a_comparisons_note_is_text_in_the_markdown(tmp_path: Path) -> None:
    """A comparison's note is shown as the file wrote it (the base's calls are not in the file
    to derive it again): it went raw into the Markdown table; now it is escaped text."""
    (result,) = scenario_history()
    document: dict[str, Any] = json.loads(dump_runs([result]))
    document["baseline"]["deltas"][0]["note"] = "<img src=x onerror=alert(1)> @everyone"
    report = tmp_path / "r.md"
    judged(run_cli("merge", _write(tmp_path / "r.json", document), "--markdown", str(report)))
    text = report.read_text(encoding="utf-8")
    assert "<img" not in text
    assert "&lt;img src=x onerror=alert(1)&gt; `@everyone`" in text


def test_json_path_ending_in_a_slash_is_a_folder(demo: DemoServer, tmp_path: Path) -> None:
    """`json-path: out/` (and `--json out/`) wrote a file named `out`; it names a folder, so it
    is bad input naming the input, before any call."""
    before = len(demo.records)
    run = run_action(tmp_path, {"url": demo.url, **ONE_LOOK, "json-path": "out/"})
    assert "json-path: 'out/' ends in '/', which names a folder" in action_error(run)
    assert not (tmp_path / "workspace" / "out").exists()
    done = run_cli("probe", demo.url, *FAST, "--json", str(tmp_path / "cli") + "/")
    assert done.exit_code == 2
    assert "ends in '/', which names a folder: name a file" in done.output
    assert not (tmp_path / "cli").exists()
    assert len(demo.records) == before


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
