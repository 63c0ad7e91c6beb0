"""The truncate planner: what Kafka's recovery (LogLoader with recovery point 0, every segment recovered)
would do to a partition directory, as a plain value that can be printed, reviewed and then executed.

It reads (one walk of each segment, through the checks) and never writes. The plan names every action with
the byte and offset ranges it removes and the records they hold, so that nothing leaves the log unseen.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from logtool.checks.engine import Report, plan_targets
from logtool.checks.partition import PartitionReport, check_partition
from logtool.findings import Finding, Fix
from logtool.format.batch import BatchView
from logtool.format.meta import MetaError, leader_epochs
from logtool.recovery.index_rebuild import plan_index_rebuild
from logtool.store.layout import FileKind
from logtool.store.partition import Partition

LEADER_EPOCH_FILE = "leader-epoch-checkpoint"
_SEGMENT_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex")


class RecordCounter:
    """A lens that keeps the record count of every batch, in walk order (segments one after the other)."""

    def __init__(self) -> None:
        self.counts: list[int] = []

    def feed(self, view: BatchView) -> None:
        if view.magic >= 2:
            self.counts.append(view.count or 0)
        else:  # a legacy entry: one message, or a wrapper of last - first + 1
            first = view.base_offset if view.base_offset is not None else view.last_offset
            self.counts.append(view.last_offset - first + 1)


@dataclass(slots=True)
class Action:
    action: str  # keep, truncate, quarantine segment, rebuild indexes, drop leader-epoch entries, ...
    files: list[str]
    bytes_removed: int = 0
    byte_range: tuple[int, int] | None = None  # [start, end) removed from files[0]
    offsets: tuple[int, int] | None = None  # the offsets the removed (or kept) valid batches hold
    records: int = 0  # valid records removed (kept, for "keep")
    to_bytes: int | None = None  # truncate: the size that stays
    detail: str = ""
    new_contents: dict[str, bytes] = field(default_factory=dict, repr=False)  # rewritten files, not in JSON

    def to_dict(self) -> dict:
        return {"action": self.action, "files": self.files, "bytes_removed": self.bytes_removed,
                "byte_range": list(self.byte_range) if self.byte_range else None,
                "offsets": list(self.offsets) if self.offsets else None, "records": self.records,
                "to_bytes": self.to_bytes, "detail": self.detail}


@dataclass(slots=True)
class PartitionPlan:
    partition: Path
    actions: list[Action] = field(default_factory=list)
    log_start: int | None = None
    log_end_before: int | None = None
    log_end_after: int | None = None
    cause: Finding | None = None  # where the log is cut, and why
    valid_records_dropped: int = 0  # whole valid batches Kafka's rule drops with the later segments
    notes: list[str] = field(default_factory=list)

    @property
    def changes(self) -> list[Action]:
        return [a for a in self.actions if a.action != "keep"]

    def to_dict(self) -> dict:
        return {"partition": str(self.partition), "log_start_offset": self.log_start,
                "log_end_offset_before": self.log_end_before, "log_end_offset_after": self.log_end_after,
                "cut_at": self.cause.to_dict() if self.cause else None,
                "records_removed": sum(a.records for a in self.changes),
                "valid_records_dropped": self.valid_records_dropped,
                "actions": [a.to_dict() for a in self.actions], "notes": self.notes}


@dataclass(slots=True)
class RepairPlan:
    partitions: list[PartitionPlan] = field(default_factory=list)
    strict: bool = False
    problems: list[str] = field(default_factory=list)  # paths that could not be planned

    @property
    def pending(self) -> list[PartitionPlan]:
        return [p for p in self.partitions if p.changes]

    def to_dict(self) -> dict:
        return {"strict": self.strict, "partitions": [p.to_dict() for p in self.partitions],
                "problems": self.problems,
                "records_removed": sum(p.to_dict()["records_removed"] for p in self.partitions)}


def _cut(rep: PartitionReport, strict: bool) -> tuple[int, int, Finding] | None:
    """(segment index, byte position, finding) of the first place the log is cut; None: nowhere."""
    for i, seg in enumerate(rep.segments):
        stops = [f for f in seg.findings
                 if f.position is not None and (f.kind.cuts or (strict and f.kind.fix is Fix.TRUNCATE_STRICT))]
        if stops:
            first = min(stops, key=lambda f: f.position)
            return i, first.position, first
    return None


def plan_partition(part: Partition, strict: bool, interval: int) -> PartitionPlan:
    counter = RecordCounter()
    rep = check_partition(part, deep=False, lens=counter)
    plan = PartitionPlan(part.path)
    segs = rep.segments
    if not segs:
        return plan
    plan.log_start = segs[0].base_offset
    plan.log_end_before = rep.facts.log_end if rep.facts else None
    counts, at = [], 0
    for s in segs:  # each segment's batches' record counts, in order
        counts.append(counter.counts[at : at + s.batches])
        at += s.batches
    cut = _cut(rep, strict)
    kept: dict[str, int] = {}
    for i, s in enumerate(segs):
        offsets = (s.first_offset, s.last_offset) if s.first_offset is not None else None
        if cut is None or i < cut[0]:
            kept[s.file] = s.size
            plan.actions.append(Action("keep", [s.file], offsets=offsets, records=sum(counts[i])))
        elif i == cut[0]:
            _, position, finding = cut
            plan.cause = finding
            kept[s.file] = position
            removed = _batches_from(part, s.file, position, counts[i]) if position < s.valid_bytes else (None, 0)
            plan.actions.append(Action("truncate", [s.file], s.size - position, (position, s.size), removed[0],
                                       removed[1], to_bytes=position,
                                       detail=f"{finding.code} {finding.name}: {finding.message}"))
        else:
            files = [s.file] + [n for n in (Path(s.file).stem + x for x in _SEGMENT_SUFFIXES[1:]) if n in part.files]
            records = sum(counts[i])
            plan.valid_records_dropped += records
            plan.actions.append(Action("quarantine segment", files, s.size, (0, s.size), offsets, records,
                                       detail="Kafka's recovery deletes every segment after the one it cuts"))
    plan.log_end_after = _log_end(segs, kept, cut, part)
    if plan.valid_records_dropped:
        plan.notes.append(f"{plan.valid_records_dropped} valid record(s) in later segments leave the log with them, "
                          f"as Kafka's recovery would drop them; replicas that hold them can be re-fetched from "
                          f"(the bytes stay in the quarantine)")
    _plan_indexes(part, plan, kept, interval)
    _plan_side_files(part, plan)
    if not strict:
        for s in segs:
            for f in s.findings:
                if f.kind.fix is Fix.TRUNCATE_STRICT and (cut is None or (s.file, f.position) != (segs[cut[0]].file, cut[1])):
                    plan.notes.append(f"left as Kafka leaves it: {f.code} {f.name} in {s.file} at byte {f.position} "
                                      f"(--strict cuts there)")
    return plan


def _batches_from(part: Partition, file: str, position: int, counts: list[int]) -> tuple[tuple[int, int] | None, int]:
    """The offsets and records of the valid batches at and after `position` (a --strict cut inside the
    valid prefix)."""
    seg = next(s for s in part.segments if s.log_path.name == file)
    first = last = None
    records = 0
    with seg:
        for i, v in enumerate(seg.walk()):
            if v.position >= position:
                lo = v.base_offset if v.base_offset is not None else v.last_offset
                first = lo if first is None else first
                last = v.last_offset
                records += counts[i] if i < len(counts) else 0
    return ((first, last) if first is not None else None), records


def _log_end(segs, kept: dict[str, int], cut, part: Partition) -> int | None:
    """The log end offset once the plan is carried out: after the last batch that stays."""
    if cut is None:
        last = segs[-1]
        return last.last_offset + 1 if last.last_offset is not None else last.base_offset
    s = segs[cut[0]]
    seg = next(x for x in part.segments if x.log_path.name == s.file)
    end = s.base_offset
    with seg:
        for v in seg.walk():
            if v.position >= cut[1]:
                break
            end = v.last_offset + 1
    return end


def _plan_indexes(part: Partition, plan: PartitionPlan, kept: dict[str, int], interval: int) -> None:
    index_plan = plan_index_rebuild(part, interval, kept)
    pending = index_plan.pending
    if pending:
        plan.actions.append(Action(
            "rebuild indexes", [c.path.name for c in pending],
            detail=", ".join(f"{c.path.name}: {'missing' if c.old_size is None else c.old_size} -> {len(c.new)} bytes"
                             for c in pending),
            new_contents={c.path.name: c.new for c in pending}))


def _plan_side_files(part: Partition, plan: PartitionPlan) -> None:
    end = plan.log_end_after
    if end is None:
        return
    if LEADER_EPOCH_FILE in part.files:
        try:
            epochs = leader_epochs((part.path / LEADER_EPOCH_FILE).read_text())
        except (OSError, MetaError, UnicodeDecodeError) as e:
            plan.notes.append(f"{LEADER_EPOCH_FILE} cannot be read ({e}); left as it is")
            epochs = None
        # Kafka's loader truncates the leader-epoch cache to the log end: entries starting at or past it go.
        if epochs is not None and any(start >= end for _, start in epochs):
            keep = [(e, o) for e, o in epochs if o < end]
            text = "0\n" + f"{len(keep)}\n" + "".join(f"{e} {o}\n" for e, o in keep)
            dropped = [(e, o) for e, o in epochs if o >= end]
            plan.actions.append(Action("drop leader-epoch entries", [LEADER_EPOCH_FILE],
                                       detail=f"epochs starting at or after offset {end}: "
                                              + ", ".join(f"epoch {e} from {o}" for e, o in dropped),
                                       new_contents={LEADER_EPOCH_FILE: text.encode()}))
    for name, f in part.files.items():
        if f.kind is FileKind.SNAPSHOT and f.base_offset is not None and f.base_offset > end:
            plan.actions.append(Action("remove producer snapshot", [name], offsets=(f.base_offset, f.base_offset),
                                       detail=f"taken at offset {f.base_offset}, past the new log end {end}; "
                                              f"Kafka deletes it at load"))
        elif f.kind is FileKind.LEFTOVER and f.leftover in (".deleted", ".cleaned"):
            plan.actions.append(Action("handle leftover", [name],
                                       detail=f"a {f.leftover} file, which Kafka's loader deletes; kept in the quarantine"))
        elif f.kind is FileKind.LEFTOVER:
            plan.notes.append(f"{name}: left for the broker, which applies or discards a .swap at load")


def plan_repair(paths: list[Path], strict: bool, interval: int) -> RepairPlan:
    """The plan for every partition the PATHs name (log dirs or partition dirs)."""
    report = Report()
    result = RepairPlan(strict=strict)
    for t in plan_targets(paths, report):
        if t.single_file:
            result.problems.append(f"{t.path}: truncate works on partition dirs and log dirs, not on one segment file")
            continue
        try:
            part = Partition.from_dir(t.path)
            try:
                result.partitions.append(plan_partition(part, strict, interval))
            finally:
                part.close()
        except OSError as e:
            result.problems.append(f"{t.path}: {e.strerror or e}")
    result.problems[:0] = [f.message for f in report.findings]
    return result
