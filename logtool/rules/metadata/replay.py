"""Replaying `__cluster_metadata` into the cluster state at a point, in Kafka's order.

Kafka's metadata loader starts from the newest KRaft snapshot (`<end offset>-<epoch>.checkpoint`: the state after
every record below its end offset) and then replays the log's records from that end offset on (raft's
`KafkaRaftClient` hands it the snapshot, then the committed batches). So does `replay`: the newest usable
snapshot at or before the point (`at_offset`: every record up to and including that offset; `at_time`: every
record written at or before that time), then the log's valid prefix, each segment walked by the one walker
(`Segment.walk`), up to the point or to where Kafka's recovery would cut the log (a torn tail, a bad CRC: the
replay stops there and says why, as `verify` does).

Control records move the quorum's facts: LEADER_CHANGE (the raft leader and its epoch), KRAFT_VERSION,
KRAFT_VOTERS; a snapshot opens with SNAPSHOT_HEADER and ends with SNAPSHOT_FOOTER. Metadata transactions
(BeginTransaction .. EndTransaction, KIP-868) are applied at their end and dropped when aborted
(`MetadataBatchLoader`). A record that cannot be read, or that Kafka's loader would refuse, is a problem of the
result (`Problem`), and the replay goes on without it as Kafka's fault handler does; nothing of bad input
raises, but an unreadable path (`MetadataPathError`).

Records are read one at a time from mapped segments; the replay keeps the state, never the records.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from logtool import collector, exitcodes
from logtool.findings import METADATA_LOG_GAP as LOG_GAP
from logtool.findings import METADATA_RECORD_REFUSED as RECORD_REFUSED
from logtool.findings import METADATA_RECORD_UNREADABLE as RECORD_UNREADABLE
from logtool.findings import METADATA_SNAPSHOT_UNUSABLE as SNAPSHOT_UNUSABLE
from logtool.findings import OFFSET_NOT_INCREASING as OFFSET_BACKWARDS
from logtool.findings import UNREADABLE, Kind, Severity
from logtool.format.kraft import control_value
from logtool.format.messages import MessageError
from logtool.format.metadata_records import NO_OP_BYTES, MetadataRecord, read_metadata_record
from logtool.format.records import Record, RecordError, batch_payload, iter_records, parse_control, payload_records
from logtool.rules.metadata.state import ClusterState, Refused, Stamp
from logtool.store.discover import TargetKind, discover
from logtool.store.layout import BOOTSTRAP_CHECKPOINT, CLUSTER_METADATA, is_records_file, kraft_snapshot_id
from logtool.store.partition import Partition
from logtool.store.segment import Segment, WalkOutcome

BEGIN_TRANSACTION, END_TRANSACTION, ABORT_TRANSACTION = 23, 24, 25
_TRANSACTION_RECORDS = frozenset((BEGIN_TRANSACTION, END_TRANSACTION, ABORT_TRANSACTION))
_LEADER_CHANGE, _SNAPSHOT_HEADER, _SNAPSHOT_FOOTER, _KRAFT_VERSION, _KRAFT_VOTERS = 2, 3, 4, 5, 6
_DECODED_KEPT = 4096  # decoded records kept by their bytes (a log repeats its ISR changes, its registrations)
_DECODED_BYTES = 1024  # ... those of at most this many bytes, so that what is kept stays small whatever the log
# ... and only once seen before: a record kept is a few objects the garbage collector counts, and keeping every
# record of a log whose records do not repeat (a busy cluster's) makes it run ten times as often. The bytes of
# the records seen are not counted (bytes hold no references): at most this many are remembered.
_SEEN_KEPT = 1 << 14

# A replay's problems are kinds of the catalog: its own (imported under shorter names above: RECORD_REFUSED, Kafka's
# loader would not apply the record; RECORD_UNREADABLE, it does not decode though its batch is whole and its CRC good;
# SNAPSHOT_UNUSABLE, a snapshot passed over for an older one; LOG_GAP, offsets neither a snapshot nor the log holds),
# OFFSET_NOT_INCREASING (OFFSET_BACKWARDS) for a record at or below an offset already replayed, the walker's where the
# log's valid prefix ends (TORN_BATCH, CRC_MISMATCH, ...), and UNREADABLE for a segment that could not be read (the
# replay stops there). `verify` reports the replay's own kinds (checks/logdir_metadata.py); the partition checks of
# __cluster_metadata-0 report the others.


class MetadataPathError(Exception):
    """The path is not a metadata log, a log dir holding one or a KRaft snapshot, or it cannot be read."""


class Problem(NamedTuple):
    """Something that keeps the replayed state from being the one Kafka would load, or marks it incomplete."""

    kind: Kind
    message: str
    file: str | None = None
    offset: int | None = None
    position: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind.name, "code": self.kind.code, "message": self.message, "file": self.file,
                "offset": self.offset, "position": self.position}


@dataclass(frozen=True, slots=True)
class SnapshotFile:
    path: Path
    end_offset: int  # the snapshot holds the state after every record below it
    epoch: int

    @property
    def last_offset(self) -> int:
        return self.end_offset - 1


@dataclass(slots=True)
class Source:
    """What a PATH holds: the metadata log dir's segments and snapshots, or one snapshot file alone."""

    path: Path
    directory: Path | None  # the __cluster_metadata-0 dir; None when PATH is a snapshot file
    partition: Partition | None
    snapshots: list[SnapshotFile]  # by end offset

    def close(self) -> None:
        if self.partition is not None:
            self.partition.close()


