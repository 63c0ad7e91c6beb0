"""`logtool dump` as JSON Lines (one object per record, or per batch with --batches-only, plus one per
damage met) or as one JSON document holding the same objects under "events".

Every object has a "type": "record", "batch", "damage" (a segment's valid prefix ended: where, why, how
many bytes follow; or, with "reading_goes_on", damage Kafka's recovery keeps, such as offsets going
backwards; or a segment that could not be opened, its finding UNREADABLE), "skipped" (bytes --salvage
passed over) or "records_unreadable" (a batch whose records could not all be decoded). Record objects are
built as text rather than through json.dumps of a dict: the batch part is encoded once per batch, keys and
values go through the decoders' JSON encoders (what JSON rendering costs of a dump: bench/results/dump.md).
"""
from __future__ import annotations

import codecs
import json
import textwrap
from collections.abc import Callable, Iterable, Iterator
from json.encoder import encode_basestring_ascii as _string  # json.dumps of one str, without its overhead
from typing import TYPE_CHECKING, TextIO

from logtool.reads.decoders import PIECE, Decoder, kernel_mode
from logtool.format.batch import BatchView
from logtool.format.records import Header, Record
from logtool.reads.file_dump import FileDump
from logtool.reads.ranges import Anomaly, BatchRead, Control, Damage, Event, PackedRecords, Skipped, Unreadable
from logtool.render.jsonout import undecoded_escaped

if TYPE_CHECKING:
    from logtool.reads.internal_topics import RecordDecoder


def _dumps(obj: object) -> str:
    return json.dumps(obj, separators=(",", ":"))


def batch_dict(segment: str, v: BatchView) -> dict:
    return {
        "segment": segment, "base_offset": v.base_offset, "last_offset": v.last_offset, "position": v.position,
        "size": v.size, "magic": v.magic, "codec": v.codec_name, "count": v.count, "crc": v.crc_stored,
        "timestamp_type": v.timestamp_type, "max_timestamp": v.max_timestamp, "producer_id": v.producer_id,
        "producer_epoch": v.producer_epoch, "base_sequence": v.base_sequence,
        "is_transactional": v.is_transactional, "is_control": v.is_control,
        "partition_leader_epoch": v.partition_leader_epoch,
        "delete_horizon_ms": v.first_timestamp if v.has_delete_horizon else None,
    }


# A record whose key or value is larger than this is written in pieces, never held as one string.
LARGE = PIECE


class Pieces:
    """One JSON text given as the pieces to write one after the other."""

    __slots__ = ("parts",)

    def __init__(self, parts: Iterator[str]) -> None:
        self.parts = parts


def _large_record(head: str, rest: str, k: bytes | None, val: bytes | None, key: Decoder,
                  value: Decoder) -> Iterator[str]:
    yield head + '"key":'
    yield from ("null",) if k is None else key.json_pieces(k)
    yield ',"value":'
    yield from ("null",) if val is None else value.json_pieces(val)
    yield "," + rest


def _write(out: TextIO, text: "str | bytes | Pieces") -> None:
    if isinstance(text, Pieces):
        for piece in text.parts:
            out.write(piece)
    elif isinstance(text, bytes):
        _write_ascii(out, text)
    else:
        out.write(text)


def _write_ascii(out: TextIO, data: bytes) -> None:
    """Objects the kernel rendered (ASCII bytes): straight into the binary buffer beneath a text stream whose
    encoding writes ASCII as itself, after what the stream holds (JSON Lines of a 1 GB segment are 5 GB: a
    pass less over them); decoded for any other stream."""
    buffer, encoding = getattr(out, "buffer", None), getattr(out, "encoding", None)
    if buffer is None or not encoding or codecs.lookup(encoding).name not in _ASCII_AS_ITSELF:
        out.write(data.decode("ascii"))
        return
    out.flush()
    buffer.write(data)


_ASCII_AS_ITSELF = {"utf-8", "ascii", "iso8859-1", "cp1252"}


def objects(events: Iterable[Event], key: Decoder, value: Decoder,
            whole: RecordDecoder | None = None) -> Iterable[str | bytes | Pieces]:
    """One JSON text per object, batch by batch (several records' lines joined in one string, or ASCII bytes
    where the kernel rendered them; a record too large for that as its own Pieces)."""
    modes = (None, None) if whole is not None else (kernel_mode(key), kernel_mode(value))
    for ev in events:
        if isinstance(ev, BatchRead):
            yield from _batch_objects(ev, key, value, whole, modes)
            continue
        text = _event_object(ev)
        if text is not None:
            yield text


def _batch_objects(ev: BatchRead, key: Decoder, value: Decoder, whole: RecordDecoder | None,
                   modes: tuple[int | None, int | None]) -> Iterator[str | bytes | Pieces]:
    batch = batch_dict(ev.segment.log_path.name, ev.view)
    if ev.unverified:
        batch["unverified"] = True  # its CRC fails: what follows is what its bytes read
    if ev.records is None:
        yield _dumps({"type": "batch", **batch})
        return
    tail = f',"batch":{_dumps(batch)}}}'  # encoded once per batch
    compiled = _compiled_lines(ev, modes, tail)
    if compiled is not None:
        if compiled:
            yield compiled
        return
    yield from _record_objects(ev, ev.records, tail, key, value, whole)


