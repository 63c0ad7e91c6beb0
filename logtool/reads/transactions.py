"""Transactions per producer, read from a partition's batches: what `logtool txn` tabulates (the statistics
tools such as klog compute by parsing kafka-dump-log's text, taken from the files directly).

A transactional producer's data batches open a transaction at the first of them; its COMMIT or ABORT marker
ends it. Durations run from the first batch's first timestamp to the marker's. Only the valid prefix of each
segment is read, as Kafka's recovery would keep it.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from logtool import exitcodes
from logtool.findings import Finding, Severity
from logtool.format import Bytes
from logtool.format.batch import BatchView
from logtool.format.records import RecordError, first_control
from logtool.store.discover import cannot_read, discover
from logtool.store.segment import WalkOutcome


@dataclass(slots=True)
class _Open:
    first_offset: int
    first_timestamp: int
    records: int = 0


@dataclass(slots=True)
class ProducerTxns:
    """One producer id's transactions in one partition."""

    producer_id: int
    epoch: int = -1  # the last epoch it wrote with
    committed: int = 0
    aborted: int = 0
    committed_records: int = 0
    aborted_records: int = 0
    bytes: int = 0  # of its transactional data batches
    durations_ms: list[int] = field(default_factory=list)  # of each ended transaction
    open: _Open | None = None
    first_timestamp: int | None = None
    last_timestamp: int | None = None

    def to_dict(self) -> dict:
        d = self.durations_ms
        return {"producer_id": self.producer_id, "epoch": self.epoch, "committed": self.committed,
                "aborted": self.aborted, "open_since_offset": self.open.first_offset if self.open else None,
                "open_since_timestamp": self.open.first_timestamp if self.open else None,
                "committed_records": self.committed_records, "aborted_records": self.aborted_records,
                "open_records": self.open.records if self.open else 0, "bytes": self.bytes,
                "duration_ms_min": min(d, default=None), "duration_ms_max": max(d, default=None),
                "duration_ms_mean": round(sum(d) / len(d)) if d else None,
                "first_timestamp": self.first_timestamp, "last_timestamp": self.last_timestamp}


class TxnTable:
    """Fed every batch of a partition in offset order (`feed(buf, view)`), it keeps each producer's transactions."""

    def __init__(self) -> None:
        self.producers: dict[int, ProducerTxns] = {}
        self.last_timestamp: int | None = None

    def feed(self, buf: Bytes, v: BatchView) -> None:
        if v.magic < 2:
            return
        if self.last_timestamp is None or v.max_timestamp > self.last_timestamp:
            self.last_timestamp = v.max_timestamp
        if not v.is_transactional or v.producer_id < 0:
            return
        p = self.producers.get(v.producer_id)
        if p is None:
            p = self.producers[v.producer_id] = ProducerTxns(v.producer_id)
        p.epoch = v.producer_epoch
        p.first_timestamp = v.max_timestamp if p.first_timestamp is None else p.first_timestamp
        p.last_timestamp = v.max_timestamp
        if not v.is_control:
            assert v.base_offset is not None and v.count is not None  # a v2 header holds both
            if p.open is None:
                p.open = _Open(v.base_offset, v.first_record_timestamp)
            p.open.records += v.count if v.count >= 0 else 0
            p.bytes += v.size
            return
        try:
            marker = first_control(buf, v)
        except RecordError:
            return  # the walker ends the valid prefix at an unreadable marker: none is fed here
        if marker is None or marker.type_id not in (0, 1):
            return  # emptied by the cleaner, or not a transaction marker
        done, p.open = p.open, None
        if done is None:
            return  # a marker for a transaction whose batches are not in this log (retention, compaction)
        if marker.type_id == 1:
            p.committed += 1
            p.committed_records += done.records
        else:
            p.aborted += 1
            p.aborted_records += done.records
        p.durations_ms.append(v.max_timestamp - done.first_timestamp)


def read_transactions(part) -> tuple[TxnTable, list[str]]:
    """Every producer's transactions in `part` (its segments in offset order), and a note for each segment
    whose valid prefix ends before its file does (what follows was not read)."""
    table, notes = TxnTable(), []
    for seg in part.segments:
        outcome = WalkOutcome(seg.size)
        with seg:
            for v in seg.walk(outcome):
                table.feed(seg.buf, v)
        if outcome.stop is not None:
            notes.append(f"{seg.log_path.name}: read up to byte {outcome.stop.position} of {seg.size}, where its valid "
                         f"prefix ends (`logtool verify` says why)")
    return table, notes


@dataclass(slots=True)
class TxnReport:
    """`txn`'s result: a row per partition with its producers' transactions, and the paths that could not be
    read."""

    partitions: list[dict[str, Any]] = field(default_factory=list)
    unread: list[Finding] = field(default_factory=list)

    @property
    def hanging(self) -> int:
        return sum(1 for p in self.partitions for r in p["producers"] if r["hanging"])

    def exit_code(self, fail_on: Severity = Severity.WARNING) -> int:
        return exitcodes.OPERATIONAL if self.unread else exitcodes.PROBLEMS if self.hanging else exitcodes.CLEAN

    def summary(self) -> dict[str, Any]:
        producers = [r for p in self.partitions for r in p["producers"]]
        return {"partitions": len(self.partitions), "producers": len(producers),
                "committed": sum(r["committed"] for r in producers), "aborted": sum(r["aborted"] for r in producers),
                "open": sum(1 for r in producers if r["open_since_offset"] is not None), "hanging": self.hanging}

    def to_dict(self) -> dict[str, Any]:
        return {"partitions": self.partitions, "summary": self.summary()}

    def rows(self) -> Iterator[dict[str, Any]]:
        return ({"type": "producer", "path": p["path"], "topic": p["topic"], "partition": p["partition"], **r}
                for p in self.partitions for r in p["producers"])

    def stderr_lines(self) -> list[str]:
        return [f"logtool: {f.file}: {f.message}" for f in self.unread]


def transactions_of(paths: list[Path], timeout_ms: int) -> TxnReport:
    """Every producer's transactions in each partition the PATHs name; one open longer than `timeout_ms`
    before its partition's last record is hanging."""
    found = discover(paths)
    result = TxnReport(unread=list(found.findings))
    for target in found.targets:
        try:
            part = target.partition()
        except OSError as e:
            result.unread.append(cannot_read(target.path, e))
            continue
        try:
            table, notes = read_transactions(part)
        except OSError as e:
            result.unread.append(cannot_read(target.path, e))
            continue
        finally:
            part.close()
        producers = []
        for p in sorted(table.producers.values(), key=lambda p: p.producer_id):
            row = p.to_dict()
            age = (table.last_timestamp - p.open.first_timestamp) if p.open and table.last_timestamp is not None \
                else None
            row["open_age_ms"] = age
            row["hanging"] = age is not None and age > timeout_ms
            producers.append(row)
        result.partitions.append({"path": str(target.path), "topic": part.topic, "partition": part.number,
                                  "last_timestamp": table.last_timestamp, "producers": producers, "notes": notes})
    return result
