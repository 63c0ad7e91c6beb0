"""Segment-level checks: one walk of a `.log` file seen through every lens that concerns it."""
from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple
from logtool.findings import (
    BAD_LENGTH, CRC_MISMATCH, EMPTY_SEGMENT, FIRST_OFFSET_ABOVE_NAME, FIRST_OFFSET_BELOW_NAME, INDEX_MISSING,
    LEGACY_WRAPPER_UNREADABLE, OFFSET_NOT_INCREASING, OFFSET_OVERFLOW, SEGMENT_TOO_LARGE, SHORT_TAIL,
    TAIL_BEING_WRITTEN, TIMEINDEX_MISSING, TORN_BATCH, UNKNOWN_CODEC, UNKNOWN_MAGIC, UNREADABLE, ZERO_TAIL, Finding,
    Kind, Sink, finding)
from logtool.rules.offsets import offsets_go_back
from logtool.rules.transactions import TxnTracker
from logtool.checks.consumer_offsets import TOPIC as CONSUMER_OFFSETS, CommitCheck
from logtool.checks.producers import PRODUCER_RUN, ProducerCheck, ProducerSpan
from logtool.checks.index import INDEX_RUN, TIME_INDEX_RUN, OffsetIndexCheck, TimeIndexCheck, TxnIndexCheck
from logtool.checks.records import RECORD_RUN, check_records
from logtool.format import kernel
from logtool.format.batch import CODEC_NAMES, MAX_SEGMENT_BYTES, BatchView, FrameStop, codec_name
from logtool.format.index import MAX_RELATIVE_OFFSET
from logtool.store.segment import Lens, Segment, WalkOutcome, feeder
from logtool.store.sidefile import SideFile

# By magic, the codec ids it knows, a bit each: v0 and v1 messages all but zstd, which came with v2 (KIP-110).
_V2_CODECS = (1 << len(CODEC_NAMES)) - 1
_LEGACY_CODECS = _V2_CODECS & ~(1 << CODEC_NAMES.index("zstd"))
_KNOWN_CODECS = (_LEGACY_CODECS, _LEGACY_CODECS, _V2_CODECS)
_KNOWN_MAGICS = len(_KNOWN_CODECS)

# The bounds `_BatchRules` holds each batch to, as data: its checks read these constants, and so does the
# kernel, which sums up a run whole (plain_run) only where every batch keeps within them; the kinds beside
# each are what the lens reports of a batch outside.
PLAIN_RUN = kernel.PlainRunBounds(
    codecs=_KNOWN_CODECS,  # UNKNOWN_MAGIC from magic 3 on; UNKNOWN_CODEC
    max_relative_offset=MAX_RELATIVE_OFFSET,  # OFFSET_OVERFLOW
    increasing=True,  # OFFSET_NOT_INCREASING (rules/offsets.py)
)
# Every kind `_BatchRules` reports of a batch (each it names outside `__init__` and `finish`). The kernel takes
# no batch that holds one: it is past a bound of PLAIN_RUN, or has no base offset (a legacy wrapper's view is no
# run's), or is a segment's first (never offered). tests/format/test_kernel_guard.py holds a case of each in which the
# kernel path reports what the pure path does.
PER_BATCH = (OFFSET_NOT_INCREASING, OFFSET_OVERFLOW, UNKNOWN_MAGIC, UNKNOWN_CODEC, LEGACY_WRAPPER_UNREADABLE,
             FIRST_OFFSET_BELOW_NAME, FIRST_OFFSET_ABOVE_NAME)
