"""What kafka-dump-log shows for the files beside the segments: `.index`, `.timeindex`, `.txnindex` and
producer `.snapshot` files, entry by entry in Kafka's order, up to where Kafka's tool stops (a zero entry of
a preallocated index; an entry whose log position holds no batch, where the tool throws), and why it stops.

The rules are those of DumpLogSegments' dumpIndex, dumpTimeIndex, dumpTxnIndex and dumpProducerIdSnapshot.
Nothing here writes: kafka-dump-log trims an index whose size is not a multiple of its entry size in place,
while this reads the whole entries and leaves the file as it is.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from pathlib import Path

from logtool.format.batch import kafka_iterator_step
from logtool.format.index import (aborted_txns, offset_entries, offset_index_sanity, time_entries,
                                  time_index_sanity)
from logtool.format.meta import MetaError, producer_snapshot
from logtool.store.layout import FileKind, classify_file
from logtool.store.mapping import open_readonly
from logtool.store.sidefile import read_side

# kafka-dump-log's --max-message-size default: how far past an index entry's position a batch may end.
MAX_MESSAGE_SIZE = 5 * 1024 * 1024
# The kinds of file this module dumps, by the name of their rows.
KINDS = {FileKind.INDEX: "offset_index_entry", FileKind.TIMEINDEX: "time_index_entry",
         FileKind.TXNINDEX: "aborted_txn", FileKind.SNAPSHOT: "producer_state"}


@dataclass(slots=True)
class FileDump:
    path: Path
    row_type: str  # what each row is: one of KINDS' values
    rows: list[dict] = field(default_factory=list)  # fields in Kafka's order, named as Kafka names them
    empty: bool = False  # an offset index without entries ("<file> is empty.")
    stop: str | None = None  # why kafka-dump-log stops before the end of the file (it throws there)
    mode: str = "dump"  # "sanity": Kafka's load-time sanity check only; "verify": entries checked, not printed
    passed_sanity: bool = False


def dumpable(path: Path) -> bool:
    return classify_file(path.name).kind in KINDS


def dump_file(path: Path, mode: str = "dump") -> FileDump:
    """The rows of one index, transaction index or producer snapshot. `mode` (indexes only, as
    kafka-dump-log's --index-sanity-check and --verify-index-only): "sanity" runs Kafka's sanity check
    instead, "verify" walks the entries without listing them. Raises OSError when it cannot be read."""
    kind = classify_file(path.name).kind
    dump = FileDump(path, KINDS[kind], mode=mode if kind in (FileKind.INDEX, FileKind.TIMEINDEX) else "dump")
    {FileKind.INDEX: _offset_index, FileKind.TIMEINDEX: _time_index, FileKind.TXNINDEX: _txn_index,
     FileKind.SNAPSHOT: _snapshot}[kind](dump)
    return dump


def _sanity(dump: FileDump, buf, check) -> None:
    problem = check(buf, _base_offset(dump.path))
    if problem is None:
        dump.passed_sanity = True
    else:
        dump.stop = f"Kafka's sanity check fails: {problem}"


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


def _offset_index(dump: FileDump) -> None:
    log = _log(dump)
    if log is None:
        return
    base, buf, size = log
    buf_index = _mapped(dump.path)
    entries = list(offset_entries(buf_index, base))
    if not entries:
        dump.empty = True
        return
    if dump.mode == "sanity":
        return _sanity(dump, buf_index, offset_index_sanity)
    for i, e in enumerate(entries):
        if i > 0 and e.offset == base:
            return  # the zeros of a preallocated index: Kafka's tool stops at the first
        if not 0 <= e.position <= size:
            dump.stop = f"entry {i} (offset {e.offset}) points at byte {e.position}, outside the {size}-byte log"
            return
        found = kafka_iterator_step(buf, e.position, min(size, e.position + MAX_MESSAGE_SIZE))
        if not isinstance(found, tuple):
            dump.stop = f"entry {i} (offset {e.offset}) points at byte {e.position}, where no batch starts" + \
                        (f" ({found})" if found else "")
            return
        dump.rows.append({"offset": e.offset, "position": e.position})


def _time_index(dump: FileDump) -> None:
    log = _log(dump)
    if log is None:
        return
    base, buf, size = log
    try:
        offsets = list(offset_entries(_mapped(dump.path.with_suffix(".index")), base))
    except FileNotFoundError:
        offsets = []  # Kafka's tool opens (and creates) an empty one: every lookup gives the segment's start
    keys = [o.offset for o in offsets]
    outcome: dict[int, str | None] = {}  # batch position -> the exception the walk from there meets, or None
    buf_time = _mapped(dump.path)
    if dump.mode == "sanity":
        return _sanity(dump, buf_time, time_index_sanity)
    for i, e in enumerate(time_entries(buf_time, base)):
        if i > 0 and e.offset == base:
            return
        k = bisect.bisect_right(keys, e.offset) - 1  # OffsetIndex.lookup: the largest entry at or below
        start = offsets[k].position if k >= 0 else 0
        # Kafka lists every batch from there to the end of the log before it looks for the entry's batch,
        # so an exception anywhere after that position stops the dump before this entry is printed.
        problem = _walk_outcome(buf, start, size, outcome)
        if problem is not None:
            dump.stop = f"entry {i} (offset {e.offset}): the log from byte {start} on cannot be iterated: {problem}"
            return
        dump.rows.append({"timestamp": e.timestamp, "offset": e.offset})


def _walk_outcome(buf, start: int, end: int, known: dict[int, str | None]) -> str | None:
    """The exception Kafka's batch iterator meets walking from `start` to `end`, or None; memoised per
    position in `known`, so that many entries walking the same chain cost one walk."""
    chain = []
    pos = start
    while pos not in known:
        chain.append(pos)
        step = kafka_iterator_step(buf, pos, end) if 0 <= pos <= end else None
        if not isinstance(step, tuple):
            known[pos] = step
            break
        pos = step[0]
    result = known[pos]
    for p in chain:
        known[p] = result
    return result


def _txn_index(dump: FileDump) -> None:
    for t in aborted_txns(_mapped(dump.path)):
        if t.version > 0:  # AbortedTxn.CURRENT_VERSION: Kafka's iterator throws on a newer one
            dump.stop = f"unexpected aborted transaction version {t.version}"
            return
        dump.rows.append({"version": t.version, "producerId": t.producer_id, "firstOffset": t.first_offset,
                          "lastOffset": t.last_offset, "lastStableOffset": t.last_stable_offset})


def _snapshot(dump: FileDump) -> None:
    side = read_side(dump.path)
    if side.data is None:
        raise OSError(side.error or "cannot be read")
    try:
        entries = producer_snapshot(bytes(side.data))
    except MetaError as e:
        dump.stop = str(e)  # CorruptSnapshotException: Kafka's tool prints its message and goes on
        return
    for p in entries:
        row = {"producerId": p.producer_id, "producerEpoch": p.epoch, "coordinatorEpoch": p.coordinator_epoch,
               "currentTxnFirstOffset": p.current_txn_first_offset if p.current_txn_first_offset >= 0 else None,
               "lastTimestamp": p.timestamp}
        if p.last_offset >= 0:  # Kafka keeps the batch metadata only for an entry that has a last offset
            row.update({"firstSequence": _decrement_sequence(p.last_sequence, p.offset_delta),
                        "lastSequence": p.last_sequence, "lastOffset": p.last_offset,
                        "offsetDelta": p.offset_delta, "timestamp": p.timestamp})
        dump.rows.append(row)


def _decrement_sequence(sequence: int, decrement: int) -> int:
    """DefaultRecordBatch.decrementSequence: sequences wrap from 2^31-1 to 0."""
    if sequence < decrement:
        return 2**31 - 1 - (decrement - sequence) + 1
    return sequence - decrement
