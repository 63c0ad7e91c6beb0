"""Tables that fit the terminal without cutting what matters: the columns that name a row and say how it
is are never shortened; the others are shown whole, most useful first, while they fit, and the ones left
out are named under the table."""
from __future__ import annotations

import re
from dataclasses import dataclass

from rich.cells import cell_len
from rich.console import Console
from rich.segment import Segment, Segments
from rich.table import Table

_PER_COLUMN = 3  # a border and a space either side, as rich's default box draws them
_EDGE = 1  # the table's closing border
# Rows drawn at once: rich's own table keeps every cell it draws, and more for each as it lays it out (one
# table of a scan of 100,000 partitions took 590 MB), so the rows are drawn here, this many at a time.
PIECE_ROWS = 1000
_MARKUP = ("[", ":")  # what makes a cell more than its plain text: rich's markup tags and emoji codes
_BAR = Segment("│")  # the body rows' outer and inner borders, as rich's default box (HEAVY_HEAD) draws them
_NEW_LINE = Segment.line()
# What rich's table strips from a cell, expands (a tab) or breaks a row at (a line break): a table with such a
# cell (a path with a control character in it) is drawn by rich itself, whatever it costs.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True, slots=True)
class Column:
    header: str
    rank: int = 0  # 0: always shown, whole (the row's name, its status); then 1, 2, ... in order of use


def print_fitted(out: Console, columns: list[Column], rows: list[list[str]]) -> None:
    """Print `rows` (cells in rich markup) under `columns`, fitted to the console's width; nothing when
    there are no rows (an empty table before an error would only be noise)."""
    if not rows:
        return
    cells = _Cells(out)
    natural = [max([cells.width(c.header)] + [cells.width(r[i]) for r in rows]) for i, c in enumerate(columns)]
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
        widths, shown_rows = [(columns[i].header, natural[i]) for i in order], [[r[i] for i in order] for r in rows]
        if any(_CONTROL.search(cell) for r in shown_rows for cell in r):
            _print_rich_table(out, widths, shown_rows)
        else:
            _print_table(out, cells, widths, shown_rows)
    left_out = [c.header for i, c in enumerate(columns) if i not in shown]
    if left_out:
        out.print(f"[dim](not shown at {out.width} columns: {', '.join(left_out)}; a wider terminal or "
                  f"--format json shows them)[/]")


class _Cells:
    """Each cell's markup rendered once, as rich renders a table's cell (markup and emoji codes, no
    highlighting): its segments and its width in terminal cells. A cell without markup is its own text."""

    def __init__(self, out: Console) -> None:
        self._out = out
        self._marked: dict[str, tuple[list[Segment], int]] = {}  # few distinct ones: statuses, codes

    def width(self, cell: str) -> int:
        return self.segments(cell)[1]

    def segments(self, cell: str) -> tuple[list[Segment], int]:
        if not any(m in cell for m in _MARKUP):
            return [Segment(cell)], cell_len(cell)
        known = self._marked.get(cell)
        if known is None:
            text = self._out.render_str(cell, highlight=False)
            known = self._marked[cell] = (list(text.render(self._out, end="")), text.cell_len)
        return known


def _print_table(out: Console, cells: _Cells, columns: list[tuple[str, int]], rows: list[list[str]]) -> None:
    """One table of (header, width) columns. rich draws its frame (the header, the borders above and under
    it, the bottom border), as it draws a table without rows; the rows go between, drawn here as rich's
    table draws them (a border, a space, the cell, the space that fills its column and one more), PIECE_ROWS
    at a time: rich's own drawing cost 1.6 ms a row and all its cells' memory."""
    frame = Table(show_lines=False)
    for header, width in columns:
        frame.add_column(header, no_wrap=True, min_width=width)
    top, headers, rule, bottom = out.render_lines(frame, pad=False, new_lines=True)
    out.print(Segments([*top, *headers, *rule]), end="")
    for start in range(0, len(rows), PIECE_ROWS):
        piece: list[Segment] = []
        for row in rows[start:start + PIECE_ROWS]:
            piece.append(_BAR)
            for cell, (_, width) in zip(row, columns):
                segments, used = cells.segments(cell)
                piece.append(Segment(" "))
                piece += segments
                piece.append(Segment(" " * (width - used + 1)))
                piece.append(_BAR)
            piece.append(_NEW_LINE)
        out.print(Segments(piece), end="")
    out.print(Segments(bottom), end="")


def _print_rich_table(out: Console, columns: list[tuple[str, int]], rows: list[list[str]]) -> None:
    """The table drawn by rich, PIECE_ROWS rows at a time: the first piece has the header, and each piece
    leaves out the border the next one would repeat."""
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
