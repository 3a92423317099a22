"""The base's own request in an A/B run: another model, body, prompt or format than the head's.

`--baseline-model NAME` is the head's request with the model replaced; `--baseline-body` and
`--baseline-prompt` another body or prompt; `--baseline-format` another dialect (an
OpenAI-compatible head beside an Anthropic base). Any of them makes the run an A/B run, at
`--baseline-url` when given and at the head's URL otherwise. The base's request is resolved as
the head's is (`resolve_request`: format, body, stream, answer length), from what the head was
given: the head's prompt (or the default prompt) in the base's format, or the head's body with
the model replaced. The head's own settings of the request (stream, method, max-tokens,
token-limit-field, fixed-length) hold for both arms. Each arm's calls get the same prompt marks
(measure/prompts.py), so the i-th call of each asks the i-th prompt, through its own body.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import SecretStr

from latency_gate.config.draft import Draft
from latency_gate.config.json_data import dump_json, load_json
from latency_gate.config.parsing import Format
from latency_gate.config.request import resolve_request
from latency_gate.config.target import BaseRequest
from latency_gate.errors import InputProblem

__all__ = ["BASE_REQUEST_KEYS", "HEAD_REQUEST_KEYS", "resolve_base_request"]

# The settings of the base's own request, as the user names them.
BASE_REQUEST_KEYS = ("baseline-model", "baseline-body", "baseline-prompt", "baseline-format")

# The head's settings, as given (before they are resolved), that the base's request starts from.
HEAD_REQUEST_KEYS = ("body", "prompt", "format", "stream", "method", "model")

# A problem resolve_request finds in the base's request, named by the base's input.
_AS_BASE = {
    "body": "baseline-body",
    "prompt": "baseline-prompt",
    "format": "baseline-format",
    "model": "baseline-model",
}


def resolve_base_request(draft: Draft, head: Mapping[str, Any]) -> None:
    """The base's request (`fields["baseline_request"]`) from the base settings in `fields`
    (taken out of it) and `head`, the head's request settings as given; `fields` holds the
    head's resolved ones. Nothing when no base request setting was given. Problems are named
    by the base's inputs (`baseline-body`, ...)."""
    fields, spelled, problems = draft.fields, draft.spelled, draft.problems
    given = {
        key: fields.pop(key.replace("-", "_"))
        for key in BASE_REQUEST_KEYS
        if key.replace("-", "_") in fields
    }
    if not given:
        return
    url = fields.get("baseline_url") or fields.get("url")
    head_format: Format | None = fields.get("format")
    fmt: Format = given.get("baseline-format") or head.get("format") or Format.AUTO
    if fmt is Format.AUTO and head_format not in (None, Format.RAW) and url == fields.get("url"):
        fmt = head_format  # the head's URL, the head's dialect, unless told otherwise
    model = given.get("baseline-model") or head.get("model") or _body_model(fields.get("body"))
    base: dict[str, Any] = {
        "url": url,
        "format": fmt,
        "model": model,
        **{
            key: fields[key]
            for key in ("max_tokens", "token_limit_field", "fixed_length")
            if key in fields
        },
    }
    if "method" in head:
        base["method"] = head["method"]
    if "baseline-body" in given or "baseline-prompt" in given:
        if "baseline-body" in given:
            base["body"] = given["baseline-body"]
        if "baseline-prompt" in given:
            base["prompt"] = given["baseline-prompt"]
    elif head.get("prompt") is not None:
        base["prompt"] = head["prompt"]
    elif head.get("body") is not None:
        base["body"] = head["body"]
    if "stream" in head:
        base["stream"] = head["stream"]
    elif "prompt" in base and "stream" in fields:
        base["stream"] = fields["stream"]  # the head's, as its body or prompt settled it
    heads_body = "body" in base and "baseline-body" not in given
    count = len(problems)
    resolve_request(Draft({}, lambda key: spelled(_AS_BASE.get(key, key)), problems, base))
    if len(problems) > count:
        return
    if heads_body and base["format"] is not head_format:  # the head's body, in another dialect
        problems.append(
            InputProblem(
                spelled("baseline-format"),
                f"the head's {spelled('body')} is in the "
                f"{head_format.value if head_format else 'raw'} format, not "
                f"{base['format'].value}: give the base's own with "
                f"{spelled('baseline-body')} or {spelled('baseline-prompt')}",
            )
        )
        return
    if "baseline-model" in given:
        if base["format"] is Format.RAW:
            problems.append(
                InputProblem(
                    spelled("baseline-model"),
                    "the raw format has no model field (its body is sent as written): give "
                    f"the base's body with {spelled('baseline-body')}, or a format "
                    f"({spelled('format')} or {spelled('baseline-format')})",
                )
            )
            return
        _replace_model(base, given["baseline-model"])
    fields["baseline_request"] = BaseRequest(
        format=base["format"],
        body=base.get("body"),
        model=model,
        prompt=base.get("prompt"),
        default_prompt=base.get("default_prompt"),
        stream=base["stream"],
        given=tuple(given),
    )


def _body_model(body: Any) -> str | None:
    """The model a resolved JSON body names, or None."""
    if not isinstance(body, SecretStr):
        return None
    try:
        data = load_json(body.get_secret_value())
    except ValueError:
        return None
    model = data.get("model") if isinstance(data, dict) else None
    return model if isinstance(model, str) else None


def _replace_model(base: dict[str, Any], model: str) -> None:
    """The base's JSON body with its model replaced by `model` (a body built from a prompt
    names it already; a given body is rewritten)."""
    body = base.get("body")
    if not isinstance(body, SecretStr):
        return
    try:
        data = load_json(body.get_secret_value())
    except ValueError:
        return
    if isinstance(data, dict) and data.get("model") != model:
        data["model"] = model
        base["body"] = SecretStr(dump_json(data))
