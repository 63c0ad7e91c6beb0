"""A compressed legacy wrapper whose checksum holds but whose payload does not decompress: the walker keeps
it (as Kafka's recovery does), and it is reported once, by the rule that found it, also with --deep."""
from __future__ import annotations

import json
import struct
import zlib

from conftest import run_logtool
from kafka.record.legacy_records import LegacyRecordBatchBuilder


def _wrapper_that_does_not_inflate() -> bytes:
    builder = LegacyRecordBatchBuilder(magic=1, compression_type=1, batch_size=1 << 20)  # gzip
    for i in range(5):
        builder.append(i, timestamp=1_700_000_000_000 + i, key=b"k%d" % i, value=b"v" * 50)
    data = bytearray(builder.build())
    # The wrapper's value (the gzip stream) is the last field: damage its middle, then make the CRC hold
    # again (v1 message CRC: crc32 of magic .. end), as a producer that compressed garbage would have.
    data[len(data) - 20] ^= 0xFF
    struct.pack_into(">I", data, 12, zlib.crc32(data[16:]) & 0xFFFFFFFF)
    return bytes(data)


def test_reported_once_shallow_and_deep(tmp_path):
    part = tmp_path / "legacy-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(_wrapper_that_does_not_inflate())
    for deep in ([], ["--deep"]):
        p = run_logtool("verify", "--format", "json", *deep, str(part))
        seg = json.loads(p.stdout)["partitions"][0]["segments"][0]
        names = [f["name"] for f in seg["findings"]]
        assert seg["valid_bytes"] == seg["size"], "Kafka's recovery keeps a wrapper whose checksum holds"
        assert names.count("LEGACY_WRAPPER_UNREADABLE") == 1, (deep, names)
        assert p.returncode == 4