# A check's lenses' bounds, gathered for the kernel to sum up a whole segment in one call (clean_segment): only
# where nothing in it is outside them, and it holds no transaction's batch or marker (the lenses that keep the
# state of transactions are not summed up), does the segment skip the walk below. A shallow check's; a deep
# one's holds the records too.
SEGMENT = kernel.SegmentBounds(
    batches=PLAIN_RUN,
    first_at_base=True,  # FIRST_OFFSET_BELOW_NAME, FIRST_OFFSET_ABOVE_NAME (_first_batch)
    offset_index=INDEX_RUN,
    index_last_within_log=True,  # INDEX_WRONG_POSITION: "beyond the segment's last offset" (its lens's finish)
    time_index=TIME_INDEX_RUN,
    producers=PRODUCER_RUN,
    records=None,
)
DEEP_SEGMENT = SEGMENT._replace(records=RECORD_RUN)


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
    # (leader epoch, first offset, last offset) of each run of v2 batches stamped with one epoch, for the
    # leader-epoch-checkpoint check; a handful per segment, so it is gathered here rather than walked again.
    epoch_runs: list[tuple[int, int, int]] = field(default_factory=list)
    # Producer id -> its batches in this segment, for the producer checks across segments (checks/producers.py).
    producers: dict[int, ProducerSpan] = field(default_factory=dict)
    # __consumer_offsets with --deep: each key's first and last commit here (checks/consumer_offsets.py).
    commits: dict | None = None
    # False: the file could not be opened or read (the partition's UNREADABLE finding says why), so nothing
    # is known of the offsets it holds.
    readable: bool = True

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

    def __init__(self, seg: Segment, rep: SegmentReport, sink: Sink) -> None:
        self.rep, self.sink, self.base = rep, sink, seg.base_offset
        self.prev_last: int | None = None
        self.codec_ids: set[int] = set()
        self.epoch, self.run_start = -1, 0  # leader epoch of the current run of batches, and its first offset
        self.fast = kernel.active()  # asked once a segment: the pure path feeds its batches one at a time

    def feed(self, v: BatchView) -> None:
        self.feed_many([v])

    def feed_many(self, views: list[BatchView]) -> None:
        fast = self.fast
        if fast is not None:
            if self.prev_last is None and len(views) > 1:  # the first batch is held to the file name here
                self._feed_each(views[:1])
                views = views[1:]
            if self.prev_last is not None and self._take_plain_run(fast, views, self.prev_last):
                return
        self._feed_each(views)

    def _feed_each(self, views: Sequence[BatchView]) -> None:
        # Once per batch: plain field reads into locals (BatchView properties cost a call), the rare findings
        # through helpers.
        rep, base, codec_ids, magics, walked = self.rep, self.base, self.codec_ids, self.rep.magic, self.sink.walked
        prev, epoch, max_ts = self.prev_last, self.epoch, rep.max_timestamp
        for v in views:
            walked.at = v.position
            magic, codec, last = v.magic, v.attributes & 0x07, v.last_offset
            first = v.base_offset if v.base_offset is not None else last
            if prev is None:
                self._first_batch(v, first)
            elif (backwards := offsets_go_back(prev, v)) is not None:
                self._report(OFFSET_NOT_INCREASING, backwards, v, first)
            if not 0 <= last - base <= MAX_RELATIVE_OFFSET:
                self._report(OFFSET_OVERFLOW, f"offset {last} is not within 2^31-1 of the segment base "
                                              f"{base}", v, last)
            if 0 <= magic < _KNOWN_MAGICS:
                codecs = _KNOWN_CODECS[magic]
            elif magic < 0:  # a negative magic byte is read as a legacy message (format/batch.py), and held to
                codecs = _KNOWN_CODECS[0]  # the oldest magic's codecs
            else:
                self._report(UNKNOWN_MAGIC, f"batch at byte {v.position} has magic {magic}", v, first)
                codecs = _KNOWN_CODECS[-1]  # a magic past the newest is held to the newest one's codecs
            if not codecs >> codec & 1:
                self._report(UNKNOWN_CODEC, f"batch at byte {v.position} names codec id {codec}", v, first)
            if v.base_offset is None:
                self._report(LEGACY_WRAPPER_UNREADABLE, f"compressed wrapper at byte {v.position} (last offset "
                                                        f"{last}) cannot be decompressed", v, last)
            if v.partition_leader_epoch != epoch:
                self.prev_last = prev  # the run that ends here ends at the batch before
                self._new_epoch_run(v.partition_leader_epoch, first)
                epoch = self.epoch
            prev = last
            if max_ts is None or v.max_timestamp > max_ts:
                max_ts = v.max_timestamp
            magics.add(magic)
            codec_ids.add(codec)
        self.prev_last = prev
        rep.last_offset, rep.max_timestamp = prev, max_ts

    def _take_plain_run(self, fast: kernel.Kernel, views: list[BatchView], prev_last: int) -> bool:
        """A run the loop above would find nothing in, summed up by the kernel: True once it is taken."""
        plain = fast.plain_run(views, self.base, prev_last, self.epoch, PLAIN_RUN)
        if plain is None:
            return False
        last, max_ts, codecs, magics = plain
        rep = self.rep
        self.sink.walked.at = views[-1].position
        self.prev_last = rep.last_offset = last
        if rep.max_timestamp is None or max_ts > rep.max_timestamp:
            rep.max_timestamp = max_ts
        self.codec_ids.update(_bits(codecs))
        rep.magic.update(_bits(magics))
        return True

    def _first_batch(self, v: BatchView, first: int) -> None:
        self.rep.first_offset, self.rep.first_timestamp = first, v.first_timestamp
        if first < self.base:
            self._report(FIRST_OFFSET_BELOW_NAME, f"first batch starts at offset {first}, below the base offset "
                                                  f"{self.base} in the file name", v, first)
        elif first > self.base:
            self._report(FIRST_OFFSET_ABOVE_NAME, f"first batch starts at offset {first}; the file name says "
                                                  f"{self.base}",
                         v, first)

    def _report(self, kind: Kind, message: str, v: BatchView, offset: int) -> None:
        self.sink.add(kind, message, v.position, offset)

    def _new_epoch_run(self, epoch: int, first: int) -> None:
        self._close_epoch_run()
        self.epoch, self.run_start = epoch, first

    def _close_epoch_run(self) -> None:
        # v0/v1 entries carry epoch -1: they belong to no run.
        if self.epoch >= 0 and self.prev_last is not None:
            self.rep.epoch_runs.append((self.epoch, self.run_start, self.prev_last))

    def finish(self) -> None:
        self._close_epoch_run()
        self.rep.codecs = {codec_name(c) for c in self.codec_ids}


