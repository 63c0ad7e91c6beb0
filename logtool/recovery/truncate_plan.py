"""The truncate planner: what Kafka's recovery (LogLoader with recovery point 0, every segment recovered)
would do to a partition directory, as a plain value that can be printed, reviewed and then executed.

It reads (one walk of each segment, through the checks) and never writes. The plan names every action with
the byte and offset ranges it removes and the records they hold, so that nothing leaves the log unseen.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from logtool.checks.engine import found_report
from logtool.checks.logdir import LogDirReport, check_log_dir
from logtool.checks.partition import PartitionReport, check_partition
from logtool.checks.segment import SegmentReport
from logtool.findings import META_PROPERTIES_MISSING, TMP_LEFTOVER, Finding, Fix
from logtool.format.batch import BatchView
from logtool.format.meta import MetaError, leader_epochs, meta_properties_text, random_directory_id
from logtool.reads.salvage import next_batch
from logtool.recovery.seen import Seen, canonical, look
from logtool.recovery.index_rebuild import history_complete, plan_index_rebuild
from logtool.rules.expected_index import ExpectedIndexes
from logtool.rules.transactions import TxnTracker
from logtool.store.pacing import ReadPolicy
from logtool.store.discover import discover
from logtool.store.layout import FileKind, PathKind, classify_path, parse_partition_dir
from logtool.store.partition import Partition
from logtool.store.segment import Segment, WalkOutcome
from logtool.store.sidefile import read_side

LEADER_EPOCH_FILE = "leader-epoch-checkpoint"
_SEGMENT_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex")


class RecordCounter:
    """A lens that keeps the record count of every batch, in walk order (segments one after the other), and the
    highest offset any batch reached (offsets that go backwards can leave it above the last batch's)."""

    def __init__(self) -> None:
        self.counts: list[int] = []
        self.highest: int | None = None

    def feed(self, view: BatchView) -> None:
        if self.highest is None or view.last_offset > self.highest:
            self.highest = view.last_offset
        if view.magic >= 2:
            self.counts.append(view.count or 0)
        else:  # a legacy entry: one message, or a wrapper of last - first + 1
            first = view.first_offset
            self.counts.append(view.last_offset - first + 1)


class ActionKind(StrEnum):
    """What an action does: a closed set, so that the executor and the renderers can name every case. A str
    enum (StrEnum rather than (str, Enum): f-strings and str() give the value) compares equal to its string,
    and its value is the JSON's "action"."""

    KEEP = "keep"
    TRUNCATE = "truncate"
    QUARANTINE_SEGMENT = "quarantine segment"
    EXCISE = "excise"  # damaged bytes inside a cut tail (--excise): part of the truncate's bytes, not more
    SPLIT_OFF = "split off segment"  # valid batches of a cut tail that come back as a segment (--excise)
    REBUILD_INDEXES = "rebuild indexes"
    DROP_LEADER_EPOCHS = "drop leader-epoch entries"
    REMOVE_SNAPSHOT = "remove producer snapshot"
    HANDLE_LEFTOVER = "handle leftover"
    TRIM_CHECKPOINT = "trim checkpoint entry"
    WRITE_META = "rebuild meta.properties"  # missing, where the other log dirs leave one answer
    MOVE_DIR = "move directory to quarantine"  # a directory the broker refuses to start with
    REMOVE_TMP = "remove .tmp leftover"  # a checkpoint's interrupted rewrite, which Kafka ignores


@dataclass(slots=True)
class Action:
    action: ActionKind
    files: list[str]
    bytes_removed: int = 0
    byte_range: tuple[int, int] | None = None  # [start, end) removed from files[0]
    offsets: tuple[int, int] | None = None  # the offsets the removed (or kept) valid batches hold
    records: int = 0  # valid records removed (kept, for "keep")
    to_bytes: int | None = None  # truncate: the size that stays
    detail: str = ""
    new_contents: dict[str, bytes] = field(default_factory=dict, repr=False)  # rewritten files, not in JSON

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action.value, "files": self.files, "bytes_removed": self.bytes_removed,
                "byte_range": list(self.byte_range) if self.byte_range else None,
                "offsets": list(self.offsets) if self.offsets else None, "records": self.records,
                "to_bytes": self.to_bytes, "detail": self.detail}


