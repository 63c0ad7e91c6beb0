"""What kafka-dump-log shows for the files beside the segments: `.index`, `.timeindex`, `.txnindex` and
producer `.snapshot` files, entry by entry in Kafka's order, up to where Kafka's tool stops (a zero entry of
a preallocated index; an entry whose log position holds no batch, where the tool throws), and why it stops.

The rules are those of DumpLogSegments' dumpIndex, dumpTimeIndex, dumpTxnIndex and dumpProducerIdSnapshot.
Nothing here writes: kafka-dump-log trims an index whose size is not a multiple of its entry size in place,
and creates a `.index` that a `.timeindex` lacks, while this reads the whole entries and leaves the files as
they are.

Entries stream: an index can hold tens of millions of them, and none is kept once it is handed on.
"""
from __future__ import annotations

import mmap
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from logtool import exitcodes
from logtool.findings import Severity
from logtool.format.batch import kafka_iterator_step
from logtool.format.index import OFFSET_ENTRY, TIME_ENTRY, aborted_txns, offset_index_sanity, time_index_sanity
from logtool.format.meta import MetaError, producer_snapshot
from logtool.store.layout import FileKind, classify_file
from logtool.store.mapping import open_readonly
from logtool.store.sidefile import read_side

# kafka-dump-log's --max-message-size default: how far past an index entry's position a batch may end.
MAX_MESSAGE_SIZE = 5 * 1024 * 1024
# The kinds of file this module dumps, by the name of their rows.
KINDS = {FileKind.INDEX: "offset_index_entry", FileKind.TIMEINDEX: "time_index_entry",
         FileKind.TXNINDEX: "aborted_txn", FileKind.SNAPSHOT: "producer_state"}
# The mapped pages are handed back every so many reads (an entry, a lookup, a step of a walk), so that the
# resident set stays flat whatever the sizes of the index and of its log. MADV_DONTNEED on a read-only file
# mapping only unmaps: the pages stay in the page cache.
RELEASE_EVERY = 1024
# AbstractIndex.warmEntries() of an offset index (8192 bytes of 8-byte entries): the tail its lookup tries first.
_WARM_ENTRIES = 8192 // OFFSET_ENTRY.size


@dataclass(slots=True)
class FileDump:
    path: Path
    row_type: str  # what each row is: one of KINDS' values
    # Fields in Kafka's order, named as Kafka names them; read as they are asked for, once.
    rows: Iterator[dict] = field(default_factory=lambda: iter(()))
    empty: bool = False  # an offset index without entries ("<file> is empty.")
    # Why kafka-dump-log stops before the end of the file (it throws there); final once `rows` is used up.
    stop: str | None = None
    mode: str = "dump"  # "sanity": Kafka's load-time sanity check only; "verify": entries checked, not printed
    passed_sanity: bool = False

    def exit_code(self, fail_on: Severity = Severity.WARNING) -> int:
        """Once `rows` are used up: 4 where Kafka's tool would have stopped before the end of the file."""
        return exitcodes.PROBLEMS if self.stop else exitcodes.CLEAN

    def stderr_lines(self) -> list[str]:
        return [f"logtool: {self.path}: read up to where kafka-dump-log stops (it throws there): {self.stop}"] \
            if self.stop else []


def dumpable(path: Path) -> bool:
    return classify_file(path.name).kind in KINDS


def dump_file(path: Path, mode: str = "dump") -> FileDump:
    """The rows of one index, transaction index or producer snapshot. `mode` (indexes only, as
    kafka-dump-log's --index-sanity-check and --verify-index-only): "sanity" runs Kafka's sanity check
    instead, "verify" walks the entries without listing them. What comes before the entries (the files
    opened, `empty`, the sanity check) is done here; the entries are read as `rows` is iterated. Raises
    OSError when the file cannot be read."""
    kind = classify_file(path.name).kind
    dump = FileDump(path, KINDS[kind], mode=mode if kind in (FileKind.INDEX, FileKind.TIMEINDEX) else "dump")
    dump.rows = {FileKind.INDEX: _offset_index, FileKind.TIMEINDEX: _time_index, FileKind.TXNINDEX: _txn_index,
                 FileKind.SNAPSHOT: _snapshot}[kind](dump)
    return dump


