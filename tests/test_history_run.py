"""`--history` end to end: the CLI and the action against a loopback demo endpoint, with a
history folder made of real results of that endpoint (their numbers spread as runs on other days
would be), appended to after the run as `history-append` says."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from conftest import REPO_ROOT
from fake_github import parse_github_output
from result_factory import make_result

from latency_gate import cli
from latency_gate.action import main
from latency_gate.action.history import append_history
from latency_gate.demo import DemoServer, EndpointSpec, serve_in_thread
from latency_gate.models import Numbers, RunResult
from latency_gate.results.history_folder import HistoryOptions
from latency_gate.results.json_file import dump_runs, parse_runs

SPEC = EndpointSpec(name="hist", latency=0.04, jitter=0.02, seed=5, tokens=3, token_interval=0.001)
FEW = ["--warm-calls", "20", "--concurrency", "5", "--prompt", "Hi", "--no-floor"]
DAY = 86_400.0
# The spread of main's runs on other days: a factor on each percentile, oldest first.
SPREAD = (0.95, 1.10, 0.90, 1.05, 1.15, 0.92)
# The endpoint and the client share this machine's cores: on a loaded machine a run's
# percentiles grow by tens of milliseconds over the history's run made a moment before, which
# the history's default limit (a threshold 1.5 times the level of 6 runs, 2 times that of 3) can
# call a regression. A test that is about the history's other work (the fallback, the warnings, the
# appending) gives a limit that no load reaches; the one about the regression gives an absolute
# margin beside the relative one (both must be exceeded) and a slowdown well past it.
NOT_ABOUT_THE_REGRESSION = ("--max-regression", "10000%")
LOAD_MARGIN = ("--max-regression", "10%,80ms")
SLOWER = 5


@pytest.fixture
def server() -> Iterator[DemoServer]:
    with serve_in_thread(SPEC) as servers:
        yield servers[0]


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli.main, list(args), prog_name="latency-gate")


def _spread(run: RunResult, factor: float, days_ago: float) -> RunResult:
    """`run` as if measured `days_ago` days earlier, its percentiles `factor` times as long."""
    numbers = run.numbers.model_dump()
    for name in ("cold_start", "warm_p50", "warm_p95", "concurrent_p95"):
        numbers[name] *= factor
    return run.model_copy(
        update={"numbers": Numbers(**numbers), "started_at": run.started_at - days_ago * DAY}
    )


def _history(server: DemoServer, folder: Path, runs: int, *extra: str) -> None:
    """A folder of `runs` results of the endpoint, one real run spread over earlier days."""
    first = folder.parent / "first.json"
    done = invoke("probe", server.url, *FEW, *extra, "--json", str(first))
    assert done.exit_code == 0, done.output
    (run,) = parse_runs(first.read_text(encoding="utf-8"), "first")
    folder.mkdir()
    for i, factor in enumerate(SPREAD[:runs]):
        (folder / f"main-{i}.json").write_text(dump_runs([_spread(run, factor, runs - i)]))


@pytest.mark.slow
def test_cli_judges_against_the_history(server: DemoServer, tmp_path: Path) -> None:
    """Six runs of main: an unchanged endpoint passes, said against the history of 6 runs; the
    endpoint five times slower (160 ms more a call, twice the 80 ms margin) fails on warm p95,
    against the history."""
    folder = tmp_path / "history"
    _history(server, folder, 6)
    same = invoke("probe", server.url, *FEW, *LOAD_MARGIN, "--history", str(folder))
    assert same.exit_code == 0, same.output
    assert (
        "against the history of 6 runs (prediction interval, drift between runs included): no "
        "number regressed" in " ".join(same.output.split())
    )
    server.spec = SPEC.model_copy(update={"latency": SPEC.latency * SLOWER})
    head = tmp_path / "head.json"
    slower = invoke(
        "probe", server.url, *FEW, *LOAD_MARGIN, "--history", str(folder), "--json", str(head)
    )
    assert slower.exit_code == 1, slower.output
    assert slower.stdout.startswith("FAIL: regression: warm p95 ")
    (result,) = parse_runs(head.read_text(encoding="utf-8"), "head")
    assert result.baseline is not None
    assert result.baseline.history is not None
    assert result.baseline.history.judged == "prediction"
    assert "warm_p95" in {d.number for d in result.baseline.regressions}
    assert sorted(path.name for path in folder.iterdir()) == [f"main-{i}.json" for i in range(6)]


@pytest.mark.slow
def test_cli_two_runs_fall_back_to_the_newest(server: DemoServer, tmp_path: Path) -> None:
    """Two runs of main: compared with the newest, and said so."""
    folder = tmp_path / "history"
    _history(server, folder, 2)
    done = invoke(
        "probe",
        server.url,
        *FEW,
        *NOT_ABOUT_THE_REGRESSION,
        "--max-calls",
        "60",
        "--history",
        str(folder),
    )
    assert done.exit_code == 0, done.output
    said = " ".join(done.output.split())
    assert (
        "history: 2 usable runs, fewer than 3: compared with the newest one only; drift between "
        "runs is not accounted for" in said
    )


@pytest.mark.slow
def test_cli_skips_a_broken_file_with_a_warning(server: DemoServer, tmp_path: Path) -> None:
    """A broken file in the folder is a warning naming it; the run goes on (exit 0)."""
    folder = tmp_path / "history"
    _history(server, folder, 3)
    (folder / "torn.json").write_text('{"schema_version": 1, "runs": [', encoding="utf-8")
    done = invoke("probe", server.url, *FEW, *NOT_ABOUT_THE_REGRESSION, "--history", str(folder))
    assert done.exit_code == 0, done.output
    assert "warning: history: skipped 'torn.json' (" in done.stderr
    assert "against the history of 3 runs" in done.output


@pytest.mark.slow
def test_cli_appends_when_told_and_prunes(server: DemoServer, tmp_path: Path) -> None:
    """--history-append true: the result (redacted, as --json writes it) joins the folder as a
    new file of ours, and the folder is pruned to --history-keep of ours only."""
    folder = tmp_path / "history"
    _history(server, folder, 3, "--api-key", "sk-history-secret-0001")
    done = invoke(
        "probe",
        server.url,
        *FEW,
        *NOT_ABOUT_THE_REGRESSION,
        *("--api-key", "sk-history-secret-0001", "--history", str(folder)),
        *("--history-append", "true", "--history-size", "3", "--history-keep", "3"),
    )
    assert done.exit_code == 0, done.output
    ours = sorted(folder.glob("latency-gate-*.json"))
    assert len(ours) == 1
    assert "history: appended (history-append is true): wrote 'latency-gate-" in done.stderr
    text = ours[0].read_text(encoding="utf-8")
    assert "sk-history-secret-0001" not in text
    (appended,) = parse_runs(text, "appended")
    assert appended.baseline is not None
    assert appended.baseline.history is not None
    assert len(appended.baseline.history.runs) == 3
    assert len(list(folder.glob("main-*.json"))) == 3  # not ours: never pruned


@pytest.mark.slow
def test_cli_auto_does_not_append_outside_actions(server: DemoServer, tmp_path: Path) -> None:
    """The default (auto) outside GitHub Actions: nothing written, and the reason said."""
    folder = tmp_path / "history"
    done = invoke("probe", server.url, *FEW, "--history", str(folder))
    assert done.exit_code == 0, done.output
    assert "no history folder at" in done.output
    assert "history: not appended: not in GitHub Actions (history-append auto)" in done.stderr
    assert not folder.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--history", "h", "--baseline", "b.json"],
            "--history: give one of --baseline (an earlier run's result), --baseline-url",
        ),
        (["--history", "h", "--history-size", "2"], "--history-size: expected a whole number of"),
        (["--history-size", "5"], "--history-size: needs --history"),
        (["--history", "h", "--history-append", "maybe"], "--history-append: expected auto, true"),
        (["--history", "h", "--history-keep", "4"], "--history-keep: keeps 4 files, fewer than"),
    ],
)
def test_cli_bad_history_options_exit_2(
    server: DemoServer, tmp_path: Path, args: list[str], message: str
) -> None:
    """Each bad history option: exit 2 naming it, before any call."""
    done = CliRunner().invoke(cli.main, ["probe", server.url, *FEW, *args], prog_name="lg")
    assert done.exit_code == 2, done.output
    assert message in done.output
    assert server.records == []


def test_cli_history_that_is_a_file_exits_2(server: DemoServer, tmp_path: Path) -> None:
    """A path that is a file: exit 2, before any call."""
    (tmp_path / "h").write_text("x", encoding="utf-8")
    done = invoke("probe", server.url, *FEW, "--history", str(tmp_path / "h"))
    assert done.exit_code == 2, done.output
    assert server.records == []


# --- the action ----------------------------------------------------------------------------------


def _action(
    tmp_path: Path, url: str, inputs: Mapping[str, str], env: Mapping[str, str]
) -> tuple[int, str, dict[str, str]]:
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    files = tmp_path / "files"
    files.mkdir(exist_ok=True)
    (files / "output").write_text("", encoding="utf-8")
    given = {
        "url": url,
        "prompt": "Hi",
        "warm-calls": "20",
        "concurrency": "5",
        "comment": "never",
        **inputs,
    }
    environ = {
        **{f"INPUT_{name.upper()}": value for name, value in given.items()},
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_OUTPUT": str(files / "output"),
        "GITHUB_STEP_SUMMARY": str(files / "summary.md"),
        **env,
    }
    out = io.StringIO()
    code = main(environ, out=out)
    return code, out.getvalue(), parse_github_output((files / "output").read_text("utf-8"))


def _push(tmp_path: Path, ref: str = "refs/heads/main") -> dict[str, str]:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"ref": ref, "repository": {"default_branch": "main"}}))
    return {
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "push",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_REF": ref,
        "GITHUB_RUN_ID": "777",
    }


@pytest.mark.slow
def test_action_appends_on_the_default_branch(server: DemoServer, tmp_path: Path) -> None:
    """history: .latency-history on a push to main: a first run (no folder) says so, then its
    result is the folder's first file, named with the run id."""
    code, log, outputs = _action(
        tmp_path, server.url, {"history": ".latency-history"}, _push(tmp_path)
    )
    assert code == 0, log
    assert outputs["verdict"] == "PASS"
    folder = tmp_path / "workspace" / ".latency-history"
    (written,) = folder.iterdir()
    assert written.name.startswith("latency-gate-")
    assert written.name.endswith("-777.json")
    assert (
        "latency-gate: history appended: a push run on the default branch 'main': wrote "
        f".latency-history/{written.name}" in log
    )
    assert "::warning title=latency-gate%3A no history::no history for endpoint: no history" in log


