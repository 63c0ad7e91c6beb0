"""The kernel never takes what a lens would report. For every kind the segment lens, the offset and time index
lenses and the producer lens report batch by batch, and the record lens (the deep check) record by record
(their declarations, `PER_BATCH`, `TIME_PER_BATCH` and `PER_RECORD`, held here to the catalog's kinds each lens
names), a case built from batches kafka-python wrote, a few bytes edited: the kernel does not take the damaged batch (nor, in a
shallow check, the segment that holds it), the kernel path reports exactly what the pure path does, deep and
shallow, the finding among it; and where a bound of the lens's declaration (`PLAIN_RUN`, `INDEX_RUN`,
`TIME_INDEX_RUN`, `PRODUCER_RUN`, `RECORD_RUN`) or of the whole segment's (`SEGMENT`, which gathers them) is what makes the
kernel decline, a kernel that ignored that bound would lose the finding. Every bound has such a case. A lens
that comes to report a kind with no case here fails the suite; so does one that names a kind it does not
declare, or a declaration that gains a bound no case shows."""
from __future__ import annotations

import ast
import gzip
import inspect
import struct
import zlib
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import FunctionType, ModuleType
from typing import NamedTuple

import crc32c
import pytest

from fixtures.generator import (
    BatchSpec,
    EntryHeader,
    LogEntry,
    Producer,
    build_batches,
    iter_entry_headers,
    marker_batch,
    segment_file,
    write_partition,
)
from logtool import findings
from logtool.checks import index as index_lens
from logtool.checks import producers as producer_lens
from logtool.checks import records as records_lens
from logtool.checks import segment as segment_lens
from logtool.checks.segment import DEEP_SEGMENT, check_segment
from logtool.findings import (
    CONTROL_RECORD_INVALID,
    FIRST_OFFSET_ABOVE_NAME,
    FIRST_OFFSET_BELOW_NAME,
    INDEX_NOT_INCREASING,
    INDEX_WRONG_POSITION,
    INNER_CRC_MISMATCH,
    LEGACY_WRAPPER_UNREADABLE,
    OFFSET_DELTA_INVALID,
    OFFSET_NOT_INCREASING,
    OFFSET_OVERFLOW,
    PRODUCER_EPOCH_BACKWARDS,
    PRODUCER_SEQUENCE_DUPLICATE,
    PRODUCER_SEQUENCE_GAP,
    RECORD_COUNT_MISMATCH,
    RECORDS_UNREADABLE,
    TIMESTAMP_ABOVE_MAX,
    TIMEINDEX_WRONG_ENTRY,
    UNKNOWN_CODEC,
    UNKNOWN_MAGIC,
    Kind,
)
from logtool.format import kernel
from logtool.format import records as reader
from logtool.store.segment import Segment


class Lens(NamedTuple):
    kinds: tuple[Kind, ...]  # the kinds it declares it reports as the batches come
    bounds: tuple  # its declaration of the bounds the kernel keeps to for it
    takes: str  # the kernel function that takes what the lens would otherwise read itself
    # where it names its kinds: a class's methods, modules' functions, or functions
    named_in: tuple[type | ModuleType | FunctionType, ...]


LENSES = {
    "segment": Lens(segment_lens.PER_BATCH, segment_lens.PLAIN_RUN, "plain_run", (segment_lens._BatchRules,)),
    "index": Lens(index_lens.PER_BATCH, index_lens.INDEX_RUN, "index_run", (index_lens.OffsetIndexCheck,)),
    # The time index lens is summed up only with the whole segment it indexes, in a shallow check.
    "time index": Lens(index_lens.TIME_PER_BATCH, index_lens.TIME_INDEX_RUN, "clean_segment",
                       (index_lens.TimeIndexCheck,)),
    # ... and so is the producer lens, whose feed names its kinds through `follows`.
    "producers": Lens(producer_lens.PER_BATCH, producer_lens.PRODUCER_RUN, "clean_segment",
                      (producer_lens.ProducerCheck, producer_lens.follows)),
    # check_records reports the kinds it names and those of the RecordErrors the reader raises.
    "records": Lens(records_lens.PER_RECORD, records_lens.RECORD_RUN, "clean_records", (records_lens, reader)),
}
NOT_PER_BATCH = ("__init__", "finish")  # a lens class's methods that run once, before or after the batches