def _sanity(dump: FileDump, buf, check) -> Iterator[dict]:
    problem = check(buf, _base_offset(dump.path))
    if problem is None:
        dump.passed_sanity = True
    else:
        dump.stop = f"Kafka's sanity check fails: {problem}"
    return iter(())


def _base_offset(path: Path) -> int:
    return int(path.name.split(".")[0])


def _log(dump: FileDump) -> tuple[int, object, int] | None:
    """The index's base offset and its segment's log (buffer, size), as the dump of an index needs them; None
    (and `stop` said) when the log cannot be opened: Kafka's tool throws there."""
    log = dump.path.with_name(f"{dump.path.name.split('.')[0]}.log")
    try:
        buf, size = open_readonly(log)
    except OSError as e:
        dump.stop = f"{log}: {e.strerror or e}"
        return None
    return _base_offset(dump.path), buf, size


def _mapped(path: Path):
    data, _size = open_readonly(path)
    return data


def _offset_index(dump: FileDump) -> Iterator[dict]:
    log = _log(dump)
    if log is None:
        return iter(())
    base, buf, size = log
    index = _mapped(dump.path)
    if len(index) < OFFSET_ENTRY.size:
        dump.empty = True
        return iter(())
    if dump.mode == "sanity":
        return _sanity(dump, index, offset_index_sanity)
    return _offset_rows(dump, index, base, buf, size)


def _offset_rows(dump: FileDump, index, base: int, buf, size: int) -> Iterator[dict]:
    pages = _Pages(index, buf)
    for i, (rel, position) in enumerate(_entries(index, OFFSET_ENTRY)):
        pages.read()
        offset = base + rel
        if i > 0 and offset == base:
            return  # the zeros of a preallocated index: Kafka's tool stops at the first
        if not 0 <= position <= size:
            dump.stop = f"entry {i} (offset {offset}) points at byte {position}, outside the {size}-byte log"
            return
        found = kafka_iterator_step(buf, position, min(size, position + MAX_MESSAGE_SIZE))
        if not isinstance(found, tuple):
            dump.stop = f"entry {i} (offset {offset}) points at byte {position}, where no batch starts" + \
                        (f" ({found})" if found else "")
            return
        yield {"offset": offset, "position": position}


def _entries(buf, entry: struct.Struct) -> Iterator[tuple]:
    """Every whole entry of an index file as the tuple its struct unpacks, as Kafka opens the file
    (floor(length / entry size) of them), read in place."""
    whole = len(buf) - len(buf) % entry.size
    return entry.iter_unpack(memoryview(buf)[:whole]) if whole else iter(())


def _time_index(dump: FileDump) -> Iterator[dict]:
    log = _log(dump)
    if log is None:
        return iter(())
    base, buf, size = log
    index_path = dump.path.with_suffix(".index")
    try:
        index = _mapped(index_path)
    except FileNotFoundError:
        # Kafka's tool opens the offset index before it reads an entry: a missing one is created empty, sized
        # by a max index size of -1, which it refuses. No entry is printed.
        dump.stop = f"{index_path.name} is missing (Kafka's tool creates it and throws: Invalid max index size: -1)"
        return iter(())
    times = _mapped(dump.path)
    if dump.mode == "sanity":
        return _sanity(dump, times, time_index_sanity)
    return _time_rows(dump, times, index, base, buf, size)