def open_source(path: Path) -> Source:
    """The metadata log PATH names: a `__cluster_metadata-0` dir, a log dir holding one, or a KRaft snapshot
    file, as `discover` resolves every command's PATH. Raises MetadataPathError when it is none of these or
    cannot be read."""
    found = discover([path])
    unreadable = [f for f in found.findings if f.kind is UNREADABLE]
    if unreadable:
        raise MetadataPathError(found.refusal())
    logs = [t for t in found.targets if t.kind is TargetKind.PARTITION_DIR and t.own_name() == CLUSTER_METADATA]
    if any(t.single_file and is_records_file(t.path.name) for t in found.targets):
        end, epoch = kraft_snapshot_id(path.name) or (0, 0)  # the bootstrap snapshot holds the state before 0
        return Source(path, None, None, [SnapshotFile(path, end, epoch)])
    if not logs:
        if path.is_dir():
            raise MetadataPathError(f"{path}: not a {CLUSTER_METADATA} dir, and holds none (a KRaft broker or "
                                    f"controller keeps its metadata log there, in metadata.log.dir)")
        raise MetadataPathError(f"{path}: not a KRaft snapshot (<offset>-<epoch>.checkpoint or "
                                f"{BOOTSTRAP_CHECKPOINT}), a {CLUSTER_METADATA} dir or a log dir holding one")
    directory = logs[0].path
    try:
        part = logs[0].partition()
    except OSError as e:
        raise MetadataPathError(f"{getattr(e, 'filename', None) or directory}: {e.strerror or e}") from None
    snapshots = sorted((SnapshotFile(directory / n, *sid) for n in part.files
                        if (sid := kraft_snapshot_id(n)) is not None), key=lambda s: (s.end_offset, s.epoch))
    return Source(path, directory, part, snapshots)


@dataclass(slots=True)
class Quorum:
    """What the log's control records say of the raft quorum."""

    leader_id: int | None = None
    leader_epoch: int | None = None
    voters: list[int] | None = None
    kraft_version: int | None = None
    changed: Stamp | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"leader_id": self.leader_id, "leader_epoch": self.leader_epoch, "voters": self.voters,
                "kraft_version": self.kraft_version, "changed": self.changed.to_dict() if self.changed else None}


class Watch(Protocol):
    """Told of every metadata record applied (`history` is one): `before` returns what it needs to know the
    change (None: the record does not concern it), `after` gets it back once the record is applied or refused."""

    def before(self, api_key: int, data: dict, state: ClusterState) -> object | None: ...

    def after(self, token: object, record: MetadataRecord, state: ClusterState, at: Stamp,
              refused: str | None) -> None: ...


