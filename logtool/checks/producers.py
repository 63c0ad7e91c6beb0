"""Producer state, checked from the batches: sequence numbers, epochs and transactions of idempotent and
transactional producers, and the producer-state snapshots that summarise them.

Kafka checks sequences and epochs when a producer appends (`ProducerAppendInfo`), not when it replays a log
from disk, where an epoch going backwards is only logged. So nothing here moves the valid prefix: it says
what the bytes tell about the producers. Each segment's walk keeps, per producer id, the first and last of
its batches (`ProducerSpan`), checking the batches in between; `check_producers` then joins the segments in
offset order, so that a partition walked in pieces (the audit splits large ones) gives the same findings as
one walk.
"""
from __future__ import annotations

from dataclasses import dataclass

from logtool.findings import (
    PRODUCER_EPOCH_BACKWARDS, PRODUCER_SEQUENCE_DUPLICATE, PRODUCER_SEQUENCE_GAP, PRODUCER_SNAPSHOT_MISMATCH,
    TRANSACTION_HANGING, TRANSACTION_OPEN, Finding, Sink, finding)
from logtool.format import kernel
from logtool.format.batch import BatchView

# The bounds `ProducerCheck` holds each batch of a producer to after the one before (`follows`), declared for the
# kernel: it sums up a whole segment (clean_segment) only where every producer's batches keep within them, and
# holds no transaction's batch or marker; the kinds beside each are what the lens reports of a batch outside.
PRODUCER_RUN = kernel.ProducerRunBounds(
    epochs_not_backwards=True,  # PRODUCER_EPOCH_BACKWARDS
    sequences_follow_on=True,  # PRODUCER_SEQUENCE_GAP, PRODUCER_SEQUENCE_DUPLICATE
)
# Every kind `ProducerCheck` reports as the batches come (through `follows`); tests/format/test_kernel_guard.py
# holds a case of each in which the kernel path reports what the pure path does.
PER_BATCH = (PRODUCER_EPOCH_BACKWARDS, PRODUCER_SEQUENCE_GAP, PRODUCER_SEQUENCE_DUPLICATE)

DEFAULT_TRANSACTION_TIMEOUT_MS = 15 * 60 * 1000  # transaction.max.timeout.ms's default: no transaction lasts longer
_HALF = 1 << 30  # sequence distances past this, modulo 2**31, are read as going back
_INT32_MAX = 2**31 - 1


@dataclass(slots=True)
class ProducerSpan:
    """One producer id's batches within one segment: its first and last, and its transactions."""

    first_epoch: int
    first_position: int
    first_offset: int
    last_epoch: int
    # Its first batch with sequences (epoch, base sequence, last sequence, base offset) and its last (epoch,
    # last sequence, last offset).
    first_data: tuple[int, int, int, int] | None = None
    last_data: tuple[int, int, int] | None = None
    # Transactions: whether a marker of this producer came, and the (offset, timestamp) of the transactional
    # data batch that opened the transaction still open after its last marker (or after none).
    marker: bool = False
    open_after: tuple[int, int] | None = None


class ProducerCheck:
    """The lens of one segment's walk: it keeps a `ProducerSpan` per producer id and reports what goes
    wrong between two batches of one producer inside the segment."""

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self.spans: dict[int, ProducerSpan] = {}

    def feed_many(self, views: list[BatchView]) -> None:
        spans = self.spans
        for v in views:
            pid = v.producer_id
            if pid < 0 or v.magic < 2:
                continue
            # The common case inline (a producer's next data batch, its sequences following on, no
            # transaction to open): a fraction of what `feed` costs, on every batch of an idempotent producer
            # (the walk's cost: bench/results/kernel.md).
            span = spans.get(pid)
            if (span is not None and not v.is_control
                    and (span.open_after is not None or not v.is_transactional)):
                last = span.last_data
                seq, epoch = v.base_sequence, v.producer_epoch
                if last is not None and last[0] == epoch == span.last_epoch and seq == last[1] + 1:
                    assert v.base_offset is not None  # a v2 header holds it; only legacy wrappers lack one
                    delta = v.last_offset - v.base_offset
                    if seq <= _INT32_MAX - delta:  # no wrap: `last_sequence` without its call
                        span.last_data = (epoch, seq + delta, v.last_offset)
                        continue
            self.feed(v)

    def feed(self, v: BatchView) -> None:
        pid = v.producer_id
        if pid < 0 or v.magic < 2:
            return
        base, count = v.base_offset, v.count
        assert base is not None and count is not None  # a v2 header holds both; only legacy wrappers lack them
        span = self.spans.get(pid)
        control = v.is_control
        data = None if control or v.base_sequence < 0 else \
            (v.producer_epoch, v.base_sequence, v.last_sequence, base)
        if span is None:
            span = self.spans[pid] = ProducerSpan(v.producer_epoch, v.position, base, v.producer_epoch)
        else:
            self.sink.walked.at = v.position
            for name, message in follows(pid, span.last_epoch, span.last_data, v.producer_epoch, base, data):
                self.sink.add(name, message, v.position, base)
            span.last_epoch = v.producer_epoch
        if control:
            if count > 0:  # a marker (a control batch the cleaner emptied ends nothing)
                span.marker, span.open_after = True, None
            return
        if data is not None:
            if span.first_data is None:
                span.first_data = data
            span.last_data = data[0], data[2], v.last_offset
        if v.is_transactional and span.open_after is None:
            span.open_after = (base, v.first_record_timestamp)