@dataclass(slots=True)
class PartitionPlan:
    partition: Path
    actions: list[Action] = field(default_factory=list)
    log_start: int | None = None
    # Offsets one past the highest offset a valid batch holds anywhere, past damage too: what was written.
    log_end_as_written: int | None = None
    log_end_before: int | None = None  # the log end Kafka's recovery leaves (it stops at the first damage)
    log_end_after: int | None = None
    cause: Finding | None = None  # where the log is cut, and why
    excise: bool = False
    valid_records_dropped: int = 0  # valid records of the later segments Kafka's rule drops whole
    valid_records_dropped_by_kafka: int = 0  # every valid record as written that Kafka's recovery drops
    records_kept_by_excise: int = 0  # how many of those --excise keeps
    notes: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)  # files the walk could not read: nothing is planned
    seen: Seen | None = field(default=None, repr=False, compare=False)  # the dir as it was before the walk

    @property
    def changes(self) -> list[Action]:
        return [a for a in self.actions if a.action is not ActionKind.KEEP]

    @property
    def bytes_leaving(self) -> int:
        """Segment (.log) bytes that leave the log dir: the cut tails and the quarantined segments, less the
        stretches of cut tails split off as segments of their own (--excise). Index, snapshot and checkpoint
        files are not counted: they are rebuilt or rewritten from the log."""
        return self._gross(lambda a: a.bytes_removed) - sum(a.to_bytes or 0 for a in self._split_offs())

    @property
    def records_leaving(self) -> int:
        """Valid records that leave the log (split-off stretches stay in it)."""
        return self._gross(lambda a: a.records) - sum(a.records for a in self._split_offs())

    def _gross(self, amount: Callable[[Action], int]) -> int:
        # An excise action names bytes inside a truncate's cut tail: counting it too would count them twice.
        return sum(amount(a) for a in self.actions if a.action in (ActionKind.TRUNCATE, ActionKind.QUARANTINE_SEGMENT))

    def _split_offs(self) -> list[Action]:
        return [a for a in self.actions if a.action is ActionKind.SPLIT_OFF]

    def to_dict(self) -> dict[str, Any]:
        return {"partition": str(self.partition), "log_start_offset": self.log_start,
                "log_end_offset_as_written": self.log_end_as_written,
                "log_end_offset_before": self.log_end_before, "log_end_offset_kafka_recovery": self.log_end_before,
                "log_end_offset_after": self.log_end_after,
                "cut_at": self.cause.to_dict() if self.cause else None,
                "bytes_leaving": self.bytes_leaving, "records_leaving": self.records_leaving,
                "records_removed": self.records_leaving,  # the older name of records_leaving, kept for scripts
                "valid_records_dropped": self.valid_records_dropped,
                "valid_records_dropped_by_kafka": self.valid_records_dropped_by_kafka, "excise": self.excise,
                "records_kept_by_excise": self.records_kept_by_excise,
                "actions": [a.to_dict() for a in self.actions], "notes": self.notes}


@dataclass(slots=True)
class RepairPlan:
    partitions: list[PartitionPlan] = field(default_factory=list)
    strict: bool = False
    problems: list[str] = field(default_factory=list)  # paths that could not be planned
    log_dir_actions: list[tuple[Path, Action]] = field(default_factory=list)  # checkpoint entries corrected
    log_dir_notes: list[tuple[Path, str]] = field(default_factory=list)  # what the plan cannot do there, and why
    log_dir_seen: list[Seen] = field(default_factory=list, repr=False)  # the checkpoints, before they were read

    @property
    def pending(self) -> list[PartitionPlan]:
        return [p for p in self.partitions if p.changes]

    @property
    def has_changes(self) -> bool:
        """Anything to do: a partition to repair, or a log dir's own entry (a refused dir, a .tmp leftover)."""
        return bool(self.pending or self.log_dir_actions)

    @property
    def bytes_leaving(self) -> int:
        return sum(p.bytes_leaving for p in self.partitions)

    @property
    def records_leaving(self) -> int:
        return sum(p.records_leaving for p in self.partitions)

    def to_dict(self) -> dict[str, Any]:
        return {"strict": self.strict, "partitions": [p.to_dict() for p in self.partitions],
                "log_dirs": [dict(a.to_dict(), log_dir=str(d)) for d, a in self.log_dir_actions],
                "log_dir_notes": [{"log_dir": str(d), "note": n} for d, n in self.log_dir_notes],
                "problems": self.problems, "bytes_leaving": self.bytes_leaving,
                "records_leaving": self.records_leaving,
                "records_removed": self.records_leaving}  # the older name of records_leaving, kept for scripts


@dataclass(slots=True)
class Stretch:
    """A stretch of whole, valid batches of a damaged segment: [start, end) with its offsets and records."""

    start: int
    end: int
    first: int
    last: int
    highest: int  # the highest offset held: above `last` where offsets go backwards
    records: int


