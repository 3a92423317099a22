"""Targets files: several endpoints to probe one after another and report side by side.

A targets file is YAML (`.yml`, `.yaml`), TOML (`.toml`) or JSON (`.json`):

    defaults:                # optional: settings every target shares
      timeout: 30s
      max-warm-p95: 2s
    targets:                 # required: cheapest first, dearest last
      - name: local
        url: http://127.0.0.1:8080/v1/chat/completions
        prompt: Say hello
        cost: free, on our own GPU
      - name: paid
        url: https://api.example.com/v1/chat/completions
        api-key: ${PAID_API_KEY}
        max-warm-p95: 1s     # a per-target budget override

Each target takes the same kebab-case settings as the CLI options and action inputs (TARGET_KEYS)
plus `cost`, a free-text note on its price. Values may be strings, numbers or booleans; `headers`
(and `baseline-headers`, for the base of an A/B run) a list of "Name: value" strings or a
mapping; `body` text or a JSON object. `${NAME}` in a string
is replaced by the environment variable NAME, so keys stay out of the file.

Every target is validated by `config.build_target`, the one parser; a bad value is reported with
the file's name and the line of the offending key. Precedence, lowest first: the settings given
beside the file (CLI options, action inputs), the file's `defaults`, the target's own settings.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from latency_gate.config.build import TARGET_KEYS, build_target
from latency_gate.config.document import PathKey, decode, line_of
from latency_gate.config.files import read_input_file
from latency_gate.config.json_data import dump_json
from latency_gate.config.target import Target
from latency_gate.errors import ConfigError, InputProblem

__all__ = ["MAX_TARGETS", "load_targets", "parse_targets"]

MAX_TARGETS = 50
MAX_FILE_BYTES = 1024 * 1024  # fifty targets fit in a few KiB
TOP_LEVEL_KEYS = ("defaults", "targets")
COST_KEY = "cost"

Raw = dict[str, str | list[str] | None]

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_SUFFIXES = {".yml": "yaml", ".yaml": "yaml", ".toml": "toml", ".json": "json"}


def load_targets(
    path: Path,
    *,
    given: Mapping[str, str | list[str] | None] | None = None,
    environ: Mapping[str, str],
    root: Path | None = None,
) -> list[Target]:
    """Read and validate a targets file; the targets in the file's order (cheapest first).

    `given` holds settings from beside the file (CLI options, action inputs), used where the
    file says nothing; `environ` fills `${NAME}` references (the edge passes the environment);
    `root`, when given (the action's workspace), is where the file and every file it names must
    lie. Raises ConfigError naming the file and line of every bad setting.
    """
    try:
        text = read_input_file(path, max_bytes=MAX_FILE_BYTES, root=root)
    except ValueError as exc:
        raise ConfigError.single("targets", str(exc)) from None
    return parse_targets(
        text,
        name=path.name,
        suffix=path.suffix.lower(),
        base_dir=path.parent,
        given=given,
        environ=environ,
        root=root,
    )


def parse_targets(
    text: str,
    *,
    name: str,
    suffix: str,
    base_dir: Path | None = None,
    given: Mapping[str, str | list[str] | None] | None = None,
    environ: Mapping[str, str] | None = None,
    root: Path | None = None,
) -> list[Target]:
    """`load_targets` on text already read; `name` is the file's name for messages."""
    kind = _SUFFIXES.get(suffix)
    if kind is None:
        raise ConfigError.single(
            "targets", f"{name}: expected a .yml, .yaml, .toml or .json file, got {suffix!r}"
        )
    data, lines = decode(text, kind, name)
    return _build(
        data,
        lines=lines,
        name=name,
        base_dir=base_dir,
        given=dict(given or {}),
        environ=environ or {},
        root=root,
    )


# --- building -------------------------------------------------------------------------------


def _build(
    data: Any,
    *,
    lines: Mapping[PathKey, int],
    name: str,
    base_dir: Path | None,
    given: Raw,
    environ: Mapping[str, str],
    root: Path | None,
) -> list[Target]:
    sheet = _Sheet(lines, name, given=given, environ=environ, base_dir=base_dir, root=root)
    if not isinstance(data, dict):
        raise ConfigError(
            [
                sheet.problem(
                    (), "file", "expected a mapping with `targets:` (and optional `defaults:`)"
                )
            ]
        )
    problems = [
        sheet.problem((key,), str(key), f"unknown section; expected {' or '.join(TOP_LEVEL_KEYS)}")
        for key in data
        if key not in TOP_LEVEL_KEYS
    ]
    sheet.defaults = _defaults(data.get("defaults", {}), sheet, problems)
    entries = data.get("targets")
    if not isinstance(entries, list) or not entries:
        problems.append(
            sheet.problem(("targets",), "targets", "expected a list of targets, cheapest first")
        )
        raise ConfigError(problems)
    if len(entries) > MAX_TARGETS:
        problems.append(
            sheet.problem(
                ("targets",), "targets", f"at most {MAX_TARGETS} targets, got {len(entries)}"
            )
        )
    targets: list[Target] = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(entries):
        at: PathKey = ("targets", index)
        if not isinstance(entry, dict):
            problems.append(
                sheet.problem(at, f"targets[{index}]", "expected a mapping of settings")
            )
            continue
        label = f"target {entry.get('name')!r}" if entry.get("name") else f"targets[{index}]"
        target, target_name = _target(sheet, at, label, entry, problems)
        if target is not None:
            targets.append(target)
        if target_name:
            if target_name in seen:
                problems.append(
                    sheet.problem(
                        (*at, "name"),
                        f"{label}, name",
                        f"the name is already used by targets[{seen[target_name]}]; "
                        "each column needs its own",
                    )
                )
            seen.setdefault(target_name, index)
    if problems:
        raise ConfigError(problems)
    return targets


class _Sheet:
    """A targets file being read: where each of its settings was written (file and line), and
    what every target builds on (the settings given beside the file, the file's defaults)."""

    def __init__(
        self,
        lines: Mapping[PathKey, int],
        name: str,
        *,
        given: Raw,
        environ: Mapping[str, str],
        base_dir: Path | None,
        root: Path | None,
    ) -> None:
        self.lines, self.name, self.given, self.environ = lines, name, given, environ
        self.base_dir, self.root = base_dir, root
        self.defaults: Raw = {}

    def where(self, path: PathKey) -> str:
        line = line_of(self.lines, path)
        return f"{self.name}:{line}" if line is not None else self.name

    def problem(self, path: PathKey, label: str, message: str) -> InputProblem:
        return InputProblem(f"{self.where(path)}: {label}", message)

    def spelled(self, at: PathKey, label: str, entry: Mapping[Any, Any], key: str) -> str:
        """Setting `key` of the target at `at` named where it was written: this target, the
        defaults, or beside the file."""
        if key in entry or (key not in self.defaults and key not in self.given):
            return f"{self.where((*at, key))}: {label}, {key}"
        if key in self.defaults:
            return f"{self.where(('defaults', key))}: defaults.{key} (for {label})"
        return f"{key} (for {label})"


def _defaults(raw_defaults: Any, sheet: _Sheet, problems: list[InputProblem]) -> Raw:
    """The file's `defaults:`, each value as the CLI would have been given it."""
    defaults: Raw = {}
    if not isinstance(raw_defaults, dict):
        problems.append(sheet.problem(("defaults",), "defaults", "expected a mapping of settings"))
        return defaults
    for key, value in raw_defaults.items():
        path: PathKey = ("defaults", key)
        if key == COST_KEY:
            problems.append(sheet.problem(path, f"defaults.{key}", "a cost belongs to each target"))
            continue
        try:
            defaults[str(key)] = _raw_value(str(key), value, sheet.environ)
        except ValueError as exc:
            problems.append(sheet.problem(path, f"defaults.{key}", str(exc)))
    return defaults


def _target(
    sheet: _Sheet,
    at: PathKey,
    label: str,
    entry: dict[Any, Any],
    problems: list[InputProblem],
) -> tuple[Target | None, str]:
    """One entry of `targets:` built (None when it has a problem, said in `problems`), and the
    name it gives (or "")."""
    raw: Raw = {}
    entry_problems: list[InputProblem] = []
    cost: str | None = None
    for key, value in entry.items():
        try:
            if key == COST_KEY:
                cost = _scalar(value, sheet.environ).strip() or None
            else:
                raw[str(key)] = _raw_value(str(key), value, sheet.environ)
        except ValueError as exc:
            entry_problems.append(sheet.problem((*at, key), f"{label}, {key}", str(exc)))
    if "name" not in raw:
        entry_problems.append(sheet.problem(at, label, "needs a `name`, shown as its column"))

    built: Target | None = None
    try:
        merged_defaults = {**sheet.given, **sheet.defaults}
        target = build_target(
            raw,
            partial(sheet.spelled, at, label, entry),
            base_dir=sheet.base_dir,
            defaults=merged_defaults,
            root=sheet.root,
        )
    except ConfigError as exc:
        entry_problems += exc.problems
    else:
        if not entry_problems:
            built = target.model_copy(update={"cost": cost})
    problems += entry_problems
    return built, str(raw.get("name") or "").strip()


def _scalar(value: Any, environ: Mapping[str, str]) -> str:
    """A YAML/TOML/JSON scalar as the string the CLI would have been given."""
    if value is None:
        return ""  # null: not set, so a budget is not gated and a model is not sent
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return _expand(value, environ)
    raise ValueError(f"expected a single value, got a {type(value).__name__}")


def _raw_value(key: str, value: Any, environ: Mapping[str, str]) -> str | list[str] | None:
    if key in ("headers", "baseline-headers"):
        if isinstance(value, dict):
            return [f"{k}: {_scalar(v, environ)}" for k, v in value.items()]
        if isinstance(value, list):
            return [_scalar(item, environ) for item in value]
        return [_scalar(value, environ)]
    if key == "body" and isinstance(value, dict | list):
        # Substituted inside the structure, then serialised: a value with a quote or a line
        # break stays one JSON string.
        return dump_json(_expand_all(value, environ))
    if key not in TARGET_KEYS:
        # build_target reports it as unknown, with its line; its value does not matter.
        return "" if isinstance(value, dict | list) else _scalar(value, environ)
    return _scalar(value, environ)


def _expand_all(value: Any, environ: Mapping[str, str]) -> Any:
    """`_expand` on every string (keys included) of a YAML/TOML/JSON structure."""
    if isinstance(value, str):
        return _expand(value, environ)
    if isinstance(value, dict):
        return {_expand_all(k, environ): _expand_all(v, environ) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand_all(item, environ) for item in value]
    return value


def _expand(text: str, environ: Mapping[str, str]) -> str:
    """Replace `${NAME}` with the environment variable NAME; a missing one is an error."""
    missing = [m for m in _ENV_REF.findall(text) if m not in environ]
    if missing:
        names = ", ".join(sorted(set(missing)))
        raise ValueError(f"environment variable {names} is not set")
    return _ENV_REF.sub(lambda m: environ[m[1]], text)


def cost_notes(targets: Sequence[Target]) -> dict[str, str]:
    """Target name to its cost note, for the targets that have one."""
    return {t.name: t.cost for t in targets if t.cost}
