"""One setting's value read from its raw string: the parsers `build_target` hands each key.

Each takes the string as given and returns the value, or raises ValueError with a message that
says what was expected; config/build.py names the input the user wrote beside it. The parsers
shared beyond the builder (durations, counts, URLs, bodies) are in config/parsing.py.
"""

from __future__ import annotations

import re
import ssl
from decimal import Decimal
from pathlib import Path

from latency_gate.config.files import input_file
from latency_gate.config.parsing import Format, parse_count, parse_duration, parse_fraction, shown

__all__ = [
    "OFF",
    "ca_bundle",
    "error_budget",
    "max_time",
    "nonempty",
    "parse_format",
    "parse_max_calls",
    "parse_max_tokens",
    "parse_method",
    "parse_min_capacity",
    "parse_on_undecided",
    "parse_on_undecided_regression",
    "positive_duration",
    "wait_duration",
]

OFF = {"", "none", "off"}


def nonempty(text: str, what: str) -> str:
    if not text.strip():
        raise ValueError(f"expected {what}, got an empty string")
    return text.strip()


def positive_duration(text: str) -> float:
    value = parse_duration(text)
    if value <= 0:
        raise ValueError(f"expected a duration above zero, got {text!r}")
    return value


def max_time(text: str) -> float | None:
    """A duration above zero, or off/none for no limit."""
    return None if text.strip().lower() in OFF else positive_duration(text)


def wait_duration(text: str) -> float:
    """A duration, or off/0 for no readiness wait."""
    return 0.0 if text.strip().lower() in OFF else parse_duration(text)


def error_budget(text: str) -> float:
    """An error-rate budget below 1: a budget of 100 % lets every call fail, so it gates
    nothing; that is what `off` says, and a number that only reads as 1.0 (a double keeps about
    16 digits: 0.99999999999999999) is said to be 1 rather than taken for less."""
    value = parse_fraction(text)
    if value >= 1:
        stripped = text.strip()
        try:
            exact = Decimal(stripped[:-1]) / 100 if stripped.endswith("%") else Decimal(stripped)
        except ArithmeticError:  # float() reads a few spellings Decimal does not
            exact = Decimal(1)
        rounded = "" if exact >= 1 else " (it reads as 1.0)"
        raise ValueError(
            f"{shown(text)}{rounded} lets every call fail, so it gates nothing: use off to turn "
            "the error-rate budget off, or give a share below 1"
        )
    return value


def parse_method(text: str) -> str:
    method = text.strip().upper()
    if not re.fullmatch(r"[A-Z]+", method):
        raise ValueError(f"expected an HTTP method such as GET or POST, got {text!r}")
    return method


def parse_format(text: str) -> Format:
    try:
        return Format(text.strip().lower())
    except ValueError:
        choices = ", ".join(f.value for f in Format)
        raise ValueError(f"expected one of {choices}; got {text!r}") from None


def parse_on_undecided(text: str) -> str:
    choice = text.strip().lower()
    if choice not in {"estimate", "fail", "pass"}:
        raise ValueError(f"expected estimate, fail or pass, got {text!r}")
    return choice


def parse_on_undecided_regression(text: str) -> str:
    choice = text.strip().lower()
    if choice not in {"fail", "pass"}:
        raise ValueError(f"expected fail or pass, got {text!r}")
    return choice


def parse_min_capacity(text: str) -> int | None:
    """A count of calls at once, or empty/off for none (the capacity is reported, not gated)."""
    return None if text.strip().lower() in OFF else parse_count(text)


def parse_max_calls(text: str) -> int | None:
    """A count, or auto (sized to what the checks need)."""
    return None if text.strip().lower() in {"auto", ""} else parse_count(text)


# Servers read an answer's length as a 32-bit integer (llama.cpp, vLLM, the hosted APIs): a
# larger one is a typo, and sent as written it fails every call with a 400.
_MOST_TOKENS = 2**31 - 1


def parse_max_tokens(text: str) -> int:
    """An answer length a server can read: a whole number from 1 to 2,147,483,647."""
    count = parse_count(text)
    if count > _MOST_TOKENS:
        raise ValueError(
            f"expected at most {_MOST_TOKENS:,} (servers read it as a 32-bit integer), got "
            f"{count:,}"
        )
    return count


def ca_bundle(text: str, base_dir: Path | None, root: Path | None) -> str:
    """A readable PEM file that holds at least one CA certificate."""
    path = input_file(text, base_dir, root=root)
    try:
        ssl.create_default_context(cafile=path)
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise ValueError(f"{path!r} holds no usable PEM certificate ({exc})") from None
    return path
