"""What each answer format holds: one reader per format, for a stream event or a whole document.

OpenAI chat completions, OpenAI responses and Anthropic messages each carry answer text, tool
calls, token usage, an end marker and errors in their own shapes. A stream reader takes one
event's JSON object and returns how many content deltas it held (0 or 1); a document reader takes
the whole answer. Both record what they found in a `Tally`. Reasoning (OpenAI-compatible
`reasoning_content`, Responses reasoning events, Anthropic thinking blocks) is counted apart from
the answer text: a user sees it arrive, so a reasoning-only answer is not empty. Pure code: no I/O.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

MAX_DETAIL = 2048
"""Characters of a failure's detail kept here; calls.py scrubs secrets from the whole of it and
only then cuts it to 200 (a cut first could leave the start of a key behind)."""
MAX_USAGE_TOKENS = 10**9
"""No answer has a billion tokens; a bigger usage count is the endpoint's mistake (or malice)."""
"""Most characters of untrusted detail kept: an outcome's detail, a quoted error object."""


@dataclass
class Tally:
    """What the answer held so far; mutated by the format readers."""

    deltas: int = 0
    answer_chars: int = 0
    reasoning_deltas: int = 0
    reasoning_chars: int = 0
    tool_call: bool = False
    usage_tokens: int | None = None
    usage_input_tokens: int | None = None
    end_marker: bool = False
    stream_error: str | None = None
    malformed: str | None = None
    note: str | None = None

    def text(self, value: object) -> int:
        """Count answer text (a string, or a list of {"text": ...} parts); 1 if non-empty."""
        chars = _text_len(value)
        self.answer_chars += chars
        return 1 if chars else 0

    def reasoning(self, value: object) -> int:
        """Count reasoning text (a string, or a list of {"text": ...} parts); 1 if non-empty."""
        chars = _text_len(value)
        self.reasoning_chars += chars
        self.reasoning_deltas += 1 if chars else 0
        return 1 if chars else 0

    def tool(self, name: object, arguments: object) -> int:
        """Count a tool call's name and argument text; 1 if either is non-empty."""
        chars = _text_len(name) + _text_len(arguments)
        if chars:
            self.tool_call = True
            self.answer_chars += chars
        return 1 if chars else 0

    def usage(self, usage: object, key: str, input_key: str | None = None) -> None:
        """Take a usage count: a whole number up to MAX_USAGE_TOKENS; anything else (a count of
        10**400 that no float holds, a negative or fractional one) is not a count of this
        answer's tokens and is left out (tokens are then counted from the deltas). `input_key`
        names the prompt's count beside it (`prompt_tokens`, `input_tokens`), for the cost."""
        value = _count(usage, key)
        if value is not None:
            self.usage_tokens = value
        prompt = _count(usage, input_key) if input_key else None
        if prompt is not None:
            self.usage_input_tokens = prompt

    def error(self, message: str) -> None:
        if self.stream_error is None:
            self.stream_error = message

    def bad(self, message: str) -> None:
        if self.malformed is None:
            self.malformed = message


def _count(usage: object, key: str) -> int | None:
    value = usage.get(key) if isinstance(usage, dict) else None
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_USAGE_TOKENS:
        return value
    return None


# --- one reader per format ------------------------------------------------------------------
# Shapes the servers send differ (docs: /work/shared/TESTING.md), so every field is looked up
# defensively.


def chat_chunk(tally: Tally, obj: dict[str, Any]) -> int:
    tally.usage(obj.get("usage"), "completion_tokens", "prompt_tokens")
    found = 0
    for choice in _dicts(obj.get("choices")):
        if choice.get("index") not in (0, None):
            continue  # n > 1: follow the first answer only
        delta = choice.get("delta")
        if isinstance(delta, dict):
            found |= _chat_message(tally, delta)
        if choice.get("finish_reason") is not None:
            tally.end_marker = True
    tally.deltas += found
    return found


def chat_document(tally: Tally, obj: dict[str, Any]) -> None:
    tally.usage(obj.get("usage"), "completion_tokens", "prompt_tokens")
    for choice in _dicts(obj.get("choices"))[:1]:
        message = choice.get("message")
        if isinstance(message, dict):
            _chat_message(tally, message)
        if choice.get("finish_reason") is not None:
            tally.end_marker = True


def _chat_message(tally: Tally, message: dict[str, Any]) -> int:
    """A message or a delta: its content, refusal and tool calls (a tool call is an answer)."""
    # llama.cpp and DeepSeek send `reasoning_content`; vLLM and OpenRouter `reasoning`.
    tally.reasoning(message.get("reasoning_content") or message.get("reasoning"))
    found = tally.text(message.get("content")) | tally.text(message.get("refusal"))
    for call in [*_dicts(message.get("tool_calls")), *_dicts([message.get("function_call")])]:
        function = call.get("function", call)  # legacy function_call has no wrapper
        if isinstance(function, dict):
            found |= tally.tool(function.get("name"), function.get("arguments"))
    return found


