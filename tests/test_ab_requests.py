"""A/B with a base of its own request (issue 41): another model, body, prompt or format.

Through the CLI against loopback demo servers, which keep each request's body: what each arm
was sent (the model, the dialect), the same prompt for the i-th call of each arm, the head's
key for a base at its origin, how the reports name such a base; then the bad inputs (exit 2
naming the input, before any call), the action's inputs and a targets file's keys.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from one_look import one_look_args

from latency_gate import cli
from latency_gate.action.settings import parse_settings
from latency_gate.config import Format, base_arm, base_changes, base_source, build_target
from latency_gate.config.targets_file import load_targets
from latency_gate.demo import EndpointSpec, serve_in_thread
from latency_gate.demo.spec import RequestRecord
from latency_gate.errors import ConfigError
from latency_gate.models import RunResult

HEAD = EndpointSpec(name="head", latency=0.020, tokens=2, token_interval=0.001)
CLAUDE = HEAD.model_copy(update={"name": "claude", "stream_format": "anthropic"})
WARM, CONCURRENCY = 8, 4
CALLS = 1 + WARM + CONCURRENCY  # one look of each arm
FEW = (
    *("--warm-calls", str(WARM), "--concurrency", str(CONCURRENCY), "--no-floor"),
    *one_look_args(CALLS),
)
KEY = "sk-head-key-0123456789"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli.main, list(args), prog_name="latency-gate")


def _bodies(records: Sequence[RequestRecord]) -> list[dict[str, Any]]:
    return [json.loads(r.body) for r in records]


def _prompt(body: dict[str, Any]) -> str:
    """The last user message's text (openai-chat and anthropic bodies alike)."""
    content = body["messages"][-1]["content"]
    assert isinstance(content, str)
    return content


# --- what each arm is sent --------------------------------------------------------------------


@pytest.mark.slow  # a whole probe of both arms: about 2 s
def test_baseline_model_sends_the_bases_calls_with_its_model(tmp_path: Path) -> None:
    """`--model gpt-b --baseline-model gpt-a` at one URL: the server gets every call of each arm,
    the head's naming gpt-b and the base's gpt-a, the bodies otherwise alike, each prompt asked
    once by each arm; the result names the base by its model, the terminal both ("candidate
    gpt-b against gpt-a")."""
    with serve_in_thread(HEAD) as (server,):
        done = invoke(
            "probe",
            server.url,
            *FEW,
            *("--prompt", "Hi", "--model", "gpt-b", "--baseline-model", "gpt-a"),
            *("--json", str(tmp_path / "r.json"), "--markdown", str(tmp_path / "r.md")),
        )
        records = list(server.records)
    assert done.exit_code == 0, done.output
    bodies = _bodies(records)
    by_model = {m: [b for b in bodies if b["model"] == m] for m in ("gpt-a", "gpt-b")}
    assert [len(by_model["gpt-b"]), len(by_model["gpt-a"])] == [CALLS, CALLS]
    assert len(bodies) == 2 * CALLS
    head_prompts = [_prompt(b) for b in by_model["gpt-b"]]
    base_prompts = [_prompt(b) for b in by_model["gpt-a"]]
    assert sorted(head_prompts) == sorted(base_prompts)
    assert len(set(head_prompts)) == CALLS  # every call its own prompt
    assert all(p.endswith(" Hi") for p in head_prompts)
    strip = [{k: v for k, v in b.items() if k not in ("model", "messages")} for b in bodies]
    assert all(s == strip[0] for s in strip)  # max_tokens, stream alike
    result = RunResult.model_validate_json((tmp_path / "r.json").read_text())
    assert result.baseline is not None
    assert result.baseline.kind == "side-by-side"
    assert result.baseline.source == "model gpt-a"
    assert result.baseline.base_request == ("model gpt-a",)
    assert len(result.base_samples) == len(result.samples) == CALLS
    assert result.config["baseline_request"]["model"] == "gpt-a"  # type: ignore[index]
    markdown = (tmp_path / "r.md").read_text()
    assert (
        "the head's endpoint asked its own request (model gpt-a), measured side by side with "
        "the head in this run (the same prompts, the calls of the two interleaved)"
    ) in " ".join(markdown.split())
    said = " ".join(done.stdout.split())  # two models: said as an upgrade (report/upgrade.py)
    assert said.startswith("candidate gpt-b: PASS against gpt-a: ")
    assert "candidate gpt-b against gpt-a, measured side by side: " in said


