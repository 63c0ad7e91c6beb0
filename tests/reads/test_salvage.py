"""`dump --salvage` and store/salvage.py: after damage, every batch the damage left whole is read, and every
byte passed over is reported."""
from __future__ import annotations

import base64
import json
import os
import random

import pytest
from conftest import kafka_case
from support.dumping import B64, dump, kafka_python_records, objects, records_of
from support.matrix import spec

from fixtures import generator as g
from logtool.reads.salvage import next_batch
from logtool.store.partition import Partition
from logtool.store.segment import Segment


def write(tmp, lib: str, magic: int, codec: str, segment_bytes: int = 1 << 20):
    return g.write_partition(tmp, "t", 0, g.build_batches(spec(lib, magic, codec)), segment_bytes=segment_bytes).path


def split(out: str) -> tuple[str, list[int]]:
    """JSON Lines without the records --salvage marks unverified, and the offsets of those."""
    lines = out.splitlines()
    marked = [json.loads(line)["offset"] for line in lines if '"unverified":true,' in line.split('"batch"')[0]]
    return "\n".join(line for line in lines if '"unverified":true,' not in line.split('"batch"')[0]), marked


def entries(log) -> list[g.EntryHeader]:
    return list(g.iter_entry_headers(log.read_bytes()))


@pytest.mark.parametrize("lib,magic,codec", [("kafka-python", 2, "none"), ("aiokafka", 2, "zstd"),
                                             ("kafka-python", 1, "gzip"), ("aiokafka", 0, "snappy"),
                                             ("kafka-python", 1, "none")])
