"""Write the tables of action inputs and outputs in docs/inputs.md from action.yml.

    python scripts/gen_readme_tables.py           # rewrite docs/inputs.md in place
    python scripts/gen_readme_tables.py --check   # exit 1 if docs/inputs.md is out of step

The tables go between `<!-- inputs:start -->` / `<!-- inputs:end -->` and
`<!-- outputs:start -->` / `<!-- outputs:end -->`; the rest of the file is left alone (the
README links to it; it held the tables until issue 39). tests/test_action_yml.py runs the same
functions, so a changed action.yml fails the tests until this script has been run.

The inputs table says which inputs are required. GitHub does not enforce `required:` (the code
validates inputs itself), and no input of this action is required on its own: `url` is, unless
`targets` replaces it, and `model` is for some servers only. So action.yml says `required:
false` throughout, and REQUIRED_WHEN says when each of those is needed; an input that
action.yml marks `required: true` reads "yes".
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parent.parent
INPUTS_DOC = REPO_ROOT / "docs" / "inputs.md"

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling module
from _generated import generator_parser, write_generated  # noqa: E402


def load_action(path: Path) -> dict[str, Any]:
    """action.yml as a mapping."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path} is not a YAML mapping")  # noqa: TRY004 - bad file, not bad type
    return data


def _cell(text: str) -> str:
    """One table cell: folded onto one line, pipes escaped so they do not split the cell."""
    return " ".join(text.split()).replace("|", "\\|")


def _code(text: str) -> str:
    """Inline code that survives backticks in the text and shows an empty string as `""`."""
    if text == "":
        return '`""`'
    fence = "``" if "`" in text else "`"
    pad = " " if "`" in text else ""
    return f"{fence}{pad}{text}{pad}{fence}".replace("|", "\\|")


# When an input that action.yml cannot mark `required: true` is needed all the same.
REQUIRED_WHEN = {
    "url": "yes, unless `targets`",
    "model": (
        "for openai-chat, openai-responses and anthropic at a host that serves several models "
        "(OpenAI's, Anthropic's); a server of one model (llama.cpp, vLLM) takes none"
    ),
    "targets": "instead of `url`",
}


def required_cell(name: str, spec: Mapping[str, Any]) -> str:
    """The inputs table's "required" cell: "yes", when it is needed, or "no"."""
    if spec.get("required") is True:
        return "yes"
    return REQUIRED_WHEN.get(name, "no")


def render_inputs(action: Mapping[str, Any]) -> str:
    """The Markdown table of inputs, in action.yml's order."""
    lines = ["| input | required | default | description |", "| --- | --- | --- | --- |"]
    for name, spec in (action.get("inputs") or {}).items():
        default = str(spec.get("default", ""))
        description = _cell(str(spec.get("description", "")))
        lines.append(
            f"| `{name}` | {_cell(required_cell(name, spec))} | {_code(default)} | {description} |"
        )
    return "\n".join(lines)


def render_outputs(action: Mapping[str, Any]) -> str:
    """The Markdown table of outputs, in action.yml's order."""
    lines = ["| output | description |", "| --- | --- |"]
    for name, spec in (action.get("outputs") or {}).items():
        lines.append(f"| `{name}` | {_cell(str(spec.get('description', '')))} |")
    return "\n".join(lines)


def replace_between(text: str, marker: str, content: str) -> str:
    """Put `content` between `<!-- MARKER:start -->` and `<!-- MARKER:end -->` in `text`.

    Raises ValueError when the pair of markers is missing or appears more than once.
    """
    pattern = re.compile(
        rf"(<!-- {marker}:start -->)(.*?)(<!-- {marker}:end -->)",
        flags=re.DOTALL,
    )
    found = pattern.findall(text)
    if len(found) != 1:
        raise ValueError(
            f"the file needs exactly one <!-- {marker}:start --> ... <!-- {marker}:end --> "
            f"pair, found {len(found)}"
        )
    return pattern.sub(lambda m: f"{m[1]}\n{content}\n{m[3]}", text)


def update_readme(readme: str, action: Mapping[str, Any]) -> str:
    """The inputs reference's text (`readme`, docs/inputs.md) with both tables regenerated from
    `action`."""
    text = replace_between(readme, "inputs", render_inputs(action))
    return replace_between(text, "outputs", render_outputs(action))


def main(argv: list[str] | None = None) -> int:
    parser = generator_parser(__doc__)
    parser.add_argument("--readme", type=Path, default=INPUTS_DOC, help="the file to write")
    parser.add_argument("--action", type=Path, default=REPO_ROOT / "action.yml")
    args = parser.parse_args(argv)

    action: Path = args.action
    return write_generated(
        args.readme,
        lambda readme: update_readme(readme, load_action(action)),
        check=args.check,
        subject=f"{args.readme.name} tables",
        source=action.name,
        script=Path(__file__).name,
    )


if __name__ == "__main__":
    raise SystemExit(main())
