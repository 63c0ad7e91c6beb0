"""Resynchronisation after damage: where, past the end of a segment's valid prefix, the next whole batch
starts. This is how `dump --salvage` rescues records that Kafka's recovery would cut.

It never changes what the walker considers valid: it only proposes a position, and the walker
(`Segment.walk(start=...)`) reads on from there with its usual rules. A position qualifies when the entry
there passes `read_entry` (Kafka's framing) with a good CRC and a sane header: a magic Kafka writes, a
codec that exists for it, v2 counts that fit the offset range, and an offset the segment can hold (within
2^31-1 of its base offset, as Kafka's 32-bit relative offsets require). The offset rule is what makes the
search fast and safe on garbage: the top four bytes of the offset field are known, so candidates are
found with `bytes.find`, and random bytes almost never pass it.
"""
from __future__ import annotations

import re
import struct

from logtool.format.batch import HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD, MIN_ENTRY_LENGTH, BatchView, read_entry
from logtool.format.index import MAX_RELATIVE_OFFSET

_ZERO_CHUNK = 1 << 16
_ZEROS = bytes(_ZERO_CHUNK)
_NON_ZERO = re.compile(rb"[^\x00]")
_LENGTH = struct.Struct(">i")


def next_batch(buf, start: int, end: int, base_offset: int) -> int | None:
    """The first position at or after `start` where a whole, valid batch of this segment starts; None
    when there is none before `end`."""
    lo, hi = base_offset, base_offset + MAX_RELATIVE_OFFSET
    # The offset field is a big-endian int64: every offset in [lo, hi] starts with one of these 4 bytes.
    prefixes = {struct.pack(">I", (lo >> 32) & 0xFFFFFFFF), struct.pack(">I", (hi >> 32) & 0xFFFFFFFF)}
    pos = start
    last = end - (LOG_OVERHEAD + MIN_ENTRY_LENGTH)  # the smallest entry must still fit
    while pos <= last:
        hits = [i for i in (buf.find(p, pos, end) for p in prefixes) if i != -1]
        if not hits:
            return None
        pos = min(hits)
        if pos > last:
            return None
        if buf[pos : pos + LOG_OVERHEAD] == _ZEROS[:LOG_OVERHEAD]:
            # Zero-filled bytes (a preallocated tail): no entry has length 0, so an entry can start at most
            # 11 bytes before the next non-zero byte.
            pos = max(pos + 1, _next_non_zero(buf, pos, end) - (LOG_OVERHEAD - 1))
            continue
        if _plausible(buf, pos, end) and _valid(read_entry(buf, pos, end), lo, hi):
            return pos
        pos += 1
    return None


def _next_non_zero(buf, pos: int, end: int) -> int:
    """The first non-zero byte at or after `pos` (`end` when none): whole zero chunks are compared in C."""
    while pos + _ZERO_CHUNK <= end and buf[pos : pos + _ZERO_CHUNK] == _ZEROS:
        pos += _ZERO_CHUNK
    m = _NON_ZERO.search(buf, pos, end)
    return m.start() if m else end


def _plausible(buf, pos: int, end: int) -> bool:
    """The cheap header checks, before `read_entry` computes a CRC over the whole entry."""
    if pos + HEADER_SIZE_UP_TO_MAGIC > end or buf[pos + 16] > 2:
        return False
    length = _LENGTH.unpack_from(buf, pos + 8)[0]
    return MIN_ENTRY_LENGTH <= length <= end - pos - LOG_OVERHEAD


def _valid(entry, lo: int, hi: int) -> bool:
    if not isinstance(entry, BatchView) or entry.crc_stored != entry.crc_computed:
        return False
    if not lo <= entry.last_offset <= hi:
        return False
    if entry.magic < 2:
        return entry.codec <= 3  # legacy codecs: none, gzip, snappy, lz4
    count, base = entry.count, entry.base_offset
    assert count is not None and base is not None  # a v2 header holds both; only legacy wrappers lack them
    delta = entry.last_offset - base
    return entry.codec <= 4 and 0 <= delta and 0 <= count <= delta + 1 and lo <= base
