"""The answers in each stream format: the events of a stream and the document of a non-stream."""

from __future__ import annotations

import json
import time
from typing import Any

from latency_gate.demo.spec import EndpointSpec

_ANSWER = "Latency is what users feel, not what the model streams; measure the whole chain."
_WORDS = _ANSWER.split()


def _token(i: int) -> str:
    return _WORDS[i % len(_WORDS)] + " "


def _sse(data: Any, event: str | None = None) -> bytes:
    payload = json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


class _Shape:
    """One answer in a stream format: its events and its non-stream document."""

    content_type = "text/event-stream"
    document_type = "application/json"

    def __init__(self, index: int, spec: EndpointSpec, prompt_tokens: int) -> None:
        self.id = f"demo-{index}"
        self.model = f"latency-gate-demo-{spec.name}"
        self.created = int(time.time())
        self.spec = spec
        self.prompt_tokens = prompt_tokens
        self.text = ""
        self.deltas = 0

    def prelude(self) -> list[bytes]:
        return []

    def delta(self, text: str) -> bytes:
        self.text += text
        self.deltas += 1
        return self._delta(text)

    def _delta(self, text: str) -> bytes:
        raise NotImplementedError

    def finish(self) -> list[bytes]:
        return []

    def error_event(self) -> bytes:
        raise NotImplementedError

    def malformed(self) -> bytes:
        return b'data: {"choices": [{"delta": {"content": "unterminated\n\n'

    def document(self, text: str) -> bytes:
        raise NotImplementedError

    def error_document(self, status: int) -> bytes:
        message = "Rate limit reached" if status == 429 else "The server had an error"
        error = {"message": message, "type": "server_error", "code": None}
        return json.dumps({"error": error}).encode()

    def usage(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.deltas,
            "total_tokens": self.prompt_tokens + self.deltas,
        }


class _OpenAIChat(_Shape):
    def _chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
        return _sse(self._envelope(choices=[choice]))

    def _envelope(self, **fields: Any) -> dict[str, Any]:
        head = {"id": self.id, "object": "chat.completion.chunk", "created": self.created}
        return {**head, "model": self.model, **fields}

    def prelude(self) -> list[bytes]:
        return [self._chunk({"role": "assistant", "content": None})]

    def _delta(self, text: str) -> bytes:
        return self._chunk({"content": text})

    def finish(self) -> list[bytes]:
        events = [self._chunk({}, "stop")]
        if self.spec.usage_chunk:
            events.append(_sse(self._envelope(choices=[], usage=self.usage())))
        if self.spec.done_marker:
            events.append(b"data: [DONE]\n\n")
        return events

    def error_event(self) -> bytes:
        error = {
            "message": "The server had an error while processing your request.",
            "type": "server_error",
            "param": None,
            "code": None,
        }
        return _sse({"error": error})

    def document(self, text: str) -> bytes:
        message = {"role": "assistant", "content": text}
        doc = {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": self.usage(),
        }
        return json.dumps(doc).encode()


