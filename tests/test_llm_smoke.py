"""The llama_server fixture serves a real model: proves the fixture, not latency-gate."""

from __future__ import annotations

import json

import httpx
import pytest

pytestmark = pytest.mark.llm

CHAT = {"messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 8}


def test_chat_completion_answers(llama_server: str) -> None:
    """A non-streamed chat completion comes back 200 with assistant text."""
    response = httpx.post(f"{llama_server}/v1/chat/completions", json=CHAT, timeout=60)
    assert response.status_code == 200
    message = response.json()["choices"][0]["message"]
    assert message["role"] == "assistant"
    assert message["content"].strip() != ""


def test_streamed_chat_completion_ends_with_done(llama_server: str) -> None:
    """A streamed chat completion comes back 200 as SSE data lines ending in [DONE]."""
    request = {**CHAT, "stream": True}
    with httpx.stream(
        "POST", f"{llama_server}/v1/chat/completions", json=request, timeout=60
    ) as response:
        assert response.status_code == 200
        data = [line[6:] for line in response.iter_lines() if line.startswith("data: ")]
    assert data[-1] == "[DONE]"
    chunks = [json.loads(item) for item in data[:-1]]
    assert any(chunk["choices"] and chunk["choices"][0]["delta"].get("content") for chunk in chunks)
