"""Property-based fuzz (Hypothesis) of the CLI's options and of targets files: whatever the
input, `latency-gate probe` ends with exit 0, 1 or 2, never 3 and never a traceback.

Bounded for CI: a fixed number of examples, derandomized (the same inputs on every run), no
example database. Every URL it can build points at 127.0.0.1, on a port where nothing listens
(a run that gets that far stops after three refused calls) or is not a URL at all; `--idle` is
left out (a valid one would sleep).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from conftest import free_port
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from latency_gate import action, cli
from latency_gate.config import TARGET_KEYS

pytestmark = pytest.mark.slow  # hypothesis runs each fuzz target for seconds

REFUSED = free_port()
BASE = f"http://127.0.0.1:{REFUSED}"
FUZZ = settings(
    max_examples=250,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

# Values known to have broken something once, or near a boundary.
HOSTILE = [
    "",
    " ",
    "0",
    "-1",
    "1.5",
    "9" * 400,
    "9" * 5000,
    "1e308",
    "nan",
    "inf",
    "-0.1",
    "150%",
    "1%",
    "off",
    "3s",
    "250ms",
    "0ms",
    "2m",
    "true",
    "café",
    "clé\u00a0x",
    "\udcff{}",
    "\x00",
    "\x1b[31mred\x1b[0m",
    "a\nb",
    "::error::x",
    "@/dev/zero",
    "@/dev/null",
    "@/nonexistent",
    "@.",
    "{}",
    '{"messages": []}',
    '{"stream": "yes"}',
    "[1, 2]",
    "{not json",
    "Content-Length: 3",
    "Content-Length: -1",
    "Transfer-Encoding: chunked",
    "Authorization: Basic eA==",
    "X-Key: café",
    "X-Key: \x7f",
    "NoColon",
    "Bad Name: v",
    "raw",
    "openai-chat",
    "anthropic",
    "auto",
    "GET",
    "GET /x",
    "10%,200ms",
]

URLS = st.one_of(
    st.text(alphabet=st.characters(codec="utf-8"), max_size=12).map(lambda p: f"{BASE}/{p}"),
    st.sampled_from(
        [
            f"{BASE}/v1/chat/completions",
            f"{BASE}/v1/messages",
            f"http://user:pw-secret@127.0.0.1:{REFUSED}/v1/responses",
            f"{BASE}/?key=a&key=b",
            f"{BASE}/%zz",
            "http://127.0.0.1:99999/",
            "http://[::1",
            "http://",
            "ftp://127.0.0.1/",
            "not a url",
            "",
        ]
    ),
)
# Lone surrogates included: that is how bytes that are not UTF-8 arrive from argv.
ANY_TEXT = st.text(st.characters(exclude_categories=()), max_size=20)
VALUES = st.one_of(
    st.sampled_from(HOSTILE),
    ANY_TEXT,
    st.integers(min_value=-3, max_value=12).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(str),
)
VALUED_OPTIONS = [
    "-X",
    "-H",
    "-d",
    "--api-key",
    "--model",
    "--prompt",
    "--format",
    "--timeout",
    "--ca-bundle",
    "--warm-calls",
    "--concurrency",
    "--max-cold-start",
    "--max-warm-p50",
    "--max-warm-p95",
    "--max-concurrent-p95",
    "--max-error-rate",
    "--max-ttft-p95",
    "--name",
    "--baseline",
    "--max-regression",
    "--label",
    "--json",
    "--markdown",
]
FLAGS = [
    "--stream",
    "--no-stream",
    "--insecure",
    "--follow-redirects",
    "--fresh-connections",
]
OPTION = st.one_of(
    st.tuples(st.sampled_from(VALUED_OPTIONS), VALUES).map(list),
    st.sampled_from(VALUED_OPTIONS).map(lambda option: [option, "\udcff" + option]),
    st.sampled_from(FLAGS).map(lambda flag: [flag]),
)


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Relative paths (--json r.json, @file) land in a folder of the test's own."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _check(args: list[str]) -> None:
    result = CliRunner().invoke(cli.main, args, env={"LATENCY_GATE_API_KEY": None})
    assert "Traceback" not in result.output
    assert result.exit_code in {0, 1, 2}, (args, result.output)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception


@FUZZ
@given(url=URLS, options=st.lists(OPTION, max_size=4))
def test_fuzzed_options_never_exit_3(in_tmp: Path, url: str, options: list[list[str]]) -> None:
    """Any URL on 127.0.0.1 (or not a URL) with up to four fuzzed options: exit 0, 1 or 2."""
    _check(["probe", url, "--no-floor", *[part for option in options for part in option]])


SCALARS = st.one_of(
    st.sampled_from(HOSTILE), st.integers(-5, 20), st.booleans(), st.none(), st.text(max_size=12)
)
SETTING_VALUES: st.SearchStrategy[Any] = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
KEYS = st.one_of(st.sampled_from([*TARGET_KEYS, "cost"]), st.text(max_size=8))
TARGET = st.dictionaries(KEYS, SETTING_VALUES, max_size=5).map(
    # A url, when there is one, stays on 127.0.0.1 where nothing listens.
    lambda target: {**target, "url": f"{BASE}/"} if "url" in target else target
)
DOCUMENT = st.one_of(
    st.fixed_dictionaries(
        {"targets": st.lists(TARGET, max_size=3)},
        optional={"defaults": st.dictionaries(KEYS, SETTING_VALUES, max_size=3)},
    ),
    SETTING_VALUES,
)
SNIPPETS = [
    "a: &a [x, x]\nb: [*a, *a]\ntargets: *a\n",
    "targets: !!python/object:os.system {}\n",
    "targets:\n  - &t {name: a, url: " + BASE + "/}\n  - *t\n",
    "targets: [\n",
    "\ufeff" + "targets: []\n",
    "targets = 3\n",
    '{"targets": [{"name": "a", "url": "' + BASE + '/", "headers": {"X": "\\u00e9"}}]}',
    "%YAML 1.1\n---\ntargets: []\n...\n---\nb: 1\n",
]


def _render(document: Any, suffix: str) -> str:
    if suffix == ".json":
        return json.dumps(document, default=str)
    return yaml.safe_dump(document, allow_unicode=True)


@FUZZ
@given(
    document=DOCUMENT,
    suffix=st.sampled_from([".yml", ".json", ".toml"]),
    raw=st.one_of(st.none(), st.sampled_from(SNIPPETS), st.text(max_size=40)),
)
def test_fuzzed_targets_files_never_exit_3(
    in_tmp: Path, document: Any, suffix: str, raw: str | None
) -> None:
    """Any targets file, generated or raw text (TOML files are raw text): exit 0, 1 or 2."""
    text = raw if raw is not None or suffix == ".toml" else _render(document, suffix)
    path = in_tmp / f"targets{suffix}"
    path.write_text(text or "", encoding="utf-8", errors="surrogateescape")
    _check(["probe", "--targets", str(path), "--no-floor"])


ACTION_INPUTS = [
    "url",
    "headers",
    "body",
    "api-key",
    "prompt",
    "format",
    "timeout",
    "warm-calls",
    "concurrency",
    "max-warm-p95",
    "max-error-rate",
    "comment",
    "summary",
    "json-path",
    "fail-on-breach",
    "github-token",
    "label",
    "targets",
    "baseline",
    "max-regression",
    "colour",
]


@FUZZ
@given(
    url=URLS,
    inputs=st.dictionaries(st.sampled_from(ACTION_INPUTS), VALUES, max_size=4),
)
def test_fuzzed_action_inputs_never_exit_3(in_tmp: Path, url: str, inputs: dict[str, str]) -> None:
    """Up to four fuzzed INPUT_* values: exit 0, 1 or 2, and no bug annotation."""
    environ = {"INPUT_URL": url, "GITHUB_WORKSPACE": str(in_tmp)}
    environ |= {f"INPUT_{name.upper()}": value for name, value in inputs.items()}
    environ.setdefault("INPUT_URL", url)
    out = io.StringIO()
    code = action.main(environ, out=out)
    assert code in {0, 1, 2}, (inputs, out.getvalue())
    assert "latency-gate bug" not in out.getvalue()