@pytest.mark.slow
def test_action_never_appends_on_a_pull_request(server: DemoServer, tmp_path: Path) -> None:
    """A pull_request run reads the history and writes nothing into it."""
    env = {
        **_push(tmp_path),
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_REF": "refs/pull/4/merge",
    }
    code, log, _ = _action(tmp_path, server.url, {"history": ".latency-history"}, env)
    assert code == 0, log
    assert "latency-gate: history not appended: a pull_request run never appends" in log
    assert not (tmp_path / "workspace" / ".latency-history").exists()


@pytest.mark.slow
def test_action_warns_of_a_skipped_file(server: DemoServer, tmp_path: Path) -> None:
    """A file of the folder that is not a result: a warning annotation naming it, exit 0."""
    folder = tmp_path / "workspace" / "h"
    folder.mkdir(parents=True)
    (folder / "x.json").write_text("[]", encoding="utf-8")
    code, log, _ = _action(tmp_path, server.url, {"history": "h", "history-append": "false"}, {})
    assert code == 0, log
    assert (
        "::warning title=latency-gate%3A history::history: skipped 'x.json' (holds no runs)" in log
    )


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"history": "../outside"}, "history: '../outside' is outside the workspace"),
        ({"history": "."}, "history: '.' is the workspace itself"),
        (
            {"history": "h", "baseline": "b.json"},
            "history: give one of `baseline` (an earlier run's result), `baseline-url`",
        ),
        ({"history": "h", "history-size": "1"}, "history-size: expected a whole number of"),
        ({"history-append": "sometimes"}, "history-append: expected auto, true or false"),
        (
            {"max-regression": "20%"},
            "max-regression: needs `baseline`, `baseline-url` or `history` to compare with",
        ),
    ],
)
def test_action_bad_history_inputs_exit_2(
    server: DemoServer, tmp_path: Path, inputs: dict[str, str], message: str
) -> None:
    """Each bad history input is named, exit 2, before any call."""
    code, log, _ = _action(tmp_path, server.url, inputs, {})
    assert code == 2, log
    assert message in log
    assert server.records == []