def _named_kinds(where: type | ModuleType | FunctionType) -> set[str]:
    """The catalog's kinds named in a lens class's methods that run batch by batch, in a module's functions,
    or in a function."""
    kinds = {name for name, value in vars(findings).items() if isinstance(value, Kind)}
    tree = ast.parse(inspect.getsource(where))
    if isinstance(where, FunctionType):
        functions = [f for f in tree.body if isinstance(f, ast.FunctionDef)]
    elif isinstance(where, type):
        body = tree.body[0]
        assert isinstance(body, ast.ClassDef)
        functions = [f for f in body.body if isinstance(f, ast.FunctionDef) and f.name not in NOT_PER_BATCH]
    else:
        functions = [f for f in tree.body if isinstance(f, ast.FunctionDef)]
    return {node.id for f in functions for node in ast.walk(f) if isinstance(node, ast.Name) and node.id in kinds}


@pytest.mark.parametrize("lens", LENSES)
def test_a_lens_declares_every_kind_it_reports_batch_by_batch(lens):
    spec = LENSES[lens]
    assert all(kind in findings.KINDS for kind in spec.kinds)
    assert set().union(*map(_named_kinds, spec.named_in)) == {kind.name for kind in spec.kinds}


# ---- the cases: batches kafka-python wrote, a few bytes edited ----------------------------------------------

BATCHES, MIDDLE = 12, 6  # plain batches on both sides of the one a case damages
V2 = BatchSpec(batches=BATCHES, records_per_batch=3, value_bytes=(20, 40))
V1_WRAPPERS = BatchSpec(magic=1, codec="gzip", batches=4, records_per_batch=3, value_bytes=(20, 40))
V1_MESSAGES = BatchSpec(magic=1, batches=4, records_per_batch=1, value_bytes=(20, 40))


def _written(tmp: Path, *specs: BatchSpec, first: int = 0) -> tuple[Path, list[EntryHeader]]:
    """A one-segment partition of the specs' batches in turn, an offset index entry for each batch but the
    first (index interval 0): its .log and its entries' headers."""
    return _write(tmp, _entries(*specs, first=first), first)


def _entries(*specs: BatchSpec, first: int = 0) -> list[LogEntry]:
    entries: list[LogEntry] = []
    for spec in specs:
        entries += build_batches(spec, entries[-1].next_offset if entries else first)
    return entries


def _write(tmp: Path, entries: list[LogEntry], first: int = 0) -> tuple[Path, list[EntryHeader]]:
    part = write_partition(tmp, "guard", 0, entries, index_interval_bytes=0)
    log = segment_file(part.path, first, ".log")
    return log, list(iter_entry_headers(log.read_bytes()))


def _edit(path: Path, at: int, new: bytes) -> None:
    data = bytearray(path.read_bytes())
    data[at : at + len(new)] = new
    path.write_bytes(bytes(data))


def _i32(n: int) -> bytes:
    return n.to_bytes(4, "big", signed=True)


def _i64(n: int) -> bytes:
    return n.to_bytes(8, "big", signed=True)


def _v2_crc(log: Path, h: EntryHeader) -> None:
    """The v2 batch's CRC-32C (over its attributes to its end) made right again after an edit."""
    data = log.read_bytes()
    _edit(log, h.position + 17, crc32c.crc32c(data[h.position + 21 : h.position + h.size]).to_bytes(4, "big"))


def _v1_crc(log: Path, h: EntryHeader) -> None:
    """The v1 message's CRC-32 (over its magic to its end) made right again after an edit."""
    data = log.read_bytes()
    _edit(log, h.position + 12, zlib.crc32(data[h.position + 16 : h.position + h.size]).to_bytes(4, "big"))


def _entry(log: Path, i: int, offset: int | None = None, position: int | None = None) -> None:
    """Index entry i (it names batch i + 1) made to name another offset or position."""
    index = log.with_suffix(".index")
    base = int(log.stem)
    if offset is not None:
        _edit(index, 8 * i, _i32(offset - base))
    if position is not None:
        _edit(index, 8 * i + 4, _i32(position))


def _renamed(log: Path, base: int) -> Path:
    """The segment's files named after another base offset."""
    for suffix in (".log", ".index", ".timeindex"):
        log.with_suffix(suffix).rename(log.with_name(f"{base:020d}{suffix}"))
    return log.with_name(f"{base:020d}.log")


