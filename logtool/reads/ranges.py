"""Reading the records of an offset range of a partition, as `logtool dump` shows them.

`plan` turns the user's bounds into an inclusive offset range and a place to start reading: times become
offsets the way Kafka's ListOffsets answers them (`seek_timestamp`), the start is found with `seek_offset`.
`read_range` then walks the segments from there (the walker decides every batch boundary and where each
valid prefix ends) and yields events: batches with their records in range, the damage that stopped a
segment, a segment that could not be opened (the next ones are read), with salvage the byte ranges skipped
to reach the next batch that validates, and, for text read as kafka-dump-log reads, where that tool throws
in a batch's records. Memory stays flat: one batch's records are held at a time.
"""
from __future__ import annotations

import struct
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from logtool.findings import CRC_MISMATCH, OFFSET_NOT_INCREASING, UNREADABLE, Finding, finding
from logtool.format import Bytes, kernel
from logtool.format.batch import LOG_OVERHEAD, BatchView, FrameStop, kafka_iterator_step
from logtool.format.kraft import control_value
from logtool.format.records import (ControlRecord, Record, RecordError, batch_payload, iter_records, parse_control,
                                    payload_records)
from logtool.store.layout import is_records_file
from logtool.store.partition import Partition
from logtool.reads.decoders import PIECE
from logtool.reads.salvage import next_batch
from logtool.rules.offsets import offsets_go_back
from logtool.store.seek import SeekError, seek_offset, seek_timestamp
from logtool.store.segment import Segment, WalkOutcome

_INT32 = struct.Struct(">i")


@dataclass(slots=True)
class RangePlan:
    first: int | None  # inclusive offset bounds; None: unbounded
    last: int | None
    segment: int | None  # index of the segment to start in; None: nothing to read
    position: int = 0  # where to start walking in it
    notes: list[str] = field(default_factory=list)  # why the range is empty or shorter than asked
    seek_bytes: int = 0  # log bytes the seeks read

    def describe(self) -> str:
        lo = "the log start" if self.first is None else f"offset {self.first}"
        hi = "the log end" if self.last is None else f"offset {self.last}"
        return f"{lo} to {hi}"


def plan_range(part: Partition, from_offset: int | None = None, to_offset: int | None = None,
         from_time: int | None = None, to_time: int | None = None) -> RangePlan:
    """The offset range and start position for these bounds (all inclusive, any may be None)."""
    p = RangePlan(from_offset, to_offset, 0 if part.segments else None)
    if from_time is not None:
        try:
            hit = seek_timestamp(part, from_time)
            p.seek_bytes += hit.cost.log_bytes_read
            p.first = hit.offset if p.first is None else max(p.first, hit.offset)
        except SeekError as e:
            p.notes.append(str(e))
            p.segment = None
    if to_time is not None:
        try:
            # The first record after the end time, as ListOffsets finds it: the range ends just before it.
            hit = seek_timestamp(part, to_time + 1)
            p.seek_bytes += hit.cost.log_bytes_read
            p.last = hit.offset - 1 if p.last is None else min(p.last, hit.offset - 1)
        except SeekError:
            pass  # no record is later than the end time: the range runs to the log end
    if p.first is not None and p.last is not None and p.first > p.last:
        p.notes.append(f"the range is empty: it starts at offset {p.first} and ends at offset {p.last}")
        p.segment = None
    if p.segment is not None and p.first is not None:
        _start_at(part, p, p.first)
    return p


def _start_at(part: Partition, p: RangePlan, first: int) -> None:
    i = part.floor_segment(first)
    if i is None:
        return  # the range starts before the first segment: read from the log start
    p.segment = i
    try:
        hit = seek_offset(part, first)
    except SeekError as e:
        # Beyond the valid records: read the segment where the offset would be, to say whether damage
        # holds it (and, with salvage, to look past that damage).
        p.notes.append(str(e))
        return
    except OSError:
        return  # a segment the seek opened cannot be read: reading segment i from its start reports it
    p.seek_bytes += hit.cost.log_bytes_read
    if hit.segment is part.segments[i]:
        p.position = hit.batch.position
    # Otherwise the offset lies past the valid records of segment i, in a gap or in damage: reading
    # segment i from its start tells which, and reports the damage if it is that.