def _record_objects(ev: BatchRead, records: Iterable[Record], tail: str, key: Decoder, value: Decoder,
                    whole: RecordDecoder | None) -> Iterator[str | Pieces]:
    """The reference's record objects of a batch (`tail`: the batch part, encoded), and the finding that
    stopped its decoding."""
    kj, vj = key.json_fragment, value.json_fragment
    mark = '"unverified":true,' if ev.unverified else ''
    ts_type = ev.view.timestamp_type
    controls = ev.controls
    lines = []
    # Tuple unpacking: a NamedTuple's attribute reads cost more than the formatting around them.
    for i, (offset, ts, k, val, headers, seq, _crc, _valid) in enumerate(records):
        hs = _headers(headers, vj) if headers else "[]"
        control = "null" if controls is None else _control(controls[i])
        head = f'{{"type":"record","offset":{offset},"timestamp":{ts},"timestamp_type":"{ts_type}",{mark}'
        rest = (f'"headers":{hs},"key_size":{-1 if k is None else len(k)},'
                f'"value_size":{-1 if val is None else len(val)},"sequence":{seq},"control":{control}' + tail)
        if whole is not None and controls is None:  # an internal topic's record: Kafka's objects
            ko, vo, schema = whole.objects(offset, k, val)
            lines.append(head + f'"key":{_dumps(ko)},"value":{_dumps(vo)},"schema":{_dumps(schema)},' + rest)
        elif (k is not None and len(k) > LARGE) or (val is not None and len(val) > LARGE):
            if lines:
                yield "\n".join(lines)
                lines = []
            yield Pieces(_large_record(head, rest, k, val, key, value))
        else:
            lines.append(head + f'"key":{"null" if k is None else kj(k)},'
                                f'"value":{"null" if val is None else vj(val)},' + rest)
    if ev.problem is not None:
        lines.append(_dumps({"type": "records_unreadable", "segment": ev.problem.file,
                             "position": ev.problem.position, "finding": ev.problem.to_dict()}))
    if lines:
        yield "\n".join(lines)


def _headers(headers: tuple[Header, ...], vj: Callable[[bytes], str]) -> str:
    return "[" + ",".join(f'{{"key":{_string(h.key.decode("utf-8", "backslashreplace"))},'
                          f'"value":{"null" if h.value is None else vj(h.value)}}}' for h in headers) + "]"


def _event_object(ev: Event) -> str | None:
    """The object of an event other than a batch's: damage, or bytes skipped; None for the others."""
    if isinstance(ev, Damage):
        f = ev.finding
        return _dumps({"type": "damage", "segment": f.file, "position": f.position,
                       "bytes_following": ev.bytes_following, "finding": f.to_dict()})
    if isinstance(ev, Anomaly):
        f = ev.finding
        return _dumps({"type": "damage", "segment": f.file, "position": f.position, "bytes_following": None,
                       "reading_goes_on": True, "finding": f.to_dict()})
    if isinstance(ev, Unreadable):  # where and why reading stopped, and the bytes left unread
        f = ev.finding
        return _dumps({"type": "damage", "segment": f.file, "position": f.position, "bytes_following": ev.size,
                       "finding": f.to_dict()})
    if isinstance(ev, Skipped):
        return _dumps({"type": "skipped", "segment": ev.segment.log_path.name, "start": ev.start,
                       "end": ev.end, "bytes": ev.end - ev.start, "resumed": ev.resumed})
    return None


def _compiled_lines(ev: BatchRead, modes: tuple[int | None, int | None], tail: str) -> bytes | None:
    """The record objects of a packed batch as the kernel renders them (one per line); None where the
    reference renders them."""
    return ev.records.rendered("json", modes, tail, ev.unverified) if isinstance(ev.records, PackedRecords) else None


def _control(c: Control) -> str:
    m = c.marker
    return _dumps({"type": m.type_name, "type_id": m.type_id, "coordinator_epoch": m.coordinator_epoch,
                   "data": c.data})


def write_lines(events: Iterable[Event], out: TextIO, key: Decoder, value: Decoder,
                whole: RecordDecoder | None = None) -> None:
    for text in objects(events, key, value, whole):
        _write(out, text)
        out.write("\n")


def write_document(events: Iterable[Event], out: TextIO, key: Decoder, value: Decoder, head: dict,
                   tail: Callable[[], dict], whole: RecordDecoder | None = None) -> None:
    """One document, streamed: `head` fields, then "events" as they come, then the `tail` fields, known
    once the events are read."""
    out.write('{' + ",".join(f"{_dumps(k)}:{_dumps(v)}" for k, v in head.items()) + ',"events":[')
    sep = "\n"
    for text in objects(events, key, value, whole):
        out.write(sep)
        _write(out, text if isinstance(text, Pieces) else
               text.replace(b"\n", b",\n") if isinstance(text, bytes) else text.replace("\n", ",\n"))
        sep = ",\n"
    out.write("\n]" + "".join(f",{_dumps(k)}:{_dumps(v)}" for k, v in tail().items()) + "}\n")


def write_file_rows(d: FileDump, out: TextIO) -> int:
    """The entries of an index, transaction index or producer snapshot as JSON Lines, one object per entry
    as it is read; returns how many."""
    n = 0
    for row in d.rows:
        out.write(_dumps({"type": d.row_type, **row}) + "\n")
        n += 1
    return n


def write_file_document(d: FileDump, out: TextIO, exit_code: Callable[[], int]) -> None:
    """The file's path, row type, entries, stop and exit code as the one document `json.dumps(indent=2)`
    makes of them, written an entry at a time (the stop and the exit code are known once the entries are)."""
    out.write(f'{{\n  "path": {_string(undecoded_escaped(str(d.path)))},\n  "type": {_string(d.row_type)},\n'
              f'  "entries": [')
    sep = "\n"
    for row in d.rows:
        out.write(sep + textwrap.indent(json.dumps(row, indent=2), "    "))
        sep = ",\n"
    stop = "null" if d.stop is None else _string(undecoded_escaped(d.stop))
    out.write(("]" if sep == "\n" else "\n  ]") + f',\n  "stop": {stop},\n  "exit_code": {exit_code()}\n}}\n')
