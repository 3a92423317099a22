"""Targets files: the three formats, shared defaults, overrides, and errors with file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from latency_gate.config import Format
from latency_gate.config.targets_file import load_targets, parse_targets
from latency_gate.errors import ConfigError

YAML = """\
defaults:
  timeout: 20s
  max-warm-p95: 2s
  prompt: Say hello
targets:
  - name: local
    url: http://127.0.0.1:8080/v1/chat/completions
    cost: free, our own GPU
  - name: paid
    url: https://api.example.com/v1/chat/completions
    api-key: ${PAID_KEY}
    max-warm-p95: 1s
    headers:
      X-Team: latency
"""

TOML = """\
[defaults]
timeout = "20s"
max-warm-p95 = "2s"
prompt = "Say hello"

[[targets]]
name = "local"
url = "http://127.0.0.1:8080/v1/chat/completions"
cost = "free, our own GPU"

[[targets]]
name = "paid"
url = "https://api.example.com/v1/chat/completions"
api-key = "${PAID_KEY}"
max-warm-p95 = 1
headers = ["X-Team: latency"]
"""

JSON = """\
{
  "defaults": {"timeout": "20s", "max-warm-p95": "2s", "prompt": "Say hello"},
  "targets": [
    {
      "name": "local",
      "url": "http://127.0.0.1:8080/v1/chat/completions",
      "cost": "free, our own GPU"
    },
    {
      "name": "paid",
      "url": "https://api.example.com/v1/chat/completions",
      "api-key": "${PAID_KEY}",
      "max-warm-p95": 1.0,
      "headers": {"X-Team": "latency"}
    }
  ]
}
"""
ENV = {"PAID_KEY": "sk-paid-secret-123"}


@pytest.mark.parametrize(
    ("suffix", "text"),
    [(".yml", YAML), (".toml", TOML), (".json", JSON)],
    ids=["yaml", "toml", "json"],
)
def test_formats_give_the_same_targets(suffix: str, text: str) -> None:
    """YAML, TOML and JSON of the same file give the same two targets in file order."""
    local, paid = parse_targets(text, name=f"t{suffix}", suffix=suffix, environ=ENV)
    assert (local.name, paid.name) == ("local", "paid")
    assert (local.timeout, paid.timeout) == (20.0, 20.0)
    assert (local.budget.max_warm_p95, paid.budget.max_warm_p95) == (2.0, 1.0)
    assert (local.cost, paid.cost) == ("free, our own GPU", None)
    assert paid.api_key is not None
    assert paid.api_key.get_secret_value() == "sk-paid-secret-123"
    assert [(h.name, h.value.get_secret_value()) for h in paid.headers] == [("X-Team", "latency")]
    assert local.format is Format.OPENAI_CHAT


def test_load_reads_a_file_and_bodies_beside_it(tmp_path: Path) -> None:
    """`@file` bodies are read from the targets file's folder."""
    (tmp_path / "body.json").write_text('{"messages": [], "stream": false}')
    path = tmp_path / "targets.yaml"
    path.write_text(
        "targets:\n  - name: a\n    url: http://127.0.0.1:1/v1/chat/completions\n"
        "    body: '@body.json'\n"
    )
    (target,) = load_targets(path, environ={})
    assert target.body is not None
    assert target.body.get_secret_value() == '{"messages": [], "stream": false}'


def test_body_may_be_an_object() -> None:
    """A body written as a mapping is sent as its JSON."""
    text = "targets:\n  - name: a\n    url: http://127.0.0.1:1/x\n    body: {input: hi}\n"
    (target,) = parse_targets(text, name="t.yml", suffix=".yml", environ={})
    assert target.body is not None
    assert target.body.get_secret_value() == '{"input": "hi"}'


def test_given_settings_fill_what_the_file_omits() -> None:
    """Settings from beside the file are the lowest layer: defaults and targets override them."""
    text = "defaults:\n  timeout: 5s\ntargets:\n  - name: a\n    url: http://127.0.0.1:1/\n"
    (target,) = parse_targets(
        text, name="t.yml", suffix=".yml", given={"timeout": "9s", "warm-calls": "3"}, environ={}
    )
    assert (target.timeout, target.warm_calls) == (5.0, 3)


