"""A partition of many small segments for the truncate bench: N segments of one v2 batch each, with the
`.index` and `.timeindex` a broker leaves, written in seconds even for 50,000 segments.

The batch is built once by the fixture generator (kafka-python's builder, as the project's rule on test data
asks); each copy only gets its base offset and timestamps re-stamped and its CRC-32C recomputed, instead of
a builder run per segment. The generator's `write_partition` then rolls a segment per batch and writes
their indexes by `LogSegment.recover`'s rules, and the partition's `partition.metadata` and
`leader-epoch-checkpoint`.
"""
from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

from fixtures.generator import BatchSpec, LogEntry, build_batches, flip_bit, segment_file, write_partition
from logtool.format.crc import crc32c

RECORDS_PER_BATCH = 10
SEGMENT_SPAN_MS = 60_000  # each segment a minute after the one before, so the time indexes advance

# Fields of a v2 log entry (Kafka's DefaultRecordBatch header): the CRC covers attributes to the end, so the
# base offset is outside it and the timestamps inside it.
_BASE_OFFSET = struct.Struct(">q")
_CRC = struct.Struct(">I")
_TIMESTAMPS = struct.Struct(">qq")  # firstTimestamp, maxTimestamp
_CRC_AT, _CRC_FROM, _TIMESTAMPS_AT = 17, 21, 27


def template() -> LogEntry:
    """The one batch every segment holds a copy of: RECORDS_PER_BATCH records of 50-150 byte values."""
    return build_batches(BatchSpec(batches=1, records_per_batch=RECORDS_PER_BATCH, seed=20))[0]


def copies(batch: LogEntry, n: int) -> Iterator[LogEntry]:
    """`n` copies of `batch` with contiguous offsets, each SEGMENT_SPAN_MS later than the one before."""
    data = bytearray(batch.data)
    first_ts, max_ts = _TIMESTAMPS.unpack_from(data, _TIMESTAMPS_AT)
    span = batch.next_offset - batch.first_offset
    for i in range(n):
        base = i * span
        _BASE_OFFSET.pack_into(data, 0, base)
        # Record timestamps are deltas from firstTimestamp: moving both header fields moves every record.
        _TIMESTAMPS.pack_into(data, _TIMESTAMPS_AT, first_ts + i * SEGMENT_SPAN_MS, max_ts + i * SEGMENT_SPAN_MS)
        _CRC.pack_into(data, _CRC_AT, crc32c(memoryview(data)[_CRC_FROM:]))
        yield LogEntry(bytes(data), base)


def write_segments(log_dir: Path, n: int, topic: str = "bench") -> Path:
    """`<log_dir>/<topic>-0` holding `n` one-batch segments; returns the partition dir."""
    batch = template()
    # A segment size of exactly one batch makes the generator roll before every next batch.
    written = write_partition(log_dir, topic, 0, copies(batch, n), segment_bytes=len(batch.data))
    assert len(written.segment_base_offsets) == n
    return written.path


def damage(part: Path, segment: int) -> Path:
    """Flip a bit in the middle of the `segment`-th segment's batch (inside its records, so the CRC fails
    and nothing else does), as a bad sector would. Returns that segment's .log."""
    log = segment_file(part, segment * RECORDS_PER_BATCH, ".log")
    flip_bit(log, log.stat().st_size // 2)
    return log


def disk_use(path: Path) -> tuple[int, int]:
    """(bytes of the files, bytes the file system allocated for them) in a directory."""
    stats = [f.stat() for f in path.iterdir()]
    return sum(s.st_size for s in stats), sum(s.st_blocks * 512 for s in stats)
