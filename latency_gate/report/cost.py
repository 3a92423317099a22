"""What the answers cost, in words: each arm's cost per answer and per 1,000 calls, and the head
against the base ("the head costs x1.60 per answer (x1.55 to x1.65): answers 60 % longer at the
same price"). Every word here is ours (numbers and fixed text): nothing untrusted."""

from __future__ import annotations

from latency_gate.formatting import fmt_dollars
from latency_gate.models import ArmCost, Bounds, Cost, CostRatio, RunResult

__all__ = ["arm_line", "arm_notes", "cost_lines", "md_dollars", "ratio_line"]


def md_dollars(text: str) -> str:
    """Our cost text for Markdown: every $ escaped, so GitHub reads no math between two."""
    return text.replace("$", "\\$")


def _between(bounds: Bounds | None, fmt: str = "dollars") -> str:
    if bounds is None or bounds[0] is None or bounds[1] is None:
        return ""
    if fmt == "ratio":
        return f" (x{bounds[0]:.2f} to x{bounds[1]:.2f})"
    return f" ({fmt_dollars(bounds[0])} to {fmt_dollars(bounds[1])})"


def _price(arm: ArmCost) -> str:
    return f"${arm.price_input:g}/${arm.price_output:g} per 1M tokens in/out"


def arm_line(arm: ArmCost, who: str = "") -> str:
    """ "the head: $0.0000147 an answer ($0.0000145 to $0.0000149), $0.0147 per 1,000 calls;
    16 output and 34 input tokens an answer at $0.15/$0.6 per 1M tokens in/out"."""
    lead = f"{who}: " if who else ""
    if arm.per_answer is None or arm.output_tokens is None:
        return f"{lead}no answer with a token count to price"
    text = f"{lead}{fmt_dollars(arm.per_answer)} an answer{_between(arm.per_answer_interval)}"
    if arm.per_1000_calls is not None:
        text += f", {fmt_dollars(arm.per_1000_calls)} per 1,000 calls"
    tokens = f"{arm.output_tokens:,.0f} output"
    if arm.input_tokens is not None:
        tokens += f" and {arm.input_tokens:,.0f} input"
    return f"{text}; {tokens} tokens an answer at {_price(arm)}"


def arm_notes(arm: ArmCost) -> list[str]:
    """What the figure leaves out or counted another way, said."""
    notes: list[str] = []
    if arm.answers and arm.input_tokens is None:
        notes.append(
            f"input tokens reported for {arm.input_reported:,} of {arm.answers:,} answers: "
            "the input cost is not counted"
        )
    if arm.output_from == "deltas":
        notes.append("no usage reported: output tokens counted from the stream's deltas")
    elif arm.output_from == "both":
        notes.append("output tokens from usage where reported, else counted from the stream")
    if arm.unpriced:
        notes.append(f"{arm.unpriced:,} successful answers had no token count and are left out")
    return notes


def ratio_line(ratio: CostRatio) -> str:
    """ "the head costs x1.32 per answer (x1.32 to x1.32): answers 60 % longer at the same
    price; output alone x1.60 (x1.60 to x1.60)"."""
    text = (
        f"the head costs x{ratio.ratio:.2f} per answer{_between(ratio.interval, 'ratio')}: "
        f"{ratio.reason}"
    )
    if ratio.input_counted and ratio.output_ratio is not None:
        text += (
            f"; output alone x{ratio.output_ratio:.2f}{_between(ratio.output_interval, 'ratio')}"
        )
    return text


def cost_lines(result: RunResult) -> tuple[str, ...]:
    """The cost of one run in sentences, the comparison first; () when it was not priced."""
    cost: Cost | None = result.cost
    if cost is None:
        return ()
    if cost.base is None:
        return (arm_line(cost.head), *arm_notes(cost.head))
    lines: list[str] = []
    if cost.ratio is not None:
        lines.append(ratio_line(cost.ratio))
    else:
        lines.append("head and base not compared: a side has no answer with a cost")
    lines += [arm_line(cost.head, "the head"), *(f"the head's {n}" for n in arm_notes(cost.head))]
    at = " (at the head's price)" if cost.base_priced_at == "price" else ""
    lines += [
        arm_line(cost.base, f"the base{at}"),
        *(f"the base's {n}" for n in arm_notes(cost.base)),
    ]
    return tuple(lines)
