"""`logtool scan`: inventory of log dirs, partitions and segments, from batch headers only."""
from __future__ import annotations

import click
from pathlib import Path

from logtool.commands.options import format_option
from logtool.commands.report import checked, emit
from logtool.render.text import render_inventory
from logtool import exitcodes


@click.command("scan")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@format_option
def command(paths, fmt: str) -> int:
    """Inventory: partitions, segments, offsets, timestamps, formats, indexes and log-dir files."""
    report = checked("scan", paths, deep=False)
    emit(report, fmt, render_inventory)
    return exitcodes.OPERATIONAL if report.operational_error else exitcodes.CLEAN
