"""The command line through click's CliRunner, against real demo endpoints on loopback.

Measured numbers differ from run to run, so exact-output checks first normalise them: each
value cell of the table becomes `<duration>` (after checking it is one) and the columns are
joined with ` | `. The normalised outputs are golden files, tests/golden/cli_*.txt; after an
intended change, regenerate them and read the diff:

    UPDATE_GOLDEN=1 python -m pytest tests/test_cli.py -q
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import click
import httpx
import jsonschema
import pytest
from click.testing import CliRunner, Result
from conftest import DemoRun
from demo_process import demo_server
from one_look import one_look_args

from latency_gate import __version__, cli
from latency_gate.cli.grouped_help import GroupedCommand
from latency_gate.demo import EndpointSpec, serve_in_thread
from latency_gate.errors import BUG_MESSAGE
from latency_gate.models import RunResult

GOLDEN = Path(__file__).parent / "golden"
# 10 ms per answer: far over a 1 ms budget, far inside the default 3 s ones on a noisy machine.
ENDPOINT = EndpointSpec(name="cli-demo", latency=0.01, tokens=3, token_interval=0.001)
# One look of 1 + 3 + 2 calls (tests/one_look.py says why).
FEW_CALLS = [
    "--warm-calls",
    "3",
    "--concurrency",
    "2",
    "--prompt",
    "Say hello.",
    *one_look_args(6),
]
DURATION = re.compile(r"\d+(?:\.\d+)? (?:µs|ms|s)")
HEADLINE_BREACH = re.compile(rf"^(FAIL: \w[\w ]*?) {DURATION.pattern}, over")
# The floor line's figures are measured too: "0.3 ms at p95 ..., 0.1 ms at p50 ...".
FLOOR_FIGURE = re.compile(rf"{DURATION.pattern} at")
# So is the time to the verdict: "  Verdict in 1.27 s, after 6 of at most 6 calls."
VERDICT_TIME = re.compile(rf"(Verdict in) {DURATION.pattern}")
MEASURED = re.compile(rf"{DURATION.pattern}(?: / {DURATION.pattern})?")
NUMBER_ROWS = {"cold start", "warm p50", "warm p95", "concurrent p95", "first-token p95"}
API_KEY = "sk-cli-test-secret-1234"


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serve_in_thread(ENDPOINT) as servers:
        yield servers[0].url


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli.main, list(args), prog_name="latency-gate", env=env)


def normalise(stdout: str) -> str:
    """The terminal output with each measured duration replaced by `<duration>`.

    Table rows become their cells joined by ` | ` (the padding follows the measured widths):
    in the numbers table the value cell is replaced; in "where the time went" every measured
    cell (a duration, or "p50 / p95") is. Budgets and everything else stay as printed.
    """
    lines = []
    section = ""
    for line in stdout.split("\n"):
        cells = re.split(r" {2,}", line.strip())
        if not line:
            section = ""
        elif line.startswith("where the time went"):
            section = "phases"
        elif line.startswith("number  "):
            section = "numbers"
        elif section == "numbers" and cells[0] in NUMBER_ROWS:
            assert DURATION.fullmatch(cells[1]), line
            cells[1] = "<duration>"
            # The interval of a measured number is measured too: "≥ 14 ms", "9 ms to 10 ms".
            cells[2] = DURATION.sub("<duration>", cells[2])
        elif section == "phases" and cells[0] != "link":
            for i in range(1, len(cells)):
                assert MEASURED.fullmatch(cells[i]), line
                cells[i] = "<duration>"
        indent = "  " if line.startswith("  ") else ""
        # The floor line is measured too: keep its shape, not its figures.
        text = indent + " | ".join(cells) if section else FLOOR_FIGURE.sub("<duration> at", line)
        text = VERDICT_TIME.sub(r"\1 <duration>", text)
        lines.append(HEADLINE_BREACH.sub(r"\1 <duration>, over", text))
    return "\n".join(lines)


def check_golden(name: str, actual: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(actual, encoding="utf-8")
    assert path.exists(), f"no golden file {path}: run with UPDATE_GOLDEN=1"
    assert actual == path.read_text(encoding="utf-8")


# --- probe: verdict, table, exit code --------------------------------------------------------


def test_probe_pass_prints_verdict_then_table(url: str) -> None:
    """Within budget: the verdict line, then the table; exit 0."""
    result = invoke("probe", url, *FEW_CALLS)
    assert result.exit_code == 0, result.output
    check_golden("cli_probe_pass.txt", normalise(result.stdout))


def test_probe_reaches_loopback_even_in_a_container(url: str) -> None:
    """The Docker action's LATENCY_GATE_IN_CONTAINER=1 does not make the CLI refuse loopback."""
    assert url.startswith("http://127.0.0.1:")
    result = invoke("probe", url, *FEW_CALLS, env={"LATENCY_GATE_IN_CONTAINER": "1"})
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("PASS: every gated number within budget\n")


