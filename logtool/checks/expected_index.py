"""The indexes Kafka's `LogSegment.recover` would build from a segment's valid prefix (FORMAT.md §7.3,
§8, §10, §13.3): a lens over the walker's batches, used to check index files and to rebuild them."""
from __future__ import annotations

from dataclasses import dataclass, field

from logtool.format.batch import BatchView
from logtool.format.index import OFFSET_ENTRY, TIME_ENTRY, TXN_ENTRY, AbortedTxn
from logtool.format.records import RecordError, iter_records, parse_control

DEFAULT_INDEX_INTERVAL_BYTES = 4096
UNKNOWN_OFFSET = -1  # an aborted transaction's first offset that lies before the data on disk


@dataclass(slots=True)
class TxnTracker:
    """Producer transactions across a partition's segments, replayed as recovery replays producer state:
    which transactions are open (and from which offset), and the aborted ones each segment's `.txnindex`
    must list, with the last stable offset at the moment each abort completed."""

    open_txns: dict[int, int] = field(default_factory=dict)  # producer id -> first offset of its open txn
    # False when the walk starts after the log's true beginning (retention deleted older segments): a
    # transaction may then have opened before the first batch we see, so its first offset is unknown.
    history_complete: bool = True

    def feed(self, buf, v: BatchView) -> AbortedTxn | None:
        """Account for one batch; the aborted transaction it completes, if any."""
        if v.magic < 2 or not v.attributes & 0x10 or v.producer_id < 0:
            return None
        if not v.attributes & 0x20:  # transactional data: opens a transaction unless one is open
            self.open_txns.setdefault(v.producer_id, v.base_offset)
            return None
        try:
            first = next(iter_records(buf, v), None)
            marker = parse_control(first) if first is not None else None
        except RecordError:
            marker = None  # the walker already ended the valid prefix at an unreadable marker
        if marker is None:  # an empty control batch: the cleaner removed the whole transaction
            return None
        first_offset = self.open_txns.pop(v.producer_id, None)
        if marker.type_id != 0:
            return None
        if first_offset is None:  # opened before the first batch we saw
            first_offset = UNKNOWN_OFFSET
        # The last stable offset: the first offset of the earliest transaction still open elsewhere.
        lso = min(self.open_txns.values(), default=v.base_offset + 1)
        return AbortedTxn(0, v.producer_id, first_offset, v.base_offset, lso)


@dataclass(slots=True)
class ExpectedIndexes:
    """One segment's rebuilt `.index`, `.timeindex` and `.txnindex` entries, fed batch by batch."""

    base_offset: int
    buf: object
    txns: TxnTracker
    interval: int = DEFAULT_INDEX_INTERVAL_BYTES
    offset_index: bytearray = field(default_factory=bytearray)
    time_index: bytearray = field(default_factory=bytearray)
    aborted: list[AbortedTxn] = field(default_factory=list)
    _last_indexed_position: int = 0  # the first batch (position 0) is never indexed
    _max_ts: int = -1
    _offset_of_max_ts: int = -1
    _last_time_entry_ts: int = -1  # an empty time index reports (-1, base) as its last entry

    def feed(self, v: BatchView) -> None:
        if v.max_timestamp > self._max_ts:
            self._max_ts, self._offset_of_max_ts = v.max_timestamp, v.last_offset
        # Strictly greater: a batch exactly `interval` bytes after the last indexed one is not indexed.
        if v.position - self._last_indexed_position > self.interval:
            self.offset_index += OFFSET_ENTRY.pack(v.last_offset - self.base_offset, v.position)
            self._maybe_time_entry()
            self._last_indexed_position = v.position
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
