"""A target's settings on their way to a `Target`, as build_target carries them through its
steps (build.py, request.py, ab.py, base_request.py, price.py, rate_keys.py): the raw values
given, the fields parsed from them so far, how the user spelled each input, and every problem
found, so that all of them are named at once."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from latency_gate.errors import InputProblem

__all__ = ["Draft"]


class Draft:
    """The fields parsed so far from `merged` (the raw strings by kebab-case input name), with
    `spelled` naming an input as the user wrote it and `problems` collecting what is wrong."""

    def __init__(
        self,
        merged: Mapping[str, str | list[str] | None],
        spelled: Callable[[str], str],
        problems: list[InputProblem],
        fields: dict[str, Any] | None = None,
    ) -> None:
        self.merged, self.spelled, self.problems = merged, spelled, problems
        self.fields: dict[str, Any] = {} if fields is None else fields

    def take(self, key: str, parse: Callable[[str], Any], field: str | None = None) -> None:
        """Read the setting `key` into `fields` under its field name, or say in `problems` why
        it could not (a list where one value goes, a parser's ValueError)."""
        value = self.merged.get(key)
        if value is None:
            return
        if isinstance(value, list):
            self.problems.append(
                InputProblem(self.spelled(key), "expected a single value, not a list")
            )
            return
        try:
            self.fields[field or key.replace("-", "_")] = parse(value)
        except ValueError as exc:
            self.problems.append(InputProblem(self.spelled(key), str(exc)))
