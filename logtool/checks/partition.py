"""Partition-level checks: the segment set, the files beside the segments, and per-partition metadata."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from logtool.checks.catalog import Finding, Severity, finding
from logtool.checks.expected_index import TxnTracker
from logtool.checks.segment import SegmentReport, check_segment
from logtool.format.meta import MetaError, leader_epochs, partition_metadata, producer_snapshot
from logtool.store.layout import FileKind
from logtool.store.partition import Partition

_FRAMING_STOPS = {"CRC_MISMATCH", "TORN_BATCH", "ZERO_TAIL", "SHORT_TAIL", "BAD_LENGTH", "GARBAGE",
                  "IMPOSSIBLE_LENGTH", "BATCH_TOO_SMALL", "BAD_TXN_MARKER"}


@dataclass(slots=True)
class PartitionReport:
    path: str
    topic: str | None
    partition: int | None
    dir_kind: str | None = None  # plain, delete, future, stray
    segments: list[SegmentReport] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    files: dict[str, int] = field(default_factory=dict)  # other files: leftovers, snapshots, metadata -> size

    def all_findings(self):
        yield from self.findings
        for s in self.segments:
            yield from s.findings

    @property
    def worst(self) -> Severity | None:
        return max((f.severity for f in self.all_findings()), default=None)

    @property
    def status(self) -> str:
        worst = self.worst
        return "damaged" if worst is not None and worst >= Severity.WARNING else "clean"

    def to_dict(self) -> dict:
        return {"path": self.path, "topic": self.topic, "partition": self.partition, "dir_kind": self.dir_kind,
                "status": self.status, "segments": [s.to_dict() for s in self.segments],
                "files": self.files, "findings": [f.to_dict() for f in self.findings]}


def check_partition(part: Partition, deep: bool) -> PartitionReport:
    shown = part.segments[0].log_path if part.single_file else part.path
    rep = PartitionReport(str(shown), part.topic, part.number, part.name.kind if part.name else None)
    last = len(part.segments) - 1
    txns = TxnTracker(history_complete=not part.single_file and bool(part.segments) and part.segments[0].base_offset == 0)
    for i, seg in enumerate(part.segments):
        try:
            with seg:
                rep.segments.append(check_segment(seg, active=(i == last) and not part.single_file, deep=deep, txns=txns))
        except OSError as e:
            rep.findings.append(finding("UNREADABLE", f"cannot read {seg.log_path.name}: {e.strerror or e}",
                                        seg.log_path.name))
    _check_segment_set(rep)
    if not part.single_file:
        _check_other_files(part, rep)
    return rep


def _check_segment_set(rep: PartitionReport) -> None:
    prev: SegmentReport | None = None
    for i, seg in enumerate(rep.segments):
        stops = [f for f in seg.findings if f.name in _FRAMING_STOPS]
        if stops and i < len(rep.segments) - 1:
            later = rep.segments[i + 1 :]
            rep.findings.append(finding(
                "LATER_SEGMENTS_DROPPED",
                f"damage in {seg.file} at byte {seg.first_invalid_position}: recovery from before it would delete the "
                f"{len(later)} later segment(s) ({sum(s.size for s in later)} bytes, {sum(s.batches for s in later)} batches)",
                seg.file, seg.first_invalid_position))
        if prev is not None and prev.last_offset is not None:
            if seg.base_offset <= prev.last_offset:
                rep.findings.append(finding("SEGMENT_OVERLAP", f"{seg.file} starts at offset {seg.base_offset}, but "
                                            f"{prev.file} ends at offset {prev.last_offset}", seg.file, 0, seg.base_offset))
            elif seg.first_offset is not None and seg.first_offset > prev.last_offset + 1:
                rep.findings.append(finding("SEGMENT_GAP", f"offsets {prev.last_offset + 1}..{seg.first_offset - 1} lie "
                                            f"in no segment ({prev.file} -> {seg.file})", seg.file, 0, seg.first_offset))
        if seg.last_offset is not None:
            prev = seg


def _read_text(path: Path, rep: PartitionReport) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="strict")
    except (OSError, UnicodeDecodeError) as e:
        rep.findings.append(finding("UNREADABLE", f"cannot read {path.name}: {getattr(e, 'strerror', None) or e}", path.name))
        return None


def _check_other_files(part: Partition, rep: PartitionReport) -> None:
    logs = {f.base_offset for f in part.files.values() if f.kind == FileKind.LOG}
    for name, f in part.files.items():
        path = part.path / name
        if f.kind != FileKind.LOG:
            try:
                rep.files[name] = path.stat().st_size
            except OSError:
                rep.files[name] = -1
        if f.kind == FileKind.LEFTOVER:
            rep.findings.append(finding("LEFTOVER_FILE", f"{name}: a {f.leftover[1:]} leftover the broker "
                                        f"{'discards' if f.leftover != '.swap' else 'applies'} at load", name))
        elif f.kind in (FileKind.INDEX, FileKind.TIMEINDEX, FileKind.TXNINDEX) and f.base_offset not in logs:
            rep.findings.append(finding("ORPHAN_INDEX", f"{name} has no {f.base_offset:020d}.log", name))
        elif f.kind == FileKind.UNKNOWN:
            if name.endswith((".log", ".index", ".timeindex", ".txnindex")):
                rep.findings.append(finding("BAD_SEGMENT_NAME", f"{name}: the broker cannot parse a base offset from it", name))
            else:
                rep.findings.append(finding("UNKNOWN_FILE", f"{name} is not a file Kafka writes", name))
        elif f.kind == FileKind.PARTITION_METADATA:
            text = _read_text(path, rep)
            if text is not None:
                try:
                    partition_metadata(text)
                except MetaError as e:
                    rep.findings.append(finding("PARTITION_METADATA_INVALID", str(e), name))
        elif f.kind == FileKind.LEADER_EPOCH:
            text = _read_text(path, rep)
            if text is not None:
                _check_leader_epochs(text, rep)
        elif f.kind == FileKind.SNAPSHOT:
            try:
                producer_snapshot(path.read_bytes())
            except MetaError as e:
                rep.findings.append(finding("PRODUCER_SNAPSHOT_INVALID", str(e), name))
            except OSError as e:
                rep.findings.append(finding("UNREADABLE", f"cannot read {name}: {e.strerror or e}", name))


def _check_leader_epochs(text: str, rep: PartitionReport) -> None:
    name = "leader-epoch-checkpoint"
    try:
        epochs = leader_epochs(text)
    except MetaError as e:
        rep.findings.append(finding("LEADER_EPOCH_INVALID", str(e), name))
        return
    for (e1, o1), (e2, o2) in zip(epochs, epochs[1:]):
        if e2 <= e1 or o2 < o1:
            rep.findings.append(finding("LEADER_EPOCH_INVALID", f"entry (epoch {e2}, start offset {o2}) does not follow "
                                        f"(epoch {e1}, start offset {o1})", name))
