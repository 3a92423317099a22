"""A pull request's preview judged against main's runs (issue 26, item 7): the same request at
another origin compares, through the real CLI against two loopback demo endpoints on ports of
their own (main's "production" and the pull request's "preview"); the reports say which origin
each side measured, and a real change of configuration is still refused."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from latency_gate import cli
from latency_gate.demo import DemoServer, EndpointSpec, serve_in_thread

SPEC = EndpointSpec(latency=0.01, jitter=0.1, seed=3, tokens=3, token_interval=0.001)
FEW = ["--warm-calls", "10", "--concurrency", "4", "--prompt", "Hi", "--no-floor"]
DAY = 86_400.0


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[DemoServer, DemoServer]]:
    """Main's endpoint (production) and the pull request's preview: the same API, two ports."""
    with serve_in_thread(SPEC, SPEC.model_copy(update={"seed": 4})) as (production, preview):
        yield production, preview


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli.main, list(args), env={"GITHUB_SHA": None})


def _origin(server: DemoServer) -> str:
    return server.url.split("/v1/")[0]


@pytest.fixture(scope="module")
def main_result(
    servers: tuple[DemoServer, DemoServer], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """Main's last result, of production."""
    path = tmp_path_factory.mktemp("main") / "main.json"
    done = invoke("probe", servers[0].url, *FEW, "--json", str(path))
    assert done.exit_code == 0, done.output
    return path


@pytest.mark.slow
def test_a_preview_is_held_against_mains_last_result(
    servers: tuple[DemoServer, DemoServer], main_result: Path, tmp_path: Path
) -> None:
    """`--baseline` refused main's result as "a different configuration (url ...)" for a head at
    another host with the same path and request; now it compares, and the terminal, the
    Markdown and the JSON say which origin each side measured."""
    production, preview = servers
    report, head = tmp_path / "r.md", tmp_path / "head.json"
    done = invoke(
        "probe",
        preview.url,
        *FEW,
        *("--baseline", str(main_result), "--markdown", str(report), "--json", str(head)),
    )
    assert done.exit_code in (0, 1), done.output
    said = " ".join(done.output.split())
    assert "baseline: " in said
    both = (
        f"This run measured {_origin(preview)}; the baseline run measured {_origin(production)}: "
        "the same request (path, method, body and settings) at another origin"
    )
    assert both in said
    markdown = report.read_text(encoding="utf-8")
    assert (
        f"> This run measured `{_origin(preview)}`; the baseline run measured "
        f"`{_origin(production)}`: the same request" in markdown
    )
    check = json.loads(head.read_text(encoding="utf-8"))["baseline"]
    assert check["status"] == "compared"
    assert (check["head_origin"], check["base_origins"]) == (
        _origin(preview),
        [_origin(production)],
    )


@pytest.mark.slow
def test_a_preview_is_held_against_mains_history(
    servers: tuple[DemoServer, DemoServer], main_result: Path, tmp_path: Path
) -> None:
    """A history of production's runs was "no usable run ... (skipped: 3 runs of other
    settings)" for the preview; now the preview is judged against those 3 runs, said so."""
    production, preview = servers
    document = json.loads(main_result.read_text(encoding="utf-8"))
    folder = tmp_path / "history"
    folder.mkdir()
    for i in range(3):
        earlier = {**document, "started_at": document["started_at"] - (3 - i) * DAY}
        (folder / f"main-{i}.json").write_text(json.dumps(earlier), encoding="utf-8")
    done = invoke("probe", preview.url, *FEW, "--history", str(folder))
    assert done.exit_code in (0, 1), done.output
    said = " ".join(done.output.split())
    assert "other settings" not in said
    assert "against the history of 3 runs (prediction interval" in said
    assert (
        f"This run measured {_origin(preview)}; the history's runs measured "
        f"{_origin(production)}" in said
    )


@pytest.mark.slow
def test_the_same_origin_says_nothing_of_origins(
    servers: tuple[DemoServer, DemoServer], main_result: Path
) -> None:
    """Held against a result of its own origin, a run names no origin."""
    done = invoke("probe", servers[0].url, *FEW, "--baseline", str(main_result))
    assert done.exit_code in (0, 1), done.output
    assert "This run measured" not in done.output


@pytest.mark.parametrize(
    ("change", "differs"),
    [
        (lambda url: [url.replace("/v1/chat/completions", "/v2/chat"), *FEW], "url: '/v1/chat"),
        (lambda url: [url, *FEW, "--max-tokens", "7"], "max_tokens"),
        (lambda url: [url, *FEW, "-X", "PUT"], "method: 'POST' then, 'PUT' now"),
        (lambda url: [url.replace("Hi", "x"), *FEW[:-3], "--prompt", "Bye", "--no-floor"], "body"),
    ],
    ids=["path", "max-tokens", "method", "body"],
)
def test_a_real_change_of_configuration_is_still_refused(
    servers: tuple[DemoServer, DemoServer],
    main_result: Path,
    change: object,
    differs: str,
) -> None:
    """At the preview's origin, another path, answer length, method or body is still another
    configuration: exit 2 before any call, naming what differs."""
    preview = servers[1]
    before = len(preview.records)
    args = change(preview.url)  # type: ignore[operator]
    done = invoke("probe", *args, "--baseline", str(main_result))
    assert done.exit_code == 2, done.output
    assert "measured a different configuration (" in done.output
    assert differs in done.output
    assert len(preview.records) == before