@pytest.mark.slow  # a whole probe of both arms: about 2 s
def test_i_th_calls_of_each_arm_ask_the_same_prompt_in_their_own_format() -> None:
    """An openai-chat head beside an anthropic base (`--baseline-format anthropic` at its own
    URL): the base's bodies are Anthropic's (its path, max_tokens, no stream_options), and the
    i-th call of each arm asks the same prompt: the cold calls alike, the warm calls in the
    order each server saw them, the bursts' as sets (released together)."""
    with serve_in_thread(HEAD, CLAUDE) as (head, base):
        done = invoke(
            "probe",
            head.url,
            *FEW,
            *("--prompt", "Hi", "--model", "gpt-b", "--stream"),
            *("--baseline-url", base.url, "--baseline-format", "anthropic"),
            *("--baseline-model", "claude-a"),
        )
        head_records, base_records = list(head.records), list(base.records)
    assert done.exit_code == 0, done.output
    assert {r.path for r in base_records} == {"/v1/messages"}
    head_bodies, base_bodies = _bodies(head_records), _bodies(base_records)
    assert {b["model"] for b in base_bodies} == {"claude-a"}
    assert {b["model"] for b in head_bodies} == {"gpt-b"}
    assert all("stream_options" not in b and b["stream"] is True for b in base_bodies)
    assert all(b["max_tokens"] == 64 for b in base_bodies)
    head_prompts = [_prompt(b) for b in head_bodies]
    base_prompts = [_prompt(b) for b in base_bodies]
    sequential = 1 + WARM
    assert head_prompts[:sequential] == base_prompts[:sequential]
    assert set(head_prompts[sequential:]) == set(base_prompts[sequential:])
    assert len(set(head_prompts)) == CALLS


@pytest.mark.slow  # a whole probe of both arms: about 2 s
def test_a_base_prompt_is_asked_with_the_heads_marks() -> None:
    """`--baseline-prompt`: the base asks its own prompt, marked as the head's i-th call is, so
    each pair of calls still differs by the prompt alone."""
    with serve_in_thread(HEAD) as (server,):
        done = invoke(
            "probe",
            server.url,
            *FEW,
            *("--prompt", "Tell me a story.", "--baseline-prompt", "One word only."),
        )
        bodies = _bodies(server.records)
    assert done.exit_code == 0, done.output
    prompts = [_prompt(b) for b in bodies]
    head = sorted(p.removesuffix(" Tell me a story.") for p in prompts if "story" in p)
    base = sorted(p.removesuffix(" One word only.") for p in prompts if "One word" in p)
    assert len(head) == len(base) == CALLS
    assert head == base


@pytest.mark.slow  # a whole probe of both arms: about 2 s
def test_a_base_at_the_heads_origin_gets_the_heads_key() -> None:
    """A base at the head's origin asked another request gets the head's key: on the wire for
    another model at the same URL, and as Anthropic's x-api-key for another dialect at another
    path of that origin."""
    with serve_in_thread(HEAD) as (server,):
        done = invoke(
            "probe",
            server.url,
            *FEW,
            *("--prompt", "Hi", "--api-key", KEY, "--baseline-model", "gpt-a"),
        )
        records = list(server.records)
    assert done.exit_code == 0, done.output
    assert KEY not in done.output
    assert len(records) == 2 * CALLS
    target = build_target(
        {
            "url": "https://api.example.com/v1/chat/completions",
            "prompt": "Hi",
            "api-key": KEY,
            "baseline-url": "https://api.example.com/v1/messages",
            "baseline-format": "anthropic",
        }
    )
    base = base_arm(target)
    assert base.format is Format.ANTHROPIC
    assert ("x-api-key", KEY) in base.request_headers()
    assert ("Authorization", f"Bearer {KEY}") in target.request_headers()


