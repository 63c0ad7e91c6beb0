"""Partition-level checks: the segment set, the files beside the segments, and per-partition metadata."""
from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from logtool.findings import (
    BAD_SEGMENT_NAME, LATER_SEGMENTS_DROPPED, LEFTOVER_FILE, LOGTOOL_TEMP_LEFTOVER, NO_SEGMENTS, ORPHAN_INDEX,
    PARTITION_DIR_DELETE, PARTITION_DIR_FUTURE, PARTITION_DIR_STRAY, PARTITION_METADATA_INVALID, PREALLOCATED_TAIL,
    PRODUCER_SNAPSHOT_BEYOND_LOG, PRODUCER_SNAPSHOT_INVALID, SEGMENT_GAP, SEGMENT_OVERLAP, SYMLINK, TMP_LEFTOVER,
    UNKNOWN_FILE, UNREADABLE, Finding, Severity, finding)
from logtool.checks.epochs import check_leader_epochs
from logtool.checks.logdir import side_text
from logtool.checks.consumer_offsets import check_commits
from logtool.checks.producers import DEFAULT_TRANSACTION_TIMEOUT_MS, Replay, check_producers, check_snapshot
from logtool.rules.transactions import TxnTracker
from logtool.rules.facts import PartitionFacts, partition_facts
from logtool.checks.segment import SegmentReport, check_records_file, check_segment
from logtool.store.segment import Lens, Segment
from logtool.format.meta import MetaError, partition_metadata, producer_snapshot
from logtool.store.layout import FileKind, FileName, kraft_snapshot_id
from logtool.store.partition import Partition
from logtool.store.sidefile import SideFile

# Files Kafka rewrites through a .tmp copy and an atomic rename (CheckpointFile, PartitionMetadataFile).
_TMP_COPIES = {"leader-epoch-checkpoint.tmp", "partition.metadata.tmp"}


@dataclass(slots=True)
class PartitionReport:
    path: str
    topic: str | None
    partition: int | None
    dir_kind: str | None = None  # plain, delete, future, stray
    segments: list[SegmentReport] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    files: dict[str, int] = field(default_factory=dict)  # other files: leftovers, snapshots, metadata -> size
    facts: PartitionFacts | None = None  # set by finish_partition, for the checks across files

    def all_findings(self) -> Iterator[Finding]:
        yield from self.findings
        for s in self.segments:
            yield from s.findings

    @property
    def parent(self) -> str:
        """The directory `path` lies in, as `str(Path(path).parent)` writes it: `path` is a str() of a Path,
        which writes each path one way (no empty or "." component but a lone ".", no trailing "/")."""
        return os.path.dirname(self.path) or "."

    @property
    def worst(self) -> Severity | None:
        return max((f.severity for f in self.all_findings()), default=None)

    @property
    def status(self) -> str:
        """clean; untrimmed (its only problem a preallocated zero tail, which recovery trims: nothing is lost);
        damaged."""
        problems = {f.name for f in self.all_findings() if f.severity >= Severity.WARNING}
        if not problems:
            return "clean"
        return "untrimmed" if problems == {PREALLOCATED_TAIL.name} else "damaged"

    def to_dict(self) -> dict:
        return {"path": self.path, "topic": self.topic, "partition": self.partition, "dir_kind": self.dir_kind,
                "status": self.status, "segments": [s.to_dict() for s in self.segments],
                "files": self.files, "findings": [f.to_dict() for f in self.findings]}


def check_partition(part: Partition, deep: bool, lens: Lens | None = None,
                    lens_for: Callable[[Segment], Lens] | None = None,
                    transaction_timeout_ms: int = DEFAULT_TRANSACTION_TIMEOUT_MS) -> PartitionReport:
    """Every check of one partition. `lens` sees every batch of every segment; `lens_for` makes one more lens
    for each segment, fed in the same walk."""
    rep = check_segments(part, deep, range(len(part.segments)), lens, lens_for)
    finish_partition(part, rep, transaction_timeout_ms)
    return rep


