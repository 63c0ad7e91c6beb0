"""`logtool dump` as text: the lines of `kafka-dump-log.sh --deep-iteration [--print-data-log]`.

The words and their order follow Kafka's DumpLogSegments as ported to Java
(`tools/src/main/java/org/apache/kafka/tools/DumpLogSegments.java`, apache/kafka commit 04b05179): no stray
`}` after a legacy record's CRC, `LeaderChange: {json}` for LEADER_CHANGE records (FORMAT.md §16.2 lists
the older Scala forms; §16.4 the differences). Where Kafka would stop with a stack trace or print bytes it
cannot trust, logtool prints one line of its own, which no Kafka line starts with:
`Reading stopped at byte ...`, `Skipped ... bytes ...` (with --salvage) and `Reading records stopped ...`.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, TextIO

from logtool.reads.decoders import NOT_SHOWN, PIECE as LARGE, Decoder, kernel_mode
from logtool.format.batch import BatchView
from logtool.format.messages import jackson
from logtool.format.records import Record
from logtool.reads.file_dump import FileDump
from logtool.store.layout import BOOTSTRAP_CHECKPOINT, kraft_snapshot_id
from logtool.reads.ranges import (Anomaly, BatchRead, Control, Damage, Event, KafkaRecordsStop, PackedRecords,
                                  SegmentStart, Skipped, Unreadable)

if TYPE_CHECKING:
    from logtool.reads.internal_topics import RecordDecoder

# Kafka's labels for KRaft control records whose value it prints as JSON (others: `controlType: NAME(id)`).
_KRAFT_LABELS = {2: " LeaderChange: ", 3: " SnapshotHeader ", 4: " SnapshotFooter ", 5: " KRaftVersion ",
                 6: " KRaftVoters "}


def _bool(b: bool) -> str:
    return "true" if b else "false"


def batch_line(v: BatchView) -> str:
    """`printBatchLevel`: one line per batch; `position` is the batch's byte position in its file."""
    if v.magic >= 2:
        horizon = f"OptionalLong[{v.first_timestamp}]" if v.has_delete_horizon else "OptionalLong.empty"
        head = (f"baseOffset: {v.base_offset} lastOffset: {v.last_offset} count: {v.count} "
                f"baseSequence: {v.base_sequence} lastSequence: {v.last_sequence} producerId: {v.producer_id} "
                f"producerEpoch: {v.producer_epoch} partitionLeaderEpoch: {v.partition_leader_epoch} "
                f"isTransactional: {_bool(v.is_transactional)} isControl: {_bool(v.is_control)} "
                f"deleteHorizonMs: {horizon}")
    else:
        head = f"offset: {v.last_offset}"
    return (f"{head} position: {v.position} {v.timestamp_type}: {v.max_timestamp} size: {v.size} "
            f"magic: {v.magic} compresscodec: {v.codec_name} crc: {v.crc_stored} isvalid: {_bool(v.is_valid)}")


def record_line(v: BatchView, r: Record, control: Control | None, key: Decoder | None,
                value: Decoder | None, whole: RecordDecoder | None = None) -> str:
    """`printRecordMetadata` + `printControlRecord` + `printRecordContents`; `key`/`value` None: no data;
    `whole`: an internal topic's decoder, which shows key and value in place of `key`/`value`."""
    return "".join(record_pieces(v, r, control, key, value, whole))


def record_pieces(v: BatchView, r: Record, control: Control | None, key: Decoder | None,
                  value: Decoder | None, whole: RecordDecoder | None = None) -> Iterator[str]:
    """The record's line in pieces: a large key or value is decoded a piece at a time (over a MiB)."""
    parts = [_record_head(v, r.offset, r.timestamp, -1 if r.key is None else len(r.key),
                          -1 if r.value is None else len(r.value))]
    if v.magic >= 2:
        keys = ",".join(h.key.decode("utf-8", "replace") for h in r.headers)  # Java decodes keys as Strings
        parts.append(f" sequence: {r.sequence} headerKeys: [{keys}]")
    if r.legacy_crc is not None:
        parts.append(f" isValid: {_bool(bool(r.legacy_valid))} crc: {r.legacy_crc}")
    if control is not None:
        parts.append(_control_part(control))
    yield "".join(parts)
    if control is None and key is not None and value is not None and whole is not None:
        k, val = whole.texts(r.offset, r.key, r.value)
        if k is not None:
            yield " key: " + k
        if val is not None:
            yield " payload: " + val
    elif control is None and key is not None and value is not None:
        if r.key is not None and key.shown:
            yield " key: "
            yield from key.text_pieces(r.key) if len(r.key) > LARGE else (key.text(r.key),)
        if r.value is not None and value.shown:
            yield " payload: "
            yield from value.text_pieces(r.value) if len(r.value) > LARGE else (value.text(r.value),)


