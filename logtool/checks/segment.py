"""Segment-level checks: one walk of a `.log` file seen through every lens that concerns it."""
from __future__ import annotations

from dataclasses import dataclass, field

from logtool.checks.catalog import Finding, finding
from logtool.checks.index import OffsetIndexCheck, TimeIndexCheck, check_txn_index
from logtool.checks.records import check_records
from logtool.format.batch import MAX_SEGMENT_BYTES, BatchView
from logtool.store.segment import Segment, Walk

_RELATIVE_MAX = 2**31 - 1


@dataclass(slots=True)
class SegmentReport:
    file: str
    base_offset: int
    size: int
    valid_bytes: int = 0
    first_invalid_position: int | None = None
    batches: int = 0
    records: int | None = None
    first_offset: int | None = None
    last_offset: int | None = None
    first_timestamp: int | None = None
    max_timestamp: int | None = None
    magic: set[int] = field(default_factory=set)
    codecs: set[str] = field(default_factory=set)
    indexes: dict[str, int | None] = field(default_factory=dict)  # suffix -> size, None when missing
    findings: list[Finding] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "file": self.file, "base_offset": self.base_offset, "size": self.size, "valid_bytes": self.valid_bytes,
            "first_invalid_position": self.first_invalid_position, "batches": self.batches, "records": self.records,
            "first_offset": self.first_offset, "last_offset": self.last_offset,
            "first_timestamp": self.first_timestamp, "max_timestamp": self.max_timestamp,
            "magic": sorted(self.magic), "codecs": sorted(self.codecs), "indexes": self.indexes,
            "findings": [f.to_dict() for f in self.findings],
        }


class _BatchRules:
    """Per-batch invariants Kafka's recovery does not enforce: they never move the valid prefix."""

    def __init__(self, seg: Segment, rep: SegmentReport) -> None:
        self.seg, self.rep = seg, rep
        self.prev: BatchView | None = None

    def feed(self, v: BatchView) -> None:
        rep, name = self.rep, self.seg.log_path.name
        first = v.base_offset if v.base_offset is not None else v.last_offset
        if self.prev is None:
            if first < self.seg.base_offset:
                rep.findings.append(finding("FIRST_OFFSET_BELOW_NAME", f"first batch starts at offset {first}, below "
                                            f"the base offset {self.seg.base_offset} in the file name", name, v.position, first))
            elif first > self.seg.base_offset:
                rep.findings.append(finding("FIRST_OFFSET_ABOVE_NAME", f"first batch starts at offset {first}; "
                                            f"the file name says {self.seg.base_offset}", name, v.position, first))
        elif first <= self.prev.last_offset or v.last_offset < first:
            rep.findings.append(finding("OFFSET_NOT_INCREASING", f"batch at byte {v.position} covers offsets {first}..{v.last_offset} "
                                        f"after a batch ending at offset {self.prev.last_offset}", name, v.position, first))
        if not 0 <= v.last_offset - self.seg.base_offset <= _RELATIVE_MAX:
            rep.findings.append(finding("OFFSET_OVERFLOW", f"offset {v.last_offset} is not within 2^31-1 of the segment "
                                        f"base {self.seg.base_offset}", name, v.position, v.last_offset))
        if v.magic > 2:
            rep.findings.append(finding("UNKNOWN_MAGIC", f"batch at byte {v.position} has magic {v.magic}", name, v.position, first))
        if v.codec > 4 or (v.is_legacy and v.codec > 3):
            rep.findings.append(finding("UNKNOWN_CODEC", f"batch at byte {v.position} names codec id {v.codec}", name, v.position, first))
        if v.is_legacy and v.base_offset is None:
            rep.findings.append(finding("LEGACY_WRAPPER_UNREADABLE", f"compressed wrapper at byte {v.position} "
                                        f"(last offset {v.last_offset}) cannot be decompressed", name, v.position, v.last_offset))
        if rep.first_offset is None:
            rep.first_offset, rep.first_timestamp = first, v.first_timestamp
        rep.last_offset = v.last_offset
        rep.max_timestamp = v.max_timestamp if rep.max_timestamp is None else max(rep.max_timestamp, v.max_timestamp)
        rep.magic.add(v.magic)
        rep.codecs.add(v.codec_name)
        self.prev = v


def _stop_finding(seg: Segment, walk: Walk, active: bool) -> Finding:
    stop = walk.stop
    name = stop.reason
    if name == "ZERO_TAIL" and active:
        name = "PREALLOCATED_TAIL"
    cut = walk.size - stop.position
    offset = walk.stop_view.base_offset if walk.stop_view is not None else None
    return finding(name, f"{stop.detail}; the valid log ends at byte {stop.position}, {cut} bytes after it are cut by recovery",
                   seg.log_path.name, stop.position, offset)


def check_segment(seg: Segment, active: bool, deep: bool) -> SegmentReport:
    """Walk one segment once; every lens sees every batch of the valid prefix. Raises OSError if unreadable."""
    rep = SegmentReport(seg.log_path.name, seg.base_offset, seg.size)
    rules = _BatchRules(seg, rep)
    lenses: list = [rules]
    index_checks = []
    for suffix, check in ((".index", OffsetIndexCheck), (".timeindex", TimeIndexCheck)):
        path = seg.path_with(suffix)
        if path.exists():
            rep.indexes[suffix[1:]] = path.stat().st_size
            index_checks.append(check(path, seg.base_offset, active))
        else:
            rep.indexes[suffix[1:]] = None
            if seg.size:
                rep.findings.append(finding("INDEX_MISSING" if suffix == ".index" else "TIMEINDEX_MISSING",
                                            f"{path.name} is missing", seg.log_path.name))
    lenses += index_checks
    txn = seg.path_with(".txnindex")
    if txn.exists():
        rep.indexes["txnindex"] = txn.stat().st_size
        rep.findings += check_txn_index(txn, seg.base_offset)
    if seg.size >= MAX_SEGMENT_BYTES:
        rep.findings.append(finding("SEGMENT_TOO_LARGE", f"{seg.size} bytes", seg.log_path.name))
    if seg.size == 0:
        rep.findings.append(finding("EMPTY_SEGMENT", "the segment is empty", seg.log_path.name))
    walk = Walk(seg.size)
    records = 0
    buf = seg.buf
    for view in seg.walk(walk):
        for lens in lenses:
            lens.feed(view)
        if deep:
            n, found = check_records(buf, view, seg.log_path.name)
            records += n
            rep.findings += found
    rep.valid_bytes, rep.batches = walk.valid_bytes, walk.batches
    rep.records = records if deep else None
    if walk.stop is not None:
        rep.first_invalid_position = walk.stop.position
        rep.findings.append(_stop_finding(seg, walk, active))
    for check in index_checks:
        rep.findings += check.finish(walk, rep.last_offset)
    return rep
