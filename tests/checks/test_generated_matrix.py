"""verify --deep on partitions written by kafka-python's and aiokafka's builders, every buildable
magic x codec, checked against kafka-python's own reader; damage is made by editing those bytes."""
from __future__ import annotations

import pytest
from support.matrix import MATRIX, _last_log, reference, spec, verify, write

from fixtures import generator as g
from logtool.format.records import iter_records
from logtool.store.partition import Partition


@pytest.mark.sample(6)
@pytest.mark.parametrize("lib,magic,codec", MATRIX)
def test_verify_agrees_with_kafka_python(tmp_path, lib, magic, codec):
    part = write(tmp_path, spec(lib, magic, codec))
    ref = reference(part)
    rc, doc = verify("--deep", str(part))
    p = doc["partitions"][0]
    found = {f["name"] for s in p["segments"] for f in s["findings"]}
    if magic == 1 and codec != "none":
        # Both client libraries leave a v1 wrapper's timestamp at 0 (a broker would stamp the newest inner
        # timestamp there), so the inner timestamps lie above the wrapper's: a true finding for such bytes.
        assert rc == 4 and found == {"TIMESTAMP_ABOVE_MAX"}
    else:
        assert rc == 0 and not found, found
    assert (p["topic"], p["partition"]) == ("topic-a.b", 3)
    assert sum(s["records"] for s in p["segments"]) == sum(len(b["records"]) for b in ref)
    assert sum(s["batches"] for s in p["segments"]) == len(ref)
    all_offsets = [r[0] for b in ref for r in b["records"]]
    assert p["segments"][0]["first_offset"] == all_offsets[0]
    assert p["segments"][-1]["last_offset"] == all_offsets[-1]
    assert all(s["valid_bytes"] == s["size"] for s in p["segments"])
    assert {c for s in p["segments"] for c in s["codecs"]} == {codec}
    # record by record, our reader and kafka-python's read the same values
    ours = []
    part_obj = Partition.from_dir(part)
    for seg in part_obj.segments:
        with seg:
            for view in seg.walk():
                ours += [(r.offset, r.timestamp, r.key, r.value, tuple((h.key.decode(), h.value) for h in r.headers))
                         for r in iter_records(seg.buf, view)]
    theirs = [r for b in ref for r in b["records"]]
    if magic == 0:  # v0 has no timestamps; kafka-python reports None where Kafka reports -1
        theirs = [(o, -1, k, v, h) for o, _t, k, v, h in theirs]
    assert ours == theirs


@pytest.mark.slow
def test_large_values_and_idempotent_batches(tmp_path):
    s = g.BatchSpec(library="aiokafka", magic=2, codec="lz4", batches=3, records_per_batch=3,
                    large_value_every=4, producer=g.Producer(42, 1, 100, transactional=True))
    part = write(tmp_path, s, segment_bytes=10 << 20)
    rc, doc = verify("--deep", str(part))
    assert rc == 0 and doc["partitions"][0]["segments"][0]["records"] == 9


@pytest.mark.parametrize("magic", [0, 1, 2])
def test_bit_flip_in_payload_is_a_crc_mismatch_at_that_batch(tmp_path, magic):
    part = write(tmp_path, spec("kafka-python", magic, "gzip"))
    log = _last_log(part)
    headers = list(g.iter_entry_headers(log.read_bytes()))
    victim = headers[len(headers) // 2]
    g.flip_bit(log, victim.position + victim.size - 3)
    rc, doc = verify(str(part))
    seg = doc["partitions"][0]["segments"][-1]
    assert rc == 4
    assert seg["valid_bytes"] == seg["first_invalid_position"] == victim.position
    assert [f["name"] for f in seg["findings"] if f["position"] == victim.position] == ["CRC_MISMATCH"]


@pytest.mark.slow
def test_torn_and_zero_tails(tmp_path):
    part = write(tmp_path, spec("aiokafka", 2, "zstd"))
    log = _last_log(part)
    *_, last = g.iter_entry_headers(log.read_bytes())
    g.tear_last_entry(log)
    kept = last.position  # the torn batch is cut whole
    rc, doc = verify(str(part))
    seg = doc["partitions"][0]["segments"][-1]
    assert rc == 4 and seg["valid_bytes"] == kept
    assert any(f["name"] == "TORN_BATCH" for f in seg["findings"])
    log.write_bytes(log.read_bytes()[:kept] + bytes(10000))
    rc, doc = verify(str(part))
    seg = doc["partitions"][0]["segments"][-1]
    assert seg["valid_bytes"] == kept and any(f["name"] == "PREALLOCATED_TAIL" for f in seg["findings"])


@pytest.mark.slow
def test_deep_finds_damage_the_crc_cannot(tmp_path):
    """A batch whose records are broken but whose CRC was recomputed: only --deep sees it."""
    from logtool.format.crc import crc32c

    part = write(tmp_path, spec("kafka-python", 2, "none", gaps={}))
    log = _last_log(part)
    data = bytearray(log.read_bytes())
    first = next(g.iter_entry_headers(data))
    data[first.position + 57 : first.position + 61] = (99).to_bytes(4, "big")  # recordsCount 6 -> 99
    crc = crc32c(bytes(data[first.position + 21 : first.position + first.size]))
    data[first.position + 17 : first.position + 21] = crc.to_bytes(4, "big")
    log.write_bytes(bytes(data))
    rc, shallow = verify(str(part))
    assert rc == 0
    rc, deep = verify("--deep", str(part))
    names = {f["name"] for s in deep["partitions"][0]["segments"] for f in s["findings"]}
    assert rc == 4 and "RECORD_COUNT_MISMATCH" in names


def test_offset_gap_between_segments_is_info(tmp_path):
    part = write(tmp_path, spec("kafka-python", 2, "none", gaps={4: 50}), segment_bytes=1)  # a segment per batch
    rc, doc = verify(str(part))
    gaps = [f for f in doc["partitions"][0]["findings"] if f["name"] == "SEGMENT_GAP"]
    assert rc == 0 and len(gaps) == 1 and gaps[0]["severity"] == "info"
    assert gaps[0]["offset"] == doc["partitions"][0]["segments"][4]["first_offset"]
