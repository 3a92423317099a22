"""Hostile input, round five (issue 38), classes 5 to 10: event payloads and result files read
back, rate levels that judged no call or broke on their errors, a `usage` that disagrees with the
stream, and leftovers; through the real CLI and action against loopback servers.

Each case failed on the code before its fix (docs/faults.md, "Hostile input, round five").
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hostile_kit import ONE_LOOK, run_action

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