def test_probe_breach_exits_one(url: str) -> None:
    """A breached budget: FAIL first, naming the number and its budget; exit 1."""
    result = invoke("probe", url, *FEW_CALLS, "--max-warm-p95", "1ms")
    assert result.exit_code == 1, result.output
    check_golden("cli_probe_breach.txt", normalise(result.stdout))


def test_unreachable_url_is_a_failed_run_not_bad_input() -> None:
    """A well-formed URL nobody listens on is measured: every call failed, FAIL, exit 1."""
    result = invoke("probe", "http://127.0.0.1:9/", "--warm-calls", "2", "--concurrency", "1")
    assert result.exit_code == 1, result.output
    shown = VERDICT_TIME.sub(r"\1 <duration>", FLOOR_FIGURE.sub("<duration> at", result.stdout))
    check_golden("cli_probe_unreachable.txt", shown)


def test_progress_one_plain_line_per_stage(url: str) -> None:
    """Outside a terminal, progress is one plain line per stage on stderr, no escape codes,
    after a first line saying what the run may cost."""
    result = invoke("probe", url, *FEW_CALLS, "--name", "api")
    assert re.sub(r"done in \d+\.\d s", "done in <t> s", result.stderr) == (
        "api: at most 6 calls, under the 128 a clean PASS takes (the error budget 0.01 passes "
        "after 127 calls without a failure): what is undecided then follows on-undecided "
        "(pass)\n"
        "api: measuring the gate's own floor\n"
        "api: cold call\n"
        "api: warm calls 0/3\n"
        "api: 2 concurrent calls\n"
        "api: done in <t> s\n"
        "warning: max-calls 6 is under the 500 calls the checks can need: a check near its "
        "budget may pass there, undecided, with error rates over the stated ones (each check's "
        "line says the ones of this run)\n"
    )


def test_no_floor_skips_the_floor_stage(url: str) -> None:
    """--no-floor measures no floor: no such stage, and no floor in the result."""
    result = invoke("probe", url, *FEW_CALLS, "--no-floor")
    assert "floor" not in result.stderr
    assert result.exit_code == 0


def test_stdout_has_no_escape_codes(url: str) -> None:
    """Output that is not a terminal gets no color codes."""
    result = invoke("probe", url, *FEW_CALLS, "--max-warm-p95", "1ms")
    assert "\x1b" not in result.stdout
    assert "\x1b" not in result.stderr


# --- probe: report files ---------------------------------------------------------------------