def _bits(n: int) -> set[int]:
    """The numbers whose bits are set in `n` (the kernel's answers name the codecs and magics met so)."""
    return set(_bit_numbers(n))


@functools.lru_cache(maxsize=256)  # (a few magics and codecs, met in every segment)
def _bit_numbers(n: int) -> tuple[int, ...]:
    return tuple(i for i in range(n.bit_length()) if n >> i & 1)


@functools.lru_cache(maxsize=256)
def _codec_names(n: int) -> frozenset[str]:
    return frozenset(codec_name(c) for c in _bit_numbers(n))


# How a half-written batch of a live log looks to a reader, and how long to wait before looking again.
_WRITE_IN_PROGRESS = {TORN_BATCH.name, SHORT_TAIL.name, ZERO_TAIL.name, CRC_MISMATCH.name, BAD_LENGTH.name}
RECHECK_SECONDS = 0.2


def _being_written(seg: Segment, stop: FrameStop) -> bool:
    """A live broker's last segment that stopped like a write in progress is looked at once more, after a
    short wait: if the file changed since it was opened, its tail was being written, not damaged."""
    if stop.reason not in _WRITE_IN_PROGRESS:
        return False
    if seg.changed_since_opened():
        return True
    time.sleep(RECHECK_SECONDS)
    return seg.changed_since_opened()


IndexCheck = OffsetIndexCheck | TimeIndexCheck | TxnIndexCheck