class Control(NamedTuple):
    marker: ControlRecord  # the type (and a transaction marker's coordinator epoch)
    data: dict | None  # a KRaft control record's decoded value, None for transaction markers


class SegmentStart(NamedTuple):
    segment: Segment


class PackedRecords:
    """Every record of a whole v2 data batch, kept as the batch's uncompressed bytes, which the compiled
    kernel has found to decode: renderers hand them to the kernel without a Python object per record.
    Iterating gives the Records the reference decodes."""

    __slots__ = ("view", "payload", "count")

    def __init__(self, view: BatchView, payload: bytes, count: int) -> None:
        self.view, self.payload, self.count = view, payload, count

    def __len__(self) -> int:
        return self.count

    def __iter__(self):
        return payload_records(self.payload, self.view)

    def rendered(self, form: str, modes: tuple[int | None, int | None], *rest):
        """The records as the kernel renders them: `form` "text" (render_text: the lines, the last offset,
        the gaps; `rest` is the offset before) or "json" (render_json: the objects as ASCII bytes; `rest` the
        batch part and whether the batch is unverified). None where the kernel does not render them: a
        decoder it does not know (a mode of None), or bytes only the decoder words."""
        fast = kernel.active()
        key_mode, value_mode = modes
        if fast is None or key_mode is None or value_mode is None:
            return None
        v = self.view
        assert v.base_offset is not None  # packed batches are v2 ones (_packed), whose headers hold it
        render = fast.render_text if form == "text" else fast.render_json
        return render(self.payload, self.count, v.base_offset, v.first_timestamp,
                      v.max_timestamp if v.attributes & 0x08 else None, v.base_sequence, v.timestamp_type, key_mode,
                      value_mode, PIECE, *rest)


def _packed(fast: kernel.Kernel, buf: Bytes, view: BatchView) -> PackedRecords | None:
    """The batch's records packed, where the kernel reads them all as the reference would; None otherwise."""
    try:
        # A copy, as the reference's decode makes: a view into the mapping would keep it from being closed.
        payload = bytes(batch_payload(buf, view))
    except RecordError:
        return None
    n = kernel.clean_count(fast, payload, view, checks=False)
    return PackedRecords(view, payload, n) if n >= 0 else None


class BatchRead(NamedTuple):
    segment: Segment
    view: BatchView
    records: list[Record] | PackedRecords | None  # the records in range; None when only batches are read
    controls: list[Control] | None  # one per record, for control batches
    problem: Finding | None  # why the records stop short, when they cannot all be decoded
    continued: bool = False  # more records of the batch of the event before (a batch is read in chunks)
    unverified: bool = False  # the batch's CRC fails: its records as its bytes read, any of them may be wrong


class Damage(NamedTuple):
    segment: Segment
    finding: Finding  # what the walker stopped at; its position is where reading stopped
    bytes_following: int
    kafka_ends_quietly: bool = False  # kafka-dump-log's iterator ends here without an exception
    kafka_throws: bool = False  # ... or its iterator throws here, ending that tool's run


class Anomaly(NamedTuple):
    segment: Segment
    finding: Finding  # damage Kafka's recovery keeps (offsets going backwards): reading goes on


class Skipped(NamedTuple):
    segment: Segment
    start: int
    end: int  # where a valid batch starts again, or the end of the file
    resumed: bool  # a valid batch starts at `end`


class Unreadable(NamedTuple):
    """A segment that could not be opened: its records are left out, and the next segments are read."""
    segment: Segment
    finding: Finding  # UNREADABLE, saying why
    size: int | None  # its bytes, as the directory listing gives them


class KafkaRecordsStop(NamedTuple):
    """Text read as kafka-dump-log reads (`past_crc` without salvage): the records of the batch before could not
    all be read, and that tool throws there, its output of the file ending; logtool reads no further in the
    file either. A v0/v1 message that ends inside its own value (a length field made smaller) is the
    exception: its record is the message itself, whose key and value sizes the tool reads from their fields
    and prints; then, printing keys and values, it throws (its line cut after the sizes), and without them it
    reads on with the next batch."""
    segment: Segment
    view: BatchView
    legacy_sizes: tuple[int, int] | None  # the key and value sizes it prints, or None: none of the record's line
    reading_goes_on: bool


