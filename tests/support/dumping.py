"""Running `logtool dump` and reading what it prints; kafka-python's reading of the same records, to compare."""
from __future__ import annotations

import base64
import io
import json
from pathlib import Path

from click.testing import CliRunner
from conftest import KAFKA_WRITTEN, kafka_case, require
from kafka.record import MemoryRecords

from logtool.cli import cli
from logtool.reads import decoders
from logtool.reads.ranges import BatchRead, Skipped, Stats, plan_range, read_range
from logtool.render import dump_json, dump_text
from logtool.store.partition import Partition
from support.real import kp_read

B64 = ("--format", "jsonl", "--key-decoder", "base64", "--value-decoder", "base64")


def dump(*args: str) -> tuple[int, str, str]:
    """`logtool dump` in-process (the whole fixture set through subprocesses would take minutes)."""
    r = CliRunner().invoke(cli, ["dump", *map(str, args)], standalone_mode=False, catch_exceptions=False)
    return r.return_value, r.stdout, r.stderr


def objects(text: str) -> list[dict]:
    """The event objects of JSON Lines, after checking that the last line is the closing summary."""
    rows = [json.loads(line) for line in text.splitlines()]
    assert rows and rows[-1]["type"] == "summary" and rows[-1]["exit_code"] in (0, 4), rows[-1:]
    return rows[:-1]


def records_of(text: str) -> list[tuple]:
    """(offset, timestamp, key, value, headers) of the record objects of base64 JSON Lines."""
    unb64 = lambda s: None if s is None else base64.b64decode(s)  # noqa: E731
    return [(o["offset"], o["timestamp"], unb64(o["key"]), unb64(o["value"]),
             tuple((h["key"], unb64(h["value"])) for h in o["headers"]))
            for o in objects(text) if o["type"] == "record"]


def kafka_python_records(part_dir: Path) -> list[tuple]:
    """kafka-python's records of every segment the partition walks, in offset order."""
    out = []
    for seg in Partition.from_dir(part_dir).segments:
        for b in kp_read(seg.log_path).batches:
            out += [(o, -1 if t is None else t, k, v, h) for o, t, k, v, h in b.records]
    return out


def offsets(*args: str) -> list[int]:
    rc, out, _ = dump(*args, "--format", "jsonl")
    assert rc == 0
    return [o["offset"] for o in objects(out) if o["type"] == "record"]


def records_of_plain(text: str) -> list[dict]:
    return [o for o in objects(text) if o["type"] == "record"]


V2_BATCH = ("baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 "
            "partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty "
            "position: 0 CreateTime: 1700000000000 size: 70 magic: 2 compresscodec: none crc: 3919285720 isvalid: true")


# FORMAT.md §17: the batches as hex, and the lines §17 (v2) and §16.2's templates (v1, v0) give for them.
VECTORS = {
    "00000000000000000000003a0000000002e99b8dd80000000000000000018bcfe568000000018bcfe56800ffffffffffffffffffffffffffff0000000110000000026b027600":
        [V2_BATCH, "| offset: 0 CreateTime: 1700000000000 keySize: 1 valueSize: 1 sequence: -1 headerKeys: [] key: k payload: v"],
    "00000000000000000000001839268c3301000000018bcfe56800000000016b0000000176":
        ["offset: 0 position: 0 CreateTime: 1700000000000 size: 36 magic: 1 compresscodec: none crc: 958827571 isvalid: true",
         "| offset: 0 CreateTime: 1700000000000 keySize: 1 valueSize: 1 isValid: true crc: 958827571 key: k payload: v"],
    "00000000000000000000000fd20cbff50000ffffffff0000000176":
        ["offset: 0 position: 0 NoTimestampType: -1 size: 27 magic: 0 compresscodec: none crc: 3524050933 isvalid: true",
         "| offset: 0 NoTimestampType: -1 keySize: -1 valueSize: 1 isValid: true crc: 3524050933 payload: v"],
}


def _bool(b: bool) -> str:
    return "true" if b else "false"


def legacy_crcs(log: Path) -> list[int]:
    """kafka-python's CRC of every legacy record (inner messages of wrappers included), in log order."""
    mr, out = MemoryRecords(log.read_bytes()), []
    while mr.has_next():
        batch = mr.next_batch()
        if batch.magic < 2:
            out += [r.checksum for r in batch]
    return out


