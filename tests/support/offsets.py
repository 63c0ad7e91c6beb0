"""Records of Kafka's internal topics built as Kafka's schemas lay them out (__consumer_offsets keys and
values, metadata records), and the real logs that hold them."""
from __future__ import annotations

import random
import struct
from pathlib import Path

from conftest import SHARED, require

from fixtures import generator as g

REAL_DIRS = [SHARED / "real", SHARED / "real-more"]


TS = g.FIXED_TIME_MS


def s16(text: str | None) -> bytes:
    """A classic (non-flexible) string: int16 length, -1 for null."""
    if text is None:
        return struct.pack(">h", -1)
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def compact(text: str) -> bytes:
    raw = text.encode()
    assert len(raw) + 1 < 0x80
    return bytes([len(raw) + 1]) + raw


def offset_key(group: str, topic: str, partition: int, record_type: int = 1) -> bytes:
    return struct.pack(">h", record_type) + s16(group) + s16(topic) + struct.pack(">i", partition)


def offset_value_v3(offset: int, epoch: int, metadata: str, ts: int) -> bytes:
    return struct.pack(">hqi", 3, offset, epoch) + s16(metadata) + struct.pack(">q", ts)


def partition_of(tmp: Path, topic: str, pairs: list[tuple[bytes | None, bytes | None]]) -> Path:
    """One batch per record, written by kafka-python's builder, in `<topic>-0`."""
    spec = g.BatchSpec(records=[[g.Record(k, v, TS + i)] for i, (k, v) in enumerate(pairs)], batches=len(pairs),
                       records_per_batch=1)
    return g.write_partition(tmp, topic, 0, g.build_batches(spec)).path


def record_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("| offset:")]


def topic_record(name: str, topic_id: bytes) -> bytes:
    return bytes([1, 2, 0]) + compact(name) + topic_id + bytes([0])


def metadata_logs() -> list[Path]:
    found = sorted(p for root in REAL_DIRS for p in require(root).rglob("__cluster_metadata-0") if p.is_dir())
    assert len(found) >= 10
    return found


def snapshots() -> list[Path]:
    return sorted(p for root in REAL_DIRS for p in root.rglob("*.checkpoint")
                  if p.name == "bootstrap.checkpoint" or p.parent.name == "__cluster_metadata-0")


def _mutated(data: bytes | None, rng: random.Random) -> bytes | None:
    if data is None or rng.random() < 0.2:
        return data
    b = bytearray(data)
    what = rng.randrange(4)
    if what == 0 and b:
        b[rng.randrange(len(b))] = rng.randrange(256)
    elif what == 1:
        del b[rng.randrange(len(b) + 1):]
    elif what == 2:
        b[rng.randrange(len(b) + 1):rng.randrange(len(b) + 1)] = rng.randbytes(rng.randrange(1, 8))
    elif b:
        at = rng.randrange(len(b))
        b[at:at + 4] = rng.choice((b"\x7f\xff\xff\xff", b"\xff\xff\xff\xff", b"\x80\x80\x80\x80\x80"))
    return bytes(b)


def kafka_parse(decoder, key: bytes | None, value: bytes | None) -> tuple[str | None, str | None]:
    return decoder.texts(0, key, value)