def stretches_after(seg: Segment, stop: int) -> list[Stretch]:
    """The stretches of valid batches of a segment after the bad bytes at `stop`: each stretch that salvage
    finds past damage (the next position where a whole batch validates). Only the tail is read."""
    stretches: list[Stretch] = []
    with seg:
        buf, size = seg.buf, seg.size
        counter = RecordCounter()
        pos = stop
        while pos < size:
            resume = next_batch(buf, pos + 1, size, seg.base_offset)
            if resume is None:
                break
            walk = WalkOutcome(size)
            stretch = _stretch(seg.walk(walk, start=resume), resume, counter)
            if stretch is not None:  # a batch that validates alone can still stop the walk (a bad marker)
                stretch.end = walk.valid_bytes
                stretches.append(stretch)
            if walk.stop is None:
                break
            pos = max(walk.stop.position, resume)
    return stretches


def _stretch(views: Iterator[BatchView], start: int, counter: RecordCounter) -> Stretch | None:
    """The stretch of the batches a walk from `start` yields (its end is the walk's to set); None when it
    yields none."""
    v = next(views, None)
    if v is None:
        return None
    counter.feed(v)
    first = v.first_offset
    stretch = Stretch(start, start, first, v.last_offset, v.last_offset, counter.counts.pop())
    for v in views:
        counter.feed(v)
        stretch.last, stretch.records = v.last_offset, stretch.records + counter.counts.pop()
        stretch.highest = max(stretch.highest, v.last_offset)
    return stretch


def plan_partition(part: Partition, strict: bool, interval: int, excise: bool = False) -> PartitionPlan:
    counter = RecordCounter()
    rep, fed = _check_for_plan(part, interval, counter)
    plan, planned = _plan_log(part, rep, counter, strict, excise)
    if planned is None:
        return plan
    segs, cuts, kept, pieces = planned
    if excise:
        kept.update({s.file: s.size for s in segs if s.file not in kept})
    _plan_indexes(part, plan, segs, cuts, kept, fed, interval)
    for seg, r in pieces:
        _plan_piece_indexes(seg, r, plan, interval)
    _plan_side_files(part, plan)
    if not strict:
        _note_left_for_strict(plan, segs)
    return plan


def plan_log_loss(part: Partition) -> PartitionPlan:
    """What Kafka's recovery takes out of the partition's log: `plan_partition`'s segment actions and numbers
    (the cut, the segments deleted, the valid records dropped, the log end offsets), without the index and
    side-file actions a repair adds, and so without the walk that works out the indexes (most of a damaged
    partition's cost to verify's verdict). Not a plan to carry out."""
    counter = RecordCounter()
    plan, _ = _plan_log(part, check_partition(part, deep=False, lens=counter), counter, False, False)
    return plan


_Planned = tuple[list[SegmentReport], dict[int, tuple[int, Finding]], dict[str, int], list[tuple[Segment, Stretch]]]


def _plan_log(part: Partition, rep: PartitionReport, counter: RecordCounter, strict: bool,
              excise: bool) -> tuple[PartitionPlan, _Planned | None]:
    """The plan's segment actions from the partition's checks (`rep`, its records counted by `counter`), and
    what the index actions are worked out from: (segments, cuts, bytes kept of each file, split-off pieces);
    None when nothing is planned (a file unreadable, or no segment)."""
    plan = PartitionPlan(part.path, excise=excise)
    plan.unreadable = [f.message for f in rep.all_findings() if f.kind.operational]
    segs = rep.segments
    if plan.unreadable or not segs:
        return plan, None
    plan.log_start = segs[0].base_offset
    plan.log_end_before = rep.facts.log_end if rep.facts else None
    counts = _counts_by_segment(counter.counts, segs)
    cuts = _cuts(rep, strict)
    # The valid batches past each segment's damage, as salvage finds them: what was written there, read once.
    salvage = {i: stretches_after(part.segments[i], s.first_invalid_position) for i, s in enumerate(segs)
               if s.first_invalid_position is not None}
    plan.log_end_as_written = _end_as_written(plan.log_end_before, counter.highest, salvage)
    plan.valid_records_dropped_by_kafka, plan.records_kept_by_excise = _dropped_by_kafka(part, segs, counts, salvage)
    kept, pieces = _plan_segments(part, plan, segs, counts, cuts, salvage)
    plan.log_end_after = _log_end(segs, kept, cuts, part, pieces)
    _note_dropped(plan)
    return plan, (segs, cuts, kept, pieces)


def _check_for_plan(part: Partition, interval: int,
                    counter: RecordCounter) -> tuple[PartitionReport, dict[str, ExpectedIndexes]]:
    """The partition's checks, with `counter` and the indexes recovery would build (by segment file) fed by
    their own walk: planning reads each segment once."""
    txns = TxnTracker(history_complete=history_complete(part))
    fed: dict[str, ExpectedIndexes] = {}

    def indexes_of(seg: Segment) -> ExpectedIndexes:
        fed[seg.log_path.name] = ExpectedIndexes(seg.base_offset, seg.buf, txns, interval)
        return fed[seg.log_path.name]

    return check_partition(part, deep=False, lens=counter, lens_for=indexes_of), fed