def check_segments(part: Partition, deep: bool, which: range, lens: Lens | None = None,
                   lens_for: Callable[[Segment], Lens] | None = None) -> PartitionReport:
    """Walk the segments `which` of `part`: all of them, or one piece of a partition the audit split.

    A piece that does not start at the first segment replays transactions without their history, as for a
    log whose older segments retention deleted. `finish_partition` adds the checks that need every segment."""
    shown = part.segments[0].log_path if part.single_file else part.path
    rep = PartitionReport(str(shown), part.topic, part.number, part.name.kind if part.name else None)
    last = len(part.segments) - 1
    txns = TxnTracker(history_complete=not part.single_file and which.start == 0 and bool(part.segments)
                      and part.segments[0].base_offset == 0)
    for i in which:
        seg = part.segments[i]
        try:
            with seg:
                lenses = [x for x in (lens, lens_for(seg) if lens_for else None) if x is not None]
                rep.segments.append(check_segment(seg, active=(i == last) and not part.single_file, deep=deep,
                                                  txns=txns, lenses=lenses,
                                                  writer=part.writer if i == last else None, topic=part.topic))
        except OSError as e:
            name = seg.log_path.name
            rep.findings.append(finding(UNREADABLE, f"cannot read {name}: {e.strerror or e}", name))
            # Still one of the partition's segments: counted, and no gap is claimed where its offsets are.
            rep.segments.append(SegmentReport(name, seg.base_offset, max(0, part.size_of(name)), readable=False))
    if which.stop == len(part.segments) and not part.single_file:  # once per partition: with its last piece
        rep.findings += _check_kraft_snapshots(part, deep)
    return rep


def _check_kraft_snapshots(part: Partition, deep: bool) -> list[Finding]:
    """KRaft snapshots (`__cluster_metadata-0`'s `<offset>-<epoch>.checkpoint`), which the controller reads
    at start before the log."""
    kraft = [n for n, f in part.files.items() if f.kind == FileKind.KRAFT]  # (in most partitions, none)
    names = sorted(n for n in kraft if kraft_snapshot_id(n) is not None)
    return [f for name in names for f in check_records_file(part.path / name, deep)]


def finish_partition(part: Partition, rep: PartitionReport,
                     transaction_timeout_ms: int = DEFAULT_TRANSACTION_TIMEOUT_MS) -> None:
    """The checks across segments and of the files beside them, once every segment is in `rep`."""
    rep.facts = facts = partition_facts(rep.segments)
    _check_segment_set(rep)
    snapshots = frozenset(f.base_offset for f in part.files.values()
                          if f.kind == FileKind.SNAPSHOT and f.base_offset is not None) \
        if not part.single_file else frozenset()
    replay = check_producers(rep.segments, transaction_timeout_ms, rep.topic, rep.partition, snapshots)
    rep.findings += replay.findings
    rep.findings += check_commits(rep.segments)
    if not part.single_file:
        _check_dir_name(part, rep)
        _check_other_files(part, rep, replay, facts)
        if not part.segments:
            rep.findings.append(finding(NO_SEGMENTS, "the directory holds no segment; the broker starts the "
                                        "partition empty at its checkpointed log start offset", part.path.name))


# What the broker does at load with a partition directory renamed with a suffix (LogManager.loadLog).
_SUFFIXED_DIRS = {
    "delete": (PARTITION_DIR_DELETE, "the topic or this replica was deleted; the broker does not recover it and "
                                   "deletes it after file.delete.delay.ms"),
    "future": (PARTITION_DIR_FUTURE, "a replica being moved into this log dir; the broker resumes the copy and "
                                   "swaps it for the current replica once it has caught up"),
    "stray": (PARTITION_DIR_STRAY, "a replica the cluster no longer assigns to this broker; the broker neither "
                                 "serves nor deletes it"),
}


def _check_dir_name(part: Partition, rep: PartitionReport) -> None:
    if part.name is not None and part.name.kind in _SUFFIXED_DIRS:
        kind, what = _SUFFIXED_DIRS[part.name.kind]
        rep.findings.append(finding(kind, what, part.path.name))


def _check_segment_set(rep: PartitionReport) -> None:
    prev: SegmentReport | None = None
    for i, seg in enumerate(rep.segments):
        stops = [f for f in seg.findings if f.kind.cuts]
        if stops and i < len(rep.segments) - 1:
            later = rep.segments[i + 1 :]
            rep.findings.append(finding(
                LATER_SEGMENTS_DROPPED,
                f"damage in {seg.file} at byte {seg.first_invalid_position}: recovery from before it would delete the "
                f"{len(later)} later segment(s) ({sum(s.size for s in later)} bytes, {sum(s.batches for s in later)} "
                "batches)",
                seg.file, seg.first_invalid_position))
        if prev is not None and prev.last_offset is not None:
            if seg.base_offset <= prev.last_offset:
                rep.findings.append(finding(SEGMENT_OVERLAP, f"{seg.file} starts at offset {seg.base_offset}, but "
                                            f"{prev.file} ends at offset {prev.last_offset}", seg.file, 0,
                                            seg.base_offset))
            elif seg.base_offset > prev.last_offset + 1:
                # Between segments; a first batch above its own segment's name is FIRST_OFFSET_ABOVE_NAME.
                rep.findings.append(finding(SEGMENT_GAP, f"offsets {prev.last_offset + 1}..{seg.base_offset - 1} lie "
                                            f"in no segment ({prev.file} -> {seg.file})", seg.file, 0, seg.base_offset))
        if seg.last_offset is not None:
            prev = seg
        elif not seg.readable:
            prev = None  # the offsets it holds are unknown: no gap or overlap is claimed across it