def test_corrupted_middle_batch(tmp_path, lib, magic, codec):
    part = write(tmp_path, lib, magic, codec)
    log = next(part.glob("*.log"))
    before = kafka_python_records(part)
    heads = entries(log)
    victim = heads[len(heads) // 2]
    g.flip_bit(log, victim.position + victim.size - 3)
    lost = set(range(victim.offset if magic == 2 or codec == "none" else before[0][0], victim.last_offset + 1))
    if magic < 2 and codec != "none":  # a legacy wrapper covers the offsets since the previous wrapper
        lost = {o for o in lost if o > heads[len(heads) // 2 - 1].last_offset}

    rc, out, _ = dump(part, *B64)
    assert rc == 4 and records_of(out) == [r for r in before if r[0] < min(lost)]

    rc, out, _ = dump(part, *B64, "--salvage")
    assert rc == 4
    verified, unverified = split(out)
    assert records_of(verified) == [r for r in before if r[0] not in lost]
    assert set(unverified) <= lost  # the flipped batch, as its bytes read, marked
    marks = [o for o in objects(out) if o["type"] in ("damage", "skipped")]
    # Its framing holds, so reading goes on right after it: nothing is skipped.
    assert [(m["type"], m.get("position", m.get("start"))) for m in marks] == [("damage", victim.position)]


def test_several_kinds_of_damage_in_one_segment(tmp_path):
    part = write(tmp_path, "kafka-python", 2, "gzip")
    log = next(part.glob("*.log"))
    before = kafka_python_records(part)
    heads = entries(log)
    data = bytearray(log.read_bytes())
    hit = {2, 5, 8}
    data[heads[2].position + 70] ^= 0x10  # a flipped bit
    zero = heads[5]
    data[zero.position : zero.position + zero.size] = bytes(zero.size)  # a zeroed sector
    torn = heads[8]
    garbage = random.Random(1).randbytes(5000)
    data[torn.position : torn.position + torn.size] = garbage[: torn.size // 2]  # half a batch, then garbage
    data[torn.position + torn.size // 2 : torn.position + torn.size // 2] = garbage[torn.size // 2 :]
    log.write_bytes(bytes(data))
    rc, out, _ = dump(part, *B64, "--salvage")
    lost = {o for i in hit for o in range(heads[i].offset, heads[i].last_offset + 1)}
    verified, unverified = split(out)
    assert rc == 4 and records_of(verified) == [r for r in before if r[0] not in lost]
    assert set(unverified) <= lost
    skipped = [o for o in objects(out) if o["type"] == "skipped"]
    # The flipped batch is shown unverified and read past; the zeroed and the torn one are skipped.
    assert [s["start"] for s in skipped] == [heads[5].position, heads[8].position]
    damage = [(o["position"], o["finding"]["name"]) for o in objects(out) if o["type"] == "damage"]
    assert damage[0] == (heads[2].position, "CRC_MISMATCH") and len(damage) == 3


def test_text_lines_and_a_damage_with_nothing_after(tmp_path):
    part = write(tmp_path, "aiokafka", 2, "none")
    log = next(part.glob("*.log"))
    size = log.stat().st_size
    log.write_bytes(log.read_bytes() + bytes(3000))  # a zero tail: nothing to resume at
    rc, out, err = dump(part, "--salvage")
    assert rc == 4 and out.splitlines()[-1].startswith("| offset: ")  # kafka-dump-log throws at a zero length
    assert err.splitlines()[-2:] == [
        f"logtool: damage at byte {size} of {log.name}: LT103 PREALLOCATED_TAIL: 3000 zero bytes after the last "
        f"batch (preallocated or zero-filled); the valid log ends at byte {size}, 3000 bytes after it are cut by "
        f"recovery",
        f"logtool: skipped 3000 bytes of {log.name} from byte {size}: no valid batch follows in the file"]


def test_damage_in_an_earlier_segment(tmp_path):
    """Without --salvage a damaged segment is read up to its valid prefix and the later segments whole;
    --salvage also reads what follows the damage inside the segment."""
    part = write(tmp_path, "kafka-python", 2, "lz4", segment_bytes=4000)
    before = kafka_python_records(part)
    first = sorted(part.glob("*.log"))[0]
    heads = entries(first)
    victim = heads[1]
    g.flip_bit(first, victim.position + 80)
    lost = set(range(victim.offset, victim.last_offset + 1))
    after = {o for h in heads[2:] for o in range(h.offset, h.last_offset + 1)}
    rc, out, _ = dump(part, *B64)
    assert rc == 4 and records_of(out) == [r for r in before if r[0] not in lost | after]
    rc, out, _ = dump(part, *B64, "--salvage")
    assert rc == 4 and records_of(out) == [r for r in before if r[0] not in lost]
    # A range that starts after the damage: found by reading the segment past it.
    start = heads[2].offset + 1
    rc, out, _ = dump(part, *B64, "--salvage", "--from-offset", start, "--max-records", 3)
    assert records_of(out) == [r for r in before if r[0] >= start][:3]


def test_next_batch_finds_every_boundary():
    for case in ("v2-none-mixed", "v1-gzip", "v0-snappy", "v2-idempotent-txn"):
        for seg in Partition.from_dir(kafka_case(case)).segments:
            with seg:
                starts = [v.position for v in seg.walk()]
                assert next_batch(seg.buf, 0, seg.size, seg.base_offset) == (starts[0] if starts else None)
                for a, b in zip(starts, starts[1:] + [None]):
                    assert next_batch(seg.buf, a + 1, seg.size, seg.base_offset) == b, (case, seg.log_path.name, a)


def test_next_batch_through_zeros_and_garbage(tmp_path):
    src = kafka_case("v2-mixed-codecs") / "00000000000000000413.log"
    batch = src.read_bytes()[: entries(src)[0].size]
    junk = os.urandom(200_000)
    data = bytes(5 << 20) + junk + batch
    log = tmp_path / "00000000000000000413.log"
    log.write_bytes(data)
    with Segment(log, 413) as seg:
        assert next_batch(seg.buf, 0, seg.size, 413) == len(data) - len(batch)
        assert next_batch(seg.buf, 0, seg.size, 413 + 2**31) is None  # its offset cannot be in such a segment
        assert next_batch(seg.buf, len(data) - len(batch) + 1, seg.size, 413) is None


def test_salvaged_json_names_the_finding(tmp_path):
    part = write(tmp_path, "kafka-python", 2, "snappy")
    log = next(part.glob("*.log"))
    victim = entries(log)[3]
    g.flip_bit(log, victim.position + victim.size - 3)
    rc, out, _ = dump(part, "--salvage", "--format", "json", "--value-decoder", "base64")
    doc = json.loads(out)
    damage = next(e for e in doc["events"] if e["type"] == "damage")
    assert rc == 4 and doc["summary"]["damaged"]
    assert damage["finding"]["name"] == "CRC_MISMATCH" and damage["finding"]["offset"] == victim.offset
    assert damage["bytes_following"] == log.stat().st_size - victim.position
    values = [base64.b64decode(e["value"]) for e in doc["events"] if e["type"] == "record" and e["value"]]
    assert values and all(v for v in values)


def test_a_crc_failed_batch_shows_its_records_marked_unverified():
    """A flipped bit leaves most records readable: --salvage shows the batch Kafka's dump tool shows with
    `isvalid: false` (offsets 466-471 here), each record marked unverified, and reads on after it."""
    from conftest import kafka_case, run_logtool
    part = kafka_case("corrupt-bitflip-last-segment")
    p = run_logtool("dump", "--salvage", "--format", "jsonl", str(part))
    rows = [json.loads(line) for line in p.stdout.splitlines()]
    records = [r for r in rows if r["type"] == "record"]
    unverified = [r["offset"] for r in records if r.get("unverified")]
    assert p.returncode == 4 and unverified == [466, 467, 468, 469, 470, 471]
    assert all(r["batch"]["unverified"] for r in records if r.get("unverified"))
    assert [r["offset"] for r in records] == list(range(0, 481))  # nothing lost, nothing doubled
    assert not [r for r in rows if r["type"] == "skipped"]  # the batch after it starts right where it ends
    p = run_logtool("dump", "--salvage", str(part))
    text = p.stdout.splitlines()
    i = next(i for i, line in enumerate(text) if line.startswith("baseOffset: 466 lastOffset: 471"))
    assert "isvalid: false" in text[i] and text[i + 1].startswith("| offset: 466 ")
    assert "logtool: the batch at byte 1325 of 00000000000000000457.log fails its CRC" in p.stderr


def test_a_flipped_length_bit_does_not_hide_the_batches_it_now_covers(tmp_path):
    """A bit flipped in a batch's length field fails its CRC and makes it cover the batches after it: salvage
    skips its bytes up to the next batch that validates and reads on from there, rather than trusting the
    damaged length and skipping past the whole batches it swallowed (found by hypothesis)."""
    src = kafka_case("v2-idempotent-txn") / "00000000000000000288.log"
    data = bytearray(src.read_bytes())
    with Segment(src, 288) as seg:
        views = list(seg.walk())
    victim, after = views[3], views[4:6]
    data[victim.position + 10] ^= 0x01  # the length field's third byte: 256 bytes longer
    part = tmp_path / "payments-0"
    part.mkdir()
    (part / src.name).write_bytes(data)
    rc, out, _ = dump(part, "--salvage", "--batches-only", "--format", "jsonl")
    events = objects(out)
    read = [o["position"] for o in events if o["type"] == "batch"]
    assert all(v.position in read for v in after), (read, [v.position for v in after])
    skipped = [(o["start"], o["end"]) for o in events if o["type"] == "skipped"]
    assert (victim.position, after[0].position) in skipped and rc == 4