def test_json_result(url: str, tmp_path: Path) -> None:
    """--json writes a RunResult with schema version 1 and the five numbers in seconds."""
    path = tmp_path / "result.json"
    result = invoke("probe", url, *FEW_CALLS, "--json", str(path))
    assert result.exit_code == 0, result.output
    document = json.loads(path.read_text(encoding="utf-8"))
    run = RunResult.model_validate(document)
    assert document["schema_version"] == 1
    assert document["tool_version"] == __version__
    numbers = document["numbers"]
    for name in ("cold_start", "warm_p50", "warm_p95", "concurrent_p95"):
        assert 0.005 < numbers[name] < 3.0, (name, numbers[name])  # seconds
    assert numbers["error_rate"] == 0.0
    assert len(run.samples) == 1 + 3 + 2
    assert run.verdict.passed is True
    schema = json.loads((Path(__file__).parent.parent / "docs" / "json-schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(document)  # the published schema holds


def test_json_config_is_redacted(url: str, tmp_path: Path) -> None:
    """The config in the JSON result keeps the settings and hides every secret."""
    path = tmp_path / "result.json"
    invoke(
        "probe",
        f"{url}?key=query-secret",
        *FEW_CALLS,
        "--api-key",
        API_KEY,
        "-H",
        "X-Secret: header-secret",
        "-H",
        "Content-Type: application/json",
        "--json",
        str(path),
    )
    text = path.read_text(encoding="utf-8")
    for secret in (API_KEY, "query-secret", "header-secret"):
        assert secret not in text
    config = json.loads(text)["config"]
    assert config["api_key"] == "***"
    assert config["headers"] == ["X-Secret: ***", "Content-Type: application/json"]
    assert config["url"] == f"{url}?key=***"
    assert (config["warm_calls"], config["concurrency"]) == (3, 2)


def test_api_key_from_environment(url: str, tmp_path: Path) -> None:
    """LATENCY_GATE_API_KEY stands in for --api-key (and is redacted the same way)."""
    path = tmp_path / "result.json"
    invoke("probe", url, *FEW_CALLS, "--json", str(path), env={"LATENCY_GATE_API_KEY": API_KEY})
    assert json.loads(path.read_text(encoding="utf-8"))["config"]["api_key"] == "***"


def test_markdown_report(url: str, tmp_path: Path) -> None:
    """--markdown writes the Markdown report with the verdict headline and the numbers table."""
    path = tmp_path / "report.md"
    result = invoke("probe", url, *FEW_CALLS, "--max-warm-p95", "1ms", "--markdown", str(path))
    assert result.exit_code == 1
    text = path.read_text(encoding="utf-8")
    assert text.startswith("## ❌ latency-gate: FAIL\n")
    assert re.search(r"^\| warm p95 \| [\d.]+ ms \| [^|]+ \| 1 ms \| ❌ FAIL \| 3 \|$", text, re.M)


# --- bad input and bugs ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--concurrency", "0"], "--concurrency: expected a whole number of at least 1, got 0"),
        (["-H", "bad"], "-H/--header: expected 'Name: value' with a colon, got 'bad'"),
        (
            ["--format", "soap"],
            "--format: expected one of auto, openai-chat, openai-responses, anthropic, raw; "
            "got 'soap'",
        ),
        (
            ["--max-warm-p95", "-1s"],
            "--max-warm-p95: expected a duration such as 3s, 250ms or 3.0 (seconds), got '-1s'",
        ),
        (
            ["--max-error-rate", "2"],
            "--max-error-rate: expected a fraction between 0 and 1, got '2'",
        ),
        (
            ["--body", "@/nonexistent/body.json"],
            "-d/--body: cannot read body file '/nonexistent/body.json': No such file or directory",
        ),
        (["--json", "/nonexistent/r.json"], "--json: folder '/nonexistent' does not exist"),
    ],
)
def test_bad_input_exits_two(url: str, args: list[str], message: str) -> None:
    """Each bad input: exit 2, one line naming the option, no traceback, nothing measured."""
    result = invoke("probe", url, *args)
    assert result.exit_code == 2
    assert result.stderr == f"Error: invalid input {message}\n"
    assert result.stdout == ""


def test_malformed_url_exits_two() -> None:
    """A URL that is not one is bad input, named as URL."""
    result = invoke("probe", "http://[::1")
    assert (result.exit_code, result.stderr) == (
        2,
        "Error: invalid input URL: not a valid URL: Invalid IPv6 URL\n",
    )


def test_missing_url_exits_two() -> None:
    """No URL at all is bad input too."""
    result = invoke("probe")
    assert (result.exit_code, result.stderr) == (
        2,
        "Error: invalid input URL: required: the endpoint to probe\n",
    )


