"""Tables that fit the terminal without cutting what matters: the columns that name a row and say how it
is are never shortened; the others are shown whole, most useful first, while they fit, and the ones left
out are named under the table."""
from __future__ import annotations

from dataclasses import dataclass

from rich.console import Console
from rich.segment import Segments
from rich.table import Table
from rich.text import Text

_PER_COLUMN = 3  # a border and a space either side, as rich's default box draws them
_EDGE = 1  # the table's closing border
# Rows drawn at once. rich keeps every cell of a table it draws, and more for each as it lays it out: one
# table of a scan of 100,000 partitions took 590 MB. Pieces of this many rows, drawn one after the other
# with the same column widths and no border between them, read as that one table.
PIECE_ROWS = 1000


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
        for start in range(0, len(rows), PIECE_ROWS):
            out.print("\n".join("  ".join(r[i] for i in order) for r in rows[start:start + PIECE_ROWS]))
    else:
        _print_table(out, [(columns[i].header, natural[i]) for i in order], [[r[i] for i in order] for r in rows])
    left_out = [c.header for i, c in enumerate(columns) if i not in shown]
    if left_out:
        out.print(f"[dim](not shown at {out.width} columns: {', '.join(left_out)}; a wider terminal or "
                  f"--format json shows them)[/]")


def _print_table(out: Console, columns: list[tuple[str, int]], rows: list[list[str]]) -> None:
    """One table of (header, width) columns, drawn PIECE_ROWS rows at a time: the first piece has the
    header, and each piece leaves out the border the next one would repeat."""
    for start in range(0, len(rows), PIECE_ROWS):
        table = Table(show_lines=False, show_header=start == 0)
        for header, width in columns:
            table.add_column(header, no_wrap=True, min_width=width)
        for r in rows[start:start + PIECE_ROWS]:
            table.add_row(*r)
        lines = out.render_lines(table, pad=False, new_lines=True)
        if start > 0:
            lines = lines[1:]  # the top border: the table goes on from the piece above
        if start + PIECE_ROWS < len(rows):
            lines = lines[:-1]  # the bottom border: the piece below goes on
        out.print(Segments([s for line in lines for s in line]), end="")