def _counts_by_segment(counts: list[int], segs: list[SegmentReport]) -> list[list[int]]:
    """Each segment's batches' record counts, in order, from the counts of the whole walk."""
    out, at = [], 0
    for s in segs:
        out.append(counts[at : at + s.batches])
        at += s.batches
    return out


def _held(s: SegmentReport) -> tuple[int, int] | None:
    """The offsets the segment's valid prefix holds; None when it holds no batch."""
    return (s.first_offset, s.last_offset) if s.first_offset is not None and s.last_offset is not None else None


def _plan_segments(part: Partition, plan: PartitionPlan, segs: list[SegmentReport], counts: list[list[int]],
                   cuts: dict[int, tuple[int, Finding]],
                   salvage: dict[int, list[Stretch]]) -> tuple[dict[str, int], list[tuple[Segment, Stretch]]]:
    """An action for every segment: kept, cut where the log is cut, or, after the first cut (without --excise),
    quarantined whole as Kafka's recovery deletes it. Returns the bytes that stay of each file, and the
    stretches split off as segments of their own (--excise)."""
    kept: dict[str, int] = {}
    pieces: list[tuple[Segment, Stretch]] = []
    dropping = False
    for i, s in enumerate(segs):
        tail = salvage.get(i, [])
        offsets = _span(_held(s), tail)
        cut = cuts.get(i)
        if dropping:
            files = [s.file] + [n for n in (Path(s.file).stem + x for x in _SEGMENT_SUFFIXES[1:]) if n in part.files]
            records = sum(counts[i]) + sum(r.records for r in tail)
            plan.valid_records_dropped += records
            plan.actions.append(Action(ActionKind.QUARANTINE_SEGMENT, files, s.size, (0, s.size), offsets, records,
                                       detail="Kafka's recovery deletes every segment after the one it cuts"))
            continue
        if cut is None:
            kept[s.file] = s.size
            plan.actions.append(Action(ActionKind.KEEP, [s.file], offsets=offsets, records=sum(counts[i])))
            continue
        position, finding = cut
        plan.cause = plan.cause or finding
        kept[s.file] = position
        plan.actions.append(_truncation(part, s, cut, counts[i], tail))
        if plan.excise:
            # From a --strict cut inside the prefix the batches after the cut one are kept as well.
            later = tail if position >= s.valid_bytes else stretches_after(part.segments[i], position)
            pieces += _plan_excise(part, plan, (part.segments[i], s.file), position, later)
        else:
            dropping = True
    return kept, pieces


def _truncation(part: Partition, s: SegmentReport, cut: tuple[int, Finding], counts: list[int],
                tail: list[Stretch]) -> Action:
    """The action that cuts the segment at the cut's position, naming every valid batch in the cut tail: the
    walk's from a --strict cut inside the valid prefix on, then salvage's past the damage (`tail`). With
    --excise some come back (split off), and are counted there."""
    position, finding = cut
    offsets, records = _batches_from(part, s.file, position, counts) if position < s.valid_bytes else (None, 0)
    return Action(ActionKind.TRUNCATE, [s.file], s.size - position, (position, s.size), _span(offsets, tail),
                  records + sum(r.records for r in tail), to_bytes=position,
                  detail=f"{finding.code} {finding.name}: {finding.message}")


def _plan_excise(part: Partition, plan: PartitionPlan, cut: tuple[Segment, str], position: int,
                 later: list[Stretch]) -> list[tuple[Segment, Stretch]]:
    """--excise: each stretch of valid batches after the cut at `position` of the segment (and its file's
    name) comes back as a segment of its own (unless its name is taken), the damaged bytes before it
    excised. Returns the stretches split off."""
    seg, file = cut
    pieces = []
    gap_start = position
    for r in later:
        name = _piece_name(r)
        if name in part.files:
            plan.notes.append(f"bytes {r.start}..{r.end} of {file} hold offsets {r.first}..{r.last}, but "
                              f"{name} exists already: they stay in the quarantine")
            continue
        plan.actions.append(Action(ActionKind.EXCISE, [file], r.start - gap_start, (gap_start, r.start),
                                   detail="damaged bytes between valid batches"))
        plan.actions.append(Action(ActionKind.SPLIT_OFF, [name, file], 0, (r.start, r.end),
                                   (r.first, r.last), r.records, to_bytes=r.end - r.start,
                                   detail=f"the valid batches after the damage become segment {name}"))
        pieces.append((seg, r))
        gap_start = r.end
    return pieces


