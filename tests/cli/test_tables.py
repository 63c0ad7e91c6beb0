"""The tables every text renderer prints (logtool/render/table.py) draw their rows themselves, PIECE_ROWS at a
time, because rich's table took 1.6 ms a row (a text scan of 100,000 partitions: three minutes). They are held
here to rich's own table, drawn whole over the same columns: the same characters, each in the same colours."""
from __future__ import annotations

import io
import random
import re

import pytest
from rich.console import Console
from rich.table import Table
from rich.text import Text

from logtool.render.table import PIECE_ROWS, Column, print_fitted

# Cells as the renderers give them: markup (statuses in colour, dim notes), markup escaped in a name, wide
# characters, an emoji code (rich replaces it in a table's cell too), empty, spaces within and at the end.
CELLS = ["clicks-2", "[red]damaged[/]", "[green]ok[/]", "[bold]1[/] of 2", "123456789", "", "日本語-0",
         "a:smile:b", r"\[not markup]-3", "[dim](none)[/]", "é", "[yellow on blue]w[/] [i]z[/]", "x" * 30,
         "a b  c "]


def _console(width: int, colour: bool) -> Console:
    return Console(file=io.StringIO(), width=width, force_terminal=colour, color_system="truecolor" if colour else None,
                   highlight=False, soft_wrap=True)


def _ours(columns: list[Column], rows: list[list[str]], width: int, colour: bool) -> str:
    out = _console(width, colour)
    print_fitted(out, columns, rows)
    return out.file.getvalue()


def _rich(columns: list[Column], rows: list[list[str]], width: int, colour: bool) -> str:
    """rich's table, whole, over the columns print_fitted showed (`shown`), each as wide as its widest cell."""
    out = _console(width, colour)
    table = Table(show_lines=False)
    for i, c in enumerate(columns):
        widest = max(Text.from_markup(x).cell_len for x in [c.header, *(r[i] for r in rows)])
        table.add_column(c.header, no_wrap=True, min_width=widest)
    for r in rows:
        table.add_row(*r)
    out.print(table)
    return out.file.getvalue()


def _looks(ansi: str) -> list[tuple[str, str]]:
    """Each character with the colours and attributes in force where it is printed."""
    looks, state = [], ""
    for m in re.finditer(r"\x1b\[([0-9;]*)m|(.)", ansi, re.S):
        if m.group(2) is None:
            state = "" if m.group(1) in ("", "0") else f"{state};{m.group(1)}"
        else:
            looks.append((m.group(2), state))
    return looks


@pytest.mark.parametrize("colour", [False, True], ids=["plain", "colour"])
def test_tables_are_drawn_as_richs_own(colour):
    rnd = random.Random(20261127)
    for n in [*range(1, 9), PIECE_ROWS - 1, PIECE_ROWS, PIECE_ROWS + 1, 2 * PIECE_ROWS + 3]:
        columns = [Column(rnd.choice(["partition", "status", "[b]offsets[/]", "n"]) + str(k), 0)
                   for k in range(rnd.randint(1, 5))]
        rows = [[rnd.choice(CELLS) for _ in columns] for _ in range(n)]
        rows[-1][-1] = "[red]damaged[/]"  # colour in every table
        ours, theirs = _ours(columns, rows, 250, colour), _rich(columns, rows, 250, colour)
        assert ours.count("\n") == n + 4  # every row, under the header and its two borders, above the bottom one
        if colour:
            assert "\x1b[31m" in ours and _looks(ours) == _looks(theirs), n
        else:
            assert ours == theirs, n


def test_columns_that_do_not_fit_are_left_out_and_named():
    columns = [Column("partition"), Column("status"), Column("timestamps", 2), Column("offsets", 1)]
    rows = [["orders-0", "[green]ok[/]", "2026-11-27T10:00:00Z .. 2026-11-27T11:00:00Z", "0 .. 41"]]
    text = _ours(columns, rows, 50, False)
    shown = [Column("partition"), Column("status"), Column("offsets", 1)]
    assert text == _rich(shown, [[r[0], r[1], r[3]] for r in rows], 50, False) + \
        "(not shown at 50 columns: timestamps; a wider terminal or --format json shows them)\n"


@pytest.mark.parametrize("colour", [False, True], ids=["plain", "colour"])
def test_a_cell_with_a_control_character_is_drawn_as_richs_own_too(colour):
    """rich strips a bell or a carriage return from a cell, expands a tab and breaks the row at a line
    break: a path holding one is drawn as rich draws it, never written to the terminal as it is."""
    columns = [Column("partition"), Column("status")]
    for odd in ["cr\rx-0", "tab\tx-0", "bell\x07-0", "two\nlines-0", "esc\x1bx-0"]:
        rows = [["orders-0", "[green]ok[/]"], [odd, "[red]damaged[/]"], *[[f"t-{i}", "ok"] for i in range(PIECE_ROWS)]]
        ours, theirs = _ours(columns, rows, 120, colour), _rich(columns, rows, 120, colour)
        assert (_looks(ours) == _looks(theirs)) if colour else (ours == theirs), repr(odd)
        assert "\r" not in ours and "\x07" not in ours and "\t" not in ours
