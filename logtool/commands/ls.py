"""`logtool ls`: one line per partition, with the offsets its log holds, from batch headers only."""
from __future__ import annotations

import click

from logtool.commands.common.checking import check_with_progress
from logtool.commands.common.options import epilog, format_option, paths_argument
from logtool.render.emit import emit
from logtool.render.text import render_listing


@click.command("ls", short_help="One line per partition: its offsets, bytes and state.", epilog=epilog([
    ("logtool ls /var/lib/kafka/data", "every partition of a log dir, with its first offset and log end offset"),
    ("logtool ls /var/lib/kafka/data --format jsonl | jq -r 'select(.type == \"partition\") | .path'",
     "the partition dirs, for a script"),
], "4 here: a partition is damaged or has warnings, as verify would say."))
@paths_argument
@format_option
def command(paths, fmt: str) -> int:
    """List the partitions of log dirs, partition dirs or .log files, one line each: the first offset on
    disk, the log end offset (one past the last valid record, where the broker appends next), the bytes of
    its segments, and whether it is clean. The JSON forms are scan's."""
    return emit(check_with_progress("ls", paths, deep=False), fmt, render_listing)
