"""Finding a record the way Kafka does: bisect the segments by base offset, bisect the segment's index,
then walk forward a short way (FORMAT.md §7.4, §9). An index that is missing, short, or wrong never gives
a wrong answer: the lookup checks the entry it lands on against the log and otherwise walks from the start
of the segment, saying why in `index_note`."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from logtool.format import Bytes
from logtool.format.batch import BatchView, read_entry
from logtool.format.index import OFFSET_ENTRY, TIME_ENTRY, time_index_sanity, zero_tail_start
from logtool.format.records import RecordError, iter_records
from logtool.store.partition import Partition
from logtool.store.mapping import open_readonly
from logtool.store.segment import Segment, WalkOutcome


class SeekError(Exception):
    """The target is outside what the partition holds; the message gives the partition's range."""


@dataclass(slots=True)
class Cost:
    index_entries_read: int = 0
    log_bytes_read: int = 0
    notes: list[str] = field(default_factory=list)  # why an index was not used, where it was not


@dataclass(slots=True, frozen=True)
class Hit:
    offset: int  # the offset found: the target itself, or the next one that exists
    segment: Segment
    batch: BatchView
    timestamp: int | None  # the record's timestamp, for timestamp queries
    cost: Cost

    def to_dict(self) -> dict[str, Any]:
        b = self.batch
        return {
            "offset": self.offset, "timestamp": self.timestamp, "segment": str(self.segment.log_path),
            "position": b.position, "batch_base_offset": b.base_offset, "batch_last_offset": b.last_offset,
            "batch_size": b.size, "batch_max_timestamp": b.max_timestamp, "magic": b.magic,
            "index_entries_read": self.cost.index_entries_read, "log_bytes_read": self.cost.log_bytes_read,
            "index_notes": self.cost.notes,
        }


# An index entry's struct's unpack_from: (the key searched by, the other field) of the entry at a position.
_Unpack = Callable[[Bytes, int], tuple[Any, ...]]
_Entry = tuple[int, tuple[int, int]]  # an entry's number, and the entry


def _floor_entry(path: Path, entry_size: int, unpack: _Unpack, key: int, cost: Cost, label: str) -> _Entry | None:
    """The last index entry whose key is <= `key`, as (index, entry) or None; checks the entries around it
    increase. Raises _IndexUnusable when the file cannot be trusted."""
    buf, size = _open_index(path, label)
    n = size // entry_size
    zero_at = zero_tail_start(buf, entry_size)
    if zero_at is not None:  # found by bisection: about log2(n) entries read
        cost.index_entries_read += max(1, n.bit_length())
        n = zero_at

    def entry(i: int) -> tuple[int, int]:
        cost.index_entries_read += 1
        first, second = unpack(buf, i * entry_size)
        return first, second

    lo, hi, found = 0, n - 1, None
    while lo <= hi:  # a plain floor search: Kafka's warm-section variant gives the same answers
        mid = (lo + hi) // 2
        e = entry(mid)
        if e[0] <= key:
            found, lo = (mid, e), mid + 1
        else:
            hi = mid - 1
    if found is not None:
        _check_neighbours(entry, found, n, label)
    return found


def _open_index(path: Path, label: str) -> tuple[Bytes, int]:
    """An index file's bytes and size. Raises _IndexUnusable when it is missing or cannot be read."""
    try:
        return open_readonly(path)
    except FileNotFoundError:
        raise _IndexUnusable(f"{label} is missing") from None
    except OSError as e:
        raise _IndexUnusable(f"{label} cannot be read ({e.strerror or e})") from None


def _check_neighbours(entry: Callable[[int], tuple[int, int]], found: _Entry, n: int, label: str) -> None:
    """Raises _IndexUnusable unless the entries on either side of the one found (of `n`) increase through it."""
    i, e = found
    for j, other in ((i - 1, -1), (i + 1, 1)):
        if 0 <= j < n:
            o = entry(j)
            if (o[0] - e[0]) * other <= 0 or (o[1] - e[1]) * other < 0:
                raise _IndexUnusable(f"{label} entries do not increase around entry {i}")


class _IndexUnusable(Exception):
    pass


def _batch_at(seg: Segment, position: int, cost: Cost) -> BatchView | None:
    entry = read_entry(seg.buf, position, seg.size)
    if isinstance(entry, BatchView) and entry.crc_stored == entry.crc_computed:
        cost.log_bytes_read += entry.size
        return entry
    cost.log_bytes_read += 17
    return None