def kafka_lines(case: str) -> list[str]:
    """The lines kafka-dump-log --deep-iteration prints for a Kafka-written case, built with §16.2's
    templates from the values Kafka's own iterator recorded in expected.json (legacy inner CRCs, which
    expected.json does not record, from kafka-python)."""
    expected = json.loads((require(KAFKA_WRITTEN / case) / "expected.json").read_text())
    part = kafka_case(case)
    lines = []
    for seg in expected["asWritten"]["segments"]:
        log = part / seg["log"]["file"]
        lines += [f"Dumping {log}", f"Log starting offset: {seg['baseOffset']}"]
        crcs = legacy_crcs(log)
        i = 0
        for b in seg["log"]["batches"]:
            if b["magic"] >= 2:
                horizon = "OptionalLong.empty" if b["deleteHorizonMs"] is None else f"OptionalLong[{b['deleteHorizonMs']}]"
                head = (f"baseOffset: {b['baseOffset']} lastOffset: {b['lastOffset']} count: {b['count']} "
                        f"baseSequence: {b['baseSequence']} lastSequence: {b['lastSequence']} producerId: {b['producerId']} "
                        f"producerEpoch: {b['producerEpoch']} partitionLeaderEpoch: {b['partitionLeaderEpoch']} "
                        f"isTransactional: {_bool(b['isTransactional'])} isControl: {_bool(b['isControl'])} "
                        f"deleteHorizonMs: {horizon}")
            else:
                head = f"offset: {b['lastOffset']}"
            lines.append(f"{head} position: {b['position']} {b['timestampType']}: {b['maxTimestamp']} size: {b['size']} "
                         f"magic: {b['magic']} compresscodec: {b['codec']} crc: {b['crc']} isvalid: {_bool(b['isValid'])}")
            for r in b["records"]:
                line = (f"| offset: {r['offset']} {b['timestampType']}: {r['timestamp']} keySize: {r['keySize']} "
                        f"valueSize: {r['valueSize']}")
                if b["magic"] >= 2:
                    line += f" sequence: {r['sequence']} headerKeys: [{','.join(h['key'] for h in r['headers'])}]"
                else:
                    line += f" isValid: true crc: {crcs[i]}"
                    i += 1
                if "controlType" in r:
                    line += f" endTxnMarker: {r['controlType']} coordinatorEpoch: {r['coordinatorEpoch']}"
                lines.append(line)
    return lines


CLEAN = sorted(p.name for p in KAFKA_WRITTEN.iterdir() if p.is_dir() and not p.name.startswith("corrupt-")
               and p.name != "v2-crash-preallocated")


SOURCES = [kafka_case("v2-none-mixed") / "00000000000000000457.log", kafka_case("v2-mixed-codecs") / "00000000000000000413.log",
           kafka_case("v1-gzip") / "00000000000000000318.log", kafka_case("v2-idempotent-txn") / "00000000000000000288.log"]


def dump_bytes(tmp: Path, data: bytes) -> set[int]:
    """A salvaging dump of `data` as one segment, rendered in every format in-process. Checks that the
    batches read and the byte ranges skipped tile the file exactly, and that bytes that are not batches
    are reported; returns the positions of the batches read."""
    log = tmp / "t-0" / "00000000000000000000.log"
    log.parent.mkdir(exist_ok=True)
    log.write_bytes(data)
    part = Partition.from_dir(log.parent)
    stats = Stats()
    try:
        events = list(read_range(part, plan_range(part), stats, salvage=True))
        dump_text.render(events, io.StringIO(), decoders.get("utf8"), decoders.get("json"), io.StringIO())
        dump_json.write_lines(events, io.StringIO(), decoders.get("hex"), decoders.get("json"))
        dump_json.write_document(events, io.StringIO(), decoders.get("base64"), decoders.get("none"),
                                 {"path": str(log)}, dict)
    finally:
        part.close()
    spans = sorted([(e.view.position, e.view.position + e.view.size) for e in events if isinstance(e, BatchRead)]
                   + [(e.start, e.end) for e in events if isinstance(e, Skipped)])
    edges = [0] + [b for _, b in spans]
    assert [a for a, _ in spans] == edges[:-1] and edges[-1] == len(data), spans
    assert stats.damaged or stats.batches > 0 or data == b""  # no byte passes unread and unreported
    return {e.view.position for e in events if isinstance(e, BatchRead)}
