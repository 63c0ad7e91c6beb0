"""Producer transactions replayed across a partition's segments, as Kafka's recovery replays producer
state (FORMAT.md §10, §13.3): which transactions are open, and the aborts each `.txnindex` must list."""
from __future__ import annotations

from dataclasses import dataclass, field

from logtool.format import Bytes
from logtool.format.batch import BatchView
from logtool.format.index import AbortedTxn
from logtool.format.records import RecordError, first_control

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
    ended: set[int] = field(default_factory=set)  # producers whose end marker this walk has seen

    def feed(self, buf: Bytes, v: BatchView) -> AbortedTxn | None:
        """Account for one batch; the aborted transaction it completes, if any."""
        if not v.is_transactional or v.producer_id < 0:
            return None
        base = v.base_offset
        assert base is not None  # a v2 header always holds it; only legacy wrappers lack one
        if not v.is_control:  # transactional data: opens a transaction unless one is open
            if self.history_complete or v.producer_id in self.ended:
                self.open_txns.setdefault(v.producer_id, base)
            else:
                # Without the history, the first batch seen may continue a transaction opened before the walk
                # began (a split audit's later piece, a log retention shortened): its first offset is unknown.
                self.open_txns.setdefault(v.producer_id, UNKNOWN_OFFSET)
            return None
        try:
            marker = first_control(buf, v)
        except RecordError:
            marker = None  # the walker already ended the valid prefix at an unreadable marker
        if marker is None:  # an empty control batch: the cleaner removed the whole transaction
            return None
        first_offset = self.open_txns.pop(v.producer_id, None)
        self.ended.add(v.producer_id)
        if marker.type_id != 0:
            return None
        if first_offset is None:  # opened before the first batch we saw
            first_offset = UNKNOWN_OFFSET
        # The last stable offset: the first offset of the earliest transaction still open elsewhere.
        lso = min(self.open_txns.values(), default=base + 1)
        return AbortedTxn(0, v.producer_id, first_offset, base, lso)