def _index_position(seg: Segment, offset: int, cost: Cost) -> int:
    """Where to start walking for `offset` in `seg`: the offset index's answer when it checks out, else 0."""
    label = seg.path_with(".index").name
    try:
        found = _floor_entry(seg.path_with(".index"), OFFSET_ENTRY.size, OFFSET_ENTRY.unpack_from,
                             offset - seg.base_offset, cost, label)
    except _IndexUnusable as e:
        cost.notes.append(f"{e}: walked {seg.log_path.name} from its start")
        return 0
    if found is None:
        return 0
    _i, (rel, position) = found
    batch = _batch_at(seg, position, cost) if 0 <= position < seg.size else None
    if batch is not None:
        first = batch.first_offset
        if first <= seg.base_offset + rel:
            return position
    cost.notes.append(f"{label} entry for offset {seg.base_offset + rel} points at byte {position}, which does not "
                      f"start the batch holding it: walked {seg.log_path.name} from its start")
    return 0


def _walk_from(seg: Segment, position: int, cost: Cost) -> Iterator[BatchView]:
    walk = WalkOutcome(seg.size)
    for v in seg.walk(walk, start=position):
        cost.log_bytes_read += v.size
        yield v


def seek_offset(part: Partition, target: int) -> Hit:
    """The batch holding `target`, or the first batch after it (an offset compaction removed)."""
    cost = Cost()
    i = part.floor_segment(target)
    if i is None:
        raise SeekError(f"offset {target} is before the first segment ({_range(part)})")
    for seg in part.segments[i:]:
        with seg:
            start = _index_position(seg, target, cost) if seg is part.segments[i] else 0
            for v in _walk_from(seg, start, cost):
                if v.last_offset >= target:
                    return Hit(max(target, v.base_offset if v.base_offset is not None else target), seg, v, None, cost)
    raise SeekError(f"offset {target} is after the last valid offset ({_range(part)})")


def seek_timestamp(part: Partition, ts: int) -> Hit:
    """The first record whose timestamp is >= `ts`, as Kafka's ListOffsets answers it."""
    cost = Cost()
    for seg in part.segments:
        with seg:
            largest = _largest_timestamp(seg, seg is part.segments[-1], cost)
            if largest is None or largest < ts:
                continue
            start = _time_start(seg, ts, cost)
            for v in _walk_from(seg, start, cost):
                if v.max_timestamp < ts:
                    continue
                try:
                    for rec in iter_records(seg.buf, v):
                        if rec.timestamp >= ts:
                            return Hit(rec.offset, seg, v, rec.timestamp, cost)
                except RecordError as e:
                    cost.notes.append(f"records of the batch at byte {v.position} cannot be read ({e}); skipped")
    raise SeekError(f"no record has a timestamp at or after {ts} ({_range(part)})")


def _largest_timestamp(seg: Segment, active: bool, cost: Cost) -> int | None:
    """The segment's largest timestamp. A closed segment's time index ends with it (an entry is added at
    roll). The active segment's index lags what was appended since its last entry, so the batches after
    the last offset-index entry are walked too. A time index that fails its sanity check is not used."""
    largest: int | None = None
    start = 0
    try:
        buf, size = open_readonly(seg.path_with(".timeindex"))
        n = size // TIME_ENTRY.size
        zero_at = zero_tail_start(buf, TIME_ENTRY.size)
        n = zero_at if zero_at is not None else n
        if n and time_index_sanity(buf[: n * TIME_ENTRY.size], seg.base_offset) is None:
            cost.index_entries_read += 1
            largest = TIME_ENTRY.unpack_from(buf, (n - 1) * TIME_ENTRY.size)[0]
            if not active:
                return largest
            start = _index_position(seg, 2**62, cost)
    except OSError:
        pass
    for v in _walk_from(seg, start, cost):
        largest = v.max_timestamp if largest is None else max(largest, v.max_timestamp)
    return largest


def _time_start(seg: Segment, ts: int, cost: Cost) -> int:
    label = seg.path_with(".timeindex").name
    try:
        found = _floor_entry(seg.path_with(".timeindex"), TIME_ENTRY.size, TIME_ENTRY.unpack_from, ts, cost, label)
    except _IndexUnusable as e:
        cost.notes.append(f"{e}: walked {seg.log_path.name} from its start")
        return 0
    offset = seg.base_offset if found is None else seg.base_offset + found[1][1]
    return _index_position(seg, offset, cost)


def _range(part: Partition) -> str:
    """'the partition holds offsets A..B': the first batch of the first segment that has one, and the
    last valid batch of the last such segment, found from its index without walking the partition."""
    first = last = None
    scratch = Cost()
    for seg in part.segments:
        with seg:
            v = next(seg.walk(), None)
            if v is not None:
                first = v.first_offset
                break
    for seg in reversed(part.segments):
        with seg:
            for v in seg.walk(start=_index_position(seg, 2**62, scratch)):
                last = v.last_offset
        if last is not None:
            break
    if first is None or last is None:
        return "the partition holds no valid batch"
    return f"the partition holds offsets {first}..{last}"