def check_segment(seg: Segment, active: bool, deep: bool, txns: TxnTracker | None = None,
                  lenses: Sequence[Lens] = (), writer: Callable[[], int | None] | None = None,
                  topic: str | None = None) -> SegmentReport:
    """Walk one segment once; every lens sees every batch of the valid prefix. Raises OSError if unreadable.

    `txns` carries open transactions from the partition's earlier segments; without it the segment is
    taken on its own (first offsets of transactions opened before it are then unknown). `lenses` are fed in
    the same walk, for callers that keep something per batch (the audit's replica rows, a repair's indexes).
    `writer` names the running broker that may be appending to this segment (the partition's last), if any:
    it is asked only when the walk stops short."""
    name = seg.log_path.name
    # A KRaft snapshot (.checkpoint) is batches as a segment is, with no index beside it.
    sides = _Sides(seg.side(".index"), seg.side(".timeindex"), seg.side(".txnindex")) if name.endswith(".log") \
        else None
    # (__consumer_offsets' commits, which a deep check gathers, are not summed up)
    if sides is not None and not lenses and not (deep and topic == CONSUMER_OFFSETS):
        summed = _summed_up(seg, sides, deep)
        if summed is not None:
            return summed
    rep = SegmentReport(name, seg.base_offset, seg.file_size)
    sink = Sink(name)
    rules = _BatchRules(seg, rep, sink)
    fed: list[Lens] = [rules]
    index_checks = _index_checks(seg, sides, rep, sink, active, txns) if sides is not None else []
    fed += index_checks
    producers = ProducerCheck(sink)
    fed.append(producers)
    commits = CommitCheck(seg.buf, sink) if deep and topic == CONSUMER_OFFSETS else None
    if commits is not None:
        fed.append(commits)
    fed += lenses
    if seg.file_size >= MAX_SEGMENT_BYTES:
        sink.add(SEGMENT_TOO_LARGE, f"{seg.file_size} bytes")
    if seg.file_size == 0:
        sink.add(EMPTY_SEGMENT, "the segment is empty")
    walk = WalkOutcome(seg.file_size)
    records = _walk(seg, walk, fed, deep, sink)
    sink.walked.at = seg.file_size  # what the lenses find at the end comes after what they found on the way
    rules.finish()
    rep.valid_bytes, rep.batches = walk.valid_bytes, walk.batches
    rep.records = records if deep else None
    if walk.stop is not None:
        _report_stop(seg, walk, walk.stop, rep, sink, active, writer)
    for check in index_checks:
        check.finish(walk, rep.last_offset)

    rep.producers = producers.spans
    if commits is not None:
        rep.commits = {"first": commits.first, "last": commits.last}
    rep.findings = sink.done()
    return rep


class _Sides(NamedTuple):
    """A segment's index files, each read once: by the kernel's summing up, and by the lenses if it declines."""

    offset_index: SideFile
    time_index: SideFile
    txn_index: SideFile


def _summed_up(seg: Segment, sides: _Sides, deep: bool) -> SegmentReport | None:
    """The report of a whole segment in which no lens of the check would find anything, as the kernel sums it
    up in one call (no view per batch); None where the lenses must walk it."""
    fast, log = kernel.active(), seg.buf
    index, times = sides.offset_index.data, sides.time_index.data
    # Only a small segment, read whole (store/segment.py): a mapped one is walked, which releases its pages as
    # it passes them and moves a read policy's pacing and progress.
    if fast is None or not isinstance(log, bytes) or not log or index is None or times is None \
            or sides.txn_index.exists:
        return None
    summary = kernel.clean_segment(fast, log, index, times, seg.base_offset, DEEP_SEGMENT if deep else SEGMENT)
    if summary is None:
        return None
    size = len(log)  # (the file's: a file read whole is never larger than any segment can be)
    return SegmentReport(
        seg.log_path.name, seg.base_offset, size, valid_bytes=size, batches=summary.batches,
        records=summary.records, first_offset=summary.first_offset, last_offset=summary.last_offset,
        first_timestamp=summary.first_timestamp, max_timestamp=summary.max_timestamp, magic=_bits(summary.magics),
        codecs=set(_codec_names(summary.codecs)), indexes={"index": len(index), "timeindex": len(times)},
        epoch_runs=summary.epoch_runs,
        producers={pid: ProducerSpan(first_epoch, position, offset, last_epoch, first_data, last_data)
                   for pid, first_epoch, position, offset, last_epoch, first_data, last_data in summary.producers})