def follows(pid: int, last_epoch: int, last_data: tuple[int, int, int] | None, epoch: int, offset: int,
            data: tuple[int, int, int, int] | None) -> list[tuple[str, str]]:
    """What is wrong with a producer's batch of `epoch` at `offset` (its sequences `data`: epoch, base and
    last sequence, base offset; None for a marker or a batch without sequences) coming after its batches
    of epoch `last_epoch`, the last with sequences being `last_data` (epoch, last sequence, last offset)."""
    if epoch < last_epoch:
        return [(PRODUCER_EPOCH_BACKWARDS.name, f"producer {pid} writes with epoch {epoch} at offset {offset}, "
                                                f"after epoch {last_epoch}")]
    if data is None or last_data is None or last_data[0] != data[0]:
        return []  # no sequences to compare, or a new epoch: its sequences start afresh
    _epoch, base_seq, last_seq_here, base_offset = data
    _epoch, last_seq, last_offset = last_data
    expected = 0 if last_seq == _INT32_MAX else last_seq + 1
    ahead = (base_seq - expected) % 2**31
    if ahead == 0:
        return []
    if ahead < _HALF:
        return [(PRODUCER_SEQUENCE_GAP.name, f"producer {pid} (epoch {epoch}) jumps from sequence {last_seq} (offset "
                                             f"{last_offset}) to {base_seq} at offset {base_offset}: "
                                             f"{ahead} sequence number(s) are not in the log")]
    return [(PRODUCER_SEQUENCE_DUPLICATE.name, f"producer {pid} (epoch {epoch}) writes sequences {base_seq}.."
                                               f"{last_seq_here} at offset {base_offset}, after sequence {last_seq} "
                                               f"at offset {last_offset}: the same records twice, or out of order")]


@dataclass(slots=True)
class ProducerState:
    """A producer's state once every batch before some offset is replayed."""

    epoch: int
    last_data: tuple[int, int, int] | None  # (epoch, last sequence, last offset)
    open_txn: tuple[int, int] | None = None  # (first offset, timestamp) of its open transaction


@dataclass(slots=True)
class Replay:
    """The segments of a partition joined: what `check_producers` found, and the producers' state at the
    offsets asked for (where snapshots were taken), for those that are a segment's base offset or the end."""

    findings: list[Finding]
    states_at: dict[int, dict[int, ProducerState]]


def check_producers(segments, transaction_timeout_ms: int = DEFAULT_TRANSACTION_TIMEOUT_MS,
                    topic: str | None = None, partition: int | None = None,
                    keep_at: frozenset[int] = frozenset()) -> Replay:
    """Join the segments' producer spans in offset order: sequences and epochs across segment boundaries,
    then the transactions still open at the log end (hanging where older than the timeout). The state at
    each offset of `keep_at` is kept (a copy per producer: only where a snapshot is to be compared)."""
    sink = Sink()
    state: dict[int, ProducerState] = {}
    states_at: dict[int, dict[int, ProducerState]] = {}
    last_ts = None
    for seg in segments:
        if seg.base_offset in keep_at:
            states_at[seg.base_offset] = {pid: ProducerState(s.epoch, s.last_data, s.open_txn)
                                          for pid, s in state.items()}
        if seg.max_timestamp is not None:
            last_ts = seg.max_timestamp if last_ts is None else max(last_ts, seg.max_timestamp)
        for pid, span in seg.producers.items():
            _join_span(pid, span, state, sink, seg.file)
    if segments and _end(segments) in keep_at:
        states_at[_end(segments)] = state
    for pid, s in sorted(state.items()):
        if s.open_txn is not None:
            _open_transaction(pid, s, s.open_txn, last_ts, transaction_timeout_ms, topic, partition, sink)
    return Replay(sink.done(), states_at)


