"""`.index`, `.timeindex` and `.txnindex` entries (FORMAT.md §7, §8, §10) and Kafka's sanity checks."""
from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from logtool.format import Bytes

def entries(n: int) -> str:
    """'1 entry', 'N entries': how messages count index entries."""
    return f"{n} entry" if n == 1 else f"{n} entries"


MAX_RELATIVE_OFFSET = 2**31 - 1  # index entries and record deltas hold offsets relative to the base as int32

OFFSET_ENTRY = struct.Struct(">ii")  # relative offset, position
TIME_ENTRY = struct.Struct(">qi")  # timestamp, relative offset
TXN_ENTRY = struct.Struct(">hqqqq")  # version, producer id, first offset, last offset, last stable offset


@dataclass(slots=True, frozen=True)
class OffsetEntry:
    offset: int  # absolute
    position: int


@dataclass(slots=True, frozen=True)
class TimeEntry:
    timestamp: int
    offset: int  # absolute


@dataclass(slots=True, frozen=True)
class AbortedTxn:
    version: int
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


def offset_entries(buf: Bytes, base_offset: int) -> Iterator[OffsetEntry]:
    """Every whole 8-byte entry, as Kafka opens the file (entries = floor(length / 8))."""
    for i in range(len(buf) // OFFSET_ENTRY.size):
        rel, pos = OFFSET_ENTRY.unpack_from(buf, i * OFFSET_ENTRY.size)
        yield OffsetEntry(base_offset + rel, pos)


def time_entries(buf: Bytes, base_offset: int) -> Iterator[TimeEntry]:
    for i in range(len(buf) // TIME_ENTRY.size):
        ts, rel = TIME_ENTRY.unpack_from(buf, i * TIME_ENTRY.size)
        yield TimeEntry(ts, base_offset + rel)


def aborted_txns(buf: Bytes) -> Iterator[AbortedTxn]:
    """Whole 34-byte entries; a trailing partial entry is ignored, as Kafka ignores it."""
    for i in range(len(buf) // TXN_ENTRY.size):
        version, pid, first, last, lso = TXN_ENTRY.unpack_from(buf, i * TXN_ENTRY.size)
        # Java reads the version from the first byte only (the high byte of the int16).
        yield AbortedTxn(version >> 8, pid, first, last, lso)


def offset_index_sanity(buf: Bytes, base_offset: int) -> str | None:
    """Kafka's `OffsetIndex.sanityCheck` verdict: None when it passes, else its complaint."""
    length = len(buf)
    if length % OFFSET_ENTRY.size:
        return f"found {length} bytes which is neither positive nor a multiple of 8"
    if length:
        rel = OFFSET_ENTRY.unpack_from(buf, length - OFFSET_ENTRY.size)[0]
        if base_offset + rel < base_offset:
            return (f"has non-zero size but the last offset is {base_offset + rel} which is less than the base offset "
                    f"{base_offset}")
    return None


def time_index_sanity(buf: Bytes, base_offset: int) -> str | None:
    """Kafka's `TimeIndex.sanityCheck` verdict: None when it passes, else its complaint."""
    length = len(buf)
    if length >= TIME_ENTRY.size:
        first_ts = TIME_ENTRY.unpack_from(buf, 0)[0]
        last_ts, last_rel = TIME_ENTRY.unpack_from(buf, (length // TIME_ENTRY.size - 1) * TIME_ENTRY.size)
        if last_ts < first_ts:
            return (f"has non-zero size but the last timestamp is {last_ts} which is less than the first timestamp "
                    f"{first_ts}")
        if base_offset + last_rel < base_offset:
            return (f"has non-zero size but the last offset is {base_offset + last_rel} which is less than the first "
                    f"offset {base_offset}")
    if length % TIME_ENTRY.size:
        return f"found {length} bytes which is neither positive nor a multiple of 12"
    return None


def zero_tail_start(buf: Bytes, entry_size: int) -> int | None:
    """Entry number where a preallocated all-zero tail begins (entry 0 may legitimately be zero), or None."""
    n = len(buf) // entry_size
    if n < 2:
        return None
    zero = bytes(entry_size)
    if buf[(n - 1) * entry_size : n * entry_size] != zero:
        return None
    lo, hi = 1, n - 1  # bisect for the first zero entry after entry 0; zero slots form a suffix
    while lo < hi:
        mid = (lo + hi) // 2
        if buf[mid * entry_size : (mid + 1) * entry_size] == zero:
            hi = mid
        else:
            lo = mid + 1
    return lo
