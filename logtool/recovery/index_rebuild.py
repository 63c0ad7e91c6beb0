"""Rebuilding indexes as Kafka's recovery would: a pure planner (what each index file should hold, and how
that differs from the disk), carried out as WriteFile steps by the one executor (journaled, re-checked under
the locks, resumable, undone by `restore`)."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from logtool.rules.expected_index import ExpectedIndexes
from logtool.rules.transactions import TxnTracker
from logtool.checks.engine import check_target
from logtool.store.discover import Target, discover
from logtool.findings import Fix, Severity
from logtool import exitcodes
from logtool.recovery.executor import carry_out, staged_write, undo_lines
from logtool.recovery.seen import Seen, canonical, look
from logtool.recovery.steps import Step
from logtool.store.mapping import AroundRead, open_readonly
from logtool.store.pacing import ReadPolicy, around_read
from logtool.store.partition import Partition
from logtool.store.segment import Segment, WalkOutcome

ENTRY_SIZES = {".index": 8, ".timeindex": 12, ".txnindex": 34}


@dataclass(slots=True)
class FileChange:
    path: Path
    old_size: int | None  # None: the file does not exist
    new: bytes = field(repr=False)
    changed: bool = True  # the file will be written: a check found it wrong (or it is missing) and it differs
    differs: bool = True  # it differs from what recovery builds, wrong or not (a broker-built index may)

    @classmethod
    def against_disk(cls, path: Path, new: bytes, around: AroundRead | None = None) -> "FileChange":
        """Compared through a mapping (made within `around`, as mapping.map_within): an index on disk may be
        of any size. Raises OSError."""
        try:
            old, size = open_readonly(path, around)
        except FileNotFoundError:
            return cls(path, None, new)
        try:
            differs = size != len(new) or memoryview(old) != new
            return cls(path, size, new, differs, differs)
        finally:
            if hasattr(old, "close"):
                old.close()

    @property
    def suffix(self) -> str:
        return self.path.suffix

    def to_dict(self) -> dict[str, Any]:
        size = ENTRY_SIZES[self.suffix]
        return {"file": str(self.path), "old_size": self.old_size, "new_size": len(self.new),
                "old_entries": None if self.old_size is None else self.old_size // size,
                "new_entries": len(self.new) // size, "changed": self.changed, "differs": self.differs}


@dataclass(slots=True)
class IndexPlan:
    partition: Path
    changes: list[FileChange] = field(default_factory=list)
    valid_prefix_short: list[str] = field(default_factory=list)  # segments indexed only up to damage
    txn_unknown: list[str] = field(default_factory=list)  # .txnindex files left alone: history incomplete
    unreadable: list[str] = field(default_factory=list)  # index files left alone, and why (a FIFO, no permission)
    overflow: list[str] = field(default_factory=list)  # segments whose offsets do not fit 32-bit relative offsets
    seen: Seen | None = field(default=None, repr=False, compare=False)  # the dir as it was before planning

    @property
    def pending(self) -> list[FileChange]:
        return [c for c in self.changes if c.changed]

    def to_dict(self) -> dict[str, Any]:
        return {"partition": str(self.partition), "files": [c.to_dict() for c in self.changes],
                "changed": len(self.pending), "indexed_only_up_to_damage": self.valid_prefix_short,
                "txnindex_left_alone": self.txn_unknown, "unreadable": self.unreadable,
                "offset_overflow": self.overflow}


@dataclass(slots=True)
class IndexRebuild:
    """`index rebuild`'s result: the plan of every partition, the paths that could not be planned, and what
    was written (once `rebuild` ran)."""

    plans: list[IndexPlan]
    problems: list[str]
    applied: bool = False  # asked to write (--apply)
    written: int = 0  # index files written
    resumed: int = 0  # unfinished runs of an earlier rebuild that this one finished first
    run: Path | None = None  # the quarantine run of the files this run replaced

    @property
    def pending(self) -> bool:
        return any(p.pending for p in self.plans)

    def exit_code(self, fail_on: Severity = Severity.WARNING) -> int:
        if self.problems or any(p.unreadable for p in self.plans):
            return exitcodes.OPERATIONAL
        if any(p.overflow for p in self.plans):
            return exitcodes.PROBLEMS  # a segment no index can describe stays a problem, repaired or not
        if self.applied:
            return exitcodes.REPAIRED if self.written or self.resumed else exitcodes.CLEAN
        return exitcodes.PROBLEMS if self.pending else exitcodes.CLEAN

    def to_dict(self) -> dict[str, Any]:
        return {"partitions": [p.to_dict() for p in self.plans], "problems": self.problems, "applied": self.applied,
                "files_written": self.written}

    def rows(self) -> Iterator[dict[str, Any]]:
        return ({"type": "partition", **p.to_dict()} for p in self.plans)

    def summary(self) -> dict[str, Any]:
        return {"partitions": len(self.plans), "files_to_write": sum(len(p.pending) for p in self.plans),
                "files_written": self.written}

    def stderr_lines(self) -> list[str]:
        return [f"logtool: {line}" for line in self.problems] + (undo_lines(self.run, "replaced files") if self.run
                                                                  else [])


def history_complete(part: Partition) -> bool:
    """Whether the log on disk starts at offset 0, so that every transaction's first offset is known."""
    return not part.single_file and bool(part.segments) and part.segments[0].base_offset == 0


