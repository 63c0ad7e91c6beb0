"""Rebuilding indexes as Kafka's recovery would: a pure planner (what each index file should hold, and how
that differs from the disk) and an executor that applies a plan through the quarantine."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from logtool.checks.expected_index import ExpectedIndexes, TxnTracker
from logtool.recovery.quarantine import Run
from logtool.recovery.writer import replace_file
from logtool.store.partition import Partition
from logtool.store.segment import Walk

ENTRY_SIZES = {".index": 8, ".timeindex": 12, ".txnindex": 34}


@dataclass(slots=True)
class FileChange:
    path: Path
    old_size: int | None  # None: the file does not exist
    new: bytes = field(repr=False)
    changed: bool = True

    @classmethod
    def against_disk(cls, path: Path, new: bytes) -> "FileChange":
        if not path.exists():
            return cls(path, None, new)
        old = path.read_bytes()
        return cls(path, len(old), new, old != new)

    @property
    def suffix(self) -> str:
        return self.path.suffix

    def to_dict(self) -> dict:
        size = ENTRY_SIZES[self.suffix]
        return {"file": str(self.path), "old_size": self.old_size, "new_size": len(self.new),
                "old_entries": None if self.old_size is None else self.old_size // size,
                "new_entries": len(self.new) // size, "changed": self.changed}


@dataclass(slots=True)
class IndexPlan:
    partition: Path
    changes: list[FileChange] = field(default_factory=list)
    valid_prefix_short: list[str] = field(default_factory=list)  # segments indexed only up to damage
    txn_unknown: list[str] = field(default_factory=list)  # .txnindex files left alone: history incomplete

    @property
    def pending(self) -> list[FileChange]:
        return [c for c in self.changes if c.changed]

    def to_dict(self) -> dict:
        return {"partition": str(self.partition), "files": [c.to_dict() for c in self.changes],
                "changed": len(self.pending), "indexed_only_up_to_damage": self.valid_prefix_short,
                "txnindex_left_alone": self.txn_unknown}


def plan(part: Partition, interval: int) -> IndexPlan:
    """What every index of the partition would be after Kafka's recovery, from each valid prefix."""
    result = IndexPlan(part.path)
    txns = TxnTracker(history_complete=not part.single_file and bool(part.segments) and part.segments[0].base_offset == 0)
    for seg in part.segments:
        with seg:
            expected = ExpectedIndexes(seg.base_offset, seg.buf, txns, interval)
            walk = Walk(seg.size)
            for v in seg.walk(walk):
                expected.feed(v)
            expected.finish()
            if walk.stop is not None:
                result.valid_prefix_short.append(seg.log_path.name)
        for suffix, data in ((".index", expected.offset_index), (".timeindex", expected.time_index),
                             (".txnindex", expected.txn_index)):
            path = seg.path_with(suffix)
            if suffix == ".txnindex" and not data and not path.exists():
                continue  # Kafka creates a transaction index only when there is an abort to record
            if suffix == ".txnindex" and not expected.txn_index_known:
                result.txn_unknown.append(path.name)  # aborts of transactions opened before the data on disk
                continue
            result.changes.append(FileChange.against_disk(path, bytes(data)))
    return result


def apply(index_plan: IndexPlan, run: Run) -> int:
    """Write every changed file (old bytes to the quarantine first); returns how many were written."""
    pending = index_plan.pending
    for change in pending:
        replace_file(change.path, change.new, run)
    return len(pending)
