"""Write `latency-gate probe --help` into README.md, so the README never lists stale options.

    python scripts/gen_cli_help.py           # rewrite README.md in place
    python scripts/gen_cli_help.py --check   # exit 1 if README.md is out of step

The help goes between `<!-- cli-help:start -->` and `<!-- cli-help:end -->` as a fenced block;
the rest of README.md is left alone. It is rendered at a fixed width, so the terminal this runs
in does not matter. tests/test_cli.py runs the same functions, so a changed option fails the
tests until this script has been run.
"""

from __future__ import annotations

import sys
from pathlib import Path

from click.testing import CliRunner

REPO_ROOT = Path(__file__).resolve().parent.parent
HELP_WIDTH = 88
MARKER = "cli-help"

sys.path.insert(0, str(REPO_ROOT))  # run from a checkout without installing it

from latency_gate.cli import main as cli_main  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling scripts, as modules
from _generated import generator_parser, write_generated  # noqa: E402
from gen_readme_tables import replace_between  # noqa: E402


def probe_help() -> str:
    """`latency-gate probe --help` as a user sees it, HELP_WIDTH columns wide."""
    result = CliRunner().invoke(
        cli_main,
        ["probe", "--help"],
        prog_name="latency-gate",
        terminal_width=HELP_WIDTH,
        # Unset, so whatever the developer has exported can never be rendered into README.md.
        env={"LATENCY_GATE_API_KEY": None, "LATENCY_GATE_LABEL": None},
    )
    if result.exit_code != 0:
        raise RuntimeError(f"probe --help failed ({result.exit_code}): {result.output}")
    return result.stdout


def update_readme(readme: str) -> str:
    """The README text with the probe help regenerated."""
    block = f"```text\n$ latency-gate probe --help\n{probe_help().rstrip()}\n```"
    return replace_between(readme, MARKER, block)


def main(argv: list[str] | None = None) -> int:
    parser = generator_parser(__doc__)
    parser.add_argument("--readme", type=Path, default=REPO_ROOT / "README.md")
    args = parser.parse_args(argv)

    return write_generated(
        args.readme,
        update_readme,
        check=args.check,
        subject=f"{args.readme.name} probe --help",
        source="the CLI",
        script=Path(__file__).name,
    )


if __name__ == "__main__":
    raise SystemExit(main())