def _record_head(v: BatchView, offset: int, timestamp: int, key_size: int, value_size: int) -> str:
    return f"| offset: {offset} {v.timestamp_type}: {timestamp} keySize: {key_size} valueSize: {value_size}"


def _torn_legacy_line(v: BatchView, key_size: int, value_size: int) -> str:
    """`printRecordMetadata` of a v0/v1 message whose value runs past its end: the record is the message, its
    sizes as its fields give them (KafkaRecordsStop)."""
    return (_record_head(v, v.last_offset, v.max_timestamp, key_size, value_size)
            + f" isValid: {_bool(v.is_valid)} crc: {v.crc_stored}")


def _control_part(c: Control) -> str:
    m = c.marker
    if m.coordinator_epoch is not None:
        return f" endTxnMarker: {m.type_name} coordinatorEpoch: {m.coordinator_epoch}"
    if c.data is not None:
        return _KRAFT_LABELS[m.type_id] + jackson(c.data)
    return f" controlType: {m.type_name}({m.type_id})"


def _file_header(seg) -> str:
    """kafka-dump-log's line after `Dumping F`: by the kind of file, as it tells them by name."""
    name = seg.log_path.name
    if name == BOOTSTRAP_CHECKPOINT:
        return "KRaft bootstrap snapshot"
    snapshot = kraft_snapshot_id(name)
    if snapshot is not None:
        return f"Snapshot end offset: {snapshot[0]}, epoch: {snapshot[1]}"
    return f"Log starting offset: {seg.base_offset}"


def render(events: Iterable[Event], out: TextIO, key: Decoder | None, value: Decoder | None, err: TextIO,
           whole: RecordDecoder | None = None) -> bool:
    """Write the events as kafka-dump-log's lines on `out` (its "Found N invalid bytes" line included, where
    its iterator ends quietly), and logtool's explanation of any damage, one `logtool:` line each, on `err`:
    stdout stays Kafka's. `key`/`value` None: record lines without keys and payloads. At the end, as Kafka's
    tool does on stderr, every place where a record's offset is not the one before it plus one. Returns True
    when the text ends inside a line, as Kafka's does where its tool throws in the middle of one: whatever
    is written after it must start a line first."""
    text = _Text(out, err, key, value, whole)
    for ev in events:
        text.event(ev)
    return text.finish()


