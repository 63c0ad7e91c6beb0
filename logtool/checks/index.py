"""Index checks: Kafka's load-time sanity checks, and every entry held against the log it indexes.

The checks are lenses over the walker's batch stream: index entries and batches are both sorted by
position (offset), so one merge pass checks every entry in O(1) memory.
"""
from __future__ import annotations

from collections.abc import Iterator
from operator import attrgetter
from typing import Any

from logtool.findings import (
    INDEX_BEYOND_LOG, INDEX_CORRUPT, INDEX_NOT_INCREASING, INDEX_PAST_LOG_END, INDEX_PREALLOCATED,
    INDEX_PREALLOCATED_CLOSED, INDEX_WRONG_POSITION, TIMEINDEX_CORRUPT, TIMEINDEX_WRONG_ENTRY, TXNINDEX_CORRUPT,
    TXNINDEX_MISMATCH, UNREADABLE, Sink)
from logtool.format import Bytes, kernel
from logtool.rules.transactions import UNKNOWN_OFFSET, TxnTracker
from logtool.format.batch import V2_HEADER_SIZE, BatchView
from logtool.format.index import (OFFSET_ENTRY, entries, TIME_ENTRY, TXN_ENTRY, AbortedTxn, aborted_txns,
                                  offset_index_sanity, time_index_sanity, zero_tail_start)
from logtool.store.segment import WalkOutcome
from logtool.store.sidefile import SideFile

# The bounds `OffsetIndexCheck` holds each entry to as it meets the batches, declared for the kernel: it merges
# a run with the entries (index_run) only while each entry keeps within them; the kinds beside each are what
# the lens reports of an entry that does not.
INDEX_RUN = kernel.IndexRunBounds(
    at_batch_start=True,  # INDEX_WRONG_POSITION: "not the start of a batch"
    after_previous_batch=True,  # INDEX_WRONG_POSITION: "in an earlier batch"
    within_batch=True,  # INDEX_WRONG_POSITION: "points at a batch starting at"
    increasing=True,  # INDEX_NOT_INCREASING
)
_MAX_TIMESTAMP = attrgetter("max_timestamp")
# The bounds `TimeIndexCheck` holds each entry to as the batches reach it, declared for the kernel: it sums up a
# whole segment (clean_segment) only where every entry keeps within them.
TIME_INDEX_RUN = kernel.TimeIndexRunBounds(
    entry_in_batch=True,  # TIMEINDEX_WRONG_ENTRY: "which is in no batch"
    time_is_max=True,  # TIMEINDEX_WRONG_ENTRY: "but the largest timestamp up to that batch is"
    increasing=True,  # TIMEINDEX_WRONG_ENTRY: "does not follow"
)

# Every kind `OffsetIndexCheck` reports of an entry as the batches come (each it names outside `__init__` and
# `finish`); tests/format/test_kernel_guard.py holds a case of each in which the kernel path reports what the pure path
# does.
PER_BATCH = (INDEX_WRONG_POSITION, INDEX_NOT_INCREASING)
# ... and every kind `TimeIndexCheck` reports as the batches come.
TIME_PER_BATCH = (TIMEINDEX_WRONG_ENTRY,)


def _beyond(walk: WalkOutcome) -> str:
    """Entries past the valid log: into a damaged tail, which the recovery that cuts it heals by rebuilding
    the indexes; or past the end of a whole log, which nothing heals."""
    return INDEX_BEYOND_LOG.name if walk.stop is not None else INDEX_PAST_LOG_END.name


def _load(side: SideFile, entry_size: int, base: int, active: bool, rep: Sink) -> tuple[memoryview, int] | None:
    """The index bytes and the number of meaningful entries (a preallocated zero tail excluded)."""
    if side.data is None:
        rep.add(UNREADABLE, f"cannot read {side.name}: {side.error}")
        return None
    data = memoryview(side.data)
    size = len(data)
    entries = size // entry_size
    zero_at = zero_tail_start(data, entry_size)
    if zero_at is not None:
        entries = zero_at
        rep.add(INDEX_PREALLOCATED if active else INDEX_PREALLOCATED_CLOSED,
                f"{side.name}: {size // entry_size - zero_at} preallocated zero slots after {zero_at} entries")
    return data, entries


