"""An A/B run of two requests said as an upgrade: "candidate gpt-b: FAIL: warm p95 31 % slower
(x1.22 to x1.41 at the same work) than gpt-a", then what changed, then the cost.

A run whose base was asked a request of its own (`--baseline-model`, `-body`, `-prompt`,
`-format`: config/base_request.py) is a choice between two requests, most often two models: the
reports name the head the candidate and both sides by their model, or by the settings that
differ when the model is the same ("prompt 'One word only.'"). A base at another URL sent the
head's request is today's A/B, said as before (no upgrade here).

Every string here is raw: the names come from the user (a model is whatever was typed) and
stay untrusted, so the terminal cleans them (`clean_text`) and the Markdown escapes them (the
`md` and `prose` filters), as any target name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from latency_gate.assess.verdict import regression_reason, spoken_number
from latency_gate.config.ab import shown_prompt
from latency_gate.formatting import clean_text, fmt_ratio, fmt_value
from latency_gate.models import BaselineCheck, NumberDelta, RunResult
from latency_gate.report.cost import cost_lines
from latency_gate.report.deltas import no_regression_text, what_changed_sentence

__all__ = ["Upgrade", "upgrade_of"]

_NAME_SHOWN = 60  # characters of a side's name: a model's name, or its settings that differ


@dataclass(frozen=True)
class Upgrade:
    """An A/B run of two requests, in the words the reports lead with. Untrusted (the names)."""

    candidate: str  # the head: "gpt-b", or its settings that differ ("prompt 'Tell me.'")
    base: str  # the base: "gpt-a"
    passed: bool
    outcome: str  # "FAIL: warm p95 31 % slower (x1.22 to x1.41) than gpt-a"
    more: tuple[str, ...]  # what else failed the run, a line each after the verdict line
    changed: str  # what changed: "time per token 31 % slower (...); length unchanged", or ""
    costs: tuple[str, ...]  # the cost block (report/cost.py), () when not priced

    @property
    def lead(self) -> str:
        """ "candidate gpt-b"."""
        return f"candidate {self.candidate}"

    @property
    def verdict(self) -> str:
        """The first line: "candidate gpt-b: FAIL: warm p95 31 % slower (...) than gpt-a"."""
        return f"{self.lead}: {self.outcome}"

    @property
    def against(self) -> str:
        """ "candidate gpt-b against gpt-a"."""
        return f"{self.lead} against {self.base}"


def upgrade_of(result: RunResult, problems: Sequence[str] = ()) -> Upgrade | None:
    """The run as an upgrade when its base was asked a request of its own and compared, else
    None. `problems` are what failed the run, a line each (report/view.py `problems`): those
    beside its regressions (a budget breached) follow the verdict line, the first of them leads
    it when no regression failed the run."""
    check = result.baseline
    base_request = result.config.get("baseline_request")
    if (
        check is None
        or check.kind != "side-by-side"
        or check.status != "compared"
        or not check.base_request
        or not isinstance(base_request, Mapping)
    ):
        return None
    candidate, base = _names(result.config, base_request, check.base_request)
    passed = result.verdict.passed
    said = {regression_reason(delta) for delta in check.regressions}
    more = tuple(problem for problem in problems if problem not in said)
    if check.regressions:
        outcome = f"FAIL: {_regressed(check, base)}"
    elif passed:
        outcome = f"PASS against {base}: {no_regression_text(check, 'noise')}"
    else:  # failed beside the comparison: a budget, no data
        first, more = (more[0], more[1:]) if more else ("see below", ())
        outcome = f"FAIL: {first}; against {base}: {no_regression_text(check, 'noise')}"
    return Upgrade(
        candidate=candidate,
        base=base,
        passed=passed,
        outcome=outcome,
        more=more,
        changed=what_changed_sentence(check),
        costs=cost_lines(result),
    )


def _names(
    head: Mapping[str, object], base: Mapping[str, object], changes: Sequence[str]
) -> tuple[str, str]:
    """The two sides' names: their models when those differ, else the settings that differ, the
    base's as config/ab.py `base_changes` wrote them and the head's in the same words."""
    head_model, base_model = head.get("model"), base.get("model")
    if isinstance(head_model, str) and isinstance(base_model, str) and head_model != base_model:
        return _shown(head_model), _shown(base_model)
    return (
        _shown(", ".join(_head_side(change, head) for change in changes)),
        _shown(", ".join(changes)),
    )


def _head_side(change: str, head: Mapping[str, object]) -> str:
    """The head's setting that a base's change ("format anthropic") replaced ("format
    openai-chat")."""
    setting = change.split(" ", 1)[0]
    if setting in ("model", "no"):  # "model gpt-a" or "no model"
        model = head.get("model")
        return f"model {model}" if isinstance(model, str) else "no model"
    if setting == "prompt":
        prompt = head.get("prompt") or head.get("default_prompt")
        return f"prompt {shown_prompt(prompt)}" if isinstance(prompt, str) else "no prompt"
    if setting == "stream":
        return "stream on" if head.get("stream") else "stream off"
    value = head.get(setting)  # format, body (its fingerprint)
    return f"{setting} {value}" if value is not None else f"no {setting}"


def _shown(name: str) -> str:
    return clean_text(name, _NAME_SHOWN)


def _regressed(check: BaselineCheck, base: str) -> str:
    """The regressions that failed the run, each with its interval: "warm p95 31 % slower (x1.22
    to x1.41 at the same work) and concurrent p95 28 % slower (...) than gpt-a"; a row
    regressed by its answers' length said as the length; a row the base gave no data for
    after them."""
    regressed = check.regressions
    said = [_slower(d) for d in regressed if not d.missing and not d.by_length]
    by_length = [d for d in regressed if d.by_length and not d.missing]
    if by_length:
        said.append(_longer(check, by_length))
    text = f"{_listed(said)} than {base}" if said else f"against {base}"
    missing = [
        f"{_label(d)} not compared: {d.missing}"
        + (", counted as a regression by policy" if d.by_policy else "")
        for d in regressed
        if d.missing
    ]
    return "; ".join([text, *missing])


def _label(delta: NumberDelta) -> str:
    return spoken_number(delta.number)


def _between(delta: NumberDelta) -> str:
    """ " (x1.22 to x1.41 at the same work)": the interval of head / base its outcome's test
    gave; "" without one."""
    low, high = delta.interval or (None, None)
    if low is None or high is None or delta.number == "error_rate":
        return ""
    where = " at the same work" if delta.same_work else ""
    return f" ({fmt_ratio(low)} to {fmt_ratio(high)}{where})"


def _slower(delta: NumberDelta) -> str:
    """ "warm p95 31 % slower (x1.22 to x1.41)", "capacity 40 % lower (...)", "error rate
    0.0 % to 5.0 %"; an undecided row failed by policy said as such."""
    label = _label(delta)
    if delta.number == "error_rate":
        moved = (
            f"{label} {fmt_value(delta.base, delta.number)} to "
            f"{fmt_value(delta.head, delta.number)}"
        )
    else:
        worse = "lower" if delta.number in ("capacity", "goodput") else "slower"
        relative = delta.relative
        sign = -1 if worse == "lower" else 1
        if relative is not None and relative * sign > 0:
            moved = f"{label} {abs(relative) * 100:.0f} % {worse}"
        else:
            moved = f"{label} {worse}"
    if delta.by_policy:
        return f"{moved}{_between(delta)}, undecided and counted as a regression by policy"
    return f"{moved}{_between(delta)}"


def _longer(check: BaselineCheck, regressed: Sequence[NumberDelta]) -> str:
    """ "answers 60 % longer (x1.55 to x1.65), which regressed warm p95 and concurrent p95"."""
    length = check.length
    names = _listed([_label(d) for d in regressed])
    if length is None or length.ratio is None:
        return f"longer answers, which regressed {names}"
    low, high = length.interval or (None, None)
    shown = "" if low is None or high is None else f" ({fmt_ratio(low)} to {fmt_ratio(high)})"
    return f"answers {abs(length.ratio - 1) * 100:.0f} % longer{shown}, which regressed {names}"


def _listed(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
