"""A targets file's document decoded, with the line of every key, so errors can name it.

YAML, TOML or JSON; YAML's nodes carry line marks (and JSON is nearly always YAML), TOML's lines
are found by a line scan.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import yaml

from latency_gate.errors import ConfigError

__all__ = ["PathKey", "decode", "line_of"]

PathKey = tuple[str | int, ...]

# A targets file of fifty targets has a few thousand values at a depth under ten. YAML aliases
# can make 400 bytes expand into billions of values (and json.dumps of a body then runs out of
# memory), and deep nesting exhausts the parser's recursion: both are bounded.
MAX_VALUES = 100_000
MAX_DEPTH = 64


def decode(text: str, kind: str, name: str) -> tuple[Any, dict[PathKey, int]]:
    """The document (`kind` yaml, toml or json) and the line of each of its keys, by path;
    ConfigError naming `name` (and the line, where the parser says it) when it does not parse,
    or when a string holds half of a UTF-16 surrogate pair (a `\\uD83D` escape alone)."""
    data, lines = _decode(text, kind, name)
    return _whole_characters(data, (), name, lines), lines


def _whole_characters(value: Any, at: PathKey, name: str, lines: Mapping[PathKey, int]) -> Any:
    """`value` with each surrogate pair its strings hold made the one character it encodes.

    YAML (and JSON) read `"\\uD83D\\uDE00"` as two halves of a UTF-16 pair, which no text is;
    JSON's reader joins them, PyYAML's does not. A half left alone is ConfigError naming the file
    and line: the value came from the file, not from a shell in another encoding."""
    if isinstance(value, str):
        try:
            return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
        except UnicodeDecodeError as exc:
            half = value.encode("utf-16-le", "surrogatepass")[exc.start : exc.start + 2]
            code = int.from_bytes(half, "little")
            line = line_of(lines, at)
            where = "".join(f"[{key}]" if isinstance(key, int) else f".{key}" for key in at)
            raise ConfigError.single(
                f"{name}:{line}" if line is not None else name,
                f"{where.lstrip('.') or 'a key'}: holds \\u{code:04X}, half of a UTF-16 "
                "surrogate pair, which is no character: "
                "write the character itself, or both halves of its pair",
            ) from None
    if isinstance(value, dict):
        return {
            _whole_characters(key, at, name, lines): _whole_characters(
                item, (*at, key), name, lines
            )
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_whole_characters(item, (*at, i), name, lines) for i, item in enumerate(value)]
    return value


def _decode(text: str, kind: str, name: str) -> tuple[Any, dict[PathKey, int]]:
    # Imported here: PyYAML costs ~15 ms of start-up, and only a targets file needs it.
    import yaml  # noqa: PLC0415

    if _flow_depth(text) > MAX_DEPTH:  # before the parsers, which recurse per level
        raise ConfigError.single(name, _TOO_DEEP)
    try:
        if kind == "yaml":
            node = yaml.compose(text, Loader=yaml.SafeLoader)
            if node is None:
                return None, {}
            _bound(node, name)
            return yaml.SafeLoader(text).get_single_data(), _yaml_lines(node)
        if kind == "toml":
            return tomllib.loads(text), _toml_lines(text)
        data = json.loads(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{name}:{mark.line + 1}" if mark is not None else name
        raise ConfigError.single(where, f"not valid YAML: {exc.problem or exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError.single(name, f"not valid YAML: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        # The message carries "(at line N, column M)".
        raise ConfigError.single(name, f"not valid TOML: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError.single(f"{name}:{exc.lineno}", f"not valid JSON: {exc.msg}") from None
    except RecursionError:
        raise ConfigError.single(name, _TOO_DEEP) from None
    except ValueError as exc:  # int() of a number past Python's 4,300 digits, in any parser
        raise ConfigError.single(name, _value_problem(exc)) from None
    # JSON is (nearly always) valid YAML too, and YAML's nodes carry line marks.
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        if node is not None:
            _bound(node, name)
    except (yaml.YAMLError, RecursionError, ConfigError, ValueError):
        return data, {}
    return data, _yaml_lines(node) if node is not None else {}


_TOO_DEEP = f"nested deeper than {MAX_DEPTH} levels; a targets file needs a few"


def _value_problem(exc: ValueError) -> str:
    """A parser's ValueError in the user's terms (Python's own message about int() digits
    names sys.set_int_max_str_digits, which means nothing to the user)."""
    if "digits" in str(exc):
        return "holds a number of more than 4,300 digits; no setting needs one"
    return f"cannot be read: {exc}"


def _flow_depth(text: str) -> int:
    """The deepest run of unclosed `[` and `{` (brackets inside strings counted too: a file
    deeper than MAX_DEPTH that way is refused either way)."""
    depth = deepest = 0
    for char in text:
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth = max(depth - 1, 0)
    return deepest


def _bound(root: yaml.Node, name: str) -> None:
    """ConfigError when the document, with its aliases expanded, holds more than MAX_VALUES
    values or nests deeper than MAX_DEPTH; the walk stops as soon as either is passed."""
    import yaml  # noqa: PLC0415 - imported by decode() already; see there

    count = 0
    stack: list[tuple[yaml.Node, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > MAX_VALUES:
            raise ConfigError.single(
                name,
                f"expands to more than {MAX_VALUES:,} values (YAML aliases?); "
                "a targets file needs far fewer",
            )
        if depth > MAX_DEPTH:
            raise ConfigError.single(name, _TOO_DEEP)
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                stack += [(key, depth + 1), (value, depth + 1)]
        elif isinstance(node, yaml.SequenceNode):
            stack += [(item, depth + 1) for item in node.value]


def _yaml_lines(node: yaml.Node, at: PathKey = ()) -> dict[PathKey, int]:
    """Line (from 1) of every mapping key and sequence item, by its path in the document."""
    import yaml  # noqa: PLC0415 - imported by decode() already; see there

    lines: dict[PathKey, int] = {at: node.start_mark.line + 1}
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = str(key_node.value)
            lines.update(_yaml_lines(value_node, (*at, key)))
            lines[(*at, key)] = key_node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines.update(_yaml_lines(item, (*at, index)))
    return lines


_TOML_TABLE = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\"' -]+?)\s*\]\]?\s*(?:#.*)?$")
_TOML_KEY = re.compile(r"""^\s*(?:"([^"]+)"|'([^']+)'|([A-Za-z0-9_-]+))\s*=""")


def _toml_lines(text: str) -> dict[PathKey, int]:
    """Lines of `[table]` / `[[array]]` headers and their `key =` lines, by a line scan.

    Good enough for the shapes a targets file takes; a key written in an inline table is found
    at its table's line instead (the lookup walks up the path).
    """
    lines: dict[PathKey, int] = {}
    counts: dict[tuple[str, ...], int] = {}
    table: PathKey = ()
    for number, line in enumerate(text.splitlines(), start=1):
        header = _TOML_TABLE.match(line)
        if header:
            parts = tuple(p.strip().strip("\"'") for p in header[2].split("."))
            if header[1] == "[[":
                index = counts.get(parts, 0)
                counts[parts] = index + 1
                table = (*parts, index)
            else:
                table = parts
            lines.setdefault(table, number)
            continue
        key = _TOML_KEY.match(line)
        if key:
            lines.setdefault((*table, key[1] or key[2] or key[3]), number)
    return lines


def line_of(lines: Mapping[PathKey, int], path: PathKey) -> int | None:
    """The line of `path`, or of its nearest enclosing item that has one."""
    while path:
        if path in lines:
            return lines[path]
        path = path[:-1]
    return lines.get(())