class OffsetIndexCheck:
    """Each `.index` entry (O, P) must sit on a batch start P inside the valid prefix, with the batch before
    P ending below O; that is what Kafka's lookup needs to land on the right batch. An entry's O may exceed
    the last offset of the batch at P (follower and cleaner appends index whole chunks)."""

    def __init__(self, side: SideFile, base: int, active: bool, sink: Sink) -> None:
        self.base = base
        self.fast = kernel.active()  # asked once a segment: the pure path feeds its batches one at a time
        self.rep = sink.for_file(side.name)
        self.data, self.entries, self.read = memoryview(b""), 0, 0  # the entries, how many, how many read
        self.prev: tuple[int, int] | None = None
        self.next: tuple[int, int] | None = None
        self.prev_batch_last: int | None = None
        loaded = _load(side, OFFSET_ENTRY.size, base, active, self.rep)
        if loaded is None:
            return
        self.data, self.entries = loaded
        problem = offset_index_sanity(self.data, base)
        if problem:
            self.rep.add(INDEX_CORRUPT, f"{side.name} {problem}")
        self._advance()

    def _entry(self, i: int) -> tuple[int, int]:
        relative, position = OFFSET_ENTRY.unpack_from(self.data, i * OFFSET_ENTRY.size)
        return self.base + relative, position

    def _advance(self) -> None:
        if self.read >= self.entries:
            self.next = None
            return
        entry = self._entry(self.read)
        self.read += 1
        if self.prev is not None and (entry[0] <= self.prev[0] or entry[1] <= self.prev[1]):
            self.rep.add(INDEX_NOT_INCREASING, f"entry (offset {entry[0]}, position {entry[1]}) does not follow "
                                               f"(offset {self.prev[0]}, position "
                                               f"{self.prev[1]})", entry[1], entry[0])
        self.prev = entry
        self.next = entry

    def feed_many(self, views: list[BatchView]) -> None:
        if self.next is None:  # every entry met: what is left to know of a batch is its last offset
            self.prev_batch_last = views[-1].last_offset
            return
        if self.fast is not None:
            views = self._take_plain_run(self.fast, views)
        # Most batches hold no index entry (one per 4 KiB of log): only those that do go through `feed`.
        for v in views:
            if self.next is None:  # every entry met: the rest only leave their last offset
                self.prev_batch_last = views[-1].last_offset
                return
            if self.next[1] <= v.position:
                self.rep.walked.at = v.position
                self.feed(v)
            else:
                self.prev_batch_last = v.last_offset

    def _take_plain_run(self, fast: kernel.Kernel, views: list[BatchView]) -> list[BatchView]:
        """The kernel merges the batches with the entries while each entry is plainly right (it checks what
        `feed` and `_advance` would); the batches from the first it is not sure of are left to them."""
        at = self.read - 1  # the entry in self.next
        taken, at_after, self.prev_batch_last = fast.index_run(views, self.data, at, self.entries, self.base,
                                                               self.prev_batch_last, INDEX_RUN)
        if at_after > at:
            self.prev, self.read = self._entry(at_after - 1), at_after
            self._advance()  # reads the next entry again (the kernel found it follows on)
        return views[taken:] if taken else views

    def feed(self, view: BatchView) -> None:
        while self.next is not None and self.next[1] <= view.position:
            offset, pos = self.next
            if pos < view.position:
                self.rep.add(INDEX_WRONG_POSITION, f"entry for offset {offset} points at byte {pos}, "
                                                   f"which is not the start of a batch", pos, offset)
            elif self.prev_batch_last is not None and offset <= self.prev_batch_last:
                self.rep.add(INDEX_WRONG_POSITION, f"entry for offset {offset} points at byte {pos}, but offset "
                                                   f"{offset} is in an earlier batch", pos, offset)
            elif offset < view.base_offset if view.base_offset is not None else False:
                self.rep.add(INDEX_WRONG_POSITION, f"entry for offset {offset} points at a batch starting at "
                                                   f"offset {view.base_offset}", pos, offset)
            self._advance()
        self.prev_batch_last = view.last_offset

    def finish(self, walk: WalkOutcome, last_offset: int | None) -> None:
        beyond = 0
        while self.next is not None:
            offset, pos = self.next
            if pos >= walk.valid_bytes:
                beyond += 1
            else:  # inside the prefix but after the last batch start: not a batch boundary
                # Reported where it points (past every batch), whichever lens last moved the walk's place: the
                # pure path's feed leaves it at the last batch an entry was checked against, a run the kernel
                # took at the run's end, and the findings are ordered by it.
                self.rep.walked.at = pos
                self.rep.add(INDEX_WRONG_POSITION, f"entry for offset {offset} points at byte {pos}, "
                                                   f"which is not the start of a batch", pos, offset)
            self._advance()
        if beyond:
            self.rep.add(_beyond(walk), f"{entries(beyond)} at or past byte {walk.valid_bytes}, "
                                        f"the end of the valid log")
        if self.prev is not None and last_offset is not None and self.prev[0] > last_offset and not beyond:
            # Reported with the batch the entry points at, as when that batch was fed alone: a run the kernel
            # took whole left the walk's place at the run's end.
            self.rep.walked.at = self.prev[1]
            self.rep.add(INDEX_WRONG_POSITION, f"last entry names offset {self.prev[0]}, beyond the segment's "
                                               f"last offset {last_offset}", self.prev[1], self.prev[0])