def responses_event(tally: Tally, kind: str, obj: dict[str, Any]) -> int:
    found = 0
    if kind in ("response.output_text.delta", "response.refusal.delta"):
        found = tally.text(obj.get("delta"))
    elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
        tally.reasoning(obj.get("delta"))
    elif kind == "response.function_call_arguments.delta":
        found = tally.tool(None, obj.get("delta"))
    elif kind == "response.output_item.added":
        item = obj.get("item")
        if isinstance(item, dict) and item.get("type") == "function_call":
            found = tally.tool(item.get("name"), None)
    elif kind in ("response.completed", "response.incomplete", "response.failed"):
        response = obj.get("response")
        response = response if isinstance(response, dict) else {}
        tally.usage(response.get("usage"), "output_tokens", "input_tokens")
        if kind == "response.failed":
            tally.error(error_message(response.get("error") or response))
        else:
            tally.end_marker = True
            if kind == "response.incomplete":
                tally.note = _incomplete(response)
    tally.deltas += found
    return found


def responses_document(tally: Tally, obj: dict[str, Any]) -> None:
    tally.usage(obj.get("usage"), "output_tokens", "input_tokens")
    for item in _dicts(obj.get("output")):
        if item.get("type") == "function_call":
            tally.tool(item.get("name"), item.get("arguments"))
        if item.get("type") == "reasoning":
            tally.reasoning([*_dicts(item.get("summary")), *_dicts(item.get("content"))])
            continue
        for part in _dicts(item.get("content")):
            if part.get("type") == "output_text":
                tally.text(part.get("text"))
            elif part.get("type") == "refusal":
                tally.text(part.get("refusal"))
    if tally.answer_chars == 0:
        tally.text(obj.get("output_text"))  # a convenience field some servers add
    status = obj.get("status")
    if status == "failed":
        tally.error(error_message(obj.get("error") or obj))
    elif status in ("completed", "incomplete"):
        tally.end_marker = True
        if status == "incomplete":
            tally.note = _incomplete(obj)


def anthropic_event(tally: Tally, kind: str, obj: dict[str, Any]) -> int:
    found = 0
    if kind == "content_block_delta":
        delta = obj.get("delta")
        if isinstance(delta, dict):
            # text_delta or input_json_delta; a thinking_delta is reasoning, a signature nothing
            found = tally.text(delta.get("text")) | tally.tool(None, delta.get("partial_json"))
            tally.reasoning(delta.get("thinking"))
    elif kind == "content_block_start":
        block = obj.get("content_block")
        if isinstance(block, dict):
            if block.get("type") in ("tool_use", "server_tool_use"):
                found = tally.tool(block.get("name"), None)
            elif block.get("type") == "thinking":
                tally.reasoning(block.get("thinking"))
            elif block.get("type") == "redacted_thinking":
                # Encrypted thinking, sent whole in this block with no deltas: the model did
                # reason, and the user sees that it did.
                tally.reasoning(block.get("data") or block.get("type"))
            else:
                found = tally.text(block.get("text"))
    elif kind == "message_delta":
        tally.usage(obj.get("usage"), "output_tokens", "input_tokens")
        delta = obj.get("delta")
        if isinstance(delta, dict) and delta.get("stop_reason") is not None:
            tally.end_marker = True
    elif kind == "message_stop":
        tally.end_marker = True
    elif kind == "message_start":
        # Its output count is a running one (often 1): only message_delta's is final. Its
        # input count is the prompt's, unless message_delta says it again.
        message = obj.get("message")
        usage = message.get("usage") if isinstance(message, dict) else None
        prompt = _count(usage, "input_tokens")
        if prompt is not None and tally.usage_input_tokens is None:
            tally.usage_input_tokens = prompt
    tally.deltas += found
    return found


def anthropic_document(tally: Tally, obj: dict[str, Any]) -> None:
    tally.usage(obj.get("usage"), "output_tokens", "input_tokens")
    for block in _dicts(obj.get("content")):
        if block.get("type") in ("tool_use", "server_tool_use"):
            tally.tool(block.get("name"), json.dumps(block.get("input", {})))
        elif block.get("type") == "text":
            tally.text(block.get("text"))
        elif block.get("type") == "thinking":
            tally.reasoning(block.get("thinking"))
        elif block.get("type") == "redacted_thinking":
            tally.reasoning_chars += 1  # encrypted, but the model did reason
    if obj.get("stop_reason") is not None:
        tally.end_marker = True


# --- small helpers --------------------------------------------------------------------------


def load_json(text: str) -> tuple[object, str | None]:
    """The parsed JSON and None, or None and why the text is not JSON."""
    try:
        return json.loads(text), None
    except ValueError as exc:
        return None, str(exc)
    except RecursionError:
        # A hostile or broken body of deeply nested brackets must not crash the probe.
        return None, "nested too deeply"


def _dicts(value: object) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, dict)]


def _text_len(value: object) -> int:
    if isinstance(value, str):
        return len(value)
    return sum(len(part["text"]) for part in _dicts(value) if isinstance(part.get("text"), str))


def error_message(obj: object) -> str:
    """The most telling short text of an error object: `type: message`, as the server wrote it."""
    if isinstance(obj, dict):
        nested = obj.get("error")
        if isinstance(nested, dict | str) and nested:
            return error_message(nested)
        message = obj.get("message")
        kind = obj.get("type") if obj.get("type") != "error" else None
        kind = kind or obj.get("code")
        if isinstance(message, str) and message:
            return f"{kind}: {message}" if isinstance(kind, str) and kind else message
        if isinstance(kind, str) and kind:
            return kind
        return "error event: " + json.dumps(obj)[:MAX_DETAIL]
    if isinstance(obj, str) and obj:
        return obj
    return "error event without a message"


def _incomplete(response: dict[str, Any]) -> str:
    details = response.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, dict) else None
    return f"response incomplete: {reason}" if isinstance(reason, str) else "response incomplete"
