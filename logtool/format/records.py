"""Records inside a batch (FORMAT.md §2.6-§2.7, §3): v2 records, control records, legacy inner messages.

Parsers raise `RecordError` at the first malformed byte, with Kafka's wording where Kafka has one.
"""
from __future__ import annotations

import struct
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

from logtool.format import Bytes
from logtool.format.batch import LOG_OVERHEAD, V2_HEADER_SIZE, BatchView, legacy_value, sequence_at
from logtool.format.crc import crc32
from logtool.format.varint import VarintError, read_varint, read_varlong
from logtool.findings import (
    CONTROL_RECORD_INVALID, LEGACY_WRAPPER_UNREADABLE, RECORDS_UNREADABLE, RECORD_COUNT_MISMATCH)

CONTROL_TYPES = {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER", 4: "SNAPSHOT_FOOTER",
                 5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"}

_CONTROL_KEY = struct.Struct(">hh")
_TXN_MARKER = struct.Struct(">hi")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class RecordError(Exception):
    """Records of a batch cannot be read the way Kafka would read them. `kind` names the finding of the
    catalog that reports it; `iter_records` fills it in from the batch where the raiser could not know.
    `fatal`: where Kafka throws something other than an invalid-record error (a codec that is not one, a
    stream that does not decompress: KafkaException), which its recovery does not catch."""

    def __init__(self, message: str, kind: str | None = None, fatal: bool = False) -> None:
        super().__init__(message)
        self.kind = kind
        self.fatal = fatal


def _unreadable_kind(view: BatchView) -> str:
    if view.is_control:
        return CONTROL_RECORD_INVALID.name
    return LEGACY_WRAPPER_UNREADABLE.name if view.is_legacy else RECORDS_UNREADABLE.name


class Header(NamedTuple):
    key: bytes
    value: bytes | None


class Record(NamedTuple):
    """One record. A NamedTuple, like BatchView, because deep reads build one per record."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    sequence: int = -1
    legacy_crc: int | None = None  # legacy messages carry their own CRC
    legacy_valid: bool | None = None


@dataclass(slots=True, frozen=True)
class ControlRecord:
    type_id: int
    version: int
    coordinator_epoch: int | None  # only for ABORT/COMMIT

    @property
    def type_name(self) -> str:
        return CONTROL_TYPES.get(self.type_id, "UNKNOWN")


def batch_payload(buf: Bytes, view: BatchView) -> bytes | memoryview:
    """The uncompressed record bytes of a v2 batch (or a legacy wrapper's inner message set)."""
    if view.is_legacy:
        value = legacy_value(buf, view)
        if value is None:
            raise RecordError(f"Found invalid compressed record set with null value (magic = {view.magic})")
        data = value
    else:
        data = memoryview(buf)[view.position + V2_HEADER_SIZE : view.position + view.size]
    if view.codec == 0:
        return data
    # Imported at the first compressed batch: the codecs' libraries are a share of every command's start, and
    # a log of uncompressed batches needs none of them.
    from logtool.format.codecs import CodecError, decompress
    try:
        return decompress(view.codec, data, view.magic)
    except CodecError as e:
        raise RecordError(f"Failed to decompress record stream: {e}", fatal=True) from None


def iter_records(buf: Bytes, view: BatchView) -> Iterator[Record]:
    """Every record of a whole, valid batch, with absolute offsets and Kafka's reported timestamps."""
    try:
        if view.is_legacy:
            yield from _iter_legacy(buf, view)
        else:
            yield from _iter_v2(batch_payload(buf, view), view)
    except RecordError as e:
        _name(e, view)
        raise


def payload_records(payload: Bytes, view: BatchView) -> Iterator[Record]:
    """The records of a v2 batch from its payload as `batch_payload` gives it (decompressed)."""
    try:
        yield from _iter_v2(payload, view)
    except RecordError as e:
        _name(e, view)
        raise


def _name(e: RecordError, view: BatchView) -> None:
    """Name the finding of an error whose raiser could not know the batch."""
    if e.kind is None:
        e.kind = _unreadable_kind(view)


# The one function over the complexity bound: the per-record loop, its varints decoded inline, as a
# call per field would cost more than the decoding.
def _iter_v2(data: Bytes, view: BatchView) -> Iterator[Record]:  # noqa: C901
    """The hot loop of deep reads. Varints of one byte (the common case for most fields) and of two bytes
    (record lengths, value lengths, time and offset deltas of typical records) are decoded inline; longer
    ones go through `read_varint`, whose call costs more than the decoding (bench/results/kernel.md, the
    pure path's deep verify)."""
    count = view.count or 0
    if count < 0:
        raise RecordError(f"Found invalid record count {count} in magic v2 batch")
    data = bytes(data)  # one copy per batch: slicing bytes then yields keys and values directly
    base = view.base_offset
    assert base is not None, view  # a v2 header always holds its base offset; only legacy wrappers lack one
    base_ts = view.first_timestamp
    append_time = view.max_timestamp if view.attributes & 0x08 else None
    base_seq = view.base_sequence
    end = len(data)
    pos = 0
    try:
        for _ in range(count):
            if pos >= end:
                raise RecordError("Incorrect declared batch size, premature EOF reached", RECORD_COUNT_MISMATCH.name)
            b = data[pos]
            if b < 0x80:
                length, pos = (b >> 1) ^ -(b & 1), pos + 1
            elif pos + 1 < end and data[pos + 1] < 0x80:
                u = (b & 0x7F) | data[pos + 1] << 7
                length, pos = (u >> 1) ^ -(u & 1), pos + 2
            else:
                length, pos = read_varint(data, pos, end)
            body_end = pos + length
            if length < 0 or body_end > end:
                raise RecordError(f"Invalid record size: expected {length} bytes in record payload, "
                                  f"but instead the buffer has only {end - pos} remaining bytes.")
            pos += 1  # attributes, unused
            b = data[pos] if pos < body_end else 0x80
            if b < 0x80:
                ts_delta, pos = (b >> 1) ^ -(b & 1), pos + 1
            elif pos + 1 < body_end and data[pos + 1] < 0x80:
                u = (b & 0x7F) | data[pos + 1] << 7
                ts_delta, pos = (u >> 1) ^ -(u & 1), pos + 2
            else:
                ts_delta, pos = read_varlong(data, pos, body_end)
            b = data[pos] if pos < body_end else 0x80
            if b < 0x80:
                offset_delta, pos = (b >> 1) ^ -(b & 1), pos + 1
            elif pos + 1 < body_end and data[pos + 1] < 0x80:  # records 64 and later of a batch
                u = (b & 0x7F) | data[pos + 1] << 7
                offset_delta, pos = (u >> 1) ^ -(u & 1), pos + 2
            else:
                offset_delta, pos = read_varint(data, pos, body_end)
            key, pos = _read_bytes(data, pos, body_end)
            value, pos = _read_bytes(data, pos, body_end)
            b = data[pos] if pos < body_end else 0x80
            if b < 0x80:
                n_headers, pos = (b >> 1) ^ -(b & 1), pos + 1
            else:
                n_headers, pos = read_varint(data, pos, body_end)
            if n_headers:
                headers, pos = _read_headers(data, pos, body_end, n_headers)
            else:
                headers = ()
            if pos != body_end:
                raise RecordError(f"Invalid record size: expected to read {length} bytes in record payload, "
                                  f"but instead read {length - (body_end - pos)}")
            yield Record(base + offset_delta, append_time if append_time is not None else base_ts + ts_delta,
                         key, value, headers, -1 if base_seq < 0 else sequence_at(base_seq, offset_delta))
    except (VarintError, IndexError):
        raise RecordError("Found invalid record structure") from None
    if pos < end:
        raise RecordError("Incorrect declared batch size, records still remaining in file", RECORD_COUNT_MISMATCH.name)


def _read_headers(data: Bytes, pos: int, end: int, n: int) -> tuple[tuple[Header, ...], int]:
    if n < 0:
        raise RecordError(f"Found invalid number of record headers {n}")
    if n > end - pos:
        raise RecordError(f"Found invalid number of record headers. {n} is larger than the remaining size of the "
                          "buffer")
    headers = []
    for _ in range(n):
        key, pos = _read_bytes(data, pos, end)
        if key is None:
            raise RecordError("Invalid negative header key size")
        value, pos = _read_bytes(data, pos, end)
        headers.append(Header(key, value))
    return tuple(headers), pos


def _read_bytes(data: Bytes, pos: int, end: int) -> tuple[bytes | None, int]:
    b = data[pos] if pos < end else 0x80
    if b < 0x80:
        n, pos = (b >> 1) ^ -(b & 1), pos + 1
    elif pos + 1 < end and data[pos + 1] < 0x80:  # values of 64 to 8191 bytes
        u = (b & 0x7F) | data[pos + 1] << 7
        n, pos = (u >> 1) ^ -(u & 1), pos + 2
    else:
        n, pos = read_varint(data, pos, end)
    if n < 0:
        return None, pos
    if pos + n > end:
        raise RecordError("Found invalid record structure")
    return bytes(data[pos : pos + n]), pos + n


def parse_control(record: Record) -> ControlRecord:
    """The control key (and, for transaction markers, value) of a record in a control batch."""
    key = record.key or b""
    if len(key) < 4:
        raise RecordError("Invalid value size found for end control record key. Must have at least 4 bytes, but found "
                          f"only {len(key)}", CONTROL_RECORD_INVALID.name)
    version, type_id = _CONTROL_KEY.unpack_from(key)
    if version < 0:
        raise RecordError(f"Invalid version found for control record: {version}. May indicate data "
                          "corruption", CONTROL_RECORD_INVALID.name)
    coordinator_epoch = None
    if type_id in (0, 1):
        value = record.value or b""
        if len(value) < 6:
            raise RecordError("Invalid value size found for end transaction marker. Must have at least 6 bytes, but "
                              f"found only {len(value)}", CONTROL_RECORD_INVALID.name)
        _v, coordinator_epoch = _TXN_MARKER.unpack_from(value)
    return ControlRecord(type_id, version, coordinator_epoch)


def first_control(buf: Bytes, view: BatchView) -> ControlRecord | None:
    """The control record a control batch opens with (a transaction marker's is the batch's only one); None
    for a batch the cleaner emptied. Raises RecordError as `iter_records` and `parse_control` do."""
    first = next(iter_records(buf, view), None)
    return parse_control(first) if first is not None else None


def _iter_legacy(buf: Bytes, view: BatchView) -> Iterator[Record]:
    if view.codec == 0:
        yield _legacy_message(buf, view.position, view.size, view.last_offset, None)
        return
    inner = batch_payload(buf, view)
    base = _legacy_base(inner, view)
    wrapper_time = view.max_timestamp if view.magic == 1 and view.attributes & 0x08 else None
    for offset, pos, size in _legacy_entries(inner):
        rec = _legacy_message(inner, pos, size, base + offset, wrapper_time)
        if _legacy_codec(inner, pos):
            raise RecordError("Inner messages must not be compressed")
        yield rec


def _legacy_base(inner: Bytes, view: BatchView) -> int:
    """What inner offsets are relative to: 0 for magic 0 (absolute), and for magic 1 the wrapper's offset less
    the last inner one. One pass over the inner messages that keeps none of them: a wrapper can inflate to
    millions of tiny messages."""
    last = deque(_legacy_entries(inner), maxlen=1)
    if not last:
        raise RecordError("Found invalid compressed record set with no inner records")
    last_relative = last[0][0]
    if view.magic != 1:
        return 0
    if view.last_offset != 0 and view.last_offset < last_relative:
        raise RecordError("Found invalid wrapper offset in compressed v1 message set, wrapper offset "
                          f"'{view.last_offset}' "
                          f"is less than the last inner message offset '{last_relative}' and it is not zero.")
    return view.last_offset - last_relative if view.last_offset else 0


def first_legacy_offset(buf: Bytes, view: BatchView) -> int:
    """First inner offset of a compressed legacy wrapper (what Kafka reports as its base offset)."""
    return next(iter(_iter_legacy(buf, view))).offset


def _legacy_entries(data: Bytes) -> Iterator[tuple[int, int, int]]:
    pos, end = 0, len(data)
    while pos < end:
        if end - pos < LOG_OVERHEAD:
            raise RecordError("truncated inner message header")
        offset, length = _I64.unpack_from(data, pos)[0], _I32.unpack_from(data, pos + 8)[0]
        if length < 14 or pos + LOG_OVERHEAD + length > end:
            raise RecordError(f"inner message of size {length} does not fit the wrapper")
        yield offset, pos, LOG_OVERHEAD + length
        pos += LOG_OVERHEAD + length


def _legacy_codec(data: Bytes, pos: int) -> int:
    return data[pos + 17] & 0x07


def _legacy_message(data: Bytes, pos: int, size: int, offset: int, wrapper_time: int | None) -> Record:
    magic = data[pos + 16]
    crc_stored = _I32.unpack_from(data, pos + 12)[0] & 0xFFFFFFFF
    end = pos + size
    at = pos + 18
    timestamp = -1
    if magic == 1:
        if at + 8 > end:
            raise RecordError("legacy v1 message too short for its timestamp")
        timestamp = _I64.unpack_from(data, at)[0]
        at += 8
    if wrapper_time is not None:
        timestamp = wrapper_time
    key, at = _legacy_bytes(data, at, end)
    value, at = _legacy_bytes(data, at, end)
    return Record(offset=offset, timestamp=timestamp, key=key, value=value,
                  legacy_crc=crc_stored, legacy_valid=crc_stored == crc32(memoryview(data)[pos + 16 : end]))


def _legacy_bytes(data: Bytes, at: int, end: int) -> tuple[bytes | None, int]:
    if at + 4 > end:
        raise RecordError("legacy message ends inside a length field")
    n = _I32.unpack_from(data, at)[0]
    at += 4
    if n < 0:
        return None, at
    if at + n > end:
        raise RecordError(f"legacy message field of {n} bytes runs past the message")
    return bytes(data[at : at + n]), at + n