@dataclass(slots=True)
class Replay:
    """The state at the point, how it was reached, and what kept it from being whole."""

    source: Source
    state: ClusterState = field(default_factory=ClusterState)
    quorum: Quorum = field(default_factory=Quorum)
    at_offset: int | None = None
    at_time: int | None = None
    snapshot: SnapshotFile | None = None
    snapshot_timestamp: int | None = None
    last_offset: int | None = None  # of the last record applied (or the snapshot's last contained one)
    last_timestamp: int | None = None
    last_epoch: int | None = None
    log_from: int | None = None  # the first offset replayed from the log (after the snapshot)
    # the offset after the last valid record of the log
    log_end: int | None = None
    reached_point: bool = False  # stopped at the point, before the log's end
    snapshot_records: int = 0
    log_records: int = 0
    by_type: Counter = field(default_factory=Counter)
    open_transaction: int | None = None  # offset of a BeginTransaction not yet ended
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def exit_code(self, fail_on: Severity = Severity.WARNING) -> int:
        """8 where a segment could not be read at all (the replay is not done), 4 for any other problem (each
        keeps the state from being the one Kafka would load, whatever `fail_on` says)."""
        if any(p.kind is UNREADABLE for p in self.problems):
            return exitcodes.OPERATIONAL
        return exitcodes.PROBLEMS if self.problems else exitcodes.CLEAN

    def position(self) -> dict[str, Any]:
        """Where the state stands: the last record in it, and what of the log lies beyond."""
        snap = None
        if self.snapshot is not None:
            snap = {"file": self.snapshot.path.name, "end_offset": self.snapshot.end_offset,
                    "epoch": self.snapshot.epoch, "last_contained_timestamp": self.snapshot_timestamp}
        return {"offset": self.last_offset, "timestamp": self.last_timestamp, "epoch": self.last_epoch,
                "at_offset": self.at_offset, "at_time": self.at_time, "snapshot": snap,
                "log_from_offset": self.log_from, "log_end_offset": self.log_end,
                "reached_point": self.reached_point}

    def to_dict(self) -> dict[str, Any]:
        return {"path": str(self.source.path),
                "metadata_dir": str(self.source.directory) if self.source.directory is not None else None,
                "position": self.position(), "quorum": self.quorum.to_dict(), "state": self.state.to_dict(),
                "records": self._records(),
                "open_transaction": self.open_transaction,
                "problems": [p.to_dict() for p in self.problems], "notes": self.notes,
                "exit_code": self.exit_code()}

    def rows(self) -> Iterator[dict[str, Any]]:
        """A row per item (feature, broker, controller, topic, partition, config), then the problems."""
        s = self.state.to_dict()
        if s["metadata_version"] is not None:
            yield {"type": "feature", "name": "metadata.version", **s["metadata_version"]}
        for n, f in s["features"].items():
            yield {"type": "feature", "name": n, **f}
        for b in s["brokers"]:
            yield {"type": "broker", **b}
        for c in s["controllers"]:
            yield {"type": "controller", **c}
        for t in s["topics"]:
            yield {"type": "topic", **{k: v for k, v in t.items() if k != "partitions"},
                   "partitions": len(t["partitions"])}
            for p in t["partitions"]:
                yield {"type": "partition", "topic": t["name"], "topic_id": t["id"], **p}
        for c in s["configs"]:
            yield {"type": "config", **c}
        yield from problem_rows(self.problems)

    def summary(self) -> dict[str, Any]:
        return {"path": str(self.source.path), "position": self.position(), "quorum": self.quorum.to_dict(),
                **self.state.facts(), "records": self._records(), "open_transaction": self.open_transaction,
                "notes": self.notes}

    def _records(self) -> dict[str, Any]:
        return {"from_snapshot": self.snapshot_records, "from_log": self.log_records,
                "by_type": dict(sorted(self.by_type.items()))}

    def stderr_lines(self) -> list[str]:
        return []  # what kept the state from being whole is part of the result: its problems


def problem_rows(problems: list[Problem]) -> Iterator[dict[str, Any]]:
    return ({"type": "problem", **p.to_dict()} for p in problems)