def _check_other_files(part: Partition, rep: PartitionReport, replay: Replay, facts: PartitionFacts) -> None:
    logs = {f.base_offset for f in part.files.values() if f.kind == FileKind.LOG}
    read = _index_sizes(rep.segments)
    for name, f in part.files.items():
        if name in part.symlinks:
            rep.findings.append(finding(SYMLINK, f"{name} is a symlink to {part.symlinks[name]}", name))
        side = None
        if f.kind == FileKind.PARTITION_METADATA:
            side = part.side(name)
            _check_partition_metadata(side, rep)
        elif f.kind == FileKind.LEADER_EPOCH:
            side = part.side(name)
            text = side_text(side, rep.findings)
            if text is not None:
                rep.findings += check_leader_epochs(text, [r for s in rep.segments for r in s.epoch_runs], facts)
        elif f.kind == FileKind.SNAPSHOT and f.base_offset is not None:
            side = part.side(name)
            _check_snapshot_file(side, f.base_offset, rep, replay, facts)
        else:
            problem = _name_finding(name, f, logs)
            if problem is not None:
                rep.findings.append(problem)
        if f.kind != FileKind.LOG:
            # Its size as it was read (here, or by its segment's checks), else as stat gives it now.
            size = read.get(name) if side is None else side.size
            rep.files[name] = size if size is not None else part.size_of(name)


def _index_sizes(segments: list[SegmentReport]) -> dict[str, int]:
    """The sizes of the index files the segments' checks read, by file name."""
    return {f"{s.file[:-4]}.{suffix}": size for s in segments if s.file.endswith(".log")
            for suffix, size in s.indexes.items() if size is not None}


def _check_partition_metadata(side: SideFile, rep: PartitionReport) -> None:
    text = side_text(side, rep.findings)
    if text is not None:
        try:
            partition_metadata(text)
        except MetaError as e:
            rep.findings.append(finding(PARTITION_METADATA_INVALID, str(e), side.name))


def _name_finding(name: str, f: FileName, logs: set[int | None]) -> Finding | None:
    """What a file's name alone tells is wrong with it in a partition dir (`logs`: the segments' base offsets)."""
    if f.kind == FileKind.LEFTOVER:
        assert f.leftover is not None  # classify_file names every leftover's suffix
        return finding(LEFTOVER_FILE, f"{name}: a {f.leftover[1:]} leftover the broker "
                                      f"{'discards' if f.leftover != '.swap' else 'applies'} at load", name)
    if f.kind in (FileKind.INDEX, FileKind.TIMEINDEX, FileKind.TXNINDEX) and f.base_offset not in logs:
        return finding(ORPHAN_INDEX, f"{name} has no {f.base_offset:020d}.log", name)
    if f.kind == FileKind.LOGTOOL_TEMP:
        return finding(LOGTOOL_TEMP_LEFTOVER, f"{name} was left by an interrupted logtool repair", name)
    if f.kind != FileKind.UNKNOWN:
        return None
    if name.endswith((".log", ".index", ".timeindex", ".txnindex")):
        return finding(BAD_SEGMENT_NAME, f"{name}: the broker cannot parse a base offset from it", name)
    if name in _TMP_COPIES:
        return finding(TMP_LEFTOVER, f"an interrupted rewrite of {name[:-4]}", name)
    return finding(UNKNOWN_FILE, f"{name} is not a file Kafka writes", name)


def _check_snapshot_file(side: SideFile, offset: int, rep: PartitionReport, replay: Replay,
                         facts: PartitionFacts) -> None:
    """A producer snapshot taken at `offset`: readable, agreeing with the log's replay, not past the log end."""
    name = side.name
    if side.data is None:
        rep.findings.append(finding(side.problem_kind, f"cannot read {name}: {side.error or 'it is gone'}", name))
    else:
        try:
            entries = producer_snapshot(side.data)
        except MetaError as e:
            rep.findings.append(finding(PRODUCER_SNAPSHOT_INVALID, str(e), name))
        else:
            if not facts.recovery_cuts:  # past damage, what the log says is not what was written
                rep.findings += check_snapshot(name, offset, entries, replay)
    _check_snapshot_offset(name, offset, facts, rep)


def _check_snapshot_offset(name: str, offset: int, facts: PartitionFacts, rep: PartitionReport) -> None:
    """A snapshot is named after the next offset when it was taken; it can be at the log end, not past it."""
    end = facts.log_end
    if end is not None and offset > end:
        rep.findings.append(finding(PRODUCER_SNAPSHOT_BEYOND_LOG, f"taken at offset {offset}, past the log end "
                                    f"offset {end}", name, offset=offset))