@pytest.mark.slow  # a whole probe of both arms: about 2 s
def test_the_demo_server_keeps_each_requests_body() -> None:
    """Every request the demo server answers is kept with its body as sent."""
    with serve_in_thread(HEAD) as (server,):
        done = invoke("probe", server.url, *FEW, "--body", '{"messages": [], "x": 1}')
        records = list(server.records)
    assert done.exit_code in (0, 1), done.output
    assert records
    assert all(json.loads(r.body)["x"] == 1 for r in records)


# --- the base request, resolved ---------------------------------------------------------------


def test_baseline_model_replaces_the_model_of_the_heads_body() -> None:
    """With a body given, `baseline-model` is the head's body with its model replaced, every
    other field kept."""
    body = '{"model": "gpt-b", "messages": [{"role": "user", "content": "Hi"}], "seed": 7}'
    target = build_target(
        {"url": "https://a.example/v1/chat/completions", "body": body, "baseline-model": "gpt-a"}
    )
    base = base_arm(target)
    assert json.loads(base.request_body() or b"") == {**json.loads(body), "model": "gpt-a"}
    assert base.model == "gpt-a"
    assert base_changes(target) == ("model gpt-a",)
    assert base_source(target) == "model gpt-a"


def test_a_base_of_the_heads_very_request_is_named_by_its_url() -> None:
    """`--model A --baseline-model A` is A against A: allowed, and named by the URL."""
    target = build_target(
        {
            "url": "https://a.example/v1/chat/completions",
            "prompt": "Hi",
            "model": "gpt-a",
            "baseline-model": "gpt-a",
        }
    )
    assert base_changes(target) == ()
    assert base_source(target) == "https://a.example/v1/chat/completions"
    assert base_arm(target).request_body() == target.request_body()


def test_a_base_body_is_a_secret_and_fingerprinted() -> None:
    """A base body's credential fields are among the target's secrets; its settings show the
    body's fingerprint only, and a base body of its own may go to another origin."""
    body = '{"messages": [{"role": "user", "content": "Hi"}], "api_key": "base-body-secret-1"}'
    target = build_target(
        {
            "url": "https://a.example/v1/chat/completions",
            "prompt": "Hi",
            "baseline-url": "https://b.example/v1/chat/completions",
            "baseline-body": body,
        }
    )
    assert "base-body-secret-1" in target.secrets()
    shown = json.dumps(target.redacted())
    assert "base-body-secret-1" not in shown
    assert target.redacted()["baseline_request"]["body"].startswith("*** (sha256 ")  # type: ignore[index]
    assert base_changes(target)[0].startswith("body *** (sha256 ")


BAD = [
    (
        ["--format", "raw", "--body", "ping", "--baseline-model", "gpt-a"],
        "invalid input --baseline-model: the raw format has no model field",
    ),
    (
        ["--prompt", "Hi", "--baseline-body", "not json"],
        "invalid input --baseline-body: the openai-chat format needs a JSON object body",
    ),
    (
        ["--prompt", "Hi", "--baseline-body", "{}", "--baseline-prompt", "Yo"],
        "invalid input --baseline-prompt: give either --baseline-body or a prompt, not both",
    ),
    (
        ["--body", '{"messages": []}', "--baseline-format", "anthropic"],
        "invalid input --baseline-format: the head's -d/--body is in the openai-chat format, not "
        "anthropic: give the base's own with --baseline-body or --baseline-prompt",
    ),
    (
        ["--prompt", "Hi", "--baseline-format", "klingon"],
        "invalid input --baseline-format: expected one of auto, openai-chat",
    ),
    (
        ["--prompt", "Hi", "--baseline-prompt", "  "],
        "invalid input --baseline-prompt: expected a prompt, got an empty string",
    ),
    (
        ["--prompt", "Hi", "--baseline-api-key", "sk-base-key-0123456789"],
        "invalid input --baseline-api-key: needs --baseline-url or a request of the base's own",
    ),
]