def _note_dropped(plan: PartitionPlan) -> None:
    """The valid records the plan drops as Kafka's recovery would, and how many of them --excise keeps."""
    if plan.valid_records_dropped:
        plan.notes.append(f"{plan.valid_records_dropped} valid record(s) in later segments leave the log with them, "
                          f"as Kafka's recovery would drop them; replicas that hold them can be re-fetched from "
                          f"(the bytes stay in the quarantine)")
    if not plan.excise and plan.records_kept_by_excise:
        plan.notes.append(f"--excise would keep {plan.records_kept_by_excise} of these valid record(s) (leaving an "
                          f"offset gap where the damage is)")


def _note_left_for_strict(plan: PartitionPlan, segs: list[SegmentReport]) -> None:
    """What only --strict cuts: left as Kafka leaves it, and said so."""
    for s in segs:
        for f in s.findings:
            if f.kind.fix is Fix.TRUNCATE_STRICT:
                plan.notes.append(f"left as Kafka leaves it: {f.code} {f.name} in {s.file} at byte {f.position} "
                                  f"(--strict cuts there)")


def _cuts(rep: PartitionReport, strict: bool) -> dict[int, tuple[int, Finding]]:
    """Per segment index, the byte position and finding where the log is cut (the first one in the file)."""
    cuts: dict[int, tuple[int, Finding]] = {}
    for i, seg in enumerate(rep.segments):
        stops = [(f.position, f) for f in seg.findings
                 if f.position is not None and (f.kind.cuts or (strict and f.kind.fix is Fix.TRUNCATE_STRICT))]
        if stops:
            cuts[i] = min(stops, key=lambda stop: stop[0])
    return cuts


def _end_as_written(kafka_end: int | None, walked: int | None, salvage: dict[int, list[Stretch]]) -> int | None:
    """One past the highest offset of any valid batch as written, past damage too; at least Kafka's log end (a
    last segment without a batch still names the next offset)."""
    ends = [e for e in (kafka_end, None if walked is None else walked + 1) if e is not None]
    ends += [r.highest + 1 for stretches in salvage.values() for r in stretches]
    return max(ends, default=None)


def _dropped_by_kafka(part: Partition, segs: list[SegmentReport], counts: list[list[int]],
                      salvage: dict[int, list[Stretch]]) -> tuple[int, int]:
    """The valid records as written that Kafka's recovery drops: the ones past the damage of the first segment
    whose valid prefix ends early, and all of every later segment. And how many of them --excise keeps: all
    but the stretches whose split-off segment name is taken."""
    first = next((i for i, s in enumerate(segs) if s.first_invalid_position is not None), None)
    if first is None:
        return 0, 0
    stretches = [r for i in range(first, len(segs)) for r in salvage.get(i, [])]
    dropped = sum(sum(c) for c in counts[first + 1 :]) + sum(r.records for r in stretches)
    return dropped, dropped - sum(r.records for r in stretches if _piece_name(r) in part.files)


def _span(offsets: tuple[int, int] | None, stretches: list[Stretch]) -> tuple[int, int] | None:
    """The offsets of `offsets` stretched to the end of the stretches salvage found after them."""
    if not stretches:
        return offsets
    return (offsets[0] if offsets else stretches[0].first, stretches[-1].last)


def _piece_name(r: Stretch) -> str:
    """The segment a stretch split off with --excise becomes: named, as Kafka names one, by its first offset."""
    return f"{r.first:020d}.log"


def _plan_piece_indexes(seg: Segment, r: Stretch, plan: PartitionPlan, interval: int) -> None:
    """The indexes of a stretch split off as a segment, built as recovery builds them."""
    with seg:
        expected = ExpectedIndexes(r.first, seg.buf, TxnTracker(history_complete=False), interval, origin=r.start)
        for v in seg.walk(start=r.start):
            if v.position >= r.end:
                break
            expected.feed(v)
        expected.finish()
    stem = f"{r.first:020d}"
    contents = {stem + ".index": bytes(expected.offset_index), stem + ".timeindex": bytes(expected.time_index)}
    plan.actions.append(Action(ActionKind.REBUILD_INDEXES, list(contents),
                               detail=f"{', '.join(contents)} (new, for {stem}.log)", new_contents=contents))


def _batches_from(part: Partition, file: str, position: int, counts: list[int]) -> tuple[tuple[int, int] | None, int]:
    """The offsets and records of the valid batches at and after `position` (a --strict cut inside the
    valid prefix)."""
    seg = next(s for s in part.segments if s.log_path.name == file)
    span: tuple[int, int] | None = None
    records = 0
    with seg:
        for i, v in enumerate(seg.walk()):
            if v.position >= position:
                first = v.first_offset if span is None else span[0]
                span = first, v.last_offset
                records += counts[i] if i < len(counts) else 0
    return span, records


