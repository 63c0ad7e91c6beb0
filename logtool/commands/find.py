"""`logtool find`: the batch holding an offset, or the first record at or after a timestamp."""
from __future__ import annotations

from pathlib import Path

import click

from logtool import exitcodes
from logtool.commands.common.failure import Failure
from logtool.commands.common.options import PATH, TIME_FORMS, epilog, format_choice, parse_time
from logtool.reads.located import locate
from logtool.render.emit import emit
from logtool.render.find import render_hit
from logtool.render.progress import progress
from logtool.store.discover import NotAPartition
from logtool.store.seek import SeekError


@click.command("find", short_help="Find the batch holding an offset or a time.", epilog=epilog([
    ("logtool find /var/lib/kafka/data/orders-0 --offset 1500000",
     "the segment, byte and batch holding offset 1500000"),
    ("logtool find orders-0 --timestamp 2024-05-01T09:30:00Z",
     "the first record at or after that time, as ListOffsets"),
    ("logtool find orders-0 --offset 42 --format json | jq .position", "the byte position, for a script"),
], "4 here: the offset or time is not in the partition."))
@click.argument("path", type=PATH)
@click.option("--offset", type=click.IntRange(min=0), help="the offset to find")
@click.option("--timestamp", "when", help=f"the first record at or after this time ({TIME_FORMS})")
@format_choice("text", "json")
def command(path: Path, offset: int | None, when: str | None, fmt: str) -> int:
    """Binary-search a partition dir or .log file for an offset or a timestamp through its indexes, as a
    broker does, checking each index entry against the log (a missing or wrong index means a walk of batch
    headers, never a wrong answer)."""
    if (offset is None) == (when is None):
        raise click.UsageError("give exactly one of --offset and --timestamp")
    try:
        with progress("find") as meter:  # moves only where no index helps and the log is walked
            found = locate(path, offset, parse_time(when) if when is not None else None, meter.reading(None),
                           meter.sizing)
    except NotAPartition as e:
        raise Failure(str(e)) from None
    except SeekError as e:  # not there: an answer about the data, as a damaged partition is
        raise Failure(str(e), exitcodes.PROBLEMS) from None
    except OSError as e:
        raise Failure(f"{e.filename or path}: {e.strerror or e}") from None
    return emit(found, fmt, render_hit)
