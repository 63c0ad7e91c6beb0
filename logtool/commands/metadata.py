"""`logtool metadata`: the cluster state a KRaft metadata log describes, at any offset or time; what changed
between two points; which records touched a topic."""
from __future__ import annotations

from pathlib import Path

import click

from logtool.commands.common.failure import Failure
from logtool.commands.common.options import PATH, TIME_FORMS, epilog, format_option, parse_time
from logtool.render.emit import emit
from logtool.render.metadata import render_diff, render_history, render_state
from logtool.rules.metadata.compare import Point, diff_between, history_of
from logtool.rules.metadata.replay import MetadataPathError, open_source, replay


def _point(text: str) -> Point:
    """An offset (digits) or a time (anything else)."""
    text = text.strip()
    return Point(offset=int(text)) if text.isdigit() else Point(time=parse_time(text))


@click.command("metadata", short_help="Replay the KRaft metadata log: the cluster at any offset or time.",
               epilog=epilog([
    ("logtool metadata /var/lib/kafka/data", "brokers, topics and partitions as the metadata log says now"),
    ("logtool metadata /var/lib/kafka/data --at-time 2024-05-01T09:00Z",
     "the cluster as it was at that time (the newest snapshot before it, then the log)"),
    ("logtool metadata /var/lib/kafka/data --diff 2024-05-01T08:00Z 2024-05-01T09:00Z",
     "what changed in that hour: brokers fenced, leaders moved, topics created or deleted"),
    ("logtool metadata /var/lib/kafka/data --history orders-0",
     "every record that touched partition 0 of orders, with its offset and time"),
], "4 here: records that cannot be read or that Kafka's loader would refuse, a snapshot that is not whole, "
   "missing offsets, or a torn tail."))
@click.argument("path", type=PATH)
@click.option("--at", "at_offset", type=click.IntRange(min=0), metavar="OFFSET",
              help="the state after the record at this offset")
@click.option("--at-time", metavar="TIME", help=f"the state after the records written by then ({TIME_FORMS})")
@click.option("--diff", nargs=2, metavar="A B",
              help="what changed from point A to point B, each an offset or a time")
@click.option("--history", metavar="TOPIC[-PARTITION]",
              help="every record that touched the topic or partition, up to --at/--at-time")
@format_option
def command(path: Path, at_offset: int | None, at_time: str | None, diff: tuple[str, str] | None,
            history: str | None, fmt: str) -> int:
    """Replay a KRaft metadata log into the cluster state: features and metadata.version, brokers and
    controllers (endpoints, fenced or not, log dirs), topics with their ids and configs, partitions (replicas,
    ISR, leader and epochs, directories, ELR), producer-id blocks, ACL and quota counts, and where each
    last changed. PATH is a __cluster_metadata-0 dir, a log dir holding one, or a KRaft snapshot file.

    As Kafka loads it: the newest snapshot at or before the point, then the log's records after it, up to
    where its recovery would cut a damaged log. A record Kafka's loader would refuse is reported and left
    out, as Kafka's loader leaves it out."""
    if at_offset is not None and at_time is not None:
        raise click.UsageError("give --at or --at-time, not both")
    if diff is not None and (at_offset is not None or at_time is not None or history is not None):
        raise click.UsageError("--diff A B names its own points: give it without --at, --at-time or --history")
    at = Point(at_offset, parse_time(at_time) if at_time is not None else None)
    try:
        source = open_source(path)
    except MetadataPathError as e:
        raise Failure(str(e)) from None
    if source.directory is None and (at != Point() or diff is not None or history is not None):
        source.close()
        raise click.UsageError("a snapshot file is one point: --at, --at-time, --diff and --history need a "
                               "__cluster_metadata-0 dir")
    try:
        if diff is not None:
            return emit(diff_between(source, _point(diff[0]), _point(diff[1])), fmt, render_diff)
        if history is not None:
            return emit(history_of(source, history, at), fmt, render_history)
        return emit(replay(source, at.offset, at.time), fmt, render_state)
    finally:
        source.close()