class _Text:
    """`render`'s writing, event by event, and what it carries from one event to the next."""

    def __init__(self, out: TextIO, err: TextIO, key: Decoder | None, value: Decoder | None,
                 whole: RecordDecoder | None) -> None:
        self.out, self.err, self.key, self.value, self.whole = out, err, key, value, whole
        self.gaps: dict[str, dict[int, int]] = {}  # segment (absolute path) -> previous offset -> the offset after it
        self.previous = -1
        self.kafka_died = False  # Kafka's tool threw: it never gets to its list of gaps
        self.open_line = False
        self.modes = (NOT_SHOWN, NOT_SHOWN) if key is None or value is None else \
            (None, None) if whole is not None else (kernel_mode(key), kernel_mode(value))

    def event(self, ev: Event) -> None:
        err = self.err
        if isinstance(ev, BatchRead):
            self._batch(ev)
        elif isinstance(ev, SegmentStart):
            self.out.write(("\n" if self.open_line else "") + f"Dumping {ev.segment.log_path}\n"
                           f"{_file_header(ev.segment)}\n")
            self.open_line = False
            self.previous = -1  # Kafka's tool counts from -1 in each file
        elif isinstance(ev, KafkaRecordsStop):
            self._kafka_stop(ev)
        elif isinstance(ev, Unreadable):
            self.kafka_died = True  # it cannot open the file
            err.write(f"logtool: {ev.finding.message} (its records are left out)\n")
        elif isinstance(ev, Damage):
            f = ev.finding
            if ev.kafka_ends_quietly:
                self.out.write(f"Found {ev.bytes_following} invalid bytes at the end of {f.file}\n")
            self.kafka_died |= ev.kafka_throws
            err.write(f"logtool: damage at byte {f.position} of {f.file}: {f.code} {f.name}: {f.message}\n")
        elif isinstance(ev, Anomaly):
            f = ev.finding
            err.write(f"logtool: damage at byte {f.position} of {f.file} (reading goes on, as Kafka's recovery keeps "
                      f"it): {f.code} {f.name}: {f.message}\n")
        elif isinstance(ev, Skipped):
            why = f"a valid batch starts at byte {ev.end}" if ev.resumed else "no valid batch follows in the file"
            err.write(f"logtool: skipped {ev.end - ev.start} bytes of {ev.segment.log_path.name} from byte {ev.start}: "
                      f"{why}\n")

    def finish(self) -> bool:
        for path, pairs in ({} if self.kafka_died else self.gaps).items():
            self.err.write(f"Non-consecutive offsets in {path}\n")
            self.err.write("".join(f"  {a} is followed by {b}\n" for a, b in sorted(pairs.items())))
        return self.open_line

    def _offset(self, path: str, offset: int) -> None:
        """The next record's offset: a gap where it is not the one before plus one."""
        if offset != self.previous + 1:
            self.gaps.setdefault(path, {})[self.previous] = offset
        self.previous = offset

    def _batch(self, ev: BatchRead) -> None:
        lines = [] if ev.continued else [batch_line(ev.view)]
        compiled = _compiled_lines(ev, self.modes, self.previous)
        if compiled is None and ev.records:
            path = os.path.abspath(ev.segment.log_path)
            for r in ev.records:
                self._offset(path, r.offset)
        if ev.unverified and not ev.continued:
            self.err.write(f"logtool: the batch at byte {ev.view.position} of {ev.segment.log_path.name} fails its "
                           f"CRC; its records follow as its bytes read (any of them may be wrong)\n")
        if compiled is not None:
            text, self.previous, pairs = compiled
            if pairs:
                self.gaps.setdefault(os.path.abspath(ev.segment.log_path), {}).update(pairs)
            self.out.write("".join(line + "\n" for line in lines) + text)
            return
        if ev.records is not None:
            lines = self._records(ev, ev.records, lines)
        if lines:
            self.out.write("\n".join(lines) + "\n")
        if ev.problem is not None:
            f = ev.problem
            self.err.write(f"logtool: reading records stopped in the batch at byte {f.position} of {f.file}: "
                           f"{f.code} {f.name}: {f.message}\n")

    def _records(self, ev: BatchRead, records: Iterable[Record], lines: list[str]) -> list[str]:
        """The record lines of a batch after `lines` (its batch line, if any): written at once where a key or a
        value is large (in pieces, what came before first), else returned with `lines` to be written."""
        out, controls = self.out, ev.controls
        for i, r in enumerate(records):
            control = controls[i] if controls is not None else None
            if (r.key is not None and len(r.key) > LARGE) or (r.value is not None and len(r.value) > LARGE):
                out.write("".join(line + "\n" for line in lines))  # what came before, then this in pieces
                lines = []
                for piece in record_pieces(ev.view, r, control, self.key, self.value, self.whole):
                    out.write(piece)
                out.write("\n")
            else:
                lines.append(record_line(ev.view, r, control, self.key, self.value, self.whole))
        return lines

    def _kafka_stop(self, ev: KafkaRecordsStop) -> None:
        if ev.legacy_sizes is not None:  # its one record's line, the sizes as the message's fields give them
            self._offset(os.path.abspath(ev.segment.log_path), ev.view.last_offset)
            self.out.write(_torn_legacy_line(ev.view, *ev.legacy_sizes) + ("\n" if ev.reading_goes_on else ""))
            self.open_line = not ev.reading_goes_on
        if not ev.reading_goes_on:
            self.kafka_died = True
            self.err.write(f"logtool: kafka-dump-log throws in the records of the batch at byte {ev.view.position} "
                           f"of {ev.segment.log_path.name}: its text of the file ends there, and so does this one "
                           f"(--salvage reads on)\n")


def _compiled_lines(ev: BatchRead, modes: tuple[int | None, int | None], previous: int) -> tuple | None:
    """The record lines of a packed batch as the kernel renders them, the last offset and the offset gaps;
    None where the reference renders them."""
    return ev.records.rendered("text", modes, previous) if isinstance(ev.records, PackedRecords) else None


def file_dump_lines(d: FileDump) -> Iterator[str]:
    """kafka-dump-log's stdout for an index, transaction index or producer snapshot (its words, its order),
    a line at a time: the rows are read as the lines are asked for."""
    yield f"Dumping {d.path}"
    if d.empty:
        yield f"{d.path} is empty."
    if d.passed_sanity:
        yield f"{d.path} passed sanity check."
    for row in d.rows:
        if d.mode == "verify":
            continue  # every entry is still read: Kafka's tool checks them all, and stops where it throws
        if d.row_type == "producer_state":  # an OptionalLong, as Java prints one
            first = row["currentTxnFirstOffset"]
            row = {**row, "currentTxnFirstOffset": "OptionalLong.empty" if first is None else f"OptionalLong[{first}]"}
        yield " ".join([f"{k}: {v}" for k, v in row.items()])  # ints and strings: as Java prints them
