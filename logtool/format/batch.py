"""Batch framing and header views for magic 0, 1 and 2 (FORMAT.md §1-§3).

`read_entry` is the only function that decides where a log entry starts and ends. It mirrors Kafka's
`FileLogInputStream.nextBatch` plus the checks `LogSegment.recover` applies (`ensureValid`): what it
accepts, Kafka's recovery keeps; where it returns a `FrameStop`, Kafka's recovery truncates.
It never raises and never copies segment bytes: every read is `struct.unpack_from` on the buffer.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import NamedTuple

from logtool.format import Bytes
from logtool.format.crc import crc32, crc32c
from logtool.findings import BAD_LENGTH, BATCH_TOO_SMALL, GARBAGE, IMPOSSIBLE_LENGTH, SHORT_TAIL, TORN_BATCH, ZERO_TAIL

LOG_OVERHEAD = 12  # offset int64 + length int32
_OFFSET_LENGTH = struct.Struct(">qi")
_LAST_DELTA = struct.Struct(">i")
HEADER_SIZE_UP_TO_MAGIC = 17
MIN_ENTRY_LENGTH = 14  # LegacyRecord.RECORD_OVERHEAD_V0: smallest `length` the iterator accepts
V2_HEADER_SIZE = 61  # DefaultRecordBatch.RECORD_BATCH_OVERHEAD
V1_HEADER_LENGTH = 22  # crc4 magic1 attr1 ts8 keylen4 vallen4
MAX_SEGMENT_BYTES = 2**31 - 1  # a segment is smaller than 2 GiB, so no entry can end beyond this

CODEC_NAMES = ("none", "gzip", "snappy", "lz4", "zstd")

_ENTRY_HEAD = struct.Struct(">qiiB")  # offset, length, leader epoch or legacy crc, magic
# crc, attributes, lastOffsetDelta, baseTs, maxTs, pid, epoch, seq, count (signed, as Kafka reads it)
_V2_REST = struct.Struct(">Ihiqqqhii")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


def codec_name(codec_id: int) -> str:
    return CODEC_NAMES[codec_id] if codec_id < len(CODEC_NAMES) else f"unknown({codec_id})"


class BatchView(NamedTuple):
    """One log entry as a header view: a v2 record batch or a v0/v1 (possibly wrapper) message.

    For legacy entries `offset` in the file is the *last* offset covered; `base_offset` is the first inner
    offset (decoded from a compressed wrapper by the walker) and is None only when that could not be decoded.

    A NamedTuple rather than a frozen dataclass: it is just as immutable, and the walker builds one per
    batch, where a frozen dataclass's constructor costs several times as much (the walk's cost per batch:
    bench/results/kernel.md, the pure path's shallow verify).
    """

    position: int
    size: int
    magic: int
    base_offset: int | None
    last_offset: int
    # v2 recordsCount; None for legacy wrappers (Kafka reports none either). It hides tuple.count, which no
    # caller wants of a view: the name is Kafka's and every reader of views uses it.
    count: int | None  # type: ignore[assignment]
    attributes: int
    first_timestamp: int  # v2 baseTimestamp; legacy: the message timestamp (-1 for v0)
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    partition_leader_epoch: int
    crc_stored: int
    crc_computed: int

    @property
    def is_legacy(self) -> bool:
        return self.magic < 2

    @property
    def first_offset(self) -> int:
        """The first offset the entry holds as far as it is known: its base offset, or its last where a
        legacy wrapper could not be opened (its inner offsets unknown)."""
        return self.base_offset if self.base_offset is not None else self.last_offset

    @property
    def is_valid(self) -> bool:
        return self.crc_stored == self.crc_computed

    @property
    def codec(self) -> int:
        return self.attributes & 0x07

    @property
    def codec_name(self) -> str:
        return codec_name(self.codec)

    @property
    def timestamp_type(self) -> str:
        if self.magic == 0:
            return "NoTimestampType"
        return "LogAppendTime" if self.attributes & 0x08 else "CreateTime"

    @property
    def is_transactional(self) -> bool:
        return not self.is_legacy and bool(self.attributes & 0x10)

    @property
    def is_control(self) -> bool:
        return not self.is_legacy and bool(self.attributes & 0x20)

    @property
    def has_delete_horizon(self) -> bool:
        return not self.is_legacy and bool(self.attributes & 0x40)

    @property
    def first_record_timestamp(self) -> int:
        """When the batch's first record was written: its base timestamp, or its max timestamp where the
        cleaner put a delete horizon in the base timestamp's place."""
        return self.max_timestamp if self.has_delete_horizon else self.first_timestamp

    @property
    def last_sequence(self) -> int:
        # The last offset delta; a legacy wrapper that cannot be opened has no base offset (and no sequence).
        delta = self.last_offset - self.base_offset if self.base_offset is not None else 0
        return sequence_at(self.base_sequence, delta)