def _time_rows(dump: FileDump, times, index, base: int, buf, size: int) -> Iterator[dict]:
    pages = _Pages(times, index, buf)
    lookup = _Lookup(index, base, pages)
    outcome = _IteratorOutcomes(buf, size, pages)
    for i, (timestamp, rel) in enumerate(_entries(times, TIME_ENTRY)):
        pages.read()
        offset = base + rel
        if i > 0 and offset == base:
            return
        start = lookup(offset)
        # FileRecords.slice refuses a position outside the log.
        if not 0 <= start <= size:
            dump.stop = f"entry {i} (offset {offset}): the offset index gives byte {start}, outside the {size}-byte log"
            return
        # Kafka lists every batch from there to the end of the log before it looks for the entry's batch,
        # so an exception anywhere after that position stops the dump before this entry is printed.
        problem = outcome(start)
        if problem is not None:
            dump.stop = f"entry {i} (offset {offset}): the log from byte {start} on cannot be iterated: {problem}"
            return
        yield {"timestamp": timestamp, "offset": offset}


class _Lookup:
    """OffsetIndex.lookup's position for each target in turn, read in place: byte 0 where no entry is at or
    below the target. Kafka's search (AbstractIndex: the warm tail first, then the rest) runs over every whole
    entry as it stands, sorted or not, a preallocated zero tail included, and its answer on entries out of
    order is its own. Where every offset is above the one before (checked once, on first use), the answer is
    the one entry at or below the target, so targets that do not decrease (a time index's) are found by
    stepping on from the last answer."""

    def __init__(self, index, base: int, pages: _Pages) -> None:
        self._index, self._base, self._pages = index, base, pages
        self._n = len(index) // OFFSET_ENTRY.size
        self._increasing: bool | None = None
        self._last: tuple[int, int] | None = None  # (target, slot) of the last answer

    def __call__(self, target: int) -> int:
        if self._increasing is None:
            self._increasing = self._check_increasing()
        if self._increasing and self._last is not None and target >= self._last[0]:
            slot = self._last[1]
            while slot + 1 < self._n and self._key(slot + 1) <= target:
                self._pages.read()
                slot += 1
        else:
            slot = self._kafka_slot(target)
        self._last = (target, slot)
        return 0 if slot < 0 else OFFSET_ENTRY.unpack_from(self._index, slot * OFFSET_ENTRY.size)[1]

    def _check_increasing(self) -> bool:
        previous = None
        for rel, _position in _entries(self._index, OFFSET_ENTRY):
            self._pages.read()
            if previous is not None and rel <= previous:
                return False
            previous = rel
        return True

    def _key(self, slot: int) -> int:
        return self._base + OFFSET_ENTRY.unpack_from(self._index, slot * OFFSET_ENTRY.size)[0]

    def _kafka_slot(self, target: int) -> int:
        """AbstractIndex.largestLowerBoundSlotFor: -1 where it finds none."""
        self._pages.read()
        if self._n == 0:
            return -1
        hot = max(0, self._n - 1 - _WARM_ENTRIES)
        if self._key(hot) < target:
            return self._binary_search(target, hot, self._n - 1)
        if self._key(0) > target:
            return -1
        return self._binary_search(target, 0, hot)

    def _binary_search(self, target: int, lo: int, hi: int) -> int:
        """AbstractIndex.binarySearch (LARGEST_LOWER_BOUND) between slots `lo` and `hi`."""
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            key = self._key(mid)
            if key > target:
                hi = mid - 1
            elif key < target:
                lo = mid
            else:
                return mid
        return lo


# How far apart the positions that walks of the log remember lie (see _IteratorOutcomes).
_MARK_EVERY = 64