def _index_checks(seg: Segment, sides: _Sides, rep: SegmentReport, sink: Sink, active: bool,
                  txns: TxnTracker | None) -> list[IndexCheck]:
    """The lenses that hold the segment's index files to its batches (a missing one reported here), and the
    sizes of those files in `rep`."""
    checks: list[IndexCheck] = []
    for suffix, side, make in ((".index", sides.offset_index, OffsetIndexCheck),
                               (".timeindex", sides.time_index, TimeIndexCheck)):
        rep.indexes[suffix[1:]] = side.size if side.exists else None
        if side.exists:
            checks.append(make(side, seg.base_offset, active, sink))
        elif seg.file_size:
            sink.add(INDEX_MISSING if suffix == ".index" else TIMEINDEX_MISSING, "no such file beside the segment",
                     file=side.name)
    txn = sides.txn_index
    if txn.exists:
        rep.indexes["txnindex"] = txn.size
    checks.append(TxnIndexCheck(txn, seg.base_offset, seg.buf,
                                txns if txns is not None else TxnTracker(history_complete=False), sink))
    return checks


def _walk(seg: Segment, walk: WalkOutcome, lenses: list[Lens], deep: bool, sink: Sink) -> int:
    """Feed every lens the walk's runs of batches; with `deep`, decode each batch's records into `sink`'s
    findings too. Returns how many records were decoded."""
    records = 0
    buf, fast = seg.buf, kernel.active()
    feeds = [feeder(lens) for lens in lenses]
    for views in seg.walk_runs(walk, reads_bytes=deep):
        for feed in feeds:
            feed(views)
        if deep:
            for view in views:
                sink.walked.at = view.position
                records += check_records(buf, view, sink, fast)
    return records


def _report_stop(seg: Segment, walk: WalkOutcome, stop: FrameStop, rep: SegmentReport, sink: Sink, active: bool,
                 writer: Callable[[], int | None] | None) -> None:
    """Why the walk stopped before the end of the file (`stop`): a tail a running broker was writing, or
    where the valid prefix ends."""
    writer_pid = writer() if writer is not None else None
    if writer_pid is not None and _being_written(seg, stop):
        sink.add(TAIL_BEING_WRITTEN, f"{walk.size - stop.position} bytes after byte {stop.position} "
                                     f"were being written while they were read; the broker (pid {writer_pid}) holds "
                                     f"the log dir's lock and is running", stop.position)
        return
    if walk.shrunk_at is None:  # a file cut under the reader is not damage recovery would cut
        rep.first_invalid_position = stop.position
    name = seg.log_path.name
    stopped = walk.stop_finding(name, active, snapshot=not name.endswith(".log"))
    if stopped is not None:  # (always: the walk stopped)
        sink.append(stopped)


def check_records_file(path: Path, deep: bool) -> list[Finding]:
    """A KRaft snapshot (`<offset>-<epoch>.checkpoint`, `bootstrap.checkpoint`) walked as a segment is: it is
    record batches, from offset 0, with no index beside it."""
    try:
        with Segment(path, 0) as seg:
            return check_segment(seg, active=False, deep=deep).findings
    except OSError as e:
        return [finding(UNREADABLE, f"cannot read {path.name}: {e.strerror or e}", path.name)]
