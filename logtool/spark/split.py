"""Work splitting: tasks balanced by bytes, not by count. Small partitions are grouped into one task; a
partition larger than a task is cut into pieces of whole segments, and `finish_pieces` joins them again.

The driver splits the listings' columns (`listing.Targets`) as they are: a weight per target in an array,
the deal as arrays of target numbers, and each task's share copied into a `Targets` of its own; only the few
partitions heavier than a task are made `Sized`, to be cut."""
from __future__ import annotations

import bisect
import heapq
from array import array
from collections.abc import Sequence
from dataclasses import dataclass

from logtool.spark.hosts import Pin
from logtool.spark.listing import Sized, Targets, TargetsBuilder
from logtool.store.discover import TargetKind

# What a task pays besides reading segment bytes, in bytes read at page-cache speed: listing a partition dir
# and checking the small files beside the segments, and opening a segment with its indexes. Without it
# thousands of empty partitions would count as no work at all and land in one task.
PARTITION_COST = 1 << 20
SEGMENT_COST = 256 << 10
# Task sizes when none is given: about two tasks per core, so that a slow task is caught up by the others
# (heaviest first), within bounds that keep one task's memory modest. No more than that: each task costs
# its scheduling and its Python worker's round trips (bench/audit.py measures a further task's cost).
TASKS_PER_CORE = 2
MIN_TASK = 32 << 20
MAX_TASK = 4 << 30


@dataclass(slots=True, frozen=True)
class Unit:
    """One Spark task's work: whole partitions, or pieces of partitions, all pinned to one host or to none."""

    items: Targets
    weight: int
    pin: Pin | None = None  # where its items must be read (HOST:PATH), or anywhere

    @property
    def host(self) -> str | None:
        """The executor host its items are pinned to, or None."""
        return self.pin.executor if self.pin else None


def weight(item: Sized) -> int:
    return PARTITION_COST + sum(SEGMENT_COST + size for _, size in item.segments)


def weights(targets: Targets) -> array:
    """`weight` of each target, from the columns."""
    out = array("q")
    start = 0
    sizes = targets.sizes
    for end in targets.seg_end:
        out.append(PARTITION_COST + (end - start) * SEGMENT_COST + sum(sizes[start:end]))
        start = end
    return out


def task_size(items: Sequence[Sized] | Sequence[Targets], cores: int) -> int:
    """The default task size for `items` (targets, or listings' columns) on `cores` cores."""
    total = sum(sum(weights(i)) if isinstance(i, Targets) else weight(i) for i in items)
    share = max(1, cores * TASKS_PER_CORE)
    # Past MAX_TASK, more tasks, but whole rounds of `share`: a last task must not be left to run alone.
    rounds = max(1, -(-total // (share * MAX_TASK)))
    return max(MIN_TASK, -(-total // (share * rounds)))  # rounded up, so the split makes no extra task


def pieces(item: Sized, task_bytes: int) -> list[Sized]:
    """`item` itself, or consecutive runs of its segments of about `task_bytes` each (a segment larger than
    that alone). Piece i covers the base offsets from its first segment's to the next piece's first, the
    first from 0 and the last to the end, so that a segment rolled or deleted since the listing still falls
    in exactly one piece."""
    if item.target.single_file or len(item.segments) < 2 or weight(item) <= task_bytes:
        return [item]
    runs: list[list[tuple[int, int]]] = [[]]
    load = 0
    for seg in item.segments:
        cost = SEGMENT_COST + seg[1]
        if runs[-1] and load + cost > task_bytes:
            runs.append([])
            load = 0
        runs[-1].append(seg)
        load += cost
    if len(runs) == 1:
        return [item]
    starts = [0] + [run[0][0] for run in runs[1:]]
    ends: list[int | None] = starts[1:] + [None]
    return [item.cut(first, end, tuple(run)) for first, end, run in zip(starts, ends, runs)]


def split(items: Sequence[Sized] | Sequence[Targets], task_bytes: int) -> list[Unit]:
    """As many units as `task_bytes` makes of the whole, their weights as even as the items allow: each item,
    heaviest first, goes to the lightest unit so far (so no unit is heavier than the average by more than
    one item). Heaviest unit first: Spark starts tasks in this order, so the long ones do not come last.
    Items pinned to a host (HOST:PATH) are split among themselves, one pin to a unit. `items` are targets,
    or the listings' columns (the driver's: no object made per target)."""
    parts = [i for i in items if isinstance(i, Targets)]
    if len(parts) != len(items):
        parts = [Targets.of(i for i in items if isinstance(i, Sized))]
    by_pin: dict[Pin | None, list[tuple[Targets, Sequence[int]]]] = {}
    for part in parts:
        pins = {g.pin for g in part.groups}
        for pin in pins:
            chosen: Sequence[int] = range(len(part)) if len(pins) == 1 else \
                array("I", (i for i in range(len(part)) if part.groups[part.group[i]].pin == pin))
            by_pin.setdefault(pin, []).append((part, chosen))
    units = [u for pin, group in by_pin.items() for u in _split(group, task_bytes, pin)]
    return sorted(units, key=lambda u: -u.weight)


def _split(members: list[tuple[Targets, Sequence[int]]], task_bytes: int, pin: Pin | None) -> list[Unit]:
    # Every target numbered in one sequence (its part's by `starts`), with its weight; a partition heavier
    # than a task is replaced by its pieces, numbered after the whole targets.
    w, starts = array("q"), []
    for part, chosen in members:
        starts.append(len(w))
        every = weights(part)
        w += every if isinstance(chosen, range) else array("q", (every[i] for i in chosen))
    whole = len(w)
    cut: list[Sized] = []
    for j in [j for j, x in enumerate(w) if x > task_bytes]:
        k = bisect.bisect_right(starts, j) - 1
        part, chosen = members[k]
        i = chosen[j - starts[k]]
        if part.groups[part.group[i]].kind is TargetKind.RECORDS_FILE or part.segment_count(i) < 2:
            continue  # never cut (`pieces`): not made a Sized
        if len(got := pieces(part.item(i), task_bytes)) > 1:
            w[j] = -1  # dealt as its pieces
            cut += got
    w += array("q", map(weight, cut))
    # Heaviest first; equal weights in listing order (a stable sort).
    order = array("I", sorted(range(len(w)), key=w.__getitem__, reverse=True))
    work, dealt = sum(1 for x in w if x > 0), sum(x for x in w if x > 0)
    count = max(1, min(work, -(-dealt // task_bytes)))
    loads = [(0, u) for u in range(count)]  # a heap of (weight so far, unit)
    shares = [array("I") for _ in range(count)]
    for j in order:
        if w[j] < 0:
            break
        load, u = loads[0]
        shares[u].append(j)
        heapq.heapreplace(loads, (load + w[j], u))
    del order
    units = []
    for share in shares:
        if not share:
            continue
        built = TargetsBuilder()
        for j in share:
            if j >= whole:
                built.add_sized(cut[j - whole])
            else:
                k = bisect.bisect_right(starts, j) - 1
                part, chosen = members[k]
                built.add_from(part, chosen[j - starts[k]])
        units.append(Unit(built.targets, sum(w[j] for j in share), pin))
    return units
