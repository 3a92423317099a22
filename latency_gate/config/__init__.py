"""What to probe and the budget: the models, the string parsers, the builder, targets files,
and what a run will spend before its first call (plan/). What counts as a secret and how it is
kept out of what a run writes is config.secrets, imported from there by name.

The first layer of the flow (config -> measure -> assess -> report): nothing here measures,
judges or reads the environment; the edges hand it raw strings (and a targets file's text).
"""

from latency_gate.config.ab import ab_input, base_arm, base_changes, base_source, same_origin
from latency_gate.config.build import BUDGET_KEYS, TARGET_KEYS, build_target
from latency_gate.config.parsing import (
    REDACTED,
    Format,
    chat_body,
    detect_format,
    parse_bool,
    parse_count,
    parse_duration,
    parse_fraction,
    parse_label,
    parse_url,
    proxy_from_environment,
    read_body,
    redact_url,
)
from latency_gate.config.request import (
    default_prompt_note,
    fixed_length_of,
    header_text_problem,
    parse_header,
    unsent_settings,
    with_environment_proxy,
)
from latency_gate.config.target import NOT_COMPARED, Budget, Header, Target

__all__ = [
    "BUDGET_KEYS",
    "NOT_COMPARED",
    "REDACTED",
    "TARGET_KEYS",
    "Budget",
    "Format",
    "Header",
    "Target",
    "ab_input",
    "base_arm",
    "base_changes",
    "base_source",
    "build_target",
    "chat_body",
    "default_prompt_note",
    "detect_format",
    "fixed_length_of",
    "header_text_problem",
    "parse_bool",
    "parse_count",
    "parse_duration",
    "parse_fraction",
    "parse_header",
    "parse_label",
    "parse_url",
    "proxy_from_environment",
    "read_body",
    "redact_url",
    "same_origin",
    "unsent_settings",
    "with_environment_proxy",
]