class _OpenAIResponses(_Shape):
    item_id = "msg_demo"

    def __init__(self, index: int, spec: EndpointSpec, prompt_tokens: int) -> None:
        super().__init__(index, spec, prompt_tokens)
        self._sequence = 0

    def _event(self, kind: str, **fields: Any) -> bytes:
        data = {"type": kind, "sequence_number": self._sequence, **fields}
        self._sequence += 1
        return _sse(data, event=kind)

    def _response(self, status: str, text: str | None) -> dict[str, Any]:
        output = []
        if text is not None:
            output = [self._message(text)]
        usage = None
        if status == "completed" and self.spec.usage_chunk:
            usage = {
                "input_tokens": self.prompt_tokens,
                "output_tokens": self.deltas,
                "total_tokens": self.prompt_tokens + self.deltas,
            }
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created,
            "status": status,
            "model": self.model,
            "output": output,
            "usage": usage,
        }

    def _message(self, text: str) -> dict[str, Any]:
        part = {"type": "output_text", "text": text, "annotations": []}
        return {
            "type": "message",
            "id": self.item_id,
            "status": "completed",
            "role": "assistant",
            "content": [part],
        }

    def prelude(self) -> list[bytes]:
        item = {
            "type": "message",
            "id": self.item_id,
            "status": "in_progress",
            "role": "assistant",
            "content": [],
        }
        part = {"type": "output_text", "text": "", "annotations": []}
        return [
            self._event("response.created", response=self._response("in_progress", None)),
            self._event("response.in_progress", response=self._response("in_progress", None)),
            self._event("response.output_item.added", output_index=0, item=item),
            self._event(
                "response.content_part.added",
                item_id=self.item_id,
                output_index=0,
                content_index=0,
                part=part,
            ),
        ]

    def _delta(self, text: str) -> bytes:
        return self._event(
            "response.output_text.delta",
            item_id=self.item_id,
            output_index=0,
            content_index=0,
            delta=text,
        )

    def finish(self) -> list[bytes]:
        where = {"item_id": self.item_id, "output_index": 0, "content_index": 0}
        part = {"type": "output_text", "text": self.text, "annotations": []}
        events = [
            self._event("response.output_text.done", **where, text=self.text),
            self._event("response.content_part.done", **where, part=part),
            self._event("response.output_item.done", output_index=0, item=self._message(self.text)),
        ]
        if self.spec.done_marker:
            response = self._response("completed", self.text)
            events.append(self._event("response.completed", response=response))
        return events

    def error_event(self) -> bytes:
        return self._event(
            "error",
            code="server_error",
            param=None,
            message="The server had an error while processing your request.",
        )

    def document(self, text: str) -> bytes:
        self.text = text
        return json.dumps(self._response("completed", text)).encode()


class _Anthropic(_Shape):
    def _event(self, kind: str, **fields: Any) -> bytes:
        return _sse({"type": kind, **fields}, event=kind)

    def _message(self, content: list[dict[str, Any]], stop_reason: str | None) -> dict[str, Any]:
        output_tokens = self.deltas if stop_reason else 1
        usage = {"input_tokens": self.prompt_tokens, "output_tokens": output_tokens}
        return {
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": usage,
        }

    def prelude(self) -> list[bytes]:
        return [
            self._event("message_start", message=self._message([], None)),
            self._event("content_block_start", index=0, content_block={"type": "text", "text": ""}),
            self._event("ping"),
        ]

    def _delta(self, text: str) -> bytes:
        return self._event(
            "content_block_delta", index=0, delta={"type": "text_delta", "text": text}
        )

    def finish(self) -> list[bytes]:
        fields: dict[str, Any] = {"delta": {"stop_reason": "end_turn", "stop_sequence": None}}
        if self.spec.usage_chunk:
            fields["usage"] = {"output_tokens": self.deltas}
        events = [
            self._event("content_block_stop", index=0),
            self._event("message_delta", **fields),
        ]
        if self.spec.done_marker:
            events.append(self._event("message_stop"))
        return events

    def error_event(self) -> bytes:
        return self._event("error", error={"type": "overloaded_error", "message": "Overloaded"})

    def document(self, text: str) -> bytes:
        return json.dumps(self._message([{"type": "text", "text": text}], "end_turn")).encode()

    def error_document(self, status: int) -> bytes:
        kind = "rate_limit_error" if status == 429 else "api_error"
        message = "Rate limit reached" if status == 429 else "Internal server error"
        return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()


class _Raw(_Shape):
    content_type = "text/plain; charset=utf-8"
    document_type = "text/plain; charset=utf-8"

    def _delta(self, text: str) -> bytes:
        return text.encode()

    def error_event(self) -> bytes:
        # Plain text has no error event; a stream that stops on an error line is the closest.
        return b"\n[error] upstream failed\n"

    def malformed(self) -> bytes:
        return b""  # plain text has no event framing to break

    def document(self, text: str) -> bytes:
        return text.encode()

    def error_document(self, status: int) -> bytes:
        return f"error {status}\n".encode()


_SHAPES: dict[str, type[_Shape]] = {
    "openai-chat": _OpenAIChat,
    "openai-responses": _OpenAIResponses,
    "anthropic": _Anthropic,
    "raw": _Raw,
}
