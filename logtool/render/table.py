"""Tables that fit the terminal without cutting what matters: the columns that name a row and say how it
is are never shortened; the others are shown whole, most useful first, while they fit, and the ones left
out are named under the table."""
from __future__ import annotations

from dataclasses import dataclass

from rich.console import Console
from rich.table import Table
from rich.text import Text

_PER_COLUMN = 3  # a border and a space either side, as rich's default box draws them
_EDGE = 1  # the table's closing border


@dataclass(frozen=True, slots=True)
class Column:
    header: str
    rank: int = 0  # 0: always shown, whole (the row's name, its status); then 1, 2, ... in order of use


def print_fitted(out: Console, columns: list[Column], rows: list[list[str]]) -> None:
    """Print `rows` (cells in rich markup) under `columns`, fitted to the console's width; nothing when
    there are no rows (an empty table before an error would only be noise)."""
    if not rows:
        return
    natural = [max([Text.from_markup(c.header).cell_len] + [Text.from_markup(r[i]).cell_len for r in rows])
               for i, c in enumerate(columns)]
    shown = {i for i, c in enumerate(columns) if c.rank == 0}
    used = _EDGE + sum(natural[i] + _PER_COLUMN for i in shown)
    for i in sorted((i for i in range(len(columns)) if i not in shown), key=lambda i: columns[i].rank):
        if used + natural[i] + _PER_COLUMN <= out.width:
            shown.add(i)
            used += natural[i] + _PER_COLUMN
    order = sorted(shown)
    if used > out.width:
        # Even the always-shown columns do not fit in a table (a very long topic name): one line per row,
        # which the terminal wraps but never cuts.
        for r in rows:
            out.print("  ".join(r[i] for i in order))
    else:
        table = Table(show_lines=False)
        for i in order:
            table.add_column(columns[i].header, no_wrap=True, min_width=natural[i])
        for r in rows:
            table.add_row(*(r[i] for i in order))
        out.print(table)
    left_out = [c.header for i, c in enumerate(columns) if i not in shown]
    if left_out:
        out.print(f"[dim](not shown at {out.width} columns: {', '.join(left_out)}; a wider terminal or "
                  f"--format json shows them)[/]")