def test_several_bad_inputs_reported_together(url: str) -> None:
    """Several bad inputs are listed in one message."""
    result = invoke("probe", url, "--concurrency", "0", "-H", "bad")
    assert result.exit_code == 2
    assert result.stderr == (
        "Error: 2 invalid inputs:\n"
        "  - --concurrency: expected a whole number of at least 1, got 0\n"
        "  - -H/--header: expected 'Name: value' with a colon, got 'bad'\n"
    )


def test_ca_bundle_without_certificates_exits_two(url: str, tmp_path: Path) -> None:
    """A --ca-bundle file that holds no certificate is bad input, exit 2."""
    bundle = tmp_path / "not-a-bundle.pem"
    bundle.write_text("not a certificate\n", encoding="utf-8")
    result = invoke("probe", url, *FEW_CALLS, "--ca-bundle", str(bundle))
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: invalid input --ca-bundle: ")


def test_unexpected_exception_exits_three() -> None:
    """Anything unexpected is exit 3 with the bug message and the exception, no traceback.

    Nothing in our commands fails on purpose, so this runs a command raising RuntimeError
    under a group of the same class as `latency-gate` (our code unpatched).
    """
    group_class = type(cli.main)
    assert group_class is not click.Group  # the translation lives in the group's own class

    @click.group(cls=group_class)
    def broken() -> None:
        """A group like latency-gate's."""

    @broken.command()
    def explode() -> None:
        raise RuntimeError("boom")

    result = CliRunner().invoke(broken, ["explode"])
    assert result.exit_code == 3
    assert result.stderr == f"{BUG_MESSAGE}\nRuntimeError: boom\n"
    assert "Traceback" not in result.output


def test_cli_reference_shows_the_current_help() -> None:
    """docs/cli.md's help blocks are what the CLI prints today (scripts/gen_cli_help.py); they
    were README.md's probe --help until issue 39 made the README a doorway."""
    path = Path(__file__).parent.parent / "scripts" / "gen_cli_help.py"
    spec = importlib.util.spec_from_file_location("gen_cli_help", path)
    assert spec is not None
    assert spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    reference = (Path(__file__).parent.parent / "docs" / "cli.md").read_text(encoding="utf-8")
    assert script.update_readme(reference) == reference, (
        "docs/cli.md's help is stale: run python scripts/gen_cli_help.py"
    )
    assert "Usage: latency-gate probe [OPTIONS] [URL]" in reference
    assert "Usage: latency-gate quick [OPTIONS] [URL]" in reference


PROBE_HELP_HEADINGS = [
    "Request: what each call sends:",
    "Budgets (off turns a default one off):",
    "How many calls, and when:",
    "Comparisons: against a base, an earlier run or main's history:",
    "Cost: what an answer's tokens cost (reported, never gated):",
    "Load search: calls at once, requests a second:",
    "Targets and reports:",
]


def _probe_help_sections() -> dict[str, list[str]]:
    """probe --help's option names (the long one, else the short), by heading."""
    result = CliRunner().invoke(
        cli.main, ["probe", "--help"], prog_name="latency-gate", env={"LATENCY_GATE_API_KEY": None}
    )
    assert result.exit_code == 0, result.output
    sections: dict[str, list[str]] = {}
    heading = ""
    for line in result.stdout.splitlines():
        if line and not line.startswith(" ") and line.endswith(":"):
            heading = line
            sections[heading] = []
        elif heading and line.startswith("  -"):
            names = re.findall(r"(?<![\w-])(--?[\w-]+)", line.split("  ", 2)[1])
            sections[heading].append(names[-1] if names[0].startswith("--") else names[0])
    return sections


