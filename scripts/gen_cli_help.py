"""Write every command's `--help` into docs/cli.md, so the CLI reference never goes stale.

    python scripts/gen_cli_help.py           # rewrite docs/cli.md in place
    python scripts/gen_cli_help.py --check   # exit 1 if docs/cli.md is out of step

The help goes between `<!-- cli-help:start -->` and `<!-- cli-help:end -->`, one fenced block
per command; the rest of the file is left alone (the README links to it; it held `probe --help`
until issue 39). It is rendered at a fixed width, so the terminal this runs in does not matter.
tests/test_cli.py runs the same functions, so a changed option fails the tests until this
script has been run.
"""

from __future__ import annotations

import sys
from pathlib import Path

from click.testing import CliRunner

REPO_ROOT = Path(__file__).resolve().parent.parent
CLI_DOC = REPO_ROOT / "docs" / "cli.md"
HELP_WIDTH = 88
MARKER = "cli-help"
# The commands of docs/cli.md, in its order: () is `latency-gate --help` itself.
COMMANDS: tuple[tuple[str, ...], ...] = (
    (),
    ("probe",),
    ("quick",),
    ("merge",),
    ("demo",),
    ("demo-server",),
)

sys.path.insert(0, str(REPO_ROOT))  # run from a checkout without installing it

from latency_gate.cli import main as cli_main  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling scripts, as modules
from _generated import generator_parser, write_generated  # noqa: E402
from gen_readme_tables import replace_between  # noqa: E402


def command_help(command: tuple[str, ...]) -> str:
    """`latency-gate COMMAND --help` as a user sees it, HELP_WIDTH columns wide."""
    result = CliRunner().invoke(
        cli_main,
        [*command, "--help"],
        prog_name="latency-gate",
        terminal_width=HELP_WIDTH,
        # Unset, so whatever the developer has exported can never be rendered into the file.
        env={"LATENCY_GATE_API_KEY": None, "LATENCY_GATE_LABEL": None},
    )
    if result.exit_code != 0:
        raise RuntimeError(f"{command} --help failed ({result.exit_code}): {result.output}")
    return result.stdout


def probe_help() -> str:
    """`latency-gate probe --help` as a user sees it."""
    return command_help(("probe",))


def update_readme(readme: str) -> str:
    """The CLI reference's text (`readme`, docs/cli.md) with every command's help regenerated."""
    blocks = []
    for command in COMMANDS:
        line = " ".join(("latency-gate", *command, "--help"))
        blocks.append(f"```text\n$ {line}\n{command_help(command).rstrip()}\n```")
    return replace_between(readme, MARKER, "\n\n".join(blocks))


def main(argv: list[str] | None = None) -> int:
    parser = generator_parser(__doc__)
    parser.add_argument("--readme", type=Path, default=CLI_DOC, help="the file to write")
    args = parser.parse_args(argv)

    return write_generated(
        args.readme,
        update_readme,
        check=args.check,
        subject=f"{args.readme.name} --help",
        source="the CLI",
        script=Path(__file__).name,
    )


if __name__ == "__main__":
    raise SystemExit(main())