def _log_end(segs: list[SegmentReport], kept: dict[str, int], cuts: dict[int, tuple[int, Finding]], part: Partition,
             pieces: list[tuple[Segment, Stretch]]) -> int | None:
    """The log end offset once the plan is carried out: after the last batch that stays."""
    if pieces and pieces[-1][0] is part.segments[-1]:
        return pieces[-1][1].last + 1
    last = max(i for i, s in enumerate(segs) if s.file in kept)
    s = segs[last]
    if last not in cuts or cuts[last][0] >= s.valid_bytes:  # cut where the walk stopped: its last batch stays
        return s.last_offset + 1 if s.last_offset is not None else s.base_offset
    end = s.base_offset
    with part.segments[last] as seg:
        for v in seg.walk():
            if v.position >= cuts[last][0]:
                break
            end = v.last_offset + 1
    return end


def _plan_indexes(part: Partition, plan: PartitionPlan, segs: list[SegmentReport], cuts: dict[int, tuple[int, Finding]],
                  kept: dict[str, int], fed: dict[str, ExpectedIndexes], interval: int) -> None:
    # Recovery rebuilds the indexes of the segments it cuts; others are rewritten only where a check finds
    # them wrong (an index built while appending can differ from recovery's and still be right).
    wrong = {f.file for s in segs for f in s.findings if f.kind.fix is Fix.REBUILD_INDEXES and f.file}
    wrong |= {Path(segs[i].file).stem + x for i in cuts for x in _SEGMENT_SUFFIXES[1:]}
    # A cut inside the valid prefix (--strict) keeps less than the walk fed: those segments are walked again.
    exact = {s.file: fed[s.file] for i, s in enumerate(segs)
             if s.file in fed and (i not in cuts or cuts[i][0] >= s.valid_bytes)}
    index_plan = plan_index_rebuild(part, interval, kept, wrong, exact)
    for name in index_plan.overflow:
        plan.notes.append(f"{name} holds offsets more than 2^31-1 past its base (OFFSET_OVERFLOW): Kafka splits it at "
                          f"load; its indexes are left as they are")
    for line in index_plan.unreadable:
        plan.notes.append(f"{line}: left as it is")
    pending = index_plan.pending
    if pending:
        plan.actions.append(Action(
            ActionKind.REBUILD_INDEXES, [c.path.name for c in pending],
            detail=", ".join(f"{c.path.name}: {'missing' if c.old_size is None else c.old_size} -> {len(c.new)} bytes"
                             for c in pending),
            new_contents={c.path.name: c.new for c in pending}))


def _plan_side_files(part: Partition, plan: PartitionPlan) -> None:
    end = plan.log_end_after
    if end is None:
        return
    if LEADER_EPOCH_FILE in part.files:
        text, problem = part.side(LEADER_EPOCH_FILE).text()
        try:
            epochs = leader_epochs(text) if text is not None else None
        except MetaError as e:
            problem, epochs = str(e), None
        if problem is not None:
            plan.notes.append(f"{LEADER_EPOCH_FILE} cannot be read ({problem}); left as it is")
        # Kafka's loader truncates the leader-epoch cache to the log end: entries starting at or past it go.
        if epochs is not None and any(start >= end for _, start in epochs):
            keep = [(e, o) for e, o in epochs if o < end]
            text = "0\n" + f"{len(keep)}\n" + "".join(f"{e} {o}\n" for e, o in keep)
            dropped = [(e, o) for e, o in epochs if o >= end]
            plan.actions.append(Action(ActionKind.DROP_LEADER_EPOCHS, [LEADER_EPOCH_FILE],
                                       detail=f"epochs starting at or after offset {end}: "
                                              + ", ".join(f"epoch {e} from {o}" for e, o in dropped),
                                       new_contents={LEADER_EPOCH_FILE: text.encode()}))
    for name, f in part.files.items():
        if f.kind is FileKind.SNAPSHOT and f.base_offset is not None and f.base_offset > end:
            plan.actions.append(Action(ActionKind.REMOVE_SNAPSHOT, [name], offsets=(f.base_offset, f.base_offset),
                                       detail=f"taken at offset {f.base_offset}, past the new log end {end}; "
                                              f"Kafka deletes it at load"))
        elif f.kind is FileKind.LEFTOVER and f.leftover in (".deleted", ".cleaned"):
            plan.actions.append(Action(ActionKind.HANDLE_LEFTOVER, [name],
                                       detail=f"a {f.leftover} file, which Kafka's loader deletes; kept in the "
                                              "quarantine"))
        elif f.kind is FileKind.LEFTOVER:
            plan.notes.append(f"{name}: left for the broker, which applies or discards a .swap at load")


