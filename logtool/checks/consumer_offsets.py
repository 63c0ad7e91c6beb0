"""`__consumer_offsets` with --deep: committed offsets that go back for a group, topic and partition.

A group's committed offset goes back when someone reset it (`kafka-consumer-groups --reset-offsets`), or
when a consumer committed an older position (a rebalance that let a slow member commit late): consumers
then read those records again. Informational: the log is sound either way. A tombstone (the group's offsets
deleted or expired) starts the key afresh. Each segment keeps the first and last commit of each key
(`Commits`), and `check_commits` joins the segments in order, as the producer checks do.
"""
from __future__ import annotations

import struct
from typing import cast

from logtool.findings import CONSUMER_OFFSET_BACKWARDS, Finding, Sink
from logtool.format.batch import BatchView
from logtool.format.records import RecordError, iter_records

TOPIC = "__consumer_offsets"
_INT16_INT64 = struct.Struct(">hq")
Key = tuple[str, str, int]
Commit = tuple[int, int, int] | None  # (committed offset, record offset, batch position); None: a tombstone


def commit_of(key: bytes | None, value: bytes | None) -> tuple[Key, int | None] | None:
    """The (group, topic, partition) an offset-commit record is about and the offset it commits (None for a
    tombstone); None for any other record, or one whose bytes do not read."""
    if key is None or len(key) < 2:
        return None
    # Imported here: the schema engine is a share of every command's start, and only a deep walk of
    # __consumer_offsets reads a commit.
    from logtool.format.messages import MessageError
    from logtool.format.schemas import by_record_type
    schema = by_record_type("group")[0].get(struct.unpack_from(">h", key)[0])
    if schema is None or not schema.name.endswith("OffsetCommitKey"):
        return None
    try:
        k, _end = schema.read(key, 0, 2)
    except MessageError:
        return None
    if value is not None and len(value) < _INT16_INT64.size:
        return None
    key_fields = cast(Key, (k["group"], k["topic"], k["partition"]))  # OffsetCommitKey: string, string, int32
    return key_fields, None if value is None else _INT16_INT64.unpack_from(value)[1]


class CommitCheck:
    """The lens of one segment's deep walk: each key's first and last commit, and what goes back between."""

    def __init__(self, buf, sink: Sink) -> None:
        self.buf, self.sink = buf, sink
        self.first: dict[Key, Commit] = {}
        self.last: dict[Key, Commit] = {}

    def feed(self, v: BatchView) -> None:
        if v.is_control:
            return
        try:
            for r in iter_records(self.buf, v):
                found = commit_of(r.key, r.value)
                if found is None:
                    continue
                key, committed = found
                now = None if committed is None else (committed, r.offset, v.position)
                before = self.last.get(key)
                self.first.setdefault(key, now)
                self.last[key] = now
                message = goes_back(key, before, now)
                if message:
                    self.sink.walked.at = v.position
                    self.sink.add(CONSUMER_OFFSET_BACKWARDS, message, v.position, r.offset)
        except RecordError:
            return  # the record checks report what cannot be read


def goes_back(key: Key, before: Commit, now: Commit) -> str | None:
    if before is None or now is None or now[0] >= before[0]:
        return None
    group, topic, partition = key
    return (f"group {group!r} commits offset {now[0]} for {topic}-{partition} at offset {now[1]}, after committing "
            f"{before[0]} at offset {before[1]}: its consumers read {before[0] - now[0]} record(s) again")


def check_commits(segments) -> list[Finding]:
    """Join the segments' first and last commits per key, in offset order."""
    if all(seg.commits is None for seg in segments):  # (gathered by a deep check of __consumer_offsets alone)
        return []
    sink = Sink()
    last: dict[Key, Commit] = {}
    for seg in segments:
        for key, first in (seg.commits or {}).get("first", {}).items():
            message = goes_back(key, last.get(key), first)
            if message:
                sink.add(CONSUMER_OFFSET_BACKWARDS, message, first[2], first[1], file=seg.file)
        last.update((seg.commits or {}).get("last", {}))
    return sink.done()