class TimeIndexCheck:
    """Each `.timeindex` entry (T, O): O lies in a batch (recovery and brokers since 3.7 store the batch's
    last offset, older brokers the offset of the record holding the max timestamp), and T is the largest
    batch max timestamp up to and including that batch. Timestamps strictly increase; offsets never decrease."""

    def __init__(self, side: SideFile, base: int, active: bool, sink: Sink) -> None:
        self.rep = sink.for_file(side.name)
        self.base = base
        self.entries: Iterator[tuple[Any, ...]] = iter(())  # (timestamp, relative offset) each
        self.next: tuple[int, int] | None = None
        self.prev: tuple[int, int] | None = None
        self.max_ts = -1
        loaded = _load(side, TIME_ENTRY.size, base, active, self.rep)
        if loaded is None:
            return
        data, n = loaded
        problem = time_index_sanity(data, base)
        if problem and not (active and zero_tail_start(data, TIME_ENTRY.size) is not None):
            self.rep.add(TIMEINDEX_CORRUPT, f"{side.name} {problem}")
        self.entries = TIME_ENTRY.iter_unpack(data[: n * TIME_ENTRY.size])
        self._advance()

    def _advance(self) -> None:
        raw = next(self.entries, None)
        if raw is None:
            self.next = None
            return
        entry = (raw[0], self.base + raw[1])
        if self.prev is not None and (entry[0] <= self.prev[0] or entry[1] < self.prev[1]):
            self.rep.add(TIMEINDEX_WRONG_ENTRY, f"entry (timestamp {entry[0]}, offset {entry[1]}) does not follow "
                                                f"(timestamp {self.prev[0]}, offset {self.prev[1]})", None, entry[1])
        self.prev = entry
        self.next = entry

    def feed_many(self, views: list[BatchView]) -> None:
        # Only batches an entry names go through `feed`; the others only raise the largest timestamp.
        for i, v in enumerate(views):
            if self.next is None:  # every entry met: the rest only raise the largest timestamp
                self.max_ts = max(self.max_ts, max(map(_MAX_TIMESTAMP, views[i:])))
                return
            if self.next[1] <= v.last_offset:
                self.rep.walked.at = v.position
                self.feed(v)
            elif v.max_timestamp > self.max_ts:
                self.max_ts = v.max_timestamp

    def feed(self, view: BatchView) -> None:
        self.max_ts = max(self.max_ts, view.max_timestamp)
        while self.next is not None and self.next[1] <= view.last_offset:
            ts, offset = self.next
            first = view.first_offset
            if offset < first:
                self.rep.add(TIMEINDEX_WRONG_ENTRY, f"entry names offset {offset}, which is in no batch",
                             view.position, offset)
            elif ts != self.max_ts:
                self.rep.add(TIMEINDEX_WRONG_ENTRY, f"entry for offset {offset} says timestamp {ts}, but the largest "
                                                    f"timestamp up to that batch is {self.max_ts}",
                             view.position, offset)
            self._advance()

    def finish(self, walk: WalkOutcome, last_offset: int | None) -> None:
        beyond = 0
        while self.next is not None:
            beyond += 1
            self._advance()
        if beyond:
            self.rep.add(_beyond(walk), f"{entries(beyond)} past the last valid offset {last_offset}")