def plan_index_rebuild(part: Partition, interval: int, kept: dict[str, int] | None = None,
                       wrong: set[str] | None = None, fed: dict[str, ExpectedIndexes] | None = None) -> IndexPlan:
    """What every index of the partition would be after Kafka's recovery, from each valid prefix. `kept`
    (a repair's plan) maps each segment that stays to the bytes of it that stay; the others are left out.
    `wrong`: the index files a check found wrong; only those (and missing ones) are written, and segments
    with none are not walked. An index built while appending can differ from the one recovery builds and
    still be right. None: every one that differs. `fed`: the expected indexes of segments that the caller's
    own walk already fed with exactly the batches that stay (not walked again)."""
    result = IndexPlan(part.path)
    txns = TxnTracker(history_complete=history_complete(part))
    for seg in part.segments:
        name = seg.log_path.name
        end = None if kept is None else kept.get(name)
        if kept is not None and end is None:
            continue
        if wrong is not None and not any(seg.path_with(x).name in wrong for x in ENTRY_SIZES):
            continue
        expected = fed[name] if fed is not None and name in fed else _walked(seg, end, txns, interval, result)
        expected.finish()
        if expected.overflow:
            # Kafka throws LogSegmentOffsetOverflowException here and splits the segment at load; an index
            # with 32-bit relative offsets cannot describe it, so none is written.
            result.overflow.append(seg.log_path.name)
            continue
        _plan_files(seg, expected, wrong, result)
    return result


def _walked(seg: Segment, end: int | None, txns: TxnTracker, interval: int, result: IndexPlan) -> ExpectedIndexes:
    """The indexes recovery builds of the segment's valid prefix (up to `end`, the bytes a repair keeps of it)."""
    with seg:
        expected = ExpectedIndexes(seg.base_offset, seg.buf, txns, interval)
        walk = WalkOutcome(seg.size)
        # the indexes need only the views; short runs where the walk stops at `end` (past it: bytes
        # the repair is about to cut)
        for v in seg.walk(walk, reads_bytes=end is not None):
            if end is not None and v.position >= end:
                break
            expected.feed(v)
        if walk.stop is not None:
            result.valid_prefix_short.append(seg.log_path.name)
    return expected


def _plan_files(seg: Segment, expected: ExpectedIndexes, wrong: set[str] | None, result: IndexPlan) -> None:
    """Each index file of the segment against what recovery builds: a change (written where it differs and is
    wrong or missing), or why it is left alone."""
    for suffix, data in ((".index", expected.offset_index), (".timeindex", expected.time_index),
                         (".txnindex", expected.txn_index)):
        path = seg.path_with(suffix)
        if suffix == ".txnindex" and not data and not path.exists():
            continue  # Kafka creates a transaction index only when there is an abort to record
        if suffix == ".txnindex" and not expected.txn_index_known:
            result.txn_unknown.append(path.name)  # aborts of transactions opened before the data on disk
            continue
        try:
            change = FileChange.against_disk(path, bytes(data), around_read(seg.reading, path))
            if wrong is not None and change.old_size is not None and path.name not in wrong:
                change.changed = False
            result.changes.append(change)
        except OSError as e:
            result.unreadable.append(f"{path.name}: {e.strerror or e}")


def found_wrong(target: Target, reading: ReadPolicy | None) -> set[str]:
    """The names of the index files a check finds wrong in the target (missing ones are planned anyway)."""
    rep = check_target(target, deep=False, reading=reading)
    return {Path(f.file).name for f in rep.all_findings() if f.kind.fix is Fix.REBUILD_INDEXES and f.file}


def plan_paths(paths: list[Path], interval: int, force: bool = False, reading: ReadPolicy | None = None,
               bytes_known: Callable[[int], None] | None = None) -> IndexRebuild:
    """An index plan for every partition the PATHs name, and a line for each path that cannot be planned.
    Only index files a check finds wrong, and missing ones, are planned for writing unless `force`: an index
    built while appending can differ from the one recovery builds and still be right. The checks read under
    `reading` (`bytes_known` is told how many segment bytes they read); the plans then read what they need."""
    found = discover(paths)
    problems = [f"{f.file}: {f.message}" for f in found.findings]
    plans = []
    if bytes_known:
        bytes_known(sum(t.segment_bytes() for t in found.targets))
    for t in found.targets:
        if t.single_file and not t.path.name.endswith(".log"):
            problems.append(f"{t.path}: a KRaft snapshot has no indexes")
            continue
        path = canonical(t.path)  # a symlinked log dir is resolved once, here
        try:
            seen = look(path.parent if t.single_file else path)  # before reading: what moves later makes it stale
            wrong = None if force else found_wrong(t, reading)
            part = Target(path, t.kind).partition()
            plan = plan_index_rebuild(part.read_under(reading if force else None), interval, wrong=wrong)
        except OSError as e:
            problems.append(f"{t.path}: {e.strerror or e}")
            continue
        plan.seen = seen
        plans.append(plan)
    return IndexRebuild(plans, problems)


def rebuild(plans: list[IndexPlan], quarantine: Path, command: str) -> tuple[Path, int]:
    """Apply the plans through one quarantine run under the log dirs' locks: (the run, files written).
    Raises RepairRefused before the first write, RepairStopped after it."""
    staged: dict[str, bytes] = {}
    steps: list[Step] = [staged_write(c.path.parent, c.path.name, c.new, c.path.stem + ".log", staged)
                         for p in plans for c in p.pending]
    applied = carry_out(steps, staged, quarantine, "index-rebuild", command,
                        [p.seen for p in plans if p.pending and p.seen is not None])
    return applied.run, len(steps)