def sequence_at(base_sequence: int, delta: int) -> int:
    """Producer sequence `delta` records after `base_sequence`, wrapping at int32 max as Kafka does."""
    if base_sequence < 0:
        return -1
    if base_sequence > 2**31 - 1 - delta:
        return delta - (2**31 - 1 - base_sequence) - 1
    return base_sequence + delta


def kafka_iterator_step(buf: Bytes, pos: int, end: int) -> tuple[int, int] | str | None:
    """What Kafka's FileLogInputStream (the iterator kafka-dump-log reads with: framing only, no CRC) makes
    of the bytes at `pos`, the file or slice ending at `end`: (next position, the batch's last offset);
    None where it ends quietly (too few bytes for a header, or a batch longer than what is left); or the
    message of the exception it throws (a length below the minimum)."""
    if pos >= end - HEADER_SIZE_UP_TO_MAGIC:
        return None
    offset, length = _OFFSET_LENGTH.unpack_from(buf, pos)
    if length < MIN_ENTRY_LENGTH:
        return f"Found record size {length} smaller than minimum record overhead ({MIN_ENTRY_LENGTH})"
    if pos > end - (length + LOG_OVERHEAD):
        return None
    if buf[pos + 16] >= 2:
        return pos + LOG_OVERHEAD + length, offset + _LAST_DELTA.unpack_from(buf, pos + 23)[0]
    return pos + LOG_OVERHEAD + length, offset  # a legacy entry's offset is its last


@dataclass(slots=True, frozen=True)
class FrameStop:
    """Why the valid prefix ends at `position`: `reason` is a finding name of the catalog."""

    position: int
    reason: str
    detail: str


def _all_zero(buf: Bytes, start: int, end: int) -> bool:
    # Compare in chunks so a huge zero tail is checked without one huge allocation.
    chunk = 1 << 20
    zeros = bytes(min(chunk, max(end - start, 0)))
    pos = start
    while pos < end:
        n = min(chunk, end - pos)
        if buf[pos : pos + n] != zeros[:n]:
            return False
        pos += n
    return True