def _base_goes_back(tmp: Path) -> tuple[Path, int]:
    log, h = _written(tmp, V2)
    _edit(log, h[MIDDLE].position, _i64(h[MIDDLE - 1].offset))  # the base offset: no CRC covers it
    return log, h[MIDDLE].position


def _last_below_base(tmp: Path) -> tuple[Path, int]:
    log, h = _written(tmp, V2)
    _edit(log, h[MIDDLE].position + 23, _i32(-1))  # lastOffsetDelta
    _v2_crc(log, h[MIDDLE])
    return log, h[MIDDLE].position


def _past_the_base_s_reach(tmp: Path) -> tuple[Path, int]:
    log, h = _written(tmp, V2)
    _edit(log, h[-1].position, _i64(2**31))
    return log, h[-1].position


def _magic(tmp: Path) -> tuple[Path, int]:
    log, h = _written(tmp, V2)
    _edit(log, h[MIDDLE].position + 16, bytes([3]))  # the magic byte: no v2 CRC covers it
    return log, h[MIDDLE].position


def _v2_codec(tmp: Path) -> tuple[Path, int]:
    log, h = _written(tmp, V2)
    _edit(log, h[MIDDLE].position + 22, bytes([5]))  # the attributes' low byte: codec id 5
    _v2_crc(log, h[MIDDLE])
    return log, h[MIDDLE].position


def _v1_codec(tmp: Path) -> tuple[Path, int]:
    log, h = _written(tmp, V1_MESSAGES, V2)
    _edit(log, h[2].position + 17, bytes([4]))  # zstd, which no v1 message may name
    _v1_crc(log, h[2])
    return log, h[2].position


def _wrapper_unreadable(tmp: Path) -> tuple[Path, int]:
    log, h = _written(tmp, V1_WRAPPERS, V2)
    w = h[2]
    data = log.read_bytes()
    key_length = int.from_bytes(data[w.position + 26 : w.position + 30], "big", signed=True)
    value_at = w.position + 34 + max(key_length, 0)
    _edit(log, value_at, bytes(w.position + w.size - value_at))  # the gzip stream, zeroed
    _v1_crc(log, w)
    return log, w.position


def _first_below_name(tmp: Path) -> tuple[Path, int]:
    log, h = _written(tmp, V2, first=10)
    return _renamed(log, 11), h[0].position


def _first_above_name(tmp: Path) -> tuple[Path, int]:
    log, h = _written(tmp, V2, first=10)
    return _renamed(log, 9), h[0].position


def _entry_off_a_batch_start(tmp: Path) -> tuple[Path, int]:
    log, h = _written(tmp, V2)
    _entry(log, MIDDLE - 1, position=h[MIDDLE].position - 1)
    return log, h[MIDDLE].position


def _entry_in_the_batch_before(tmp: Path) -> tuple[Path, int]:
    """An offset at or above its batch's first, yet held by the batch before: the batch reaches back into it."""
    log, h = _written(tmp, V2)
    _edit(log, h[MIDDLE].position, _i64(h[MIDDLE - 1].offset + 1))
    _entry(log, MIDDLE - 2, offset=h[MIDDLE - 1].offset)  # the entry before names its batch's first offset,
    _entry(log, MIDDLE - 1, offset=h[MIDDLE - 1].offset + 1)  # so that this one, the next batch's, follows it
    return log, h[MIDDLE].position


def _entry_below_its_batch(tmp: Path) -> tuple[Path, int]:
    log, h = _written(tmp, replace(V2, gaps={MIDDLE: 5}))  # offsets a compaction removed
    _entry(log, MIDDLE - 1, offset=h[MIDDLE].offset - 1)
    return log, h[MIDDLE].position


def _entry_not_above_the_next(tmp: Path) -> tuple[Path, int]:
    log, h = _written(tmp, V2)
    _entry(log, MIDDLE - 1, offset=h[MIDDLE + 1].last_offset)  # past its batch (allowed), as far as the next
    return log, h[MIDDLE].position


def _time_entry(log: Path, i: int, timestamp: int | None = None, offset: int | None = None) -> None:
    """Time index entry i (it names batch i + 1) made to say another timestamp or offset."""
    times = log.with_suffix(".timeindex")
    if timestamp is not None:
        _edit(times, 12 * i, _i64(timestamp))
    if offset is not None:
        _edit(times, 12 * i + 8, _i32(offset - int(log.stem)))


