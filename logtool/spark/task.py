"""The executor side of the audit: one unit of work through exactly the checks of `logtool verify`, and the
pieces of a split partition joined again."""
from __future__ import annotations

import sys
import time
from array import array
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain
from dataclasses import dataclass, field, replace

from logtool.checks.partition import PartitionReport
from logtool.checks.engine import check_target
from logtool.checks.producers import DEFAULT_TRANSACTION_TIMEOUT_MS
from logtool.spark.pieces import check_piece, finish_pieces
from logtool.format.batch import BatchView
from logtool.findings import NOT_AUDITED, finding
from logtool.recovery.verdict import Judged
from logtool.format import kernel
from logtool.spark.hosts import executor_host, named, reader, same_host
from logtool.spark.listing import Sized
from logtool.store.layout import parse_partition_dir
from logtool.spark.split import Unit
from logtool.store.pacing import ReadPolicy, read_policy
from logtool.store.read_ahead import read_ahead
from logtool.store.discover import TargetKind


@dataclass(slots=True, frozen=True)
class Settings:
    deep: bool = False
    max_read_rate: float | None = None  # MB/s, per task
    spare_page_cache: bool = True
    replicas: bool = False  # keep every batch's key for the replica comparison
    transaction_timeout_ms: int = DEFAULT_TRANSACTION_TIMEOUT_MS

    def read_policy(self) -> ReadPolicy | None:
        """A task's reading policy: --max-read-rate caps each task, as the operator sizes it per disk."""
        return read_policy(self.max_read_rate, self.spare_page_cache)


# (base offset, last offset, stored CRC, partition leader epoch): what replicas must agree on batch by batch.
BatchKey = tuple[int, int, int, int]
_KEY_FIELDS = 4


def packed(keys: Sequence[BatchKey]) -> bytes:
    """Batch keys as one value, four little-endian int64 each in file order: a partition's travel and wait in
    the JVM as a row per block of offsets (rows.BLOCK_OFFSETS), not a row per batch (a fleet has millions)."""
    out = array("q", chain.from_iterable(keys))
    if sys.byteorder != "little":
        out.byteswap()
    return out.tobytes()


def unpacked(blob: bytes) -> list[BatchKey]:
    """The keys `packed` made."""
    values = array("q")
    values.frombytes(blob)
    if sys.byteorder != "little":
        values.byteswap()
    return list(zip(*(iter(values),) * _KEY_FIELDS))


@dataclass(slots=True)
class BatchKeys:
    """A lens keeping the key of every batch of the valid prefix."""

    keys: list[BatchKey] = field(default_factory=list)

    def feed(self, v: BatchView) -> None:
        # A legacy wrapper whose inner offsets cannot be read has no base offset; Kafka names it by its last.
        base = v.first_offset
        self.keys.append((base, v.last_offset, v.crc_stored, v.partition_leader_epoch))


@dataclass(slots=True)
class Checked:
    """One target's outcome: verify's report for it, where it ran, and its batch keys (with --replicas)."""

    item: Sized
    host: str
    report: PartitionReport
    seconds: float
    batches: list[BatchKey] = field(default_factory=list)
    judged: Judged | None = None  # its part of the verdict, once held against its log dir (spark/outcome.py)
    broker: tuple[str | None, int | None] = (None, None)  # its log dir's cluster and node id, when known


def task_threads() -> None:
    """The kernel checks a task's CRCs on the CPUs Spark gave the task (spark.task.cpus, 1 by default), not on
    every CPU of the executor: Spark already runs a task on each of them."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is not None and (fast := kernel.active()) is not None:
        fast.threads(max(1, ctx.cpus()))


def check_unit(settings: Settings, unit: Unit, reading: ReadPolicy | None = None) -> Iterator[Checked | Unit]:
    """Each item's outcome, read under `reading` (the task's `Settings.read_policy`, unless given); a pinned
    unit whose task Spark ran off its host (its locality wait ran out) comes back as it is, unread, for the
    driver to pin again (spark/rounds.py)."""
    pin = unit.pin
    here = executor_host()
    if pin is not None and not same_host(pin.executor, here):  # never another host's disk
        yield unit
        return
    if reading is None:
        reading = settings.read_policy()
    task_threads()
    items = list(unit.items)  # made from the unit's columns: a few thousand at most (split.MAX_TASK)
    # Whole partition dirs read ahead, as verify reads them (store/read_ahead.py): reading their small files
    # from Python took a third of a task's checks of small partitions. Not a piece: it walks some segments only.
    dirs = [item.target.path if item.piece is None and item.target.kind is TargetKind.PARTITION_DIR else None
            for item in items]
    with read_ahead(dirs, reading) as aheads:
        for item, ahead in zip(items, aheads):
            lens = BatchKeys() if settings.replicas else None
            start = time.perf_counter()
            if item.piece is None:
                report = check_target(item.target, settings.deep, reading, lens, settings.transaction_timeout_ms,
                                      ahead)
            else:
                report = check_piece(item.target, item.piece, settings.deep, reading, lens)
            report.path = named(item.pin, report.path)
            yield Checked(item, reader(item.pin, here), report, time.perf_counter() - start,
                          lens.keys if lens else [])


def item_not_audited(item: Sized, why: str) -> Checked:
    """The outcome of an item its host could not check: a finding, nothing read."""
    name = parse_partition_dir(item.target.path.name)
    rep = PartitionReport(named(item.pin, str(item.target.path)), *((name.topic, name.partition, name.kind)
                                                                   if name else (None, None)))
    rep.findings.append(finding(NOT_AUDITED, f"not audited: {why}", rep.path))
    return Checked(item, item.pin.asked if item.pin else "-", rep, 0.0)


def _first_offset(c: Checked) -> int:
    assert c.item.piece is not None, "only pieces are merged"
    return c.item.piece[0]


def merge(pieces: Iterable[Checked], transaction_timeout_ms: int = DEFAULT_TRANSACTION_TIMEOUT_MS) -> Checked:
    """The pieces of one split partition as one outcome, with the partition-level checks run once."""
    ordered = sorted(pieces, key=_first_offset)
    head = ordered[0].item
    whole = replace(head, piece=None, segments=tuple(s for c in ordered for s in c.item.segments))
    report = finish_pieces(head.target, [c.report for c in ordered], transaction_timeout_ms)
    hosts = ",".join(sorted({c.host for c in ordered}))
    return Checked(whole, hosts, report, sum(c.seconds for c in ordered), [k for c in ordered for k in c.batches])