class TxnIndexCheck:
    """The `.txnindex` must pass Kafka's load-time check (version, no abort below the segment base) and list
    exactly the aborted transactions whose markers lie in this segment. First offsets and last stable
    offsets depend on transactions opened earlier; they are compared only where the partition's history on
    disk makes them knowable. The file is read once, at the end of the walk."""

    def __init__(self, side: SideFile, base: int, buf: Bytes, txns: TxnTracker, sink: Sink) -> None:
        self.sink = sink
        self.side, self.base, self.buf, self.txns = side, base, buf, txns
        self.expected: list[AbortedTxn] = []
        # Each entry records one abort marker, a control batch of the segment: no more entries than that.
        self.most_entries = len(buf) // V2_HEADER_SIZE + 1

    def feed_many(self, views: list[BatchView]) -> None:
        # Only transactional batches open or end a transaction. A batch without any attribute is not one: the
        # test spares the property's call on most batches (most of this lens's cost on a log of small partitions).
        for v in views:
            if v.attributes and v.is_transactional:
                self.feed(v)

    def feed(self, view: BatchView) -> None:
        aborted = self.txns.feed(self.buf, view)
        if aborted is not None:
            self.expected.append(aborted)

    def finish(self, walk: WalkOutcome, last_offset: int | None) -> None:
        rep = self.sink.for_file(self.side.name)
        if self.side.error is not None:
            rep.add(UNREADABLE, f"cannot read {self.side.name}: {self.side.error}")
            return
        if self.side.data is not None:
            on_disk = self._on_disk(self.side.data, rep)
            if on_disk is None:
                return
        elif not self.expected:
            return
        else:
            on_disk = []
        self._compare(on_disk, walk, last_offset, rep)

    def _on_disk(self, data: Bytes, rep: Sink) -> list[AbortedTxn] | None:
        """The file's entries, each held to Kafka's load-time check; None when there are more than the segment
        could have aborts (not a transaction index of this segment)."""
        entries = len(data) // TXN_ENTRY.size
        if entries > self.most_entries:
            rep.add(TXNINDEX_CORRUPT, f"{entries} entries, more than the {len(self.buf)}-byte segment has "
                                      f"batches: not a transaction index of this segment")
            return None
        on_disk = list(aborted_txns(data))
        for txn in on_disk:
            if txn.version > 0:
                rep.add(TXNINDEX_CORRUPT, f"unexpected aborted transaction version {txn.version}", None,
                        txn.last_offset)
            elif txn.last_offset < self.base:
                rep.add(TXNINDEX_CORRUPT, f"aborted transaction of producer {txn.producer_id} ends at offset "
                                          f"{txn.last_offset}, below the segment base {self.base}", None,
                        txn.last_offset)
        return on_disk

    def _compare(self, on_disk: list[AbortedTxn], walk: WalkOutcome, last_offset: int | None, rep: Sink) -> None:
        """The entries on disk against the aborts the walk found, each way."""
        found = {(t.producer_id, t.last_offset): t for t in on_disk}
        for want in self.expected:
            got = found.pop((want.producer_id, want.last_offset), None)
            if got is None:
                rep.add(TXNINDEX_MISMATCH, f"the abort of producer {want.producer_id} at offset {want.last_offset} "
                                           f"is not listed"
                        + ("" if self.side.exists else f" ({self.side.name} is missing)"), None, want.last_offset)
            elif want.first_offset != UNKNOWN_OFFSET and got.first_offset != want.first_offset:
                rep.add(TXNINDEX_MISMATCH, f"the aborted transaction of producer {want.producer_id} ending at "
                                           f"{want.last_offset} is listed from offset {got.first_offset}, the log "
                                           f"says {want.first_offset}", None, want.last_offset)
            elif self.txns.history_complete and got.last_stable_offset != want.last_stable_offset:
                rep.add(TXNINDEX_MISMATCH, f"the aborted transaction of producer {want.producer_id} ending at "
                                           f"{want.last_offset} has last stable offset {got.last_stable_offset}, the "
                                           f"log says {want.last_stable_offset}", None, want.last_offset)
        for extra in found.values():
            if last_offset is None or extra.last_offset <= last_offset:
                rep.add(TXNINDEX_MISMATCH, f"lists an abort of producer {extra.producer_id} at offset "
                                           f"{extra.last_offset}, but the log holds no such abort marker",
                        None, extra.last_offset)
            else:
                rep.add(_beyond(walk), f"lists an abort at offset {extra.last_offset}, past the last valid "
                                       f"offset {last_offset}", None, extra.last_offset)