@pytest.mark.parametrize(("args", "message"), BAD)
def test_bad_base_requests_exit_2_naming_the_input(args: list[str], message: str) -> None:
    """Each bad base request: exit 2 naming its input, before any call."""
    with serve_in_thread(HEAD) as (server,):
        done = invoke("probe", server.url, *FEW, *args)
        records = list(server.records)
    assert done.exit_code == 2, done.output
    assert message in " ".join(done.output.split())
    assert "sk-base-key-0123456789" not in done.output
    assert records == []


# --- the action's inputs and a targets file ---------------------------------------------------


def test_the_action_reads_the_base_request_inputs(tmp_path: Path) -> None:
    """`baseline-model`, `baseline-prompt` and `baseline-format` as action inputs; a base at
    the head's URL is not a second loopback address in the container; a bad one is named."""
    settings = parse_settings(
        {
            "url": "https://a.example/v1/chat/completions",
            "prompt": "Hi",
            "baseline-model": "claude-a",
            "baseline-prompt": "Be brief.",
            "baseline-format": "anthropic",
        },
        tmp_path,
        {},
    )
    (target,) = settings.all_targets
    request = target.baseline_request
    assert request is not None
    assert (request.model, request.prompt, request.format) == (
        "claude-a",
        "Be brief.",
        Format.ANTHROPIC,
    )
    assert target.baseline_url == target.url
    with pytest.raises(ConfigError) as caught:
        parse_settings(
            {"url": "http://localhost:8080/v1/chat/completions", "baseline-model": "gpt-a"},
            tmp_path,
            {},
            in_container=True,
        )
    assert [p.name for p in caught.value.problems] == ["url"]
    with pytest.raises(ConfigError) as caught:
        parse_settings(
            {"url": "https://a.example/v1", "format": "raw", "baseline-model": "gpt-a"},
            tmp_path,
            {},
        )
    assert str(caught.value).startswith(
        "invalid input baseline-model: the raw format has no model field"
    )


def test_a_targets_file_names_a_base_request_per_target(tmp_path: Path) -> None:
    """`baseline-model` and `baseline-body` per target in a targets file; a target without
    them has no base."""
    (tmp_path / "claude.json").write_text('{"messages": [{"role": "user", "content": "Hi"}]}')
    targets = tmp_path / "targets.yml"
    targets.write_text(
        "targets:\n"
        "  - name: new-model\n    url: https://a.example/v1/chat/completions\n"
        "    prompt: Hi\n    model: gpt-b\n    baseline-model: gpt-a\n"
        "  - name: to-claude\n    url: https://a.example/v1/chat/completions\n    prompt: Hi\n"
        "    baseline-url: https://c.example/v1/messages\n    baseline-format: anthropic\n"
        "    baseline-body: '@claude.json'\n"
        "  - name: alone\n    url: https://a.example/v1/chat/completions\n"
    )
    new_model, to_claude, alone = load_targets(targets, environ={})
    assert base_source(new_model) == "model gpt-a"
    claude = base_arm(to_claude)
    assert (claude.url, claude.format) == ("https://c.example/v1/messages", Format.ANTHROPIC)
    assert json.loads(claude.request_body() or b"")["messages"][0]["content"] == "Hi"
    assert alone.baseline_url is None
    assert alone.baseline_request is None


def test_a_base_request_with_baseline_is_refused_naming_it(tmp_path: Path) -> None:
    """One comparison a run: `--baseline-model` (a base at the head's URL) with `--baseline`
    FILE is refused, naming `--baseline-model`, the setting that asked for the A/B run."""
    with serve_in_thread(HEAD) as (server,):
        done = invoke(
            "probe", server.url, *FEW, "--baseline-model", "gpt-a", "--baseline", "x.json"
        )
        records = list(server.records)
    assert done.exit_code == 2, done.output
    assert done.output.startswith(
        "Error: invalid input --baseline-model: give one of --baseline (an earlier run's "
        "result), --baseline-url (a base measured beside the head in this run) and --history, "
        "not --baseline and --baseline-model"
    )
    assert records == []