Event = SegmentStart | BatchRead | Damage | Anomaly | Skipped | Unreadable | KafkaRecordsStop


@dataclass(slots=True)
class Stats:
    segments_read: int = 0
    log_bytes_walked: int = 0  # bytes of the batches the walker passed, in range or not
    records: int = 0
    batches: int = 0
    damaged: bool = False  # a walk stopped before the end of a file, or records could not be decoded
    unreadable: int = 0  # segments that could not be opened


@dataclass(frozen=True, slots=True)
class _Reading:
    """How read_range reads: its inclusive offset bounds, and the options it was given."""
    first: int
    last: int
    stats: Stats
    salvage: bool
    batches_only: bool
    limit: int | None
    past_crc: bool
    print_data: bool

    @property
    def as_kafka(self) -> bool:
        """Text that stops where kafka-dump-log's tool stops (with salvage, logtool reads on)."""
        return self.past_crc and not self.salvage


def read_range(part: Partition, p: RangePlan, stats: Stats, salvage: bool = False, batches_only: bool = False,
               limit: int | None = None, past_crc: bool = False, print_data: bool = False) -> Iterator[Event]:
    """Events in log order for the range of `p`; `limit` caps records (batches with `batches_only`).
    After damage: `salvage` reads on at the next batch that validates; `past_crc` reads on past a batch
    whose CRC alone fails, as kafka-dump-log does (its records marked unverified), and stops a file where
    that tool throws in a batch's records; `print_data`: the text shows keys and values (kafka-dump-log's
    --print-data-log), which decides where that tool throws. A segment that cannot be opened is reported
    (Unreadable) and the next ones are read."""
    if p.segment is None:
        return
    how = _Reading(p.first if p.first is not None else -(2**63), p.last if p.last is not None else 2**63, stats,
                   salvage, batches_only, limit, past_crc, print_data)
    active = part.segments[-1]
    for seg in part.segments[p.segment :]:
        try:
            seg.open()
        except OSError as e:
            if seg.base_offset > how.last:
                return  # its name says it starts after the range
            stats.unreadable += 1
            yield SegmentStart(seg)  # kafka-dump-log prints the file's header lines before it opens the file
            yield _unreadable(part, seg, e)
            continue
        with seg:
            stats.segments_read += 1
            position = p.position if seg is part.segments[p.segment] else 0
            if (yield from _SegmentRead(seg, seg is active, how).events(position)):
                return


def _unreadable(part: Partition, seg: Segment, e: OSError) -> Unreadable:
    name = seg.log_path.name
    size = part.size_of(name)
    return Unreadable(seg, finding(UNREADABLE, f"cannot read {name}: {e.strerror or e}", name, 0, seg.base_offset),
                      size if size >= 0 else None)