def replay(source: Source, at_offset: int | None = None, at_time: int | None = None, earliest: bool = False,
           watch: Watch | None = None) -> Replay:
    """The cluster state at `at_offset` (records up to and including it) or `at_time` (records written at or
    before it), or at the end of the log. `earliest`: start from the oldest point the files allow (the log's
    first record, or the newest snapshot at or before it) rather than the newest snapshot, so that `watch`
    sees as much of the history as there is."""
    result = Replay(source, at_offset=at_offset, at_time=at_time)
    # A replay makes and drops objects by the million, and no reference cycle among them (a record's decoding
    # error is kept without its traceback): Python's cyclic collector, were it left on, would only walk the
    # state over and over (an eighth of a busy log's replay). Reference counting frees all of it.
    with collector.paused():
        _Applier(result, watch).run(earliest)
    return result


def _snapshot_timestamp(snap: SnapshotFile) -> int | None:
    """The snapshot header's LastContainedLogTimestamp; None when it cannot be read."""
    try:
        with Segment(snap.path, 0) as seg:
            for v in seg.walk():
                return _header(v, list(iter_records(seg.buf, v))[:1])
    except (OSError, RecordError):
        return None
    return None


class _Applier:
    """One replay's walk: the records in order into the state, with their problems."""

    def __init__(self, result: Replay, watch: Watch | None) -> None:
        self.r, self.state, self.watch = result, result.state, watch
        self.decoded: dict[bytes | None, MetadataRecord | MessageError] = {}
        self.seen: set[bytes] = set()  # records decoded once, not kept
        self.txn: list[tuple[MetadataRecord, Stamp]] | None = None  # records of an open metadata transaction
        self.next_offset = 0  # the offset the next log record should have
        self.start = 0  # where the log's records start to count: the snapshot's end offset

    # ------------------------------------------------------------------------------------------ the order

    def run(self, earliest: bool) -> None:
        r = self.r
        source = r.source
        for snap in self._candidates(earliest):
            kept = len(r.problems)
            problem = self._load_snapshot(snap)
            if problem is None:
                break
            del r.problems[kept:]  # what its records said is moot: the snapshot is not used
            r.problems.append(problem)
            self._reset()
        if r.snapshot is not None:
            self.next_offset = self.start = r.snapshot.end_offset
        if source.partition is not None:
            self._log(source.partition)
            if r.reached_point:
                r.log_end = self._log_end(source.partition)
        if r.last_offset is None and r.log_from:  # nothing applied, and the log does not start at 0
            r.notes.append(f"no snapshot is at or before the point and the log's first record (offset {r.log_from}) "
                           f"is after it: the files say nothing of the cluster then")
        if r.at_offset is not None and not r.reached_point and (r.last_offset is None or r.last_offset < r.at_offset):
            r.notes.append(f"the files hold no record past offset {r.last_offset}: the state stands there, short of "
                           f"offset {r.at_offset}")
        if self.txn is not None:
            r.notes.append(f"the metadata transaction begun at offset {r.open_transaction} has not ended: its "
                           f"{len(self.txn)} record(s) are not in the state (Kafka applies them at its end, and a new "
                           f"controller aborts it)")

    def _candidates(self, earliest: bool) -> Iterator[SnapshotFile]:
        """The snapshots to start from, the first choice first: the newest at or before the point (a
        snapshot file given alone: itself); `earliest`, the oldest the log goes on from."""
        source = self.r.source
        if source.partition is None:
            yield from reversed(source.snapshots)
            return
        if earliest:
            first = self._log_first_offset()
            if first == 0:
                return  # the whole log is there: no snapshot needed
            before = [s for s in source.snapshots if self._before_point(s)]
            after_first = [s for s in before if first is not None and s.end_offset >= first]
            yield from after_first[:1] or reversed(before)  # else the newest: the log has a gap after it
            return
        yield from (s for s in reversed(source.snapshots) if self._before_point(s))

    def _before_point(self, snap: SnapshotFile) -> bool:
        r = self.r
        if r.at_offset is not None:
            return snap.last_offset <= r.at_offset
        if r.at_time is not None:
            ts = _snapshot_timestamp(snap)
            return ts is not None and ts <= r.at_time
        return True

    def _log_first_offset(self) -> int | None:
        part = self.r.source.partition
        assert part is not None
        for seg in part.segments:
            try:
                with seg:
                    for v in seg.walk(reads_bytes=False):
                        return v.base_offset
            except OSError:
                return None
        return None

    @staticmethod
    def _log_end(part: Partition) -> int | None:
        """The offset after the last valid record of the log (its last segment walked for it)."""
        for seg in reversed(part.segments):
            end = None
            try:
                with seg:
                    for v in seg.walk(reads_bytes=False):
                        end = v.last_offset + 1
            except OSError:
                return None
            if end is not None:
                return end
        return None

    def _reset(self) -> None:
        r = self.r
        r.state = self.state = ClusterState()
        r.quorum = Quorum()
        r.snapshot = r.snapshot_timestamp = r.last_offset = r.last_timestamp = r.last_epoch = None
        r.snapshot_records = 0
        r.by_type.clear()

    # ------------------------------------------------------------------------------------------ snapshots

    def _load_snapshot(self, snap: SnapshotFile) -> Problem | None:
        """Apply a whole snapshot; the problem that makes it unusable (the state then holds a part of it)."""
        r = self.r
        name = snap.path.name
        outcome = WalkOutcome(0)
        stamp: Stamp | None = None
        footer = False
        try:
            with Segment(snap.path, 0) as seg:
                buf = seg.buf
                for v in seg.walk(outcome):
                    records = list(iter_records(buf, v))
                    if stamp is None:  # the first batch: a control batch opening with SNAPSHOT_HEADER
                        header = _header(v, records)
                        if header is None:
                            return Problem(SNAPSHOT_UNUSABLE, f"{name} does not open with a SNAPSHOT_HEADER control "
                                                              f"record; Kafka cannot load it", name, v.base_offset)
                        r.snapshot, r.snapshot_timestamp = snap, header
                        stamp = Stamp(snap.last_offset, header, True)
                        r.last_offset, r.last_timestamp, r.last_epoch = snap.last_offset, header, snap.epoch
                    if v.is_control:
                        for rec in records:
                            footer = self._control(rec, v.partition_leader_epoch, stamp, name) or footer
                        continue
                    for rec in records:
                        self._record(rec.value, rec.offset, stamp, name)
                        r.snapshot_records += 1
        except RecordError as e:
            return Problem(SNAPSHOT_UNUSABLE, f"{name}: its records cannot be read ({e}); Kafka cannot load it", name)
        except OSError as e:
            return Problem(SNAPSHOT_UNUSABLE, f"cannot read {name}: {e.strerror or e}", name)
        stop = outcome.stop_finding(name, active=False, snapshot=True)
        if stop is not None:
            return Problem(SNAPSHOT_UNUSABLE, f"{stop.name}: {stop.message}; Kafka cannot load the snapshot", name,
                           stop.offset, stop.position)
        if stamp is None:
            return Problem(SNAPSHOT_UNUSABLE, f"{name} holds no batch", name)
        if not footer:
            return Problem(SNAPSHOT_UNUSABLE, f"{name} does not end with a SNAPSHOT_FOOTER control record: it was not "
                                              f"written whole", name)
        return None

    # ------------------------------------------------------------------------------------------ the log

    def _log(self, part: Partition) -> None:
        r = self.r
        first = part.floor_segment(self.next_offset) or 0
        last = len(part.segments) - 1
        for i in range(first, last + 1):
            seg = part.segments[i]
            name = seg.log_path.name
            outcome = WalkOutcome(0)
            try:
                with seg:
                    buf = seg.buf
                    for v in seg.walk(outcome):
                        if v.last_offset >= self.next_offset and not self._batch(buf, v, name):
                            return  # the point is reached
            except OSError as e:
                r.problems.append(Problem(UNREADABLE, f"cannot read {name}: {e.strerror or e}; the replay stops "
                                                        f"there", name))
                return
            stop = outcome.stop_finding(name, active=i == last)
            if stop is not None:
                later = f" (it also drops the {last - i} later segment(s))" if i < last else ""
                r.problems.append(Problem(stop.kind, f"{stop.message}; the replay stops there, as Kafka's recovery "
                                                     f"would{later}", name, stop.offset, stop.position))
                return

    def _batch(self, buf: Any, v: Any, name: str) -> bool:  # noqa: C901 - the per-record loop, its steps inline
        """The records of one batch of the log past what is replayed; False where the point is reached."""
        r = self.r
        if r.log_from is None:
            r.log_from = v.base_offset
        r.log_end = v.last_offset + 1
        at_offset, at_time = r.at_offset, r.at_time
        if at_offset is not None and v.base_offset > at_offset:
            r.reached_point = True
            return False
        r.last_epoch = epoch = v.partition_leader_epoch
        control, noop, stamp, record = v.is_control, NO_OP_BYTES, tuple.__new__, self._record
        try:
            # Tuple unpacking: a NamedTuple's attribute reads cost more than the work around them. A v2 batch's
            # records straight from its payload (`iter_records` is that, and a generator more per batch).
            records = iter_records(buf, v) if v.is_legacy else payload_records(batch_payload(buf, v), v)
            for offset, ts, _key, value, _headers, _seq, _crc, _valid in records:
                if (at_offset is not None and offset > at_offset) or (at_time is not None and ts > at_time):
                    r.reached_point = True
                    return False
                if offset != self.next_offset and not self._offset_jump(offset, name, v.position):
                    continue
                self.next_offset = offset + 1
                r.last_offset, r.last_timestamp = offset, ts
                if control:
                    self._control(Record(offset, ts, _key, value), epoch, Stamp(offset, ts), name)
                    continue
                r.log_records += 1
                if value == noop:
                    r.by_type[20] += 1
                    continue
                record(value, offset, stamp(Stamp, (offset, ts, False)), name)
        except RecordError as e:
            r.problems.append(Problem(RECORD_UNREADABLE, f"the records of the batch at offset {v.base_offset} cannot "
                                                         f"be read: {e}", name, v.base_offset, v.position))
            self.next_offset = max(self.next_offset, v.last_offset + 1)
        return True

    def _offset_jump(self, offset: int, name: str, position: int) -> bool:
        """A record not at the next offset: a gap to report, or one already replayed (False: skip it)."""
        r = self.r
        if offset < self.start:
            return False  # in the snapshot (which may end inside a batch)
        if offset < self.next_offset:
            r.problems.append(Problem(OFFSET_BACKWARDS, f"offset {offset} comes after offset {self.next_offset - 1}: "
                                                        f"skipped", name, offset, position))
            return False
        where = f"after the snapshot {r.snapshot.path.name}" if r.snapshot is not None and \
            self.next_offset == r.snapshot.end_offset else "in the log"
        r.problems.append(Problem(LOG_GAP, f"offsets {self.next_offset} to {offset - 1} are missing {where}: the state "
                                           f"lacks their records", name, offset, position))
        return True

    # ------------------------------------------------------------------------------------------ records

    def _control(self, rec: Record, epoch: int, at: Stamp, file: str) -> bool:
        """A control record of the log or a snapshot; True for a SNAPSHOT_FOOTER."""
        r = self.r
        try:
            control = parse_control(rec)
            value = control_value(control.type_id, rec.value)
        except RecordError as e:
            r.problems.append(Problem(RECORD_UNREADABLE, f"control record at offset {rec.offset}: {e}", file,
                                      rec.offset))
            return False
        q = r.quorum
        if control.type_id == _LEADER_CHANGE and value is not None:
            q.leader_id, q.leader_epoch, q.changed = value.get("leaderId"), epoch, at  # type: ignore[assignment]
            voters = value.get("voters")
            if isinstance(voters, list) and voters and q.kraft_version in (None, 0):
                q.voters = sorted(v.get("voterId") for v in voters)
        elif control.type_id == _KRAFT_VERSION and value is not None:
            q.kraft_version, q.changed = value.get("kRaftVersion"), at  # type: ignore[assignment]
        elif control.type_id == _KRAFT_VOTERS and value is not None:
            voters = value.get("voters")
            if isinstance(voters, list):
                q.voters, q.changed = sorted(v.get("voterId") for v in voters), at
        return control.type_id == _SNAPSHOT_FOOTER

    def _decode(self, value: bytes | None) -> MetadataRecord | MessageError:
        """The record `value` frames (or why it cannot be read); kept by its bytes for the next like it where
        one like it was seen before."""
        try:
            found: MetadataRecord | MessageError = read_metadata_record(value)
        except MessageError as e:
            found = e.with_traceback(None)  # kept: its traceback would hold this frame, which holds it
        if value is not None and len(value) <= _DECODED_BYTES:
            seen = self.seen
            if value in seen:
                if len(self.decoded) >= _DECODED_KEPT:
                    self.decoded.clear()
                self.decoded[value] = found
            else:
                if len(seen) >= _SEEN_KEPT:
                    seen.clear()
                seen.add(value)
        return found

    def _record(self, value: bytes | None, offset: int, at: Stamp, file: str) -> None:
        r = self.r
        rec = self.decoded.get(value) or self._decode(value)
        if not isinstance(rec, MetadataRecord):
            r.problems.append(Problem(RECORD_UNREADABLE, f"record at offset {offset} cannot be read: {rec} "
                                                         f"({rec.detail})", file, offset))
            return
        api_key = rec.api_key
        r.by_type[api_key] += 1
        if rec.note is not None and rec.note not in r.notes:
            r.notes.append(rec.note)
        if api_key in _TRANSACTION_RECORDS:
            self._transaction(api_key, offset, file)
        elif self.txn is not None:
            self.txn.append((rec, at))
        elif self.watch is None:
            try:
                self.state.apply(api_key, rec.data, at)
            except Refused as e:
                self._refused(rec, at, file, e)
        else:
            self._apply(rec, at, file)

    def _transaction(self, api_key: int, offset: int, file: str) -> None:
        r = self.r
        if api_key == BEGIN_TRANSACTION:
            if self.txn is not None:
                r.problems.append(Problem(RECORD_REFUSED, f"BeginTransactionRecord at offset {offset} while the "
                                                          f"transaction begun at {r.open_transaction} is open", file,
                                          offset))
                return
            self.txn, r.open_transaction = [], offset
            return
        if self.txn is None:
            word = "EndTransactionRecord" if api_key == END_TRANSACTION else "AbortTransactionRecord"
            r.problems.append(Problem(RECORD_REFUSED, f"{word} at offset {offset} without having seen a "
                                                      f"BeginTransactionRecord", file, offset))
            return
        pending, self.txn, r.open_transaction = self.txn, None, None
        if api_key == END_TRANSACTION:
            for rec, at in pending:
                self._apply(rec, at, file)

    def _apply(self, rec: MetadataRecord, at: Stamp, file: str) -> None:
        watch = self.watch
        token = watch.before(rec.api_key, rec.data, self.state) if watch is not None else None
        refused = None
        try:
            self.state.apply(rec.api_key, rec.data, at)
        except Refused as e:
            refused = str(e)
            self._refused(rec, at, file, e)
        if token is not None and watch is not None:
            watch.after(token, rec, self.state, at, refused)

    def _refused(self, rec: MetadataRecord, at: Stamp, file: str, e: Refused) -> None:
        where = " (in the snapshot)" if at.snapshot else ""
        self.r.problems.append(Problem(RECORD_REFUSED, f"{rec.schema.name} at offset {at.offset}{where}: {e}", file,
                                       at.offset))


def _header(v: Any, records: list) -> int | None:
    """The LastContainedLogTimestamp of a snapshot's first batch when it opens with a SNAPSHOT_HEADER."""
    if not v.is_control or not records:
        return None
    try:
        if parse_control(records[0]).type_id != _SNAPSHOT_HEADER:
            return None
        header = control_value(_SNAPSHOT_HEADER, records[0].value)
    except RecordError:
        return None
    ts = header.get("lastContainedLogTimestamp") if header else None
    return ts if isinstance(ts, int) else None
