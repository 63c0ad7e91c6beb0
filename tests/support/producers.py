"""Producers' batches as kafka-python builds them: idempotent sequences, and transactions ended by a marker."""
from __future__ import annotations

from fixtures import generator as g

TS = g.FIXED_TIME_MS


MINUTE = 60_000


def batches(pid: int, epoch: int, first_seq: int, first_offset: int, n: int = 3, per: int = 2,
            transactional: bool = False, ts: int = TS, library: str = "kafka-python") -> list[g.LogEntry]:
    producer = g.Producer(pid, epoch, first_seq, transactional)
    return g.build_batches(g.BatchSpec(library=library, batches=n, records_per_batch=per, producer=producer,
                                       base_timestamp=ts), first_offset)


def txn(pid: int, epoch: int, first_seq: int, first_offset: int, ts: int, end: str | None) -> list[g.LogEntry]:
    """A transaction of 2 batches at `first_offset`, then its marker (end: "commit", "abort" or None: open)."""
    data = batches(pid, epoch, first_seq, first_offset, n=2, transactional=True, ts=ts)
    if end is None:
        return data
    return data + [g.marker_batch(g.Producer(pid, epoch), first_offset + 4, end == "commit", ts + 100)]
