"""Offset checkpoints against each partition of their log dir, once it was walked (entries naming no partition
dir are a check of the log dir itself, in logdir.py).

LogManager writes recovery points and log start offsets, ReplicaManager high watermarks, the log cleaner
the offsets it cleaned up to. Each entry must name a partition of the log dir and lie within its log;
the recovery-point and replication checkpoints list every partition the broker loaded.
"""
from __future__ import annotations

import bisect
import os

from logtool.findings import (
    CHECKPOINT_BELOW_LOG_START, CHECKPOINT_ENTRY_MISSING, CLEANER_OFFSET_BEYOND_LOG, HIGH_WATERMARK_BEYOND_LOG,
    LOG_START_BEYOND_LOG, RECOVERY_POINT_BEYOND_LOG, RECOVERY_SKIPS_DAMAGE, finding)
from logtool.checks.logdir import LogDirReport
from logtool.checks.partition import PartitionReport
from logtool.store.layout import CLUSTER_METADATA

RECOVERY = "recovery-point-offset-checkpoint"
HIGH_WATERMARK = "replication-offset-checkpoint"
LOG_START = "log-start-offset-checkpoint"
CLEANER = "cleaner-offset-checkpoint"

# Written for every partition the broker loads; log-start lists only logs whose start is above their first
# segment (`checkpointLogStartOffsetsInDir`), the cleaner's only compacted logs.
_LIST_EVERY_PARTITION = (RECOVERY, HIGH_WATERMARK)

# Past the log end: the kind, and what it means ({offset}: the value, {end}: the log end, {where}: why that
# end, {span}: the offsets in between).
_BEYOND = {
    RECOVERY: (RECOVERY_POINT_BEYOND_LOG, "recovery point {offset}, but {where}: {span} had been flushed and "
                                        "{is_are} gone; the broker lowers the recovery point to {end}"),
    HIGH_WATERMARK: (HIGH_WATERMARK_BEYOND_LOG, "high watermark {offset}, but {where}: {span} {was_were} committed "
                                              "and {is_are} missing from this replica"),
    LOG_START: (LOG_START_BEYOND_LOG, "log start offset {offset}, but {where}: the broker deletes every segment of "
                                    "the partition at load"),
    CLEANER: (CLEANER_OFFSET_BEYOND_LOG, "cleaned up to offset {offset}, but {where}: {span} {is_are} gone; the "
                                       "cleaner starts over from the log start"),
}
# Below the first segment: what the value is called.
_WHAT = {RECOVERY: "recovery point", HIGH_WATERMARK: "high watermark", LOG_START: "log start offset",
         CLEANER: "cleaned offset"}

def check_partition_checkpoints(ld: LogDirReport, part: PartitionReport) -> None:
    """The entries of `ld`'s checkpoints for one of its partitions, against what its walk found."""
    # Being deleted, stray, or Raft's: on disk, but in no checkpoint by design.
    if part.topic is None or part.dir_kind not in ("plain", "future") \
            or os.path.basename(part.path) == CLUSTER_METADATA:
        return
    key = (part.topic, part.partition)
    log_starts = ld.offsets.get(LOG_START, {})
    for file, entries in ld.offsets.items():
        if key in entries:
            _check_value(file, entries[key], part, log_starts.get(key, 0))
    for file in _LIST_EVERY_PARTITION:
        # A missing or unreadable file is reported by the log-dir check.
        if file in ld.offsets and key not in ld.offsets[file]:
            part.findings.append(finding(CHECKPOINT_ENTRY_MISSING, f"{file} does not list {key[0]}-{key[1]}", file))


def _check_value(name: str, offset: int, part: PartitionReport, log_start_entry: int) -> None:
    facts = part.facts
    if facts is None:
        return  # the partition could not be read: nothing to hold the value against
    start, end = facts.log_start, facts.log_end
    empty = start is None or end is None  # (both are, or neither)
    if start is None or end is None:  # (`empty`, spelt so that mypy narrows both)
        # No segment: the broker starts the partition empty at its checkpointed log start.
        start = end = log_start_entry
    if name == RECOVERY and _skips_damage(offset, facts.cut_segment, part):
        part.findings.append(finding(RECOVERY_SKIPS_DAMAGE, f"recovery point {offset} lies after the damage in "
                                     f"{facts.cut_segment:020d}.log; recovery starts at the segment holding "
                                     f"the recovery point", name, offset=offset))
    elif offset > end:
        kind, message = _BEYOND[name]
        where = f"the partition has no segment: the broker starts it empty at offset {end}" if empty \
            else f"the log end offset is {end}"
        one = offset - end == 1
        span = f"offset {end}" if one else f"offsets {end}..{offset - 1}"
        text = message.format(offset=offset, end=end, where=where, span=span, is_are="is" if one else "are",
                              was_were="was" if one else "were")
        part.findings.append(finding(kind, text, name, offset=offset))
    elif offset < start:
        part.findings.append(finding(CHECKPOINT_BELOW_LOG_START, f"{_WHAT[name]} {offset} is below the log start "
                                     f"offset {start}", name, offset=offset))


def _skips_damage(recovery_point: int, damaged: int | None, part: PartitionReport) -> bool:
    """Whether recovery from the recovery point starts past the segment `damaged` (the base offset of the first
    one recovery would cut). Kafka recovers from the last segment whose base is at or below the recovery point
    (`LogSegments.values(recoveryPoint, ...)`), or from the first segment when there is none."""
    if damaged is None:
        return False
    bases = [s.base_offset for s in part.segments]
    floor = bisect.bisect_right(bases, recovery_point) - 1
    return floor >= 0 and bases[floor] > damaged