def _time_entry_in_no_batch(tmp: Path) -> tuple[Path, int]:
    log, h = _written(tmp, replace(V2, gaps={MIDDLE: 5}))  # offsets a compaction removed
    _time_entry(log, MIDDLE - 1, offset=h[MIDDLE].offset - 1)
    return log, h[MIDDLE].position


def _time_not_the_max(tmp: Path) -> tuple[Path, int]:
    log, h = _written(tmp, V2)
    _time_entry(log, MIDDLE - 1, timestamp=h[MIDDLE].max_timestamp + 1)
    return log, h[MIDDLE].position


def _time_entry_repeated(tmp: Path) -> tuple[Path, int]:
    log, h = _written(tmp, V2)
    _time_entry(log, MIDDLE - 1, timestamp=h[MIDDLE - 1].max_timestamp, offset=h[MIDDLE - 1].last_offset)
    return log, h[MIDDLE - 1].position


def _last_entry_past_the_log(tmp: Path) -> tuple[Path, int]:
    log, h = _written(tmp, V2)
    _entry(log, len(h) - 2, offset=h[-1].last_offset + 1)
    return log, h[-1].position


def _producer_edit(tmp: Path, at: int, value: bytes) -> tuple[Path, int]:
    """An idempotent producer's batches, the middle one's header edited `at` bytes in (its CRC made right)."""
    log, h = _written(tmp, replace(V2, producer=Producer(7, producer_epoch=3)))
    _edit(log, h[MIDDLE].position + at, value)
    _v2_crc(log, h[MIDDLE])
    return log, h[MIDDLE].position


def _producer_epoch_back(tmp: Path) -> tuple[Path, int]:
    return _producer_edit(tmp, 51, (2).to_bytes(2, "big"))  # producerEpoch: one below the batch before's


def _sequence_ahead(tmp: Path) -> tuple[Path, int]:
    return _producer_edit(tmp, 53, _i32(MIDDLE * V2.records_per_batch + 1))  # baseSequence: one past the next


def _sequence_again(tmp: Path) -> tuple[Path, int]:
    return _producer_edit(tmp, 53, _i32(MIDDLE * V2.records_per_batch - 1))  # baseSequence: the last one again


# The record lens's cases: a v2 batch's records (V2's: three, at offset deltas 0, 1, 2 and 10 ms apart, the
# batch's max timestamp the last one's), or the inner messages of a legacy wrapper, or a transaction marker.

V2_RECORDS_AT = 61  # a v2 batch's records follow its header
COUNT_AT = 57  # the header's recordsCount


def _zigzag(n: int) -> bytes:
    """A varint of one byte (a record's framing in these batches has no longer one)."""
    u = n << 1 if n >= 0 else (-n << 1) - 1
    assert u < 0x80
    return bytes([u])


def _records(log: Path, h: EntryHeader) -> list[int]:
    """Where each record of the uncompressed v2 batch at `h` starts. A record is its length, its attributes,
    its timestamp delta (+2), its offset delta (+3), its key's length (+4) and the rest."""
    data = log.read_bytes()
    at, end, starts = h.position + V2_RECORDS_AT, h.position + h.size, []
    while at < end:
        assert data[at] < 0x80
        starts.append(at)
        at += 1 + data[at] // 2
    return starts


def _record_edit(tmp: Path, record: int, field: int, value: int) -> tuple[Path, int]:
    """The middle batch, one byte varint of one of its records (`field` bytes in) set to `value`."""
    log, h = _written(tmp, V2)
    _edit(log, _records(log, h[MIDDLE])[record] + field, _zigzag(value))
    _v2_crc(log, h[MIDDLE])
    return log, h[MIDDLE].position


def _offset_repeated(tmp: Path) -> tuple[Path, int]:
    return _record_edit(tmp, 1, 3, 0)  # the second record's offset delta: the first's


def _offset_past_the_last(tmp: Path) -> tuple[Path, int]:
    return _record_edit(tmp, 2, 3, 3)  # the last record's: one past the batch's last offset delta


def _timestamp_above_the_max(tmp: Path) -> tuple[Path, int]:
    return _record_edit(tmp, 2, 2, 21)  # the last record's timestamp delta: 1 ms past the batch's max


def _key_past_its_record(tmp: Path) -> tuple[Path, int]:
    return _record_edit(tmp, 1, 4, 60)  # the second record's key length: longer than the record


