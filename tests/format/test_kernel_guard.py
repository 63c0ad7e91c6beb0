"""The kernel never takes what a lens would report. For every kind the segment lens and the offset index lens
report batch by batch, and the record lens (the deep check) record by record (their declarations, `PER_BATCH`
and `PER_RECORD`, held here to the catalog's kinds each lens names), a case built from batches kafka-python
wrote, a few bytes edited: the kernel does not take the damaged batch, the kernel path reports exactly what
the pure path does, the finding among it; and where a bound of the lens's declaration (`PLAIN_RUN`,
`INDEX_RUN`, `RECORD_RUN`) is what makes the kernel decline, a kernel that ignored that bound would lose the
finding. Every bound has such a case. A lens that comes to report a kind with no case here fails the suite;
so does one that names a kind it does not declare, or a declaration that gains a bound no case shows."""
from __future__ import annotations

import ast
import gzip
import inspect
import struct
import zlib
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import ModuleType
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
from logtool.checks import records as records_lens
from logtool.checks import segment as segment_lens
from logtool.checks.segment import check_segment
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
    RECORD_COUNT_MISMATCH,
    RECORDS_UNREADABLE,
    TIMESTAMP_ABOVE_MAX,
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
    named_in: tuple[type | ModuleType, ...]  # where it names its kinds: a class's methods or modules' functions


LENSES = {
    "segment": Lens(segment_lens.PER_BATCH, segment_lens.PLAIN_RUN, "plain_run", (segment_lens._BatchRules,)),
    "index": Lens(index_lens.PER_BATCH, index_lens.INDEX_RUN, "index_run", (index_lens.OffsetIndexCheck,)),
    # check_records reports the kinds it names and those of the RecordErrors the reader raises.
    "records": Lens(records_lens.PER_RECORD, records_lens.RECORD_RUN, "clean_records", (records_lens, reader)),
}
NOT_PER_BATCH = ("__init__", "finish")  # a lens class's methods that run once, before or after the batches


def _named_kinds(where: type | ModuleType) -> set[str]:
    """The catalog's kinds named in a lens class's methods that run batch by batch, or in a module's
    functions."""
    kinds = {name for name, value in vars(findings).items() if isinstance(value, Kind)}
    tree = ast.parse(inspect.getsource(where))
    if isinstance(where, type):
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


class _Watch:
    """The kernel, noting the batches each of plain_run and index_run took (their positions) and those whose
    records clean_records counted clean (their base offsets); with `relax` (a kernel function and a field), a
    kernel that ignores that one bound of the declaration that function is handed."""

    def __init__(self, real: kernel.Kernel, relax: tuple[str, str] | None = None) -> None:
        self.real, self.relax = real, relax
        self.took: dict[str, set[int]] = {spec.takes: set() for spec in LENSES.values()}
        self.calls = 0

    def __getattr__(self, name):
        return getattr(self.real, name)

    def _bounds(self, takes: str, bounds):
        if self.relax is None or self.relax[0] != takes:
            return bounds
        field = self.relax[1]
        loose = (0xFF,) * 64 if field == "codecs" else 2**63 - 1 if field == "max_relative_offset" else False
        return bounds._replace(**{field: loose})

    def plain_run(self, views, base, prev_last, epoch, bounds):
        self.calls += 1
        summary = self.real.plain_run(views, base, prev_last, epoch, self._bounds("plain_run", bounds))
        if summary is not None:
            self.took["plain_run"].update(v.position for v in views)
        return summary

    def index_run(self, views, index, entry, entries, base, prev_last, bounds):
        self.calls += 1
        answer = self.real.index_run(views, index, entry, entries, base, prev_last, self._bounds("index_run", bounds))
        self.took["index_run"].update(v.position for v in views[: answer[0]])
        return answer

    def clean_records(self, payload, count, base, last, base_ts, max_ts, bounds):
        self.calls += 1
        n = self.real.clean_records(payload, count, base, last, base_ts, max_ts, self._bounds("clean_records", bounds))
        if n >= 0:
            self.took["clean_records"].add(base)
        return n

    def taken(self, lens: str, log: Path, position: int) -> bool:
        """Whether the kernel took the batch at `position` for the lens."""
        takes = LENSES[lens].takes
        key = int.from_bytes(log.read_bytes()[position : position + 8], "big", signed=True) \
            if takes == "clean_records" else position
        return key in self.took[takes]


def _report(log: Path) -> dict:
    with Segment(log, int(log.stem)) as seg:
        return check_segment(seg, active=False, deep=True).to_dict()


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
    assert kind.name in [f["name"] for f in compiled["findings"]]
    assert not watch.taken(lens, log, damaged)
    assert watch.calls, "the kernel was not asked: the case shows nothing of it"


BOUNDED = [(lens, kind, case) for lens, kind, case in GUARDED
           if case is not None and CASES[lens][kind][case].bound is not None]


@pytest.mark.parametrize(("lens", "kind", "case"), BOUNDED,
                         ids=[f"{lens}-{kind.name}-{case}" for lens, kind, case in BOUNDED])
def test_a_kernel_that_forgot_the_bound_would_be_caught(fast, tmp_path, monkeypatch, lens, kind, case):
    """The cases are not vacuous: each bound is what keeps the kernel from its case's batch."""
    log, damaged = CASES[lens][kind][case].build(tmp_path)
    watch = _Watch(fast, relax=(LENSES[lens].takes, CASES[lens][kind][case].bound))
    compiled, reference = _both_ways(monkeypatch, log, watch)
    assert kind.name in [f["name"] for f in reference["findings"]]
    assert watch.taken(lens, log, damaged)
    assert compiled != reference