def _error(text: str, suffix: str, environ: dict[str, str] | None = None) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_targets(text, name=f"t{suffix}", suffix=suffix, environ=environ or {})
    return str(caught.value)


@pytest.mark.parametrize(
    ("suffix", "text", "line"),
    [(".yml", YAML, 12), (".toml", TOML, 15), (".json", JSON, 13)],
    ids=["yaml", "toml", "json"],
)
def test_bad_value_names_file_and_line(suffix: str, text: str, line: int) -> None:
    """A bad budget override is reported at its own line, in every format."""
    bad = text.replace("max-warm-p95: 1s", "max-warm-p95: 1x")
    bad = bad.replace("max-warm-p95 = 1\n", 'max-warm-p95 = "1x"\n')
    bad = bad.replace('"max-warm-p95": 1.0', '"max-warm-p95": "1x"')
    assert _error(bad, suffix, ENV) == (
        f"invalid input t{suffix}:{line}: target 'paid', max-warm-p95: expected a duration "
        "such as 3s, 250ms or 3.0 (seconds), got '1x'"
    )


def test_bad_default_is_reported_at_the_defaults_line() -> None:
    """A bad shared setting points at its line under defaults, for each target using it."""
    message = _error(YAML.replace("timeout: 20s", "timeout: soon"), ".yml", ENV)
    assert "t.yml:2: defaults.timeout (for target 'local'): expected a duration" in message


def test_unknown_setting_and_missing_env() -> None:
    """An unknown key and an unset ${NAME} are both named with their lines."""
    text = YAML + "    colour: blue\n"
    message = _error(text, ".yml")
    assert "t.yml:11: target 'paid', api-key: environment variable PAID_KEY is not set" in message
    assert "t.yml:15: target 'paid', colour: unknown setting" in message


def test_duplicate_names_are_refused() -> None:
    """Two targets with one name would share a column: refused at the second one's line."""
    text = "targets:\n  - name: a\n    url: http://127.0.0.1:1/\n  - name: a\n    url: http://127.0.0.1:2/\n"
    assert _error(text, ".yml") == (
        "invalid input t.yml:4: target 'a', name: the name is already used by targets[0]; "
        "each column needs its own"
    )


def test_a_target_needs_a_name() -> None:
    """Without a name there is no column heading: said at the target's line."""
    text = "targets:\n  - url: http://127.0.0.1:1/\n"
    assert (
        _error(text, ".yml")
        == "invalid input t.yml:2: targets[0]: needs a `name`, shown as its column"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("- 1\n", "invalid input t.yml:1: file: expected a mapping with `targets:`"),
        ("targets: []\n", "invalid input t.yml:1: targets: expected a list of targets"),
        ("target:\n  - name: a\n", "2 invalid inputs:\n  - t.yml:1: target: unknown section"),
        ("targets: [\n", "invalid input t.yml:2: not valid YAML"),
    ],
)
def test_shape_errors(text: str, expected: str) -> None:
    """A file of the wrong shape, or not YAML at all, says so with a line."""
    assert _error(text, ".yml").startswith(expected)


def test_json_syntax_error_has_a_line() -> None:
    """Broken JSON is named with its line."""
    assert _error('{\n  "targets": [,]\n}', ".json").startswith(
        "invalid input t.json:2: not valid JSON"
    )


def test_other_suffix_is_refused() -> None:
    """Only .yml, .yaml, .toml and .json files are read."""
    assert _error("", ".ini") == (
        "invalid input targets: t.ini: expected a .yml, .yaml, .toml or .json file, got '.ini'"
    )


def test_cost_belongs_to_targets() -> None:
    """A cost under defaults is refused: each target has its own price."""
    text = "defaults:\n  cost: cheap\ntargets:\n  - name: a\n    url: http://127.0.0.1:1/\n"
    assert (
        _error(text, ".yml")
        == "invalid input t.yml:2: defaults.cost: a cost belongs to each target"
    )