def test_probe_help_groups_the_options_by_purpose() -> None:
    """probe --help lists its options under six headings by purpose, in this order, and every
    option of probe is under one of them (none left to "Other options")."""
    sections = _probe_help_sections()
    assert list(sections) == PROBE_HELP_HEADINGS
    assert sections["Budgets (off turns a default one off):"] == [
        "--max-cold-start",
        "--max-warm-p50",
        "--max-warm-p95",
        "--max-concurrent-p95",
        "--max-error-rate",
        "--max-ttft-p95",
        "--max-tpot-p95",
    ]
    listed = sorted(name for names in sections.values() for name in names)
    command = cli.main.commands["probe"]
    options = [p for p in command.params if isinstance(p, click.Option)]
    assert len(listed) == len(options) + 1  # and -h/--help


def test_probe_help_shows_what_each_value_is() -> None:
    """No option of probe --help takes a bare TEXT: counts read N, times DURATION, the error
    budget SHARE, rates RATE; and the defaults are said."""
    result = CliRunner().invoke(
        cli.main, ["probe", "--help"], prog_name="latency-gate", env={"LATENCY_GATE_API_KEY": None}
    )
    help_text = result.stdout
    assert " TEXT " not in help_text.replace("--prompt TEXT", "").replace(
        "--baseline-prompt TEXT", ""
    )
    for shown in (
        "--warm-calls N ",
        "--concurrency N ",
        "--max-calls N|auto ",
        "--timeout DURATION ",
        "--max-warm-p95 DURATION ",
        "--max-error-rate SHARE ",
        "--rate RATE ",
    ):
        assert shown in help_text, shown
    assert "Sequential warm calls [default: 20]." in help_text


def test_an_option_in_no_group_is_listed_last_not_lost() -> None:
    """A GroupedCommand lists an option its groups do not name under "Other options", after
    the groups, and skips a group name it does not have."""

    @click.command(
        cls=GroupedCommand,
        option_groups=[("Counts", ["calls", "not_an_option"]), ("Help", ["help"])],
    )
    @click.option("--calls", metavar="N", help="How many.")
    @click.option("--extra", help="Not in a group.")
    def command(calls: str | None, extra: str | None) -> None:
        """A command."""

    result = CliRunner().invoke(command, ["--help"], terminal_width=80)
    assert result.stdout == (
        "Usage: command [OPTIONS]\n\n"
        "  A command.\n\n"
        "Counts:\n"
        "  --calls N     How many.\n\n"
        "Help:\n"
        "  --help        Show this message and exit.\n\n"
        "Other options:\n"
        "  --extra TEXT  Not in a group.\n"
    )


def test_version() -> None:
    """--version prints the program name and version."""
    result = invoke("--version")
    assert (result.exit_code, result.stdout) == (0, f"latency-gate, version {__version__}\n")


def test_unknown_command_is_a_usage_error() -> None:
    """A command that does not exist is click's usage error, exit 2."""
    result = invoke("probe-all")
    assert result.exit_code == 2
    assert "No such command 'probe-all'" in result.stderr


# --- demo-server and demo --------------------------------------------------------------------


def test_demo_server_port_zero_prints_its_url() -> None:
    """demo-server --port 0 binds a free port, says where, and stops after --duration."""
    result = invoke("demo-server", "--preset", "echo", "--port", "0", "--duration", "0.2")
    assert result.exit_code == 0, result.output
    assert re.fullmatch(
        r"serving echo at http://127\.0\.0\.1:\d+/v1/chat/completions for 0\.2 s\n",
        result.stderr,
    )


def test_demo_server_log_writes_each_request_without_its_headers(tmp_path: Path) -> None:
    """--log FILE: once the server stops, one JSON line per request it got (method, path,
    status, the body as JSON or as text); never its headers, which carry keys."""
    log = tmp_path / "requests.jsonl"
    with demo_server("127.0.0.1", "--log", str(log)) as url:
        headers = {"authorization": "Bearer sk-log-test-0123456789"}
        body = {"model": "m1", "messages": [{"role": "user", "content": "hi"}]}
        assert httpx.post(url, json=body, headers=headers, timeout=10).status_code == 200
        assert httpx.post(url, content=b"not json", timeout=10).status_code == 200
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    path = "/v1/chat/completions"
    assert lines == [
        {"method": "POST", "path": path, "status": 200, "body": body},
        {"method": "POST", "path": path, "status": 200, "body": "not json"},
    ]
    assert "sk-log-test" not in log.read_text(encoding="utf-8")


