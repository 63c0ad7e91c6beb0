"""`logtool scan`: inventory of log dirs, partitions and segments, from batch headers only."""
from __future__ import annotations

import click
from pathlib import Path

from logtool.commands.options import format_option
from logtool.commands.report import checked, emit
from logtool.render.text import render_inventory


@click.command("scan")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@format_option
def command(paths, fmt: str) -> int:
    """Inventory: partitions, segments, offsets, timestamps, formats, indexes and log-dir files.

    Exit 0: nothing wrong; 4: a partition is damaged or has warnings (as verify would say); 8: a PATH could
    not be read or is not Kafka's."""
    report = checked("scan", paths, deep=False)
    return emit(report, fmt, render_inventory, report.exit_code())