def _join_span(pid: int, span: ProducerSpan, state: dict[int, ProducerState], sink: Sink, file: str) -> None:
    """A segment's span of a producer after the state the earlier segments left (`state`, brought up to it)."""
    known = state.get(pid)
    if known is None:
        known = state[pid] = ProducerState(span.first_epoch, None)
    else:
        for name, message in _follows_span(pid, known, span):
            sink.add(name, message, span.first_position, span.first_offset, file=file)
    known.epoch = span.last_epoch
    if span.last_data is not None:
        known.last_data = span.last_data
    if span.marker:
        known.open_txn = span.open_after
    elif known.open_txn is None:
        known.open_txn = span.open_after


def _open_transaction(pid: int, s: ProducerState, open_txn: tuple[int, int], last_ts: int | None, timeout_ms: int,
                      topic: str | None, partition: int | None, sink: Sink) -> None:
    """A transaction open at the log end (`open_txn`: its first offset and timestamp): hanging when it is
    older than the timeout at the partition's last timestamp."""
    first, ts = open_txn
    age = None if last_ts is None or ts < 0 else last_ts - ts
    if age is not None and age > timeout_ms:
        where = f"--topic {topic} --partition {partition}" if topic is not None else "--topic T --partition P"
        sink.add(TRANSACTION_HANGING,
                 f"producer {pid} (epoch {s.epoch}) opened a transaction at offset {first} that no marker ends, "
                 f"{age // 1000} s before the partition's last timestamp (timeout {timeout_ms // 1000} s): "
                 f"read_committed consumers cannot read past offset {first}. Abort it with: kafka-transactions.sh "
                 f"--bootstrap-server HOST:PORT abort {where} --start-offset {first}", offset=first)
    else:
        sink.add(TRANSACTION_OPEN, f"producer {pid} (epoch {s.epoch}) has a transaction open since offset {first}"
                 + (f", {age // 1000} s before the partition's last timestamp" if age is not None else ""),
                 offset=first)


def _end(segments) -> int:
    last = segments[-1]
    return last.last_offset + 1 if last.last_offset is not None else last.base_offset


def _follows_span(pid: int, known: ProducerState, span: ProducerSpan) -> list[tuple[str, str]]:
    """A segment's first batch of a producer, then its first batch with sequences, after the state the
    earlier segments left."""
    found = follows(pid, known.epoch, None, span.first_epoch, span.first_offset, None)
    if span.first_data is not None and not found:
        found = follows(pid, span.first_epoch, known.last_data, span.first_data[0], span.first_data[3], span.first_data)
    return found


def check_snapshot(name: str, offset: int, entries, replay: Replay) -> list[Finding]:
    """A producer-state snapshot taken at `offset` against the state the log replays to there (at a segment
    boundary or the log end; elsewhere there is nothing to compare with). Producers the log no longer shows
    (expired, or their batches deleted) are not compared; the log may also show producers a snapshot has
    dropped as expired."""
    state = replay.states_at.get(offset)
    if state is None:
        return []
    found = []
    for e in entries:
        s = state.get(e.producer_id)
        if s is None or s.last_data is None:
            continue
        _epoch, last_seq, last_offset = s.last_data
        if (e.epoch, e.last_sequence, e.last_offset) != (s.epoch, last_seq, last_offset):
            found.append(finding(PRODUCER_SNAPSHOT_MISMATCH,
                                 f"producer {e.producer_id}: the snapshot says epoch {e.epoch}, last sequence "
                                 f"{e.last_sequence} at offset {e.last_offset}; the log before offset {offset} says "
                                 f"epoch {s.epoch}, last sequence {last_seq} at offset "
                                 f"{last_offset}", name, offset=offset))
    return found