def test_demo_server_log_where_no_file_can_be_is_exit_2(tmp_path: Path) -> None:
    """A --log in a folder that does not exist is refused, naming --log, before serving."""
    result = invoke("demo-server", "--log", str(tmp_path / "none" / "x.jsonl"), "--port", "0")
    assert result.exit_code == 2
    assert "--log" in result.stderr
    assert "serving" not in result.stderr


@pytest.mark.parametrize(("raw", "slots"), [((), None), (("--slots", "2"), 2)])
def test_demo_server_slots_queue_the_calls_over_them(
    monkeypatch: pytest.MonkeyPatch, raw: tuple[str, ...], slots: int | None
) -> None:
    """--slots serves the preset with that many slots (its own, unlimited for local, when left
    out), so --capacity and --goodput have an answer against it; --slots 0 is refused."""
    served: list[EndpointSpec] = []

    class Recorded:
        url = "http://127.0.0.1:1/v1/chat/completions"

        def __init__(self, spec: EndpointSpec, **_: object) -> None:
            served.append(spec)

        async def __aenter__(self) -> Recorded:
            return self

        async def __aexit__(self, *_: object) -> None:
            return None

    monkeypatch.setattr("latency_gate.demo.DemoServer", Recorded)
    result = invoke("demo-server", "--port", "0", "--duration", "0.01", *raw)
    assert result.exit_code == 0, result.output
    (spec,) = served
    assert (spec.name, spec.parallelism, spec.latency) == ("local", slots, 0.035)
    refused = invoke("demo-server", "--slots", "0", "--duration", "0.01")
    assert refused.exit_code == 2
    assert "Invalid value for '--slots'" in refused.stderr


@pytest.mark.slow
def test_demo_exits_zero_with_a_failing_environment(demo_run: DemoRun) -> None:
    """The demo exits 0 although the free server fails on purpose."""
    assert demo_run.exit_code == 0, demo_run.output


@pytest.mark.slow
def test_demo_prints_the_verdict_then_the_comparison(demo_run: DemoRun) -> None:
    """One report of the three (local, free, paid, cheapest first by their costs): the verdict,
    the columns, the comparison worded from the costs, then the failing free server's detail."""
    result, out = demo_run, demo_run.out
    lines = result.stdout.splitlines()
    assert lines[0] == "FAIL: 1 of 3 targets over budget"
    assert re.fullmatch(r"  Verdict in .+, after \d+ of at most 1,500 calls\.", lines[1])
    assert lines[2].startswith("  free: concurrent p95 ")
    assert re.search(r"^number\s+local\s+free\s+paid$", result.stdout, re.M)
    assert "Cheapest within budget: local (free, on this machine)." in lines
    assert any(line.startswith("paid ($0.60 / 1M tokens) costs more than local") for line in lines)
    assert "free (FAIL):" in lines
    assert "local (PASS):" not in lines
    assert result.stdout.endswith(
        f"reports written to {out}/ (report.md and one JSON file per environment)\n"
    )
    assert [line for line in result.stderr.splitlines() if line.startswith("probing ")] == [
        f"probing {name}: {cli.DEMO_DESCRIPTIONS[name]}" for name in ("local", "free", "paid")
    ]


@pytest.mark.slow
def test_demo_writes_the_reports(demo_run: DemoRun) -> None:
    """The folder holds one JSON result per environment and one Markdown report of all three."""
    out = demo_run.out
    assert sorted(p.name for p in out.iterdir()) == [
        "free.json",
        "local.json",
        "paid.json",
        "report.md",
    ]
    for name in ("local", "free", "paid"):
        run = RunResult.model_validate_json((out / f"{name}.json").read_text(encoding="utf-8"))
        assert run.target == name
    assert (out / "report.md").read_text(encoding="utf-8").startswith("## ❌ latency-gate: FAIL")
