"""Work splitting: tasks balanced by bytes, not by count. Small partitions are grouped into one task; a
partition larger than a task is cut into pieces of whole segments, and `finish_pieces` joins them again."""
from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

from logtool.spark.listing import Sized

# What a task pays besides reading segment bytes, in bytes read at page-cache speed: listing a partition dir
# and checking the small files beside the segments, and opening a segment with its indexes. Without it
# thousands of empty partitions would count as no work at all and land in one task.
PARTITION_COST = 1 << 20
SEGMENT_COST = 256 << 10
# Task sizes when none is given: about two tasks per core, so that a slow task is caught up by the others
# (heaviest first), within bounds that keep one task's memory modest. Each task costs about 20 ms of
# scheduling and Python worker round trips on local[2]: on 2 GB, 4 tasks per core were 0.15 s slower.
TASKS_PER_CORE = 2
MIN_TASK = 32 << 20
MAX_TASK = 4 << 30


@dataclass(slots=True, frozen=True)
class Unit:
    """One Spark task's work: whole partitions, or one piece of a partition."""

    items: tuple[Sized, ...]
    weight: int
    host: str | None = None  # the executor host its items are pinned to (HOST:PATH), or anywhere


def weight(item: Sized) -> int:
    return PARTITION_COST + sum(SEGMENT_COST + size for _, size in item.segments)


def task_size(items: Sequence[Sized], cores: int) -> int:
    total = sum(weight(i) for i in items)
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


def split(items: Sequence[Sized], task_bytes: int) -> list[Unit]:
    """As many units as `task_bytes` makes of the whole, their weights as even as the items allow: each item,
    heaviest first, goes to the lightest unit so far (so no unit is heavier than the average by more than
    one item). Heaviest unit first: Spark starts tasks in this order, so the long ones do not come last.
    Items pinned to a host (HOST:PATH) are split among themselves: a unit runs on one host."""
    by_host: dict[str | None, list[Sized]] = {}
    for item in items:
        by_host.setdefault(item.pin.executor if item.pin else None, []).append(item)
    units = [u for host, group in by_host.items() for u in _split(group, task_bytes, host)]
    return sorted(units, key=lambda u: -u.weight)


def _split(items: Sequence[Sized], task_bytes: int, host: str | None) -> list[Unit]:
    work = sorted((p for i in items for p in pieces(i, task_bytes)), key=lambda p: (-weight(p), str(p.target.path)))
    count = max(1, min(len(work), -(-sum(map(weight, work)) // task_bytes)))
    loads = [(0, i) for i in range(count)]  # a heap of (weight so far, unit)
    members: list[list[Sized]] = [[] for _ in range(count)]
    for item in work:
        load, i = heapq.heappop(loads)
        members[i].append(item)
        heapq.heappush(loads, (load + weight(item), i))
    return [Unit(tuple(m), sum(map(weight, m)), host) for m in members if m]
