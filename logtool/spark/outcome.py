"""What a check task sends back: for each partition it checked, verify's checks against the partition's log
dir (its checkpoint entries and the log dir's clean-shutdown marker, which the partition carries from the
listing: listing.RootFiles), then the rows of every table and, once per task, a `Tally` for the summary.
Pieces of a split partition go back whole, to be joined first."""
from __future__ import annotations

import pickle
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from logtool.checks.engine import check_against_log_dir
from logtool.spark.rows import (BATCH, FINDING, JUDGED, MISPLACED, PARTITION, PIECE, TALLY, batch_rows,
                                checked_findings, partition_row)
from logtool.recovery.verdict import Judged, judge
from logtool.spark.hosts import executor_host, named, same_host
from logtool.spark.split import Unit
from logtool.spark.summary import Tally
from logtool.spark.task import Checked, Settings, check_unit, item_not_audited, merge
from logtool.store.pacing import ReadPolicy

if TYPE_CHECKING:
    from pyspark import Accumulator


def unit_rows(settings: Settings, checked: "Accumulator[int]", unit: Unit) -> Iterator[tuple]:
    """The tagged rows (schema `rows.TAGGED`) of one unit's partitions; a piece's outcome as it is; a unit
    that ran off its host, to pin again. `checked` counts the items checked (the driver's progress)."""
    done = 0

    def counted(outcomes: Iterable[Checked | Unit]) -> Iterator[Checked | Unit]:
        nonlocal done
        for c in outcomes:  # streamed: a task's reports are not all held at once
            done += not isinstance(c, Unit)
            yield c

    reading = settings.read_policy()  # one per task: its checks and its verdict's reads alike
    yield from checked_rows(counted(check_unit(settings, unit, reading)), reading)
    checked.add(done)


def lost_rows(lost: tuple[Unit, str]) -> Iterator[tuple]:
    """The tagged rows of a pinned unit whose host is gone: each item not audited, saying why."""
    unit, why = lost
    yield from checked_rows(item_not_audited(item, why) for item in unit.items)


def checked_rows(outcomes: Iterable[Checked | Unit], reading: ReadPolicy | None = None) -> Iterator[tuple]:
    """The tagged rows of outcomes, and their `Tally` (what the verdict reads again, read under `reading`)."""
    tally = Tally()
    for c in outcomes:
        if isinstance(c, Unit):
            yield (MISPLACED, None, None, None, pickle.dumps(c, pickle.HIGHEST_PROTOCOL), None)
        elif c.item.piece is None:
            yield from _rows(c, tally, reading)
        else:
            yield (PIECE, None, None, None, pickle.dumps(c, pickle.HIGHEST_PROTOCOL), partition_path(c))
    yield (TALLY, None, None, None, pickle.dumps(tally, pickle.HIGHEST_PROTOCOL), None)


def merged_rows(settings: Settings, partitions: Iterable[Any]) -> Iterator[tuple]:
    """The tagged rows of split partitions, each given as the list of its pickled pieces (`pieces`)."""
    tally, reading = Tally(), settings.read_policy()
    for partition in partitions:
        pieces = (pickle.loads(b) for b in partition.pieces)
        yield from _rows(merge(pieces, settings.transaction_timeout_ms), tally, reading)
    yield (TALLY, None, None, None, pickle.dumps(tally, pickle.HIGHEST_PROTOCOL), None)


def gathered(rows: Iterable[Any]) -> Iterator[tuple[str, bytes]]:
    """Of the rows.TALLY and rows.JUDGED rows of a few tasks, on an executor: the judged ones as they are and
    the tallies added up into one, so that the driver receives a tally per slice of the work, not per task."""
    tally = Tally()
    for row in rows:
        if row.kind == TALLY:
            tally.merge(pickle.loads(row.blob))
        else:
            yield row.kind, row.blob
    yield TALLY, pickle.dumps(tally, pickle.HIGHEST_PROTOCOL)


def _rows(c: Checked, tally: Tally, reading: ReadPolicy | None) -> Iterator[tuple]:
    """A checked partition's rows."""
    # verify holds a partition against the log dir it sits in, when that log dir is one of the PATHs.
    root = c.item.root
    if root is not None:
        check_against_log_dir(root.report((c.report.topic, c.report.partition), c.item.checkpoints), c.report)
        c.broker = root.broker
    c.judged = _judged(c, reading)
    row = partition_row(c)
    tally.add(c, row)
    if c.judged.matters:
        yield (JUDGED, None, None, None, pickle.dumps((c.item.log_dir, c.judged), pickle.HIGHEST_PROTOCOL), None)
    for finding in checked_findings(c):
        yield (FINDING, finding, None, None, None, None)
    yield (PARTITION, None, row, None, None, None)
    for batch in batch_rows(c):
        yield (BATCH, None, None, batch, None, None)


def _judged(c: Checked, reading: ReadPolicy | None) -> Judged:
    """Its part of the verdict. What recovery would cut is worked out from its files (read under `reading`),
    which a pinned partition's pieces, joined on another host, cannot reach: then the verdict says so."""
    pin = c.item.pin
    if pin is not None and not same_host(pin.executor, executor_host()):
        return judge(c.report, None, f"its pieces were joined on {executor_host()}, not on {pin.asked}")
    return judge(c.report, c.item.target.path, reading=reading)


def blob(row: Any) -> Any:
    """The Python value a row of a blob kind (rows.PIECE, TALLY, JUDGED, MISPLACED) carries."""
    return pickle.loads(row.blob)


def partition_path(c: Checked) -> str:
    """The key the pieces of one partition are grouped by (rows.TAGGED's `key`)."""
    return named(c.item.pin, str(c.item.target.path))
