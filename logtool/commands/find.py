"""`logtool find`: the batch holding an offset, or the first record at or after a timestamp."""
from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path

import click

from logtool.render.jsonout import emit_json
from logtool.render.text import console
from logtool.store.layout import PathKind, kind_of
from logtool.store.partition import Partition
from logtool.store.seek import Hit, SeekError, seek_offset, seek_timestamp
from logtool import exitcodes


def parse_time(text: str) -> int:
    """Epoch milliseconds, or ISO-8601 (a time without a zone is UTC)."""
    text = text.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(f"{text!r} is neither epoch milliseconds nor an ISO-8601 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)


def open_partition(path: Path) -> Partition:
    """A partition dir or one .log file, or a click error (exit 8) saying what the path is instead."""
    try:
        kind = kind_of(path)
        if kind == PathKind.PARTITION_DIR:
            return Partition.from_dir(path)
        if kind == PathKind.SEGMENT_FILE:
            return Partition.from_segment_file(path)
    except OSError as e:
        raise click.ClickException(f"{path}: {e.strerror or e}") from None
    raise click.ClickException(f"{path}: not a partition directory or .log file")


@click.command("find")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--offset", type=int, help="the offset to find")
@click.option("--timestamp", "when", help="the first record at or after this time (epoch ms or ISO-8601)")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def command(path: Path, offset: int | None, when: str | None, fmt: str) -> int:
    """Binary-search a partition for an offset or a timestamp, as a broker does."""
    if (offset is None) == (when is None):
        raise click.UsageError("give exactly one of --offset and --timestamp")
    part = open_partition(path)
    try:
        hit = seek_offset(part, offset) if offset is not None else seek_timestamp(part, parse_time(when))
    except SeekError as e:
        print(f"logtool: {e}", file=sys.stderr)
        return exitcodes.PROBLEMS
    finally:
        part.close()
    doc = to_dict(hit)
    if fmt == "json":
        emit_json(doc)
    else:
        render(doc)
    return exitcodes.CLEAN


def to_dict(hit: Hit) -> dict:
    b = hit.batch
    return {
        "offset": hit.offset, "timestamp": hit.timestamp, "segment": str(hit.segment.log_path),
        "position": b.position, "batch_base_offset": b.base_offset, "batch_last_offset": b.last_offset,
        "batch_size": b.size, "batch_max_timestamp": b.max_timestamp, "magic": b.magic,
        "index_entries_read": hit.cost.index_entries_read, "log_bytes_read": hit.cost.log_bytes_read,
        "index_notes": hit.cost.notes,
    }


def render(doc: dict) -> None:
    out = console()
    ts = f" (timestamp {doc['timestamp']})" if doc["timestamp"] is not None else ""
    out.print(f"offset {doc['offset']}{ts}: {doc['segment']} byte {doc['position']}, batch "
              f"{doc['batch_base_offset']}..{doc['batch_last_offset']} ({doc['batch_size']} bytes, magic {doc['magic']})")
    out.print(f"read {doc['index_entries_read']} index entries and {doc['log_bytes_read']} log bytes")
    for note in doc["index_notes"]:
        out.print(f"[yellow]note[/]: {note}")