class _SegmentRead:
    """read_range's reading of one open segment: its events from a position on."""

    def __init__(self, seg: Segment, active: bool, how: _Reading) -> None:
        self.seg, self.active, self.how = seg, active, how
        self.started = False  # its SegmentStart was given
        self.prev_last: int | None = None  # the last offset of the batch before
        self.range_ends = False  # the range ends in the segment: nothing after it is read

    def events(self, position: int) -> Generator[Event, None, bool]:
        """The events of the segment from `position`; returns True when the range ends in it."""
        at: int | None = position
        while at is not None:
            walk = WalkOutcome(self.seg.size)
            if (yield from self._valid_prefix(walk, at)):
                return self.range_ends
            at = None if walk.stop is None else (yield from self._past_damage(walk, walk.stop))
        if not self.started:  # a segment the range passes through is announced even when it adds nothing
            yield SegmentStart(self.seg)
        return self.range_ends

    def _start(self) -> Iterator[Event]:
        if not self.started:
            self.started = True
            yield SegmentStart(self.seg)

    def _valid_prefix(self, walk: WalkOutcome, position: int) -> Generator[Event, None, bool]:
        """The batches in range of the valid prefix walked from `position`; returns True where the reading of the
        segment ends among them (`range_ends` says whether the range does)."""
        seg, how, stats = self.seg, self.how, self.how.stats
        for view in seg.walk(walk, start=position):
            stats.log_bytes_walked += view.size
            backwards = offsets_go_back(self.prev_last, view)
            self.prev_last = view.last_offset
            base = view.first_offset
            if base > how.last:
                self.range_ends = True
                return True
            if view.last_offset < how.first:
                continue
            yield from self._start()
            if backwards is not None:
                stats.damaged = True
                yield Anomaly(seg, finding(OFFSET_NOT_INCREASING, backwards, seg.log_path.name,
                                           view.position, view.base_offset))
            if not (yield from _batch_events(seg, view, how)):
                return True
            # The range ends in this batch: what lies after it (damage too) is not its business.
            if _limit_reached(how) or (view.last_offset >= how.last and backwards is None):
                self.range_ends = True
                return True
        return False

    def _past_damage(self, walk: WalkOutcome, stop: FrameStop) -> Generator[Event, None, int | None]:
        """The damage the walk stopped at (`stop`), and what is read past it: with salvage, from the next batch
        that validates; read as kafka-dump-log reads (`past_crc`), a batch whose CRC alone fails, marked
        unverified. Returns where to walk on from, or None where the reading of the segment ends."""
        seg, how = self.seg, self.how
        how.stats.damaged = True
        yield from self._start()
        step = kafka_iterator_step(seg.buf, stop.position, seg.size)
        name = seg.log_path.name
        problem = walk.stop_finding(name, self.active, is_records_file(name))
        assert problem is not None  # the walk stopped
        yield Damage(seg, problem, walk.size - stop.position, step is None, isinstance(step, str))
        # Its framing holds, only its checksum fails (a flipped bit, most often).
        bad = walk.stop_view if stop.reason == CRC_MISMATCH.name else None
        if bad is not None and how.salvage and _swallows_a_batch(seg, bad):
            bad = None  # its length is as damaged as the rest: salvage reads the batch inside it
        if not (how.salvage or (bad is not None and how.past_crc)):
            return None
        skip_from = stop.position
        if bad is not None:
            if (yield from self._unverified(bad)):
                return None
            skip_from = bad.position + bad.size
            if not how.salvage:  # as kafka-dump-log: on with the batch that follows it
                return skip_from
        resume = next_batch(seg.buf, max(skip_from, stop.position + 1), seg.size, seg.base_offset)
        end = seg.size if resume is None else resume
        if end > skip_from:
            yield Skipped(seg, skip_from, end, resume is not None)
        return resume

    def _unverified(self, bad: BatchView) -> Generator[Event, None, bool]:
        """A batch whose CRC alone fails, read for its records in range as its bytes read, marked unverified;
        returns True where the reading of the segment ends in it."""
        how = self.how
        if not _in_range(bad, how.first, how.last):
            return False
        if not (yield from _batch_events(self.seg, bad, how, unverified=True)):
            return True
        if _limit_reached(how) or bad.last_offset >= how.last:
            self.range_ends = True
            return True
        return False


def _kafka_records_stop(seg: Segment, view: BatchView, print_data: bool) -> KafkaRecordsStop:
    """What kafka-dump-log does at a batch whose records could not all be read (see KafkaRecordsStop)."""
    sizes = _legacy_sizes(seg.buf, view) if view.is_legacy and view.codec == 0 else None
    return KafkaRecordsStop(seg, view, sizes, sizes is not None and not print_data)


def _legacy_sizes(buf: Bytes, view: BatchView) -> tuple[int, int] | None:
    """The key and value sizes Kafka's LegacyRecord reads from a v0/v1 message's fields, wherever they point;
    None where a size field lies past the message's end (reading it throws)."""
    end = view.position + view.size
    # After the log overhead: crc 4, magic 1, attributes 1, and a timestamp of 8 unless the magic is 0.
    key_at = view.position + LOG_OVERHEAD + (6 if view.magic == 0 else 14)
    if key_at + 4 > end:
        return None
    key_size = _INT32.unpack_from(buf, key_at)[0]
    value_at = key_at + 4 + max(0, key_size)
    if value_at + 4 > end:
        return None
    return key_size, _INT32.unpack_from(buf, value_at)[0]