class _IteratorOutcomes:
    """What Kafka's batch iterator meets walking from a position to the end of the log: the message of the
    exception it throws, or None where it ends quietly. Asked for many positions in turn (one per time index
    entry) in memory that does not grow with the log: a walk remembers every 64th position it passes, and
    where it ended, with its answer, and a later walk stops at the first remembered position it meets. The
    position asked last is kept too, and the next one is first looked for a few steps further along its
    chain, which is where a sorted time index's next entry points."""

    def __init__(self, buf, end: int, pages: _Pages) -> None:
        self._buf, self._end, self._pages = buf, end, pages
        self._known: dict[int, str | None] = {}
        self._last: tuple[int, str | None] | None = None

    def __call__(self, start: int) -> str | None:
        if self._last is not None:
            pos, outcome = self._last
            for _ in range(_MARK_EVERY):
                if pos >= start:
                    break
                self._pages.read()
                step = kafka_iterator_step(self._buf, pos, self._end)
                if not isinstance(step, tuple):
                    break
                pos = step[0]
            if pos == start:
                self._last = (start, outcome)
                return outcome
        outcome = self._walk(start)
        self._last = (start, outcome)
        return outcome

    def _walk(self, start: int) -> str | None:
        marks, pos, steps = [], start, 0
        while pos not in self._known:
            if steps % _MARK_EVERY == 0:
                marks.append(pos)
            self._pages.read()
            step = kafka_iterator_step(self._buf, pos, self._end)
            if not isinstance(step, tuple):
                self._known[pos] = step
                break
            pos, steps = step[0], steps + 1
        outcome = self._known[pos]
        for p in marks:
            self._known[p] = outcome
        return outcome


class _Pages:
    """Counts the reads of some mapped files and hands their pages back every RELEASE_EVERY reads."""

    def __init__(self, *bufs) -> None:
        self._maps = [b for b in bufs if isinstance(b, mmap.mmap)]  # an empty file is b"", not a mapping
        self._reads = 0

    def read(self) -> None:
        self._reads += 1
        if self._reads % RELEASE_EVERY == 0:
            for m in self._maps:
                m.madvise(mmap.MADV_DONTNEED)


def _txn_index(dump: FileDump) -> Iterator[dict]:
    return _txn_rows(dump, _mapped(dump.path))


def _txn_rows(dump: FileDump, buf) -> Iterator[dict]:
    pages = _Pages(buf)
    for t in aborted_txns(buf):
        pages.read()
        if t.version > 0:  # AbortedTxn.CURRENT_VERSION: Kafka's iterator throws on a newer one
            dump.stop = f"unexpected aborted transaction version {t.version}"
            return
        yield {"version": t.version, "producerId": t.producer_id, "firstOffset": t.first_offset,
               "lastOffset": t.last_offset, "lastStableOffset": t.last_stable_offset}


def _snapshot(dump: FileDump) -> Iterator[dict]:
    side = read_side(dump.path)
    if side.data is None:
        raise OSError(side.error or "cannot be read")
    try:
        entries = producer_snapshot(bytes(side.data))
    except MetaError as e:
        dump.stop = str(e)  # CorruptSnapshotException: Kafka's tool prints its message and goes on
        return iter(())
    return map(_producer_row, entries)


def _producer_row(p) -> dict:
    row = {"producerId": p.producer_id, "producerEpoch": p.epoch, "coordinatorEpoch": p.coordinator_epoch,
           "currentTxnFirstOffset": p.current_txn_first_offset if p.current_txn_first_offset >= 0 else None,
           "lastTimestamp": p.timestamp}
    if p.last_offset >= 0:  # Kafka keeps the batch metadata only for an entry that has a last offset
        row.update({"firstSequence": _decrement_sequence(p.last_sequence, p.offset_delta),
                    "lastSequence": p.last_sequence, "lastOffset": p.last_offset,
                    "offsetDelta": p.offset_delta, "timestamp": p.timestamp})
    return row


def _decrement_sequence(sequence: int, decrement: int) -> int:
    """DefaultRecordBatch.decrementSequence: sequences wrap from 2^31-1 to 0."""
    if sequence < decrement:
        return 2**31 - 1 - (decrement - sequence) + 1
    return sequence - decrement
