"""A producer's control batch that Kafka cannot open at all: `CompressionType.forId` throws for codec ids
5-7, and a stream that does not decompress throws KafkaException. `LogSegment.recover` catches only
CorruptRecordException and InvalidRecordException, so the broker fails to load the partition: that is
RECOVERY_FAILS, not the BAD_TXN_MARKER cut a malformed marker gets."""
from __future__ import annotations

import json
import shutil
import struct

import crc32c
import pytest
from conftest import kafka_case, run_logtool

CASE, SEGMENT, POSITION, SIZE = "v2-idempotent-txn", "00000000000000000096.log", 887, 78  # a COMMIT marker
ATTRIBUTES, CRC = 21, 17  # offsets inside a v2 batch; the CRC covers attributes to the end


def _edit(tmp_path, change) -> tuple:
    part = tmp_path / "payments-0"
    shutil.copytree(kafka_case(CASE), part)
    log = part / SEGMENT
    data = bytearray(log.read_bytes())
    batch = data[POSITION : POSITION + SIZE]
    change(batch)
    struct.pack_into(">I", batch, CRC, crc32c.crc32c(bytes(batch[ATTRIBUTES:])))
    data[POSITION : POSITION + SIZE] = batch
    log.write_bytes(bytes(data))
    return part


def _set_codec(codec: int):
    def change(batch: bytearray) -> None:
        batch[ATTRIBUTES + 1] = (batch[ATTRIBUTES + 1] & ~0x07) | codec
    return change


@pytest.mark.parametrize("codec", [5, 6, 7, 1, 4])  # unknown ids; gzip and zstd over bytes that are not theirs
def test_a_control_batch_kafka_cannot_open_fails_recovery(tmp_path, codec):
    part = _edit(tmp_path, _set_codec(codec))
    p = run_logtool("verify", "--format", "json", str(part))
    segs = {s["file"]: s for s in json.loads(p.stdout)["partitions"][0]["segments"]}
    stop = [f for f in segs[SEGMENT]["findings"] if f["position"] == POSITION and f["severity"] == "error"]
    assert p.returncode == 4 and stop and stop[0]["name"] == "RECOVERY_FAILS", stop
    assert segs[SEGMENT]["valid_bytes"] == POSITION


def test_a_marker_whose_record_is_malformed_is_still_cut(tmp_path):
    def change(batch: bytearray) -> None:  # the control key's version (the int16 opening the key) made negative
        key_at = batch.index(b"\x08\x00\x00", 61) + 1  # after the key's length varint (4 bytes)
        batch[key_at] = 0xFF
    part = _edit(tmp_path, change)
    p = run_logtool("verify", "--format", "json", str(part))
    segs = {s["file"]: s for s in json.loads(p.stdout)["partitions"][0]["segments"]}
    names = [f["name"] for f in segs[SEGMENT]["findings"] if f["position"] == POSITION]
    assert "BAD_TXN_MARKER" in names