def read_entry(buf: Bytes, pos: int, end: int) -> BatchView | FrameStop | None:
    """The entry at `pos`, the reason the valid prefix stops there, or None at a clean end of file."""
    remaining = end - pos
    if remaining <= 0:
        return None
    if remaining <= HEADER_SIZE_UP_TO_MAGIC:
        # Kafka's iterator stops silently here; recovery then truncates these bytes.
        if _all_zero(buf, pos, end):
            return FrameStop(pos, ZERO_TAIL.name, f"{remaining} zero bytes after the last batch")
        return FrameStop(pos, SHORT_TAIL.name, f"{remaining} bytes after the last batch, too few for a batch header")
    offset, length, word12, magic = _ENTRY_HEAD.unpack_from(buf, pos)
    if magic > 127:
        magic -= 256
    if length < MIN_ENTRY_LENGTH:
        if _all_zero(buf, pos, end):
            return FrameStop(pos, ZERO_TAIL.name, f"{remaining} zero bytes after the last batch (preallocated or "
                                                  "zero-filled)")
        return FrameStop(pos, BAD_LENGTH.name, f"record size {length} is smaller than the minimum record overhead (14)")
    entry_end = pos + LOG_OVERHEAD + length
    if entry_end > end:
        if entry_end > MAX_SEGMENT_BYTES:
            return FrameStop(pos, IMPOSSIBLE_LENGTH.name,
                             f"length field {length} would end the batch at byte {entry_end}, beyond any segment's 2 "
                             "GiB limit")
        if magic not in (0, 1, 2):
            return FrameStop(pos, GARBAGE.name, f"{remaining} bytes that do not start a batch (magic {magic}, length "
                                                f"{length})")
        return FrameStop(pos, TORN_BATCH.name,
                         f"batch declares {LOG_OVERHEAD + length} bytes but only {remaining} remain in the file")
    if magic >= 2:
        return _read_v2(buf, pos, offset, length, word12, magic, entry_end)
    return _read_legacy(buf, pos, offset, length, word12, magic, entry_end)


def _read_v2(buf: Bytes, pos: int, base_offset: int, length: int, leader_epoch: int, magic: int,
             entry_end: int) -> BatchView | FrameStop:
    size = LOG_OVERHEAD + length
    if size < V2_HEADER_SIZE:
        return FrameStop(pos, BATCH_TOO_SMALL.name,
                         f"record batch of {size} bytes is smaller than the minimum batch overhead (61)")
    crc, attributes, last_delta, base_ts, max_ts, pid, epoch, seq, count = _V2_REST.unpack_from(buf, pos + 17)
    return BatchView(
        position=pos, size=size, magic=magic, base_offset=base_offset, last_offset=base_offset + last_delta,
        count=count, attributes=attributes & 0xFF, first_timestamp=base_ts, max_timestamp=max_ts,
        producer_id=pid, producer_epoch=epoch, base_sequence=seq, partition_leader_epoch=leader_epoch,
        crc_stored=crc, crc_computed=crc32c(memoryview(buf)[pos + 21 : entry_end]),
    )


def _read_legacy(buf: Bytes, pos: int, offset: int, length: int, crc_word: int, magic: int,
                 entry_end: int) -> BatchView:
    attributes = buf[pos + 17]
    timestamp = -1
    if magic == 1 and length >= V1_HEADER_LENGTH:
        timestamp = _I64.unpack_from(buf, pos + 18)[0]
    return BatchView(
        position=pos, size=LOG_OVERHEAD + length, magic=magic,
        base_offset=offset if attributes & 0x07 == 0 else None, last_offset=offset,
        count=None if attributes & 0x07 else 1, attributes=attributes,
        first_timestamp=timestamp, max_timestamp=timestamp,
        producer_id=-1, producer_epoch=-1, base_sequence=-1, partition_leader_epoch=-1,
        crc_stored=crc_word & 0xFFFFFFFF, crc_computed=crc32(memoryview(buf)[pos + 16 : entry_end]),
    )


def legacy_value(buf: Bytes, view: BatchView) -> memoryview | None:
    """The value bytes of a legacy message (a wrapper's compressed inner set), None when null or malformed."""
    # crc4 + magic1 + attributes1, then the v1 timestamp8
    key_len_at = view.position + LOG_OVERHEAD + 6 + (8 if view.magic == 1 else 0)
    end = view.position + view.size
    if key_len_at + 4 > end:
        return None
    key_len = _I32.unpack_from(buf, key_len_at)[0]
    val_len_at = key_len_at + 4 + max(key_len, 0)
    if val_len_at + 4 > end:
        return None
    val_len = _I32.unpack_from(buf, val_len_at)[0]
    if val_len < 0 or val_len_at + 4 + val_len > end:
        return None
    return memoryview(buf)[val_len_at + 4 : val_len_at + 4 + val_len]
