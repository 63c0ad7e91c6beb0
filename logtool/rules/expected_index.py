"""The indexes Kafka's `LogSegment.recover` would build from a segment's valid prefix (FORMAT.md §7.3,
§8, §10, §13.3): a lens over the walker's batches, used to check index files and to rebuild them."""
from __future__ import annotations

from dataclasses import dataclass, field

from logtool.format import Bytes
from logtool.format.batch import BatchView
from logtool.format.index import MAX_RELATIVE_OFFSET, OFFSET_ENTRY, TIME_ENTRY, TXN_ENTRY, AbortedTxn
from logtool.rules.transactions import UNKNOWN_OFFSET, TxnTracker

DEFAULT_INDEX_INTERVAL_BYTES = 4096


@dataclass(slots=True)
class ExpectedIndexes:
    """One segment's rebuilt `.index`, `.timeindex` and `.txnindex` entries, fed batch by batch."""

    base_offset: int
    buf: Bytes
    txns: TxnTracker
    interval: int = DEFAULT_INDEX_INTERVAL_BYTES
    origin: int = 0  # where the segment starts in `buf` (a piece of a file being split off as a segment)
    offset_index: bytearray = field(default_factory=bytearray)
    time_index: bytearray = field(default_factory=bytearray)
    aborted: list[AbortedTxn] = field(default_factory=list)
    _last_indexed_position: int = 0  # the first batch (position 0) is never indexed
    _max_ts: int = -1
    _offset_of_max_ts: int = -1
    _last_time_entry_ts: int = -1  # an empty time index reports (-1, base) as its last entry
    overflow: bool = False  # an offset lies outside the 32 bits relative to the base: no index can hold it

    def feed(self, v: BatchView) -> None:
        if not 0 <= v.last_offset - self.base_offset <= MAX_RELATIVE_OFFSET:
            self.overflow = True
            return
        if v.max_timestamp > self._max_ts:
            self._max_ts, self._offset_of_max_ts = v.max_timestamp, v.last_offset
        # Strictly greater: a batch exactly `interval` bytes after the last indexed one is not indexed.
        position = v.position - self.origin
        if position - self._last_indexed_position > self.interval:
            self.offset_index += OFFSET_ENTRY.pack(v.last_offset - self.base_offset, position)
            self._maybe_time_entry()
            self._last_indexed_position = position
        aborted = self.txns.feed(self.buf, v)
        if aborted is not None:
            self.aborted.append(aborted)

    def finish(self) -> None:
        """The closing time-index entry recovery adds (only if it raises the last timestamp)."""
        self._maybe_time_entry()

    def _maybe_time_entry(self) -> None:
        if self._max_ts > self._last_time_entry_ts:
            self.time_index += TIME_ENTRY.pack(self._max_ts, self._offset_of_max_ts - self.base_offset)
            self._last_time_entry_ts = self._max_ts

    @property
    def txn_index_known(self) -> bool:
        """Whether every aborted transaction of this segment is fully known (see TxnTracker)."""
        return self.txns.history_complete and all(t.first_offset != UNKNOWN_OFFSET for t in self.aborted)

    @property
    def txn_index(self) -> bytes:
        # Version 0 is written as an int16, of which Java reads only the high byte.
        return b"".join(TXN_ENTRY.pack(t.version << 8, t.producer_id, t.first_offset, t.last_offset,
                                       t.last_stable_offset) for t in self.aborted)
