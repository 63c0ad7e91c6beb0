"""What a check task sends back: for each partition it checked, verify's checks against the partition's log
dir (its checkpoints and clean-shutdown marker, broadcast from the listing), then the rows of every table and,
once per task, a `Tally` for the summary. Pieces of a split partition go back whole, to be joined first."""
from __future__ import annotations

import pickle
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from logtool.checks.logdir import LogDirReport
from logtool.checks.engine import check_against_log_dir
from logtool.spark.listing import Sized
from logtool.spark.rows import (BATCH, FINDING, JUDGED, MISPLACED, PARTITION, PIECE, TALLY, Broker, batch_rows,
                                broker_of, checked_findings, partition_row)
from logtool.recovery.verdict import Judged, judge
from logtool.spark.hosts import executor_host, named, same_host
from logtool.spark.split import Unit
from logtool.spark.summary import Tally
from logtool.spark.task import Checked, Settings, check_unit, merge

if TYPE_CHECKING:
    from pyspark import Accumulator, Broadcast

LogDirs: TypeAlias = "Broadcast[dict[str, LogDirReport]]"


def unit_rows(settings: Settings, log_dirs: LogDirs, checked: "Accumulator[int]", unit: Unit) -> Iterator[tuple]:
    """The tagged rows (schema `rows.TAGGED`) of one unit's partitions; a piece's outcome as it is; an item
    that ran off its host, to pin again. `checked` counts the items checked (the driver's progress)."""
    done = 0

    def counted(outcomes: Iterable[Checked | Sized]) -> Iterator[Checked | Sized]:
        nonlocal done
        for c in outcomes:  # streamed: a task's reports are not all held at once
            done += not isinstance(c, Sized)
            yield c

    yield from checked_rows(log_dirs.value, counted(check_unit(settings, unit)))
    checked.add(done)


def checked_rows(log_dirs: dict[str, LogDirReport], outcomes: Iterable[Checked | Sized]) -> Iterator[tuple]:
    """The tagged rows of outcomes, and their `Tally`."""
    tally, brokers = Tally(), dict[str, Broker]()
    for c in outcomes:
        if isinstance(c, Sized):
            yield (MISPLACED, None, None, None, pickle.dumps(c, pickle.HIGHEST_PROTOCOL))
        elif c.item.piece is None:
            yield from _rows(log_dirs, c, tally, brokers)
        else:
            yield (PIECE, None, None, None, pickle.dumps(c, pickle.HIGHEST_PROTOCOL))
    yield (TALLY, None, None, None, pickle.dumps(tally, pickle.HIGHEST_PROTOCOL))


def merged_rows(settings: Settings, log_dirs: LogDirs, partitions: Iterable[Iterable[Checked]]) -> Iterator[tuple]:
    """The tagged rows of split partitions, each given as its pieces."""
    tally, brokers = Tally(), dict[str, Broker]()
    for pieces in partitions:
        yield from _rows(log_dirs.value, merge(pieces, settings.transaction_timeout_ms), tally, brokers)
    yield (TALLY, None, None, None, pickle.dumps(tally, pickle.HIGHEST_PROTOCOL))


def _rows(log_dirs: dict[str, LogDirReport], c: Checked, tally: Tally, brokers: dict[str, Broker]) -> Iterator[tuple]:
    """A checked partition's rows; `brokers` keeps each log dir's identity for the task's later partitions."""
    # verify holds a partition against the log dir it sits in, when that log dir is one of the PATHs.
    parent = str(Path(c.report.path).parent)
    ld = log_dirs.get(parent)
    if ld is not None:
        check_against_log_dir(ld, c.report)
    if parent not in brokers:
        brokers[parent] = broker_of(ld)
    c.broker = brokers[parent]
    c.judged = _judged(c)
    row = partition_row(c)
    tally.add(c, row)
    if c.judged.matters:
        yield (JUDGED, None, None, None, pickle.dumps((c.item.log_dir, c.judged), pickle.HIGHEST_PROTOCOL))
    for finding in checked_findings(c):
        yield (FINDING, finding, None, None, None)
    yield (PARTITION, None, row, None, None)
    for batch in batch_rows(c):
        yield (BATCH, None, None, batch, None)


def _judged(c: Checked) -> Judged:
    """Its part of the verdict. What recovery would cut is worked out from its files, which a pinned
    partition's pieces, joined on another host, cannot reach: then the verdict says so."""
    pin = c.item.pin
    if pin is not None and not same_host(pin.executor, executor_host()):
        return judge(c.report, None, f"its pieces were joined on {executor_host()}, not on {pin.asked}")
    return judge(c.report, c.item.target.path)


def blob(row: Any) -> Any:
    """The Python value a row of a blob kind (rows.PIECE, TALLY, JUDGED, MISPLACED) carries."""
    return pickle.loads(row.blob)


def partition_path(c: Checked) -> str:
    """The key the pieces of one partition are grouped by (here, not in the driver: executors unpickle it,
    and importing the driver's module would pull its progress display into every executor)."""
    return named(c.item.pin, str(c.item.target.path))
