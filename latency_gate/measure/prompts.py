"""Making a call's prompt unique: a short mark in the last user message of a JSON body.

Used by `quick` (a mark added at the end, to tell its three calls apart) and by the engine for
`--vary-prompt` (a mark of fixed length at the start of the prompt: every call's prompt is new
from its first character, so no prompt, prefix, response or semantic cache answers for the
model, and every call's prompt has the same length).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass, field
from typing import Any, Literal

from latency_gate.config import Format, Target
from latency_gate.config.json_data import dump_json, load_json

__all__ = ["MARK_HEX_DIGITS", "Marks", "vary_body"]

MARK_HEX_DIGITS = 8
"""Hex digits of a mark: 4 random bytes, so 30 calls repeat one with odds below 1 in 10^7."""


@dataclass(frozen=True)
class Marks:
    """The marks of one run, one per call by its kind and index: new for every call of the run
    (a secret salt drawn per run, hashed with the call's kind and index, so no two calls of a run
    and no two runs share a prompt), and the same for the head's i-th call and the base's i-th
    of an A/B run, which share one `Marks`: a model at temperature 0 answers the two alike, so
    the pairs compare the same work (assess/compare/same_work.py)."""

    salt: bytes = field(default_factory=lambda: secrets.token_bytes(16))

    def mark(self, kind: str, index: int) -> str:
        digest = hashlib.sha256(self.salt + f"/{kind}/{index}".encode()).hexdigest()
        return digest[:MARK_HEX_DIGITS]


def vary_body(
    target: Target, mark: str, *, where: Literal["start", "end"] = "end"
) -> tuple[str | None, bool]:
    """The target's body with `mark` added to its last user prompt, and whether that worked.

    `where="end"` appends " [mark]"; `where="start"` puts "[mark] " before the prompt. A raw
    body, or a JSON body with no prompt found, is sent unchanged: (body, False).
    """
    raw = target.request_body()
    if raw is None:
        return None, False
    text = raw.decode()
    if target.format is Format.RAW:
        return text, False
    try:  # the strict reader: a body re-written must never come out as NaN or Infinity
        data = load_json(text)
    except ValueError:
        return text, False
    if not isinstance(data, dict) or not _mark_prompt(data, f"[{mark}]", where):
        return text, False
    return dump_json(data), True


def _marked(text: str, mark: str, where: str) -> str:
    return f"{mark} {text}" if where == "start" else f"{text} {mark}"


def _mark_prompt(data: dict[str, Any], mark: str, where: str) -> bool:
    if isinstance(data.get("input"), str):  # openai-responses with a plain prompt
        data["input"] = _marked(data["input"], mark, where)
        return True
    messages = data.get("messages", data.get("input"))
    if not isinstance(messages, list):
        return False
    for message in reversed(messages):
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            message["content"] = _marked(content, mark, where)
            return True
        if isinstance(content, list):
            for part in reversed(content):
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    part["text"] = _marked(part["text"], mark, where)
                    return True
        return False
    return False