def _record_past_the_payload(tmp: Path) -> tuple[Path, int]:
    log, h = _written(tmp, V2)
    last = _records(log, h[MIDDLE])[-1]
    _edit(log, last, _zigzag(log.read_bytes()[last] // 2 + 1))  # the last record's length, one more
    _v2_crc(log, h[MIDDLE])
    return log, h[MIDDLE].position


def _count(tmp: Path, more: int) -> tuple[Path, int]:
    log, h = _written(tmp, V2)
    _edit(log, h[MIDDLE].position + COUNT_AT, _i32(V2.records_per_batch + more))
    _v2_crc(log, h[MIDDLE])
    return log, h[MIDDLE].position


def _more_records_than_offsets(tmp: Path) -> tuple[Path, int]:
    """The records from one below the batch's base offset: increasing, none past its last, one too many."""
    log, h = _written(tmp, V2)
    b = h[MIDDLE]
    _edit(log, b.position, _i64(b.offset + 1))  # the base offset one up (no CRC covers it),
    _edit(log, b.position + 23, _i32(b.last_offset - b.offset - 1))  # the last offset delta one down: the same last
    for i, at in enumerate(_records(log, b)):
        _edit(log, at + 3, _zigzag(i - 1))
    _v2_crc(log, b)
    return log, b.position


def _rewrapped(entry: LogEntry, edit: Callable[[bytearray, list[int]], None]) -> LogEntry:
    """A v1 gzip wrapper whose inner messages `edit` changes (it is given them and where each starts), the
    wrapper's value compressed again, its length and CRC made right."""
    data = entry.data
    value_at = 34 + max(struct.unpack_from(">i", data, 26)[0], 0)  # past the key
    inner = bytearray(gzip.decompress(data[value_at:]))
    starts, at = [], 0
    while at < len(inner):
        starts.append(at)
        at += 12 + struct.unpack_from(">i", inner, at + 8)[0]
    edit(inner, starts)
    value = gzip.compress(bytes(inner), mtime=0)
    body = data[16 : value_at - 4] + _i32(len(value)) + value  # magic, attributes, timestamp, key, value
    return LogEntry(data[:8] + _i32(4 + len(body)) + zlib.crc32(body).to_bytes(4, "big") + body, entry.first_offset)


def _wrapper_edited(tmp: Path, edit: Callable[[bytearray, list[int]], None]) -> tuple[Path, int]:
    """The middle one of four v1 gzip wrappers (their times stamped as a broker would: nothing else to report)
    edited, plain v2 batches after them."""
    entries = _entries(replace(V1_WRAPPERS, stamp_wrapper_time=True), V2)
    entries[2] = _rewrapped(entries[2], edit)
    log, h = _write(tmp, entries)
    return log, h[2].position


def _inner_value_edited(inner: bytearray, starts: list[int]) -> None:
    inner[starts[2] - 1] ^= 1  # the second message's value's last byte; its CRC left as it was


def _inner_compressed(inner: bytearray, starts: list[int]) -> None:
    last = starts[-1]
    inner[last + 17] |= 1  # the last message's attributes: gzip; its CRC made right
    inner[last + 12 : last + 16] = zlib.crc32(bytes(inner[last + 16 :])).to_bytes(4, "big")


def _marker_second_record(tmp: Path) -> tuple[Path, int]:
    """A transaction marker, between transactional batches and plain ones, with a second record: its own
    again at the next offset, the control key's version negative (the walker reads a marker's first record
    alone, the record lens every one)."""
    producer = Producer(7, transactional=True)
    entries = _entries(replace(V2, batches=MIDDLE, producer=producer))
    at = entries[-1].next_offset
    marker = bytearray(marker_batch(producer, at, True, entries[-1].header.max_timestamp).data)
    record = bytearray(marker[V2_RECORDS_AT:])
    record[3:4] = _zigzag(1)  # its offset delta
    record[5:7] = _i32(-1)[2:]  # the key's version (past the record's length, attributes, deltas, key length)
    marker += record
    marker[8:12] = _i32(len(marker) - 12)
    marker[23:27] = _i32(1)  # the last offset delta
    marker[COUNT_AT : COUNT_AT + 4] = _i32(2)
    marker[17:21] = crc32c.crc32c(bytes(marker[21:])).to_bytes(4, "big")
    entries += [LogEntry(bytes(marker), at)] + build_batches(V2, at + 2)
    log, h = _write(tmp, entries)
    return log, h[MIDDLE].position


class Case(NamedTuple):
    build: Callable[[Path], tuple[Path, int]]  # the segment's .log, and where the batch the kernel must not take is
    # The field of the lens's declaration the kernel declines it by; None: no bound of it, the lens keeps the batch
    # back (it offers the kernel no such batch) or its records do not read (the format's, the kernel's own).
    bound: str | None


CASES: dict[str, dict[Kind, dict[str, Case]]] = {
    "segment": {
        OFFSET_NOT_INCREASING: {"base offset goes back": Case(_base_goes_back, "increasing"),
                                "last offset below the base": Case(_last_below_base, "increasing")},
        OFFSET_OVERFLOW: {"past the base's reach": Case(_past_the_base_s_reach, "max_relative_offset")},
        UNKNOWN_MAGIC: {"magic 3": Case(_magic, "codecs")},
        UNKNOWN_CODEC: {"v2 codec 5": Case(_v2_codec, "codecs"),
                        "v1 zstd": Case(_v1_codec, None)},  # its view has no base offset: no run's
        LEGACY_WRAPPER_UNREADABLE: {"gzip stream zeroed": Case(_wrapper_unreadable, None)},
        FIRST_OFFSET_BELOW_NAME: {"named above": Case(_first_below_name, None)},  # a first batch: never offered
        FIRST_OFFSET_ABOVE_NAME: {"named below": Case(_first_above_name, None)},
    },
    "index": {
        INDEX_WRONG_POSITION: {"off a batch start": Case(_entry_off_a_batch_start, "at_batch_start"),
                               "in the batch before": Case(_entry_in_the_batch_before, "after_previous_batch"),
                               "below its batch": Case(_entry_below_its_batch, "within_batch")},
        INDEX_NOT_INCREASING: {"as far as the next": Case(_entry_not_above_the_next, "increasing")},
    },
    "time index": {
        TIMEINDEX_WRONG_ENTRY: {"in no batch": Case(_time_entry_in_no_batch, "entry_in_batch"),
                                "not the max": Case(_time_not_the_max, "time_is_max"),
                                "repeated": Case(_time_entry_repeated, "increasing")},
    },
    "producers": {
        PRODUCER_EPOCH_BACKWARDS: {"epoch one down": Case(_producer_epoch_back, "epochs_not_backwards")},
        PRODUCER_SEQUENCE_GAP: {"sequence one ahead": Case(_sequence_ahead, "sequences_follow_on")},
        PRODUCER_SEQUENCE_DUPLICATE: {"sequence again": Case(_sequence_again, "sequences_follow_on")},
    },
    "records": {
        OFFSET_DELTA_INVALID: {"offset repeated": Case(_offset_repeated, "offsets_increasing"),
                               "offset past the last": Case(_offset_past_the_last, "offsets_within_last")},
        TIMESTAMP_ABOVE_MAX: {"one above the max": Case(_timestamp_above_the_max, "times_within_max")},
        RECORD_COUNT_MISMATCH: {"more records than offsets": Case(_more_records_than_offsets, "count_within_span"),
                                "count one high": Case(lambda tmp: _count(tmp, 1), None),  # the payload ends early
                                "count one low": Case(lambda tmp: _count(tmp, -1), None)},  # or holds more
        RECORDS_UNREADABLE: {"record past the payload": Case(_record_past_the_payload, None),
                             "key past its record": Case(_key_past_its_record, None)},
        # legacy wrappers and control batches: never offered
        INNER_CRC_MISMATCH: {"inner value edited": Case(lambda t: _wrapper_edited(t, _inner_value_edited), None)},
        LEGACY_WRAPPER_UNREADABLE: {"inner message compressed": Case(lambda t: _wrapper_edited(t, _inner_compressed),
                                                                     None)},
        CONTROL_RECORD_INVALID: {"marker's second record": Case(_marker_second_record, None)},
    },
}

# The bounds the whole segment's declaration (SEGMENT) adds to the lenses' it gathers: a case of each, shallow.
WHOLE_SEGMENT: dict[str, tuple[Kind, Callable[[Path], tuple[Path, int]]]] = {
    "first_at_base": (FIRST_OFFSET_ABOVE_NAME, _first_above_name),
    "index_last_within_log": (INDEX_WRONG_POSITION, _last_entry_past_the_log),
}

# Every declared kind of each lens with each of its cases; a kind without one is a case of None, which fails.
GUARDED = [(lens, kind, name) for lens, spec in LENSES.items() for kind in spec.kinds
           for name in CASES[lens].get(kind) or [None]]
IDS = [f"{lens}-{kind.name}-{name}" for lens, kind, name in GUARDED]


def test_every_case_is_of_a_declared_kind():
    assert set(CASES) == set(LENSES)
    for lens, spec in LENSES.items():
        assert set(CASES[lens]) == set(spec.kinds), lens


def test_every_bound_of_a_declaration_has_a_case():
    for lens, spec in LENSES.items():
        bounds = {case.bound for cases in CASES[lens].values() for case in cases.values()} - {None}
        assert bounds == set(spec.bounds._fields), lens
    gathered = {_GATHERED_AS[lens]: spec.bounds for lens, spec in LENSES.items()}
    assert {field: getattr(DEEP_SEGMENT, field) for field in gathered} == gathered
    assert segment_lens.SEGMENT == DEEP_SEGMENT._replace(records=None)  # a shallow check reads no record
    assert set(WHOLE_SEGMENT) == set(segment_lens.SEGMENT._fields) - set(gathered)


# The field of SEGMENT that holds each lens's declaration: a kernel that ignores a bound of it ignores it in the
# whole segment's too.
_GATHERED_AS = {"segment": "batches", "index": "offset_index", "time index": "time_index", "producers": "producers",
                "records": "records"}


class _Watch:
    """The kernel, noting the batches each of plain_run and index_run took (their positions), those whose
    records clean_records counted clean (their base offsets) and the segments clean_segment summed up (their
    base offsets, and whether deep); with `relax` (a lens and a field of its declaration; or "whole" and a
    field of SEGMENT's own), a kernel that ignores that one bound, wherever it is handed it."""

    def __init__(self, real: kernel.Kernel, relax: tuple[str, str] | None = None) -> None:
        self.real, self.relax = real, relax
        self.took: dict[str, set[int]] = {spec.takes: set() for spec in LENSES.values()} | {"clean_segment": set()}
        self.calls = 0

    def __getattr__(self, name):
        return getattr(self.real, name)

    def _bounds(self, lens: str, bounds):
        if self.relax is None or self.relax[0] != lens:
            return bounds
        field = self.relax[1]
        loose = (0xFF,) * 64 if field == "codecs" else 2**63 - 1 if field == "max_relative_offset" else False
        return bounds._replace(**{field: loose})

    def _segment_bounds(self, bounds):
        bounds = self._bounds("whole", bounds)
        return bounds._replace(**{field: self._bounds(lens, getattr(bounds, field))
                                  for lens, field in _GATHERED_AS.items() if getattr(bounds, field) is not None})

    def clean_segment(self, log, index, time_index, base, bounds):
        self.calls += 1
        summary = self.real.clean_segment(log, index, time_index, base, self._segment_bounds(bounds))
        if summary is not None:
            self.took["clean_segment"].add((base, bounds.records is not None))
        return summary

    def plain_run(self, views, base, prev_last, epoch, bounds):
        self.calls += 1
        summary = self.real.plain_run(views, base, prev_last, epoch, self._bounds("segment", bounds))
        if summary is not None:
            self.took["plain_run"].update(v.position for v in views)
        return summary

    def index_run(self, views, index, entry, entries, base, prev_last, bounds):
        self.calls += 1
        answer = self.real.index_run(views, index, entry, entries, base, prev_last, self._bounds("index", bounds))
        self.took["index_run"].update(v.position for v in views[: answer[0]])
        return answer

    def clean_records(self, payload, count, base, last, base_ts, max_ts, bounds):
        self.calls += 1
        n = self.real.clean_records(payload, count, base, last, base_ts, max_ts, self._bounds("records", bounds))
        if n >= 0:
            self.took["clean_records"].add(base)
        return n

    def taken(self, lens: str, log: Path, position: int) -> bool:
        """Whether the kernel took the batch at `position` for the lens: by the lens's own function, or with the
        whole segment in a check that feeds the lens (a deep one, for the record lens)."""
        takes = LENSES[lens].takes
        if takes == "clean_records":
            base = int.from_bytes(log.read_bytes()[position : position + 8], "big", signed=True)
            return base in self.took[takes] or self.summed_up(log, deep=True)
        whole = self.summed_up(log, deep=True) or self.summed_up(log, deep=False)
        return whole or takes != "clean_segment" and position in self.took[takes]

    def summed_up(self, log: Path, deep: bool) -> bool:
        """Whether the kernel summed up the whole segment in a deep check, or in a shallow one."""
        return (int(log.stem), deep) in self.took["clean_segment"]


def _report(log: Path) -> dict:
    """The segment checked deep and shallow (the shallow check is where the kernel may take it whole)."""
    reports = {}
    for deep in (True, False):
        with Segment(log, int(log.stem)) as seg:
            rep = check_segment(seg, active=False, deep=deep)
            reports[deep] = {**rep.to_dict(), "epoch_runs": rep.epoch_runs, "producers": rep.producers}
    return reports


def _findings(reports: dict) -> set[str]:
    return {f["name"] for rep in reports.values() for f in rep["findings"]}


def _both_ways(monkeypatch, log: Path, watch: _Watch) -> tuple[dict, dict]:
    with monkeypatch.context() as m:
        m.setattr(kernel, "KERNEL", watch)
        compiled = _report(log)
    with kernel.pure():
        reference = _report(log)
    return compiled, reference


@pytest.mark.parametrize(("lens", "kind", "case"), GUARDED, ids=IDS)
def test_the_kernel_declines_what_the_lens_reports(fast, tmp_path, monkeypatch, lens, kind, case):
    assert case is not None, (f"the {lens} lens reports {kind.name} as the batches come and no case shows the "
                              f"kernel declining it: add one to CASES")
    log, damaged = CASES[lens][kind][case].build(tmp_path)
    watch = _Watch(fast)
    compiled, reference = _both_ways(monkeypatch, log, watch)
    assert compiled == reference
    assert kind.name in [f["name"] for f in compiled[True]["findings"]]
    if lens != "records":  # (a shallow check decodes no record)
        assert kind.name in [f["name"] for f in compiled[False]["findings"]]
    assert not watch.taken(lens, log, damaged)
    assert watch.calls, "the kernel was not asked: the case shows nothing of it"


BOUNDED = [(lens, kind, case) for lens, kind, case in GUARDED
           if case is not None and CASES[lens][kind][case].bound is not None]


@pytest.mark.parametrize(("lens", "kind", "case"), BOUNDED,
                         ids=[f"{lens}-{kind.name}-{case}" for lens, kind, case in BOUNDED])
def test_a_kernel_that_forgot_the_bound_would_be_caught(fast, tmp_path, monkeypatch, lens, kind, case):
    """The cases are not vacuous: each bound is what keeps the kernel from its case's batch."""
    log, damaged = CASES[lens][kind][case].build(tmp_path)
    watch = _Watch(fast, relax=(lens, CASES[lens][kind][case].bound))
    compiled, reference = _both_ways(monkeypatch, log, watch)
    assert kind.name in _findings(reference)
    assert watch.taken(lens, log, damaged)
    assert compiled != reference


@pytest.mark.parametrize("bound", WHOLE_SEGMENT)
def test_the_whole_segment_s_own_bounds_guard_a_finding(fast, tmp_path, monkeypatch, bound):
    """Each bound SEGMENT adds: the kernel declines the segment by it, and would lose the finding without it."""
    kind, build = WHOLE_SEGMENT[bound]
    log, _ = build(tmp_path)
    watch = _Watch(fast)
    compiled, reference = _both_ways(monkeypatch, log, watch)
    assert compiled == reference
    assert kind.name in [f["name"] for f in compiled[False]["findings"]]
    assert not watch.summed_up(log, deep=False) and not watch.summed_up(log, deep=True)
    loose = _Watch(fast, relax=("whole", bound))
    compiled, reference = _both_ways(monkeypatch, log, loose)
    assert loose.summed_up(log, deep=False) and loose.summed_up(log, deep=True)
    assert kind.name not in _findings(compiled)


def test_an_undamaged_case_is_summed_up_whole(fast, tmp_path, monkeypatch):
    """The cases' segments before their edit: the shallow check takes them whole, so each case's decline is
    the edit's doing."""
    log, _ = _written(tmp_path, V2)
    watch = _Watch(fast)
    compiled, reference = _both_ways(monkeypatch, log, watch)
    assert compiled == reference
    assert watch.summed_up(log, deep=False) and watch.summed_up(log, deep=True)
