"""`--help` with the options under headings by purpose, for a command of many options.

click lists a command's options in one list, in the order they were declared. `probe` has over
fifty; one list of them interleaves the request, the budgets, the sampling, the comparisons and
the load searches. This is the few lines over click's own formatter that group them: each
heading's rows are click's own help records, so the wording, `[default: ...]` and `[env var:
...]` stay click's. An option no group names is listed last, under "Other options", never lost.
"""

from __future__ import annotations

from collections.abc import Sequence

import click

__all__ = ["OTHER_OPTIONS", "GroupedCommand"]

OTHER_OPTIONS = "Other options"
COLUMN_MAX = 30  # click's own: a longer option gets its description on the next line


class GroupedCommand(click.Command):
    """A click command whose help lists its options under `option_groups`: (heading, parameter
    names) pairs, in the order given. A name that is not one of the command's parameters is
    skipped, so a group may name an option that only some versions have."""

    def __init__(
        self,
        *args: object,
        option_groups: Sequence[tuple[str, Sequence[str]]] = (),
        **kwargs: object,
    ) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.option_groups = tuple((heading, tuple(names)) for heading, names in option_groups)

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        help_option = self.get_help_option(ctx)
        records: dict[str, tuple[str, str]] = {}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx) if isinstance(param, click.Option) else None
            if record is not None and param.name is not None:
                # The groups name the help option "help", whatever click calls it inside.
                is_help = help_option is not None and param.name == help_option.name
                records["help" if is_help else param.name] = record
        placed: set[str] = set()
        sections = []
        for heading, names in self.option_groups:
            sections.append((heading, [records[name] for name in names if name in records]))
            placed.update(names)
        rest = [row for name, row in records.items() if name not in placed]
        sections.append((OTHER_OPTIONS, rest))
        # One column for the descriptions under every heading, as click's single list has.
        width = min(max((len(first) for first, _ in records.values()), default=0), COLUMN_MAX)
        for heading, rows in sections:
            if rows:
                with formatter.section(heading):
                    formatter.write_dl(
                        [(first.ljust(width), text) for first, text in rows], col_max=COLUMN_MAX
                    )
