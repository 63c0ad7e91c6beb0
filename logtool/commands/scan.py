"""`logtool scan`: inventory of log dirs, partitions and segments, from batch headers only."""
from __future__ import annotations

import click

from logtool.commands.common.options import epilog, format_option, paths_argument
from logtool.commands.common.checking import check_with_progress
from logtool.render.emit import emit
from logtool.render.text import render_inventory


@click.command("scan", short_help="Inventory: partitions, segments, offsets, formats, indexes.", epilog=epilog([
    ("logtool scan /var/lib/kafka/data", "every partition of a log dir: one row each, damaged ones marked"),
    ("logtool scan /var/lib/kafka/data/orders-0 --format json | jq '.partitions[].segments[].file'",
     "the segments of one partition, for a script"),
], "4 here: a partition is damaged or has warnings, as verify would say."))
@paths_argument
@format_option
def command(paths, fmt: str) -> int:
    """Inventory of log dirs, partition dirs or .log files: partitions, segments, offsets, timestamps,
    formats, indexes and log-dir files, with each batch's CRC checked on the way (as verify does without
    --deep)."""
    return emit(check_with_progress("scan", paths, deep=False), fmt, render_inventory)
