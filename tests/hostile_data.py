"""What several hostile-input files (tests/test_hostile_*.py) share: what they send and read.

Beside tests/hostile_kit.py: the healthy streamed answer a paced server sends, the key the echo and
URL tests plant, and result documents copied, written and read back for their calls. The names are
those the tests were written with.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hostile_kit import chunk, sse_pieces


def _samples(path: Path) -> list[dict[str, Any]]:
    samples: list[dict[str, Any]] = json.loads(path.read_text())["samples"]
    return samples


ANSWER = [chunk({"content": "hello"}), chunk({}, "stop"), "[DONE]"]


def _answer(_: bytes) -> list[bytes]:
    """A healthy streamed chat answer."""
    return sse_pieces(ANSWER)


def _copy(document: dict[str, Any]) -> dict[str, Any]:
    copy: dict[str, Any] = json.loads(json.dumps(document))
    return copy


def _write(path: Path, document: object) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document), encoding="utf-8")
    return str(path)


KEY = "sk-five-0123456789abcdef-SECRETkey"
