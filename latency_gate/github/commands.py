"""Workflow commands (annotations, masks) and the text of the `$GITHUB_OUTPUT` and
`$GITHUB_STEP_SUMMARY` files, with the escaping the runner expects; the PR comment's marker and
the PR number of an event. Text only: the action appends it to the files.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Literal

STEP_SUMMARY_LIMIT = 1024 * 1024  # bytes; GitHub drops a bigger step summary whole


def escape_data(text: str) -> str:
    """Escape a workflow command's data part the way the runner unescapes it."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a workflow command property value (`title=...`): data escaping plus `:` and `,`."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def add_mask(value: str) -> str:
    """`::add-mask::` lines for a secret, one per non-blank line, joined by newlines.

    The runner masks each registered value as a whole, and a multi-line value is printed line
    by line, so each line is registered on its own. Returns "" when there is nothing to mask.
    """
    return "\n".join(
        f"::add-mask::{escape_data(line)}" for line in value.splitlines() if line.strip()
    )


def stop_commands(token: str) -> str:
    """The line after which the runner runs no workflow command until `resume_commands(token)`.

    Untrusted text (a target's name, an endpoint's error body) printed in between cannot start
    one, even at the start of a line. `token` must be unguessable: a fresh random one per run.
    https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-commands#stopping-and-starting-workflow-commands
    """
    return f"::stop-commands::{token}"


def resume_commands(token: str) -> str:
    """The line that lets the runner process workflow commands again (see `stop_commands`)."""
    return f"::{token}::"


def annotation(
    level: Literal["error", "warning", "notice"], message: str, title: str | None = None
) -> str:
    """One annotation line, e.g. `::error title=warm p95 over budget::3.4 s > 3.0 s`."""
    properties = f" title={escape_property(title)}" if title else ""
    return f"::{level}{properties}::{escape_data(message)}"


def format_outputs(outputs: Mapping[str, str]) -> str:
    """Step outputs as the text to append to the `$GITHUB_OUTPUT` file.

    Single-line values as `name=value`; values with a line break in the heredoc form
    `name<<DELIMITER` with a random delimiter that occurs nowhere in the value.
    Raises ValueError for a name the runner could not parse back.
    """
    lines: list[str] = []
    for name, value in outputs.items():
        if not name or any(bad in name for bad in ("=", "<<", "\n", "\r")):
            raise ValueError(f"output name {name!r} cannot be written to GITHUB_OUTPUT")
        if "\n" in value or "\r" in value:
            delimiter = f"ghadelimiter_{uuid.uuid4()}"
            while delimiter in value:  # a collision with a fresh uuid4 is next to impossible
                delimiter = f"ghadelimiter_{uuid.uuid4()}"
            lines += [f"{name}<<{delimiter}", value, delimiter]
        else:
            lines.append(f"{name}={value}")
    return "".join(f"{line}\n" for line in lines)


def step_summary_text(markdown: str, existing_size: int, limit: int = STEP_SUMMARY_LIMIT) -> str:
    """The text to append to a `$GITHUB_STEP_SUMMARY` file already `existing_size` bytes long.

    Raises ValueError when the file would grow past `limit` bytes: GitHub would drop the whole
    summary, so the caller shrinks the report first (and writes nothing).
    """
    text = markdown if markdown.endswith("\n") else markdown + "\n"
    size = existing_size + len(text.encode("utf-8"))
    if size > limit:
        raise ValueError(f"step summary would be {size} bytes, over the limit of {limit}")
    return text


def comment_marker(workflow: str, job: str, target_names: Sequence[str]) -> str:
    """The hidden marker that finds our PR comment again, keyed to workflow, job and target set.

    The target names are a set: their order does not change the key.
    """
    key = json.dumps([workflow, job, sorted(target_names)], ensure_ascii=True)
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:10]
    return f"<!-- latency-gate:comment:{digest} -->"


def pull_request_number(event_name: str, event: Mapping[str, object]) -> int | None:
    """The PR number for pull_request and pull_request_target events; None for any other."""
    if event_name not in ("pull_request", "pull_request_target"):
        return None
    pull_request = event.get("pull_request")
    number = pull_request.get("number") if isinstance(pull_request, Mapping) else None
    if number is None:
        number = event.get("number")
    if isinstance(number, int) and not isinstance(number, bool) and number > 0:
        return number
    return None
