"""The GitHub side: workflow commands, the outputs and summary text, and the sticky PR comment.

Nothing here reads the environment or writes a file: the action passes the token and the event
in, and appends the outputs and summary text to the files.
GitHub trouble never raises out of `GitHubClient.upsert_comment`; it becomes a `CommentOutcome`
whose `warning` says what went wrong and how to fix it, and the verdict stays what it was.
"""

from latency_gate.github.api import COMMENT_LIMIT, PERMISSIONS_HINT
from latency_gate.github.client import ACTIONS_BOT_LOGIN, Author, CommentOutcome, GitHubClient
from latency_gate.github.commands import (
    STEP_SUMMARY_LIMIT,
    add_mask,
    annotation,
    comment_marker,
    escape_data,
    escape_property,
    format_outputs,
    pull_request_number,
    resume_commands,
    step_summary_text,
    stop_commands,
)

__all__ = [
    "ACTIONS_BOT_LOGIN",
    "COMMENT_LIMIT",
    "PERMISSIONS_HINT",
    "STEP_SUMMARY_LIMIT",
    "Author",
    "CommentOutcome",
    "GitHubClient",
    "add_mask",
    "annotation",
    "comment_marker",
    "escape_data",
    "escape_property",
    "format_outputs",
    "pull_request_number",
    "resume_commands",
    "step_summary_text",
    "stop_commands",
]