@pytest.mark.parametrize("name", ["latency-history.yml", "goodput-nightly.yml"])
def test_workflows_doc_shows_the_workflow_act_runs(name: str) -> None:
    """docs/workflows.md's history workflow and its nightly goodput workflow are docs/examples'
    files, character for character: the files tests/test_act_history.py and test_act_nightly.py
    run under act (the README showed them until issue 39 moved them to docs/workflows.md)."""
    example = (REPO_ROOT / "docs" / "examples" / name).read_text("utf-8")
    workflows = (REPO_ROOT / "docs" / "workflows.md").read_text("utf-8")
    assert f"```yaml\n{example}```\n" in workflows


def test_an_interrupted_run_is_not_appended(tmp_path: Path) -> None:
    """A run cut short is not main's level: history-append true still leaves it out, said so."""
    out = io.StringIO()
    options = HistoryOptions(tmp_path / "h", "h", 10, 50, "true")
    assert append_history([make_result(interrupted=True)], options, {}, tmp_path, out) is None
    assert "latency-gate: history not appended: the run was interrupted" in out.getvalue()
    assert not (tmp_path / "h").exists()


def test_a_folder_that_cannot_be_written_is_a_warning(tmp_path: Path) -> None:
    """Appending into a path that is a file: a warning annotation, nothing raised."""
    (tmp_path / "h").write_text("a file", encoding="utf-8")
    out = io.StringIO()
    options = HistoryOptions(tmp_path / "h", "h", 10, 50, "true")
    assert append_history([make_result()], options, {}, tmp_path, out) is None
    assert out.getvalue().startswith(
        "::warning title=latency-gate%3A history::history: could not append to 'h': "
    )


@pytest.mark.slow
def test_a_run_records_the_commit_it_measured(server: DemoServer, tmp_path: Path) -> None:
    """In a workflow the result records GITHUB_SHA, which names the run in later runs' trend
    charts; a GITHUB_SHA that is not a commit's SHA is not recorded, and a result file whose
    commit is not one is refused when read back."""
    sha = "0123456789abcdef0123456789abcdef01234567"
    for given, recorded in ((sha, sha), ("$(echo hi)", None)):
        path = tmp_path / "r.json"
        done = CliRunner().invoke(
            cli.main,
            ["probe", server.url, *FEW, "--json", str(path)],
            env={"GITHUB_SHA": given},
        )
        assert done.exit_code == 0, done.output
        assert json.loads(path.read_text(encoding="utf-8"))["commit"] == recorded
    document = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**document, "commit": "<b>a1b2c3d</b>"}), encoding="utf-8")
    refused = invoke("merge", str(path))
    assert refused.exit_code == 2
    assert "commit '<b>a1b2c3d</b>' is not a commit's SHA" in refused.output