def plan_repair(paths: list[Path], strict: bool, interval: int, excise: bool = False,
                reading: ReadPolicy | None = None, bytes_known: Callable[[int], None] | None = None) -> RepairPlan:
    """The plan for every partition the PATHs name (log dirs or partition dirs), their segments read under
    `reading`; `bytes_known` is told how many segment bytes that is."""
    found = discover(paths)
    report = found_report(found)
    result = RepairPlan(strict=strict)
    if bytes_known:
        bytes_known(sum(t.segment_bytes() for t in found.targets))
    for t in found.targets:
        if t.single_file:
            result.problems.append(f"{t.path}: truncate works on partition dirs and log dirs, not on one segment file")
            continue
        path = canonical(t.path)  # a symlinked log dir is resolved once, here
        try:
            seen = look(path)  # before the walk: whatever moves from here on makes the plan stale
            part = Partition.from_dir(path).read_under(reading)
            try:
                planned = plan_partition(part, strict, interval, excise)
            finally:
                part.close()
        except OSError as e:
            result.problems.append(f"{t.path}: {e.strerror or e}")
            continue
        planned.seen = seen
        _note_links(planned, seen)
        if planned.unreadable:  # a plan blind to a file could drop or keep the wrong bytes: none is made
            result.problems.append(f"{t.path}: not planned: {'; '.join(planned.unreadable)}")
        else:
            result.partitions.append(planned)
    result.problems[:0] = [f"{f.file}: {f.message}" for f in report.findings]
    _plan_checkpoints(result, {Path(ld.path).absolute(): ld for ld in report.log_dirs})
    for ld in report.log_dirs:
        _plan_log_dir_entries(result, ld)
    _plan_meta_properties(result, report.log_dirs)
    return result


def _note_links(plan: PartitionPlan, seen: Seen) -> None:
    """A file the repair cuts that has other names too (a backup made with hard links) is never cut in place:
    the plan says so, since the file under this name becomes a new inode."""
    for a in plan.changes:
        if a.action is ActionKind.TRUNCATE and seen.links(a.files[0]) > 1:
            plan.notes.append(f"{a.files[0]} has {seen.links(a.files[0])} names (hard links): it is not cut in "
                              f"place; the cut copy replaces this name and the other names keep every byte")


# Kafka corrects these on load when they lie past the log end (the recovery point is lowered to it, the high
# watermark capped at it), so the repair writes what the broker would; the others it only reports.
_CORRECTED_AT_LOAD = ("recovery-point-offset-checkpoint", "replication-offset-checkpoint")
_REPORTED_PAST_END = {
    "log-start-offset-checkpoint": "at load the broker deletes every segment of this partition ('logEndOffset is "
                                   "smaller than logStartOffset'): do not start it before this entry is fixed by hand",
    "cleaner-offset-checkpoint": "the cleaner resets to the log start and compacts the whole log again",
}


# The fields every log dir of one broker shares; directory.id is each log dir's own.
_SHARED_META = ("version", "cluster.id", "node.id", "broker.id")


def _plan_meta_properties(result: RepairPlan, log_dirs: list[LogDirReport]) -> None:
    """A log dir without meta.properties gets one where the other log dirs given leave exactly one answer:
    they agree on every field but directory.id (which is made new, as Kafka makes it); otherwise the plan
    says why not, and what formats it instead."""
    missing = [ld for ld in log_dirs if any(f.name == META_PROPERTIES_MISSING.name for f in ld.findings)]
    if not missing:
        return
    answers = {tuple((k, ld.meta.get(k)) for k in _SHARED_META) for ld in log_dirs if ld.meta}
    for ld in missing:
        log_dir = Path(ld.path).resolve()
        if len(answers) != 1:
            why = "no other log dir given has one" if not answers else "the other log dirs given disagree"
            result.log_dir_notes.append((log_dir, f"meta.properties is missing and cannot be rebuilt: {why}. Give "
                                                  f"every log dir of this broker together, or format only the "
                                                  f"unformatted ones with `kafka-storage.sh format --config "
                                                  f"server.properties --cluster-id <cluster.id> --ignore-formatted`"))
            continue
        fields = {k: v for k, v in next(iter(answers)) if v is not None}
        if fields.get("version") == "1":
            fields["directory.id"] = random_directory_id()
        text = meta_properties_text(fields, time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime()))
        result.log_dir_actions.append((log_dir, Action(
            ActionKind.WRITE_META, ["meta.properties"],
            detail=f"rebuilt from the other log dirs given: "
                   f"{', '.join(f'{k}={v}' for k, v in sorted(fields.items()) if k != 'directory.id')}"
                   f"{', a new directory.id' if 'directory.id' in fields else ''}",
            new_contents={"meta.properties": text.encode()})))
        result.log_dir_seen.append(look(log_dir, ["meta.properties"]))