def _swallows_a_batch(seg: Segment, bad: BatchView) -> bool:
    """Whether a valid batch starts inside a batch whose CRC fails: its length field is no more trustworthy
    than the rest of it (a flipped bit there makes it cover the batches after it)."""
    inside = next_batch(seg.buf, bad.position + 1, seg.size, seg.base_offset)
    return inside is not None and inside < bad.position + bad.size


def _in_range(view: BatchView, first: int, last: int) -> bool:
    base = view.first_offset
    return base <= last and view.last_offset >= first


def _batch_events(seg: Segment, view: BatchView, how: _Reading,
                  unverified: bool = False) -> Generator[Event, None, bool]:
    """The batch (with `batches_only`) or its records in range, in chunks, counted in `stats`; and, read as
    kafka-dump-log reads, what that tool does where the records stop short. Returns False where the reading
    of the file ends in this batch."""
    stats = how.stats
    stats.batches += 1
    if how.batches_only:
        yield BatchRead(seg, view, None, None, None, unverified=unverified)
        return True
    room = None if how.limit is None else how.limit - stats.records
    problem = None
    for i, (records, controls, problem) in enumerate(_record_chunks(seg, view, how.first, how.last, room)):
        stats.records += len(records)
        stats.damaged |= problem is not None
        yield BatchRead(seg, view, records, controls, problem, continued=i > 0, unverified=unverified)
    if problem is None or not how.as_kafka:
        return True
    stop = _kafka_records_stop(seg, view, how.print_data)
    yield stop
    return stop.reading_goes_on


def _limit_reached(how: _Reading) -> bool:
    """`limit` caps records, or batches with `batches_only`."""
    stats = how.stats
    return how.limit is not None and (stats.batches if how.batches_only else stats.records) >= how.limit


# Records of one batch are handed on this many at a time: a batch can hold millions of tiny records.
RECORDS_PER_EVENT = 4096


def _record_chunks(seg: Segment, view: BatchView, first: int, last: int, room: int | None
                   ) -> Iterator[tuple[list[Record] | PackedRecords, list[Control] | None, Finding | None]]:
    """The records of `view` within [first, last] (at most `room`) in chunks, their control values in a
    control batch, and with the last chunk the finding that stopped decoding early, if one did. At least one
    chunk, empty when no record is in range."""
    whole = view.base_offset is not None and first <= view.base_offset and view.last_offset <= last
    if (whole and not view.is_control and view.count is not None and view.count <= RECORDS_PER_EVENT
            and (room is None or view.count <= room)):
        every = _whole_batch(seg, view)
        if every is not None:
            yield every, None, None
            return
    records: list[Record] = []
    controls: list[Control] | None = [] if view.is_control else None
    taken = 0
    try:
        for rec in iter_records(seg.buf, view):
            if rec.offset < first:
                continue
            if rec.offset > last or (room is not None and taken >= room):
                break
            if controls is not None:
                marker = parse_control(rec)
                controls.append(Control(marker, control_value(marker.type_id, rec.value)))
            records.append(rec)
            taken += 1
            if len(records) == RECORDS_PER_EVENT:
                yield records, controls, None
                records, controls = [], ([] if view.is_control else None)
    except RecordError as e:
        assert e.kind is not None  # iter_records and parse_control name the finding of every RecordError
        yield records, controls, finding(e.kind, str(e), seg.log_path.name, view.position, view.base_offset)
        return
    if records or taken == 0:
        yield records, controls, None


def _whole_batch(seg: Segment, view: BatchView) -> list[Record] | PackedRecords | None:
    """Every record of a batch, the common case kept cheap: packed where the kernel reads them all, else
    decoded; None where one cannot be decoded (the batch is then decoded again record by record, to keep
    the records before it)."""
    fast = kernel.active()
    if fast is not None and not view.is_legacy and (packed := _packed(fast, seg.buf, view)) is not None:
        return packed
    try:
        return list(iter_records(seg.buf, view))
    except RecordError:
        return None