def _plan_log_dir_entries(result: RepairPlan, ld: LogDirReport) -> None:
    """The log dir's own entries the broker refuses or ignores: a directory that is not a partition (the
    broker refuses to start with it) goes to the quarantine; a checkpoint's .tmp leftover goes too."""
    log_dir = Path(ld.path).resolve()
    moved = [f.file for f in ld.findings if f.kind.fix is Fix.MOVE_OUT and f.file]
    leftovers = [f.file for f in ld.findings if f.name == TMP_LEFTOVER.name and f.file]
    if moved:
        result.log_dir_actions.append((log_dir, Action(
            ActionKind.MOVE_DIR, moved, detail="the broker refuses to start with a directory that is not a partition "
                                               "in its log dir; kept whole in the quarantine")))
    if leftovers:
        result.log_dir_actions.append((log_dir, Action(
            ActionKind.REMOVE_TMP, leftovers, detail="an interrupted rewrite Kafka ignores (the file it was to replace "
                                                     "is whole); kept in the quarantine")))
    if moved or leftovers:
        result.log_dir_seen.append(look(log_dir, moved + leftovers))


def _plan_checkpoints(result: RepairPlan, log_dirs: dict[Path, LogDirReport]) -> None:
    """Offset checkpoint entries of the repaired partitions that lie past their new log end."""
    by_dir: dict[Path, list[PartitionPlan]] = {}
    for p in result.pending:
        by_dir.setdefault(p.partition.absolute().parent, []).append(p)
    for log_dir, plans in by_dir.items():
        ld = log_dirs.get(log_dir) or _log_dir_report(log_dir)
        if ld is None:
            continue
        for file, entries in ld.offsets.items():
            lowered = _past_new_ends(file, entries, plans)
            if not lowered:
                continue
            result.log_dir_seen.append(look(log_dir, [file]))
            text, problem = read_side(log_dir / file).text()
            if text is None:
                result.problems.append(f"{log_dir / file}: {problem}; its entries past the new log ends stay")
            else:
                text = _rewritten_checkpoint(text, lowered)
                result.log_dir_actions.append((log_dir, Action(
                    ActionKind.TRIM_CHECKPOINT, [file],
                    detail=", ".join(f"{t}-{n} -> {o}" for (t, n), o in sorted(lowered.items())),
                    new_contents={file: text.encode()})))


def _log_dir_report(log_dir: Path) -> LogDirReport | None:
    """The checks of a log dir the PATHs did not name (a partition dir's parent); None where it is not one."""
    try:
        return check_log_dir(log_dir) if classify_path(log_dir) is PathKind.LOG_DIR else None
    except OSError:
        return None


def _past_new_ends(file: str, entries: dict[tuple[str, int], int],
                   plans: list[PartitionPlan]) -> dict[tuple[str, int], int]:
    """The entries of an offset checkpoint that lie past their partition's new log end, lowered to it where the
    broker lowers them at load; the others are only noted on their partition's plan."""
    lowered: dict[tuple[str, int], int] = {}
    for p in plans:
        name = parse_partition_dir(p.partition.name)
        if name is None:
            continue
        key = (name.topic, name.partition)
        offset = entries.get(key)
        if offset is None or p.log_end_after is None or offset <= p.log_end_after:
            continue
        if file in _CORRECTED_AT_LOAD:
            lowered[key] = p.log_end_after
            p.notes.append(f"{file}: {offset} lies past the new log end {p.log_end_after}; lowered to it, "
                           f"as the broker would at load")
            if file == "replication-offset-checkpoint":
                p.notes.append(f"offsets {p.log_end_after}..{offset - 1} were committed (below the high "
                               f"watermark) and this replica no longer holds them: let it re-fetch them from "
                               f"an in-sync replica, and do not let it become leader first")
        elif file in _REPORTED_PAST_END:
            p.notes.append(f"{file}: {offset} lies past the new log end {p.log_end_after}; "
                           f"{_REPORTED_PAST_END[file]}")
    return lowered


def _rewritten_checkpoint(text: str, lowered: dict[tuple[str, int], int]) -> str:
    """The checkpoint with the entries of `lowered` set to new offsets, every other line as it was."""
    out = []
    for line in text.splitlines(keepends=True):
        parts = line.split()
        if len(parts) == 3 and parts[1].lstrip("-").isdigit() and (parts[0], int(parts[1])) in lowered:
            line = f"{parts[0]} {parts[1]} {lowered[(parts[0], int(parts[1]))]}\n"
        out.append(line)
    return "".join(out)
